//! One response stream of the server: what it waits for, how it answers (one JSON body,
//! or Server-Sent Events), and the bytes its HTTP response still has to write.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::codec::http::write_head;
use crate::codec::sse;
use crate::time::Instant;

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
    /// Bytes for the attached response (head, events, the end), not taken yet.
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
            out: Vec::new(),
            queued: VecDeque::new(),
            done: false,
            ended: false,
            cut: false,
            last_write: now,
            json_status: |_| 200,
            announce: false,
        }
    }

    /// The id of event `seq` of stream `id`: unique in the server, and naming its stream.
    pub fn event_id(id: u64, seq: u64, out: &mut Vec<u8>) {
        let mut buf = itoa::Buffer::new();
        out.extend_from_slice(buf.format(id).as_bytes());
        out.push(b'.');
        out.extend_from_slice(buf.format(seq).as_bytes());
    }

    /// Parses an event id back into its stream and sequence number.
    pub fn parse_event_id(text: &str) -> Option<(u64, u64)> {
        let (stream, seq) = text.trim().split_once('.')?;
        if stream.len() > 20 || seq.len() > 20 {
            return None;
        }
        Some((stream.parse().ok()?, seq.parse().ok()?))
    }

    /// Starts an SSE response: the head, and for a resumable stream the priming event (its
    /// last id and the reconnection delay).
    pub fn open_sse(&mut self, id: u64, retry_ms: u32, session_id: Option<&[u8]>) {
        self.mode = Mode::Sse;
        let headers: [(&str, &[u8]); 5] = [
            ("content-type", b"text/event-stream"),
            ("cache-control", b"no-cache"),
            ("x-accel-buffering", b"no"),
            ("transfer-encoding", b"chunked"),
            ("mcp-session-id", session_id.unwrap_or_default()),
        ];
        let named = if session_id.is_some() { 5 } else { 4 };
        write_head(&mut self.out, 200, None, &headers[..named]);
        if self.resumable {
            let mut event = Vec::with_capacity(64);
            let mut eid = Vec::with_capacity(24);
            Stream::event_id(id, self.seq, &mut eid);
            let eid = core::str::from_utf8(&eid).unwrap_or_default();
            sse::encode_event(&mut event, Some(eid), None, "", Some(retry_ms));
            self.chunk(&event);
        }
    }

    /// Appends one chunk of the chunked body.
    pub fn chunk(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        write_chunk(&mut self.out, data);
    }

    /// Ends the chunked body.
    pub fn end(&mut self) {
        if !self.ended {
            if self.mode == Mode::Sse {
                self.out.extend_from_slice(b"0\r\n\r\n");
            }
            self.ended = true;
        }
    }
}

/// Appends `data` as one chunk of a chunked body.
pub(super) fn write_chunk(out: &mut Vec<u8>, data: &[u8]) {
    let mut len = [0u8; 16];
    let mut n = data.len();
    let mut i = len.len();
    loop {
        i -= 1;
        len[i] = b"0123456789abcdef"[n % 16];
        n /= 16;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&len[i..]);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}
