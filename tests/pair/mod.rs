//! A pair of connections over an in-memory link with a virtual clock, as quinn's `Pair`.
#![allow(dead_code)]

use sansrpc::connection::{
    CloseReason, Config, Connection, EndReason, Event, Expiry, IncomingId, RequestOptions,
    SendError,
};
use sansrpc::{ErrorObject, Instant, RawValue};
use std::time::Duration;

/// An event copied out of the connection, so tests can collect and inspect them.
#[derive(Debug, Clone, PartialEq)]
pub enum Ev {
    Request {
        id: IncomingId,
        method: String,
        params: Option<String>,
        wire_id: String,
    },
    Notification {
        method: String,
        params: Option<String>,
    },
    /// [`Event::Answer`]: the answer to the call or batch `token`, its place `index` in it.
    Response {
        token: u64,
        index: usize,
        result: Result<String, (i64, String)>,
    },
    Ended {
        token: u64,
        index: usize,
        reason: EndReason,
    },
    /// [`Event::Cancel`]: the peer cancelled a request of it handed out and running.
    PeerCancelled(IncomingId),
    Unknown(String),
    ErrorWithoutId(i64),
    Protocol,
    Frame(String),
    Rejected,
    Expired(Expiry),
    Closed(CloseReason),
}

/// The answer to the single call `token`.
pub fn answer(token: u64, result: &str) -> Ev {
    Ev::Response {
        token,
        index: 0,
        result: Ok(result.into()),
    }
}

/// The single call `token` ended without an answer.
pub fn ended(token: u64, reason: EndReason) -> Ev {
    Ev::Ended {
        token,
        index: 0,
        reason,
    }
}

pub fn copy(e: Event<'_>) -> Ev {
    match e {
        Event::Request { handle, request } => Ev::Request {
            id: handle,
            method: request.method.into_owned(),
            params: request.params.map(|p| p.get().to_owned()),
            wire_id: request.id.to_string(),
        },
        Event::Notification(n) => Ev::Notification {
            method: n.method.into_owned(),
            params: n.params.map(|p| p.get().to_owned()),
        },
        Event::Answer {
            token,
            index,
            result,
            ..
        } => Ev::Response {
            token,
            index,
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
            token,
            index,
            reason,
        },
        Event::Cancel { handle } => Ev::PeerCancelled(handle),
        Event::UnknownResponse(r) => Ev::Unknown(r.id.to_string()),
        Event::ErrorWithoutId(e) => Ev::ErrorWithoutId(e.code),
        Event::ProtocolError { .. } => Ev::Protocol,
        Event::FrameError(e) => Ev::Frame(e.to_string()),
        Event::Rejected(_) => Ev::Rejected,
        Event::Expired(x) => Ev::Expired(x),
        Event::Closed { reason } => Ev::Closed(reason),
        other => panic!("unexpected event {other:?}"),
    }
}

pub fn raw(json: &str) -> &RawValue {
    RawValue::from_json(json).unwrap()
}

/// One side of the pair.
pub struct Side {
    pub conn: Connection,
    /// Events drained so far, in order.
    pub events: Vec<Ev>,
    /// Every frame this side transmitted, as bytes.
    pub sent: Vec<Vec<u8>>,
    /// The last token [`call`](Side::call) gave.
    token: u64,
}

/// A side is its connection too: `side.handle_input(..)` is the connection's. (Its own
/// [`call`](Side::call) and [`respond`](Side::respond) come first.)
impl std::ops::Deref for Side {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl std::ops::DerefMut for Side {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

/// An answer given to a handle that was not running (answered already, or the connection
/// closed): the connection ignored it.
#[derive(Debug, PartialEq)]
pub struct NotRunning;

impl Side {
    /// One side alone, at time zero.
    pub fn new(config: Config) -> Self {
        Side {
            conn: Connection::new(config, Instant::ZERO),
            events: Vec::new(),
            sent: Vec::new(),
            token: 0,
        }
    }

    /// A fresh token, for a call or a batch.
    pub fn token(&mut self) -> u64 {
        self.token += 1;
        self.token
    }

    /// Calls `method` under a fresh token, and returns the token.
    pub fn call(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        options: RequestOptions,
        now: Instant,
    ) -> Result<u64, SendError> {
        let token = self.token();
        self.conn.call(token, method, params, options, now)?;
        Ok(token)
    }

    pub fn drain_events(&mut self) {
        while let Some(e) = self.conn.poll_event() {
            self.events.push(copy(e));
        }
    }

    pub fn take_events(&mut self) -> Vec<Ev> {
        self.drain_events();
        std::mem::take(&mut self.events)
    }

    /// Requests received and not yet answered by the test.
    pub fn requests(&self) -> Vec<IncomingId> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Ev::Request { id, .. } => Some(*id),
                _ => None,
            })
            .collect()
    }

    /// Answers a request; [`NotRunning`] when the handle was not running (the connection's
    /// `respond` ignores such a handle: the count of requests running tells).
    pub fn respond_with(
        &mut self,
        id: IncomingId,
        result: Result<&RawValue, &ErrorObject<'_>>,
    ) -> Result<(), NotRunning> {
        let running = self.conn.running();
        self.conn.respond(id, result);
        match self.conn.running() + 1 == running {
            true => Ok(()),
            false => Err(NotRunning),
        }
    }

    /// Answers a request running.
    pub fn respond(&mut self, id: IncomingId, json: &str) {
        self.respond_with(id, Ok(raw(json))).unwrap();
    }

    pub fn respond_err(&mut self, id: IncomingId, code: i64, message: &str) {
        let error = ErrorObject::new(code, message.to_owned());
        self.respond_with(id, Err(&error)).unwrap();
    }

    /// Answers a request running as cancelled.
    pub fn respond_cancelled(&mut self, id: IncomingId) -> Result<(), NotRunning> {
        let running = self.conn.running();
        self.conn.respond_cancelled(id);
        match self.conn.running() + 1 == running {
            true => Ok(()),
            false => Err(NotRunning),
        }
    }
}

/// Two connections, a link, and a clock.
pub struct Pair {
    pub a: Side,
    pub b: Side,
    pub now: Instant,
    /// Bytes in flight from a to b and from b to a.
    pub a_to_b: Vec<u8>,
    pub b_to_a: Vec<u8>,
    /// Largest chunk delivered per `handle_input` call (1 splits at every byte).
    pub chunk: usize,
}

impl Pair {
    pub fn new() -> Self {
        Pair::with(Config::default(), Config::default())
    }

    pub fn with(a: Config, b: Config) -> Self {
        Pair {
            a: Side::new(a),
            b: Side::new(b),
            now: Instant::ZERO,
            a_to_b: Vec::new(),
            b_to_a: Vec::new(),
            chunk: usize::MAX,
        }
    }

    fn transmit(side: &mut Side, link: &mut Vec<u8>) -> bool {
        let mut any = false;
        let mut frame = Vec::new();
        while side.conn.poll_transmit(&mut frame).is_some() {
            link.extend_from_slice(&frame);
            side.sent.push(std::mem::take(&mut frame));
            any = true;
        }
        any
    }

    fn deliver(side: &mut Side, link: &mut Vec<u8>, chunk: usize, now: Instant) -> bool {
        if link.is_empty() {
            return false;
        }
        let mut offset = 0;
        while offset < link.len() {
            let end = (offset + chunk).min(link.len());
            let mut piece = &link[offset..end];
            while !piece.is_empty() {
                let used = side.conn.handle_input(piece, now).unwrap();
                piece = &piece[used..];
                offset += used;
                side.drain_events();
                if used == 0 {
                    break;
                }
            }
            if offset < end {
                // Backed up even after draining events: output must be flushed by the caller.
                break;
            }
        }
        link.drain(..offset);
        offset > 0
    }

    /// Moves bytes both ways and drains events until nothing moves.
    pub fn drive(&mut self) {
        for _ in 0..10_000 {
            let mut moved = Pair::transmit(&mut self.a, &mut self.a_to_b);
            moved |= Pair::transmit(&mut self.b, &mut self.b_to_a);
            moved |= Pair::deliver(&mut self.b, &mut self.a_to_b, self.chunk, self.now);
            moved |= Pair::deliver(&mut self.a, &mut self.b_to_a, self.chunk, self.now);
            self.a.drain_events();
            self.b.drain_events();
            if !moved {
                return;
            }
        }
        panic!("the pair did not settle");
    }

    /// Jumps the clock to the earliest deadline of either side and fires it; false when no
    /// deadline is set.
    pub fn step_timeout(&mut self) -> bool {
        let next = [self.a.conn.poll_timeout(), self.b.conn.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        match next {
            Some(t) => {
                self.now = self.now.max(t);
                self.a.conn.handle_timeout(self.now);
                self.b.conn.handle_timeout(self.now);
                self.drive();
                true
            }
            None => false,
        }
    }

    pub fn advance(&mut self, d: Duration) {
        self.now = self.now + d;
        self.a.conn.handle_timeout(self.now);
        self.b.conn.handle_timeout(self.now);
        self.drive();
    }
}
