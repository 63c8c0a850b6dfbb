//! A response a machine writes stream by stream, as a tower service's answer: the head
//! awaited, then the body whole (a JSON answer written at once) or streamed by a task of
//! its own (Server-Sent Events), for every protocol served this way.

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use sansrpc::codec::http::BodyStep;
use tokio::sync::{mpsc, Notify};

use super::{refusal, Body};
use crate::streams::{Streams, Writer, WRITE_STALL};

/// Events of one streamed answer waiting for hyper to take them; beyond it the stream
/// waits (and a client that reads nothing meets the write-stall limit).
const QUEUED: usize = 16;

/// The head of a stream's response as a protocol's machine names it.
pub trait StreamHead {
    /// The status.
    fn status(&self) -> u16;
    /// Its header fields besides the framing ones, all static.
    fn fields(&self) -> &'static [(&'static str, &'static str)];
    /// The fields whose values are the response's own (MCP's `mcp-session-id`, CORS's
    /// allowed origin), each given to `push`.
    fn extra<'a>(&'a self, push: &mut dyn FnMut(&'static str, &'a [u8])) {
        let _ = push;
    }
}

/// The response of `writer`'s stream, as the machine writes it: its head (awaited here),
/// then its body: whole when the machine wrote it all at once (a JSON answer), else
/// streamed by a task of its own. `after` runs once the response is over. A stream that
/// ends before any head (what it answered ended first, or a newer response took it over)
/// is answered `503` with its JSON-RPC error ([`refusal`]): nothing was served.
pub async fn stream_response<T, A>(streams: T, writer: Writer, after: A) -> http::Response<Body>
where
    T: Streams,
    T::Head: StreamHead,
    A: FnOnce() + Send + 'static,
{
    let mut pump = Pump {
        streams,
        writer,
        after: Some(after),
        ended: false,
    };
    let (mut head, mut data) = (None, Vec::new());
    // Dropped while it waits (the client went away): the stream is closed (`Pump::drop`).
    let (head, step) = loop {
        let step = pump.take(&mut head, &mut data);
        if let (Some((step, _)), Some(head)) = (step.clone(), head.take()) {
            break (head, step);
        }
        match step {
            Some((BodyStep::Data, _)) => {}
            Some((BodyStep::Wait, Some(notify))) => notify.notified().await,
            Some(_) | None => {
                pump.ended = true;
                return refusal(503);
            }
        }
    };
    let body = match step {
        BodyStep::End => {
            pump.ended = true;
            Body::full(data)
        }
        BodyStep::Data | BodyStep::Wait => {
            let (tx, rx) = mpsc::channel(QUEUED);
            if !data.is_empty() {
                let _ = tx.try_send(Ok(Bytes::from(data)));
            }
            tokio::spawn(pump.rest(tx));
            Body::stream(rx)
        }
        // Cut at once: what was written, then the error.
        _ => {
            pump.ended = true;
            let (tx, rx) = mpsc::channel(2);
            let _ = tx.try_send(Ok(Bytes::from(data)));
            let _ = tx.try_send(Err(io::Error::other("the response was cut")));
            Body::stream(rx)
        }
    };
    head_response(&head, body)
}

/// The response of a stream's `head`: its fields as the machine names them, the static
/// ones not copied.
fn head_response(head: &impl StreamHead, body: Body) -> http::Response<Body> {
    let mut response = http::Response::new(body);
    *response.status_mut() = http::StatusCode::from_u16(head.status())
        .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    let fields = response.headers_mut();
    for &(name, value) in head.fields() {
        fields.append(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    head.extra(&mut |name, value| {
        if let Ok(value) = HeaderValue::from_bytes(value) {
            fields.append(HeaderName::from_static(name), value);
        }
    });
    response
}

/// What moves one stream's answer from the machine into its response. Dropped before the
/// stream [`ended`](Self::ended) (the client went away, or did not read): the machine is
/// told. Either way the stream's writer is released and `after` runs.
struct Pump<T: Streams, A: FnOnce()> {
    streams: T,
    writer: Writer,
    after: Option<A>,
    /// The response is over as the machine says (ended, cut, or taken over).
    ended: bool,
}

impl<T: Streams, A: FnOnce() + Send + 'static> Pump<T, A> {
    /// What the machine has for the stream now: its head into `head` the first time, its
    /// body bytes appended to `data`, and the step, with what to wait on when it is
    /// [`BodyStep::Wait`]; `None` when a newer response took the stream over.
    fn take(
        &mut self,
        head: &mut Option<T::Head>,
        data: &mut Vec<u8>,
    ) -> Option<(BodyStep, Option<Arc<Notify>>)> {
        self.streams.poll_parts(&mut self.writer, head, data)
    }

    /// Streams the rest of the answer into `body` until it ends, the client goes away or
    /// stops reading (the write-stall limit), or a newer response takes the stream over.
    async fn rest(mut self, body: mpsc::Sender<io::Result<Bytes>>) {
        loop {
            let mut data = Vec::new();
            let Some((step, notify)) = self.take(&mut None, &mut data) else {
                self.ended = true;
                return;
            };
            if !data.is_empty() {
                let sent = tokio::time::timeout(WRITE_STALL, body.send(Ok(Bytes::from(data))));
                if !matches!(sent.await, Ok(Ok(()))) {
                    return;
                }
            }
            match step {
                BodyStep::Data => continue,
                BodyStep::Wait => {}
                BodyStep::End => {
                    self.ended = true;
                    return;
                }
                // Cut: the response ends in an error, so the client sees it cut rather
                // than complete.
                _ => {
                    self.ended = true;
                    let _ = body.try_send(Err(io::Error::other("the response was cut")));
                    return;
                }
            }
            let notify = notify.unwrap_or_default();
            tokio::select! {
                _ = notify.notified() => {}
                _ = body.closed() => return,
            }
        }
    }
}

impl<T: Streams, A: FnOnce()> Drop for Pump<T, A> {
    fn drop(&mut self) {
        if !self.ended {
            self.streams.closed(&self.writer);
        }
        self.streams.release(&self.writer);
        if let Some(after) = self.after.take() {
            after();
        }
    }
}
