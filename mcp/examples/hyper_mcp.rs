//! An MCP server (one `echo` tool) mounted in a bare hyper server, no axum: hyper-util's
//! server, HTTP/1.1 and h2c on one port, at most 100 HTTP/2 streams per connection. `/mcp`
//! is MCP's Streamable HTTP; `/ws` is the same server's methods as JSON-RPC over
//! WebSocket, opened by an HTTP/1.1 upgrade or, on HTTP/2, by an extended CONNECT (RFC
//! 8441, which the server announces with `enable_connect_protocol`).
//!
//! It listens on `127.0.0.1:$PORT` (`PORT` from the environment, default 3001):
//! `PORT=3001 cargo run -p sansrpc-mcp --example hyper_mcp`

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
use sansrpc_mcp::tokio::McpService;
use sansrpc_tokio::service::WsService;
use sansrpc_tokio::Builder;
use tower::Service;

/// `echo`'s arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port = std::env::var("PORT").map_or(Ok(3001), |p| p.parse::<u16>());
    let port = port.map_err(std::io::Error::other)?;
    let echo = |_: Context, echo: Echo| async move { Ok::<_, McpError>(echo.text) };
    let server = ServerBuilder::new("hyper-mcp", "0.1.0")
        .tool("echo", "Echoes its text", echo)
        .build();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    let ws = WsService::new(builder.clone());
    let mcp = McpService::new(builder, server.streamable_config());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let (mcp, ws) = (mcp.clone(), ws.clone());
        // `/ws` to the WebSocket service, every other path to MCP's (which checks it).
        let service = service_fn(move |request: hyper::Request<Incoming>| {
            if request.uri().path() == "/ws" {
                ws.clone().call(request)
            } else {
                mcp.clone().call(request)
            }
        });
        tokio::spawn(async move {
            let mut server = auto::Builder::new(TokioExecutor::new());
            server
                .http2()
                .max_concurrent_streams(100)
                .enable_connect_protocol();
            let io = TokioIo::new(stream);
            let _ = server.serve_connection_with_upgrades(io, service).await;
        });
    }
}
