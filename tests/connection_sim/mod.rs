//! Two connection machines on a simulated link, driven by an operation sequence (from
//! proptest in `tests/connection_model.rs`, from libFuzzer in `fuzz/fuzz_targets/
//! connection.rs`), checked against what the machine promises:
//! - nothing panics, whatever the order of calls, answers, cancels, shutdowns, garbage
//!   bytes and time;
//! - every call of ours ends exactly once (an answer or an end, with its token and index,
//!   `last` on the final one of a batch) unless we forgot it with `cancel_call`, and never
//!   after being forgotten;
//! - a peer's request is handed out once, and `Cancel` names only a request still running;
//! - once both sides close and the linger passes, both are finished and nothing waits.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use sansrpc::connection::keepalive::HeartbeatConfig;
use sansrpc::connection::{Config, Connection, Event};
use sansrpc::connection::{IncomingId, RequestOptions, Timeout};
use sansrpc::{ErrorObject, Instant, RawValue};

/// One step of a run. `side` picks a machine (0 or 1); `pick` picks among what is there.
#[derive(Debug, Clone)]
pub enum Op {
    Call {
        side: u8,
        timeout_ms: Option<u16>,
    },
    Batch {
        side: u8,
        calls: u8,
        notify: bool,
    },
    Notify {
        side: u8,
    },
    Forget {
        side: u8,
        pick: u16,
    },
    Respond {
        side: u8,
        pick: u16,
        ok: bool,
    },
    RespondCancelled {
        side: u8,
        pick: u16,
    },
    Shutdown {
        side: u8,
        grace_ms: u16,
    },
    EndInput {
        side: u8,
    },
    Close {
        side: u8,
    },
    Advance {
        ms: u16,
    },
    /// Moves at most `bytes` (0: all) of what `from` wrote to the other side.
    Deliver {
        from: u8,
        bytes: u16,
    },
    Garbage {
        to: u8,
        bytes: Vec<u8>,
    },
}

struct Side {
    conn: Connection,
    /// Bytes written and not yet delivered.
    wire: Vec<u8>,
    next_token: u64,
    /// Our calls still owed an event: token → indexes still waiting.
    owed: BTreeMap<u64, BTreeSet<usize>>,
    /// Tokens we forgot: no event may come for them.
    forgotten: BTreeSet<u64>,
    /// The peer's requests handed to us and not answered.
    running: Vec<IncomingId>,
    seen_handles: BTreeSet<IncomingId>,
    input_ended: bool,
}

impl Side {
    fn new(heartbeat: bool) -> Side {
        let mut config = Config::default();
        config.max_buffered_output = 4096;
        if heartbeat {
            config.heartbeat = Some(HeartbeatConfig::ping(
                Duration::from_millis(500),
                Duration::from_millis(300),
            ));
        }
        Side {
            conn: Connection::new(config, Instant::ZERO),
            wire: Vec::new(),
            next_token: 0,
            owed: BTreeMap::new(),
            forgotten: BTreeSet::new(),
            running: Vec::new(),
            seen_handles: BTreeSet::new(),
            input_ended: false,
        }
    }

    fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    /// Polls every event, checking each against what is owed.
    fn events(&mut self) {
        while let Some(event) = self.conn.poll_event() {
            match event {
                Event::Request { handle, .. } => {
                    assert!(
                        self.seen_handles.insert(handle),
                        "a request handed out twice"
                    );
                    self.running.push(handle);
                }
                Event::Answer {
                    token, index, last, ..
                }
                | Event::Ended {
                    token, index, last, ..
                } => {
                    assert!(
                        !self.forgotten.contains(&token),
                        "an event for a forgotten token"
                    );
                    let owed = self
                        .owed
                        .get_mut(&token)
                        .expect("an event for an unknown token");
                    assert!(owed.remove(&index), "call {index} of {token} ended twice");
                    assert_eq!(last, owed.is_empty(), "`last` on the final call only");
                    if owed.is_empty() {
                        self.owed.remove(&token);
                    }
                }
                Event::Cancel { handle } => {
                    assert!(
                        self.running.contains(&handle),
                        "Cancel for a request not running"
                    );
                }
                Event::Closed { .. } => self.running.clear(),
                _ => {}
            }
        }
    }

    fn transmit(&mut self, now: Instant) {
        let before = self.wire.len();
        while self.conn.poll_transmit(&mut self.wire).is_some() {}
        let wrote = self.wire.len() > before;
        self.conn.handle_write(wrote, false, now);
    }
}

/// Runs `ops` on two machines; panics when a promise is broken.
pub fn run(heartbeat: [bool; 2], ops: &[Op]) {
    let mut sides = [Side::new(heartbeat[0]), Side::new(heartbeat[1])];
    let mut now = Instant::ZERO;
    let params = RawValue::from_json("[1,2]").unwrap();
    for op in ops {
        match op.clone() {
            Op::Call { side, timeout_ms } => {
                let s = &mut sides[usize::from(side % 2)];
                let token = s.token();
                let timeout = timeout_ms.map_or(Timeout::Default, |ms| {
                    Timeout::After(Duration::from_millis(ms.into()))
                });
                let options = RequestOptions::timeout(timeout);
                if s.conn.call(token, "m", Some(params), options, now).is_ok() {
                    s.owed.insert(token, BTreeSet::from([0]));
                }
            }
            Op::Batch {
                side,
                calls,
                notify,
            } => {
                let s = &mut sides[usize::from(side % 2)];
                let token = s.token();
                let mut batch = s.conn.batch(token, now);
                let mut ok = true;
                for _ in 0..calls % 4 {
                    ok &= batch.call("m", None, RequestOptions::default()).is_ok();
                }
                if notify {
                    ok &= batch.notify("n", None).is_ok();
                }
                if ok {
                    if let Ok(n) = batch.send() {
                        if n > 0 {
                            s.owed.insert(token, (0..n).collect());
                        }
                    }
                }
            }
            Op::Notify { side } => {
                let _ = sides[usize::from(side % 2)].conn.notify("n", Some(params));
            }
            Op::Forget { side, pick } => {
                let s = &mut sides[usize::from(side % 2)];
                if let Some(&token) = s.owed.keys().nth(usize::from(pick) % s.owed.len().max(1)) {
                    s.conn.cancel_call(token, now);
                    s.owed.remove(&token);
                    s.forgotten.insert(token);
                }
            }
            Op::Respond { side, pick, ok } => {
                let s = &mut sides[usize::from(side % 2)];
                if !s.running.is_empty() {
                    let handle = s.running.remove(usize::from(pick) % s.running.len());
                    let error = ErrorObject::fixed(-1, "no");
                    let result = if ok { Ok(params) } else { Err(&error) };
                    s.conn.respond(handle, result);
                }
            }
            Op::RespondCancelled { side, pick } => {
                let s = &mut sides[usize::from(side % 2)];
                if !s.running.is_empty() {
                    let handle = s.running.remove(usize::from(pick) % s.running.len());
                    s.conn.respond_cancelled(handle);
                }
            }
            Op::Shutdown { side, grace_ms } => {
                let grace = Duration::from_millis(grace_ms.into());
                sides[usize::from(side % 2)].conn.shutdown(grace, now);
            }
            Op::EndInput { side } => {
                let s = &mut sides[usize::from(side % 2)];
                s.conn.handle_end_of_input(now);
                s.input_ended = true;
            }
            Op::Close { side } => sides[usize::from(side % 2)].conn.close(now),
            Op::Advance { ms } => {
                now = now + Duration::from_millis(ms.into());
                for s in &mut sides {
                    if s.conn.poll_timeout().is_some_and(|t| t <= now) {
                        s.conn.handle_timeout(now);
                    }
                }
            }
            Op::Deliver { from, bytes } => {
                let (a, b) = sides.split_at_mut(1);
                let (from, to) = if from % 2 == 0 {
                    (&mut a[0], &mut b[0])
                } else {
                    (&mut b[0], &mut a[0])
                };
                from.transmit(now);
                let n = match usize::from(bytes) {
                    0 => from.wire.len(),
                    n => n.min(from.wire.len()),
                };
                let taken = to.conn.handle_input(&from.wire[..n], now).unwrap_or(n);
                from.wire.drain(..taken);
            }
            Op::Garbage { to, bytes } => {
                let _ = sides[usize::from(to % 2)].conn.handle_input(&bytes, now);
            }
        }
        for s in &mut sides {
            s.events();
        }
    }
    // The end: both close; after the linger both are finished and nothing is owed.
    for s in &mut sides {
        s.conn.close(now);
        s.events();
    }
    now = now + Duration::from_secs(2);
    for s in &mut sides {
        s.conn.handle_timeout(now);
        s.events();
        assert!(s.conn.is_finished(), "finished after close and linger");
        assert!(s.owed.is_empty(), "calls never ended: {:?}", s.owed);
        assert_eq!(s.conn.waiting_calls(), 0);
        assert_eq!(s.conn.running(), 0);
    }
}
