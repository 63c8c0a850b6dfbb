//! One response stream of the server: what it waits for, how it answers (one JSON body,
//! or Server-Sent Events), and the bytes its HTTP response still has to write.

use std::collections::VecDeque;
use std::vec::Vec;

use sansrpc::codec::sse;
use sansrpc::Instant;

/// What a stream is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A POST carrying requests: done once each is answered.
    Post,
    /// A session's GET stream: the session's messages that belong to no request.
    Get,
    /// The events a durable store kept of a stream from before the server restarted,
    /// replayed to the client resuming it; then it ends (session 0, never stateless).
    Replay,
}

/// How its HTTP response goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Nothing written yet: the first message decides.
    Undecided,
    /// One JSON body (the answer alone): done after it.
    Json,
    /// Server-Sent Events in chunked transfer coding.
    Sse,
}

/// A logical stream: lives on when its HTTP response goes away (until the session ends),
/// so a client can resume it.
#[derive(Debug)]
pub(super) struct Stream {
    pub kind: Kind,
    /// The session it belongs to (0 for a stateless request).
    pub session: u64,
    /// Requests of its POST still unanswered.
    pub pending: usize,
    pub mode: Mode,
    /// Events get ids and are kept for `Last-Event-ID` (the session revisions).
    pub resumable: bool,
    /// The last event sequence number used.
    pub seq: u64,
    /// An HTTP response is attached and reading.
    pub attached: bool,
    /// The head of the attached response, not taken yet.
    pub head: Option<StreamHead>,
    /// Body bytes for the attached response (the JSON answer, or events), not taken yet;
    /// the HTTP/1.1 framing is added as they are taken ([`Endpoint::poll_stream`]).
    ///
    /// [`Endpoint::poll_stream`]: super::Endpoint::poll_stream
    pub out: Vec<u8>,
    /// Events waiting while no response is attached and nothing keeps them (a stream of a
    /// revision without resumption, or the session's GET stream before one opens),
    /// bounded; the oldest goes first.
    pub queued: VecDeque<Vec<u8>>,
    /// Every answer was written: end the response once `out` is taken.
    pub done: bool,
    /// The response's end was written.
    pub ended: bool,
    /// The response was cut (its client did not read): the adapter closes it.
    pub cut: bool,
    /// The last time something was written (for keep-alives).
    pub last_write: Instant,
    /// The status a JSON answer goes out with when it is an error of this code (2026: an
    /// unknown method is HTTP 404).
    pub json_status: fn(Option<i64>) -> u16,
    /// Its response names the session (the stream of the `initialize` that made it).
    pub announce: bool,
    /// The `Origin` its response lets read it (CORS), when its request came from a page of
    /// an allowed origin.
    pub cors: Option<Box<str>>,
    /// The deadline of its POST's JSON window, when it waits in the server's queue of
    /// windows rather than among its timers (an entry there naming another deadline, or
    /// none, is stale).
    pub window: Option<Instant>,
    /// It waits in the server's queue of ready streams ([`Endpoint::poll_ready`]).
    ///
    /// [`Endpoint::poll_ready`]: super::Endpoint::poll_ready
    pub queued_ready: bool,
    /// Its response answers an HTTP/1.0 request: events go out unframed, their end is the
    /// connection's close (no chunked coding for HTTP/1.0, RFC 9112 §6.1).
    pub close_delimited: bool,
}

impl Stream {
    pub fn new(kind: Kind, session: u64, pending: usize, resumable: bool, now: Instant) -> Self {
        Stream {
            kind,
            session,
            pending,
            mode: Mode::Undecided,
            resumable,
            seq: 0,
            attached: true,
            head: None,
            out: Vec::new(),
            queued: VecDeque::new(),
            done: false,
            ended: false,
            cut: false,
            last_write: now,
            json_status: |_| 200,
            announce: false,
            cors: None,
            window: None,
            queued_ready: false,
            close_delimited: false,
        }
    }

    /// Starts an SSE response: the head, and for a resumable stream the priming event (its
    /// last id and the reconnection delay).
    pub fn open_sse(&mut self, id: u64, retry_ms: u32, session_id: Option<&[u8]>) {
        self.mode = Mode::Sse;
        self.head = Some(StreamHead {
            status: 200,
            sse: true,
            session_id: session_id.map(<[u8]>::to_vec),
            allow_origin: self.cors.clone(),
        });
        if self.resumable {
            let mut eid = Vec::with_capacity(24);
            sse::event_id(id, self.seq, &mut eid);
            let eid = core::str::from_utf8(&eid).unwrap_or_default();
            sse::encode_event(&mut self.out, Some(eid), None, "", Some(retry_ms));
        }
    }

    /// Starts a JSON response of `status` with its one body, `answer`; with room for an
    /// HTTP/1.1 head in front of it when `head_room` (else the buffer is exactly the body).
    pub fn answer_json(
        &mut self,
        status: u16,
        session_id: Option<Vec<u8>>,
        answer: &[u8],
        head_room: bool,
    ) {
        self.mode = Mode::Json;
        self.head = Some(StreamHead {
            status,
            sse: false,
            session_id,
            allow_origin: self.cors.clone(),
        });
        // Room for the HTTP/1.1 head written in front of it as it is taken.
        self.out
            .reserve_exact(answer.len() + if head_room { HEAD_ROOM } else { 0 });
        self.out.extend_from_slice(answer);
    }

    /// Appends body bytes (events, a comment).
    pub fn chunk(&mut self, data: &[u8]) {
        self.out.extend_from_slice(data);
    }

    /// Ends the body.
    pub fn end(&mut self) {
        self.ended = true;
    }

    /// Forgets what the attached response had not taken.
    pub fn clear(&mut self) {
        self.head = None;
        self.out.clear();
    }

    /// Something is waiting to be taken.
    pub fn pending(&self) -> bool {
        self.head.is_some() || !self.out.is_empty()
    }
}

/// Room kept in front of a JSON answer for its HTTP/1.1 head.
const HEAD_ROOM: usize = 160;

/// The head of a stream's HTTP response, as [`Endpoint::poll_stream_parts`] gives it: for a
/// driver whose HTTP library writes the head and frames the body itself (hyper, HTTP/2).
/// [`Endpoint::poll_stream`] writes the same head as HTTP/1.1.
///
/// [`Endpoint::poll_stream_parts`]: super::Endpoint::poll_stream_parts
/// [`Endpoint::poll_stream`]: super::Endpoint::poll_stream
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHead {
    /// The status.
    pub status: u16,
    /// Server-Sent Events (a body of unknown length, sent as it comes); else one JSON body.
    pub sse: bool,
    /// The session the response names (`Mcp-Session-Id`): on the answer to the
    /// `initialize` that started it.
    pub session_id: Option<Vec<u8>>,
    /// The `Origin` a page may read the response from (CORS): its request came with this
    /// allowed origin ([`Config::origins`](super::Config::origins)).
    pub allow_origin: Option<Box<str>>,
}

impl StreamHead {
    /// Its header fields besides the framing ones (`content-length`,
    /// `transfer-encoding`), `mcp-session-id` ([`session_id`](Self::session_id)) and CORS's
    /// ([`extra_fields`](Self::extra_fields)).
    pub fn fields(&self) -> &'static [(&'static str, &'static str)] {
        if self.sse {
            &[
                ("content-type", "text/event-stream"),
                ("cache-control", "no-cache"),
                ("x-accel-buffering", "no"),
            ]
        } else {
            &[("content-type", "application/json")]
        }
    }

    /// Its header fields that vary: `mcp-session-id`, and with an allowed origin CORS's
    /// `access-control-allow-origin`, `-expose-headers` and `vary`.
    pub fn extra_fields<'a>(&'a self, mut push: impl FnMut(&'static str, &'a [u8])) {
        if let Some(id) = &self.session_id {
            push("mcp-session-id", id);
        }
        if let Some(origin) = &self.allow_origin {
            for (name, value) in super::rules::cors_fields(origin) {
                push(name, value);
            }
        }
    }

    /// The head as HTTP/1.1: a JSON body of `len` bytes, or a chunked one; or, answering
    /// HTTP/1.0 (`close_delimited`), events ended by the connection's close.
    pub(super) fn write(&self, out: &mut Vec<u8>, len: usize, close_delimited: bool) {
        let mut headers: [(&str, &[u8]); 8] = [("", b""); 8];
        let mut named = 0;
        for &(name, value) in self.fields() {
            headers[named] = (name, value.as_bytes());
            named += 1;
        }
        if self.sse {
            headers[named] = match close_delimited {
                false => ("transfer-encoding", b"chunked"),
                true => ("connection", b"close"),
            };
            named += 1;
        }
        self.extra_fields(|name, value| {
            headers[named] = (name, value);
            named += 1;
        });
        let length = (!self.sse).then_some(len);
        sansrpc::codec::http::write_head(out, self.status, length, &headers[..named]);
    }
}
