//! The MCP conformance suite's "everything server" over Streamable HTTP: the tools,
//! resources and prompts its scenarios call, served at `http://127.0.0.1:$PORT/mcp` (`PORT`
//! from the environment, default 3000) for both the 2025-11-25 session revision and the
//! stateless 2026-07-28 one. The transport is `sansrpc_tokio::mcp` (the core's
//! `sansrpc::streamable` machine); everything here is the application.
//!
//! ```sh
//! PORT=3000 cargo run -p sansrpc-tokio --example everything_server
//! bash interop/mcp-conformance/run.sh server --url http://127.0.0.1:3000/mcp --scenario ping
//! ```

use std::time::Duration;

use sansrpc::endpoint::{Config, Profile};
use sansrpc::streamable::{self, ParamHeader};
use sansrpc::{ErrorObject, RawValue};
use sansrpc_tokio::{sansrpc, AsyncRouter, Builder, HandlerResult, RequestContext};
use serde_json::{json, Value};

const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const AUDIO: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
const STATELESS: &str = "2026-07-28";
const SESSION_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

fn server_info() -> Value {
    json!({"name": "sansrpc-everything-server", "version": "0.1.0"})
}

/// The request's params, and whether it came on the stateless revision (its `_meta` names
/// a protocol version).
fn params(raw: Option<Box<RawValue>>) -> (Value, bool) {
    let value: Value = raw
        .and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Value::Null);
    let stateless = value["_meta"][META_VERSION].is_string();
    (value, stateless)
}

/// A result as the revision wants it: 2026-07-28 results say `resultType`, and the lists
/// and reads say how long they may be cached.
fn result(mut value: Value, stateless: bool, cacheable: bool) -> HandlerResult {
    if stateless {
        value["resultType"] = json!("complete");
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

fn tools() -> Value {
    let none = json!({"type": "object", "properties": {}});
    let mut list = Vec::new();
    for (name, description) in [
        ("test_simple_text", "Returns a simple text response"),
        ("test_image_content", "Returns an image"),
        ("test_audio_content", "Returns audio"),
        ("test_embedded_resource", "Returns an embedded resource"),
        (
            "test_multiple_content_types",
            "Returns text, an image and a resource",
        ),
        ("test_error_handling", "Always fails, as a tool result"),
        (
            "test_tool_with_progress",
            "Reports progress on the request's token",
        ),
        ("test_tool_with_logging", "Sends log messages while it runs"),
        (
            "test_missing_capability",
            "Needs the client's sampling capability",
        ),
        (
            "test_streaming_elicitation",
            "Streams a progress notification, then answers",
        ),
        (
            "test_logging_tool",
            "Logs only when the request asks for a log level",
        ),
    ] {
        list.push(json!({"name": name, "description": description, "inputSchema": none}));
    }
    // SEP-2243: the argument travels in the `Mcp-Param-Region` header too (checked by the
    // transport, see `main`).
    list.push(
        json!({"name": "test_header_param", "description": "Echoes its region",
        "inputSchema": {"type": "object", "required": ["region"], "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}}),
    );
    json!({ "tools": list })
}

async fn call_tool(cx: RequestContext, raw: Option<Box<RawValue>>) -> HandlerResult {
    let (p, stateless) = params(raw);
    let name = p["name"].as_str().unwrap_or_default();
    let answer = match name {
        "test_simple_text" => text("This is a simple text response for testing."),
        "test_image_content" => {
            json!({"content": [{"type": "image", "data": IMAGE, "mimeType": "image/png"}]})
        }
        "test_audio_content" => {
            json!({"content": [{"type": "audio", "data": AUDIO, "mimeType": "audio/wav"}]})
        }
        "test_embedded_resource" => json!({"content": [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain",
            "text": "This is an embedded resource content."}}]}),
        "test_multiple_content_types" => json!({"content": [
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": IMAGE, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://mixed-content-resource",
             "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}]}),
        "test_error_handling" => json!({"isError": true, "content": [{"type": "text",
            "text": "This tool intentionally returns an error for testing"}]}),
        "test_tool_with_progress" | "test_streaming_elicitation" => {
            for step in [0, 50, 100] {
                let progress = json!({"progress": step, "total": 100,
                    "message": format!("Completed step {step} of 100")});
                let _ = cx
                    .report_progress(&RawValue::from_string(progress.to_string()).unwrap())
                    .await;
                if step < 100 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            match (name, cx.progress_token()) {
                ("test_tool_with_progress", Some(token)) => {
                    text(token.to_string().trim_matches('"'))
                }
                ("test_tool_with_progress", None) => text("no progress token"),
                _ => text("Streaming complete"),
            }
        }
        "test_tool_with_logging" | "test_logging_tool" => {
            let asked = !stateless || p["_meta"]["io.modelcontextprotocol/logLevel"].is_string();
            if asked {
                let messages = [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ];
                for (i, message) in messages.into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    let log = json!({"level": "info", "data": message});
                    let log = RawValue::from_string(log.to_string()).unwrap();
                    let _ = cx.notify_raw("notifications/message", Some(&log)).await;
                }
            }
            match name {
                "test_logging_tool" => text("Logging evaluated"),
                _ => text("Tool with logging executed successfully"),
            }
        }
        "test_missing_capability" => {
            let sampling = if stateless {
                p["_meta"][META_CAPABILITIES]["sampling"].is_object()
            } else {
                true
            };
            if !sampling {
                let data = r#"{"requiredCapabilities":{"sampling":{}}}"#;
                let data = RawValue::from_string(data.to_owned()).unwrap();
                return Err(
                    ErrorObject::new(-32021, "MissingRequiredClientCapabilityError")
                        .with_data(data),
                );
            }
            text("Success")
        }
        "test_header_param" => text(p["arguments"]["region"].as_str().unwrap_or_default()),
        other => return Err(ErrorObject::new(-32602, format!("Unknown tool: {other}"))),
    };
    result(answer, stateless, false)
}

fn capabilities(stateless: bool) -> Value {
    if stateless {
        // No listChanged or subscribe: this server has no `subscriptions/listen`.
        json!({"tools": {}, "resources": {}, "prompts": {}, "logging": {}})
    } else {
        json!({"tools": {}, "resources": {}, "prompts": {}, "logging": {}})
    }
}

/// The methods only the session revisions have: on the stateless one they do not exist.
fn session_only(stateless: bool) -> Result<(), ErrorObject<'static>> {
    if stateless {
        Err(ErrorObject::method_not_found())
    } else {
        Ok(())
    }
}

fn router() -> Result<AsyncRouter, sansrpc::router::RegisterError> {
    let mut router = AsyncRouter::new();
    router.raw_method("initialize", |raw| async move {
        let (p, stateless) = params(raw);
        session_only(stateless)?;
        let asked = p["protocolVersion"].as_str().unwrap_or_default();
        let version = SESSION_VERSIONS
            .into_iter()
            .find(|v| *v == asked)
            .unwrap_or(SESSION_VERSIONS[0]);
        let answer = json!({"protocolVersion": version, "capabilities": capabilities(false),
            "serverInfo": server_info()});
        result(answer, false, false)
    })?;
    router.raw_method("server/discover", |raw| async move {
        let (_, stateless) = params(raw);
        let answer = json!({"supportedVersions": [STATELESS],
            "capabilities": capabilities(true), "serverInfo": server_info(),
            "_meta": {"io.modelcontextprotocol/serverInfo": server_info()}});
        result(answer, stateless, true)
    })?;
    for method in [
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        router.raw_method(method, |raw| async move {
            let (_, stateless) = params(raw);
            session_only(stateless)?;
            result(json!({}), false, false)
        })?;
    }
    router.raw_method("tools/list", |raw| async move {
        let (_, stateless) = params(raw);
        result(tools(), stateless, true)
    })?;
    router.raw_method_with_context("tools/call", call_tool)?;
    router.raw_method("prompts/list", |raw| async move {
        let (_, stateless) = params(raw);
        let prompts = json!({"prompts": [{"name": "test_simple_prompt",
            "description": "A simple prompt without arguments"}]});
        result(prompts, stateless, true)
    })?;
    router.raw_method("prompts/get", |raw| async move {
        let (_, stateless) = params(raw);
        let prompt = json!({"messages": [{"role": "user", "content": {"type": "text",
            "text": "This is a simple prompt for testing."}}]});
        result(prompt, stateless, false)
    })?;
    router.raw_method("resources/list", |raw| async move {
        let (_, stateless) = params(raw);
        let resources = json!({"resources": [{"uri": "test://static-text",
            "name": "static-text", "description": "A static text resource",
            "mimeType": "text/plain"}]});
        result(resources, stateless, true)
    })?;
    router.raw_method("resources/templates/list", |raw| async move {
        let (_, stateless) = params(raw);
        result(json!({"resourceTemplates": []}), stateless, true)
    })?;
    router.raw_method("resources/read", |raw| async move {
        let (p, stateless) = params(raw);
        let uri = p["uri"].as_str().unwrap_or_default().to_owned();
        if uri != "test://static-text" {
            return Err(ErrorObject::new(
                -32602,
                format!("Resource not found: {uri}"),
            ));
        }
        let contents = json!({"contents": [{"uri": uri, "mimeType": "text/plain",
            "text": "This is the content of the static text resource."}]});
        result(contents, stateless, true)
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
    let mut config = streamable::Config::default();
    config.param_headers = vec![ParamHeader::new("test_header_param", "Region", "region")];
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    sansrpc_tokio::mcp::serve(listener, builder, config, stop).await?;
    Ok(())
}
