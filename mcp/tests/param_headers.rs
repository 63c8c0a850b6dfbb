//! SEP-2243 on the typed client (revision 2026-07-28): the `x-mcp-header` marks of the tools
//! a stateless client lists give each `tools/call` its `Mcp-Param-*` headers (plain, or
//! `=?base64?…?=`; integers and booleans as their JSON text; none for a null or absent
//! argument), and the tools whose marks break the rules are left out of the listing and
//! never called. Against a scripted server over loopback TCP.
#![cfg(not(target_arch = "wasm32"))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod support;
use support::run;

use sansrpc::RawValue;
use sansrpc_futures::AsyncRouter;
use sansrpc_mcp::client::{ClientBuilder, ClientError, McpClient};
use sansrpc_mcp::streamable::ParamHeader;
use sansrpc_mcp::types::{JsonObject, Tool};
use serde_json::{json, Value};

fn raw(v: Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string()).unwrap()
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// A tool `name` whose input schema has `properties`.
fn tool(name: &str, properties: Value) -> Value {
    json!({"name": name, "inputSchema": {"type": "object", "properties": properties}})
}

/// The marked tool of the tests: every kind of value, a nested argument, an unmarked one.
fn weather() -> Value {
    tool(
        "weather",
        json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "greeting": {"type": ["string", "null"], "x-mcp-header": "Greeting"},
            "options": {"type": "object", "properties": {
                "limit": {"type": "integer", "x-mcp-header": "Limit"}}},
            "query": {"type": "string"},
        }),
    )
}

/// Tools whose marks each break one rule, with the rule.
fn invalid_tools() -> Vec<(Value, &'static str)> {
    let one = |mark: Value, kind: Value| json!({"value": {"type": kind, "x-mcp-header": mark}});
    vec![
        (tool("empty", one(json!(""), json!("string"))), "empty"),
        (
            tool("not_a_string", one(json!(42), json!("string"))),
            "not a string",
        ),
        (
            tool("space", one(json!("My Region"), json!("string"))),
            "tchar",
        ),
        (
            tool("colon", one(json!("Region:Primary"), json!("string"))),
            "tchar",
        ),
        (
            tool("non_ascii", one(json!("Région"), json!("string"))),
            "tchar",
        ),
        (
            tool("control", one(json!("Region\t1"), json!("string"))),
            "tchar",
        ),
        (
            tool("crlf", one(json!("Region\r\n"), json!("string"))),
            "tchar",
        ),
        (tool("object", one(json!("Data"), json!("object"))), "type"),
        (tool("array", one(json!("Items"), json!("array"))), "type"),
        (tool("null", one(json!("Nil"), json!("null"))), "type"),
        (tool("number", one(json!("Score"), json!("number"))), "type"),
        (
            tool("two_types", one(json!("Two"), json!(["string", "integer"]))),
            "type",
        ),
        (
            tool("untyped", json!({"value": {"x-mcp-header": "Untyped"}})),
            "type",
        ),
        (
            tool(
                "duplicate",
                json!({"a": {"type": "string", "x-mcp-header": "Region"},
                       "b": {"type": "string", "x-mcp-header": "Region"}}),
            ),
            "twice",
        ),
        (
            tool(
                "duplicate_case",
                json!({"a": {"type": "string", "x-mcp-header": "MyField"},
                       "b": {"type": "string", "x-mcp-header": "myfield"}}),
            ),
            "twice",
        ),
        (
            tool(
                "in_items",
                json!({"list": {"type": "array",
                    "items": {"type": "string", "x-mcp-header": "Item"}}}),
            ),
            "not reached",
        ),
        (
            tool(
                "in_any_of",
                json!({"v": {"anyOf": [{"type": "string", "x-mcp-header": "V"}]}}),
            ),
            "not reached",
        ),
        (
            json!({"name": "in_defs", "inputSchema": {"type": "object",
                "$defs": {"r": {"type": "string", "x-mcp-header": "R"}},
                "properties": {"r": {"$ref": "#/$defs/r"}}}}),
            "not reached",
        ),
        (
            json!({"name": "in_additional", "inputSchema": {"type": "object",
                "additionalProperties": {"type": "string", "x-mcp-header": "Extra"}}}),
            "not reached",
        ),
        (
            json!({"name": "on_root", "inputSchema": {"type": "object",
                "x-mcp-header": "Root"}}),
            "root",
        ),
    ]
}

/// Tools that keep to the rules though they look close to breaking them.
fn valid_tools() -> Vec<Value> {
    vec![
        weather(),
        tool("plain", json!({"a": {"type": "string"}})),
        // A property named `x-mcp-header` is no mark; nor is data that looks like one.
        tool(
            "lookalikes",
            json!({
                "x-mcp-header": {"type": "string"},
                "e": {"type": "object", "default": {"x-mcp-header": "Not a mark"},
                      "enum": [{"x-mcp-header": "Nor this"}]},
            }),
        ),
        tool(
            "tokens",
            json!({"t": {"type": "string", "x-mcp-header": "A-b_c.d!#$%&'*+^`|~9"}}),
        ),
    ]
}

/// A stateless server (or a session one, `stateless` false) listing `tools` on two pages
/// and answering every `tools/call`; `calls` counts them.
async fn connect(tools: Vec<Value>, stateless: bool, calls: Arc<AtomicUsize>) -> McpClient {
    let mut router = AsyncRouter::new();
    router
        .raw_method("server/discover", |_| async {
            Ok(raw(
                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "marks", "version": "1"}}),
            ))
        })
        .unwrap();
    router
        .raw_method("initialize", |_| async {
            Ok(raw(
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "marks", "version": "1"}}),
            ))
        })
        .unwrap();
    let half = tools.len() / 2;
    let pages = [tools[..half].to_vec(), tools[half..].to_vec()];
    router
        .raw_method("tools/list", move |params| {
            let second = params.is_some_and(|p| p.get().contains("\"cursor\""));
            let result = if second {
                json!({"resultType": "complete", "tools": pages[1]})
            } else {
                json!({"resultType": "complete", "tools": pages[0], "nextCursor": "2"})
            };
            async move { Ok(raw(result)) }
        })
        .unwrap();
    router
        .raw_method("tools/call", move |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                Ok(raw(json!({"resultType": "complete",
                    "content": [{"type": "text", "text": "done"}]})))
            }
        })
        .unwrap();
    let mcp = ClientBuilder::new("marks-client", "1");
    let client = support::loopback(router, mcp.router()).await;
    if stateless {
        mcp.discover(client).await.unwrap()
    } else {
        mcp.initialize(client).await.unwrap()
    }
}

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

fn sorted(mut headers: Vec<(String, String)>) -> Vec<(String, String)> {
    headers.sort();
    headers
}

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    sorted(
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    )
}

#[test]
fn a_marked_tool_gives_its_calls_the_exact_headers() {
    run(async {
        let calls = Arc::new(AtomicUsize::new(0));
        let client = connect(valid_tools(), true, calls.clone()).await;
        let tools = client.all_tools().await.unwrap();
        assert_eq!(names(&tools), ["weather", "plain", "lookalikes", "tokens"]);
        let marks = client.param_headers();

        let arguments = object(json!({
            "region": "us-west1",
            "priority": 42,
            "verbose": false,
            "greeting": "Hello, 世界",
            "options": {"limit": -7},
            "query": "SELECT 1",
        }));
        assert_eq!(
            sorted(marks.for_call("weather", Some(&arguments))),
            headers(&[
                ("Mcp-Param-Region", "us-west1"),
                ("Mcp-Param-Priority", "42"),
                ("Mcp-Param-Verbose", "false"),
                ("Mcp-Param-Greeting", "=?base64?SGVsbG8sIOS4lueVjA==?="),
                ("Mcp-Param-Limit", "-7"),
            ])
        );
        // Whitespace at either end, control characters and the sentinel itself are
        // base64; inner spaces and the empty string stay plain; 3.0 is the integer 3; a null
        // or absent argument has no header.
        let cases: [(Value, &str, Option<&str>); 9] = [
            (json!(" padded "), "region", Some("=?base64?IHBhZGRlZCA=?=")),
            (
                json!("line1\nline2"),
                "region",
                Some("=?base64?bGluZTEKbGluZTI=?="),
            ),
            (
                json!("=?base64?literal?="),
                "region",
                Some("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
            ),
            (json!("us west 1"), "region", Some("us west 1")),
            (json!(""), "region", Some("")),
            (json!(true), "verbose", Some("true")),
            (json!(3.0), "priority", Some("3")),
            (
                json!(9007199254740991_i64),
                "priority",
                Some("9007199254740991"),
            ),
            (Value::Null, "greeting", None),
        ];
        for (value, argument, expected) in cases {
            let arguments = object(json!({ argument: value }));
            let got = marks.for_call("weather", Some(&arguments));
            let expected: Vec<(String, String)> = expected
                .map(|v| {
                    let name = match argument {
                        "region" => "Mcp-Param-Region",
                        "verbose" => "Mcp-Param-Verbose",
                        "priority" => "Mcp-Param-Priority",
                        _ => "Mcp-Param-Greeting",
                    };
                    (name.to_owned(), v.to_owned())
                })
                .into_iter()
                .collect();
            assert_eq!(got, expected, "{argument}: {value}");
        }
        assert_eq!(marks.for_call("weather", None), []);
        assert_eq!(
            marks.for_call("weather", Some(&object(json!({"query": "x"})))),
            []
        );

        // What a transport reads: the frame of the call, `_meta` and all.
        let frame = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "weather", "arguments": {"region": "eu", "options": {"limit": 5}},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        assert_eq!(
            sorted(marks.for_frame(frame.to_string().as_bytes())),
            headers(&[("Mcp-Param-Region", "eu"), ("Mcp-Param-Limit", "5")])
        );
        let other = json!({"jsonrpc": "2.0", "id": 8, "method": "prompts/get",
            "params": {"name": "weather", "arguments": {"region": "eu"}}});
        assert_eq!(marks.for_frame(other.to_string().as_bytes()), []);
        assert_eq!(marks.for_frame(b"not json"), []);

        // The call itself goes through.
        let result = client
            .call_tool("weather", json!({"region": "us-west1", "priority": 1}))
            .await
            .unwrap();
        assert_eq!(result.is_error, None);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn tools_without_marks_give_no_headers() {
    run(async {
        let calls = Arc::new(AtomicUsize::new(0));
        let client = connect(valid_tools(), true, calls.clone()).await;
        client.all_tools().await.unwrap();
        let marks = client.param_headers();
        let arguments = object(json!({"a": "x", "x-mcp-header": "y", "e": {}}));
        for name in ["plain", "lookalikes", "never-listed"] {
            assert_eq!(marks.for_call(name, Some(&arguments)), [], "{name}");
            assert_eq!(marks.mirrors(name), [], "{name}");
            assert_eq!(marks.rejection(name), None, "{name}");
        }
        let frame = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "plain", "arguments": {"a": "x"}}});
        assert_eq!(marks.for_frame(frame.to_string().as_bytes()), []);
        client.call_tool("plain", json!({"a": "x"})).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn tools_with_invalid_marks_are_left_out_and_never_called() {
    run(async {
        let calls = Arc::new(AtomicUsize::new(0));
        let invalid = invalid_tools();
        let mut listed: Vec<Value> = invalid.iter().map(|(t, _)| t.clone()).collect();
        listed.insert(3, weather());
        listed.push(tool(
            "valid_tool",
            json!({"region": {"type": "string", "x-mcp-header": "Region"}}),
        ));
        let client = connect(listed, true, calls.clone()).await;

        let tools = client.all_tools().await.unwrap();
        assert_eq!(names(&tools), ["weather", "valid_tool"]);
        let marks = client.param_headers();
        for (tool, rule) in &invalid {
            let name = tool["name"].as_str().unwrap();
            let reason = marks
                .rejection(name)
                .unwrap_or_else(|| panic!("{name} was not rejected"));
            assert!(reason.contains(rule), "{name}: {reason}");
            assert_eq!(
                marks.for_call(name, Some(&object(json!({"value": "x"})))),
                []
            );
            let err = client
                .call_tool(name, json!({"value": "x"}))
                .await
                .unwrap_err();
            assert!(
                matches!(&err, ClientError::RejectedTool { name: n, .. } if n == name),
                "{name}: {err}"
            );
        }
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "no rejected tool was called"
        );

        // One page at a time, the same.
        let first = client.list_tools(None).await.unwrap();
        let second = client
            .list_tools(first.next_cursor.as_deref())
            .await
            .unwrap();
        assert_eq!(names(&first.tools), ["weather"]);
        assert_eq!(names(&second.tools), ["valid_tool"]);

        client
            .call_tool("valid_tool", json!({"region": "x"}))
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn an_argument_no_header_can_carry_is_refused_before_sending() {
    run(async {
        let calls = Arc::new(AtomicUsize::new(0));
        let client = connect(vec![weather()], true, calls.clone()).await;
        client.all_tools().await.unwrap();
        for arguments in [
            json!({"region": {"nested": 1}}),
            json!({"region": ["a"]}),
            json!({"priority": 1.5}),
            json!({"priority": 9007199254740992_i64}),
            json!({"options": {"limit": -9007199254740992_i64}}),
        ] {
            let err = client.call_tool("weather", &arguments).await.unwrap_err();
            assert!(
                matches!(err, ClientError::Arguments(_)),
                "{arguments}: {err}"
            );
        }
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn the_session_revision_ignores_the_marks() {
    run(async {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut listed = valid_tools();
        listed.extend(invalid_tools().into_iter().map(|(t, _)| t));
        let count = listed.len();
        let client = connect(listed, false, calls.clone()).await;
        assert_eq!(client.all_tools().await.unwrap().len(), count);
        let arguments = object(json!({"region": "x"}));
        assert_eq!(
            client.param_headers().for_call("weather", Some(&arguments)),
            []
        );
        client
            .call_tool("empty", json!({"value": "x"}))
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn the_marks_of_one_tool_read_from_its_schema() {
    let weather: Tool = serde_json::from_value(weather()).unwrap();
    let mut mirrors = weather.param_headers().unwrap();
    mirrors.sort_by(|a, b| a.header.cmp(&b.header));
    let mirror = |path: &[&str], header: &str| ParamHeader {
        tool: "weather".to_owned(),
        path: path.iter().map(|p| p.to_string()).collect(),
        header: header.to_owned(),
    };
    assert_eq!(
        mirrors,
        [
            mirror(&["greeting"], "Greeting"),
            mirror(&["options", "limit"], "Limit"),
            mirror(&["priority"], "Priority"),
            mirror(&["region"], "Region"),
            mirror(&["verbose"], "Verbose"),
        ]
    );
    for (tool, rule) in invalid_tools() {
        let tool: Tool = serde_json::from_value(tool).unwrap();
        let reason = tool.param_headers().unwrap_err();
        assert!(reason.contains(rule), "{}: {reason}", tool.name);
    }
}
