//! JSON-RPC over WebSocket as a tower service, through hyper's upgrade.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use sansrpc::codec::websocket::Role;
use sansrpc::Limits;

use super::{Body, ResponseFuture};
use crate::ws::{origin_allowed, KeepAlive, WebSocket};
use crate::{Builder, Origins, ServeOptions};

/// JSON-RPC over WebSocket at a route: the opening handshake is checked and answered by
/// tungstenite's rules (as [`ws::serve`](crate::ws::serve) does), the `Origin` by
/// [`ServeOptions::allowed_origins`] and [`ServeOptions::allow_missing_origin`] (`403`
/// otherwise); then hyper's upgrade hands over the connection, and the same transport as
/// the standalone server's (the core's WebSocket codec, the keep-alive, the message limit
/// of the builder's config) runs it on a task of its own with `builder`'s router. An
/// upgrade needs HTTP/1.1 (a request that is no handshake gets `400`).
#[derive(Clone)]
pub struct WsService(Arc<Ws>);

struct Ws {
    builder: Builder,
    limits: Limits,
    origins: Origins,
    allow_missing: bool,
    keepalive: Option<KeepAlive>,
}

impl std::fmt::Debug for WsService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsService").finish_non_exhaustive()
    }
}

impl WsService {
    /// The service of `builder` (give it a router) with the default [`ServeOptions`].
    pub fn new(builder: Builder) -> Self {
        Self::with_options(builder, &ServeOptions::default())
    }

    /// The service of `builder` with `options`' `Origin`s, keep-alive and network defaults.
    pub fn with_options(builder: Builder, options: &ServeOptions) -> Self {
        let builder = options.builder(builder);
        WsService(Arc::new(Ws {
            limits: builder.connection_config().limits,
            builder,
            origins: options.allowed_origins.clone(),
            allow_missing: options.allow_missing_origin,
            keepalive: options.keepalive,
        }))
    }
}

impl<B> tower_service::Service<http::Request<B>> for WsService
where
    B: http_body::Body + Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<B>) -> ResponseFuture {
        use tokio_tungstenite::tungstenite::handshake::server::create_response_with_body;
        let ws = Arc::clone(&self.0);
        let answer = if !origin_allowed(&ws.origins, ws.allow_missing, &request) {
            super::status(403)
        } else {
            match create_response_with_body(&request, Body::empty) {
                Err(_) => super::status(400),
                Ok(answer) => {
                    let upgrade = hyper::upgrade::on(&mut request);
                    tokio::spawn(async move {
                        let Ok(upgraded) = upgrade.await else {
                            return;
                        };
                        let stream = hyper_util::rt::TokioIo::new(upgraded);
                        let transport = WebSocket::new(
                            stream,
                            Role::Server,
                            Vec::new(),
                            &ws.limits,
                            ws.keepalive,
                        );
                        let connection = crate::spawn(ws.builder.clone(), transport);
                        let _ = connection.driver.await;
                    });
                    answer
                }
            }
        };
        Box::pin(std::future::ready(Ok(answer)))
    }
}
