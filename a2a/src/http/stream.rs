//! The HTTP answers that come later: one JSON body for a waiting `SendMessage`, or
//! Server-Sent Events, with ids, a store for resumption, keep-alives, and the bytes the
//! attached response has still to write.

use sansrpc::codec::http::{chunk_line, BodyStep};
use sansrpc::codec::sse;
use sansrpc::Instant;

use super::{Endpoint, Now, Timer};
use crate::machine::{StreamId, WaiterId};
use crate::types::SendMessageResponse;

/// How a stream answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// One JSON body, when the waiter is answered.
    Json(WaiterId),
    /// Server-Sent Events for the task machine's stream.
    Sse(StreamId),
}

/// One HTTP answer in progress (and, for SSE, a stream that outlives its response for a
/// while so that its client can resume it).
#[derive(Debug)]
pub(super) struct Stream {
    pub kind: Kind,
    /// The JSON-RPC id of the request it answers now, as JSON.
    pub id: String,
    /// The task it is about.
    pub task: String,
    /// The last event's sequence number.
    pub seq: u64,
    /// A response is attached and reading.
    pub attached: bool,
    /// Its head, not taken yet.
    pub head: Option<StreamHead>,
    /// Body bytes for the attached response, not taken yet.
    pub out: Vec<u8>,
    /// Its last event is in `out`: the response ends once `out` is taken.
    pub done: bool,
    /// The response was cut (its client did not read).
    pub cut: bool,
    pub last_write: Instant,
    /// Its response answers an HTTP/1.0 request: events go out unframed, their end is the
    /// connection's close (no chunked coding for HTTP/1.0, RFC 9112 §6.1).
    pub close_delimited: bool,
}

/// The head of a stream's HTTP response, as [`Endpoint::poll_stream_parts`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHead {
    /// The status.
    pub status: u16,
    /// Server-Sent Events (a body of unknown length); else one JSON body.
    pub sse: bool,
}

impl StreamHead {
    /// Its header fields besides the framing ones.
    pub fn fields(&self) -> &'static [(&'static str, &'static str)] {
        match self.sse {
            true => &[
                ("content-type", "text/event-stream"),
                ("cache-control", "no-cache"),
                ("x-accel-buffering", "no"),
            ],
            false => &[("content-type", "application/json")],
        }
    }
}

impl Stream {
    pub fn new(kind: Kind, id: String, task: String, now: Instant) -> Stream {
        Stream {
            kind,
            id,
            task,
            seq: 0,
            attached: true,
            head: None,
            out: Vec::new(),
            done: false,
            cut: false,
            last_write: now,
            close_delimited: false,
        }
    }
}

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}`.
pub(super) fn result_body(id: &str, result: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(result.len() + id.len() + 32);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result);
    out.push(b'}');
    out
}

impl Endpoint {
    /// A JSON answer that comes when `waiter` is answered.
    pub(super) fn open_json(&mut self, waiter: WaiterId, id: String, now: Instant) -> u64 {
        let stream = self.fresh();
        let task = self
            .tasks
            .waiter_task(waiter)
            .unwrap_or_default()
            .to_owned();
        self.streams
            .insert(stream, Stream::new(Kind::Json(waiter), id, task, now));
        self.by_waiter.insert(waiter, stream);
        stream
    }

    /// An SSE answer for the task machine's stream `of`: its head and the priming event
    /// (the stream's first id and the reconnection delay).
    pub(super) fn open_sse(&mut self, of: StreamId, id: String, now: Instant) -> u64 {
        let stream = self.fresh();
        let task = self.tasks.stream_task(of).unwrap_or_default().to_owned();
        let mut s = Stream::new(Kind::Sse(of), id, task, now);
        s.head = Some(StreamHead {
            status: 200,
            sse: true,
        });
        self.prime(&mut s, stream);
        self.streams.insert(stream, s);
        self.by_stream.insert(of, stream);
        self.sse_streams += 1;
        self.arm_store(now);
        self.keepalive(stream, now);
        stream
    }

    fn prime(&self, s: &mut Stream, stream: u64) {
        let mut eid = Vec::with_capacity(24);
        sse::event_id(stream, s.seq, &mut eid);
        let eid = std::str::from_utf8(&eid).unwrap_or_default();
        let retry = u32::try_from(self.config.retry.as_millis()).unwrap_or(u32::MAX);
        sse::encode_event(&mut s.out, Some(eid), None, "", Some(retry));
    }

    fn keepalive(&mut self, stream: u64, now: Instant) {
        let at = now + self.config.keepalive;
        self.timers.set(Timer::Stream(stream), Some(at));
    }

    /// A waiting `SendMessage` is answered.
    pub(super) fn reply(&mut self, stream: u64, response: &SendMessageResponse) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        let result = serde_json::to_vec(response).expect("answers serialize");
        s.out = result_body(&s.id, &result);
        s.head = Some(StreamHead {
            status: 200,
            sse: false,
        });
        s.done = true;
        self.wake(stream);
    }

    /// One event of the task (a `StreamResponse`, as JSON) for SSE stream `stream`: kept
    /// for resumption, and written when a response is attached; `last` ends the stream.
    pub(super) fn send_event(&mut self, stream: u64, result: &[u8], last: bool, now: Instant) {
        let max = self.config.max_stream_buffer;
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        s.seq += 1;
        self.store.append(stream, s.seq, result, now);
        if s.attached {
            encode(s, stream, s.seq, result);
            s.last_write = now;
            if s.out.len() > max {
                s.cut = true;
            }
        }
        if last {
            s.done = true;
            if !s.attached {
                // Kept for a client that resumes it until its wait ends.
                return;
            }
        }
        self.wake(stream);
    }

    /// Appends what `stream`'s response has to write to `out`, as HTTP/1.1: its head
    /// first, then its body (one JSON body, or events in chunks); see [`BodyStep`].
    pub fn poll_stream(&mut self, stream: u64, out: &mut Vec<u8>) -> BodyStep {
        let start = out.len();
        let mut head = None;
        let close_delimited = self.streams.get(&stream).is_some_and(|s| s.close_delimited);
        let step = self.take(stream, &mut head, out);
        let len = out.len() - start;
        let mut prefix = Vec::new();
        let sse = match &head {
            Some(h) => {
                let length = (!h.sse).then_some(len);
                let mut fields: Vec<(&str, &[u8])> =
                    h.fields().iter().map(|(n, v)| (*n, v.as_bytes())).collect();
                if h.sse {
                    fields.push(match close_delimited {
                        false => ("transfer-encoding", b"chunked"),
                        true => ("connection", b"close"),
                    });
                }
                sansrpc::codec::http::write_head(&mut prefix, h.status, length, &fields);
                h.sse
            }
            None => self
                .streams
                .get(&stream)
                .map_or(true, |s| matches!(s.kind, Kind::Sse(_))),
        };
        // Events answering HTTP/1.0 are not chunked: their end is the connection's close.
        let chunked = sse && !close_delimited;
        if chunked && len > 0 {
            chunk_line(&mut prefix, len);
            out.extend_from_slice(b"\r\n");
        }
        if chunked && step == BodyStep::End {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        out.splice(start..start, prefix);
        step
    }

    /// What `stream`'s response has to write, for a driver whose HTTP library frames it
    /// (hyper): the head into `head` the first time, the body's bytes appended to `body`.
    pub fn poll_stream_parts(
        &mut self,
        stream: u64,
        head: &mut Option<StreamHead>,
        body: &mut Vec<u8>,
    ) -> BodyStep {
        self.take(stream, head, body)
    }

    fn take(&mut self, stream: u64, head: &mut Option<StreamHead>, body: &mut Vec<u8>) -> BodyStep {
        let Some(s) = self.streams.get_mut(&stream) else {
            return BodyStep::Abort;
        };
        if !s.attached {
            return BodyStep::Abort;
        }
        if std::mem::take(&mut s.cut) {
            s.out.clear();
            s.head = None;
            s.attached = false;
            return BodyStep::Abort;
        }
        let wrote = s.head.is_some() || !s.out.is_empty();
        if let Some(h) = s.head.take() {
            *head = Some(h);
        }
        body.append(&mut s.out);
        if s.done {
            self.finish(stream);
            return BodyStep::End;
        }
        if wrote {
            BodyStep::Data
        } else {
            BodyStep::Wait
        }
    }

    /// Forgets a stream whose answer was written whole.
    fn finish(&mut self, stream: u64) {
        let Some(s) = self.streams.remove(&stream) else {
            return;
        };
        self.timers.set(Timer::Stream(stream), None);
        match s.kind {
            Kind::Json(waiter) => {
                self.by_waiter.remove(&waiter);
            }
            Kind::Sse(of) => {
                self.sse_streams -= 1;
                self.store.remove(stream);
                if self.by_stream.remove(&of).is_some() {
                    self.tasks.close_stream(of);
                }
            }
        }
    }

    /// The client closed `stream`'s response before its end. A waiting `SendMessage`
    /// gets no answer (its message is still handled); an SSE stream is kept for
    /// [`Config::detached`](super::Config::detached) for its client to resume.
    pub fn handle_stream_closed(&mut self, stream: u64, now: Now) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        if !s.attached {
            return;
        }
        s.attached = false;
        s.out.clear();
        s.head = None;
        match s.kind {
            Kind::Json(waiter) => {
                self.tasks.drop_waiter(waiter);
                self.finish(stream);
            }
            Kind::Sse(_) if self.config.detached.is_zero() => self.finish(stream),
            Kind::Sse(_) => {
                let at = now.instant + self.config.detached;
                self.timers.set(Timer::Stream(stream), Some(at));
            }
        }
    }

    pub(super) fn stream_timer(&mut self, stream: u64, now: Now) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        if !s.attached {
            // Nobody resumed it in time.
            self.finish(stream);
            return;
        }
        let idle = now.instant.saturating_duration_since(s.last_write) >= self.config.keepalive;
        if idle {
            sse::encode_comment(&mut s.out, "keep-alive");
            s.last_write = now.instant;
        }
        let at = s.last_write + self.config.keepalive;
        self.timers.set(Timer::Stream(stream), Some(at));
        if idle {
            self.wake(stream);
        }
    }

    /// A new response (answering request `id`) for the SSE stream named by a
    /// `Last-Event-ID` of `(stream, seq)`, when it is of `task`: the events after `seq`
    /// from the store, then the rest as they come. `None` when the stream is unknown, of
    /// another task, or its events were forgotten.
    pub(super) fn resume(
        &mut self,
        (stream, seq): (u64, u64),
        task: &str,
        id: String,
        now: Instant,
    ) -> Option<u64> {
        let s = self.streams.get_mut(&stream)?;
        if s.task != task || !matches!(s.kind, Kind::Sse(_)) || seq > s.seq {
            return None;
        }
        let mut replayed = Vec::new();
        let whole = self.store.replay(stream, seq, &mut |n, event| {
            replayed.push((n, event.to_vec()))
        });
        if !whole {
            return None;
        }
        s.id = id;
        s.attached = true;
        s.cut = false;
        s.out.clear();
        s.head = Some(StreamHead {
            status: 200,
            sse: true,
        });
        let mut s = self.streams.remove(&stream)?;
        self.prime(&mut s, stream);
        for (n, event) in &replayed {
            encode(&mut s, stream, *n, event);
        }
        s.last_write = now;
        self.streams.insert(stream, s);
        self.keepalive(stream, now);
        self.wake(stream);
        Some(stream)
    }
}

/// Appends event `seq` of `stream` (a JSON-RPC response whose result is `result`).
fn encode(s: &mut Stream, stream: u64, seq: u64, result: &[u8]) {
    let mut eid = Vec::with_capacity(24);
    sse::event_id(stream, seq, &mut eid);
    let data = result_body(&s.id, result);
    sse::encode_event(
        &mut s.out,
        std::str::from_utf8(&eid).ok(),
        None,
        std::str::from_utf8(&data).unwrap_or_default(),
        None,
    );
}
