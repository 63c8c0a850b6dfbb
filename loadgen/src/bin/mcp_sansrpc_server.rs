//! sansrpc's MCP server (`sansrpc_mcp::server`, one tool `add`: `{a, b}` -> the sum as
//! text) over Streamable HTTP (`sansrpc_mcp::tokio`), single-threaded, for the load
//! generator's MCP tables.
//!
//! `mcp-sansrpc-server json|sse`: `json` answers each call with a JSON body (the machine's
//! default when the answer is ready at once); `sse` opens an event stream for every call
//! (`json_window` zero). The first line on stdout is the bound address (`127.0.0.1:0`); it
//! serves until killed.

use std::io::Write as _;
use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
use sansrpc_mcp::streamable;
use sansrpc_tokio::Builder;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let sse = std::env::args().nth(1).as_deref() == Some("sse");
    let server =
        ServerBuilder::new("sansrpc-loadgen", "0.0.0")
            .tool(
                "add",
                "Adds two integers",
                |_: Context, Add { a, b }| async move {
                    Ok::<_, McpError>(a.wrapping_add(b).to_string())
                },
            )
            .build();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    let mut config = streamable::Config::default();
    // The memory table holds up to a few thousand idle sessions.
    config.max_sessions = 100_000;
    if sse {
        config.json_window = Duration::ZERO;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut out = std::io::stdout();
    writeln!(out, "{}", listener.local_addr()?)?;
    out.flush()?;
    sansrpc_mcp::tokio::serve(listener, builder, config, std::future::pending()).await
}
