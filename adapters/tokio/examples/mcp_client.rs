//! An MCP client that starts its server as a child process and speaks to it over stdio
//! (newline framing, the MCP profile): initialize, tools/list, tools/call, a call that
//! carries a progress token (the server's `notifications/progress` arrive), a call it
//! abandons (the client sends `notifications/cancelled` and the server stops the work),
//! then the MCP stdio shutdown: close the child's stdin, wait for it to exit, kill it if
//! it does not. Prints one JSON line with what it saw.
//!
//! The server is given on the command line; the test `adapters/tokio/tests/mcp_sdks.rs` runs
//! it against a server written with the official MCP Python SDK:
//! `cargo run -p sansrpc-tokio --example mcp_client -- python3 interop/mcp-python/server.py`

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sansrpc::endpoint::{Config, Profile};
use sansrpc_tokio::{sansrpc, AsyncRouter, Builder};
use serde_json::{json, Value};

sansrpc::method!(Initialize = "initialize", Value => Value);
sansrpc::method!(Initialized = "notifications/initialized", Value);
sansrpc::method!(ListTools = "tools/list", Value => Value);
sansrpc::method!(CallTool = "tools/call", Value => Value);

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (program, args) = argv
        .split_first()
        .ok_or("usage: mcp_client SERVER [ARGS...]")?;

    // The server's progress notifications, counted.
    let progress = Arc::new(AtomicUsize::new(0));
    let mut router = AsyncRouter::new();
    let seen = progress.clone();
    router.raw_notification("notifications/progress", move |_| {
        seen.fetch_add(1, Ordering::Relaxed);
        async {}
    })?;
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(router);
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    let child = sansrpc_tokio::spawn_child(builder, &mut command)?;
    let client = child.client().clone();

    let init = client
        .call::<Initialize>(&json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "sansrpc-mcp-client", "version": "0.1.0"},
        }))
        .await?;
    client.notify::<Initialized>(&json!({})).await?;
    let tools = client.call::<ListTools>(&json!({})).await?;
    let mut names: Vec<&str> = tools["tools"]
        .as_array()
        .ok_or("no tools")?
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    let add = json!({"name": "add", "arguments": {"a": 2, "b": 3}});
    let sum = client.call::<CallTool>(&add).await?;

    let slow =
        json!({"name": "slow", "arguments": {"seconds": 0.5}, "_meta": {"progressToken": 1}});
    let slept = client.call::<CallTool>(&slow).await?;

    // Abandoned after half a second: dropping the call sends notifications/cancelled.
    let slow = json!({"name": "slow", "arguments": {"seconds": 30}});
    let abandoned =
        tokio::time::timeout(Duration::from_millis(500), client.call::<CallTool>(&slow));
    let finished = abandoned.await.is_ok();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = client.call::<ListTools>(&json!({})).await?;

    drop(client);
    let status = child.shutdown(Duration::from_secs(5)).await?;
    println!(
        "{}",
        json!({
            "server": init["serverInfo"]["name"],
            "tools": names,
            "add": sum["content"][0]["text"],
            "slow": slept["content"][0]["text"],
            "progress": progress.load(Ordering::Relaxed),
            "abandoned_call_finished": finished,
            "tools_after_cancel": again["tools"].as_array().map_or(0, Vec::len),
            "exit": status.code(),
        })
    );
    Ok(())
}
