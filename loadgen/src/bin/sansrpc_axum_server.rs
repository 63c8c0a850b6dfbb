//! sansrpc's tower services mounted in axum (`sansrpc_tokio::service`), single-threaded,
//! for the load generator's HTTP and MCP tables: the same methods as `sansrpc-server`
//! (`echo`, `add`) at any path with `RpcService`, or the same MCP tool as
//! `mcp-sansrpc-server` (`add`) at `/mcp` with `McpService`. `axum::serve` (HTTP/1.1 and
//! h2c), Nagle's algorithm off, as `mcp-rmcp-server` does.
//!
//! `sansrpc-axum-server http|json|sse`. The first line on stdout is the bound address
//! (`127.0.0.1:0`); it serves until killed.

#[path = "../axum_serve.rs"]
mod axum_serve;
#[path = "../backlog.rs"]
mod backlog;

use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc::method::Method;
use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
use sansrpc_mcp::streamable;
use sansrpc_mcp::tokio::McpService;
use sansrpc_tokio::service::RpcService;
use sansrpc_tokio::{AsyncRouter, Builder};

enum Add {}
impl Method for Add {
    const NAME: &'static str = "add";
    type Params = (i64, i64);
    type Result = i64;
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

fn rpc() -> RpcService {
    let mut router = AsyncRouter::new();
    let sync = router.sync();
    sync.raw_method("echo", |params, out| {
        out.extend_from_slice(params.map_or("null", |p| p.get()).as_bytes());
        Ok(())
    })
    .expect("echo registers");
    sync.method::<Add, _>(|(a, b)| Ok(a.wrapping_add(b)))
        .expect("add registers");
    RpcService::new(Builder::new().router(router))
}

fn mcp(sse: bool) -> McpService {
    let add = |_: Context, AddArgs { a, b }| async move {
        Ok::<_, McpError>(a.wrapping_add(b).to_string())
    };
    let server = ServerBuilder::new("sansrpc-loadgen", "0.0.0")
        .tool("add", "Adds two integers", add)
        .build();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    let mut config = streamable::Config::default();
    config.max_sessions = 100_000;
    if sse {
        config.json_window = Duration::ZERO;
    }
    McpService::new(builder, config)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "http".into());
    let app = match mode.as_str() {
        "http" => axum::Router::new().fallback_service(rpc()),
        "json" | "sse" => axum::Router::new().route_service("/mcp", mcp(mode == "sse")),
        other => {
            return Err(std::io::Error::other(format!(
                "unknown mode {other:?}: http, json or sse"
            )))
        }
    };
    axum_serve::serve(app).await
}
