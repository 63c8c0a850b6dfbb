//! An MCP server (one `echo` tool) mounted in a bare hyper server, no axum: hyper-util's
//! server, HTTP/1.1 and h2c on one port, at most 100 HTTP/2 streams per connection.
//!
//! It listens on `127.0.0.1:$PORT` (`PORT` from the environment, default 3001):
//! `PORT=3001 cargo run -p sansrpc-tokio --example hyper_mcp`

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
use sansrpc_tokio::service::McpService;
use sansrpc_tokio::Builder;

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
    let mcp = McpService::new(builder, server.streamable_config());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let service = TowerToHyperService::new(mcp.clone());
        tokio::spawn(async move {
            let mut server = auto::Builder::new(TokioExecutor::new());
            server.http2().max_concurrent_streams(100);
            let _ = server.serve_connection(TokioIo::new(stream), service).await;
        });
    }
}
