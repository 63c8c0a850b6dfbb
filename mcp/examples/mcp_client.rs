//! An MCP client (the typed client of `sansrpc_mcp::client`) that starts its server as a
//! child process and speaks to it over stdio
//! (newline framing, the MCP profile): initialize, tools/list, tools/call, a call that
//! carries a progress token (the server's `notifications/progress` arrive), a call it
//! abandons (the client sends `notifications/cancelled` and the server stops the work),
//! then the MCP stdio shutdown: close the child's stdin, wait for it to exit, kill it if
//! it does not. Prints one JSON line with what it saw.
//!
//! The server is given on the command line; the test `mcp/tests/mcp_sdks.rs` runs
//! it against a server written with the official MCP Python SDK:
//! `cargo run -p sansrpc-mcp --example mcp_client -- python3 interop/mcp-python/server.py`

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::ClientBuilder;
use sansrpc_mcp::types::{notifications, CallToolResult, ContentBlock};
use sansrpc_tokio::{sansrpc, Builder};
use serde_json::json;

/// The text of a tool result's first block.
fn text(result: &CallToolResult) -> Option<&str> {
    match result.content.first()? {
        ContentBlock::Text(t) => Some(&t.text),
        _ => None,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (program, args) = argv
        .split_first()
        .ok_or("usage: mcp_client SERVER [ARGS...]")?;

    // The server's progress notifications, counted.
    let progress = Arc::new(AtomicUsize::new(0));
    let seen = progress.clone();
    let mcp =
        ClientBuilder::new("sansrpc-mcp-client", "0.1.0").on_notification(move |method, _| {
            if method == notifications::PROGRESS {
                seen.fetch_add(1, Ordering::Relaxed);
            }
        });
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router());
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    let child = sansrpc_tokio::spawn_child(builder, &mut command)?;
    let server = mcp.initialize(child.client.clone()).await?;
    let server_name = server.server_info().name.clone();

    let mut names: Vec<String> = server
        .all_tools()
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort_unstable();
    let sum = server.call_tool("add", json!({"a": 2, "b": 3})).await?;
    let (timeout, cap) = (Duration::from_secs(5), Duration::from_secs(60));
    let slept = server
        .call_tool_with_progress("slow", json!({"seconds": 0.5}), 1, timeout, cap)
        .await?;

    // Abandoned after half a second: dropping the call sends notifications/cancelled.
    let slow = server.call_tool("slow", json!({"seconds": 30}));
    let finished = tokio::time::timeout(Duration::from_millis(500), slow)
        .await
        .is_ok();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = server.all_tools().await?;

    drop(server);
    let status = child.shutdown(Duration::from_secs(5)).await?;
    println!(
        "{}",
        json!({
            "server": server_name,
            "tools": names,
            "add": text(&sum),
            "slow": text(&slept),
            "progress": progress.load(Ordering::Relaxed),
            "abandoned_call_finished": finished,
            "tools_after_cancel": again.len(),
            "exit": status.code(),
        })
    );
    Ok(())
}
