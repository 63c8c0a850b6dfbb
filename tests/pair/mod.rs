//! A pair of endpoints over an in-memory link with a virtual clock, as quinn's `Pair`.
#![allow(dead_code)]

use sansrpc::connection::{Config, EndReason, IncomingId, RequestId};
use sansrpc::internals::{Endpoint, EndpointEvent as Event};
use sansrpc::{ErrorObject, Instant, RawValue};
use std::time::Duration;

/// An event copied out of the endpoint, so tests can collect and inspect them.
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
    Response {
        id: RequestId,
        result: Result<String, (i64, String)>,
    },
    Ended {
        id: RequestId,
        reason: EndReason,
    },
    PeerCancelled(IncomingId),
    Unknown(String),
    ErrorWithoutId(i64),
    Protocol,
    Frame(String),
    Rejected,
    Closed,
}

pub fn copy(e: Event<'_>) -> Ev {
    match e {
        Event::Request { id, request } => Ev::Request {
            id,
            method: request.method.into_owned(),
            params: request.params.map(|p| p.get().to_owned()),
            wire_id: request.id.to_string(),
        },
        Event::Notification(n) => Ev::Notification {
            method: n.method.into_owned(),
            params: n.params.map(|p| p.get().to_owned()),
        },
        Event::Response { id, result } => Ev::Response {
            id,
            result: result
                .map(|r| r.get().to_owned())
                .map_err(|e| (e.code, e.message.into_owned())),
        },
        Event::Ended { id, reason } => Ev::Ended { id, reason },
        Event::PeerCancelled { id } => Ev::PeerCancelled(id),
        Event::UnknownResponse(r) => Ev::Unknown(r.id.to_string()),
        Event::ErrorWithoutId(e) => Ev::ErrorWithoutId(e.code),
        Event::ProtocolError { .. } => Ev::Protocol,
        Event::FrameError(e) => Ev::Frame(e.to_string()),
        Event::Rejected(_) => Ev::Rejected,
        Event::Closed => Ev::Closed,
        other => panic!("unexpected event {other:?}"),
    }
}

pub fn raw(json: &str) -> &RawValue {
    RawValue::from_json(json).unwrap()
}

/// One side of the pair.
pub struct Side {
    pub ep: Endpoint,
    /// Events drained so far, in order.
    pub events: Vec<Ev>,
    /// Every frame this side transmitted, as bytes.
    pub sent: Vec<Vec<u8>>,
}

impl Side {
    fn new(config: Config) -> Self {
        Side {
            ep: Endpoint::new(config),
            events: Vec::new(),
            sent: Vec::new(),
        }
    }

    pub fn drain_events(&mut self) {
        while let Some(e) = self.ep.poll_event() {
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

    pub fn respond(&mut self, id: IncomingId, json: &str) {
        self.ep.respond(id, Ok(raw(json))).unwrap();
    }

    pub fn respond_err(&mut self, id: IncomingId, code: i64, message: &str) {
        self.ep
            .respond(id, Err(&ErrorObject::new(code, message.to_owned())))
            .unwrap();
    }
}

/// Two endpoints, a link, and a clock.
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
        while side.ep.poll_transmit(&mut frame).is_some() {
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
                let used = side.ep.handle_input(piece, now).unwrap();
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
        let next = [self.a.ep.poll_timeout(), self.b.ep.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        match next {
            Some(t) => {
                self.now = self.now.max(t);
                self.a.ep.handle_timeout(self.now);
                self.b.ep.handle_timeout(self.now);
                self.drive();
                true
            }
            None => false,
        }
    }

    pub fn advance(&mut self, d: Duration) {
        self.now = self.now + d;
        self.a.ep.handle_timeout(self.now);
        self.b.ep.handle_timeout(self.now);
        self.drive();
    }
}
