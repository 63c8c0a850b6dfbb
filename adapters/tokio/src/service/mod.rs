//! sansrpc as [tower](https://docs.rs/tower) services an axum or hyper app mounts at a
//! route, beside its own handlers and behind its own layers, on HTTP/1.1 and HTTP/2 alike:
//!
//! - [`RpcService`]: JSON-RPC over HTTP POST, the rules of [`http::serve`](crate::http::serve)
//!   (the 200/204/405/413/415 table, batches, notifications, limits, CORS);
//! - `sansrpc_mcp::tokio::McpService` (the `sansrpc-mcp` crate, feature `tower`): MCP's
//!   Streamable HTTP, built on the pieces here ([`Body`], [`head_of`], [`read_body`]): the
//!   machine `sansrpc_mcp::tokio::serve` runs (both revisions, JSON or SSE answers, the GET stream, DELETE, `Last-Event-ID`,
//!   Host and Origin checks, bearer tokens and the RFC 9728 metadata document, the
//!   machine's bounds). A call's handler sees the request's header fields, its principal
//!   and its `http::Extensions` (what a layer in front put there: [`extensions`]) through
//!   [`RequestContext::http`](crate::RequestContext::http);
//! - [`WsService`] (feature `ws`): JSON-RPC over WebSocket, opened by an HTTP/1.1 upgrade
//!   or an HTTP/2 extended CONNECT (RFC 8441), taken over with hyper's upgrade mechanism
//!   and run by the same transport as [`ws::serve`](crate::ws::serve).
//!
//! Each is generic over the request body (any [`http_body::Body`]) and answers with
//! [`Body`], a body that streams (an SSE answer is sent event by event). The services only
//! convert: a request head becomes the core's [`Head`] through the core's own decoder (so
//! every header rule is the one the standalone servers apply), and what the machines
//! write becomes the `http` response; every protocol decision is a machine's. What the standalone servers add around a socket (the connection cap, the head
//! and body time limits, TLS) is the app's here: hyper's and tower's settings (see
//! `docs/transports.md`).
//!
//! Under HTTP/2 every request is one stream: an SSE answer is one stream, a WebSocket is
//! one stream, many MCP sessions and WebSockets share one connection, and hyper bounds
//! the streams of a connection (`http2().max_concurrent_streams`, 200 by default: a
//! client opening more is refused them by HTTP/2 itself, `REFUSED_STREAM`, then `GOAWAY`
//! when the refusals pile up, not served into a memory curve). WebSocket over HTTP/2 needs
//! the server to announce extended CONNECT: `axum::serve` does; a hyper server does with
//! `http2().enable_connect_protocol()` on its builder.
//!
//! ```no_run
//! use sansrpc_tokio::service::RpcService;
//! use sansrpc_tokio::{AsyncRouter, Builder};
//!
//! # async fn run() -> std::io::Result<()> {
//! let app = axum::Router::new()
//!     .route_service("/rpc", RpcService::new(Builder::new().router(AsyncRouter::new())))
//!     .route("/healthz", axum::routing::get(|| async { "ok" }));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app).await
//! # }
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http_body::Frame;
use sansrpc::codec::http::{Head, HttpFault};
use tokio::sync::mpsc;

mod rpc;
mod stream;
#[cfg(feature = "ws")]
mod ws;

pub use rpc::RpcService;
pub use stream::{stream_response, StreamHead};
#[cfg(feature = "ws")]
pub use ws::WsService;

/// The future of every service here: it never fails (every refusal is an HTTP answer).
pub type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send + 'static>>;

/// The `http::Extensions` of the request a call came in (what the layers in front of an
/// `sansrpc_mcp::tokio::McpService` put there: an auth layer's user, a request id), from its
/// [`HttpRequest`](sansrpc::codec::http::HttpRequest); `None` for a request no tower
/// service served.
///
/// ```no_run
/// # fn handler(cx: &sansrpc_tokio::RequestContext) {
/// #[derive(Clone)]
/// struct User(String);
/// let user = cx.http().and_then(|r| sansrpc_tokio::service::extensions(&r)?.get::<User>().cloned());
/// # }
/// ```
pub fn extensions(request: &sansrpc::codec::http::HttpRequest) -> Option<&http::Extensions> {
    request.extensions.get::<http::Extensions>()
}

/// The body of every answer of these services: empty, whole, or streamed (an SSE answer,
/// each event as it comes).
#[derive(Debug)]
pub struct Body(Kind);

#[derive(Debug)]
enum Kind {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<io::Result<Bytes>>),
}

impl Body {
    /// An empty body.
    pub fn empty() -> Self {
        Body(Kind::Full(None))
    }

    /// `bytes`, whole (empty when there are none).
    pub fn full(bytes: Vec<u8>) -> Self {
        if bytes.is_empty() {
            return Body::empty();
        }
        Body(Kind::Full(Some(Bytes::from(bytes))))
    }

    /// A body sent piece by piece as `pieces` yields them (an SSE answer, each event as it
    /// comes), ended when the sender is dropped; an error ends it abruptly.
    pub fn stream(pieces: mpsc::Receiver<io::Result<Bytes>>) -> Self {
        Body(Kind::Stream(pieces))
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match &mut self.get_mut().0 {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Stream(rx) => rx
                .poll_recv(cx)
                .map(|item| item.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.0, Kind::Full(None))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match &self.0 {
            Kind::Full(bytes) => {
                http_body::SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Kind::Stream(_) => http_body::SizeHint::default(),
        }
    }
}

/// An answer: `status`, `headers`, `body`.
pub fn response<'a>(
    status: u16,
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    body: Body,
) -> http::Response<Body> {
    let mut response = http::Response::new(body);
    *response.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    let fields = response.headers_mut();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(value),
        ) {
            fields.append(name, value);
        }
    }
    response
}

/// A bare `status`.
pub fn status(status: u16) -> http::Response<Body> {
    response(status, [], Body::empty())
}

/// An answer a machine wrote whole ([`WholeResponse`](sansrpc::codec::http::WholeResponse)).
pub fn whole(answer: sansrpc::codec::http::WholeResponse) -> http::Response<Body> {
    let fields = answer.headers.iter().map(|(n, v)| (*n, v.as_bytes()));
    let fields: Vec<_> = fields.collect();
    response(answer.status, fields, Body::full(answer.body))
}

/// The answer with `status` a JSON-RPC server's service gives without its machine, with
/// the JSON-RPC error body naming it
/// ([`WholeResponse::refusal`](sansrpc::codec::http::WholeResponse::refusal)).
pub fn refusal(status: u16) -> http::Response<Body> {
    whole(sansrpc::codec::http::WholeResponse::refusal(status))
}

/// The request head as the core reads it: `parts` judged by the core's rules for a head
/// ([`Head::from_checked_parts`]: the `Host` from the URI's authority when there is no such field,
/// as in HTTP/2; the framing fields left out: hyper has read the body), keeping the
/// target and fields when `keep`.
pub fn head_of(parts: &http::request::Parts, keep: bool) -> Result<Head, HttpFault> {
    use http::header::{CONNECTION, CONTENT_LENGTH, EXPECT, HOST, TRANSFER_ENCODING};
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    // The authority asked for first: an HTTP/1.1 request's target has none (its origin
    // form), and the field map is not searched for it.
    let host = match parts.uri.authority() {
        Some(a) if !parts.headers.contains_key(HOST) => Some(("host", a.as_str().as_bytes())),
        _ => None,
    };
    // Compared one by one, not as `[..].contains`: that array of names was made and dropped
    // for every field.
    let framing = |name: &http::HeaderName| {
        name == CONTENT_LENGTH || name == TRANSFER_ENCODING || name == CONNECTION || name == EXPECT
    };
    let fields = parts
        .headers
        .iter()
        .filter(|(name, _)| !framing(name))
        .map(|(name, value)| (name.as_str(), value.as_bytes()));
    // `http`'s types checked the names and values as they were made.
    Head::from_checked_parts(
        parts.method.as_str(),
        target,
        host.into_iter().chain(fields),
        keep,
    )
}

/// Reads `body` whole, up to `max` bytes ([`host::read_whole`](crate::host::read_whole)):
/// else the status to answer (`413` past it, `400` when the body failed).
pub async fn read_body<B>(body: B, max: usize) -> Result<Vec<u8>, u16>
where
    B: http_body::Body,
{
    use crate::host::BodyError;
    crate::host::read_whole(body, max)
        .await
        .map_err(|e| match e {
            BodyError::Over(_) => 413,
            BodyError::Failed(_) => 400,
        })
}
