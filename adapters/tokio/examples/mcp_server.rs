//! A small MCP server on stdio (newline framing, the MCP profile): `initialize`, `ping`,
//! `tools/list` and `tools/call` with two tools. `add` adds two integers. `slow` runs up to
//! 30 s, sends `notifications/progress` every 100 ms when the request carries a progress
//! token, and when the client cancels (`notifications/cancelled`) writes `slow: cancelled`
//! to stderr and stops; the MCP profile sends no response for a cancelled request.
//!
//! Driven by the official MCP Python SDK in `adapters/tokio/tests/mcp_python.rs`
//! (`interop/mcp-python/client.py`). Run: `cargo run -p sansrpc-tokio --example mcp_server`.

use std::time::Duration;

use futures::future::{select, Either};
use sansrpc::endpoint::{Config, Profile};
use sansrpc::{ErrorObject, RawValue};
use sansrpc_tokio::{sansrpc, AsyncRouter, Builder, RequestContext};
use serde::Deserialize;
use serde_json::{json, Value};

sansrpc::method!(Initialize = "initialize", Value => Value);
sansrpc::method!(Ping = "ping", () => Value);
sansrpc::method!(ListTools = "tools/list", Value => Value);
sansrpc::method!(CallTool = "tools/call", ToolCall => Value);

#[derive(Deserialize)]
struct ToolCall {
    name: String,
    #[serde(default)]
    arguments: Value,
}

fn text(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": false})
}

async fn call_tool(cx: RequestContext, call: ToolCall) -> Result<Value, ErrorObject<'static>> {
    let args = &call.arguments;
    match call.name.as_str() {
        "add" => match (args["a"].as_i64(), args["b"].as_i64()) {
            (Some(a), Some(b)) => Ok(text((a + b).to_string())),
            _ => Err(ErrorObject::invalid_params()),
        },
        "slow" => {
            let seconds = args["seconds"].as_f64().unwrap_or(30.0).clamp(0.0, 30.0);
            let steps = (seconds * 10.0) as u64;
            for step in 1..=steps {
                let tick = std::pin::pin!(tokio::time::sleep(Duration::from_millis(100)));
                if let Either::Right(_) = select(tick, cx.cancelled()).await {
                    eprintln!("slow: cancelled");
                    return Err(ErrorObject::fixed(-32800, "cancelled"));
                }
                let progress = json!({"progress": step, "total": steps}).to_string();
                let _ = cx
                    .report_progress(&RawValue::from_string(progress).unwrap())
                    .await;
            }
            Ok(text(format!("slept {seconds} s")))
        }
        other => Err(ErrorObject::new(-32602, format!("Unknown tool: {other}"))),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut router = AsyncRouter::new();
    router.method::<Initialize, _, _>(|params| async move {
        Ok(json!({
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "sansrpc-mcp-example", "version": "0.1.0"},
        }))
    })?;
    router.method::<Ping, _, _>(|()| async { Ok(json!({})) })?;
    router.method::<ListTools, _, _>(|_| async {
        let number = json!({"type": "integer"});
        Ok(json!({"tools": [
            {"name": "add", "description": "Adds two integers",
             "inputSchema": {"type": "object", "properties": {"a": number, "b": number},
                             "required": ["a", "b"]}},
            {"name": "slow", "description": "Takes its time, reporting progress",
             "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
        ]}))
    })?;
    router.method_with_context::<CallTool, _, _>(call_tool)?;
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(router);
    let conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::stdio());
    conn.driver.await??;
    Ok(())
}
