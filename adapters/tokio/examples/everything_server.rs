//! The MCP conformance suite's "everything server" over Streamable HTTP: the tools,
//! resources and prompts its scenarios call, served at `http://127.0.0.1:$PORT/mcp` (`PORT`
//! from the environment, default 3000) for both the 2025-11-25 session revision and the
//! stateless 2026-07-28 one; with `--stdio`, on stdin and stdout instead. It also has what
//! the official SDKs' interop clients call (`add`, `slow`, `ask_name`, `sample`,
//! `test://hello`, `greet`): `adapters/tokio/tests/mcp_sdks.rs` (stdio) and
//! `mcp_http_sdks.rs` (HTTP) drive it with the Python and TypeScript SDKs. The protocol is `sansrpc_mcp::server`, the transport
//! `sansrpc_tokio::mcp` (the core's `sansrpc::streamable` machine); everything here is the
//! application, written once for both revisions.
//!
//! ```sh
//! PORT=3000 cargo run -p sansrpc-tokio --example everything_server
//! bash interop/mcp-conformance/run.sh server --url http://127.0.0.1:3000/mcp --scenario ping
//! python3 interop/mcp-python/client.py "cargo run -q -p sansrpc-tokio --example everything_server -- --stdio"
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::{Context, ListKind, McpError, ServerBuilder};
use sansrpc_mcp::types::{
    CallToolResult, Completion, ContentBlock, CreateMessageRequestParams, ElicitRequestParams,
    GetPromptResult, JsonObject, LoggingLevel, Prompt, PromptArgument, PromptMessage, Resource,
    ResourceContents, ResourceTemplate, Role, Tool,
};
use sansrpc_store_redb::RedbEventStore;
use sansrpc_tokio::Builder;
use serde_json::{json, Value};

const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const AUDIO: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

type Answer = Result<CallToolResult, McpError>;

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn form(message: &str, schema: Value) -> ElicitRequestParams {
    serde_json::from_value(json!({"message": message, "requestedSchema": schema}))
        .expect("a form elicitation")
}

fn ask_model(text: &str, max_tokens: u64) -> CreateMessageRequestParams {
    serde_json::from_value(json!({"maxTokens": max_tokens,
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}]}))
    .expect("a sampling request")
}

fn name_form(message: &str, field: &str) -> ElicitRequestParams {
    form(
        message,
        json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}),
    )
}

/// A tool taking no arguments whose result comes from `run`.
fn plain<F, Fut>(server: ServerBuilder, name: &str, description: &str, run: F) -> ServerBuilder
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Answer> + Send + 'static,
{
    server.tool(name, description, move |cx: Context, ()| run(cx))
}

async fn progress_steps(cx: &Context) {
    for step in [0.0, 50.0, 100.0] {
        let message = format!("Completed step {step} of 100");
        cx.progress(step, Some(100.0), Some(&message)).await;
        if step < 100.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn content_tools(server: ServerBuilder) -> ServerBuilder {
    let server = plain(
        server,
        "test_simple_text",
        "Returns a simple text response",
        |_| async {
            Ok(CallToolResult::text(
                "This is a simple text response for testing.",
            ))
        },
    );
    let server = plain(
        server,
        "test_image_content",
        "Returns an image",
        |_| async {
            Ok(CallToolResult::success(vec![ContentBlock::image(
                IMAGE,
                "image/png",
            )]))
        },
    );
    let server = plain(server, "test_audio_content", "Returns audio", |_| async {
        Ok(CallToolResult::success(vec![ContentBlock::audio(
            AUDIO,
            "audio/wav",
        )]))
    });
    let server = plain(
        server,
        "test_embedded_resource",
        "Returns an embedded resource",
        |_| async {
            let text = "This is an embedded resource content.";
            let resource =
                ResourceContents::text("test://embedded-resource", Some("text/plain".into()), text);
            Ok(CallToolResult::success(vec![ContentBlock::resource(
                resource,
            )]))
        },
    );
    let server = plain(
        server,
        "test_multiple_content_types",
        "Returns text, an image and a resource",
        |_| async {
            let json = r#"{"test":"data","value":123}"#;
            let resource = ResourceContents::text(
                "test://mixed-content-resource",
                Some("application/json".into()),
                json,
            );
            Ok(CallToolResult::success(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(IMAGE, "image/png"),
                ContentBlock::resource(resource),
            ]))
        },
    );
    plain(
        server,
        "test_error_handling",
        "Always fails, as a tool result",
        |_| async {
            Err(McpError::tool(
                "This tool intentionally returns an error for testing",
            ))
        },
    )
}

fn streaming_tools(server: ServerBuilder) -> ServerBuilder {
    // The suite's hooks for the 2026-07-28 `subscriptions/listen` checks: each announces a
    // change of one list to the sessions and listen streams that asked for it.
    let server = plain(
        server,
        "test_trigger_tool_change",
        "Announces that the tool list changed",
        |cx| async move {
            cx.server().list_changed(ListKind::Tools);
            Ok(CallToolResult::text("Mutation triggered"))
        },
    );
    let server = plain(
        server,
        "test_trigger_prompt_change",
        "Announces that the prompt list changed",
        |cx| async move {
            cx.server().list_changed(ListKind::Prompts);
            Ok(CallToolResult::text("Mutation triggered"))
        },
    );
    let server = plain(
        server,
        "test_tool_with_progress",
        "Reports progress on the request's token",
        |cx| async move {
            progress_steps(&cx).await;
            let token = cx
                .progress_token()
                .map(|t| t.to_string().trim_matches('"').to_owned());
            Ok(CallToolResult::text(
                token.unwrap_or_else(|| "no progress token".into()),
            ))
        },
    );
    let server = plain(
        server,
        "test_streaming_elicitation",
        "Streams progress, then answers",
        |cx| async move {
            progress_steps(&cx).await;
            Ok(CallToolResult::text("Streaming complete"))
        },
    );
    let log = |answer: &'static str| {
        move |cx: Context| async move {
            for (i, message) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .into_iter()
            .enumerate()
            {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                cx.log(LoggingLevel::Info, message).await;
            }
            Ok(CallToolResult::text(answer))
        }
    };
    let server = plain(
        server,
        "test_tool_with_logging",
        "Sends log messages while it runs",
        log("Tool with logging executed successfully"),
    );
    plain(
        server,
        "test_logging_tool",
        "Logs only at the level the request asks for",
        log("Logging evaluated"),
    )
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the LLM.
    prompt: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

fn client_tools(server: ServerBuilder) -> ServerBuilder {
    let server = server.tool(
        "test_sampling",
        "Asks the client's model",
        |cx: Context, a: SamplingArgs| async move {
            let answer =
                serde_json::to_value(cx.sample("sample", ask_model(&a.prompt, 100)).await?)
                    .unwrap_or_default();
            let text = answer["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            Ok(format!("LLM response: {text}"))
        },
    );
    let server = server.tool(
        "test_elicitation",
        "Asks the user",
        |cx: Context, a: ElicitationArgs| async move {
            let schema = json!({"type": "object", "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}},
            "required": ["username", "email"]});
            let answer = cx.elicit("user", form(&a.message, schema)).await?;
            Ok(format!(
                "User response: {}",
                serde_json::to_string(&answer).unwrap_or_default()
            ))
        },
    );
    let defaults = json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": true}}});
    let enums = json!({"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
            {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"}]}}}});
    let mut server = server;
    for (name, schema) in [
        ("test_elicitation_sep1034_defaults", defaults),
        ("test_elicitation_sep1330_enums", enums),
    ] {
        server = plain(server, name, "Asks the user with a form", move |cx| {
            let schema = schema.clone();
            async move {
                let answer = cx
                    .elicit(
                        "form",
                        form("Please review and update the form fields", schema),
                    )
                    .await?;
                let content =
                    serde_json::to_string(&answer.content.unwrap_or_default()).unwrap_or_default();
                Ok(CallToolResult::text(format!(
                    "Elicitation completed: action={}, content={content}",
                    serde_json::to_value(answer.action)
                        .unwrap_or_default()
                        .as_str()
                        .unwrap_or_default()
                )))
            }
        });
    }
    server.tool(
        "test_missing_capability",
        "Needs the client's sampling capability",
        |cx: Context, ()| async move {
            match cx.client_capabilities() {
                Some(c) if c.supports_sampling() => Ok("Success"),
                _ => Err(McpError::MissingCapability("sampling")),
            }
        },
    )
}

/// The 2026-07-28 multi round-trip tools: each asks the client through the context, and
/// gets its answer when the client calls again.
fn input_required_tools(server: ServerBuilder) -> ServerBuilder {
    let server = plain(
        server,
        "test_input_required_result_elicitation",
        "Asks for a name",
        |cx| async move {
            let answer = cx
                .elicit("user_name", name_form("What is your name?", "name"))
                .await?;
            let name = answer.content.and_then(|c| c.get("name").map(|n| json!(n)));
            Ok(CallToolResult::text(format!(
                "Hello, {}!",
                name.unwrap_or_default().as_str().unwrap_or("stranger")
            )))
        },
    );
    let server = plain(
        server,
        "test_input_required_result_sampling",
        "Asks the model",
        |cx| async move {
            let answer = cx
                .sample(
                    "capital_question",
                    ask_model("What is the capital of France?", 100),
                )
                .await?;
            let answer = serde_json::to_value(answer).unwrap_or_default();
            Ok(CallToolResult::text(format!(
                "The model said: {}",
                answer["content"]["text"].as_str().unwrap_or_default()
            )))
        },
    );
    let server = plain(
        server,
        "test_input_required_result_list_roots",
        "Asks for the roots",
        |cx| async move {
            let roots = cx.list_roots("client_roots").await?;
            let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
            Ok(CallToolResult::text(format!("Roots: {}", uris.join(", "))))
        },
    );
    let confirm = form(
        "Please confirm",
        json!({"type": "object",
        "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
    );
    let mut server = server;
    for name in [
        "test_input_required_result_request_state",
        "test_input_required_result_tampered_state",
    ] {
        let confirm = confirm.clone();
        server = plain(server, name, "Keeps state across rounds", move |cx| {
            let confirm = confirm.clone();
            async move {
                if cx.request_state().is_none() {
                    cx.set_request_state(json!({"pending": "confirm"}));
                }
                cx.elicit("confirm", confirm).await?;
                match cx.request_state() {
                    Some(state) if state["pending"] == "confirm" => {
                        Ok(CallToolResult::text("state-ok: confirmed"))
                    }
                    _ => Err(McpError::invalid_params("requestState missing")),
                }
            }
        });
    }
    let server = plain(
        server,
        "test_input_required_result_multiple_inputs",
        "Asks three things at once",
        |cx| async move {
            let name = cx
                .elicit("user_name", name_form("What is your name?", "name"))
                .await;
            let greeting = cx
                .sample("greeting", ask_model("Generate a greeting", 50))
                .await;
            let roots = cx.list_roots("client_roots").await;
            let (_, _, roots) = (name?, greeting?, roots?);
            Ok(CallToolResult::text(format!(
                "All inputs received ({} roots)",
                roots.roots.len()
            )))
        },
    );
    let server = plain(
        server,
        "test_input_required_result_multi_round",
        "Asks in two rounds",
        |cx| async move {
            let name = cx
                .elicit("step1", name_form("Step 1: What is your name?", "name"))
                .await?;
            let color = cx
                .elicit(
                    "step2",
                    name_form("Step 2: What is your favorite color?", "color"),
                )
                .await?;
            let pick = |a: sansrpc_mcp::types::ElicitResult, k: &str| {
                a.content
                    .and_then(|c| c.get(k).map(|v| json!(v)))
                    .unwrap_or_default()
            };
            Ok(CallToolResult::text(format!(
                "Done: {} likes {}",
                pick(name, "name"),
                pick(color, "color")
            )))
        },
    );
    plain(
        server,
        "test_input_required_result_capabilities",
        "Asks only what the client can answer",
        |cx| async move {
            let sampled = cx.sample("summary", ask_model("Summarize", 50)).await;
            let elicited = cx.elicit("confirm", name_form("Confirm?", "ok")).await;
            match (&sampled, &elicited) {
                (Err(McpError::InputRequired), _) | (_, Err(McpError::InputRequired)) => {
                    Err(McpError::InputRequired)
                }
                _ => Ok(CallToolResult::text(format!(
                    "sampling: {}, elicitation: {}",
                    sampled.is_ok(),
                    elicited.is_ok()
                ))),
            }
        },
    )
}

fn schema_tools(server: ServerBuilder) -> ServerBuilder {
    let schema = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"}, "email": {"type": "string"}},
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]}, "else": {"required": ["email"]},
        "additionalProperties": false});
    let tool = Tool::new(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        object(schema),
    );
    let server = server.tool_with(tool, |_, args| async move {
        Ok(CallToolResult::text(format!(
            "Received: {}",
            Value::Object(args)
        )))
    });
    // SEP-2243: the argument travels in the `Mcp-Param-Region` header too (checked by the
    // transport: `Server::streamable_config` in `main`).
    let schema = json!({"type": "object", "required": ["region"],
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
    let tool = Tool::new("test_header_param", "Echoes its region", object(schema));
    server.tool_with(tool, |_, args| async move {
        Ok(CallToolResult::text(
            args.get("region")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        ))
    })
}

fn resources(server: ServerBuilder) -> ServerBuilder {
    let mut text = Resource::new("test://static-text", "static-text");
    text.description = Some("A static text resource".into());
    text.mime_type = Some("text/plain".into());
    let mut binary = Resource::new("test://static-binary", "static-binary");
    binary.mime_type = Some("image/png".into());
    let mut template = ResourceTemplate::new("test://template/{id}/data", "template-data");
    template.mime_type = Some("application/json".into());
    server
        .resource(text, |_, uri| async move {
            Ok(vec![ResourceContents::text(
                uri,
                Some("text/plain".into()),
                "This is the content of the static text resource.",
            )])
        })
        .resource(binary, |_, uri| async move {
            Ok(vec![ResourceContents::blob(
                uri,
                Some("image/png".into()),
                IMAGE,
            )])
        })
        .resource_template(
            template,
            |_, uri, vars: BTreeMap<String, String>| async move {
                let id = &vars["id"];
                let data =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                Ok(vec![ResourceContents::text(
                    uri,
                    Some("application/json".into()),
                    data.to_string(),
                )])
            },
        )
}

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

/// What the official SDKs' interop clients (`interop/mcp-python`, `interop/mcp-ts`) call
/// beside the suite's tools: `add`, `slow` (progress every 100 ms; `slow: cancelled` on
/// stderr when the client cancels), `ask_name` (elicitation), `sample` (sampling), the
/// resource `test://hello` and the prompt `greet`.
fn sdk_tools(server: ServerBuilder) -> ServerBuilder {
    let mut hello = Resource::new("test://hello", "hello");
    hello.mime_type = Some("text/plain".into());
    let greet = prompt("greet", "Greets someone", &["name"]);
    server
        .tool(
            "add",
            "Adds two integers",
            |_: Context, Add { a, b }| async move {
                a.checked_add(b)
                    .map(|sum| sum.to_string())
                    .ok_or_else(|| McpError::tool("the sum overflows"))
            },
        )
        .tool(
            "slow",
            "Takes its time, reporting progress",
            |cx: Context, Slow { seconds }| async move {
                let seconds = seconds.unwrap_or(30.0).clamp(0.0, 30.0);
                let steps = (seconds * 10.0) as u64;
                for step in 1..=steps {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                        _ = cx.cancelled() => {
                            eprintln!("slow: cancelled");
                            return Err(McpError::tool("cancelled"));
                        }
                    }
                    cx.progress(step as f64, Some(steps as f64), None).await;
                }
                Ok(format!("slept {seconds} s"))
            },
        )
        .tool(
            "ask_name",
            "Asks the user their name",
            |cx: Context, ()| async move {
                let answer = cx
                    .elicit("name", name_form("What is your name?", "name"))
                    .await?;
                let name = answer
                    .content
                    .and_then(|c| serde_json::to_value(c).ok())
                    .and_then(|c| c["name"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| "nobody".into());
                Ok::<_, McpError>(format!("hello {name}"))
            },
        )
        .tool(
            "sample",
            "Asks the client's model for a sentence",
            |cx: Context, ()| async move {
                let answer = cx.sample("sample", ask_model("Say something", 50)).await?;
                let answer = serde_json::to_value(answer).map_err(McpError::internal)?;
                Ok::<_, McpError>(
                    answer["content"]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            },
        )
        .resource(hello, |_, uri| async move {
            Ok(vec![ResourceContents::text(
                uri,
                Some("text/plain".into()),
                "hello",
            )])
        })
        .prompt(greet, |_, args| async move {
            let name = args.get("name").map_or("you", String::as_str);
            Ok(messages(vec![PromptMessage::user_text(format!(
                "Hello, {name}!"
            ))]))
        })
}

fn prompt(name: &str, description: &str, args: &[&str]) -> Prompt {
    let mut prompt = Prompt::new(name);
    prompt.description = Some(description.into());
    if !args.is_empty() {
        let args = args.iter().map(|a| {
            let mut arg = PromptArgument::new(*a);
            arg.required = Some(true);
            arg
        });
        prompt.arguments = Some(args.collect());
    }
    prompt
}

fn messages(messages: Vec<PromptMessage>) -> GetPromptResult {
    GetPromptResult::new(messages)
}

fn prompts(server: ServerBuilder) -> ServerBuilder {
    server
        .prompt(
            prompt(
                "test_simple_prompt",
                "A simple prompt without arguments",
                &[],
            ),
            |_, _| async {
                Ok(messages(vec![PromptMessage::user_text(
                    "This is a simple prompt for testing.",
                )]))
            },
        )
        .prompt(
            prompt(
                "test_prompt_with_arguments",
                "A prompt with two arguments",
                &["arg1", "arg2"],
            ),
            |_, a| async move {
                let text = format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    a["arg1"], a["arg2"]
                );
                Ok(messages(vec![PromptMessage::user_text(text)]))
            },
        )
        .prompt(
            prompt(
                "test_prompt_with_embedded_resource",
                "A prompt embedding a resource",
                &["resourceUri"],
            ),
            |_, a| async move {
                let resource = ResourceContents::text(
                    a["resourceUri"].clone(),
                    Some("text/plain".into()),
                    "Embedded resource content for testing.",
                );
                Ok(messages(vec![
                    PromptMessage {
                        role: Role::User,
                        content: ContentBlock::resource(resource),
                    },
                    PromptMessage::user_text("Please process the embedded resource above."),
                ]))
            },
        )
        .prompt(
            prompt("test_prompt_with_image", "A prompt with an image", &[]),
            |_, _| async {
                Ok(messages(vec![
                    PromptMessage {
                        role: Role::User,
                        content: ContentBlock::image(IMAGE, "image/png"),
                    },
                    PromptMessage::user_text("Please analyze the image above."),
                ]))
            },
        )
        .prompt(
            prompt(
                "test_input_required_result_prompt",
                "A prompt that asks the user first",
                &[],
            ),
            |cx, _| async move {
                let question = name_form("What context should the prompt use?", "context");
                let answer = cx.elicit("user_context", question).await?;
                let context = serde_json::to_string(&answer.content).unwrap_or_default();
                Ok(messages(vec![PromptMessage::user_text(format!(
                    "Use this context: {context}"
                ))]))
            },
        )
        .completion(|_, params| async move {
            let typed = params.argument.value.to_lowercase();
            let values = ["paris", "park", "party", "pasta"]
                .into_iter()
                .filter(|v| v.starts_with(&typed))
                .map(String::from)
                .collect::<Vec<_>>();
            Ok(Completion {
                total: Some(values.len() as u64),
                has_more: Some(false),
                values,
            })
        })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = ServerBuilder::new("sansrpc-everything-server", "0.1.0");
    let server = content_tools(streaming_tools(client_tools(input_required_tools(
        schema_tools(sdk_tools(server)),
    ))));
    // The tool and prompt lists change while it serves (the conformance scenarios' triggers);
    // clients may subscribe to the resources.
    let server = prompts(resources(server))
        .list_changed(ListKind::Tools)
        .list_changed(ListKind::Prompts)
        .resource_subscriptions()
        .build();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    if std::env::args().any(|a| a == "--stdio") {
        // MCP's stdio transport: newline-delimited JSON on stdin and stdout.
        let conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::stdio());
        conn.driver.await??;
        return Ok(());
    }
    let port: u16 = std::env::var("PORT").map_or(Ok(3000), |p| p.parse())?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    // The `Mcp-Param-*` headers checked are those the tools' schemas mark (SEP-2243).
    let config = server.streamable_config();
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    // MCP_EVENT_STORE=path: the SSE events kept in a redb file, across restarts.
    let mut options = sansrpc_tokio::mcp::Options::default();
    if let Some(path) = std::env::var_os("MCP_EVENT_STORE") {
        let store = RedbEventStore::open(path, config.store_bytes, config.store_age)
            .map_err(std::io::Error::other)?;
        options = options.event_store(store);
    }
    sansrpc_tokio::mcp::serve_with(listener, builder, config, options, stop).await?;
    Ok(())
}
