//! One process of an MCP server meant to run as several behind a load balancer (the
//! HAProxy config in `deploy/haproxy/mcp.cfg`), over Streamable HTTP at
//! `http://127.0.0.1:$PORT/mcp` for both the 2025-11-25 session revision and the stateless
//! 2026-07-28 one (`PORT` from the environment, default 3000; 0 picks a free port). Its
//! first line on stdout is `listening on http://127.0.0.1:P/mcp`.
//!
//! `STATE_KEY` (64 hex digits, the same in every process) is the key that seals a
//! 2026-07-28 request's `requestState` (`ServerBuilder::state_key`): a round of a call
//! that asks the client for input can then be answered by any process. Without it each
//! process has a random key of its own, and a round that lands on another process is
//! refused.
//!
//! `NATS_URL` (optional): the NATS server through which the processes hear each other's
//! list changes (`sansrpc_store_nats::McpFanout`): a `tools/list_changed` announced by one
//! process reaches the `subscriptions/listen` streams and sessions of all of them.
//!
//! Tools:
//! - `whoami`: answers the text `port P`, P the port this process listens on. With
//!   `{"tag": T}` it also prints `whoami T` on stdout, so a test can tell which process ran
//!   which call, and that none ran twice; with `{"millis": M}` it works M ms first.
//! - `add_tool` with `{"name": N}`: adds a tool `N` to this process (`Server::add_tool`),
//!   which answers `added N`, and announces that the tool list changed.
//! - `ask_twice`: asks the client for a name, then for a colour (elicitation), and answers
//!   `NAME likes COLOUR`. Each question says the port of the process that asked it, and the
//!   answer the port that gave it: on 2026-07-28 each question is an `input_required` round
//!   of its own, so each round may land on another process.
//!
//! ```sh
//! STATE_KEY=$(openssl rand -hex 32)
//! PORT=3001 STATE_KEY=$STATE_KEY cargo run -p sansrpc-mcp --example mcp_cluster &
//! PORT=3002 STATE_KEY=$STATE_KEY cargo run -p sansrpc-mcp --example mcp_cluster &
//! ```
//!
//! Run behind HAProxy by `mcp/tests/mcp_cluster.rs`; `docs/mcp.md` ("Running
//! several processes") explains the deployment.

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::{Context, ListKind, McpError, ServerBuilder};
use sansrpc_mcp::types::{CallToolResult, ElicitRequestParams, ElicitResult};
use sansrpc_tokio::Builder;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WhoAmI {
    /// Printed on stdout (`whoami TAG`) when given.
    tag: Option<String>,
    /// Milliseconds to wait before answering (at most 10,000; default 0): work.
    millis: Option<u64>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddTool {
    /// The new tool's name: 1 to 128 characters of `A-Z a-z 0-9 _ . -`.
    name: String,
}

/// The key in `STATE_KEY`: 64 hex digits.
fn state_key(hex: &str) -> Result<[u8; 32], String> {
    let digits = hex.trim().as_bytes();
    if digits.len() != 64 {
        return Err(format!("STATE_KEY is {} characters, not 64", digits.len()));
    }
    let mut key = [0; 32];
    for (byte, pair) in key.iter_mut().zip(digits.chunks(2)) {
        let pair = std::str::from_utf8(pair).map_err(|_| "STATE_KEY is not hex".to_owned())?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| "STATE_KEY is not hex".to_owned())?;
    }
    Ok(key)
}

/// A form asking for one string, `field`.
fn ask(message: String, field: &str) -> ElicitRequestParams {
    serde_json::from_value(
        json!({"message": message, "requestedSchema": {"type": "object",
        "properties": {field: {"type": "string"}}, "required": [field]}}),
    )
    .expect("a form elicitation")
}

/// The string `field` of an accepted form.
fn answer(result: &ElicitResult, field: &str) -> Result<String, McpError> {
    result
        .content
        .as_ref()
        .and_then(|c| c.get(field))
        .and_then(|v| serde_json::to_value(v).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
        .ok_or_else(|| McpError::tool(format!("no {field} given")))
}

fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::var("PORT").map_or(Ok(3000), |p| p.parse())?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let port = listener.local_addr()?.port();

    let mut server =
        ServerBuilder::new("sansrpc-mcp-cluster", "0.1.0").list_changed(ListKind::Tools);
    if let Ok(hex) = std::env::var("STATE_KEY") {
        server = server.state_key(state_key(&hex)?);
    }
    let server = server
        .tool(
            "whoami",
            "Says which process answers: `port P`",
            move |_: Context, WhoAmI { tag, millis }| async move {
                if let Some(tag) = tag {
                    println!("whoami {tag}");
                }
                let millis = millis.unwrap_or(0).min(10_000);
                tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
                Ok::<_, McpError>(format!("port {port}"))
            },
        )
        .tool(
            "add_tool",
            "Adds a tool `name` that answers `added NAME`, and announces the change",
            move |cx: Context, AddTool { name }| async move {
                if !valid_name(&name) {
                    return Err(McpError::tool(
                        "a tool name is 1 to 128 characters of A-Z a-z 0-9 _ . -",
                    ));
                }
                let text = format!("added {name}");
                let added = cx
                    .server()
                    .add_tool(&name, "Added by add_tool", move |_, ()| {
                        let text = text.clone();
                        async move { Ok::<_, McpError>(text) }
                    });
                added.map_err(|e| McpError::tool(format!("{name}: {e}")))?;
                cx.server().list_changed(ListKind::Tools);
                Ok(format!("added tool {name} on port {port}"))
            },
        )
        .tool(
            "ask_twice",
            "Asks for a name, then a colour, and says who likes what",
            move |cx: Context, ()| async move {
                // On 2026-07-28 every round runs this from the start: the answers given so
                // far come back in the sealed request state, the next question is asked.
                let name = cx
                    .elicit("name", ask(format!("port {port}: your name?"), "name"))
                    .await?;
                let colour = cx
                    .elicit(
                        "colour",
                        ask(format!("port {port}: your colour?"), "colour"),
                    )
                    .await?;
                let text = format!(
                    "{} likes {} (answered on port {port})",
                    answer(&name, "name")?,
                    answer(&colour, "colour")?
                );
                Ok::<_, McpError>(CallToolResult::text(text))
            },
        )
        .build();

    // Kept until the end: dropping it ends the fan-out.
    let _fanout = match std::env::var("NATS_URL") {
        Ok(url) => {
            let server = server.clone();
            let connect = move || sansrpc_store_nats::McpFanout::connect(&url, &server);
            Some(tokio::task::spawn_blocking(connect).await??)
        }
        Err(_) => None,
    };
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    println!("listening on http://127.0.0.1:{port}/mcp");
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    sansrpc_mcp::tokio::serve(listener, builder, server.streamable_config(), stop).await?;
    Ok(())
}
