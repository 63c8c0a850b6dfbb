//! An MCP server over Streamable HTTP, for the official SDKs' clients: tools `add`, `slow`
//! (progress every 100 ms), `ask_name` (asks the user their name) and `sample` (asks the
//! client's model), the resource `test://hello` and the prompt `greet`, at
//! `http://127.0.0.1:$PORT/mcp` (`PORT` from the environment, default 3000; 0 picks one).
//!
//! On the 2025-11-25 session revision `ask_name` and `sample` call the client from inside
//! the tool (`elicitation/create`, `sampling/createMessage` on the call's own SSE stream);
//! on the stateless 2026-07-28 revision the tool answers with an `input_required` result
//! instead, and the client retries the call with the answers (multi round-trip requests).
//!
//! ```sh
//! PORT=3000 cargo run -p sansrpc-tokio --example mcp_http_server
//! python3 interop/mcp-python/http_client.py http://127.0.0.1:3000/mcp --mode 2026
//! ```

use std::time::Duration;

use sansrpc::endpoint::{Config, Profile};
use sansrpc::{ErrorObject, RawValue};
use sansrpc_tokio::{sansrpc, AsyncRouter, Builder, HandlerResult, RequestContext};
use serde_json::{json, Value};

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The request's params, and whether it came on the stateless revision.
fn params(raw: Option<Box<RawValue>>) -> (Value, bool) {
    let value: Value = raw
        .and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Value::Null);
    let stateless = value["_meta"][META_VERSION].is_string();
    (value, stateless)
}

/// A result as the revision wants it (2026-07-28: `resultType`, and cache hints on lists
/// and reads).
fn result(mut value: Value, stateless: bool, cacheable: bool) -> HandlerResult {
    if stateless {
        if value.get("resultType").is_none() {
            value["resultType"] = json!("complete");
        }
        if cacheable {
            value["ttlMs"] = json!(0);
            value["cacheScope"] = json!("public");
        }
    }
    Ok(RawValue::from_string(value.to_string()).expect("JSON"))
}

fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

fn raw(value: &Value) -> Box<RawValue> {
    RawValue::from_string(value.to_string()).expect("JSON")
}

fn ask_name_request() -> Value {
    json!({"message": "What is your name?", "requestedSchema": {"type": "object",
        "properties": {"name": {"type": "string"}}, "required": ["name"]}})
}

fn sample_request() -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text",
        "text": "Say something"}}], "maxTokens": 50})
}

/// What a tool needs from the client: asked within the call (sessions), or named in an
/// `input_required` result and read from the retried call's `inputResponses` (stateless).
async fn ask(
    cx: &RequestContext,
    p: &Value,
    stateless: bool,
    key: &str,
    method: &str,
    request: Value,
) -> Result<Result<Value, Value>, ErrorObject<'static>> {
    if stateless {
        return Ok(match p["inputResponses"].get(key) {
            Some(answer) => Ok(answer.clone()),
            None => Err(json!({"resultType": "input_required",
                "inputRequests": {key: {"method": method, "params": request}},
                "requestState": key})),
        });
    }
    let answer = cx
        .call_raw(method, Some(&raw(&request)))
        .await
        .map_err(|e| ErrorObject::new(-32603, format!("the client did not answer: {e}")))?;
    Ok(Ok(serde_json::from_str(answer.get()).unwrap_or(Value::Null)))
}

async fn call_tool(cx: RequestContext, params_raw: Option<Box<RawValue>>) -> HandlerResult {
    let (p, stateless) = params(params_raw);
    let args = &p["arguments"];
    let answer = match p["name"].as_str().unwrap_or_default() {
        "add" => match (args["a"].as_i64(), args["b"].as_i64()) {
            (Some(a), Some(b)) => text(&(a + b).to_string()),
            _ => return Err(ErrorObject::invalid_params()),
        },
        "slow" => {
            let seconds = args["seconds"].as_f64().unwrap_or(1.0).clamp(0.0, 30.0);
            let steps = ((seconds * 10.0) as u64).max(1);
            for step in 1..=steps {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let progress = json!({"progress": step, "total": steps});
                let _ = cx.report_progress(&raw(&progress)).await;
            }
            text(&format!("slept {seconds} s"))
        }
        "ask_name" => {
            let method = "elicitation/create";
            match ask(&cx, &p, stateless, "name", method, ask_name_request()).await? {
                Ok(answer) => {
                    let name = answer["content"]["name"].as_str().unwrap_or("nobody");
                    text(&format!("hello {name}"))
                }
                Err(input_required) => input_required,
            }
        }
        "sample" => {
            let method = "sampling/createMessage";
            match ask(&cx, &p, stateless, "sample", method, sample_request()).await? {
                Ok(answer) => text(answer["content"]["text"].as_str().unwrap_or_default()),
                Err(input_required) => input_required,
            }
        }
        other => return Err(ErrorObject::new(-32602, format!("Unknown tool: {other}"))),
    };
    result(answer, stateless, false)
}

fn tools() -> Value {
    let number = json!({"type": "number"});
    json!({"tools": [
        {"name": "add", "description": "Adds two integers", "inputSchema": {"type": "object",
            "properties": {"a": number, "b": number}, "required": ["a", "b"]}},
        {"name": "slow", "description": "Takes its time, reporting progress",
            "inputSchema": {"type": "object", "properties": {"seconds": number}}},
        {"name": "ask_name", "description": "Asks the user their name",
            "inputSchema": {"type": "object", "properties": {}}},
        {"name": "sample", "description": "Asks the client's model for a sentence",
            "inputSchema": {"type": "object", "properties": {}}},
    ]})
}

fn capabilities() -> Value {
    json!({"tools": {}, "resources": {}, "prompts": {}})
}

fn server_info() -> Value {
    json!({"name": "sansrpc-mcp-http-example", "version": "0.1.0"})
}

fn router() -> Result<AsyncRouter, sansrpc::router::RegisterError> {
    let mut router = AsyncRouter::new();
    router.raw_method("initialize", |raw| async move {
        let (p, _) = params(raw);
        let asked = p["protocolVersion"].as_str().unwrap_or("2025-11-25");
        let version = match asked {
            "2025-11-25" | "2025-06-18" | "2025-03-26" => asked,
            _ => "2025-11-25",
        };
        let answer = json!({"protocolVersion": version, "capabilities": capabilities(),
            "serverInfo": server_info()});
        result(answer, false, false)
    })?;
    router.raw_method("server/discover", |raw| async move {
        let (_, stateless) = params(raw);
        let answer = json!({"supportedVersions": ["2026-07-28"], "capabilities": capabilities(),
            "serverInfo": server_info(),
            "_meta": {"io.modelcontextprotocol/serverInfo": server_info()}});
        result(answer, stateless, true)
    })?;
    router.raw_method("ping", |raw| async move {
        let (_, stateless) = params(raw);
        result(json!({}), stateless, false)
    })?;
    router.raw_method("tools/list", |raw| async move {
        let (_, stateless) = params(raw);
        result(tools(), stateless, true)
    })?;
    router.raw_method_with_context("tools/call", call_tool)?;
    router.raw_method("resources/list", |raw| async move {
        let (_, stateless) = params(raw);
        let list = json!({"resources": [{"uri": "test://hello", "name": "hello",
            "mimeType": "text/plain"}]});
        result(list, stateless, true)
    })?;
    router.raw_method("resources/read", |raw| async move {
        let (p, stateless) = params(raw);
        if p["uri"] != "test://hello" {
            return Err(ErrorObject::new(-32602, "Resource not found"));
        }
        let contents = json!({"contents": [{"uri": "test://hello", "mimeType": "text/plain",
            "text": "hello"}]});
        result(contents, stateless, true)
    })?;
    router.raw_method("prompts/list", |raw| async move {
        let (_, stateless) = params(raw);
        let list = json!({"prompts": [{"name": "greet", "description": "Greets someone",
            "arguments": [{"name": "name", "required": true}]}]});
        result(list, stateless, true)
    })?;
    router.raw_method("prompts/get", |raw| async move {
        let (p, stateless) = params(raw);
        let name = p["arguments"]["name"].as_str().unwrap_or("you").to_owned();
        let prompt = json!({"messages": [{"role": "user", "content": {"type": "text",
            "text": format!("Hello, {name}!")}}]});
        result(prompt, stateless, false)
    })?;
    Ok(router)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::var("PORT").map_or(Ok(3000), |p| p.parse())?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(router()?);
    let config = sansrpc::streamable::Config::default();
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    sansrpc_tokio::mcp::serve(listener, builder, config, stop).await?;
    Ok(())
}
