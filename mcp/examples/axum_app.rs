//! An axum app that mounts sansrpc beside its own routes, behind its own tower layer:
//!
//! - `/mcp`: MCP's Streamable HTTP (both revisions) with `everything_server`'s tools,
//!   resources and prompts, plus `request_id`, which echoes the request id the app's layer
//!   gave the request (its header, and the extension the layer inserted);
//! - `/rpc`: JSON-RPC over HTTP POST with the specification's example methods (`subtract`
//!   by position and by name, `sum`, `get_data`, the notifications `update` and
//!   `notify_hello`), as `sansrpc serve --spec-methods` answers them;
//! - `/ws`: the same methods over WebSocket (an HTTP/1.1 upgrade, or on HTTP/2 an extended
//!   CONNECT, RFC 8441, which `axum::serve` announces);
//! - `/healthz`: a plain axum handler answering `ok`.
//!
//! The app's layer gives every request an `x-request-id` header and a `RequestId`
//! extension. It listens on `127.0.0.1:$PORT` (`PORT` from the environment, default 3000)
//! and serves HTTP/1.1 and HTTP/2 without TLS (h2c, prior knowledge) on the same port:
//! `axum::serve` runs hyper-util's server, which tells them apart by the connection's
//! first bytes (hyper's default of 200 streams at once per HTTP/2 connection applies).
//!
//! ```sh
//! PORT=3000 cargo run -p sansrpc-mcp --example axum_app
//! curl -s localhost:3000/healthz
//! curl -s --http2-prior-knowledge localhost:3000/rpc -H 'content-type: application/json' \
//!     -d '{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}'
//! bash interop/mcp-conformance/run.sh server --url http://127.0.0.1:3000/mcp --scenario ping
//! ```

#[path = "../fixtures/everything.rs"]
mod everything;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::routing::get;
use axum::serve::ListenerExt;
use sansrpc::connection::{Config, Profile};
use sansrpc::method::{Method, NotificationMethod};
use sansrpc::router::Router;
use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
use sansrpc_mcp::tokio::McpService;
use sansrpc_tokio::service::{self, RpcService, WsService};
use sansrpc_tokio::{AsyncRouter, Builder};
use serde::Deserialize;
use serde_json::Value;

/// What the app's layer inserts in every request, beside its `x-request-id` header.
#[derive(Debug, Clone)]
struct RequestId(String);

/// `subtract`'s params, by position (`[42, 23]`) or by name.
#[derive(Deserialize)]
struct Difference {
    minuend: i64,
    subtrahend: i64,
}

enum Subtract {}
impl Method for Subtract {
    const NAME: &'static str = "subtract";
    type Params = Difference;
    type Result = i64;
}

enum Sum {}
impl Method for Sum {
    const NAME: &'static str = "sum";
    type Params = Vec<i64>;
    type Result = i64;
}

enum GetData {}
impl Method for GetData {
    const NAME: &'static str = "get_data";
    type Params = ();
    type Result = (String, i64);
}

enum Update {}
impl NotificationMethod for Update {
    const NAME: &'static str = "update";
    type Params = Value;
}

enum NotifyHello {}
impl NotificationMethod for NotifyHello {
    const NAME: &'static str = "notify_hello";
    type Params = Value;
}

/// The JSON-RPC 2.0 specification's example methods.
fn spec_methods() -> AsyncRouter {
    let mut router = Router::new();
    let registered = [
        router.method::<Subtract, _>(|p| Ok(p.minuend - p.subtrahend)),
        router.method::<Sum, _>(|numbers| Ok(numbers.iter().sum())),
        router.method::<GetData, _>(|()| Ok(("hello".to_owned(), 5))),
        router.notification::<Update, _>(|_| {}),
        router.notification::<NotifyHello, _>(|_| {}),
    ];
    for result in registered {
        result.expect("distinct method names");
    }
    AsyncRouter::from_router(router)
}

/// The request id the app's layer gave this call's HTTP request: its header and its
/// extension, as the tool handler sees them.
async fn request_id(cx: Context, (): ()) -> Result<String, McpError> {
    let http = cx
        .http()
        .ok_or_else(|| McpError::tool("not called over HTTP"))?;
    let header = http.header("x-request-id").unwrap_or("none").to_owned();
    let extension = service::extensions(&http)
        .and_then(|e| e.get::<RequestId>())
        .map_or("none".to_owned(), |id| id.0.clone());
    Ok(format!("header {header}, extension {extension}"))
}

/// The whole app: the routes and the app's own layer.
fn app() -> axum::Router {
    let server = ServerBuilder::new("sansrpc-axum-app", "0.1.0");
    let server = everything::everything(server)
        .tool(
            "request_id",
            "Echoes the request id the app's layer gave the request",
            request_id,
        )
        .build();
    let mcp = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    let mcp = McpService::new(mcp, server.streamable_config());
    let rpc = RpcService::new(Builder::new().router(spec_methods()));
    let ws = WsService::new(Builder::new().router(spec_methods()));
    let next = Arc::new(AtomicU64::new(1));
    let tag = tower::util::MapRequestLayer::new(move |mut request: axum::extract::Request| {
        let id = format!("req-{}", next.fetch_add(1, Ordering::Relaxed));
        if let Ok(value) = id.parse() {
            request.headers_mut().insert("x-request-id", value);
        }
        request.extensions_mut().insert(RequestId(id));
        request
    });
    axum::Router::new()
        .route_service("/mcp", mcp)
        .route_service("/rpc", rpc)
        .route_service("/ws", ws)
        .route("/healthz", get(|| async { "ok" }))
        .layer(tag)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::var("PORT").map_or(Ok(3000), |p| p.parse())?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    // Nagle's algorithm off: HTTP/2 writes a response's head and body as frames of their
    // own, and a small one held back for the peer's delayed ACK stalls it for ~40 ms.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app()).await?;
    Ok(())
}
