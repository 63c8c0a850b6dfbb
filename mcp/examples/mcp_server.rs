//! A small MCP server on stdio (newline framing, the MCP profile), written with
//! `sansrpc_mcp::server`: two tools. `add` adds two integers. `slow` runs up to 30 s,
//! sends `notifications/progress` every 100 ms when the request carries a progress token,
//! and when the client cancels (`notifications/cancelled`) writes `slow: cancelled` to
//! stderr and stops; the MCP profile sends no response for a cancelled request.
//!
//! Driven by the official MCP Python and TypeScript SDKs in
//! `mcp/tests/mcp_sdks.rs`. Run: `cargo run -p sansrpc-mcp --example mcp_server`.

use std::time::Duration;

use futures::future::{select, Either};
use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
use sansrpc_tokio::{sansrpc, Builder};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Slow {
    /// How long to run, at most 30 s (the default).
    seconds: Option<f64>,
}

async fn slow(cx: Context, Slow { seconds }: Slow) -> Result<String, McpError> {
    let seconds = seconds.unwrap_or(30.0).clamp(0.0, 30.0);
    let steps = (seconds * 10.0) as u64;
    for step in 1..=steps {
        let tick = std::pin::pin!(tokio::time::sleep(Duration::from_millis(100)));
        let cancelled = std::pin::pin!(cx.cancelled());
        if let Either::Right(_) = select(tick, cancelled).await {
            eprintln!("slow: cancelled");
            return Err(McpError::tool("cancelled"));
        }
        cx.progress(step as f64, Some(steps as f64), None).await;
    }
    Ok(format!("slept {seconds} s"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = ServerBuilder::new("sansrpc-mcp-example", "0.1.0")
        .tool(
            "add",
            "Adds two integers",
            |_: Context, Add { a, b }| async move { Ok::<_, McpError>((a + b).to_string()) },
        )
        .tool("slow", "Takes its time, reporting progress", slow)
        .build();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    let conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::stdio());
    conn.driver.await??;
    Ok(())
}
