//! The A2A endpoint as a tower service: the machine and the agent's runs of
//! [`serve_with`](super::serve_with), fed by `http` requests.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use sansrpc_tokio::service::{
    head_of, read_body, refusal, stream_response, whole, Body, ResponseFuture, StreamHead,
};

use super::serve::{serving, Background, Dispatched, Options, State};
use crate::agent::Agent;
use crate::http;
use crate::types::AgentCard;

/// A2A's JSON-RPC binding, as [`serve_with`](super::serve_with) serves it: every decision
/// is the sans-I/O [`http::Endpoint`]'s (the card, the methods, JSON or SSE answers,
/// `Last-Event-ID`, the bounds); this service converts the requests and streams the
/// answers.
///
/// Mount it at the endpoint's [`path`](http::Config::path) and at the card's
/// [`card_path`](http::Config::card_path) with `Router::route_service` (the paths are
/// checked: `nest_service`, which strips them, does not fit), beside an `McpService` and
/// the app's own routes.
///
/// Make it inside a tokio runtime (it starts the machine's timer task and the push
/// sender); the clones share one machine, stopped when the last clone is dropped.
#[derive(Clone)]
pub struct A2aService(Arc<Inner>);

struct Inner {
    state: State,
    background: Background,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.background.abort();
        self.state.stop();
    }
}

impl std::fmt::Debug for A2aService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aService").finish_non_exhaustive()
    }
}

impl A2aService {
    /// The service of `agent`, described by `card`, with the machine's `config`.
    pub fn new(agent: impl Agent, card: AgentCard, config: http::Config) -> Self {
        Self::with_options(agent, card, config, Options::default())
    }

    /// [`new`](Self::new) with [`Options`] (`Options::server.serve` is the standalone
    /// listener's and does not apply).
    pub fn with_options(
        agent: impl Agent,
        card: AgentCard,
        config: http::Config,
        options: Options,
    ) -> Self {
        let (state, background) = serving(Arc::new(agent), card, config, options);
        A2aService(Arc::new(Inner { state, background }))
    }
}

impl<B> tower_service::Service<::http::Request<B>> for A2aService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
{
    type Response = ::http::Response<Body>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: ::http::Request<B>) -> ResponseFuture {
        let (parts, body) = request.into_parts();
        let head = match head_of(&parts, true) {
            Ok(head) => head,
            Err(fault) => return Box::pin(std::future::ready(Ok(refusal(fault.status())))),
        };
        let inner = Arc::clone(&self.0);
        Box::pin(async move {
            let max = inner.state.lock().server.config().max_body;
            let body = match read_body(body, max).await {
                Ok(body) => body,
                Err(status) => return Ok(refusal(status)),
            };
            Ok(match inner.state.dispatch(&head, &body) {
                Dispatched::Whole(answer) => whole(answer),
                Dispatched::Stream(writer) => {
                    stream_response(inner.state.clone(), writer, || {}).await
                }
            })
        })
    }
}

/// A stream's head as hyper writes it.
impl StreamHead for http::StreamHead {
    fn status(&self) -> u16 {
        self.status
    }

    fn fields(&self) -> &'static [(&'static str, &'static str)] {
        http::StreamHead::fields(self)
    }
}
