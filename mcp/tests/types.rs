//! Round-trip tests of the MCP message types against real messages: the 2026-07-28 schema
//! examples, every JSON-RPC message in the 2025-11-25 and 2026-07-28 specification pages,
//! and the exact messages the MCP conformance suite sends or expects.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use sansrpc_mcp::types::*;

// ---------------------------------------------------------------------------------------
// Helpers

/// Deserializes `value` as `T`, serializes it again, and asserts the JSON is unchanged.
#[track_caller]
fn roundtrip<T: DeserializeOwned + Serialize>(value: &Value) -> T {
    let typed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| {
        panic!(
            "{} does not deserialize {value}: {e}",
            std::any::type_name::<T>()
        )
    });
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        &back,
        value,
        "{} does not round-trip",
        std::any::type_name::<T>()
    );
    // Through text too, as a transport would.
    let text = serde_json::to_string(&typed).unwrap();
    let again: T = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_value(&again).unwrap(), *value);
    typed
}

/// Parses `text` as JSON (fixtures below are written as JSON text).
fn j(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn check_id(message: &Value) {
    assert_eq!(message["jsonrpc"], "2.0", "{message}");
    if let Some(id) = message.get("id") {
        let parsed: RequestId = roundtrip(id);
        assert_eq!(serde_json::to_value(parsed).unwrap(), *id);
    }
}

/// Round-trips the params of a request or notification `method`.
fn check_params(method: &str, params: Option<&Value>) {
    let empty = json!({});
    let p = params.unwrap_or(&empty);
    match method {
        methods::INITIALIZE => drop(roundtrip::<InitializeRequestParams>(p)),
        methods::PING | methods::SERVER_DISCOVER | methods::ROOTS_LIST => {
            drop(roundtrip::<RequestParams>(p))
        }
        methods::SUBSCRIPTIONS_LISTEN => drop(roundtrip::<SubscriptionsListenRequestParams>(p)),
        methods::TOOLS_LIST
        | methods::PROMPTS_LIST
        | methods::RESOURCES_LIST
        | methods::RESOURCES_TEMPLATES_LIST
        | methods::TASKS_LIST => drop(roundtrip::<PaginatedRequestParams>(p)),
        methods::TOOLS_CALL => drop(roundtrip::<CallToolRequestParams>(p)),
        methods::RESOURCES_READ => drop(roundtrip::<ReadResourceRequestParams>(p)),
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
            drop(roundtrip::<SubscribeRequestParams>(p))
        }
        methods::PROMPTS_GET => drop(roundtrip::<GetPromptRequestParams>(p)),
        methods::COMPLETION_COMPLETE => drop(roundtrip::<CompleteRequestParams>(p)),
        methods::LOGGING_SET_LEVEL => drop(roundtrip::<SetLevelRequestParams>(p)),
        methods::SAMPLING_CREATE_MESSAGE => drop(roundtrip::<CreateMessageRequestParams>(p)),
        methods::ELICITATION_CREATE => drop(roundtrip::<ElicitRequestParams>(p)),
        methods::TASKS_GET | methods::TASKS_RESULT | methods::TASKS_CANCEL => {
            drop(roundtrip::<TaskIdParams>(p))
        }
        notifications::INITIALIZED
        | notifications::TOOLS_LIST_CHANGED
        | notifications::PROMPTS_LIST_CHANGED
        | notifications::RESOURCES_LIST_CHANGED
        | notifications::ROOTS_LIST_CHANGED => drop(roundtrip::<NotificationParams>(p)),
        notifications::CANCELLED => drop(roundtrip::<CancelledNotificationParams>(p)),
        notifications::PROGRESS => drop(roundtrip::<ProgressNotificationParams>(p)),
        notifications::MESSAGE => drop(roundtrip::<LoggingMessageNotificationParams>(p)),
        notifications::RESOURCES_UPDATED => drop(roundtrip::<ResourceUpdatedNotificationParams>(p)),
        notifications::ELICITATION_COMPLETE => {
            drop(roundtrip::<ElicitationCompleteNotificationParams>(p))
        }
        notifications::TASKS_STATUS => drop(roundtrip::<TaskStatusNotificationParams>(p)),
        notifications::SUBSCRIPTIONS_ACKNOWLEDGED => {
            drop(roundtrip::<SubscriptionsAcknowledgedNotificationParams>(p))
        }
        // The progress pages use a placeholder method; its params are plain request params.
        "some_method" => drop(roundtrip::<RequestParams>(p)),
        other => panic!("no params type for method {other}"),
    }
}

/// Round-trips the result of a request `method`.
fn check_result(method: &str, result: &Value) {
    match method {
        methods::INITIALIZE => drop(roundtrip::<InitializeResult>(result)),
        methods::PING
        | methods::LOGGING_SET_LEVEL
        | methods::RESOURCES_SUBSCRIBE
        | methods::RESOURCES_UNSUBSCRIBE => {
            drop(roundtrip::<EmptyResult>(result));
        }
        methods::SERVER_DISCOVER => drop(roundtrip::<DiscoverResult>(result)),
        methods::SUBSCRIPTIONS_LISTEN => drop(roundtrip::<SubscriptionsListenResult>(result)),
        methods::TOOLS_LIST => drop(roundtrip::<ListToolsResult>(result)),
        methods::PROMPTS_LIST => drop(roundtrip::<ListPromptsResult>(result)),
        methods::RESOURCES_LIST => drop(roundtrip::<ListResourcesResult>(result)),
        methods::RESOURCES_TEMPLATES_LIST => drop(roundtrip::<ListResourceTemplatesResult>(result)),
        methods::TOOLS_CALL if result.get("task").is_some() => {
            drop(roundtrip::<CreateTaskResult>(result))
        }
        methods::TOOLS_CALL => check_mrtr::<CallToolResult>(result),
        methods::PROMPTS_GET => check_mrtr::<GetPromptResult>(result),
        methods::RESOURCES_READ => check_mrtr::<ReadResourceResult>(result),
        methods::COMPLETION_COMPLETE => drop(roundtrip::<CompleteResult>(result)),
        methods::SAMPLING_CREATE_MESSAGE => drop(roundtrip::<CreateMessageResult>(result)),
        methods::ELICITATION_CREATE => drop(roundtrip::<ElicitResult>(result)),
        methods::ROOTS_LIST => drop(roundtrip::<ListRootsResult>(result)),
        methods::TASKS_GET | methods::TASKS_CANCEL => drop(roundtrip::<TaskResult>(result)),
        methods::TASKS_RESULT => {
            let payload: GetTaskPayloadResult = roundtrip(result);
            // The payload of a tools/call task is a CallToolResult.
            if payload.extra.contains_key("content") {
                let call: CallToolResult = roundtrip(result);
                let related = &call.meta.unwrap().extra[meta_keys::RELATED_TASK];
                let _: RelatedTaskMetadata = roundtrip(related);
            }
        }
        methods::TASKS_LIST => drop(roundtrip::<ListTasksResult>(result)),
        other => panic!("no result type for method {other}"),
    }
}

/// A result of a request that may need input: read by `resultType`.
fn check_mrtr<T>(result: &Value)
where
    T: DeserializeOwned + Serialize + std::fmt::Debug,
{
    let r: ResultOrInputRequired<T> = roundtrip(result);
    match (&r, result.get("resultType").and_then(Value::as_str)) {
        (ResultOrInputRequired::InputRequired(_), Some("input_required")) => {}
        (ResultOrInputRequired::Complete(_), Some("complete") | None) => {}
        _ => panic!("wrong variant for {result}: {r:?}"),
    }
    if !matches!(r, ResultOrInputRequired::InputRequired(_)) {
        let _: T = roundtrip(result);
    }
}

/// Checks a JSON-RPC error object and, for the MCP codes, its `data`.
fn check_error(error: &Value) {
    let code = error["code"].as_i64().expect("integer code");
    assert!(error["message"].is_string());
    let data = error.get("data");
    match code {
        error_codes::UNSUPPORTED_PROTOCOL_VERSION => {
            drop(roundtrip::<UnsupportedProtocolVersionData>(data.unwrap()))
        }
        error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY => drop(roundtrip::<
            MissingRequiredClientCapabilityData,
        >(data.unwrap())),
        error_codes::URL_ELICITATION_REQUIRED => {
            drop(roundtrip::<UrlElicitationRequiredData>(data.unwrap()))
        }
        error_codes::RESOURCE_NOT_FOUND => drop(roundtrip::<ResourceNotFoundData>(data.unwrap())),
        error_codes::INVALID_PARAMS => match data {
            Some(d) if d.get("uri").is_some() => drop(roundtrip::<ResourceNotFoundData>(d)),
            // 2025-11-25 answers an unsupported `initialize` version with -32602.
            Some(d) if d.get("supported").is_some() => {
                drop(roundtrip::<UnsupportedProtocolVersionData>(d))
            }
            _ => {}
        },
        error_codes::HEADER_MISMATCH => assert!(data.is_none()),
        _ => {}
    }
}

/// Checks one whole JSON-RPC message; `method` is the request's for a response.
fn check_message(kind: &str, method: Option<&str>, message: &Value) {
    check_id(message);
    match kind {
        "request" | "notification" => {
            let m = message["method"].as_str().unwrap();
            check_params(m, message.get("params"));
        }
        "result" => check_result(
            method.expect("result without a request"),
            &message["result"],
        ),
        "error" => check_error(&message["error"]),
        other => panic!("kind {other}"),
    }
}

// ---------------------------------------------------------------------------------------
// The 2026-07-28 schema examples

/// Checks one file of `schema/2026-07-28/examples/<Type>/`.
fn check_schema_example(ty: &str, v: &Value) {
    match ty {
        "AudioContent" | "ImageContent" | "TextContent" | "EmbeddedResource" | "ResourceLink" => {
            let block: ContentBlock = roundtrip(v);
            let expected = match ty {
                "AudioContent" => matches!(block, ContentBlock::Audio(_)),
                "ImageContent" => matches!(block, ContentBlock::Image(_)),
                "TextContent" => matches!(block, ContentBlock::Text(_)),
                "EmbeddedResource" => matches!(block, ContentBlock::Resource(_)),
                _ => matches!(block, ContentBlock::ResourceLink(_)),
            };
            assert!(expected, "{ty}: {block:?}");
        }
        "ToolUseContent" | "ToolResultContent" => {
            let block: SamplingMessageContentBlock = roundtrip(v);
            assert!(matches!(
                (ty, block),
                ("ToolUseContent", SamplingMessageContentBlock::ToolUse(_))
                    | (
                        "ToolResultContent",
                        SamplingMessageContentBlock::ToolResult(_)
                    )
            ));
        }
        "BlobResourceContents" => {
            assert!(matches!(roundtrip(v), ResourceContents::Blob(_)));
            drop(roundtrip::<BlobResourceContents>(v));
        }
        "TextResourceContents" => {
            assert!(matches!(roundtrip(v), ResourceContents::Text(_)));
            drop(roundtrip::<TextResourceContents>(v));
        }
        "BooleanSchema"
        | "NumberSchema"
        | "StringSchema"
        | "TitledMultiSelectEnumSchema"
        | "TitledSingleSelectEnumSchema"
        | "UntitledMultiSelectEnumSchema"
        | "UntitledSingleSelectEnumSchema" => {
            let schema: PrimitiveSchemaDefinition = roundtrip(v);
            let variant = match schema {
                PrimitiveSchemaDefinition::String(_) => "StringSchema",
                PrimitiveSchemaDefinition::Number(_) => "NumberSchema",
                PrimitiveSchemaDefinition::Boolean(_) => "BooleanSchema",
                PrimitiveSchemaDefinition::UntitledSingleSelectEnum(_) => {
                    "UntitledSingleSelectEnumSchema"
                }
                PrimitiveSchemaDefinition::TitledSingleSelectEnum(_) => {
                    "TitledSingleSelectEnumSchema"
                }
                PrimitiveSchemaDefinition::LegacyTitledEnum(_) => "LegacyTitledEnumSchema",
                PrimitiveSchemaDefinition::UntitledMultiSelectEnum(_) => {
                    "UntitledMultiSelectEnumSchema"
                }
                PrimitiveSchemaDefinition::TitledMultiSelectEnum(_) => {
                    "TitledMultiSelectEnumSchema"
                }
            };
            assert_eq!(variant, ty);
        }
        "CallToolRequestParams" => drop(roundtrip::<CallToolRequestParams>(v)),
        "CompleteRequestParams" => drop(roundtrip::<CompleteRequestParams>(v)),
        "GetPromptRequestParams" => drop(roundtrip::<GetPromptRequestParams>(v)),
        "PaginatedRequestParams" => drop(roundtrip::<PaginatedRequestParams>(v)),
        "CreateMessageRequestParams" => drop(roundtrip::<CreateMessageRequestParams>(v)),
        "ElicitRequestFormParams" => {
            assert!(matches!(roundtrip(v), ElicitRequestParams::Form(_)));
            drop(roundtrip::<ElicitRequestFormParams>(v));
        }
        "ElicitRequestURLParams" => {
            assert!(matches!(roundtrip(v), ElicitRequestParams::Url(_)));
            drop(roundtrip::<ElicitRequestUrlParams>(v));
        }
        "CancelledNotificationParams" => drop(roundtrip::<CancelledNotificationParams>(v)),
        "LoggingMessageNotificationParams" => {
            drop(roundtrip::<LoggingMessageNotificationParams>(v))
        }
        "ProgressNotificationParams" => drop(roundtrip::<ProgressNotificationParams>(v)),
        "ResourceUpdatedNotificationParams" => {
            drop(roundtrip::<ResourceUpdatedNotificationParams>(v))
        }
        "CallToolResult" => check_result(methods::TOOLS_CALL, v),
        "CompleteResult" => check_result(methods::COMPLETION_COMPLETE, v),
        "DiscoverResult" => check_result(methods::SERVER_DISCOVER, v),
        "GetPromptResult" => check_result(methods::PROMPTS_GET, v),
        "ListPromptsResult" => check_result(methods::PROMPTS_LIST, v),
        "ListResourceTemplatesResult" => check_result(methods::RESOURCES_TEMPLATES_LIST, v),
        "ListResourcesResult" => check_result(methods::RESOURCES_LIST, v),
        "ListToolsResult" => check_result(methods::TOOLS_LIST, v),
        "ReadResourceResult" => check_result(methods::RESOURCES_READ, v),
        "SubscriptionsListenResult" => check_result(methods::SUBSCRIPTIONS_LISTEN, v),
        "CreateMessageResult" => {
            drop(roundtrip::<CreateMessageResult>(v));
            assert!(matches!(roundtrip(v), InputResponse::CreateMessage(_)));
        }
        "ElicitResult" => {
            drop(roundtrip::<ElicitResult>(v));
            assert!(matches!(roundtrip(v), InputResponse::Elicit(_)));
        }
        "ListRootsResult" => {
            drop(roundtrip::<ListRootsResult>(v));
            assert!(matches!(roundtrip(v), InputResponse::ListRoots(_)));
        }
        "InputRequiredResult" => {
            let irr: InputRequiredResult = roundtrip(v);
            assert_eq!(irr.result_type, ResultType::InputRequired);
            assert!(irr.input_requests.is_some() || irr.request_state.is_some());
            check_mrtr::<CallToolResult>(v);
        }
        "InputRequests" => drop(roundtrip::<InputRequests>(v)),
        "InputResponses" => drop(roundtrip::<InputResponses>(v)),
        "CreateMessageRequest" => {
            assert!(matches!(roundtrip(v), InputRequest::CreateMessage(_)))
        }
        "ElicitRequest" => assert!(matches!(roundtrip(v), InputRequest::Elicit(_))),
        "ListRootsRequest" => {
            // The example carries an `id` besides `method` (an input request has none): it
            // is tolerated and dropped.
            let req: InputRequest = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(req, InputRequest::ListRoots(None));
            assert_eq!(
                serde_json::to_value(&req).unwrap(),
                json!({"method": "roots/list"})
            );
        }
        "ClientCapabilities" => drop(roundtrip::<ClientCapabilities>(v)),
        "ServerCapabilities" => drop(roundtrip::<ServerCapabilities>(v)),
        "ModelPreferences" => drop(roundtrip::<ModelPreferences>(v)),
        "Resource" => drop(roundtrip::<Resource>(v)),
        "Root" => drop(roundtrip::<Root>(v)),
        "SamplingMessage" => drop(roundtrip::<SamplingMessage>(v)),
        "Tool" => {
            let tool: Tool = roundtrip(v);
            assert_eq!(tool.input_schema["type"], "object");
        }
        // Bare JSON-RPC error objects.
        "InternalError" | "InvalidParamsError" | "MethodNotFoundError" | "ParseError" => {
            let expected = match ty {
                "InternalError" => error_codes::INTERNAL_ERROR,
                "InvalidParamsError" => error_codes::INVALID_PARAMS,
                "MethodNotFoundError" => error_codes::METHOD_NOT_FOUND,
                _ => error_codes::PARSE_ERROR,
            };
            assert_eq!(v["code"].as_i64(), Some(expected));
            check_error(v);
        }
        // Whole JSON-RPC messages.
        "HeaderMismatchError"
        | "MissingRequiredClientCapabilityError"
        | "UnsupportedProtocolVersionError" => {
            let expected = match ty {
                "HeaderMismatchError" => error_codes::HEADER_MISMATCH,
                "MissingRequiredClientCapabilityError" => {
                    error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY
                }
                _ => error_codes::UNSUPPORTED_PROTOCOL_VERSION,
            };
            assert_eq!(v["error"]["code"].as_i64(), Some(expected));
            check_message("error", None, v);
        }
        t if t.ends_with("ResultResponse") => {
            let method = match t {
                "CallToolResultResponse" => methods::TOOLS_CALL,
                "CompleteResultResponse" => methods::COMPLETION_COMPLETE,
                "DiscoverResultResponse" => methods::SERVER_DISCOVER,
                "GetPromptResultResponse" => methods::PROMPTS_GET,
                "ListPromptsResultResponse" => methods::PROMPTS_LIST,
                "ListResourceTemplatesResultResponse" => methods::RESOURCES_TEMPLATES_LIST,
                "ListResourcesResultResponse" => methods::RESOURCES_LIST,
                "ListToolsResultResponse" => methods::TOOLS_LIST,
                "ReadResourceResultResponse" => methods::RESOURCES_READ,
                "SubscriptionsListenResultResponse" => methods::SUBSCRIPTIONS_LISTEN,
                other => panic!("unmapped {other}"),
            };
            check_message("result", Some(method), v);
        }
        t if t.ends_with("Request") => {
            assert!(
                methods::CLIENT_REQUESTS_2026_07_28.contains(&v["method"].as_str().unwrap()),
                "{v}"
            );
            check_message("request", None, v);
        }
        t if t.ends_with("Notification") => {
            assert!(notifications::SERVER_2026_07_28
                .iter()
                .chain(notifications::CLIENT_2026_07_28)
                .any(|m| v["method"] == *m));
            check_message("notification", None, v);
        }
        other => panic!("no check for schema example type {other}"),
    }
}

#[test]
fn schema_examples_2026_07_28_round_trip() {
    let root = fixtures().join("schema-examples-2026-07-28");
    let mut dirs: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let mut files = 0;
    for dir in &dirs {
        let ty = dir.file_name().unwrap().to_str().unwrap();
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for file in entries {
            let v: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
            check_schema_example(ty, &v);
            files += 1;
        }
    }
    assert_eq!(dirs.len(), 88);
    assert_eq!(files, 129);
}

// ---------------------------------------------------------------------------------------
// Every JSON-RPC message of the specification pages

fn check_docs(revision: &str, expected: usize) {
    let path = fixtures().join(format!("docs-{revision}.json"));
    let entries: Vec<Value> = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(entries.len(), expected);
    for entry in &entries {
        let kind = entry["kind"].as_str().unwrap();
        let method = entry["method"].as_str();
        let message = &entry["message"];
        if kind == "request" {
            // Every request method in the pages is one of the revision's methods.
            let m = method.unwrap();
            let known = match revision {
                "2025-11-25" => methods::CLIENT_REQUESTS_2025_11_25
                    .iter()
                    .chain(methods::SERVER_REQUESTS_2025_11_25)
                    .any(|x| *x == m),
                _ => methods::CLIENT_REQUESTS_2026_07_28.contains(&m),
            };
            assert!(
                known || m == "some_method",
                "{revision}: unknown method {m}"
            );
        }
        if kind == "notification" {
            let m = method.unwrap();
            let known = match revision {
                "2025-11-25" => notifications::SERVER_2025_11_25
                    .iter()
                    .chain(notifications::CLIENT_2025_11_25)
                    .any(|x| *x == m),
                _ => notifications::SERVER_2026_07_28
                    .iter()
                    .chain(notifications::CLIENT_2026_07_28)
                    .any(|x| *x == m),
            };
            assert!(known, "{revision}: unknown notification {m}");
        }
        check_message(kind, method, message);
    }
}

#[test]
fn spec_pages_2025_11_25_round_trip() {
    check_docs("2025-11-25", 74);
}

#[test]
fn spec_pages_2026_07_28_round_trip() {
    check_docs("2026-07-28", 43);
}

// ---------------------------------------------------------------------------------------
// 2025-11-25 messages the pages show with comments (cleaned up), and other 2025 shapes

#[test]
fn url_elicitation_2025_11_25() {
    let request = j(r#"{
        "mode": "url",
        "elicitationId": "550e8400-e29b-41d4-a716-446655440000",
        "url": "https://mcp.example.com/ui/set_api_key",
        "message": "Please provide your API key to continue."
    }"#);
    match roundtrip::<ElicitRequestParams>(&request) {
        ElicitRequestParams::Url(u) => {
            assert_eq!(
                u.elicitation_id.as_deref(),
                Some("550e8400-e29b-41d4-a716-446655440000")
            );
            assert_eq!(u.url, "https://mcp.example.com/ui/set_api_key");
        }
        other => panic!("{other:?}"),
    }

    let error = j(r#"{
        "code": -32042,
        "message": "This request requires more information.",
        "data": {
          "elicitations": [
            {
              "mode": "url",
              "elicitationId": "550e8400-e29b-41d4-a716-446655440000",
              "url": "https://mcp.example.com/connect?elicitationId=550e8400-e29b-41d4-a716-446655440000",
              "message": "Authorization is required to access your Example Co files."
            }
          ]
        }
    }"#);
    check_error(&error);
    let data: UrlElicitationRequiredData = roundtrip(&error["data"]);
    assert_eq!(data.elicitations.len(), 1);

    let complete = j(r#"{"elicitationId": "550e8400-e29b-41d4-a716-446655440000"}"#);
    roundtrip::<ElicitationCompleteNotificationParams>(&complete);

    // A 2026-07-28 URL elicitation has no elicitationId.
    let modern = j(r#"{"mode": "url", "url": "https://x.example/", "message": "m"}"#);
    match roundtrip::<ElicitRequestParams>(&modern) {
        ElicitRequestParams::Url(u) => assert!(u.elicitation_id.is_none()),
        other => panic!("{other:?}"),
    }

    // URL mode needs its url; an unknown mode is an error; no mode means form.
    assert!(
        serde_json::from_value::<ElicitRequestParams>(json!({"mode": "url", "message": "m"}))
            .is_err()
    );
    assert!(serde_json::from_value::<ElicitRequestParams>(
        json!({"mode": "telepathy", "message": "m", "url": "u"})
    )
    .is_err());
    assert!(serde_json::from_value::<ElicitRequestParams>(
        json!({"message": "m", "url": "https://x.example/"})
    )
    .is_err());
}

#[test]
fn initialize_and_tasks_2025_11_25() {
    // `initialize` with every capability of 2025-11-25 (from basic/lifecycle.mdx).
    let params = j(r#"{
        "protocolVersion": "2025-11-25",
        "capabilities": {
          "roots": {"listChanged": true},
          "sampling": {},
          "elicitation": {"form": {}, "url": {}},
          "tasks": {"requests": {"elicitation": {"create": {}}, "sampling": {"createMessage": {}}}}
        },
        "clientInfo": {"name": "ExampleClient", "title": "Example Client Display Name",
          "version": "1.0.0", "description": "An example MCP client application",
          "icons": [{"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]}],
          "websiteUrl": "https://example.com"}
    }"#);
    let p: InitializeRequestParams = roundtrip(&params);
    assert_eq!(p.protocol_version, version::LATEST);
    assert_eq!(p.capabilities.roots.unwrap().list_changed, Some(true));
    assert!(p
        .capabilities
        .tasks
        .unwrap()
        .requests
        .unwrap()
        .sampling
        .is_some());

    // A tool with execution.taskSupport, and a task-augmented tools/call.
    let tool = j(r#"{"name": "slow", "inputSchema": {"type": "object"},
                     "execution": {"taskSupport": "optional"}}"#);
    let t: Tool = roundtrip(&tool);
    assert_eq!(
        t.execution.unwrap().task_support,
        Some(TaskSupport::Optional)
    );
    let call =
        j(r#"{"name": "get_weather", "arguments": {"city": "New York"}, "task": {"ttl": 60000}}"#);
    let c: CallToolRequestParams = roundtrip(&call);
    assert_eq!(c.task.unwrap().ttl, Some(60000));

    // A task with unlimited retention writes `ttl: null`.
    let task = j(
        r#"{"taskId": "t", "status": "input_required", "createdAt": "2025-11-25T10:30:00Z",
                     "lastUpdatedAt": "2025-11-25T10:30:00Z", "ttl": null}"#,
    );
    let t: Task = roundtrip(&task);
    assert_eq!(t.ttl, None);
    assert_eq!(t.status, TaskStatus::InputRequired);
    roundtrip::<TaskResult>(&task);

    // `notifications/cancelled` for a task-era request may omit requestId.
    roundtrip::<CancelledNotificationParams>(&j(r#"{"reason": "no longer needed"}"#));

    // A 2025 client result carries `_meta` (it is a Result there).
    let sampled = j(r#"{"_meta": {"k": 1}, "role": "assistant",
                        "content": {"type": "text", "text": "hi"}, "model": "m"}"#);
    roundtrip::<CreateMessageResult>(&sampled);
}

// ---------------------------------------------------------------------------------------
// What the conformance suite (0.2.0-alpha.12) sends and expects

const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const AUDIO: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

#[test]
fn conformance_tool_results() {
    let results = [
        json!({"content":[{"type":"text","text":"This is a simple text response for testing."}]}),
        json!({"content":[{"type":"image","data":IMAGE,"mimeType":"image/png"}]}),
        json!({"content":[{"type":"audio","data":AUDIO,"mimeType":"audio/wav"}]}),
        json!({"content":[{"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}}]}),
        json!({"content":[
            {"type":"text","text":"Multiple content types test:"},
            {"type":"image","data":IMAGE,"mimeType":"image/png"},
            {"type":"resource","resource":{"uri":"test://mixed-content-resource","mimeType":"application/json","text":"{\"test\":\"data\",\"value\":123}"}}
        ]}),
        json!({"isError":true,"content":[{"type":"text","text":"This tool intentionally returns an error for testing"}]}),
        json!({"resultType":"complete","content":[{"type":"text","text":"Hello, Alice!"}]}),
    ];
    for r in &results {
        check_result(methods::TOOLS_CALL, r);
    }

    // Built with the constructors, they serialize to exactly what the suite expects.
    assert_eq!(
        serde_json::to_value(CallToolResult::text(
            "This is a simple text response for testing."
        ))
        .unwrap(),
        results[0]
    );
    assert_eq!(
        serde_json::to_value(CallToolResult::success(vec![ContentBlock::image(
            IMAGE,
            "image/png"
        )]))
        .unwrap(),
        results[1]
    );
    assert_eq!(
        serde_json::to_value(CallToolResult::success(vec![ContentBlock::audio(
            AUDIO,
            "audio/wav"
        )]))
        .unwrap(),
        results[2]
    );
    assert_eq!(
        serde_json::to_value(CallToolResult::success(vec![ContentBlock::resource(
            ResourceContents::text(
                "test://embedded-resource",
                Some("text/plain".into()),
                "This is an embedded resource content."
            )
        )]))
        .unwrap(),
        results[3]
    );
    assert_eq!(
        serde_json::to_value(CallToolResult::error(
            "This tool intentionally returns an error for testing"
        ))
        .unwrap(),
        results[5]
    );

    // The resource read results.
    check_result(
        methods::RESOURCES_READ,
        &json!({"contents":[{"uri":"test://static-binary","mimeType":"image/png","blob":IMAGE}]}),
    );
    check_result(
        methods::RESOURCES_READ,
        &json!({"resultType":"complete","contents":[{"uri":"test://template/123/data","mimeType":"application/json","text":"{\"id\":\"123\",\"templateTest\":true,\"data\":\"Data for ID: 123\"}"}],"ttlMs":0,"cacheScope":"private"}),
    );
    // Prompt results.
    check_result(
        methods::PROMPTS_GET,
        &json!({"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"test://example-resource","mimeType":"text/plain","text":"Embedded resource content for testing."}}},{"role":"user","content":{"type":"text","text":"Please process the embedded resource above."}}]}),
    );
    check_result(
        methods::PROMPTS_GET,
        &json!({"messages":[{"role":"user","content":{"type":"image","data":IMAGE,"mimeType":"image/png"}},{"role":"user","content":{"type":"text","text":"Please analyze the image above."}}]}),
    );
    // Completion.
    check_params(
        methods::COMPLETION_COMPLETE,
        Some(
            &json!({"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"arg1","value":"test"}}),
        ),
    );
    check_result(
        methods::COMPLETION_COMPLETE,
        &json!({"completion":{"values":[],"total":0,"hasMore":false}}),
    );
}

#[test]
fn conformance_tool_listing() {
    let list = json!({"tools":[{"name":"add_numbers","description":"Add two numbers together","inputSchema":{"type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number"}},"required":["a","b"]}}]});
    check_result(methods::TOOLS_LIST, &list);

    // The JSON Schema 2020-12 input schema must come back verbatim.
    let schema = json!({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
        "$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
        "properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},
        "allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
        "if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},
        "then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false});
    let tool = json!({"name":"json_schema_2020_12_tool","description":"d","inputSchema":schema});
    let t: Tool = roundtrip(&tool);
    assert_eq!(Value::Object(t.input_schema), schema);

    // `x-mcp-header` annotations survive too.
    let tool = json!({"name":"h","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}});
    roundtrip::<Tool>(&tool);

    // The empty schema helper.
    let t = Tool::new(
        "test_simple_text",
        "Simple text",
        Tool::empty_input_schema(),
    );
    assert_eq!(
        serde_json::to_value(&t).unwrap(),
        json!({"name":"test_simple_text","description":"Simple text","inputSchema":{"type":"object","properties":{}}})
    );
}

#[test]
fn conformance_sep1034_defaults() {
    let params = json!({"message":"Test client default value handling - please accept with defaults","requestedSchema":{"type":"object","properties":{"name":{"type":"string","description":"User name","default":"John Doe"},"age":{"type":"integer","description":"User age","default":30},"score":{"type":"number","description":"User score","default":95.5},"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}});
    let ElicitRequestParams::Form(form) = roundtrip(&params) else {
        panic!("not form mode")
    };
    let props = &form.requested_schema.properties;
    match &props["name"] {
        PrimitiveSchemaDefinition::String(s) => assert_eq!(s.default.as_deref(), Some("John Doe")),
        other => panic!("{other:?}"),
    }
    match &props["age"] {
        PrimitiveSchemaDefinition::Number(n) => {
            assert_eq!(n.type_, NumberType::Integer);
            assert_eq!(n.default, Some(30.0));
        }
        other => panic!("{other:?}"),
    }
    match &props["score"] {
        PrimitiveSchemaDefinition::Number(n) => {
            assert_eq!(n.type_, NumberType::Number);
            assert_eq!(n.default, Some(95.5));
        }
        other => panic!("{other:?}"),
    }
    match &props["status"] {
        PrimitiveSchemaDefinition::UntitledSingleSelectEnum(e) => {
            assert_eq!(e.enum_, ["active", "inactive", "pending"]);
            assert_eq!(e.default.as_deref(), Some("active"));
        }
        other => panic!("{other:?}"),
    }
    match &props["verified"] {
        PrimitiveSchemaDefinition::Boolean(b) => assert_eq!(b.default, Some(true)),
        other => panic!("{other:?}"),
    }
    assert_eq!(form.requested_schema.required, Some(vec![]));

    // The same schema wrapped as an input request, and the client's answer.
    roundtrip::<InputRequest>(&json!({"method":"elicitation/create","params":params}));
    let answer = json!({"action":"accept","content":{"name":"Jane Smith","age":25,"score":88.0,"status":"inactive","verified":false}});
    let r: ElicitResult = roundtrip(&answer);
    let content = r.content.unwrap();
    assert_eq!(content["age"], ElicitValue::from(25));
    assert_eq!(content["verified"], ElicitValue::Bool(false));
    // `88.0` keeps its fraction: form values are kept as serde_json numbers.
    assert_eq!(serde_json::to_string(&content["score"]).unwrap(), "88.0");

    // Built from parts, the schema serializes to the suite's shape.
    let built = ElicitationSchema {
        properties: BTreeMap::from([
            (
                "name".to_owned(),
                PrimitiveSchemaDefinition::String(StringSchema {
                    description: Some("User name".into()),
                    default: Some("John Doe".into()),
                    ..Default::default()
                }),
            ),
            (
                "age".to_owned(),
                PrimitiveSchemaDefinition::Number(NumberSchema {
                    type_: NumberType::Integer,
                    description: Some("User age".into()),
                    default: Some(30.0),
                    ..Default::default()
                }),
            ),
            (
                "score".to_owned(),
                PrimitiveSchemaDefinition::Number(NumberSchema {
                    description: Some("User score".into()),
                    default: Some(95.5),
                    ..Default::default()
                }),
            ),
            (
                "status".to_owned(),
                PrimitiveSchemaDefinition::UntitledSingleSelectEnum(
                    UntitledSingleSelectEnumSchema {
                        description: Some("User status".into()),
                        enum_: vec!["active".into(), "inactive".into(), "pending".into()],
                        default: Some("active".into()),
                        ..Default::default()
                    },
                ),
            ),
            (
                "verified".to_owned(),
                PrimitiveSchemaDefinition::Boolean(BooleanSchema {
                    description: Some("Verification status".into()),
                    default: Some(true),
                    ..Default::default()
                }),
            ),
        ]),
        required: Some(vec![]),
        ..Default::default()
    };
    let built = ElicitRequestParams::form(
        "Test client default value handling - please accept with defaults",
        built,
    );
    assert_eq!(serde_json::to_value(&built).unwrap(), params);
}

#[test]
fn conformance_sep1330_enums() {
    let schema = json!({"type":"object","properties":{
        "untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
        "titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
        "legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
        "untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
        "titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}
    },"required":[]});
    let s: ElicitationSchema = roundtrip(&schema);
    let p = &s.properties;
    assert!(matches!(
        p["untitledSingle"],
        PrimitiveSchemaDefinition::UntitledSingleSelectEnum(_)
    ));
    match &p["titledSingle"] {
        PrimitiveSchemaDefinition::TitledSingleSelectEnum(t) => {
            assert_eq!(t.one_of[1], EnumOption::new("value2", "Second Option"))
        }
        other => panic!("{other:?}"),
    }
    match &p["legacyEnum"] {
        PrimitiveSchemaDefinition::LegacyTitledEnum(l) => {
            assert_eq!(l.enum_names.as_ref().unwrap().len(), l.enum_.len())
        }
        other => panic!("{other:?}"),
    }
    match &p["untitledMulti"] {
        PrimitiveSchemaDefinition::UntitledMultiSelectEnum(m) => {
            assert_eq!((m.min_items, m.max_items), (Some(1), Some(3)));
            assert_eq!(m.items.enum_.len(), 3);
        }
        other => panic!("{other:?}"),
    }
    match &p["titledMulti"] {
        PrimitiveSchemaDefinition::TitledMultiSelectEnum(m) => {
            assert_eq!(m.items.any_of[2].const_, "value3")
        }
        other => panic!("{other:?}"),
    }

    // SEP-1034 defaults on the enum schemas.
    roundtrip::<PrimitiveSchemaDefinition>(
        &json!({"type":"array","items":{"type":"string","enum":["a","b"]},"default":["a"]}),
    );
    roundtrip::<PrimitiveSchemaDefinition>(
        &json!({"type":"string","enum":["a","b"],"enumNames":["A","B"],"default":"b"}),
    );

    let answer = json!({"action":"accept","content":{"untitledSingle":"option1","titledSingle":"value1","legacyEnum":"opt1","untitledMulti":["option1","option2"],"titledMulti":["value1","value2"]}});
    let r: ElicitResult = roundtrip(&answer);
    assert_eq!(
        r.content.unwrap()["titledMulti"],
        ElicitValue::StringArray(vec!["value1".into(), "value2".into()])
    );

    // Objects and unknown types are not primitive schemas.
    assert!(serde_json::from_value::<PrimitiveSchemaDefinition>(json!({"type":"object"})).is_err());
    assert!(serde_json::from_value::<PrimitiveSchemaDefinition>(json!({"enum":["a"]})).is_err());
}

/// The `_meta` the suite's stateless (2026-07-28) requests carry.
fn harness_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-test-client", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}}
    })
}

#[test]
fn conformance_request_meta_2026() {
    let mut meta = harness_meta();
    meta["progressToken"] = json!("progress-test-1");
    meta["traceparent"] = json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    meta["io.modelcontextprotocol/logLevel"] = json!("debug");
    let m: RequestMeta = roundtrip(&meta);
    assert_eq!(m.protocol_version.as_deref(), Some(version::STATELESS));
    assert_eq!(
        m.client_info.as_ref().unwrap().name,
        "conformance-test-client"
    );
    let caps = m.client_capabilities.as_ref().unwrap();
    assert!(caps.supports_sampling() && caps.supports_roots());
    assert!(caps.supports_elicitation_form() && !caps.supports_elicitation_url());
    assert_eq!(
        m.progress_token,
        Some(ProgressToken::from("progress-test-1"))
    );
    assert_eq!(m.log_level, Some(LoggingLevel::Debug));
    assert_eq!(
        m.extra[meta_keys::TRACEPARENT],
        meta[meta_keys::TRACEPARENT]
    );

    // The typed fields are the reserved keys.
    let built = RequestMeta {
        client_info: Some(Implementation::new("c", "1")),
        log_level: Some(LoggingLevel::Warning),
        progress_token: Some(7.into()),
        ..RequestMeta::stateless(version::STATELESS, ClientCapabilities::default())
    };
    let v = serde_json::to_value(&built).unwrap();
    assert_eq!(v[meta_keys::PROTOCOL_VERSION], "2026-07-28");
    assert_eq!(v[meta_keys::CLIENT_CAPABILITIES], json!({}));
    assert_eq!(
        v[meta_keys::CLIENT_INFO],
        json!({"name": "c", "version": "1"})
    );
    assert_eq!(v[meta_keys::LOG_LEVEL], "warning");
    assert_eq!(v[meta_keys::PROGRESS_TOKEN], 7);

    // A tools/call of the suite, with arguments omitted.
    let params = json!({"name":"test_simple_text","_meta":harness_meta()});
    let p: CallToolRequestParams = roundtrip(&params);
    assert!(p.arguments.is_none());

    // An invalid log level is a params error (the spec says -32602).
    let mut bad = harness_meta();
    bad["io.modelcontextprotocol/logLevel"] = json!("verbose");
    assert!(serde_json::from_value::<RequestMeta>(bad).is_err());
}

#[test]
fn conformance_discover_and_subscriptions_2026() {
    let discover = json!({"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"conformance-mock-server","version":"1.0.0"}},"ttlMs":0,"cacheScope":"private"});
    let d: DiscoverResult = roundtrip(&discover);
    assert_eq!(d.server_info().unwrap().name, "conformance-mock-server");
    assert_eq!(d.cache_scope, Some(CacheScope::Private));
    let built = DiscoverResult::new(
        vec![version::STATELESS.into()],
        ServerCapabilities {
            tools: Some(ToolsCapability::default()),
            ..Default::default()
        },
        Implementation::new("conformance-mock-server", "1.0.0"),
        0,
        CacheScope::Private,
    );
    assert_eq!(serde_json::to_value(&built).unwrap(), discover);

    // The reference server's listen acknowledgement and change notification, and the
    // listen request of the suite.
    let ack = json!({"_meta":{"io.modelcontextprotocol/subscriptionId":"7"},"notifications":{"toolsListChanged":true}});
    let a: SubscriptionsAcknowledgedNotificationParams = roundtrip(&ack);
    assert_eq!(a.meta.unwrap().subscription_id, Some(RequestId::from("7")));
    let change = json!({"_meta":{"io.modelcontextprotocol/subscriptionId":1}});
    let c: NotificationParams = roundtrip(&change);
    assert_eq!(c.meta.unwrap().subscription_id, Some(RequestId::from(1)));
    roundtrip::<SubscriptionsListenRequestParams>(
        &json!({"_meta":harness_meta(),"notifications":{"promptsListChanged":true}}),
    );
    let closed = SubscriptionsListenResult::closed(RequestId::from("listen-1"));
    assert_eq!(
        serde_json::to_value(&closed).unwrap(),
        json!({"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}})
    );
    assert_eq!(
        serde_json::to_value(NotificationParams {
            meta: Some(NotificationMeta::subscription(1))
        })
        .unwrap(),
        change
    );
}

#[test]
fn conformance_input_required_2026() {
    // 6.1: the reference server's first answer.
    let irr = json!({"resultType":"input_required","inputRequests":{"user_name":{"method":"elicitation/create","params":{"message":"What is your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}}});
    let ResultOrInputRequired::<CallToolResult>::InputRequired(r) = roundtrip(&irr) else {
        panic!("not input_required")
    };
    assert_eq!(
        r.input_requests.as_ref().unwrap()["user_name"].method(),
        methods::ELICITATION_CREATE
    );

    // 6.2, 6.3, 6.5: sampling and roots requests; `params: {}` of roots/list is kept.
    let irr = json!({"resultType":"input_required","inputRequests":{
        "sample_request":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"What is the capital of France?"}}],"maxTokens":100}},
        "roots_request":{"method":"roots/list","params":{}}
    },"requestState":"c2lnbmVk"});
    let r: InputRequiredResult = roundtrip(&irr);
    let reqs = r.input_requests.unwrap();
    assert!(matches!(
        reqs["sample_request"],
        InputRequest::CreateMessage(_)
    ));
    assert_eq!(
        reqs["roots_request"],
        InputRequest::ListRoots(Some(RequestParams::default()))
    );

    // An extension's input request is kept as is.
    roundtrip::<InputRequest>(&json!({"method":"tasks/x","params":{"a":1}}));
    roundtrip::<InputRequest>(&json!({"method":"tasks/y"}));

    // The retry: every kind of input response, with the request state.
    let retry = json!({"name":"test_input_required_result_multiple_inputs","arguments":{},"_meta":harness_meta(),
        "inputResponses":{
            "user_name":{"action":"accept","content":{"name":"Alice"}},
            "greeting":{"role":"assistant","content":{"type":"text","text":"Hello there!"},"model":"test-model","stopReason":"endTurn"},
            "client_roots":{"roots":[{"uri":"file:///test/root","name":"Test Root"}]}
        },
        "requestState":"c2lnbmVk"});
    let p: CallToolRequestParams = roundtrip(&retry);
    let responses = p.input_responses.unwrap();
    assert!(matches!(responses["user_name"], InputResponse::Elicit(_)));
    match &responses["greeting"] {
        InputResponse::CreateMessage(m) => assert_eq!(m.stop_reason, Some(StopReason::EndTurn)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        responses["client_roots"],
        InputResponse::ListRoots(_)
    ));
    assert_eq!(p.request_state.as_deref(), Some("c2lnbmVk"));

    // Same for prompts/get and resources/read.
    roundtrip::<GetPromptRequestParams>(
        &json!({"name":"test_input_required_result_prompt","inputResponses":{"user_context":{"action":"accept","content":{"context":"test context"}}}}),
    );
    roundtrip::<ReadResourceRequestParams>(&json!({"uri":"test://r","requestState":"s"}));

    // 6.14: malformed input responses are protocol errors, not "absent".
    for bad in [
        json!({"name":"t","inputResponses":{"user_name":12345}}),
        json!({"name":"t","inputResponses":null}),
        json!({"name":"t","requestState":null}),
        json!({"name":"t","inputResponses":[]}),
    ] {
        assert!(
            serde_json::from_value::<CallToolRequestParams>(bad.clone()).is_err(),
            "{bad}"
        );
    }

    // The spec's "at least one field" IRR with only state, and the empty-params constructor.
    let state_only = InputRequiredResult::new(None, Some("abc".into()));
    assert_eq!(
        serde_json::to_value(&state_only).unwrap(),
        json!({"resultType":"input_required","requestState":"abc"})
    );
}

#[test]
fn conformance_errors() {
    let errors = [
        json!({"jsonrpc":"2.0","id":401,"error":{"code":-32021,"message":"MissingRequiredClientCapabilityError","data":{"requiredCapabilities":{"sampling":{}}}}}),
        json!({"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Resource not found","data":{"uri":"test://nonexistent-resource-for-conformance-testing"}}}),
        json!({"jsonrpc":"2.0","id":301,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"v999.0.0"}}}),
        json!({"jsonrpc":"2.0","id":302,"error":{"code":-32020,"message":"Header mismatch"}}),
        json!({"jsonrpc":"2.0","id":"x","error":{"code":-32002,"message":"Resource not found","data":{"uri":"file:///nonexistent.txt"}}}),
    ];
    for e in &errors {
        check_message("error", None, e);
    }
    let data = MissingRequiredClientCapabilityData {
        required_capabilities: ClientCapabilities {
            sampling: Some(SamplingCapability::default()),
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(&data).unwrap(),
        errors[0]["error"]["data"]
    );
    let data = UnsupportedProtocolVersionData {
        supported: vec![version::STATELESS.into()],
        requested: "v999.0.0".into(),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(&data).unwrap(),
        errors[2]["error"]["data"]
    );
}

#[test]
fn conformance_client_side_2025() {
    // What a 2025 server sends a client, and the sampling request of `test_sampling`.
    check_result(
        methods::INITIALIZE,
        &json!({"protocolVersion":"2025-11-25","serverInfo":{"name":"test-server","version":"1.0.0"},"capabilities":{}}),
    );
    check_result(
        methods::INITIALIZE,
        &json!({"protocolVersion":"2025-11-25","serverInfo":{"name":"mcp-conformance-test-server","version":"1.0.0"},"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"prompts":{"listChanged":true},"logging":{},"completions":{}}}),
    );
    let sampling = json!({"messages":[{"role":"user","content":{"type":"text","text":"Test prompt for sampling"}}],"maxTokens":100});
    roundtrip::<CreateMessageRequestParams>(&sampling);
    assert_eq!(
        serde_json::to_value(CreateMessageRequestParams::new(
            vec![SamplingMessage::user_text("Test prompt for sampling")],
            100
        ))
        .unwrap(),
        sampling
    );
    check_result(
        methods::SAMPLING_CREATE_MESSAGE,
        &json!({"role":"assistant","content":{"type":"text","text":"This is a test response from the client"},"model":"test-model","stopReason":"endTurn"}),
    );
    check_result(methods::PING, &json!({}));
    check_params(methods::LOGGING_SET_LEVEL, Some(&json!({"level":"info"})));
    check_params(
        methods::RESOURCES_SUBSCRIBE,
        Some(&json!({"uri":"test://watched-resource"})),
    );
    check_params(
        notifications::MESSAGE,
        Some(&json!({"level":"info","data":"Tool execution started"})),
    );
    check_params(
        notifications::PROGRESS,
        Some(
            &json!({"progressToken":"progress-test-1","progress":0,"total":100,"message":"Completed step 0 of 100"}),
        ),
    );
    check_params(
        methods::TOOLS_CALL,
        Some(
            &json!({"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"progress-test-1"}}),
        ),
    );
}

// ---------------------------------------------------------------------------------------
// Unknown fields, omitted fields

#[test]
fn unknown_fields_are_tolerated() {
    // Closed objects: extra keys are accepted and dropped.
    type Reparse = fn(&Value) -> Value;
    let closed: [(Value, Reparse); 6] = [
        (
            json!({"name":"t","inputSchema":{"type":"object"},"futureField":{"x":1}}),
            |v| serde_json::to_value(serde_json::from_value::<Tool>(v.clone()).unwrap()).unwrap(),
        ),
        (json!({"type":"text","text":"hi","futureField":true}), |v| {
            serde_json::to_value(serde_json::from_value::<ContentBlock>(v.clone()).unwrap())
                .unwrap()
        }),
        (json!({"uri":"u","name":"n","futureField":1}), |v| {
            serde_json::to_value(serde_json::from_value::<Resource>(v.clone()).unwrap()).unwrap()
        }),
        (json!({"type":"string","pattern":"^[a-z]+$"}), |v| {
            serde_json::to_value(
                serde_json::from_value::<PrimitiveSchemaDefinition>(v.clone()).unwrap(),
            )
            .unwrap()
        }),
        (
            json!({"progressToken":1,"progress":1,"futureField":1}),
            |v| {
                serde_json::to_value(
                    serde_json::from_value::<ProgressNotificationParams>(v.clone()).unwrap(),
                )
                .unwrap()
            },
        ),
        (json!({"name":"t","futureField":1}), |v| {
            serde_json::to_value(
                serde_json::from_value::<CallToolRequestParams>(v.clone()).unwrap(),
            )
            .unwrap()
        }),
    ];
    for (input, parse) in closed {
        let out = parse(&input);
        let mut expected = input.clone();
        let obj = expected.as_object_mut().unwrap();
        obj.remove("futureField");
        obj.remove("pattern");
        assert_eq!(out, expected, "{input}");
    }

    // Open objects (results, capabilities, `_meta`) keep them.
    let open = [
        json!({"content":[],"futureField":{"a":[1,2]}}),
        json!({"tools":[],"nextCursor":"c","vendor":"x"}),
        json!({"resultType":"complete","supportedVersions":[],"capabilities":{"futureCap":{"x":true},"tools":{"listChanged":false,"more":1}},"futureField":1}),
        json!({"resultType":"future_kind","x":1}),
    ];
    roundtrip::<CallToolResult>(&open[0]);
    roundtrip::<ListToolsResult>(&open[1]);
    let d: DiscoverResult = roundtrip(&open[2]);
    assert!(d.capabilities.extra.contains_key("futureCap"));
    let e: EmptyResult = roundtrip(&open[3]);
    assert_eq!(e.result_type, Some(ResultType::Other("future_kind".into())));
    roundtrip::<ClientCapabilities>(
        &json!({"elicitation":{"form":{},"futureMode":{}},"futureCap":{}}),
    );
    roundtrip::<RequestMeta>(
        &json!({"com.example/trace":"abc","io.modelcontextprotocol/related-task":{"taskId":"t"}}),
    );
    let m: ResultMeta = serde_json::from_value(json!({
        "io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1", "futureField": 1},
        "com.example/x": 1
    }))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&m).unwrap(),
        json!({"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}, "com.example/x": 1})
    );
    roundtrip::<SubscriptionFilter>(&json!({"toolsListChanged":true,"taskStatus":true}));

    // A 2026 message read by a 2025 reader and the other way round: the other revision's
    // fields are just optional fields.
    let r: ListToolsResult =
        roundtrip(&json!({"tools":[],"resultType":"complete","ttlMs":5,"cacheScope":"public"}));
    assert_eq!(
        (r.ttl_ms, r.cache_scope),
        (Some(5), Some(CacheScope::Public))
    );
    let r: ListToolsResult = roundtrip(&json!({"tools":[]}));
    assert_eq!(
        ResultType::of(r.result_type.as_ref()),
        &ResultType::Complete
    );
}

#[test]
fn optional_fields_are_omitted() {
    let cases: Vec<(Value, Value)> = vec![
        (
            serde_json::to_value(RequestMeta::default()).unwrap(),
            json!({}),
        ),
        (
            serde_json::to_value(ResultMeta::default()).unwrap(),
            json!({}),
        ),
        (
            serde_json::to_value(RequestParams::default()).unwrap(),
            json!({}),
        ),
        (
            serde_json::to_value(NotificationParams::default()).unwrap(),
            json!({}),
        ),
        (
            serde_json::to_value(PaginatedRequestParams::default()).unwrap(),
            json!({}),
        ),
        (
            serde_json::to_value(EmptyResult::default()).unwrap(),
            json!({}),
        ),
        (
            serde_json::to_value(ClientCapabilities::default()).unwrap(),
            json!({}),
        ),
        (
            serde_json::to_value(ServerCapabilities::default()).unwrap(),
            json!({}),
        ),
        (
            serde_json::to_value(Annotations::default()).unwrap(),
            json!({}),
        ),
        (
            serde_json::to_value(ToolAnnotations::default()).unwrap(),
            json!({}),
        ),
        (
            serde_json::to_value(SubscriptionFilter::default()).unwrap(),
            json!({}),
        ),
        (
            serde_json::to_value(Implementation::new("n", "1")).unwrap(),
            json!({"name":"n","version":"1"}),
        ),
        (
            serde_json::to_value(Resource::new("file:///a", "a")).unwrap(),
            json!({"uri":"file:///a","name":"a"}),
        ),
        (
            serde_json::to_value(ContentBlock::text("t")).unwrap(),
            json!({"type":"text","text":"t"}),
        ),
        (
            serde_json::to_value(CallToolRequestParams::new("t", None)).unwrap(),
            json!({"name":"t"}),
        ),
        (
            serde_json::to_value(ReadResourceRequestParams::new("u")).unwrap(),
            json!({"uri":"u"}),
        ),
        (
            serde_json::to_value(ProgressNotificationParams::new("p", 1.0, None)).unwrap(),
            json!({"progressToken":"p","progress":1}),
        ),
        (
            serde_json::to_value(CancelledNotificationParams::new(3, None)).unwrap(),
            json!({"requestId":3}),
        ),
        (
            serde_json::to_value(ElicitResult::action(ElicitAction::Decline)).unwrap(),
            json!({"action":"decline"}),
        ),
        (
            serde_json::to_value(InputRequiredResult::default()).unwrap(),
            json!({"resultType":"input_required"}),
        ),
        (
            serde_json::to_value(ListToolsResult::default()).unwrap(),
            json!({"tools":[]}),
        ),
        (
            serde_json::to_value(PromptMessage::user_text("hi")).unwrap(),
            json!({"role":"user","content":{"type":"text","text":"hi"}}),
        ),
        (
            serde_json::to_value(InputRequest::ListRoots(None)).unwrap(),
            json!({"method":"roots/list"}),
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}

// ---------------------------------------------------------------------------------------
// Scalars, constants

#[test]
fn numbers_and_ids() {
    // Integral `number` values are written without a fraction, others as they are.
    let p = ProgressNotificationParams::new(1, 50.0, Some(100.0));
    assert_eq!(
        serde_json::to_string(&p).unwrap(),
        r#"{"progressToken":1,"progress":50,"total":100}"#
    );
    let p = ProgressNotificationParams::new(1, 0.25, Some(1e20));
    assert_eq!(
        serde_json::to_string(&p).unwrap(),
        r#"{"progressToken":1,"progress":0.25,"total":1e+20}"#
    );
    // A `50.0` from a Python peer reads fine and is written as `50`.
    let p: ProgressNotificationParams =
        serde_json::from_str(r#"{"progressToken":"a","progress":50.0}"#).unwrap();
    assert_eq!(
        serde_json::to_string(&p).unwrap(),
        r#"{"progressToken":"a","progress":50}"#
    );

    // Ids keep their JSON type.
    let ids: Vec<RequestId> = serde_json::from_str(r#"[1, "1", -5, "listen-1"]"#).unwrap();
    assert_eq!(
        ids,
        [
            RequestId::Number(1),
            RequestId::String("1".into()),
            RequestId::Number(-5),
            RequestId::from("listen-1")
        ]
    );
    assert_eq!(
        serde_json::to_string(&ids).unwrap(),
        r#"[1,"1",-5,"listen-1"]"#
    );
    assert_eq!(ids[3].to_string(), "listen-1");
    for bad in ["1.5", "null", "true", "18446744073709551615", "{}"] {
        assert!(serde_json::from_str::<RequestId>(bad).is_err(), "{bad}");
    }

    // Integer fields reject fractions.
    assert!(serde_json::from_value::<ListToolsResult>(json!({"tools":[],"ttlMs":1.5})).is_err());

    // structuredContent may be any JSON value in 2026-07-28, null included.
    for sc in [json!(null), json!([1, 2]), json!("s"), json!({"a": 1})] {
        let r: CallToolResult = roundtrip(&json!({"content":[],"structuredContent":sc}));
        assert_eq!(r.structured_content, Some(sc));
    }
}

#[test]
fn enums_and_levels() {
    use std::str::FromStr;
    assert!(LoggingLevel::Debug < LoggingLevel::Info);
    assert!(LoggingLevel::Error < LoggingLevel::Emergency);
    let mut sorted = LoggingLevel::ALL;
    sorted.sort();
    assert_eq!(sorted, LoggingLevel::ALL);
    for level in LoggingLevel::ALL {
        let v = serde_json::to_value(level).unwrap();
        assert_eq!(v, level.as_str());
        assert_eq!(LoggingLevel::from_str(level.as_str()), Ok(level));
        assert_eq!(serde_json::from_value::<LoggingLevel>(v).unwrap(), level);
    }
    assert!(LoggingLevel::from_str("verbose").is_err());
    assert!(LoggingLevel::Warning >= LoggingLevel::Notice);

    for (v, t) in [
        ("complete", ResultType::Complete),
        ("input_required", ResultType::InputRequired),
        ("x-task", ResultType::Other("x-task".into())),
    ] {
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        assert_eq!(serde_json::from_value::<ResultType>(json!(v)).unwrap(), t);
    }
    assert_eq!(ResultType::of(None), &ResultType::Complete);
    assert_eq!(
        serde_json::from_value::<StopReason>(json!("refusal")).unwrap(),
        StopReason::Other("refusal".into())
    );
    assert_eq!(
        serde_json::to_value(StopReason::ToolUse).unwrap(),
        "toolUse"
    );
    assert_eq!(
        serde_json::to_value(IncludeContext::ThisServer).unwrap(),
        "thisServer"
    );
    assert_eq!(
        serde_json::to_value(StringFormat::DateTime).unwrap(),
        "date-time"
    );
    assert_eq!(
        serde_json::to_value(TaskStatus::InputRequired).unwrap(),
        "input_required"
    );
    assert!(serde_json::from_value::<CacheScope>(json!("shared")).is_err());

    // A ResultOrInputRequired is read by resultType only.
    let r: ResultOrInputRequired<GetPromptResult> =
        serde_json::from_value(json!({"resultType":"complete","messages":[]})).unwrap();
    assert!(matches!(r, ResultOrInputRequired::Complete(_)));
    assert!(
        serde_json::from_value::<ResultOrInputRequired<GetPromptResult>>(
            json!({"resultType":"input_required","messages":"not an array"})
        )
        .is_ok()
    );
    assert!(
        serde_json::from_value::<ResultOrInputRequired<GetPromptResult>>(
            json!({"messages":"not an array"})
        )
        .is_err()
    );
}

#[test]
fn capability_helpers() {
    let caps = |v: Value| serde_json::from_value::<ClientCapabilities>(v).unwrap();
    // `elicitation: {}` means form only.
    let c = caps(json!({"elicitation": {}}));
    assert!(c.supports_elicitation_form() && !c.supports_elicitation_url());
    let c = caps(json!({"elicitation": {"url": {}}}));
    assert!(!c.supports_elicitation_form() && c.supports_elicitation_url());
    let c = caps(json!({"elicitation": {"form": {}, "url": {}}}));
    assert!(c.supports_elicitation_form() && c.supports_elicitation_url());
    let c = caps(json!({}));
    assert!(!c.supports_elicitation_form() && !c.supports_sampling() && !c.supports_roots());
    let c = caps(
        json!({"sampling": {"tools": {}}, "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}),
    );
    assert!(c.supports_sampling_tools());
    assert!(c.supports_extension("io.modelcontextprotocol/ui"));
    let s: ServerCapabilities =
        serde_json::from_value(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))
            .unwrap();
    assert!(s.supports_extension("io.modelcontextprotocol/tasks"));
}

#[test]
fn constants() {
    assert_eq!(version::LATEST, "2025-11-25");
    assert_eq!(version::STATELESS, "2026-07-28");
    assert_eq!(
        version::SUPPORTED,
        [
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ]
    );
    assert!(version::is_handshake("2025-06-18") && !version::is_handshake("2026-07-28"));
    assert!(version::is_stateless("2026-07-28") && !version::is_stateless("2025-11-25"));
    assert!(!version::is_supported("v999.0.0"));
    // The supported list is ordered, so date comparison works on it.
    assert!(version::SUPPORTED.windows(2).all(|w| w[0] < w[1]));

    assert_eq!(
        meta_keys::PROTOCOL_VERSION,
        "io.modelcontextprotocol/protocolVersion"
    );
    assert_eq!(
        meta_keys::CLIENT_CAPABILITIES,
        "io.modelcontextprotocol/clientCapabilities"
    );
    assert_eq!(meta_keys::CLIENT_INFO, "io.modelcontextprotocol/clientInfo");
    assert_eq!(meta_keys::LOG_LEVEL, "io.modelcontextprotocol/logLevel");
    assert_eq!(meta_keys::SERVER_INFO, "io.modelcontextprotocol/serverInfo");
    assert_eq!(
        meta_keys::SUBSCRIPTION_ID,
        "io.modelcontextprotocol/subscriptionId"
    );

    assert_eq!(
        (
            error_codes::HEADER_MISMATCH,
            error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
            error_codes::UNSUPPORTED_PROTOCOL_VERSION,
            error_codes::RESOURCE_NOT_FOUND,
            error_codes::URL_ELICITATION_REQUIRED,
        ),
        (-32020, -32021, -32022, -32002, -32042)
    );

    // The method lists have no duplicates and agree with the constants.
    for list in [
        methods::CLIENT_REQUESTS_2025_11_25,
        methods::SERVER_REQUESTS_2025_11_25,
        methods::CLIENT_REQUESTS_2026_07_28,
        notifications::CLIENT_2025_11_25,
        notifications::SERVER_2025_11_25,
        notifications::SERVER_2026_07_28,
    ] {
        let mut v = list.to_vec();
        v.sort();
        v.dedup();
        assert_eq!(v.len(), list.len());
    }
    assert!(!methods::CLIENT_REQUESTS_2026_07_28.contains(&methods::INITIALIZE));
    assert!(methods::CLIENT_REQUESTS_2026_07_28.contains(&methods::SERVER_DISCOVER));
}

/// The objects with an `extra` map read their members one by one (no `#[serde(flatten)]`
/// buffer, for the size of a browser page): what they keep and refuse is what the
/// flattened form kept and refused.
#[test]
fn objects_with_extra_members_read_as_the_flattened_form_did() {
    let text = r#"{"tools":[],"x-vendor":{"a":1},"nextCursor":null,"x-vendor":2}"#;
    let list: ListToolsResult = serde_json::from_str(text).unwrap();
    assert!(list.tools.is_empty());
    assert_eq!(list.next_cursor, None);
    // An unknown member given twice keeps its last value.
    assert_eq!(list.extra.get("x-vendor"), Some(&json!(2)));

    let error = |text: &str| {
        serde_json::from_str::<ListToolsResult>(text)
            .unwrap_err()
            .to_string()
    };
    assert!(error(r#"{"nextCursor":"c"}"#).starts_with("missing field `tools`"));
    assert!(error(r#"{"tools":[],"tools":[]}"#).starts_with("duplicate field `tools`"));
    assert!(error("[]").contains("expected struct ListToolsResult"));
    assert!(error(r#"{"tools":{}}"#).contains("expected a sequence"));

    // `structuredContent` keeps a present `null`; absent, it is `None`.
    let text = r#"{"content":[],"structuredContent":null,"isError":null}"#;
    let result: CallToolResult = serde_json::from_str(text).unwrap();
    assert_eq!(result.structured_content, Some(Value::Null));
    assert_eq!(result.is_error, None);
    let result: CallToolResult = serde_json::from_str(r#"{"content":[]}"#).unwrap();
    assert_eq!(result.structured_content, None);

    // Members of nested objects (`_meta` keys are names with a slash) and their extras.
    let text = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true,"y":1},"z":{}},
        "serverInfo":{"name":"s","version":"1"},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"2"},"k":3}}"#;
    let init: InitializeResult = serde_json::from_str(text).unwrap();
    let tools = init.capabilities.tools.as_ref().unwrap();
    assert_eq!(tools.list_changed, Some(true));
    assert_eq!(tools.extra.get("y"), Some(&json!(1)));
    assert_eq!(init.capabilities.extra.get("z"), Some(&json!({})));
    let meta = init.meta.unwrap();
    assert_eq!(meta.server_info.unwrap().name, "m");
    assert_eq!(meta.extra.get("k"), Some(&json!(3)));
}

/// What `ContentBlock` and `ResourceContents` read with serde's derived decoders (an internally
/// tagged and an untagged enum, through serde's `Content` buffer): the reference the
/// hand-written decoders are held to.
mod derived {
    use sansrpc_mcp::types::{
        AudioContent, BlobResourceContents, ImageContent, Resource, TextContent,
        TextResourceContents,
    };
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(tag = "type")]
    pub enum ContentBlock {
        #[serde(rename = "text")]
        Text(TextContent),
        #[serde(rename = "image")]
        Image(ImageContent),
        #[serde(rename = "audio")]
        Audio(AudioContent),
        #[serde(rename = "resource_link")]
        ResourceLink(Resource),
        #[serde(rename = "resource")]
        Resource(EmbeddedResource),
    }

    #[derive(Debug, Deserialize)]
    pub struct EmbeddedResource {
        pub resource: ResourceContents,
        pub annotations: Option<sansrpc_mcp::types::Annotations>,
        #[serde(rename = "_meta")]
        pub meta: Option<sansrpc_mcp::types::MetaObject>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(untagged)]
    pub enum ResourceContents {
        Text(TextResourceContents),
        Blob(BlobResourceContents),
    }
}

/// `text` read as `T` (from the text and from a `Value` when it is JSON) and as the derived
/// `R`: both accept it or both refuse it, and what they read writes the same JSON (`T` written
/// by its own `Serialize`, `R` compared through `same`).
#[track_caller]
fn reads_as_derived<T, R>(text: &str, same: impl Fn(&T, &R) -> bool) -> Result<T, String>
where
    T: DeserializeOwned + std::fmt::Debug,
    R: DeserializeOwned + std::fmt::Debug,
{
    let ours = serde_json::from_str::<T>(text);
    let theirs = serde_json::from_str::<R>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert!(same(a, b), "{text}: {a:?} is not {b:?}"),
        (Err(_), Err(_)) => {}
        _ => panic!("{text}: ours {ours:?}, derived {theirs:?}"),
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let ours = serde_json::from_value::<T>(value.clone());
        let theirs = serde_json::from_value::<R>(value);
        assert_eq!(
            ours.is_ok(),
            theirs.is_ok(),
            "{text} as a Value: {ours:?}, {theirs:?}"
        );
    }
    ours.map_err(|e| e.to_string())
}

fn same_contents(a: &ResourceContents, b: &derived::ResourceContents) -> bool {
    match (a, b) {
        (ResourceContents::Text(a), derived::ResourceContents::Text(b)) => a == b,
        (ResourceContents::Blob(a), derived::ResourceContents::Blob(b)) => a == b,
        _ => false,
    }
}

fn same_block(a: &ContentBlock, b: &derived::ContentBlock) -> bool {
    match (a, b) {
        (ContentBlock::Text(a), derived::ContentBlock::Text(b)) => a == b,
        (ContentBlock::Image(a), derived::ContentBlock::Image(b)) => a == b,
        (ContentBlock::Audio(a), derived::ContentBlock::Audio(b)) => a == b,
        (ContentBlock::ResourceLink(a), derived::ContentBlock::ResourceLink(b)) => a == b,
        (ContentBlock::Resource(a), derived::ContentBlock::Resource(b)) => {
            same_contents(&a.resource, &b.resource)
                && a.annotations == b.annotations
                && a.meta == b.meta
        }
        _ => false,
    }
}

/// `ContentBlock` reads its `type` then the rest of the object without serde's `Content`
/// buffer: every variant, the tag anywhere in the object, unknown members, and every refusal
/// are what the derived internally tagged enum read.
#[test]
fn content_blocks_read_as_the_tagged_enum_did() {
    let block =
        |text: &str| reads_as_derived::<ContentBlock, derived::ContentBlock>(text, same_block);
    let accepted = [
        r#"{"type":"text","text":"hi"}"#,
        r#"{"text":"hi","type":"text"}"#,
        r#"{"text":"hi","x":[1,{"y":2}],"type":"text","z":null}"#,
        r#"{"type":"text","text":"hi","annotations":{"audience":["user"],"priority":0.5},"_meta":{"k":1}}"#,
        r#"{"_meta":{"k":1},"annotations":{"priority":1},"text":"hi","type":"text"}"#,
        r#"{"type":"image","data":"aGk=","mimeType":"image/png"}"#,
        r#"{"mimeType":"image/png","type":"image","data":"aGk=","text":5}"#,
        r#"{"type":"audio","data":"aGk=","mimeType":"audio/wav","_meta":{}}"#,
        r#"{"type":"resource_link","uri":"file:///a","name":"a","size":3,"icons":[{"src":"i"}]}"#,
        r#"{"uri":"file:///a","name":"a","type":"resource_link","title":"A","mimeType":null}"#,
        r#"{"type":"resource","resource":{"uri":"u","text":"t"}}"#,
        r#"{"resource":{"uri":"u","blob":"YQ==","mimeType":"x"},"type":"resource"}"#,
        // A tagged enum also reads an array: the tag, then the variant's fields.
        r#"["text","hi",null,null]"#,
    ];
    for text in accepted {
        let ours = block(text).unwrap();
        // What it reads, it writes back with its `type`.
        let again: ContentBlock =
            serde_json::from_value(serde_json::to_value(&ours).unwrap()).unwrap();
        assert_eq!(again, ours);
    }
    let block = |text: &str| block(text).unwrap_err();
    assert!(block(r#"{"text":"hi"}"#).starts_with("missing field `type`"));
    assert!(block(r#"{"type":"video","data":"x"}"#).starts_with("unknown variant `video`"));
    assert!(block(r#"{"text":"a","x":1,"type":"video"}"#).starts_with("unknown variant `video`"));
    // A variant's index is no tag in JSON.
    assert!(block(r#"{"type":0,"text":"hi"}"#).contains("expected variant identifier"));
    assert!(block(r#"{"type":null}"#).contains("invalid type: null"));
    assert!(block(r#"{"type":"text"}"#).starts_with("missing field `text`"));
    assert!(block(r#"{"type":"image","data":"x"}"#).starts_with("missing field `mimeType`"));
    assert!(block(r#"{"type":"text","text":1}"#).contains("invalid type: integer `1`"));
    assert!(block(r#"{"text":1,"type":"text"}"#).contains("invalid type: integer `1`"));
    // A tag after other members: the object is read again with the tag first, and its error
    // has the position in the sender's text only.
    assert_eq!(
        block(r#"{"text":1,"type":"text"}"#),
        "invalid type: integer `1`, expected a string at line 1 column 24"
    );
    assert!(
        block(r#"{"type":"text","text":"a","type":"text"}"#).starts_with("duplicate field `type`")
    );
    assert!(block(r#"{"type":"text","text":"a","text":"b"}"#).starts_with("duplicate field `text`"));
    assert!(block(r#"{"text":"a","type":"text","text":"b"}"#).starts_with("duplicate field `text`"));
    assert!(block(r#"{"type":"resource","resource":{"uri":"u"}}"#)
        .contains("did not match any variant"));
    assert!(block(r#""text""#).contains("expected internally tagged enum ContentBlock"));
    assert!(block("[]").starts_with("missing field `type`"));
    assert!(block(r#"{"type":"text","text":"a""#).contains("EOF"));
}

/// `ResourceContents` reads its members once, without serde's `Content` buffer: text when
/// the object is text contents, else a blob, else the untagged enum's refusal.
#[test]
fn resource_contents_read_as_the_untagged_enum_did() {
    let contents = |text: &str| {
        reads_as_derived::<ResourceContents, derived::ResourceContents>(text, same_contents)
    };
    let text = |text: &str| matches!(contents(text), Ok(ResourceContents::Text(_)));
    let blob = |text: &str| matches!(contents(text), Ok(ResourceContents::Blob(_)));
    assert!(text(r#"{"uri":"u","text":"t"}"#));
    assert!(text(
        r#"{"text":"t","mimeType":"text/plain","uri":"u","_meta":{"k":[1]},"x":{}}"#
    ));
    assert!(text(
        r#"{"uri":"u","text":"t","mimeType":null,"_meta":null}"#
    ));
    assert!(blob(r#"{"uri":"u","blob":"YQ=="}"#));
    assert!(blob(
        r#"{"blob":"YQ==","uri":"u","mimeType":"image/png","_meta":{"k":1}}"#
    ));
    // Both: text. A `text` that text contents refuse leaves a blob.
    assert!(text(r#"{"uri":"u","text":"t","blob":"YQ=="}"#));
    assert!(text(r#"{"uri":"u","text":"t","blob":7}"#));
    assert!(blob(r#"{"uri":"u","text":7,"blob":"YQ=="}"#));
    assert!(blob(r#"{"uri":"u","text":"a","text":"b","blob":"YQ=="}"#));
    assert!(text(r#"{"uri":"u","text":"a","blob":"b","blob":"c"}"#));
    // An array is the text contents' fields in order.
    assert!(text(r#"["u",null,"t",null]"#));

    let error = |text: &str| contents(text).unwrap_err();
    let no_match = "data did not match any variant of untagged enum ResourceContents";
    assert!(error(r#"{"uri":"u"}"#).starts_with(no_match));
    assert!(error(r#"{"uri":"u","text":null,"blob":1}"#).starts_with(no_match));
    assert!(error(r#"{"uri":"u","text":"a","text":"b"}"#).starts_with(no_match));
    assert!(error(r#"{"text":"t"}"#).starts_with("missing field `uri`"));
    assert!(error(r#"{"uri":"u","uri":"v","text":"t"}"#).starts_with("duplicate field `uri`"));
    assert!(error(r#"{"uri":1,"text":"t"}"#).contains("invalid type: integer `1`"));
    assert!(error(r#"{"uri":"u","text":"t","mimeType":2}"#).contains("invalid type: integer `2`"));
    assert!(error(r#"{"uri":"u","text":"t","_meta":[]}"#).contains("invalid type: sequence"));
    assert!(error(r#""u""#).contains("expected untagged enum ResourceContents"));
    assert!(error(r#"["u",null,"t"]"#).contains("invalid length 3"));
    assert!(error(r#"{"uri":"u","text":"t""#).contains("EOF"));
}

/// The inputs of [`content_blocks_read_member_by_member_as_before`], each with what
/// `ContentBlock` read from it (`Ok` with the block, or the error's text) before its
/// variants' members were read in one loop: members of every variant in any order, a
/// variant's own members and another's (ignored whatever their type), null and absent,
/// wrong types, members given twice, and each variant's required members missing.
const CONTENT_BLOCK_CASES: &[(&str, &str)] = &[
    (
        r#"{"type":"text","text":"a","data":5,"mimeType":7,"uri":[],"name":{},"resource":1,"size":"x","icons":3,"title":4}"#,
        r#"Ok(Text(TextContent { text: "a", annotations: None, meta: None }))"#,
    ),
    (
        r#"{"type":"text","_meta":null,"annotations":null,"text":"a"}"#,
        r#"Ok(Text(TextContent { text: "a", annotations: None, meta: None }))"#,
    ),
    (
        r#"{"type":"text","text":null}"#,
        r#"Err("invalid type: null, expected a string at line 1 column 26")"#,
    ),
    (
        r#"{"type":"text","text":"a","annotations":{"priority":"high"}}"#,
        r#"Err("invalid type: string \"high\", expected f64 at line 1 column 58")"#,
    ),
    (
        r#"{"type":"text","text":"a","_meta":[1]}"#,
        r#"Err("invalid type: sequence, expected a map at line 1 column 34")"#,
    ),
    (
        r#"{"type":"text","text":"a","annotations":{},"annotations":{}}"#,
        r#"Err("duplicate field `annotations` at line 1 column 56")"#,
    ),
    (
        r#"{"type":"text","text":"a","_meta":{},"_meta":{}}"#,
        r#"Err("duplicate field `_meta` at line 1 column 44")"#,
    ),
    (
        r#"{"type":"image","mimeType":"image/png","data":"aGk=","annotations":{"audience":["assistant"]}}"#,
        r#"Ok(Image(ImageContent { data: "aGk=", mime_type: "image/png", annotations: Some(Annotations { audience: Some([Assistant]), priority: None, last_modified: None }), meta: None }))"#,
    ),
    (
        r#"{"type":"image","mimeType":"image/png"}"#,
        r#"Err("missing field `data` at line 1 column 39")"#,
    ),
    (
        r#"{"type":"image","data":"x","mimeType":null}"#,
        r#"Err("invalid type: null, expected a string at line 1 column 42")"#,
    ),
    (
        r#"{"type":"image","data":"x","mimeType":"a","mimeType":"b"}"#,
        r#"Err("duplicate field `mimeType` at line 1 column 52")"#,
    ),
    (
        r#"{"type":"image","data":"x","data":"y","mimeType":"a"}"#,
        r#"Err("duplicate field `data` at line 1 column 33")"#,
    ),
    (
        r#"{"type":"image","data":"x","mimeType":"a","text":[],"resource":null,"uri":1}"#,
        r#"Ok(Image(ImageContent { data: "x", mime_type: "a", annotations: None, meta: None }))"#,
    ),
    (
        r#"{"type":"audio","data":"x","mimeType":"audio/wav","annotations":null,"_meta":{"a":{"b":[]}}}"#,
        r#"Ok(Audio(AudioContent { data: "x", mime_type: "audio/wav", annotations: None, meta: Some({"a": Object {"b": Array []}}) }))"#,
    ),
    (
        r#"{"type":"audio","mimeType":"audio/wav"}"#,
        r#"Err("missing field `data` at line 1 column 39")"#,
    ),
    (
        r#"{"type":"audio","data":1,"mimeType":"audio/wav"}"#,
        r#"Err("invalid type: integer `1`, expected a string at line 1 column 24")"#,
    ),
    (
        r#"{"type":"resource_link","name":"n","uri":"u"}"#,
        r#"Ok(ResourceLink(Resource { uri: "u", name: "n", title: None, description: None, mime_type: None, annotations: None, size: None, icons: None, meta: None }))"#,
    ),
    (
        r#"{"type":"resource_link","uri":"u","name":"n","title":null,"description":null,"mimeType":null,"annotations":null,"size":null,"icons":null,"_meta":null}"#,
        r#"Ok(ResourceLink(Resource { uri: "u", name: "n", title: None, description: None, mime_type: None, annotations: None, size: None, icons: None, meta: None }))"#,
    ),
    (
        r#"{"type":"resource_link","_meta":{"k":1},"icons":[{"src":"s","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}],"size":10,"annotations":{"lastModified":"2025-01-12T15:00:58Z"},"mimeType":"text/plain","description":"d","title":"t","name":"n","uri":"u","text":1,"data":2,"resource":3}"#,
        r#"Ok(ResourceLink(Resource { uri: "u", name: "n", title: Some("t"), description: Some("d"), mime_type: Some("text/plain"), annotations: Some(Annotations { audience: None, priority: None, last_modified: Some("2025-01-12T15:00:58Z") }), size: Some(10), icons: Some([Icon { src: "s", mime_type: Some("image/png"), sizes: Some(["48x48"]), theme: Some(Dark) }]), meta: Some({"k": Number(1)}) }))"#,
    ),
    (
        r#"{"type":"resource_link","name":"n"}"#,
        r#"Err("missing field `uri` at line 1 column 35")"#,
    ),
    (
        r#"{"type":"resource_link","uri":"u"}"#,
        r#"Err("missing field `name` at line 1 column 34")"#,
    ),
    (
        r#"{"type":"resource_link","uri":"u","name":"n","size":-1}"#,
        r#"Err("invalid value: integer `-1`, expected u64 at line 1 column 54")"#,
    ),
    (
        r#"{"type":"resource_link","uri":"u","name":"n","size":1.5}"#,
        r#"Err("invalid type: floating point `1.5`, expected u64 at line 1 column 55")"#,
    ),
    (
        r#"{"type":"resource_link","uri":"u","name":"n","icons":[{"theme":"blue","src":"s"}]}"#,
        r#"Err("unknown variant `blue`, expected `light` or `dark` at line 1 column 69")"#,
    ),
    (
        r#"{"type":"resource_link","uri":"u","name":"n","title":"a","title":"b"}"#,
        r#"Err("duplicate field `title` at line 1 column 64")"#,
    ),
    (
        r#"{"type":"resource_link","uri":"u","uri":"v","name":"n"}"#,
        r#"Err("duplicate field `uri` at line 1 column 39")"#,
    ),
    (
        r#"{"type":"resource_link","uri":"u","name":"n","mimeType":"a","mimeType":"b"}"#,
        r#"Err("duplicate field `mimeType` at line 1 column 70")"#,
    ),
    (
        r#"{"type":"resource_link","uri":"u","name":"n","size":1,"size":2}"#,
        r#"Err("duplicate field `size` at line 1 column 60")"#,
    ),
    (
        r#"{"type":"resource","resource":{"uri":"u","text":"t"},"annotations":{"priority":0.25},"_meta":{"m":true},"uri":5}"#,
        r#"Ok(Resource(EmbeddedResource { resource: Text(TextResourceContents { uri: "u", mime_type: None, text: "t", meta: None }), annotations: Some(Annotations { audience: None, priority: Some(0.25), last_modified: None }), meta: Some({"m": Bool(true)}) }))"#,
    ),
    (
        r#"{"type":"resource"}"#,
        r#"Err("missing field `resource` at line 1 column 19")"#,
    ),
    (
        r#"{"type":"resource","resource":null}"#,
        r#"Err("invalid type: null, expected untagged enum ResourceContents at line 1 column 34")"#,
    ),
    (
        r#"{"type":"resource","resource":{"uri":"u","text":"t"},"resource":{"uri":"u","text":"t"}}"#,
        r#"Err("duplicate field `resource` at line 1 column 63")"#,
    ),
    (
        r#"{"type":"text","text":"a","type":"image"}"#,
        r#"Err("duplicate field `type` at line 1 column 32")"#,
    ),
    (
        r#"{"type":"image","type":"image","data":"x","mimeType":"a"}"#,
        r#"Err("duplicate field `type` at line 1 column 22")"#,
    ),
    (
        r#"{"name":"n","type":"resource_link","uri":"u","size":2}"#,
        r#"Ok(ResourceLink(Resource { uri: "u", name: "n", title: None, description: None, mime_type: None, annotations: None, size: Some(2), icons: None, meta: None }))"#,
    ),
    (
        r#"{"data":"x","mimeType":"a","type":"audio","data":"y"}"#,
        r#"Err("duplicate field `data` at line 1 column 53")"#,
    ),
    (
        r#"{"type":"text","text":"a","x":{"deep":[1,2,{"y":null}]},"y":true}"#,
        r#"Ok(Text(TextContent { text: "a", annotations: None, meta: None }))"#,
    ),
    (
        r#"{"type":"text","text":"a","annotations":{"audience":["user","robot"]}}"#,
        r#"Err("unknown variant `robot`, expected `user` or `assistant` at line 1 column 67")"#,
    ),
];

/// `ContentBlock` reads what it read before its variants' members were read in one loop,
/// and refuses what it refused with the same error; each result is also what the derived
/// tagged enum gives ([`reads_as_derived`]).
#[test]
fn content_blocks_read_member_by_member_as_before() {
    let inputs = [
        r#"{"type":"text","text":"a","data":5,"mimeType":7,"uri":[],"name":{},"resource":1,"size":"x","icons":3,"title":4}"#,
        r#"{"type":"text","_meta":null,"annotations":null,"text":"a"}"#,
        r#"{"type":"text","text":null}"#,
        r#"{"type":"text","text":"a","annotations":{"priority":"high"}}"#,
        r#"{"type":"text","text":"a","_meta":[1]}"#,
        r#"{"type":"text","text":"a","annotations":{},"annotations":{}}"#,
        r#"{"type":"text","text":"a","_meta":{},"_meta":{}}"#,
        r#"{"type":"image","mimeType":"image/png","data":"aGk=","annotations":{"audience":["assistant"]}}"#,
        r#"{"type":"image","mimeType":"image/png"}"#,
        r#"{"type":"image","data":"x","mimeType":null}"#,
        r#"{"type":"image","data":"x","mimeType":"a","mimeType":"b"}"#,
        r#"{"type":"image","data":"x","data":"y","mimeType":"a"}"#,
        r#"{"type":"image","data":"x","mimeType":"a","text":[],"resource":null,"uri":1}"#,
        r#"{"type":"audio","data":"x","mimeType":"audio/wav","annotations":null,"_meta":{"a":{"b":[]}}}"#,
        r#"{"type":"audio","mimeType":"audio/wav"}"#,
        r#"{"type":"audio","data":1,"mimeType":"audio/wav"}"#,
        r#"{"type":"resource_link","name":"n","uri":"u"}"#,
        r#"{"type":"resource_link","uri":"u","name":"n","title":null,"description":null,"mimeType":null,"annotations":null,"size":null,"icons":null,"_meta":null}"#,
        r#"{"type":"resource_link","_meta":{"k":1},"icons":[{"src":"s","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}],"size":10,"annotations":{"lastModified":"2025-01-12T15:00:58Z"},"mimeType":"text/plain","description":"d","title":"t","name":"n","uri":"u","text":1,"data":2,"resource":3}"#,
        r#"{"type":"resource_link","name":"n"}"#,
        r#"{"type":"resource_link","uri":"u"}"#,
        r#"{"type":"resource_link","uri":"u","name":"n","size":-1}"#,
        r#"{"type":"resource_link","uri":"u","name":"n","size":1.5}"#,
        r#"{"type":"resource_link","uri":"u","name":"n","icons":[{"theme":"blue","src":"s"}]}"#,
        r#"{"type":"resource_link","uri":"u","name":"n","title":"a","title":"b"}"#,
        r#"{"type":"resource_link","uri":"u","uri":"v","name":"n"}"#,
        r#"{"type":"resource_link","uri":"u","name":"n","mimeType":"a","mimeType":"b"}"#,
        r#"{"type":"resource_link","uri":"u","name":"n","size":1,"size":2}"#,
        r#"{"type":"resource","resource":{"uri":"u","text":"t"},"annotations":{"priority":0.25},"_meta":{"m":true},"uri":5}"#,
        r#"{"type":"resource"}"#,
        r#"{"type":"resource","resource":null}"#,
        r#"{"type":"resource","resource":{"uri":"u","text":"t"},"resource":{"uri":"u","text":"t"}}"#,
        r#"{"type":"text","text":"a","type":"image"}"#,
        r#"{"type":"image","type":"image","data":"x","mimeType":"a"}"#,
        r#"{"name":"n","type":"resource_link","uri":"u","size":2}"#,
        r#"{"data":"x","mimeType":"a","type":"audio","data":"y"}"#,
        r#"{"type":"text","text":"a","x":{"deep":[1,2,{"y":null}]},"y":true}"#,
        r#"{"type":"text","text":"a","annotations":{"audience":["user","robot"]}}"#,
    ];
    for text in inputs {
        let read = reads_as_derived::<ContentBlock, derived::ContentBlock>(text, same_block);
        let got = format!("{read:?}");
        match CONTENT_BLOCK_CASES.iter().find(|(t, _)| *t == text) {
            Some((_, before)) => assert_eq!(got, *before, "{text}"),
            None => panic!("{text}: no case (it reads {got})"),
        }
    }
    assert_eq!(CONTENT_BLOCK_CASES.len(), inputs.len());
}

/// The arrays of [`content_blocks_read_from_arrays_as_before`], each with what `ContentBlock`
/// read from it (`Ok` with the block, or the error's text) when each variant's fields were
/// read by its struct's derived decoder: the tag, then the variant's fields in order, every
/// one of them required (an `Option` too), elements left over refused.
const CONTENT_BLOCK_ARRAYS: &[(&str, &str)] = &[
    (
        r#"["text","hi",null,null]"#,
        r#"Ok(Text(TextContent { text: "hi", annotations: None, meta: None }))"#,
    ),
    (
        r#"["text","hi",{"priority":0.5,"audience":["user"]},{"k":[1]}]"#,
        r#"Ok(Text(TextContent { text: "hi", annotations: Some(Annotations { audience: Some([User]), priority: Some(0.5), last_modified: None }), meta: Some({"k": Array [Number(1)]}) }))"#,
    ),
    (
        r#"["text","hi"]"#,
        r#"Err("invalid length 1, expected struct TextContent with 3 elements at line 1 column 13")"#,
    ),
    (
        r#"["text","hi",null]"#,
        r#"Err("invalid length 2, expected struct TextContent with 3 elements at line 1 column 18")"#,
    ),
    (
        r#"["text","hi",null,null,1]"#,
        r#"Err("trailing characters at line 1 column 24")"#,
    ),
    (
        r#"["text"]"#,
        r#"Err("invalid length 0, expected struct TextContent with 3 elements at line 1 column 8")"#,
    ),
    (
        r#"["text",1,null,null]"#,
        r#"Err("invalid type: integer `1`, expected a string at line 1 column 9")"#,
    ),
    (
        r#"["text","hi",{"priority":"x"},null]"#,
        r#"Err("invalid type: string \"x\", expected f64 at line 1 column 28")"#,
    ),
    (
        r#"["text","hi",null,[1]]"#,
        r#"Err("invalid type: sequence, expected a map at line 1 column 18")"#,
    ),
    (
        r#"[0,"hi",null,null]"#,
        r#"Err("invalid type: integer `0`, expected variant identifier at line 1 column 2")"#,
    ),
    (
        r#"[1,"d","m",null,null]"#,
        r#"Err("invalid type: integer `1`, expected variant identifier at line 1 column 2")"#,
    ),
    (
        r#"[5,"hi",null,null]"#,
        r#"Err("invalid type: integer `5`, expected variant identifier at line 1 column 2")"#,
    ),
    (
        r#"["video","hi"]"#,
        r#"Err("unknown variant `video`, expected one of `text`, `image`, `audio`, `resource_link`, `resource` at line 1 column 8")"#,
    ),
    (
        r#"[null,"hi"]"#,
        r#"Err("invalid type: null, expected variant identifier at line 1 column 5")"#,
    ),
    (r#"[]"#, r#"Err("missing field `type` at line 1 column 2")"#),
    (
        r#"["image","d","image/png",null,null]"#,
        r#"Ok(Image(ImageContent { data: "d", mime_type: "image/png", annotations: None, meta: None }))"#,
    ),
    (
        r#"["image","d","image/png",{"audience":["assistant"]},{"a":null}]"#,
        r#"Ok(Image(ImageContent { data: "d", mime_type: "image/png", annotations: Some(Annotations { audience: Some([Assistant]), priority: None, last_modified: None }), meta: Some({"a": Null}) }))"#,
    ),
    (
        r#"["image","d"]"#,
        r#"Err("invalid length 1, expected struct ImageContent with 4 elements at line 1 column 13")"#,
    ),
    (
        r#"["image","d","image/png"]"#,
        r#"Err("invalid length 2, expected struct ImageContent with 4 elements at line 1 column 25")"#,
    ),
    (
        r#"["image","d",null,null,null]"#,
        r#"Err("invalid type: null, expected a string at line 1 column 17")"#,
    ),
    (
        r#"["image","d","m",null,null,null]"#,
        r#"Err("trailing characters at line 1 column 28")"#,
    ),
    (
        r#"["audio","d","audio/wav",null,null]"#,
        r#"Ok(Audio(AudioContent { data: "d", mime_type: "audio/wav", annotations: None, meta: None }))"#,
    ),
    (
        r#"["audio","d","audio/wav",null]"#,
        r#"Err("invalid length 3, expected struct AudioContent with 4 elements at line 1 column 30")"#,
    ),
    (
        r#"["audio",1,"audio/wav",null,null]"#,
        r#"Err("invalid type: integer `1`, expected a string at line 1 column 10")"#,
    ),
    (
        r#"["resource_link","u","n",null,null,null,null,null,null,null]"#,
        r#"Ok(ResourceLink(Resource { uri: "u", name: "n", title: None, description: None, mime_type: None, annotations: None, size: None, icons: None, meta: None }))"#,
    ),
    (
        r#"["resource_link","u","n","t","d","text/plain",{"lastModified":"x"},5,[{"src":"s","theme":"dark"}],{"a":1}]"#,
        r#"Ok(ResourceLink(Resource { uri: "u", name: "n", title: Some("t"), description: Some("d"), mime_type: Some("text/plain"), annotations: Some(Annotations { audience: None, priority: None, last_modified: Some("x") }), size: Some(5), icons: Some([Icon { src: "s", mime_type: None, sizes: None, theme: Some(Dark) }]), meta: Some({"a": Number(1)}) }))"#,
    ),
    (
        r#"["resource_link","u","n"]"#,
        r#"Err("invalid length 2, expected struct Resource with 9 elements at line 1 column 25")"#,
    ),
    (
        r#"["resource_link","u","n","t","d","m",null,null]"#,
        r#"Err("invalid length 7, expected struct Resource with 9 elements at line 1 column 47")"#,
    ),
    (
        r#"["resource_link","u","n","t","d","m",null,null,null]"#,
        r#"Err("invalid length 8, expected struct Resource with 9 elements at line 1 column 52")"#,
    ),
    (
        r#"["resource_link","u","n",null,null,null,null,-1,null,null]"#,
        r#"Err("invalid value: integer `-1`, expected u64 at line 1 column 47")"#,
    ),
    (
        r#"["resource_link","u","n",null,null,null,null,1.5,null,null]"#,
        r#"Err("invalid type: floating point `1.5`, expected u64 at line 1 column 48")"#,
    ),
    (
        r#"["resource_link","u","n",null,null,null,null,null,[{"theme":"blue","src":"s"}],null]"#,
        r#"Err("unknown variant `blue`, expected `light` or `dark` at line 1 column 66")"#,
    ),
    (
        r#"["resource_link","u","n",null,null,null,null,null,null,null,null]"#,
        r#"Err("trailing characters at line 1 column 61")"#,
    ),
    (
        r#"["resource_link","u",null,null,null,null,null,null,null,null]"#,
        r#"Err("invalid type: null, expected a string at line 1 column 25")"#,
    ),
    (
        r#"["resource",{"uri":"u","text":"t"},null,null]"#,
        r#"Ok(Resource(EmbeddedResource { resource: Text(TextResourceContents { uri: "u", mime_type: None, text: "t", meta: None }), annotations: None, meta: None }))"#,
    ),
    (
        r#"["resource",{"uri":"u","blob":"YQ=="},{"priority":1},{"m":true}]"#,
        r#"Ok(Resource(EmbeddedResource { resource: Blob(BlobResourceContents { uri: "u", mime_type: None, blob: "YQ==", meta: None }), annotations: Some(Annotations { audience: None, priority: Some(1.0), last_modified: None }), meta: Some({"m": Bool(true)}) }))"#,
    ),
    (
        r#"["resource",{"uri":"u"},null,null]"#,
        r#"Err("data did not match any variant of untagged enum ResourceContents at line 1 column 23")"#,
    ),
    (
        r#"["resource",null,null,null]"#,
        r#"Err("invalid type: null, expected untagged enum ResourceContents at line 1 column 16")"#,
    ),
    (
        r#"["resource"]"#,
        r#"Err("invalid length 0, expected struct EmbeddedResource with 3 elements at line 1 column 12")"#,
    ),
    (
        r#"["resource",{"uri":"u","text":"t"}]"#,
        r#"Err("invalid length 1, expected struct EmbeddedResource with 3 elements at line 1 column 35")"#,
    ),
    (
        r#"["resource",{"uri":"u","text":"t"},null,null,null]"#,
        r#"Err("trailing characters at line 1 column 46")"#,
    ),
];

/// A `ContentBlock` as an array (what serde's tagged enum reads: the tag, then the variant's
/// fields in order) reads as it did through each variant's derived decoder, errors and their
/// positions included.
#[test]
fn content_blocks_read_from_arrays_as_before() {
    let inputs = [
        r#"["text","hi",null,null]"#,
        r#"["text","hi",{"priority":0.5,"audience":["user"]},{"k":[1]}]"#,
        r#"["text","hi"]"#,
        r#"["text","hi",null]"#,
        r#"["text","hi",null,null,1]"#,
        r#"["text"]"#,
        r#"["text",1,null,null]"#,
        r#"["text","hi",{"priority":"x"},null]"#,
        r#"["text","hi",null,[1]]"#,
        r#"[0,"hi",null,null]"#,
        r#"[1,"d","m",null,null]"#,
        r#"[5,"hi",null,null]"#,
        r#"["video","hi"]"#,
        r#"[null,"hi"]"#,
        r#"[]"#,
        r#"["image","d","image/png",null,null]"#,
        r#"["image","d","image/png",{"audience":["assistant"]},{"a":null}]"#,
        r#"["image","d"]"#,
        r#"["image","d","image/png"]"#,
        r#"["image","d",null,null,null]"#,
        r#"["image","d","m",null,null,null]"#,
        r#"["audio","d","audio/wav",null,null]"#,
        r#"["audio","d","audio/wav",null]"#,
        r#"["audio",1,"audio/wav",null,null]"#,
        r#"["resource_link","u","n",null,null,null,null,null,null,null]"#,
        r#"["resource_link","u","n","t","d","text/plain",{"lastModified":"x"},5,[{"src":"s","theme":"dark"}],{"a":1}]"#,
        r#"["resource_link","u","n"]"#,
        r#"["resource_link","u","n","t","d","m",null,null]"#,
        r#"["resource_link","u","n","t","d","m",null,null,null]"#,
        r#"["resource_link","u","n",null,null,null,null,-1,null,null]"#,
        r#"["resource_link","u","n",null,null,null,null,1.5,null,null]"#,
        r#"["resource_link","u","n",null,null,null,null,null,[{"theme":"blue","src":"s"}],null]"#,
        r#"["resource_link","u","n",null,null,null,null,null,null,null,null]"#,
        r#"["resource_link","u",null,null,null,null,null,null,null,null]"#,
        r#"["resource",{"uri":"u","text":"t"},null,null]"#,
        r#"["resource",{"uri":"u","blob":"YQ=="},{"priority":1},{"m":true}]"#,
        r#"["resource",{"uri":"u"},null,null]"#,
        r#"["resource",null,null,null]"#,
        r#"["resource"]"#,
        r#"["resource",{"uri":"u","text":"t"}]"#,
        r#"["resource",{"uri":"u","text":"t"},null,null,null]"#,
    ];
    for text in inputs {
        let read = reads_as_derived::<ContentBlock, derived::ContentBlock>(text, same_block);
        let got = format!("{read:?}");
        match CONTENT_BLOCK_ARRAYS.iter().find(|(t, _)| *t == text) {
            Some((_, before)) => assert_eq!(got, *before, "{text}"),
            None => panic!("{text}: no case (it reads {got})"),
        }
    }
    assert_eq!(CONTENT_BLOCK_ARRAYS.len(), inputs.len());
}
