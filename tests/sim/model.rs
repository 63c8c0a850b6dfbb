//! A reference model of two connections' wire protocol over a [`Link`], checked against the
//! real machines after every operation: plain maps and sets of what each side sent, saw,
//! answered and transmitted, and the deadlines it set.
//!
//! A failed check panics with what went wrong. Once arbitrary bytes were injected into the
//! link (`Op::Garbage`, `Op::Forge`) the peer's behaviour is no longer predictable, so the checks that
//! depend on it are relaxed; the ones about the connection's own bookkeeping (every request
//! ends exactly once, never before its deadline; every table empty after close; every
//! frame transmitted is valid JSON-RPC) always hold.
//!
//! Each call's token is its request's id on the wire (a batch's, its first request's id,
//! and its calls are told apart by index): the model numbers requests as the connection
//! does, and checks that numbering on the wire. A call cancelled ends without an event (the
//! connection forgets its token), so the model ends it itself. The connection's close
//! phases (the grace for handlers at the end of input, the linger for output) are zero
//! here, so a cut link closes both sides at once; `tests/connection_sim/` covers them.

use super::link::{Link, Transport};
use sansrpc::codec::FrameError;
use sansrpc::connection::{
    Config, Connection, EndReason, Event, IncomingId, RequestOptions, SendError, Timeout,
};
use sansrpc::error::code;
use sansrpc::{ErrorObject, Instant, RawValue};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The timeout of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    Default,
    Never,
    AfterMs(u16),
}

/// One step of a scenario. `side`/`from` are 0 or 1 (taken modulo 2); `pick` chooses among
/// the candidates the model knows of (modulo their number).
#[derive(Debug, Clone)]
pub enum Op {
    Request {
        side: u8,
        deadline: Deadline,
    },
    Notify {
        side: u8,
    },
    /// `None` entries are notifications; an unsent batch is dropped.
    Batch {
        side: u8,
        entries: Vec<Option<Deadline>>,
        send: bool,
    },
    Respond {
        side: u8,
        pick: u16,
        ok: bool,
    },
    Cancel {
        side: u8,
        pick: u16,
    },
    Advance {
        ms: u32,
    },
    /// Jumps to `early_ms` before the earliest deadline of either side (if that is later).
    AdvanceToNext {
        early_ms: u8,
    },
    Flush {
        side: u8,
    },
    /// Moves `frames` frames (picked in a seeded order, in order when `seed` is 0) onto the
    /// stream, then hands at most `bytes` bytes of the stream to the receiver, `chunk` at a time.
    Deliver {
        from: u8,
        flush: bool,
        frames: u8,
        seed: u64,
        bytes: u16,
        chunk: u16,
    },
    Cut,
    Close {
        side: u8,
    },
    /// Raw bytes on the stream from `from` to the other side, as they are or as one frame.
    Garbage {
        from: u8,
        bytes: Vec<u8>,
        framed: bool,
    },
    /// A plausible message, not from the connection, on the stream from `from`: see [`forged`].
    Forge {
        from: u8,
        kind: u8,
        id: u16,
    },
}

/// A frame body a confused or hostile peer might send, aimed at ids in use.
pub fn forged(kind: u8, id: u16) -> String {
    let v = r#""jsonrpc":"2.0""#;
    match kind % 12 {
        0 => format!(r#"{{{v},"result":7,"id":{id}}}"#),
        1 => format!(r#"{{{v},"error":{{"code":-1,"message":"no"}},"id":{id}}}"#),
        2 => format!(r#"{{{v},"error":{{"code":-32700,"message":"Parse error"}},"id":null}}"#),
        3 => format!(r#"{{{v},"method":"m","params":{{"n":0}},"id":{id}}}"#),
        4 => format!(r#"{{{v},"method":"$/cancelRequest","params":{{"id":{id}}}}}"#),
        5 => format!(
            r#"[{{{v},"method":"m","id":{id}}},{{{v},"method":"note"}},{{{v},"result":1,"id":{id}}}]"#
        ),
        6 => format!(r#"{{{v},"result":1,"error":{{"code":1,"message":"x"}},"id":{id}}}"#),
        7 => format!(r#"{{{v},"method":"m","id":"s{id}"}}"#),
        8 => "[]".to_owned(),
        9 => format!(
            r#"[{{{v},"result":1,"id":{id}}},{{{v},"result":2,"id":{}}}]"#,
            id.wrapping_add(1)
        ),
        10 => format!(r#"{{"method":1,"id":{id}}}"#),
        _ => format!(r#"{{{v},"method":"note"}}"#),
    }
}

/// How the two connections are configured.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub transport: Transport,
    /// Small bounds (short default timeout, few pending, tiny output buffer and frames).
    pub small: [bool; 2],
    pub cancellation: [bool; 2],
    pub cancel_on_timeout: [bool; 2],
}

impl Setup {
    pub fn config(&self, side: usize) -> Config {
        let mut c = Config::default();
        c.framing = match self.transport {
            Transport::Stream(f) => Some(f),
            Transport::Messages => None,
        };
        c.cancellation = self.cancellation[side];
        c.cancel_on_timeout = self.cancel_on_timeout[side];
        if self.small[side] {
            c.default_timeout = Some(Duration::from_secs(3));
            c.max_pending_outgoing = 6;
            c.max_inflight_incoming = 4;
            // The model answers beyond the bound with -32002 (holding is in tests/endpoint.rs).
            c.hold_when_busy = false;
            c.max_buffered_output = 400;
            c.early_cancel_capacity = 2;
            c.early_cancel_ttl = Duration::from_secs(5);
            c.limits.max_frame_bytes = 1024;
        }
        // The end of input closes at once (after one turn of the clock), and a closed side
        // keeps no timer for its output: as the wire protocol alone did.
        c.end_grace = Duration::ZERO;
        c.linger = Duration::ZERO;
        c
    }
}

/// An event copied out of the connection; answers and ends by the request's wire id.
#[derive(Debug, Clone)]
enum Ev {
    Request {
        id: IncomingId,
        method: String,
        params: Option<String>,
        wire: Option<u64>,
    },
    Notification {
        method: String,
        params: Option<String>,
    },
    Response {
        id: u64,
        result: Result<String, (i64, String)>,
    },
    Ended {
        id: u64,
        reason: EndReason,
    },
    PeerCancelled(IncomingId),
    Frame(FrameError),
    Closed,
    Other(String),
}

fn copy(e: Event<'_>) -> Ev {
    match e {
        Event::Request { handle, request } => Ev::Request {
            id: handle,
            method: request.method.into_owned(),
            params: request.params.map(|p| p.get().to_owned()),
            wire: request.id.as_u64(),
        },
        Event::Notification(n) => Ev::Notification {
            method: n.method.into_owned(),
            params: n.params.map(|p| p.get().to_owned()),
        },
        // The token is the wire id of the call, or of its batch's first call.
        Event::Answer {
            token,
            index,
            result,
            ..
        } => Ev::Response {
            id: token + index as u64,
            result: result
                .map(|r| r.get().to_owned())
                .map_err(|e| (e.code, e.message.into_owned())),
        },
        Event::Ended {
            token,
            index,
            reason,
            ..
        } => Ev::Ended {
            id: token + index as u64,
            reason,
        },
        Event::Cancel { handle } => Ev::PeerCancelled(handle),
        Event::FrameError(e) => Ev::Frame(e),
        Event::Closed { .. } => Ev::Closed,
        other => Ev::Other(format!("{other:?}")),
    }
}

fn drain_into(ep: &mut Connection, out: &mut Vec<Ev>) {
    while let Some(e) = ep.poll_event() {
        out.push(copy(e));
    }
}

/// The `n` of params `{"n": n}`.
fn token_of(params: Option<&str>) -> Option<u64> {
    let v: Value = serde_json::from_str(params?).ok()?;
    v.get("n")?.as_u64()
}

/// What the application answered: the token as result, or an error derived from it.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Ok(u64),
    Err(i64, String),
}

impl Answer {
    fn new(token: u64, ok: bool) -> Self {
        if ok {
            Answer::Ok(token)
        } else {
            Answer::Err(1 + (token % 1000) as i64, format!("e{token}"))
        }
    }

    fn matches(&self, result: &Result<String, (i64, String)>) -> bool {
        match (self, result) {
            (Answer::Ok(t), Ok(r)) => r.parse::<u64>() == Ok(*t),
            (Answer::Err(c, m), Err((code, message))) => c == code && m == message,
            _ => false,
        }
    }

    fn matches_json(&self, msg: &Value) -> bool {
        match self {
            Answer::Ok(t) => msg.get("result").and_then(Value::as_u64) == Some(*t),
            Answer::Err(c, m) => {
                let e = msg.get("error");
                e.and_then(|e| e.get("code")).and_then(Value::as_i64) == Some(*c)
                    && e.and_then(|e| e.get("message")).and_then(Value::as_str) == Some(m.as_str())
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Response,
    TimedOut,
    Cancelled,
    Closed,
    Other,
}

/// A request this side sent.
#[derive(Debug)]
struct OutReq {
    /// Its id on the wire.
    id: u64,
    /// The token of its call: its own id, or its batch's first.
    call: u64,
    token: u64,
    deadline: Option<Instant>,
    /// Index into `SideModel::batches`.
    batch: Option<usize>,
    ended: Option<End>,
    transmitted: bool,
}

/// A request the peer sent that surfaced here as an event.
#[derive(Debug)]
struct InReq {
    wire: Option<u64>,
    token: u64,
    answered: bool,
    /// Dropped by a close without an answer.
    dropped: bool,
    peer_cancelled: bool,
    /// The peer's batch it came in.
    batch: Option<usize>,
}

/// Settlement of one of the peer's batches at this side.
#[derive(Debug, Default)]
struct BatchState {
    registered: BTreeSet<u64>,
    answered: BTreeSet<u64>,
    settled: bool,
}

#[derive(Debug)]
struct SideModel {
    config: Config,
    closed: bool,
    closed_event: bool,
    next_id: u64,
    out: BTreeMap<u64, OutReq>,
    batches: usize,
    notes_sent: BTreeSet<u64>,
    tx_notes: BTreeSet<u64>,
    tx_cancels: BTreeSet<u64>,
    inc: BTreeMap<IncomingId, InReq>,
    seen_req: BTreeSet<u64>,
    seen_notes: BTreeSet<u64>,
    /// The application's answers, by the peer's request id.
    answers: BTreeMap<u64, Answer>,
    /// Errors the connection answered by itself (early cancel, busy), seen on its wire.
    auto: BTreeMap<u64, i64>,
    tx_responses: BTreeMap<u64, usize>,
    peer_batches: BTreeMap<usize, BatchState>,
}

impl SideModel {
    fn new(config: Config) -> Self {
        SideModel {
            config,
            closed: false,
            closed_event: false,
            next_id: 1,
            out: BTreeMap::new(),
            batches: 0,
            notes_sent: BTreeSet::new(),
            tx_notes: BTreeSet::new(),
            tx_cancels: BTreeSet::new(),
            inc: BTreeMap::new(),
            seen_req: BTreeSet::new(),
            seen_notes: BTreeSet::new(),
            answers: BTreeMap::new(),
            auto: BTreeMap::new(),
            tx_responses: BTreeMap::new(),
            peer_batches: BTreeMap::new(),
        }
    }

    fn pending(&self) -> impl Iterator<Item = &OutReq> {
        self.out.values().filter(|o| o.ended.is_none())
    }

    fn in_flight(&self) -> usize {
        self.inc
            .values()
            .filter(|i| !i.answered && !i.dropped)
            .count()
    }

    /// The error a send should fail with, given the connection's output backlog.
    fn send_error(&self, buffered: usize) -> Option<SendError> {
        if self.closed {
            Some(SendError::Closed)
        } else if buffered > self.config.max_buffered_output {
            Some(SendError::OutputFull)
        } else {
            None
        }
    }

    fn deadline(&self, d: Deadline, now: Instant) -> (Timeout, Option<Instant>) {
        match d {
            Deadline::Default => (
                Timeout::Default,
                self.config.default_timeout.map(|t| now + t),
            ),
            Deadline::Never => (Timeout::Never, None),
            Deadline::AfterMs(ms) => {
                let d = Duration::from_millis(ms.into());
                (Timeout::After(d), Some(now + d))
            }
        }
    }
}

/// What the operation being run allows events to say.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ctx {
    Plain,
    Timeout,
    Cut,
}

/// Two connections, a link, a clock, and the model of both sides.
pub struct Sim {
    eps: [Connection; 2],
    m: [SideModel; 2],
    link: Link,
    now: Instant,
    tainted: bool,
    next_token: u64,
    ctx: Ctx,
}

fn side(s: u8) -> usize {
    usize::from(s % 2)
}

impl Sim {
    pub fn new(setup: Setup) -> Self {
        Sim {
            eps: [
                Connection::new(setup.config(0), Instant::ZERO),
                Connection::new(setup.config(1), Instant::ZERO),
            ],
            m: [
                SideModel::new(setup.config(0)),
                SideModel::new(setup.config(1)),
            ],
            link: Link::new(setup.transport),
            now: Instant::ZERO,
            tainted: false,
            next_token: 1,
            ctx: Ctx::Plain,
        }
    }

    /// Runs a whole scenario: every operation, then the final settling and checks.
    pub fn run(setup: Setup, ops: &[Op]) {
        let mut sim = Sim::new(setup);
        for op in ops {
            sim.apply(op);
        }
        sim.finish();
    }

    fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    pub fn apply(&mut self, op: &Op) {
        self.ctx = Ctx::Plain;
        match op {
            Op::Request { side: s, deadline } => self.request(side(*s), *deadline),
            Op::Notify { side: s } => self.notify(side(*s)),
            Op::Batch {
                side: s,
                entries,
                send,
            } => self.batch(side(*s), entries, *send),
            Op::Respond { side: s, pick, ok } => self.respond(side(*s), *pick as usize, *ok),
            Op::Cancel { side: s, pick } => self.cancel(side(*s), *pick as usize),
            Op::Advance { ms } => {
                self.now = self.now + Duration::from_millis((*ms).into());
                self.fire_timeouts();
            }
            Op::AdvanceToNext { early_ms } => {
                let next = self.eps.iter().filter_map(Connection::poll_timeout).min();
                if let Some(t) = next {
                    let early = Duration::from_millis((*early_ms).into());
                    self.now = self.now.max(Instant::from_duration(
                        t.since_epoch().saturating_sub(early),
                    ));
                    self.fire_timeouts();
                }
            }
            Op::Flush { side: s } => self.flush(side(*s)),
            Op::Deliver {
                from,
                flush,
                frames,
                seed,
                bytes,
                chunk,
            } => {
                let from = side(*from);
                if *flush {
                    self.flush(from);
                }
                self.deliver(
                    from,
                    *frames as usize,
                    *seed,
                    *bytes as usize,
                    *chunk as usize,
                );
            }
            Op::Cut => self.cut(),
            Op::Close { side: s } => {
                let s = side(*s);
                self.m[s].closed = true;
                self.eps[s].close(self.now);
                self.drain(s);
            }
            Op::Garbage {
                from,
                bytes,
                framed,
            } => {
                if !self.link.cut {
                    self.tainted = true;
                    let wire = &mut self.link.wires[side(*from)];
                    if *framed {
                        wire.inject_frame(bytes);
                    } else {
                        wire.inject(bytes);
                    }
                }
            }
            Op::Forge { from, kind, id } => {
                if !self.link.cut {
                    self.tainted = true;
                    self.link.wires[side(*from)].inject_frame(forged(*kind, *id).as_bytes());
                }
            }
        }
        self.ctx = Ctx::Plain;
        self.check_step();
    }

    // ----- operations -----

    fn request(&mut self, s: usize, d: Deadline) {
        let token = self.token();
        let params = format!("{{\"n\":{token}}}");
        let (timeout, deadline) = self.m[s].deadline(d, self.now);
        let expect = self.m[s]
            .send_error(self.eps[s].buffered_output())
            .or_else(|| {
                (self.m[s].pending().count() >= self.m[s].config.max_pending_outgoing)
                    .then_some(SendError::TooManyPending)
            });
        let id = self.m[s].next_id;
        let got = self.eps[s].call(
            id,
            "m",
            Some(RawValue::from_json(&params).unwrap()),
            RequestOptions::timeout(timeout),
            self.now,
        );
        match (got, expect) {
            (Ok(()), None) => self.sent_request(s, id, id, token, deadline, None),
            (Err(e), Some(x)) if e == x => {}
            (got, expect) => {
                panic!("side {s}: call gave {got:?}, the model expected {expect:?}")
            }
        }
        self.drain(s);
    }

    /// A request sent as `id` on the wire (checked there: `check_transmitted`), under the
    /// call token `call`.
    fn sent_request(
        &mut self,
        s: usize,
        id: u64,
        call: u64,
        token: u64,
        deadline: Option<Instant>,
        batch: Option<usize>,
    ) {
        let m = &mut self.m[s];
        assert_eq!(id, m.next_id, "side {s}: request ids are sequential");
        m.next_id += 1;
        m.out.insert(
            id,
            OutReq {
                id,
                call,
                token,
                deadline,
                batch,
                ended: None,
                transmitted: false,
            },
        );
    }

    fn notify(&mut self, s: usize) {
        let token = self.token();
        let params = format!("{{\"n\":{token}}}");
        let expect = self.m[s].send_error(self.eps[s].buffered_output());
        let got = self.eps[s].notify("note", Some(RawValue::from_json(&params).unwrap()));
        match (got, expect) {
            (Ok(()), None) => {
                self.m[s].notes_sent.insert(token);
            }
            (Err(e), Some(x)) if e == x => {}
            (got, expect) => {
                panic!("side {s}: notify gave {got:?}, the model expected {expect:?}")
            }
        }
    }

    fn batch(&mut self, s: usize, entries: &[Option<Deadline>], send: bool) {
        let now = self.now;
        let base_error = self.m[s].send_error(self.eps[s].buffered_output());
        let mut pending = self.m[s].pending().count();
        let mut requests = Vec::new();
        let mut notes = Vec::new();
        let mut next_id = self.m[s].next_id;
        // The batch's token: the id its first request gets.
        let call = next_id;
        let mut builder = self.eps[s].batch(call, now);
        for entry in entries {
            self.next_token += 1;
            let token = self.next_token;
            let params = format!("{{\"n\":{token}}}");
            let params = Some(RawValue::from_json(&params).unwrap());
            match entry {
                Some(d) => {
                    let (timeout, deadline) = self.m[s].deadline(*d, now);
                    let expect = base_error.or_else(|| {
                        (pending >= self.m[s].config.max_pending_outgoing)
                            .then_some(SendError::TooManyPending)
                    });
                    match (
                        builder.call("m", params, RequestOptions::timeout(timeout)),
                        expect,
                    ) {
                        (Ok(()), None) => {
                            // Its id, and index `next_id - call` under the batch's token.
                            requests.push((next_id, token, deadline));
                            next_id += 1;
                            pending += 1;
                        }
                        (Err(e), Some(x)) if e == x => {}
                        (got, expect) => panic!(
                            "side {s}: batch request gave {got:?}, the model expected {expect:?}"
                        ),
                    }
                }
                None => match (builder.notify("note", params), base_error) {
                    (Ok(()), None) => notes.push(token),
                    (Err(e), Some(x)) if e == x => {}
                    (got, expect) => {
                        panic!("side {s}: batch notify gave {got:?}, the model expected {expect:?}")
                    }
                },
            }
        }
        let sent = if send {
            match (builder.send(), base_error) {
                (Ok(n), None) => {
                    assert_eq!(n, requests.len(), "side {s}: the calls a batch holds");
                    true
                }
                (Err(e), Some(x)) if e == x => false,
                (got, expect) => {
                    panic!("side {s}: batch send gave {got:?}, the model expected {expect:?}")
                }
            }
        } else {
            drop(builder);
            false
        };
        if sent {
            let b = self.m[s].batches;
            self.m[s].batches += 1;
            for (id, token, deadline) in requests {
                self.sent_request(s, id, call, token, deadline, Some(b));
            }
            self.m[s].notes_sent.extend(notes);
        } else {
            // The ids were spent all the same.
            self.m[s].next_id = next_id;
        }
        assert_eq!(
            self.eps[s].unanswered_requests(),
            self.m[s].pending().count(),
            "side {s}: a dropped batch forgets its requests"
        );
        assert_eq!(
            self.eps[s].waiting_calls(),
            self.m[s].pending().count(),
            "side {s}: a dropped batch registers no call"
        );
        self.drain(s);
    }

    fn respond(&mut self, s: usize, pick: usize, ok: bool) {
        let m = &self.m[s];
        let open: Vec<IncomingId> = m
            .inc
            .iter()
            .filter(|(_, r)| !r.answered && !r.dropped)
            .map(|(h, _)| *h)
            .collect();
        let all: Vec<IncomingId> = m.inc.keys().copied().collect();
        let handle = if pick & 3 != 0 && !open.is_empty() {
            open[pick / 4 % open.len()]
        } else if !all.is_empty() {
            all[pick / 4 % all.len()]
        } else {
            return;
        };
        let r = &m.inc[&handle];
        let expect_ok = !m.closed && !r.answered && !r.dropped;
        let answer = Answer::new(r.token, ok);
        // The connection ignores an answer to a handle not running: the count tells.
        let running = self.eps[s].running();
        match &answer {
            Answer::Ok(t) => {
                self.eps[s].respond(handle, Ok(RawValue::from_json(&t.to_string()).unwrap()))
            }
            Answer::Err(c, msg) => {
                self.eps[s].respond(handle, Err(&ErrorObject::new(*c, msg.clone())))
            }
        };
        let taken = self.eps[s].running() + 1 == running;
        assert_eq!(
            taken, expect_ok,
            "side {s}: respond({handle:?}) taken: {taken}"
        );
        if expect_ok {
            let m = &mut self.m[s];
            let r = m.inc.get_mut(&handle).unwrap();
            r.answered = true;
            if let Some(w) = r.wire {
                if !self.tainted {
                    m.answers.insert(w, answer);
                    if let Some(b) = r.batch {
                        let st = m.peer_batches.entry(b).or_default();
                        st.answered.insert(w);
                        if st.registered.is_subset(&st.answered) {
                            st.settled = true;
                        }
                    }
                }
            }
        }
        self.drain(s);
    }

    /// Cancels the call of a request: the request alone, or every call of its batch still
    /// waiting (a batch is one token).
    fn cancel(&mut self, s: usize, pick: usize) {
        let m = &self.m[s];
        let pending: Vec<u64> = m.pending().map(|o| o.id).collect();
        let all: Vec<u64> = m.out.keys().copied().collect();
        let id = if pick & 3 != 0 && !pending.is_empty() {
            pending[pick / 4 % pending.len()]
        } else if !all.is_empty() {
            all[pick / 4 % all.len()]
        } else {
            return;
        };
        let call = m.out[&id].call;
        let cancelled: Vec<u64> = m
            .pending()
            .filter(|o| o.call == call)
            .map(|o| o.id)
            .collect();
        let expect = !cancelled.is_empty();
        let got = self.eps[s].cancel_call(call, self.now);
        assert_eq!(got, expect, "side {s}: cancel_call({call}) gave {got}");
        // They end at once, without an event (none may come for them: `on_event`).
        for id in cancelled {
            self.m[s].out.get_mut(&id).unwrap().ended = Some(End::Cancelled);
        }
        self.drain(s);
    }

    fn fire_timeouts(&mut self) {
        self.ctx = Ctx::Timeout;
        for s in 0..2 {
            self.eps[s].handle_timeout(self.now);
            self.drain(s);
            let now = self.now;
            for o in self.m[s].pending() {
                assert!(
                    !matches!(o.deadline, Some(d) if d <= now),
                    "side {s}: request {} is past its deadline {:?} at {now:?} and still pending",
                    o.id,
                    o.deadline
                );
            }
        }
    }

    fn flush(&mut self, s: usize) {
        let mut buf = Vec::new();
        while let Some(n) = self.eps[s].poll_transmit(&mut buf) {
            assert_eq!(
                n,
                buf.len(),
                "side {s}: poll_transmit reports the frame's length"
            );
            let bodies = self.link.wires[s].push(&buf);
            assert_eq!(bodies.len(), 1, "side {s}: one frame per poll_transmit");
            self.check_transmitted(s, &bodies[0]);
            buf.clear();
        }
        if self.link.cut {
            self.link.cut();
        }
    }

    fn deliver(&mut self, from: usize, frames: usize, seed: u64, bytes: usize, chunk: usize) {
        if self.link.cut {
            return;
        }
        let to = 1 - from;
        let wire = &mut self.link.wires[from];
        wire.sequence(frames, seed);
        let mut events = Vec::new();
        wire.deliver(
            &mut self.eps[to],
            bytes.max(1),
            chunk,
            self.now,
            &mut |ep| drain_into(ep, &mut events),
        );
        for e in events {
            self.on_event(to, e);
        }
    }

    fn cut(&mut self) {
        if self.link.cut {
            return;
        }
        self.link.cut();
        self.ctx = Ctx::Cut;
        for s in 0..2 {
            self.m[s].closed = true;
            // The input ended: frames received are handed out, then, with no grace, the
            // connection closes at the next timeout (at once if no handler runs).
            self.eps[s].handle_end_of_input(self.now);
            self.drain(s);
            self.eps[s].handle_timeout(self.now);
            self.drain(s);
        }
    }

    fn drain(&mut self, s: usize) {
        let mut events = Vec::new();
        drain_into(&mut self.eps[s], &mut events);
        for e in events {
            self.on_event(s, e);
        }
    }

    // ----- checks -----

    /// Checks one event at side `s` against the model and updates it.
    fn on_event(&mut self, s: usize, e: Ev) {
        let p = 1 - s;
        let tainted = self.tainted;
        let (m, peer) = if s == 0 {
            let (a, b) = self.m.split_at_mut(1);
            (&mut a[0], &b[0])
        } else {
            let (a, b) = self.m.split_at_mut(1);
            (&mut b[0], &a[0])
        };
        assert!(!m.closed_event, "side {s}: event after Closed: {e:?}");
        match e {
            Ev::Request {
                id,
                method,
                params,
                wire,
            } => {
                assert!(!m.inc.contains_key(&id), "side {s}: handle {id:?} reused");
                let token = token_of(params.as_deref()).unwrap_or(0);
                let mut batch = None;
                if !tainted {
                    let w = wire.expect("a request id the peer wrote");
                    let o = peer
                        .out
                        .get(&w)
                        .unwrap_or_else(|| panic!("side {s}: request {w} never sent by {p}"));
                    assert!(
                        o.transmitted,
                        "side {s}: request {w} surfaced before {p} transmitted it"
                    );
                    assert_eq!(
                        (method.as_str(), token),
                        ("m", o.token),
                        "side {s}: request {w} content"
                    );
                    assert!(m.seen_req.insert(w), "side {s}: request {w} surfaced twice");
                    batch = o.batch;
                    if let Some(b) = batch {
                        m.peer_batches.entry(b).or_default().registered.insert(w);
                    }
                }
                m.inc.insert(
                    id,
                    InReq {
                        wire,
                        token,
                        answered: false,
                        dropped: m.closed_event,
                        peer_cancelled: false,
                        batch,
                    },
                );
            }
            Ev::Notification { method, params } => {
                if tainted {
                    return;
                }
                if method == m.config.cancel_method {
                    assert!(
                        !m.config.cancellation,
                        "side {s}: a cancellation surfaced as a notification"
                    );
                    let v: Value = serde_json::from_str(params.as_deref().unwrap()).unwrap();
                    let w = v["id"].as_u64().unwrap();
                    assert!(
                        peer.tx_cancels.contains(&w),
                        "side {s}: cancel of {w} never sent"
                    );
                } else {
                    let token = token_of(params.as_deref()).unwrap();
                    assert_eq!(method, "note");
                    assert!(
                        peer.tx_notes.contains(&token),
                        "side {s}: notification {token} never transmitted"
                    );
                    assert!(
                        m.seen_notes.insert(token),
                        "side {s}: notification {token} surfaced twice"
                    );
                }
            }
            Ev::Response { id, result } => {
                let o = m
                    .out
                    .get_mut(&id)
                    .unwrap_or_else(|| panic!("side {s}: response to unknown {id}"));
                assert_eq!(
                    o.ended, None,
                    "side {s}: request {id} ended twice (now with a response)"
                );
                o.ended = Some(End::Response);
                if !tainted {
                    let w = id;
                    match (peer.answers.get(&w), peer.auto.get(&w)) {
                        (Some(a), _) => assert!(
                            a.matches(&result),
                            "side {s}: {id} got {result:?}, {p} answered {a:?}"
                        ),
                        (None, Some(c)) => assert!(matches!(result, Err((code, _)) if code == *c)),
                        (None, None) => panic!(
                            "side {s}: response {result:?} to {id}, which {p} never answered"
                        ),
                    }
                }
            }
            Ev::Ended { id, reason } => {
                let o = m
                    .out
                    .get_mut(&id)
                    .unwrap_or_else(|| panic!("side {s}: unknown {id} ended"));
                assert_eq!(
                    o.ended, None,
                    "side {s}: request {id} ended twice (now {reason:?})"
                );
                let end = match reason {
                    EndReason::TimedOut => {
                        assert_eq!(
                            self.ctx,
                            Ctx::Timeout,
                            "side {s}: {id} timed out outside handle_timeout"
                        );
                        let d = o
                            .deadline
                            .unwrap_or_else(|| panic!("side {s}: {id} had no deadline, timed out"));
                        assert!(
                            d <= self.now,
                            "side {s}: {id} timed out at {:?}, before {d:?}",
                            self.now
                        );
                        End::TimedOut
                    }
                    EndReason::Cancelled => {
                        // `cancel_call` ends a call silently (its `ended` is set already, so
                        // the check above fails first for one the model cancelled).
                        panic!("side {s}: {id} ended Cancelled as an event")
                    }
                    EndReason::Closed => {
                        assert!(m.closed, "side {s}: {id} ended Closed while open");
                        End::Closed
                    }
                    other => {
                        assert!(
                            tainted,
                            "side {s}: {id} ended {other:?} with a well-behaved peer"
                        );
                        End::Other
                    }
                };
                o.ended = Some(end);
            }
            Ev::PeerCancelled(h) => {
                let r = m
                    .inc
                    .get_mut(&h)
                    .unwrap_or_else(|| panic!("side {s}: peer cancelled unknown {h:?}"));
                assert!(
                    !r.answered && !r.dropped,
                    "side {s}: peer cancel of {h:?}, which is not in flight"
                );
                if !tainted {
                    let w = r.wire.unwrap();
                    assert!(
                        peer.tx_cancels.contains(&w),
                        "side {s}: {p} never cancelled {w}"
                    );
                    assert!(!r.peer_cancelled, "side {s}: {h:?} peer-cancelled twice");
                }
                r.peer_cancelled = true;
            }
            Ev::Frame(e) => {
                let truncated = matches!(e, FrameError::Truncated { .. });
                assert!(
                    tainted || (truncated && self.ctx == Ctx::Cut),
                    "side {s}: frame error {e:?}"
                );
            }
            Ev::Closed => {
                assert!(m.closed, "side {s}: Closed while open");
                m.closed_event = true;
                for o in m.out.values() {
                    assert!(
                        o.ended.is_some(),
                        "side {s}: {} still pending at Closed",
                        o.id
                    );
                }
                for r in m.inc.values_mut() {
                    r.dropped |= !r.answered;
                }
            }
            Ev::Other(e) => assert!(tainted, "side {s}: unexpected event {e}"),
        }
    }

    /// Checks one frame body side `s` transmitted.
    fn check_transmitted(&mut self, s: usize, body: &[u8]) {
        let p = 1 - s;
        let v: Value = serde_json::from_slice(body).unwrap_or_else(|e| {
            panic!(
                "side {s} transmitted invalid JSON ({e}): {}",
                String::from_utf8_lossy(body)
            )
        });
        let (items, in_batch) = match v {
            Value::Array(items) => {
                assert!(!items.is_empty(), "side {s} transmitted an empty array");
                (items, true)
            }
            other => (vec![other], false),
        };
        let calls = items.iter().filter(|i| i.get("method").is_some()).count();
        assert!(
            calls == 0 || calls == items.len(),
            "side {s} mixed calls and responses in one array"
        );
        let mut batch_of_frame = None;
        for msg in &items {
            assert_eq!(
                msg.get("jsonrpc"),
                Some(&Value::from("2.0")),
                "side {s}: {msg}"
            );
            if let Some(method) = msg.get("method") {
                let method = method.as_str().expect("method is a string");
                match msg.get("id") {
                    Some(id) => {
                        let w = id.as_u64().expect("our ids are numbers");
                        let m = &mut self.m[s];
                        let o = m
                            .out
                            .get_mut(&w)
                            .unwrap_or_else(|| panic!("side {s} transmitted unknown {w}"));
                        assert!(!o.transmitted, "side {s} transmitted request {w} twice");
                        o.transmitted = true;
                        assert_eq!(
                            o.batch.is_some(),
                            in_batch,
                            "side {s}: {w} framed as in a batch or not"
                        );
                        assert!(
                            batch_of_frame.is_none() || batch_of_frame == Some(o.batch),
                            "one batch per array"
                        );
                        batch_of_frame = Some(o.batch);
                        assert_eq!(method, "m");
                        assert_eq!(msg["params"]["n"].as_u64(), Some(o.token));
                    }
                    None if method == self.m[s].config.cancel_method => {
                        assert!(!in_batch, "side {s}: cancellations go alone");
                        let m = &mut self.m[s];
                        let w = msg["params"]["id"]
                            .as_u64()
                            .expect("cancel of one of our ids");
                        let o = m
                            .out
                            .get(&w)
                            .unwrap_or_else(|| panic!("side {s} cancelled unknown {w}"));
                        assert!(
                            m.config.cancellation,
                            "side {s}: cancellation off, cancel sent"
                        );
                        match o.ended {
                            Some(End::Cancelled) => {}
                            Some(End::TimedOut) => {
                                assert!(m.config.cancel_on_timeout, "side {s}: cancel on timeout")
                            }
                            other => panic!("side {s}: cancel sent for {w}, which ended {other:?}"),
                        }
                        assert!(
                            m.tx_cancels.insert(w),
                            "side {s} sent the cancel of {w} twice"
                        );
                    }
                    None => {
                        assert_eq!(method, "note");
                        let t = msg["params"]["n"].as_u64().unwrap();
                        let m = &mut self.m[s];
                        assert!(
                            m.notes_sent.contains(&t),
                            "side {s} transmitted a notification never sent"
                        );
                        assert!(
                            m.tx_notes.insert(t),
                            "side {s} transmitted notification {t} twice"
                        );
                    }
                }
            } else {
                let id = msg.get("id").expect("a response has an id");
                let has_result = msg.get("result").is_some();
                let error = msg.get("error");
                assert!(
                    has_result != error.is_some(),
                    "side {s}: result xor error: {msg}"
                );
                if let Some(e) = error {
                    assert!(
                        e["code"].is_i64() && e["message"].is_string(),
                        "side {s}: error object {e}"
                    );
                }
                if self.tainted {
                    continue;
                }
                let w = id
                    .as_u64()
                    .unwrap_or_else(|| panic!("side {s} answered a foreign id {id}"));
                let (m, peer) = if s == 0 {
                    let (a, b) = self.m.split_at_mut(1);
                    (&mut a[0], &b[0])
                } else {
                    let (a, b) = self.m.split_at_mut(1);
                    (&mut b[0], &a[0])
                };
                let count = m.tx_responses.entry(w).or_default();
                *count += 1;
                assert_eq!(*count, 1, "side {s} answered {p}'s request {w} twice");
                let o = peer
                    .out
                    .get(&w)
                    .unwrap_or_else(|| panic!("side {s} answered {w}, never sent by {p}"));
                assert_eq!(
                    o.batch.is_some(),
                    in_batch,
                    "side {s}: answer to {w} framed as in a batch or not"
                );
                match m.answers.get(&w) {
                    Some(a) => assert!(
                        a.matches_json(msg),
                        "side {s}: answer to {w} is {msg}, the app said {a:?}"
                    ),
                    None => {
                        let c = error.and_then(|e| e["code"].as_i64());
                        let cancelled =
                            c == Some(m.config.cancelled_code) && peer.tx_cancels.contains(&w);
                        let busy = c == Some(code::SERVER_BUSY);
                        assert!(
                            cancelled || busy,
                            "side {s} answered {w} with {msg} by itself"
                        );
                        m.auto.insert(w, c.unwrap());
                    }
                }
            }
        }
    }

    /// Checks both sides' tables against the model.
    fn check_step(&mut self) {
        for s in 0..2 {
            let (ep, m) = (&self.eps[s], &self.m[s]);
            assert_eq!(ep.is_closed(), m.closed, "side {s}: is_closed");
            assert_eq!(
                ep.unanswered_requests(),
                m.pending().count(),
                "side {s}: pending requests"
            );
            assert_eq!(
                ep.waiting_calls(),
                m.pending().count(),
                "side {s}: calls waiting"
            );
            assert_eq!(
                ep.requests_in_flight(),
                m.in_flight(),
                "side {s}: requests in flight"
            );
            assert!(
                ep.requests_in_flight() <= m.config.max_inflight_incoming,
                "side {s}: in-flight bound"
            );
            let first = m.pending().filter_map(|o| o.deadline).min();
            match (ep.poll_timeout(), first) {
                (_, None) => {}
                (Some(t), Some(d)) => {
                    assert!(t <= d, "side {s}: poll_timeout {t:?} after deadline {d:?}")
                }
                (None, Some(d)) => panic!("side {s}: poll_timeout None with a deadline at {d:?}"),
            }
            if m.closed {
                assert!(m.closed_event, "side {s}: closed without Event::Closed");
                assert_eq!(ep.poll_timeout(), None, "side {s}: a timer after close");
                if ep.buffered_output() == 0 {
                    assert!(ep.is_idle(), "side {s}: closed and drained but not idle");
                }
            }
        }
    }

    /// Settles everything and checks the end state: answers all requests and delivers all
    /// bytes while the link holds, fires every deadline, closes both sides.
    pub fn finish(&mut self) {
        self.settle();
        let open = !self.m[0].closed && !self.m[1].closed;
        if open && !self.tainted {
            for s in 0..2 {
                if let Some(o) = self.m[s].pending().next() {
                    panic!(
                        "side {s}: request {} still pending with everything answered and delivered",
                        o.id
                    );
                }
            }
        }
        for _ in 0..1000 {
            let Some(t) = self.eps.iter().filter_map(Connection::poll_timeout).min() else {
                break;
            };
            self.now = self.now.max(t);
            self.fire_timeouts();
            self.check_step();
            self.settle();
        }
        for s in 0..2 {
            assert_eq!(
                self.eps[s].poll_timeout(),
                None,
                "side {s}: timers left after firing all"
            );
        }
        for s in 0..2 {
            self.apply(&Op::Close { side: s as u8 });
            self.flush(s);
        }
        for s in 0..2 {
            let (ep, m) = (&mut self.eps[s], &self.m[s]);
            assert!(ep.poll_event().is_none(), "side {s}: events after Closed");
            assert!(ep.is_idle(), "side {s}: not idle after close");
            for o in m.out.values() {
                assert!(o.ended.is_some(), "side {s}: request {} never ended", o.id);
            }
            if self.tainted {
                continue;
            }
            for w in m.answers.keys() {
                // A batch's answers go out together, once every request in it is answered.
                let settled = match self.m[1 - s].out[w].batch {
                    None => true,
                    Some(b) => m.peer_batches.get(&b).is_some_and(|st| st.settled),
                };
                let count = m.tx_responses.get(w).copied().unwrap_or(0);
                if settled {
                    assert_eq!(
                        count, 1,
                        "side {s}: the answer to {w} was transmitted {count} times"
                    );
                }
            }
        }
    }

    /// While the link holds: flush, deliver in order, answer every request, until quiet.
    fn settle(&mut self) {
        if self.link.cut {
            for s in 0..2 {
                self.flush(s);
            }
            return;
        }
        for _ in 0..100 {
            for s in 0..2 {
                self.apply(&Op::Flush { side: s as u8 });
                self.apply(&Op::Deliver {
                    from: s as u8,
                    flush: false,
                    frames: u8::MAX,
                    seed: 0,
                    bytes: u16::MAX,
                    chunk: u16::MAX,
                });
            }
            let mut answered = false;
            for s in 0..2 {
                while self.m[s].in_flight() > 0 && !self.m[s].closed {
                    self.apply(&Op::Respond {
                        side: s as u8,
                        pick: 1,
                        ok: true,
                    });
                    answered = true;
                }
            }
            let quiet =
                (0..2).all(|s| self.link.wires[s].is_empty() && self.eps[s].buffered_output() == 0);
            if quiet && !answered {
                return;
            }
        }
        panic!("the pair did not settle");
    }
}
