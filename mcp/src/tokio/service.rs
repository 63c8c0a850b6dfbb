//! MCP's Streamable HTTP as a tower service: the machine and the sessions' connections of
//! [`serve_with`](super::serve_with), fed by `http` requests.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::streamable::{self, Extensions};
use sansrpc::codec::http::Head;

use sansrpc_tokio::service::{
    head_of, read_body, refusal as bare, stream_response, whole, Body, ResponseFuture, StreamHead,
};
use sansrpc_tokio::Builder;

use super::serve::{dispatch, serving, Dispatched, Options, State, MAX_BODY};

/// MCP's Streamable HTTP, both revisions on one route, as [`serve_with`] serves it:
/// every decision is the sans-I/O [`streamable::Endpoint`] (statuses, sessions, JSON or SSE,
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
        Dispatched::Stream(writer, after) => {
            stream_response(state.clone(), writer, move || after.run()).await
        }
        Dispatched::Close => bare(500),
    }
}

/// A stream's head as hyper writes it: the machine's fields, the session it names, CORS's.
impl StreamHead for streamable::StreamHead {
    fn status(&self) -> u16 {
        self.status
    }

    fn fields(&self) -> &'static [(&'static str, &'static str)] {
        streamable::StreamHead::fields(self)
    }

    fn extra<'a>(&'a self, push: &mut dyn FnMut(&'static str, &'a [u8])) {
        self.extra_fields(push);
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
        let body = http_body_util::Full::new(bytes::Bytes::new());
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
