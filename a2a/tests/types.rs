//! The types against the specification's own JSON examples, ProtoJSON's reading rules,
//! and the core's params decoder for every method.

use sansrpc::method::{Method, ParamsDecoder};
use sansrpc::RawValue;
use sansrpc_a2a::methods::{self, *};
use sansrpc_a2a::types::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

fn roundtrip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(json: Value) -> T {
    let value: T = serde_json::from_value(json.clone()).unwrap();
    let back = serde_json::to_value(&value).unwrap();
    let again: T = serde_json::from_value(back).unwrap();
    assert_eq!(again, value);
    value
}

#[test]
fn the_specifications_examples_read() {
    // §6.1
    let send: SendMessageRequest = roundtrip(json!({
        "message": {"role": "ROLE_USER", "parts": [{"text": "What is the weather today?"}], "messageId": "msg-uuid"}
    }));
    assert_eq!(send.message.role, Role::User);
    let answer: SendMessageResponse = roundtrip(json!({"task": {
        "id": "task-uuid", "contextId": "context-uuid", "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "artifact-uuid", "name": "Weather Report",
                       "parts": [{"text": "Today will be sunny with a high of 75°F"}]}]
    }}));
    let SendMessageResponse::Task(task) = answer else {
        panic!()
    };
    assert_eq!(task.artifacts[0].name.as_deref(), Some("Weather Report"));
    // §6.2: streamed events.
    for event in [
        json!({"task": {"id": "task-uuid", "status": {"state": "TASK_STATE_WORKING"}}}),
        json!({"artifactUpdate": {"taskId": "task-uuid", "artifact": {"parts": [{"text": "# Climate Change Report\n\n"}]}}}),
        json!({"statusUpdate": {"taskId": "task-uuid", "status": {"state": "TASK_STATE_COMPLETED"}}}),
    ] {
        let _: StreamResponse = roundtrip(event);
    }
    // §6.5
    let list: ListTasksResponse = roundtrip(json!({
        "tasks": [{"id": "3f36680c-7f37-4a5f-945e-d78981fafd36", "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
                   "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2024-03-15T10:15:00Z"}}],
        "totalSize": 5, "pageSize": 10, "nextPageToken": ""
    }));
    assert_eq!(
        list.tasks[0].status.timestamp.unwrap().to_string(),
        "2024-03-15T10:15:00.000Z"
    );
    assert_eq!((list.total_size, list.page_size), (5, 10));
    // §9.4.4
    let params: ListTasksRequest = roundtrip(json!({
        "contextId": "context-uuid", "status": "TASK_STATE_WORKING", "pageSize": 50, "pageToken": "cursor-token"
    }));
    assert_eq!(params.status, TaskState::Working);
    assert_eq!(params.page_size, Some(50));
    // §6.7 and §6.8: a file by URL and by bytes, structured data.
    let message: Message = roundtrip(json!({
        "role": "ROLE_USER", "messageId": "m",
        "parts": [
            {"url": "https://example.com/report.pdf", "mediaType": "application/pdf", "filename": "report.pdf"},
            {"raw": "iVBORw0KGgo=", "mediaType": "image/png"},
            {"data": {"rows": [[1, "a"], [2, null]]}, "mediaType": "application/json"}
        ]
    }));
    assert_eq!(
        message.parts[1].content,
        PartContent::Raw(vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a])
    );
    // §6.6: a push notification config, as it comes back.
    let config: TaskPushNotificationConfig = roundtrip(json!({
        "id": "cfg", "taskId": "t", "url": "https://client.example.com/webhook",
        "token": "secure-client-token-for-task-aaa",
        "authentication": {"scheme": "Bearer", "credentials": "xyz"}
    }));
    assert_eq!(config.authentication.unwrap().scheme, "Bearer");
}

#[test]
fn the_sample_card_reads_though_it_keeps_two_names_from_0_3() {
    // §8.5's sample still writes `security` and `stateTransitionHistory`, which the 1.0
    // proto has not: they are ignored, as unknown fields are.
    let card: AgentCard = serde_json::from_value(json!({
        "name": "GeoSpatial Route Planner Agent",
        "description": "Provides advanced route planning.",
        "supportedInterfaces": [
            {"url": "https://georoute-agent.example.com/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "https://georoute-agent.example.com/a2a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
        ],
        "provider": {"organization": "Example Geo Services Inc.", "url": "https://www.examplegeoservices.com"},
        "iconUrl": "https://georoute-agent.example.com/icon.png",
        "version": "1.2.0",
        "documentationUrl": "https://docs.examplegeoservices.com/georoute-agent/api",
        "capabilities": {"streaming": true, "pushNotifications": true, "stateTransitionHistory": false, "extendedAgentCard": true},
        "securitySchemes": {"google": {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"}}},
        "security": [{"google": ["openid", "profile", "email"]}],
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json", "image/png"],
        "skills": [{"id": "route-optimizer-traffic", "name": "Traffic-Aware Route Optimizer",
                    "description": "Calculates the optimal driving route.", "tags": ["maps"],
                    "inputModes": ["application/json"], "outputModes": ["text/html"]}],
        "signatures": [{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "QFdkNLNszlGj3z3u0YQGt"}]
    }))
    .unwrap();
    assert_eq!(card.supported_interfaces.len(), 2);
    assert_eq!(card.capabilities.extended_agent_card, Some(true));
    assert!(matches!(
        card.security_schemes["google"],
        SecurityScheme::OpenIdConnectSecurityScheme(_)
    ));
    assert!(card.security_requirements.is_empty());
    let json = serde_json::to_value(&card).unwrap();
    assert!(json.get("security").is_none());
    assert_eq!(
        json["iconUrl"],
        "https://georoute-agent.example.com/icon.png"
    );
}

#[test]
fn protojson_reading_rules_hold() {
    // null is unset; numbers come as strings too; enums as numbers.
    let config: SendMessageConfiguration = serde_json::from_value(json!({
        "acceptedOutputModes": null, "historyLength": "3", "returnImmediately": true,
        "taskPushNotificationConfig": null
    }))
    .unwrap();
    assert_eq!(config.history_length, Some(3));
    assert!(config.return_immediately);
    assert!(config.accepted_output_modes.is_empty());
    let status: TaskStatus =
        serde_json::from_value(json!({"state": 6, "timestamp": null})).unwrap();
    assert_eq!(status.state, TaskState::InputRequired);
    assert!(serde_json::from_value::<TaskStatus>(json!({"state": 9})).is_err());
    assert!(
        serde_json::from_value::<GetTaskRequest>(json!({"id": "t", "historyLength": 1.5})).is_err()
    );
    assert!(
        serde_json::from_value::<GetTaskRequest>(json!({"id": "t", "historyLength": 1e12}))
            .is_err()
    );
    // Fields at their default are not written; REQUIRED ones are.
    let empty = Task::default();
    assert_eq!(
        serde_json::to_value(&empty).unwrap(),
        json!({"id": "", "status": {"state": "TASK_STATE_UNSPECIFIED"}})
    );
    assert_eq!(
        serde_json::to_value(Message::default()).unwrap(),
        json!({"messageId": "", "parts": []})
    );
    // A oneof with two members is refused.
    assert!(
        serde_json::from_value::<StreamResponse>(json!({"task": {"id": "a"}, "message": {}}))
            .is_err()
    );
    assert!(serde_json::from_value::<SecurityScheme>(
        json!({"mtlsSecurityScheme": {}, "apiKeySecurityScheme": {}})
    )
    .is_err());
}

#[test]
fn every_security_scheme_and_flow_has_its_member_name() {
    let schemes = json!({
        "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key", "description": "d"}},
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}},
        "oauth": {"oauth2SecurityScheme": {"flows": {"authorizationCode": {
            "authorizationUrl": "https://a", "tokenUrl": "https://t", "refreshUrl": "https://r",
            "scopes": {"read": "Read"}, "pkceRequired": true}}, "oauth2MetadataUrl": "https://m"}},
        "cc": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {"tokenUrl": "https://t", "scopes": {}}}}},
        "device": {"oauth2SecurityScheme": {"flows": {"deviceCode": {
            "deviceAuthorizationUrl": "https://d", "tokenUrl": "https://t", "scopes": {"a": "b"}}}}},
        "implicit": {"oauth2SecurityScheme": {"flows": {"implicit": {"authorizationUrl": "https://a", "scopes": {"a": "b"}}}}},
        "password": {"oauth2SecurityScheme": {"flows": {"password": {"tokenUrl": "https://t"}}}},
        "oidc": {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://o"}},
        "mtls": {"mtlsSecurityScheme": {"description": "client certs"}}
    });
    let decoded: std::collections::BTreeMap<String, SecurityScheme> =
        serde_json::from_value(schemes.clone()).unwrap();
    assert_eq!(decoded.len(), 9);
    assert_eq!(serde_json::to_value(&decoded).unwrap(), {
        let mut want = schemes;
        // Empty maps are not written (scopes of `cc`).
        want["cc"]["oauth2SecurityScheme"]["flows"]["clientCredentials"]["scopes"] = json!({});
        want
    });
    let requirement: SecurityRequirement =
        roundtrip(json!({"schemes": {"oauth": {"list": ["read"]}, "mtls": {}}}));
    assert_eq!(requirement.schemes["oauth"].list, ["read"]);
}

/// Params of method `M` decoded as the core's router decodes them.
fn params<M: Method>(json: Option<Value>) -> M::Params
where
    M::Params: DeserializeOwned,
{
    let text = json.map(|j| j.to_string());
    let raw = text.as_deref().map(|t| RawValue::from_json(t).unwrap());
    ParamsDecoder::<M::Params>::new()
        .decode(raw)
        .unwrap_or_else(|e| panic!("{}: {e:?}", M::NAME))
}

#[test]
fn every_methods_params_decode_through_the_core() {
    assert_eq!(methods::ALL.len(), 11);
    let p = params::<SendMessage>(Some(
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 2, "returnImmediately": true}}),
    ));
    assert_eq!(p.configuration.unwrap().history_length, Some(2));
    let p = params::<SendStreamingMessage>(Some(
        json!({"message": {"messageId": "m", "parts": [{"text": "hi"}]}}),
    ));
    assert_eq!(p.message.message_id, "m");
    assert_eq!(
        params::<GetTask>(Some(json!({"id": "t", "historyLength": 10}))).history_length,
        Some(10)
    );
    assert_eq!(
        params::<ListTasks>(Some(json!({"includeArtifacts": true}))).include_artifacts,
        Some(true)
    );
    assert_eq!(params::<ListTasks>(None), ListTasksRequest::default());
    assert_eq!(
        params::<CancelTask>(Some(json!({"id": "t", "metadata": {"why": "done"}}))).id,
        "t"
    );
    assert_eq!(params::<SubscribeToTask>(Some(json!({"id": "t"}))).id, "t");
    let c = params::<CreateTaskPushNotificationConfig>(Some(
        json!({"taskId": "t", "url": "https://h"}),
    ));
    assert_eq!(
        (c.task_id.as_deref(), c.url.as_str()),
        (Some("t"), "https://h")
    );
    assert_eq!(
        params::<GetTaskPushNotificationConfig>(Some(json!({"taskId": "t", "id": "c"}))).id,
        "c"
    );
    assert_eq!(
        params::<ListTaskPushNotificationConfigs>(Some(json!({"taskId": "t", "pageSize": 5})))
            .page_size,
        5
    );
    assert_eq!(
        params::<DeleteTaskPushNotificationConfig>(Some(json!({"taskId": "t", "id": "c"}))).task_id,
        "t"
    );
    // §9.4.8 sends no params at all.
    assert_eq!(
        params::<GetExtendedAgentCard>(None),
        GetExtendedAgentCardRequest::default()
    );
    assert_eq!(
        params::<GetExtendedAgentCard>(Some(json!({"tenant": "x"})))
            .tenant
            .as_deref(),
        Some("x")
    );
    // Delete's result is null, as the SDKs' servers send it; `{}` reads too.
    assert_eq!(serde_json::to_value(Empty).unwrap(), Value::Null);
    assert_eq!(serde_json::from_value::<Empty>(json!({})).unwrap(), Empty);
    assert!(is_streaming(SEND_STREAMING_MESSAGE) && is_streaming(SUBSCRIBE_TO_TASK));
    assert!(!is_streaming(SEND_MESSAGE));
}

/// ProtoJSON parsers take a field by its proto name as well as its JSON name (the SDKs
/// do; the TCK sends `task_id`): every multi-word member reads either way, and is written
/// in camelCase.
#[test]
fn proto_field_names_read_as_json_names() {
    let p = params::<ListTaskPushNotificationConfigs>(Some(
        json!({"task_id": "t", "page_size": 5, "page_token": "x"}),
    ));
    assert_eq!((p.task_id.as_str(), p.page_size), ("t", 5));
    let p = params::<SendMessage>(Some(json!({
        "message": {"message_id": "m", "role": "ROLE_USER", "context_id": "c",
            "reference_task_ids": ["r"], "parts": [{"text": "hi", "media_type": "text/plain"}]},
        "configuration": {"accepted_output_modes": ["text/plain"], "history_length": 2,
            "return_immediately": true}
    })));
    assert_eq!(p.message.message_id, "m");
    assert_eq!(p.message.context_id.as_deref(), Some("c"));
    assert_eq!(p.message.reference_task_ids, ["r"]);
    assert_eq!(p.message.parts[0].media_type.as_deref(), Some("text/plain"));
    let c = p.configuration.unwrap();
    assert_eq!((c.history_length, c.return_immediately), (Some(2), true));
    let l = params::<ListTasks>(Some(
        json!({"context_id": "c", "include_artifacts": true, "status_timestamp_after": "2026-01-01T00:00:00Z"}),
    ));
    assert_eq!(l.include_artifacts, Some(true));
    assert!(l.status_timestamp_after.is_some());
    let event: StreamResponse = serde_json::from_value(json!({"status_update": {
        "task_id": "t", "context_id": "c", "status": {"state": "TASK_STATE_WORKING"}}}))
    .unwrap();
    let written = serde_json::to_value(&event).unwrap();
    assert_eq!(written["statusUpdate"]["taskId"], "t");
    assert_eq!(written["statusUpdate"]["contextId"], "c");
}
