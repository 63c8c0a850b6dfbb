//! MCP's Streamable HTTP as a tower service: the machine and the sessions' connections of
//! [`mcp::serve_with`](crate::mcp::serve_with), fed by `http` requests.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use sansrpc::codec::http::{Parts, Unframer};
use sansrpc::streamable::{self, Extensions, Step};
use tokio::sync::{mpsc, oneshot};

use super::{read_body, response, Body, ResponseFuture};
use crate::mcp::{
    closed, dispatch, serving, Dispatched, Options, State, Writer, MAX_BODY, WRITE_STALL,
};
use crate::Builder;

/// Events of one SSE answer waiting for hyper to take them; beyond it the stream waits
/// (and a client that reads nothing meets the write-stall limit).
const QUEUED: usize = 16;

/// MCP's Streamable HTTP, both revisions on one route, as [`mcp::serve_with`] serves it:
/// every decision is the core's [`streamable::Server`] (statuses, sessions, JSON or SSE,
/// resumption, the `Host` and `Origin` checks, bearer tokens and the RFC 9728 metadata
/// document at its own path, the bounds of sessions, streams and queued events); this
/// service converts the requests and streams the answers.
///
/// Mount it at the machine's [`path`](streamable::Config::path) with
/// `Router::route_service` (the path is checked: `nest_service`, which strips it, does
/// not fit), and also at the metadata document's path when the config has
/// [`auth`](streamable::Config::auth). A call's handler sees the request's header fields,
/// its principal and its `http::Extensions` ([`extensions`](super::extensions)) through
/// [`RequestContext::http`](crate::RequestContext::http).
///
/// Make it inside a tokio runtime (it starts the machine's timer task); the clones share
/// one machine, and the sessions end when the last clone is dropped.
///
/// [`mcp::serve_with`]: crate::mcp::serve_with
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
        let mcp = Arc::clone(&self.0);
        Box::pin(async move { Ok(answer(&mcp.state, request).await) })
    }
}

/// A whole response the machine gave.
fn whole(answer: streamable::Response) -> http::Response<Body> {
    let fields = answer.headers.iter().map(|(n, v)| (*n, v.as_bytes()));
    let fields: Vec<_> = fields.collect();
    response(answer.status, fields, super::Body::full(answer.body))
}

/// Answers one request as the machine decides, with the standalone server's steps
/// ([`dispatch`]).
async fn answer<B: http_body::Body>(
    state: &State,
    request: http::Request<B>,
) -> http::Response<Body> {
    let (mut parts, body) = request.into_parts();
    let head = match super::head_of(&parts, true) {
        Ok(head) => head,
        Err(fault) => return super::status(fault.status()),
    };
    let body = match read_body(body, MAX_BODY).await {
        Ok(body) => body,
        Err(status) => return super::status(status),
    };
    // The client's address, where the app's server put it in the request's extensions
    // (a `SocketAddr`), for the per-address session limit.
    let peer = parts
        .extensions
        .get::<std::net::SocketAddr>()
        .map(|a| a.ip());
    let extensions = Extensions::new(std::mem::take(&mut parts.extensions));
    match dispatch(state, head, body, extensions, peer).await {
        Dispatched::Whole(answer) => whole(answer),
        Dispatched::Stream(writer, after) => serve_stream(state, writer, after).await,
        Dispatched::Close => super::status(500),
    }
}

/// The response of `writer`'s stream: its head once the machine has written it, its body
/// streamed by a task of its own (which runs `after` once the response is over). A stream
/// that ends before any head (its session ended first, or a newer response took it over)
/// is answered `503`: nothing was served.
async fn serve_stream(
    state: &State,
    writer: Writer,
    after: impl FnOnce() + Send + 'static,
) -> http::Response<Body> {
    let (head_tx, head_rx) = oneshot::channel();
    let (body_tx, body_rx) = mpsc::channel(QUEUED);
    tokio::spawn(pump(state.clone(), writer, head_tx, body_tx, after));
    match head_rx.await {
        Ok(parts) => {
            let fields = parts
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_slice()));
            let fields: Vec<_> = fields.collect();
            response(parts.status, fields, Body(super::Kind::Stream(body_rx)))
        }
        Err(_) => super::status(503),
    }
}

/// Moves what the machine writes on `writer`'s stream into the response, until it ends
/// (or a newer response takes the stream over, or the client goes away: then the machine
/// is told, which cancels a stateless request and keeps a session stream's events for a
/// client that resumes it).
async fn pump(
    state: State,
    writer: Writer,
    head: oneshot::Sender<Parts>,
    body: mpsc::Sender<io::Result<Bytes>>,
    after: impl FnOnce(),
) {
    let mut head = Some(head);
    let mut unframer = Unframer::new();
    let mut out = Vec::new();
    loop {
        out.clear();
        let step = {
            let mut shared = state.lock();
            if !shared.owns(&writer) {
                break;
            }
            shared.server.poll_stream(writer.stream, &mut out)
        };
        if !out.is_empty() {
            let mut data = Vec::new();
            match unframer.push(&out, &mut data) {
                Ok(Some(parts)) => {
                    if head.take().is_some_and(|h| h.send(parts).is_err()) {
                        closed(&state, &writer);
                        break;
                    }
                }
                Ok(None) => {}
                Err(fault) => {
                    let _ = body.try_send(Err(io::Error::other(fault.to_string())));
                    closed(&state, &writer);
                    break;
                }
            }
            if !data.is_empty() {
                let sent = tokio::time::timeout(WRITE_STALL, body.send(Ok(Bytes::from(data))));
                if !matches!(sent.await, Ok(Ok(()))) {
                    closed(&state, &writer);
                    break;
                }
            }
        }
        match step {
            Step::Data => continue,
            Step::End => break,
            Step::Wait => {}
            // Cut (the client does not read, or its session is gone): the response ends in
            // an error, so the client sees it cut rather than complete.
            _ => {
                let _ = body.try_send(Err(io::Error::other("the response was cut")));
                break;
            }
        }
        let gone = async {
            match head.as_mut() {
                Some(head) => head.closed().await,
                None => body.closed().await,
            }
        };
        tokio::select! {
            _ = writer.notify.notified() => {}
            _ = gone => {
                closed(&state, &writer);
                break;
            }
        }
    }
    {
        let mut shared = state.lock();
        if shared.owns(&writer) {
            shared.waiting.remove(&writer.stream);
        }
    }
    after();
}
