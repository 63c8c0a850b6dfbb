//! The MCP server on the futures driver (smol), over a real TCP socket on loopback, with a
//! sansrpc client under the MCP profile: schemas from Rust types, pagination, bad input,
//! asking the client from inside a tool on a session, logging levels, resource templates
//! and updates, and the stateless revision's multi round-trip requests.
#![cfg(not(target_arch = "wasm32"))]

mod support;
use support::run;

use futures::channel::mpsc;
use futures::StreamExt;
use sansrpc::RawValue;
use sansrpc_futures::{AsyncRouter, CallError, Client};
use sansrpc_mcp::server::{Context, Json, ListKind, McpError, Server, ServerBuilder};
use sansrpc_mcp::types::{
    CreateMessageRequestParams, GetPromptResult, LoggingLevel, Prompt, Resource, ResourceContents,
    ResourceTemplate,
};
use serde_json::{json, Value};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

fn server() -> Server {
    ServerBuilder::new("test-server", "1.2.3")
        .page_size(2)
        .list_changed(ListKind::Tools)
        .resource_subscriptions()
        .tool("add", "Adds", |_: Context, Add { a, b }| async move {
            Ok::<_, McpError>(Json(Sum { sum: a + b }))
        })
        .tool("fail", "Fails", |_: Context, ()| async move {
            Err::<String, _>(McpError::tool("it broke"))
        })
        .tool("ask_model", "Samples", |cx: Context, ()| async move {
            let ask: CreateMessageRequestParams = serde_json::from_value(json!({"maxTokens": 5,
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}))
            .unwrap();
            let answer = serde_json::to_value(cx.sample("model", ask).await?).unwrap();
            Ok(format!("model said {}", answer["content"]["text"]))
        })
        .tool(
            "chatty",
            "Logs at every level",
            |cx: Context, ()| async move {
                let mut sent = 0;
                for level in LoggingLevel::ALL {
                    sent += u32::from(cx.log(level, format!("at {level}")).await);
                }
                Ok::<_, McpError>(format!("{sent} sent"))
            },
        )
        .tool("two_rounds", "Asks twice", |cx: Context, ()| async move {
            let form = |field: &str| {
                serde_json::from_value(
                    json!({"message": field, "requestedSchema": {"type": "object",
                    "properties": {field: {"type": "string"}}}}),
                )
                .unwrap()
            };
            let first = cx.elicit("first", form("name")).await?;
            let second = cx.elicit("second", form("color")).await?;
            Ok::<_, McpError>(format!(
                "{} {}",
                serde_json::to_string(&first.content).unwrap(),
                serde_json::to_string(&second.content).unwrap()
            ))
        })
        .resource_template(
            ResourceTemplate::new("note://{id}", "note"),
            |_, uri, vars| async move {
                Ok(vec![sansrpc_mcp::types::ResourceContents::text(
                    uri,
                    None,
                    format!("note {}", vars["id"]),
                )])
            },
        )
        .build()
}

/// The server on one connection and a client connected to it; the client's router answers
/// sampling, and every notification the client receives goes to the returned channel.
async fn connect(server: &Server) -> (Client, mpsc::UnboundedReceiver<(String, Value)>) {
    let (tx, rx) = mpsc::unbounded();
    let mut client = AsyncRouter::new();
    client
        .raw_method("sampling/createMessage", |_| async {
            let answer = json!({"role": "assistant", "model": "m",
                "content": {"type": "text", "text": "pong"}});
            Ok(RawValue::from_string(answer.to_string()).unwrap())
        })
        .unwrap();
    for method in [
        "notifications/message",
        "notifications/resources/updated",
        "notifications/tools/list_changed",
    ] {
        let tx = tx.clone();
        client
            .raw_notification(method, move |params| {
                let tx = tx.clone();
                async move {
                    let params =
                        params.map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
                    let _ = tx.unbounded_send((method.to_owned(), params));
                }
            })
            .unwrap();
    }
    (support::loopback(server.router(), client).await, rx)
}

async fn call(client: &Client, method: &str, params: Value) -> Result<Value, CallError> {
    let params = RawValue::from_string(params.to_string()).unwrap();
    let result = client.call_raw(method, Some(&params)).await?;
    Ok(serde_json::from_str(result.get()).unwrap())
}

fn code(e: CallError) -> (i64, String) {
    match e {
        CallError::Rpc(e) => (e.code, e.message.to_string()),
        other => panic!("not an error answer: {other:?}"),
    }
}

async fn initialize(client: &Client, capabilities: Value) -> Value {
    call(
        client,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "test", "version": "0"}}),
    )
    .await
    .unwrap()
}

#[test]
fn tools_are_declared_from_their_types_and_listed_in_pages() {
    run(async {
        let server = server();
        let (client, _) = connect(&server).await;
        let init = initialize(&client, json!({})).await;
        assert_eq!(init["protocolVersion"], "2025-11-25");
        assert_eq!(
            init["serverInfo"],
            json!({"name": "test-server", "version": "1.2.3"})
        );
        assert_eq!(init["capabilities"]["tools"], json!({"listChanged": true}));
        assert_eq!(init["capabilities"]["resources"]["subscribe"], true);
        assert!(init["capabilities"].get("completions").is_none());

        let page = call(&client, "tools/list", json!({})).await.unwrap();
        let add = &page["tools"][0];
        assert_eq!(add["name"], "add");
        assert_eq!(add["inputSchema"]["type"], "object");
        assert_eq!(add["inputSchema"]["properties"]["a"]["type"], "integer");
        assert_eq!(
            add["inputSchema"]["properties"]["a"]["description"],
            "The first addend."
        );
        assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
        assert_eq!(add["outputSchema"]["properties"]["sum"]["type"], "integer");
        // `()` takes no arguments: an empty object schema.
        assert_eq!(
            page["tools"][1]["inputSchema"],
            json!({"type": "object", "properties": {}})
        );
        let mut names = Vec::new();
        let mut cursor = page["nextCursor"].clone();
        names.extend(
            page["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].clone()),
        );
        while let Value::String(c) = cursor {
            let page = call(&client, "tools/list", json!({"cursor": c}))
                .await
                .unwrap();
            assert!(page["tools"].as_array().unwrap().len() <= 2);
            names.extend(
                page["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["name"].clone()),
            );
            cursor = page["nextCursor"].clone();
        }
        assert_eq!(names, ["add", "fail", "ask_model", "chatty", "two_rounds"]);
        let bad = call(&client, "tools/list", json!({"cursor": "p99"}))
            .await
            .unwrap_err();
        assert_eq!(code(bad).0, -32602);
    });
}

#[test]
fn bad_tool_input_is_a_tool_error_or_invalid_params_and_the_connection_goes_on() {
    run(async {
        let server = server();
        let (client, _) = connect(&server).await;
        initialize(&client, json!({})).await;
        let sum = call(
            &client,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        )
        .await
        .unwrap();
        assert_eq!(sum["structuredContent"], json!({"sum": 5}));
        assert_eq!(sum["content"][0]["text"], r#"{"sum":5}"#);
        // Arguments of the wrong type: a tool error the model can read.
        let wrong = call(
            &client,
            "tools/call",
            json!({"name": "add", "arguments": {"a": "x"}}),
        )
        .await
        .unwrap();
        assert_eq!(wrong["isError"], true);
        assert!(wrong["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("invalid arguments"));
        let failed = call(&client, "tools/call", json!({"name": "fail"}))
            .await
            .unwrap();
        assert_eq!(failed["isError"], true);
        assert_eq!(failed["content"][0]["text"], "it broke");
        for params in [
            json!({"name": "nope"}),
            json!({"name": "add", "arguments": [1, 2]}),
            json!({"arguments": {}}),
            json!([1]),
        ] {
            let e = call(&client, "tools/call", params.clone())
                .await
                .unwrap_err();
            assert_eq!(code(e).0, -32602, "{params}");
        }
        let e = call(&client, "logging/setLevel", json!({"level": "loud"}))
            .await
            .unwrap_err();
        assert_eq!(code(e).0, -32602);
        // Still served.
        let sum = call(
            &client,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
        )
        .await
        .unwrap();
        assert_eq!(sum["structuredContent"]["sum"], 2);
    });
}

#[test]
fn a_tool_asks_the_client_on_a_session_and_logs_at_the_level_set() {
    run(async {
        let server = server();
        let (client, mut notes) = connect(&server).await;
        initialize(&client, json!({})).await;
        // The client did not declare sampling: the tool gets -32021.
        let e = call(&client, "tools/call", json!({"name": "ask_model"}))
            .await
            .unwrap_err();
        let (c, message) = code(e);
        assert_eq!(c, -32021, "{message}");

        let (client, mut notes2) = connect(&server).await;
        initialize(&client, json!({"sampling": {}})).await;
        let answer = call(&client, "tools/call", json!({"name": "ask_model"}))
            .await
            .unwrap();
        assert_eq!(answer["content"][0]["text"], r#"model said "pong""#);

        // Before `logging/setLevel` every level is sent; after it, only those at or above.
        let all = call(&client, "tools/call", json!({"name": "chatty"}))
            .await
            .unwrap();
        assert_eq!(all["content"][0]["text"], "8 sent");
        call(&client, "logging/setLevel", json!({"level": "error"}))
            .await
            .unwrap();
        let some = call(&client, "tools/call", json!({"name": "chatty"}))
            .await
            .unwrap();
        assert_eq!(some["content"][0]["text"], "4 sent");
        let mut levels = Vec::new();
        for _ in 0..12 {
            let (method, params) = notes2.next().await.unwrap();
            assert_eq!(method, "notifications/message");
            levels.push(params["level"].as_str().unwrap().to_owned());
        }
        assert_eq!(&levels[8..], ["error", "critical", "alert", "emergency"]);
        assert!(notes.try_recv().is_err(), "the first session heard nothing");
    });
}

#[test]
fn a_tool_added_while_serving_is_listed_called_and_announced() {
    run(async {
        let server = server();
        let (client, mut notes) = connect(&server).await;
        initialize(&client, json!({})).await;
        let e = call(
            &client,
            "tools/call",
            json!({"name": "late", "arguments": {}}),
        )
        .await
        .unwrap_err();
        assert_eq!(code(e), (-32602, "Unknown tool: late".into()));

        server
            .add_tool("late", "Added while serving", |_: Context, ()| async {
                Ok::<_, McpError>("late answer")
            })
            .unwrap();
        assert_eq!(server.list_changed(ListKind::Tools), 1);
        let (method, _) = notes.next().await.unwrap();
        assert_eq!(method, "notifications/tools/list_changed");
        // After the declared tools, on the last page.
        let mut names = Vec::new();
        let mut params = json!({});
        loop {
            let page = call(&client, "tools/list", params).await.unwrap();
            let listed = page["tools"].as_array().unwrap().iter();
            names.extend(listed.map(|t| t["name"].as_str().unwrap().to_owned()));
            match &page["nextCursor"] {
                Value::String(c) => params = json!({"cursor": c}),
                _ => break,
            }
        }
        assert_eq!(
            names,
            ["add", "fail", "ask_model", "chatty", "two_rounds", "late"]
        );
        let answer = call(
            &client,
            "tools/call",
            json!({"name": "late", "arguments": {}}),
        )
        .await
        .unwrap();
        assert_eq!(answer["content"][0]["text"], "late answer");

        // A name taken, declared or added, is refused and changes nothing.
        use sansrpc_mcp::server::AddToolError;
        let again = |name: &str| {
            server.add_tool(name, "again", |_: Context, ()| async {
                Ok::<_, McpError>("again")
            })
        };
        assert_eq!(again("late"), Err(AddToolError::Exists));
        assert_eq!(again("add"), Err(AddToolError::Exists));
        let answer = call(&client, "tools/call", json!({"name": "late"}))
            .await
            .unwrap();
        assert_eq!(answer["content"][0]["text"], "late answer");
    });
}

#[test]
fn templates_are_read_and_subscribers_hear_of_updates() {
    run(async {
        let server = server();
        let (client, mut notes) = connect(&server).await;
        initialize(&client, json!({})).await;
        let read = call(&client, "resources/read", json!({"uri": "note://42"}))
            .await
            .unwrap();
        assert_eq!(read["contents"][0]["text"], "note 42");
        let e = call(&client, "resources/read", json!({"uri": "note://"}))
            .await
            .unwrap_err();
        assert_eq!(code(e).0, -32002, "2025-11-25: resource not found");
        let listed = call(&client, "resources/templates/list", json!({}))
            .await
            .unwrap();
        assert_eq!(listed["resourceTemplates"][0]["uriTemplate"], "note://{id}");

        call(&client, "resources/subscribe", json!({"uri": "note://42"}))
            .await
            .unwrap();
        assert_eq!(server.resource_updated("note://7"), 0);
        assert_eq!(server.resource_updated("note://42"), 1);
        let (method, params) = notes.next().await.unwrap();
        assert_eq!(
            (method.as_str(), &params),
            (
                "notifications/resources/updated",
                &json!({"uri": "note://42"})
            )
        );
        call(
            &client,
            "resources/unsubscribe",
            json!({"uri": "note://42"}),
        )
        .await
        .unwrap();
        assert_eq!(server.resource_updated("note://42"), 0);
    });
}

fn stateless(params: Value, capabilities: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities});
    params
}

#[test]
fn the_stateless_revision_asks_in_rounds_and_refuses_a_changed_state() {
    run(async {
        let server = server();
        let (client, _) = connect(&server).await;
        let caps = json!({"elicitation": {}});
        let round = |extra: Value| {
            let mut params = json!({"name": "two_rounds", "arguments": {}});
            for (k, v) in extra.as_object().unwrap() {
                params[k] = v.clone();
            }
            stateless(params, caps.clone())
        };
        let first = call(&client, "tools/call", round(json!({}))).await.unwrap();
        assert_eq!(first["resultType"], "input_required");
        assert_eq!(
            first["inputRequests"]["first"]["method"],
            "elicitation/create"
        );
        let state = first["requestState"].as_str().unwrap().to_owned();

        let answer =
            |field: &str, value: &str| json!({"action": "accept", "content": {field: value}});
        let second = call(
            &client,
            "tools/call",
            round(json!({"requestState": state,
            "inputResponses": {"first": answer("name", "Ada")}})),
        )
        .await
        .unwrap();
        assert_eq!(second["resultType"], "input_required");
        assert!(second["inputRequests"].get("first").is_none());
        assert_eq!(
            second["inputRequests"]["second"]["method"],
            "elicitation/create"
        );
        let state2 = second["requestState"].as_str().unwrap().to_owned();

        // The third round sends the second answer; the first comes back in the state, and
        // a new answer under its key does not replace it.
        let done = call(
            &client,
            "tools/call",
            round(json!({"requestState": state2, "inputResponses": {
                "second": answer("color", "green"), "first": answer("name", "Eve")}})),
        )
        .await
        .unwrap();
        assert_eq!(done["resultType"], "complete");
        assert_eq!(
            done["content"][0]["text"],
            r#"{"name":"Ada"} {"color":"green"}"#
        );

        // A changed state, a state for another tool, and malformed answers are -32602.
        let mut changed = state2.clone().into_bytes();
        changed[3] = if changed[3] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(changed).unwrap();
        for extra in [
            json!({"requestState": changed, "inputResponses": {"second": answer("color", "x")}}),
            json!({"inputResponses": "nonsense"}),
            json!({"inputResponses": {"first": 7}}),
            json!({"inputResponses": {"first": {"action": "maybe"}}}),
        ] {
            let e = call(&client, "tools/call", round(extra.clone()))
                .await
                .unwrap_err();
            assert_eq!(code(e).0, -32602, "{extra}");
        }
        let e = call(
            &client,
            "tools/call",
            stateless(
                json!({"name": "add",
            "arguments": {"a": 1, "b": 2}, "requestState": state2}),
                caps.clone(),
            ),
        )
        .await
        .unwrap_err();
        assert_eq!(code(e).0, -32602, "a state for another tool");
        let mut other_args = round(json!({"requestState": state2,
            "inputResponses": {"second": answer("color", "green")}}));
        other_args["arguments"] = json!({"extra": 1});
        let e = call(&client, "tools/call", other_args).await.unwrap_err();
        assert_eq!(code(e).0, -32602, "a state for other arguments");

        // Without the capability the client is not asked: -32021 names what is missing.
        let e = call(
            &client,
            "tools/call",
            stateless(json!({"name": "two_rounds"}), json!({})),
        )
        .await
        .unwrap_err();
        assert_eq!(code(e).0, -32021);
        // The methods 2026-07-28 removed are not found; an unknown revision is -32022.
        let e = call(&client, "ping", stateless(json!({}), json!({})))
            .await
            .unwrap_err();
        assert_eq!(code(e).0, -32601);
        let mut old = stateless(json!({}), json!({}));
        old["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
        let e = call(&client, "tools/list", old).await.unwrap_err();
        assert_eq!(code(e).0, -32022);
        let listed = call(&client, "tools/list", stateless(json!({}), json!({})))
            .await
            .unwrap();
        assert_eq!(
            (listed["resultType"].as_str(), listed["ttlMs"].as_u64()),
            (Some("complete"), Some(0))
        );
    });
}

/// A server with a tool, a resource, a template and a prompt, and nothing declared about
/// changes.
fn plain() -> ServerBuilder {
    ServerBuilder::new("plain", "1")
        .tool("add", "Adds", |_: Context, Add { a, b }| async move {
            Ok::<_, McpError>((a + b).to_string())
        })
        .resource(Resource::new("memo://a", "a"), |_, uri| async move {
            Ok(vec![ResourceContents::text(uri, None, "a")])
        })
        .resource_template(
            ResourceTemplate::new("note://{id}", "note"),
            |_, uri, _| async move { Ok(vec![ResourceContents::text(uri, None, "n")]) },
        )
        .prompt(Prompt::new("greet"), |_, _| async move {
            Ok(GetPromptResult::new(Vec::new()))
        })
}

/// The capabilities of `initialize` and of `server/discover` (2026-07-28).
async fn both_capabilities(server: &Server) -> (Value, Value) {
    let (client, _) = connect(server).await;
    let session = initialize(&client, json!({})).await["capabilities"].clone();
    let discover = call(&client, "server/discover", stateless(json!({}), json!({})))
        .await
        .unwrap()["capabilities"]
        .clone();
    (session, discover)
}

#[test]
fn capabilities_promise_only_what_the_server_declared() {
    run(async {
        // Nothing declared: what it has, no listChanged, no subscribe; logging on a
        // session only (2026-07-28 removed logging/setLevel).
        let server = plain().build();
        let (session, discover) = both_capabilities(&server).await;
        assert_eq!(
            session,
            json!({"tools": {}, "resources": {}, "prompts": {}, "logging": {}})
        );
        assert_eq!(
            discover,
            json!({"tools": {}, "resources": {}, "prompts": {}})
        );
        // What it did not declare it does not do: no subscription, no list change sent.
        let (client, _) = connect(&server).await;
        initialize(&client, json!({})).await;
        let refused = call(&client, "resources/subscribe", json!({"uri": "memo://a"})).await;
        assert_eq!(code(refused.unwrap_err()).0, -32601);
        assert_eq!(server.list_changed(ListKind::Tools), 0);

        // Declared: the lists that change and the subscriptions, on both revisions.
        let server = plain()
            .list_changed(ListKind::Tools)
            .list_changed(ListKind::Prompts)
            .resource_subscriptions()
            .build();
        let (session, discover) = both_capabilities(&server).await;
        assert_eq!(
            session,
            json!({"tools": {"listChanged": true}, "resources": {"subscribe": true},
                "prompts": {"listChanged": true}, "logging": {}})
        );
        assert_eq!(
            discover,
            json!({"tools": {"listChanged": true}, "resources": {"subscribe": true},
                "prompts": {"listChanged": true}})
        );
        // A list declared to change is offered while it is empty (it fills while serving:
        // `add_tool`, `add_resource`…); subscriptions to resources it has none of, and may
        // never have, are not.
        let empty = ServerBuilder::new("empty", "1")
            .list_changed(ListKind::Tools)
            .resource_subscriptions()
            .build();
        let (session, discover) = both_capabilities(&empty).await;
        assert_eq!(
            session,
            json!({"tools": {"listChanged": true}, "logging": {}})
        );
        assert_eq!(discover, json!({"tools": {"listChanged": true}}));
        let empty = ServerBuilder::new("empty", "1")
            .resource_subscriptions()
            .build();
        let (session, _) = both_capabilities(&empty).await;
        assert_eq!(session, json!({"logging": {}}));
    });
}

/// Resources, templates and prompts added and removed while serving (declared ones too),
/// each change announced; a URI, template or name taken is refused and changes nothing; a
/// template that does not parse is refused saying why. The state given to the builder is
/// what every handler reads; a handler asking for state it was not given fails as an
/// internal error.
#[test]
fn resources_templates_and_prompts_come_and_go_while_serving() {
    use sansrpc_mcp::server::AddError;
    #[derive(Default)]
    struct Hits(std::sync::atomic::AtomicU64);
    run(async {
        let server = ServerBuilder::new("catalog", "1")
            .list_changed(ListKind::Resources)
            .list_changed(ListKind::Prompts)
            .with_state(Hits::default())
            .resource(
                Resource::new("memo://declared", "declared"),
                |_, uri| async move { Ok(vec![ResourceContents::text(uri, None, "declared")]) },
            )
            .tool("hits", "Counts", |cx: Context, ()| async move {
                let hits = cx.state::<Hits>()?;
                let n = hits.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                Ok::<_, McpError>(n.to_string())
            })
            .tool(
                "unknown_state",
                "Asks for state nobody gave",
                |cx: Context, ()| async move {
                    cx.state::<String>()?;
                    Ok::<_, McpError>("never")
                },
            )
            .build();
        let (client, _) = connect(&server).await;
        let caps = initialize(&client, json!({})).await["capabilities"].clone();
        assert_eq!(caps["prompts"], json!({"listChanged": true}), "{caps}");

        // Added: listed and read.
        let text = |uri: String, text: &'static str| async move {
            Ok(vec![ResourceContents::text(uri, None, text)])
        };
        server
            .add_resource(Resource::new("memo://added", "added"), move |_, uri| {
                text(uri, "added")
            })
            .unwrap();
        server
            .add_resource_template(
                ResourceTemplate::new("tag://{name}", "tag"),
                |_, uri, vars| async move {
                    Ok(vec![ResourceContents::text(
                        uri,
                        None,
                        format!("tag {}", vars["name"]),
                    )])
                },
            )
            .unwrap();
        server
            .add_prompt(Prompt::new("hello"), |_, _| async move {
                Ok(GetPromptResult::new(Vec::new()))
            })
            .unwrap();
        server.list_changed(ListKind::Resources);
        server.list_changed(ListKind::Prompts);
        let listed = call(&client, "resources/list", json!({})).await.unwrap();
        let uris: Vec<&str> = listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(uris, ["memo://declared", "memo://added"]);
        let read = call(&client, "resources/read", json!({"uri": "tag://rust"}))
            .await
            .unwrap();
        assert_eq!(read["contents"][0]["text"], "tag rust");
        let read = call(&client, "resources/read", json!({"uri": "memo://added"}))
            .await
            .unwrap();
        assert_eq!(read["contents"][0]["text"], "added");
        let prompts = call(&client, "prompts/list", json!({})).await.unwrap();
        assert_eq!(prompts["prompts"][0]["name"], "hello");

        // Taken: refused, nothing changed.
        let again = server
            .add_resource(Resource::new("memo://declared", "again"), move |_, uri| {
                text(uri, "again")
            });
        assert_eq!(again, Err(AddError::Exists));
        let again = server.add_prompt(Prompt::new("hello"), |_, _| async move {
            Ok(GetPromptResult::new(Vec::new()))
        });
        assert_eq!(again, Err(AddError::Exists));
        let bad = server.add_resource_template(
            ResourceTemplate::new("tag://{", "bad"),
            |_, uri, _| async move { Ok(vec![ResourceContents::text(uri, None, "never")]) },
        );
        assert!(matches!(bad, Err(AddError::Template(_))), "{bad:?}");

        // Removed, a declared one too: neither listed nor read.
        assert!(server.remove_resource("memo://declared"));
        assert!(server.remove_resource_template("tag://{name}"));
        assert!(server.remove_prompt("hello"));
        assert!(!server.remove_prompt("hello"), "already gone");
        let listed = call(&client, "resources/list", json!({})).await.unwrap();
        assert_eq!(listed["resources"].as_array().unwrap().len(), 1);
        for uri in ["memo://declared", "tag://rust"] {
            let gone = call(&client, "resources/read", json!({"uri": uri})).await;
            assert_eq!(code(gone.unwrap_err()).0, -32002, "{uri}");
        }
        let gone = call(&client, "prompts/get", json!({"name": "hello"})).await;
        assert_eq!(code(gone.unwrap_err()).0, -32602);

        // The state every handler shares.
        for want in ["1", "2"] {
            let answer = call(&client, "tools/call", json!({"name": "hits"}))
                .await
                .unwrap();
            assert_eq!(answer["content"][0]["text"], want);
        }
        assert_eq!(
            server
                .state::<Hits>()
                .unwrap()
                .0
                .load(std::sync::atomic::Ordering::SeqCst),
            2
        );
        let answer = call(&client, "tools/call", json!({"name": "unknown_state"})).await;
        let said = format!("{answer:?}");
        assert!(!said.contains("String"), "the type is not told: {said}");
        assert!(said.contains("no state"), "{said}");
    });
}
