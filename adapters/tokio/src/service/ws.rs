//! JSON-RPC over WebSocket as a tower service, through hyper's upgrade.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use sansrpc::codec::http::Head;
use sansrpc::codec::websocket::handshake::{self, Refusal};

use super::{Body, ResponseFuture};
use crate::ws::Upgrade;
use crate::{Builder, ServeOptions};

/// JSON-RPC over WebSocket at a route, over HTTP/1.1 and HTTP/2.
///
/// - HTTP/1.1: the opening handshake (`GET` with `Upgrade: websocket`) is judged and
///   answered (`101`) by the core's rules
///   ([`handshake::judge`](sansrpc::codec::websocket::handshake::judge)), as
///   [`ws::serve`](crate::ws::serve) does: `400` for a request that is no handshake,
///   `426` for a version other than 13, `403` for an `Origin` not allowed.
/// - HTTP/2 (RFC 8441): an extended `CONNECT` whose `:protocol` is `websocket` (hyper's
///   [`hyper::ext::Protocol`] extension) with `Sec-WebSocket-Version: 13` is answered `200`
///   (no `Sec-WebSocket-Key`/`Accept` under HTTP/2); the WebSocket is that one stream. The
///   server must announce `SETTINGS_ENABLE_CONNECT_PROTOCOL`: `axum::serve` does,
///   a hyper server does with `http2().enable_connect_protocol()` on its builder.
///
/// Either way the `Origin` is checked by [`ServeOptions::allowed_origins`] and
/// [`ServeOptions::allow_missing_origin`] (`403` otherwise); then hyper's upgrade hands over the connection (or the stream),
/// and the same transport as the standalone server's (the core's WebSocket codec, the
/// keep-alive, the message limit of the builder's config, binary frames refused with 1003
/// or taken as text as [`ServeOptions::accept_binary`] says) runs it on a task of its own
/// with `builder`'s router.
#[derive(Clone)]
pub struct WsService(Arc<Ws>);

struct Ws {
    builder: Builder,
    /// The standalone server's rules: the `Origin` check, and the transport (message
    /// bound, keep-alive, [`ServeOptions::accept_binary`]).
    upgrade: Upgrade,
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

    /// The service of `builder` with `options`' `Origin`s, keep-alive, binary frame rule
    /// ([`ServeOptions::accept_binary`]) and network defaults.
    pub fn with_options(builder: Builder, options: &ServeOptions) -> Self {
        let builder = options.builder(builder);
        WsService(Arc::new(Ws {
            upgrade: Upgrade::new(options, &builder),
            builder,
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
        let ws = Arc::clone(&self.0);
        let answer = match opening(&ws.upgrade, &request) {
            Ok(answer) => {
                let upgrade = hyper::upgrade::on(&mut request);
                tokio::spawn(run(ws, upgrade));
                answer
            }
            Err(refusal) => refused(refusal),
        };
        Box::pin(std::future::ready(Ok(answer)))
    }
}

/// The answer that opens the WebSocket `request` asks for, or why it does not: under HTTP/2
/// an extended `CONNECT` (its `Origin` judged as the core's handshake judges it), else the
/// core's HTTP/1.1 opening handshake ([`handshake::judge`]).
fn opening<B>(
    upgrade: &Upgrade,
    request: &http::Request<B>,
) -> Result<http::Response<Body>, Refusal> {
    let rule = upgrade.origin_rule();
    if request.version() >= http::Version::HTTP_2 {
        let origin = request.headers().get("origin").map(|o| o.to_str());
        match origin {
            None if rule.allow_missing => {}
            Some(Ok(origin)) if rule.allows(Some(origin)) => {}
            _ => return Err(Refusal::Origin),
        }
        let protocol = request.extensions().get::<hyper::ext::Protocol>();
        let version = request.headers().get("sec-websocket-version");
        if request.method() != http::Method::CONNECT
            || !protocol.is_some_and(|p| p.as_str().eq_ignore_ascii_case("websocket"))
        {
            return Err(Refusal::BadRequest("no extended CONNECT for websocket"));
        }
        if !version.is_some_and(|v| v.as_bytes() == handshake::VERSION.as_bytes()) {
            return Err(Refusal::Version);
        }
        return Ok(super::status(200));
    }
    let target = request.uri().path_and_query().map_or("/", |p| p.as_str());
    let fields = request.headers().iter();
    let fields = fields.map(|(name, value)| (name.as_str(), value.as_bytes()));
    let method = request.method().as_str();
    let mut head = Head::from_checked_parts(method, target, fields, true)
        .map_err(|_| Refusal::BadRequest("a malformed head"))?;
    head.http10 = request.version() < http::Version::HTTP_11;
    let opening = handshake::judge(&head, &rule)?;
    let fields: [(&str, &[u8]); 3] = [
        ("upgrade", b"websocket"),
        ("connection", b"Upgrade"),
        ("sec-websocket-accept", opening.accept().as_bytes()),
    ];
    Ok(super::response(101, fields, Body::empty()))
}

/// The answer to a refused opening handshake: its status, its reason as text.
fn refused(refusal: Refusal) -> http::Response<Body> {
    let reason = refusal.reason();
    let mut fields: Vec<(&str, &[u8])> = vec![("content-type", b"text/plain; charset=utf-8")];
    if refusal == Refusal::Version {
        fields.push(("sec-websocket-version", handshake::VERSION.as_bytes()));
    }
    super::response(
        refusal.status(),
        fields,
        Body::full(reason.as_bytes().to_vec()),
    )
}

/// Runs the WebSocket on the connection (HTTP/1.1) or stream (HTTP/2) `upgrade` hands
/// over, until it ends.
async fn run(ws: Arc<Ws>, upgrade: hyper::upgrade::OnUpgrade) {
    let Ok(upgraded) = upgrade.await else {
        return;
    };
    let stream = hyper_util::rt::TokioIo::new(upgraded);
    let transport = ws.upgrade.transport(stream, Vec::new());
    let connection = crate::spawn(ws.builder.clone(), transport);
    let _ = connection.driver.await;
}
