//! The typed MCP client (`sansrpc_mcp::client`) against the crate's own server, both on the
//! futures driver (smol) over a real TCP socket on loopback: every call (tools, resources,
//! templates, prompts, completion, logging, subscriptions, ping) with lists followed across
//! pages, and every callback (sampling, elicitation with SEP-1034 defaults, roots, the
//! server's notifications). Errors come back as the server's JSON-RPC error.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod support;
use support::run;

use futures::channel::mpsc;
use futures::StreamExt;
use sansrpc::ext::interceptors::{Interceptor, Interceptors, Outgoing};
use sansrpc::method::CallError;
use sansrpc::{ErrorObject, RawValue};
use sansrpc_futures::AsyncRouter;
use sansrpc_mcp::client::{ClientBuilder, ClientError, McpClient, MAX_ITEMS, MAX_PAGES};
use sansrpc_mcp::server::{Context, McpError, Server, ServerBuilder};
use sansrpc_mcp::types::{
    notifications, Completion, ContentBlock, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitValue, GetPromptResult, LoggingLevel, Prompt, PromptMessage,
    PromptReference, Reference, Resource, ResourceContents, ResourceTemplate, Root,
};
use serde_json::{json, Value};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn server() -> Server {
    let mut builder = ServerBuilder::new("client-test-server", "0.3.0")
        .page_size(2)
        .resource_subscriptions();
    for n in 0..5 {
        builder = builder.tool(
            &format!("echo{n}"),
            "Echoes",
            move |_: Context, ()| async move { Ok::<_, McpError>(format!("echo {n}")) },
        );
    }
    builder
        .tool("add", "Adds", |_: Context, Add { a, b }| async move {
            Ok::<_, McpError>((a + b).to_string())
        })
        .tool(
            "ask",
            "Asks the user and the model",
            |cx: Context, ()| async move {
                let form: ElicitRequestParams = serde_json::from_value(json!({
                    "message": "Who?",
                    "requestedSchema": {"type": "object", "properties": {
                        "name": {"type": "string", "default": "Ada"},
                        "age": {"type": "integer", "default": 36},
                        "score": {"type": "number", "default": 9.5},
                        "ok": {"type": "boolean", "default": true},
                        "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
                        "free": {"type": "string"}}}
                }))
                .unwrap();
                let answer = cx.elicit("who", form).await?;
                let model = cx
                    .sample(
                        "model",
                        serde_json::from_value(json!({"maxTokens": 5,
                        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}))
                        .unwrap(),
                    )
                    .await?;
                let roots = cx.list_roots("roots").await?;
                Ok::<_, McpError>(
                    json!({
                        "content": answer.content,
                        "model": model.model,
                        "roots": roots.roots.len(),
                    })
                    .to_string(),
                )
            },
        )
        .tool("chatty", "Logs", |cx: Context, ()| async move {
            for level in [LoggingLevel::Debug, LoggingLevel::Warning] {
                cx.log(level, format!("at {level}")).await;
            }
            Ok::<_, McpError>("logged")
        })
        .resource(Resource::new("memo://a", "a"), |_, uri| async move {
            Ok(vec![ResourceContents::text(uri, None, "memo a")])
        })
        .resource_template(
            ResourceTemplate::new("note://{id}", "note"),
            |_, uri, vars| async move {
                Ok(vec![ResourceContents::text(
                    uri,
                    None,
                    format!("note {}", vars["id"]),
                )])
            },
        )
        .prompt(
            serde_json::from_value::<Prompt>(json!({"name": "greet",
                "arguments": [{"name": "who", "required": true}]}))
            .unwrap(),
            |_, args| async move {
                Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                    format!("Hello {}", args["who"]),
                )]))
            },
        )
        .completion(|_, params| async move {
            let values: Vec<String> = ["alpha", "beta", "alpine"]
                .into_iter()
                .filter(|c| c.starts_with(&params.argument.value))
                .map(str::to_owned)
                .collect();
            Ok(Completion {
                values,
                total: None,
                has_more: None,
            })
        })
        .build()
}

/// The server on one loopback connection, and `mcp`'s client initialized on the other end.
async fn connect(server: &Server, mcp: &ClientBuilder) -> McpClient {
    mcp.initialize(open(server, mcp).await).await.unwrap()
}

/// The server on one loopback connection; the other end's connection, with `mcp`'s router.
async fn open(server: &Server, mcp: &ClientBuilder) -> sansrpc_futures::Client {
    support::loopback(server.router(), mcp.router()).await
}

fn root(uri: &str) -> Root {
    Root {
        uri: uri.to_owned(),
        name: None,
        meta: None,
    }
}

fn text(blocks: &[ContentBlock]) -> &str {
    match blocks.first() {
        Some(ContentBlock::Text(t)) => &t.text,
        other => panic!("not text: {other:?}"),
    }
}

#[test]
fn every_call_of_the_typed_client() {
    run(async {
        let server = server();
        let client = connect(&server, &ClientBuilder::new("typed", "1")).await;
        assert_eq!(client.server_info().name, "client-test-server");
        assert_eq!(client.protocol_version(), "2025-11-25");
        client.ping().await.unwrap();

        // Eight tools at two a page: four pages followed.
        let first = client.list_tools(None).await.unwrap();
        assert_eq!(first.tools.len(), 2);
        assert!(first.next_cursor.is_some());
        let tools = client.all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["echo0", "echo1", "echo2", "echo3", "echo4", "add", "ask", "chatty"]
        );

        let sum = client
            .call_tool("add", json!({"a": 2, "b": 40}))
            .await
            .unwrap();
        assert_eq!(text(&sum.content), "42");
        assert_ne!(sum.is_error, Some(true));
        // Arguments that do not fit the tool's type: a tool error the model reads.
        let bad = client.call_tool("add", json!({"a": "two"})).await.unwrap();
        assert_eq!(bad.is_error, Some(true));
        // An unknown tool: the server's -32602.
        let err = client.call_tool("nope", ()).await.unwrap_err();
        assert_eq!(err.rpc().map(|e| e.code), Some(-32602), "{err}");
        // Arguments that are not an object never leave the client.
        let err = client.call_tool("add", json!([1, 2])).await.unwrap_err();
        assert!(err.to_string().contains("must be an object"), "{err}");

        let resources = client.all_resources().await.unwrap();
        assert_eq!(resources.len(), 1);
        let read = client.read_resource("memo://a").await.unwrap();
        assert_eq!(
            serde_json::to_value(&read.contents[0]).unwrap()["text"],
            "memo a"
        );
        let templates = client.all_resource_templates().await.unwrap();
        assert_eq!(templates[0].uri_template, "note://{id}");
        let note = client.read_resource("note://7").await.unwrap();
        assert_eq!(
            serde_json::to_value(&note.contents[0]).unwrap()["text"],
            "note 7"
        );
        let missing = client.read_resource("memo://zzz").await.unwrap_err();
        assert_eq!(missing.rpc().map(|e| e.code), Some(-32002), "{missing}");

        let prompts = client.all_prompts().await.unwrap();
        assert_eq!(prompts[0].name, "greet");
        let args = BTreeMap::from([("who".to_owned(), "Grace".to_owned())]);
        let greeting = client.get_prompt("greet", args).await.unwrap();
        assert_eq!(
            serde_json::to_value(&greeting.messages[0]).unwrap()["content"]["text"],
            "Hello Grace"
        );
        let err = client
            .get_prompt("greet", BTreeMap::new())
            .await
            .unwrap_err();
        assert_eq!(err.rpc().map(|e| e.code), Some(-32602), "{err}");

        let reference = Reference::Prompt(PromptReference {
            name: "greet".into(),
            ..Default::default()
        });
        let completion = client.complete(reference, "who", "al").await.unwrap();
        assert_eq!(completion.values, ["alpha", "alpine"]);

        client.subscribe("memo://a").await.unwrap();
        client.unsubscribe("memo://a").await.unwrap();
        client.set_logging_level(LoggingLevel::Info).await.unwrap();
    });
}

#[test]
fn the_server_asks_and_tells_through_the_callbacks() {
    run(async {
        let (tx, mut rx) = mpsc::unbounded::<(String, Value)>();
        let mcp = ClientBuilder::new("callbacks", "1")
            .on_elicitation(|request| async move {
                // SEP-1034: accept with the defaults the form declares.
                Ok(ElicitResult::accept(request.defaults()))
            })
            .on_sampling(|request| async move {
                assert_eq!(request.max_tokens, 5);
                let answer = json!({"role": "assistant", "model": "test-model",
                    "content": {"type": "text", "text": "pong"}});
                Ok(serde_json::from_value::<CreateMessageResult>(answer).unwrap())
            })
            .roots(vec![root("file:///tmp/a"), root("file:///tmp/b")])
            .on_notification(move |method, params| {
                let _ = tx.unbounded_send((method.to_owned(), params.clone()));
            });
        let caps = serde_json::to_value(mcp.capabilities()).unwrap();
        assert!(caps["elicitation"]["form"].is_object(), "{caps}");
        // URL mode only when asked for: a handler written for forms never accepts a URL.
        assert!(caps["elicitation"].get("url").is_none(), "{caps}");
        assert!(caps["sampling"].is_object(), "{caps}");
        assert_eq!(caps["roots"]["listChanged"], true);

        let server = server();
        let client = connect(&server, &mcp).await;
        let asked = client.call_tool("ask", ()).await.unwrap();
        let asked: Value = serde_json::from_str(text(&asked.content)).unwrap();
        assert_eq!(
            asked["content"],
            json!({"name": "Ada", "age": 36, "score": 9.5, "ok": true, "color": "blue"}),
            "{asked}"
        );
        assert_eq!(asked["model"], "test-model");
        assert_eq!(asked["roots"], 2);

        // Log messages at the level the client set, as notifications.
        client.set_logging_level(LoggingLevel::Info).await.unwrap();
        client.call_tool("chatty", ()).await.unwrap();
        let (method, params) = rx.next().await.unwrap();
        assert_eq!(method, notifications::MESSAGE);
        assert_eq!(params["level"], "warning");
        assert_eq!(params["data"], "at warning");

        // A resource update for a subscribed URI.
        client.subscribe("memo://a").await.unwrap();
        server.resource_updated("memo://a");
        let (method, params) = rx.next().await.unwrap();
        assert_eq!(method, notifications::RESOURCES_UPDATED);
        assert_eq!(params["uri"], "memo://a");

        assert!(client.set_roots(vec![root("file:///c")]).await.unwrap());
    });
}

/// Counts what a client sends (a client interceptor).
#[derive(Default, Clone)]
struct Sent(Arc<std::sync::Mutex<Vec<String>>>);

impl Sent {
    fn methods(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl Interceptor for Sent {
    fn before(&self, call: &mut Outgoing<'_>) -> Result<(), ErrorObject<'static>> {
        self.0.lock().unwrap().push(call.method.to_owned());
        Ok(())
    }
}

#[test]
fn the_typed_client_on_the_stateless_revision() {
    run(async {
        let mcp = ClientBuilder::new("stateless", "2")
            .on_elicitation(|request| async move { Ok(ElicitResult::accept(request.defaults())) })
            .on_sampling(|_| async move {
                let answer = json!({"role": "assistant", "model": "round-model",
                    "content": {"type": "text", "text": "pong"}});
                Ok(serde_json::from_value::<CreateMessageResult>(answer).unwrap())
            })
            .roots(vec![root("file:///r")]);
        let server = server();
        // Every method the client sends, as it goes out.
        let sent = Sent::default();
        let conn = open(&server, &mcp)
            .await
            .with_interceptors(Interceptors::new().with(sent.clone()));
        let client = mcp.discover(conn.clone()).await.unwrap();
        assert!(client.is_stateless());
        assert_eq!(client.protocol_version(), "2026-07-28");
        assert_eq!(client.server_info().name, "client-test-server");
        // Lists across pages and plain calls, with `_meta` on every request.
        let tools = client.all_tools().await.unwrap();
        assert_eq!(tools.len(), 8, "{tools:?}");
        let sum = client
            .call_tool("add", json!({"a": 2, "b": 40}))
            .await
            .unwrap();
        assert_eq!(text(&sum.content), "42");
        // No session to ask the client on: the server answers input_required three
        // times (elicitation, sampling, roots, one per round); the client fulfils each
        // with its handlers and calls again with the answers and the requestState.
        let asked = client.call_tool("ask", ()).await.unwrap();
        let asked: Value = serde_json::from_str(text(&asked.content)).unwrap();
        assert_eq!(
            asked["content"],
            json!({"name": "Ada", "age": 36, "score": 9.5, "ok": true, "color": "blue"}),
            "{asked}"
        );
        assert_eq!(asked["model"], "round-model");
        assert_eq!(asked["roots"], 1);
        // The methods 2026-07-28 removed are refused by the client: nothing is sent.
        let before = sent.methods();
        assert!(before.contains(&"tools/call".to_owned()), "{before:?}");
        let err = client.ping().await.unwrap_err();
        assert!(matches!(err, ClientError::SessionOnly("ping")), "{err}");
        let err = client
            .set_logging_level(LoggingLevel::Info)
            .await
            .unwrap_err();
        assert!(
            matches!(err, ClientError::SessionOnly("logging/setLevel")),
            "{err}"
        );
        let err = client.subscribe("memo://a").await.unwrap_err();
        assert!(
            matches!(err, ClientError::SessionOnly("resources/subscribe")),
            "{err}"
        );
        assert_eq!(sent.methods(), before, "nothing was sent");
        // The server refuses them too, when sent anyway (a raw call on the connection).
        let params = json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }});
        let err = conn
            .call_raw(
                "ping",
                Some(&RawValue::from_string(params.to_string()).unwrap()),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, CallError::Rpc(e) if e.code == -32601),
            "{err}"
        );
    });
}

#[test]
fn a_stateless_client_without_the_handler_asked_for_says_so() {
    run(async {
        // Declares nothing: the server refuses the tool that needs elicitation (-32021),
        // as on a session.
        let mcp = ClientBuilder::new("plain", "1");
        let server = server();
        let client = mcp.discover(open(&server, &mcp).await).await.unwrap();
        let err = client.call_tool("ask", ()).await.unwrap_err();
        assert_eq!(err.rpc().map(|e| e.code), Some(-32021), "{err}");
    });
}

#[test]
fn a_client_without_callbacks_declares_nothing_and_the_server_says_so() {
    run(async {
        let mcp = ClientBuilder::new("plain", "1");
        assert_eq!(serde_json::to_value(mcp.capabilities()).unwrap(), json!({}));
        let server = server();
        let client = connect(&server, &mcp).await;
        // The tool needs elicitation the client did not declare: -32021 naming it.
        let err = client.call_tool("ask", ()).await.unwrap_err();
        let rpc = err.rpc().expect("a JSON-RPC error");
        assert_eq!(rpc.code, -32021, "{err}");
        assert!(!client.set_roots(Vec::new()).await.unwrap());
        // Values of every kind a form field may default to.
        let form: ElicitRequestParams = serde_json::from_value(json!({"message": "m",
            "requestedSchema": {"type": "object", "properties": {
                "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]},
                    "default": ["y"]}}}}))
        .unwrap();
        assert_eq!(
            form.defaults()["tags"],
            ElicitValue::StringArray(vec!["y".into()])
        );
    });
}

/// A server whose lists never end: `tools/list` hands out a new cursor on every page,
/// `resources/list` repeats its cursor, `prompts/list` sends 3,000 items a page. Each counts
/// the pages it was asked for.
async fn connect_to_endless_lists(pages: Arc<[AtomicUsize; 3]>) -> McpClient {
    let mut router = AsyncRouter::new();
    let raw = |v: Value| RawValue::from_string(v.to_string()).unwrap();
    router
        .raw_method("initialize", move |_| async move {
            Ok(raw(json!({"protocolVersion": "2025-11-25", "capabilities":
                {"tools": {}, "resources": {}, "prompts": {}},
                "serverInfo": {"name": "endless", "version": "1"}})))
        })
        .unwrap();
    router
        .raw_method("ping", move |_| async move { Ok(raw(json!({}))) })
        .unwrap();
    let p = pages.clone();
    router
        .raw_method("tools/list", move |_| {
            let n = p[0].fetch_add(1, Ordering::SeqCst);
            async move {
                Ok(raw(json!({"tools": [{"name": format!("t{n}"),
                    "inputSchema": {"type": "object"}}], "nextCursor": format!("c{n}")})))
            }
        })
        .unwrap();
    let p = pages.clone();
    router
        .raw_method("resources/list", move |_| {
            p[1].fetch_add(1, Ordering::SeqCst);
            async move { Ok(raw(json!({"resources": [], "nextCursor": "same"}))) }
        })
        .unwrap();
    let p = pages.clone();
    router
        .raw_method("prompts/list", move |_| {
            let n = p[2].fetch_add(1, Ordering::SeqCst);
            async move {
                let prompts: Vec<Value> = (0..3000)
                    .map(|i| json!({"name": format!("p{i}")}))
                    .collect();
                Ok(raw(
                    json!({"prompts": prompts, "nextCursor": format!("c{n}")}),
                ))
            }
        })
        .unwrap();
    let mcp = ClientBuilder::new("pager", "1");
    let client = support::loopback(router, mcp.router()).await;
    mcp.initialize(client).await.unwrap()
}

#[test]
fn lists_that_never_end_stop_at_the_page_item_and_cursor_bounds() {
    run(async {
        let pages = Arc::new([
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        ]);
        let client = connect_to_endless_lists(pages.clone()).await;
        // A fresh cursor on every page: stopped after MAX_PAGES pages.
        let err = client.all_tools().await.unwrap_err();
        assert!(
            matches!(err, ClientError::TooManyPages("tools/list")),
            "{err}"
        );
        assert_eq!(pages[0].load(Ordering::SeqCst), MAX_PAGES);
        // A cursor that does not move on: stopped at the second page.
        let err = client.all_resources().await.unwrap_err();
        assert!(
            matches!(err, ClientError::TooManyPages("resources/list")),
            "{err}"
        );
        assert_eq!(pages[1].load(Ordering::SeqCst), 2);
        // 3,000 items a page: stopped once past MAX_ITEMS (34 pages), long before MAX_PAGES.
        let err = client.all_prompts().await.unwrap_err();
        assert!(
            matches!(err, ClientError::TooManyPages("prompts/list")),
            "{err}"
        );
        assert_eq!(pages[2].load(Ordering::SeqCst), MAX_ITEMS / 3000 + 1);
        // The session still works, and one page at a time is not bounded.
        client.ping().await.unwrap();
        let page = client.list_tools(Some("c7")).await.unwrap();
        assert_eq!(
            page.next_cursor.as_deref(),
            Some(format!("c{MAX_PAGES}").as_str())
        );
    });
}
