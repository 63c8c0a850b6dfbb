//! MCP's Streamable HTTP as a tower service: the machine and the sessions' connections of
//! [`serve_with`](super::serve_with), fed by `http` requests.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::streamable::{self, Extensions, Step, StreamHead};
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use sansrpc::codec::http::Head;
use tokio::sync::{mpsc, Notify};

use sansrpc_tokio::service::{head_of, read_body, response, Body, ResponseFuture};
use sansrpc_tokio::Builder;

use super::serve::{
    closed, dispatch, serving, After, Dispatched, Options, State, Writer, MAX_BODY, WRITE_STALL,
};

/// Events of one SSE answer waiting for hyper to take them; beyond it the stream waits
/// (and a client that reads nothing meets the write-stall limit).
const QUEUED: usize = 16;

/// MCP's Streamable HTTP, both revisions on one route, as [`serve_with`] serves it:
/// every decision is the core's [`streamable::Server`] (statuses, sessions, JSON or SSE,
/// resumption, the `Host` and `Origin` checks, bearer tokens and the RFC 9728 metadata
/// document at its own path, the bounds of sessions, streams and queued events); this
/// service converts the requests and streams the answers.
///
/// Mount it at the machine's [`path`](streamable::Config::path) with
/// `Router::route_service` (the path is checked: `nest_service`, which strips it, does
/// not fit), and also at the metadata document's path when the config has
/// [`auth`](streamable::Config::auth). A call's handler sees the request's header fields,
/// its principal and its `http::Extensions` ([`extensions`](sansrpc_tokio::service::extensions)) through
/// [`RequestContext::http`](sansrpc_tokio::RequestContext::http).
///
/// Make it inside a tokio runtime (it starts the machine's timer task); the clones share
/// one machine, and the sessions end when the last clone is dropped.
///
/// [`serve_with`]: super::serve_with
#[derive(Clone)]
pub struct McpService(Arc<Mcp>);

struct Mcp {
    state: State,
    timers: tokio::task::JoinHandle<()>,
}

impl Drop for Mcp {
    fn drop(&mut self) {
        self.timers.abort();
        self.state.end_sessions();
    }
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService").finish_non_exhaustive()
    }
}

impl McpService {
    /// The service of `builder` (configure it with
    /// [`Profile::Mcp`](sansrpc::connection::Profile::Mcp) and give it your router) with
    /// the machine's `config`.
    pub fn new(builder: Builder, config: streamable::Config) -> Self {
        Self::with_options(builder, config, Options::default())
    }

    /// [`new`](Self::new) with [`Options`]: the bearer-token validator and the event store
    /// ([`Options::serve`] is the standalone listener's and does not apply).
    pub fn with_options(builder: Builder, config: streamable::Config, options: Options) -> Self {
        let Options {
            validator,
            event_store,
            ..
        } = options;
        let (state, timers) = serving(builder, config, validator, event_store);
        McpService(Arc::new(Mcp { state, timers }))
    }
}

impl<B> tower_service::Service<http::Request<B>> for McpService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> ResponseFuture {
        // What needs no wait is done here, so that the request's future keeps only the
        // core's head, not the `http` request it came from as well.
        let prepared = match prepare(request) {
            Ok(prepared) => prepared,
            Err(status) => return Box::pin(std::future::ready(Ok(bare(status)))),
        };
        let mcp = Arc::clone(&self.0);
        Box::pin(async move { Ok(answer(&mcp.state, prepared).await) })
    }
}

/// An answer the service gives without the machine: `status`, with the JSON-RPC error body
/// the standalone server's refusals carry ([`streamable::status_refusal`]).
fn bare(status: u16) -> http::Response<Body> {
    whole(streamable::status_refusal(status))
}

/// A whole response the machine gave.
fn whole(answer: streamable::Response) -> http::Response<Body> {
    let fields = answer.headers.iter().map(|(n, v)| (*n, v.as_bytes()));
    let fields: Vec<_> = fields.collect();
    response(answer.status, fields, Body::full(answer.body))
}

/// A request as the machine reads it: its head (boxed: the request's future keeps it
/// while the body is read), its body still to read, the `http::Extensions` a layer in
/// front put there, and the client's address where the app's server put it there (a
/// `SocketAddr`, for the per-address session limit).
struct Prepared<B> {
    head: Box<Head>,
    body: B,
    extensions: Extensions,
    peer: Option<std::net::IpAddr>,
}

/// `request` made [`Prepared`]; the status of the core's rules for a head refusing it.
fn prepare<B>(request: http::Request<B>) -> Result<Prepared<B>, u16> {
    let (mut parts, body) = request.into_parts();
    let head = head_of(&parts, true).map_err(|fault| fault.status())?;
    let peer = parts
        .extensions
        .get::<std::net::SocketAddr>()
        .map(|a| a.ip());
    let extensions = Extensions::new(std::mem::take(&mut parts.extensions));
    Ok(Prepared {
        head: Box::new(head),
        body,
        extensions,
        peer,
    })
}

/// Answers one request as the machine decides, with the standalone server's steps
/// ([`dispatch`]).
async fn answer<B: http_body::Body>(state: &State, prepared: Prepared<B>) -> http::Response<Body> {
    let Prepared {
        head,
        body,
        extensions,
        peer,
    } = prepared;
    let body = match read_body(body, MAX_BODY).await {
        Ok(body) => body,
        Err(status) => return bare(status),
    };
    match dispatch(state, *head, body, extensions, peer)
        .deliver()
        .await
    {
        Dispatched::Whole(answer) => whole(answer),
        Dispatched::Stream(writer, after) => serve_stream(state, writer, after).await,
        Dispatched::Close => bare(500),
    }
}

/// The response of `writer`'s stream, as the machine writes it: its head (awaited here),
/// then its body: whole when the machine wrote it all at once (a JSON answer), else
/// streamed by a task of its own. `after` runs once the response is over. A stream that
/// ends before any head (its session ended first, or a newer response took it over) is
/// answered `503`: nothing was served.
async fn serve_stream(state: &State, writer: Writer, after: After) -> http::Response<Body> {
    let mut pump = Pump {
        state: state.clone(),
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
            Some((Step::Data, _)) => {}
            Some((Step::Wait, Some(notify))) => notify.notified().await,
            Some(_) | None => {
                pump.ended = true;
                return bare(503);
            }
        }
    };
    let body = match step {
        Step::End => {
            pump.ended = true;
            Body::full(data)
        }
        Step::Data | Step::Wait => {
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
    stream_response(&head, body)
}

/// The response of a stream's `head`: its fields as the machine names them, the static
/// ones not copied.
fn stream_response(head: &StreamHead, body: Body) -> http::Response<Body> {
    let mut response = http::Response::new(body);
    *response.status_mut() =
        http::StatusCode::from_u16(head.status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    let fields = response.headers_mut();
    for &(name, value) in head.fields() {
        fields.append(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    if let Some(id) = head.session_id.as_deref() {
        if let Ok(id) = HeaderValue::from_bytes(id) {
            fields.append(HeaderName::from_static("mcp-session-id"), id);
        }
    }
    response
}

/// What moves one stream's answer from the machine into its response. Dropped before the
/// stream [`ended`](Self::ended) (the client went away, or did not read): the machine is
/// told, which cancels a stateless request and keeps a session stream's events for a
/// client that resumes it. Either way the stream's writer is released and `after` runs.
struct Pump {
    state: State,
    writer: Writer,
    after: Option<After>,
    /// The response is over as the machine says (ended, cut, or taken over).
    ended: bool,
}

impl Pump {
    /// What the machine has for the stream now: its head into `head` the first time, its
    /// body bytes appended to `data`, and the step, with what to wait on when it is
    /// [`Step::Wait`]; `None` when a newer response took the stream over.
    fn take(
        &mut self,
        head: &mut Option<StreamHead>,
        data: &mut Vec<u8>,
    ) -> Option<(Step, Option<Arc<Notify>>)> {
        let mut shared = self.state.lock();
        if !shared.owns(&self.writer) {
            return None;
        }
        let step = shared
            .server
            .poll_stream_parts(self.writer.stream, head, data);
        let notify = (step == Step::Wait).then(|| shared.listen(&mut self.writer));
        Some((step, notify))
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
                Step::Data => continue,
                Step::Wait => {}
                Step::End => {
                    self.ended = true;
                    return;
                }
                // Cut (the client does not read, or its session is gone): the response ends
                // in an error, so the client sees it cut rather than complete.
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

impl Drop for Pump {
    fn drop(&mut self) {
        if !self.ended {
            closed(&self.state, &self.writer);
        }
        {
            let mut shared = self.state.lock();
            if shared.owns(&self.writer) {
                shared.waiting.remove(&self.writer.stream);
            }
        }
        if let Some(after) = self.after.take() {
            after.run();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's future is allocated (boxed) per request: at most 1 KiB, the largest
    /// block glibc's allocator hands out from its per-thread cache. The head is boxed and
    /// deciding takes no wait ([`dispatch`]), or the future held the head twice and the
    /// decision's locals: 2,376 bytes.
    #[tokio::test]
    async fn a_request_future_stays_under_a_kibibyte() {
        let (state, timers) =
            super::super::serve::serving(Builder::new(), Default::default(), None, None);
        let head = Head::from_checked_parts("POST", "/mcp", [], true).unwrap();
        let body = http_body_util::Full::new(Bytes::new());
        let prepared = Prepared {
            head: Box::new(head),
            body,
            extensions: Extensions::default(),
            peer: None,
        };
        let future = answer(&state, prepared);
        let size = std::mem::size_of_val(&future);
        assert!(size <= 1024, "{size} bytes");
        timers.abort();
    }
}
