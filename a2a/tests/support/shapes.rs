//! The Rust half of the SDK shape tests: each SDK type by its proto name, re-encoding, our
//! own samples (machine output included), and JSON compared as values.
#![allow(dead_code)]

use sansrpc_a2a::echo::agent_card;
use sansrpc_a2a::machine::{SeededIds, SendMode, TaskConfig, TaskEvent, TaskMachine, Update};
use sansrpc_a2a::types::*;
use sansrpc_a2a::{A2aError, ErrorKind};
use serde_json::{json, Value};

use super::{at, send, user};

/// Decodes `json` as the A2A type named `type_name` (its proto name) and encodes it again.
pub fn reencode(type_name: &str, json: &Value) -> Result<Value, String> {
    fn again<T: serde::de::DeserializeOwned + serde::Serialize>(
        json: &Value,
    ) -> Result<Value, String> {
        let value: T = serde_json::from_value(json.clone()).map_err(|e| e.to_string())?;
        serde_json::to_value(&value).map_err(|e| e.to_string())
    }
    match type_name {
        "Message" => again::<Message>(json),
        "Part" => again::<Part>(json),
        "Artifact" => again::<Artifact>(json),
        "TaskStatus" => again::<TaskStatus>(json),
        "Task" => again::<Task>(json),
        "TaskStatusUpdateEvent" => again::<TaskStatusUpdateEvent>(json),
        "TaskArtifactUpdateEvent" => again::<TaskArtifactUpdateEvent>(json),
        "StreamResponse" => again::<StreamResponse>(json),
        "SendMessageResponse" => again::<SendMessageResponse>(json),
        "AgentCard" => again::<AgentCard>(json),
        "SendMessageRequest" => again::<SendMessageRequest>(json),
        "GetTaskRequest" => again::<GetTaskRequest>(json),
        "ListTasksRequest" => again::<ListTasksRequest>(json),
        "ListTasksResponse" => again::<ListTasksResponse>(json),
        "CancelTaskRequest" => again::<CancelTaskRequest>(json),
        "SubscribeToTaskRequest" => again::<SubscribeToTaskRequest>(json),
        "TaskPushNotificationConfig" => again::<TaskPushNotificationConfig>(json),
        "GetTaskPushNotificationConfigRequest" => {
            again::<GetTaskPushNotificationConfigRequest>(json)
        }
        "DeleteTaskPushNotificationConfigRequest" => {
            again::<DeleteTaskPushNotificationConfigRequest>(json)
        }
        "ListTaskPushNotificationConfigsRequest" => {
            again::<ListTaskPushNotificationConfigsRequest>(json)
        }
        "ListTaskPushNotificationConfigsResponse" => {
            again::<ListTaskPushNotificationConfigsResponse>(json)
        }
        "GetExtendedAgentCardRequest" => again::<GetExtendedAgentCardRequest>(json),
        "SecurityRequirement" => again::<SecurityRequirement>(json),
        other => Err(format!("no Rust type for {other}")),
    }
}

/// `v` with every number as a float: ProtoJSON's `Struct` and `Value` hold doubles, so an
/// SDK writes back `1` as `1.0`.
pub fn normalized(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), normalized(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Samples made on our side: what the machine and the echo agent really put on the wire,
/// and values at the edges of ProtoJSON (REQUIRED fields empty, `null` data, empty bytes,
/// presence of an `optional` at its zero value).
pub fn own_samples() -> Vec<(String, &'static str, Value)> {
    let mut out: Vec<(String, &'static str, Value)> = Vec::new();
    let mut add =
        |name: &str, ty: &'static str, value: Value| out.push((format!("rust-{name}"), ty, value));

    // A task through the machine: created, asked, continued, completed; streamed.
    let mut m = TaskMachine::new(TaskConfig::default(), SeededIds::new(9));
    let mut first = user("m-1", "ask");
    first.metadata = Some(
        json!({"n": 1, "deep": {"x": [true, null]}})
            .as_object()
            .unwrap()
            .clone(),
    );
    let _ = m
        .handle_send(at(0), send(first), SendMode::Streaming)
        .unwrap();
    let mut events = super::drain(&mut m);
    let Some(TaskEvent::Run(run)) = events.pop() else {
        panic!()
    };
    let question = Message::text(Role::Agent, "", "what?");
    m.handle_update(
        at(1),
        run.id,
        Update::status(TaskState::InputRequired, Some(question)),
    )
    .unwrap();
    m.handle_run_end(run.id);
    events.extend(super::drain(&mut m));
    let task = m.task(&run.task.id).unwrap().clone();
    let _ = m
        .handle_send(
            at(2),
            send(super::follow_up("m-2", "blue", &task)),
            SendMode::Streaming,
        )
        .unwrap();
    let mut more = super::drain(&mut m);
    let Some(TaskEvent::Run(run)) = more.pop() else {
        panic!()
    };
    events.extend(more);
    let mut artifact = Artifact::text("", "blue");
    artifact.parts.push(Part::new(PartContent::Raw(vec![])));
    m.handle_update(at(3), run.id, Update::artifact(artifact))
        .unwrap();
    m.handle_update(
        at(4),
        run.id,
        Update::Artifact {
            artifact: Artifact {
                artifact_id: m.task(&task.id).unwrap().artifacts[0].artifact_id.clone(),
                parts: vec![Part::text("!")],
                ..Artifact::default()
            },
            append: true,
            last_chunk: true,
            metadata: Some(json!({"chunk": 2}).as_object().unwrap().clone()),
        },
    )
    .unwrap();
    m.handle_update(at(5), run.id, Update::status(TaskState::Completed, None))
        .unwrap();
    events.extend(super::drain(&mut m));
    for (i, event) in events.iter().enumerate() {
        if let TaskEvent::Stream { response, .. } = event {
            add(
                &format!("stream-{i}"),
                "StreamResponse",
                serde_json::to_value(response).unwrap(),
            );
        }
    }
    add(
        "task",
        "Task",
        serde_json::to_value(m.task(&task.id).unwrap()).unwrap(),
    );
    let listed = m
        .list_tasks(&ListTasksRequest {
            include_artifacts: Some(true),
            ..Default::default()
        })
        .unwrap();
    add(
        "list",
        "ListTasksResponse",
        serde_json::to_value(&listed).unwrap(),
    );
    add(
        "list-empty",
        "ListTasksResponse",
        serde_json::to_value(ListTasksResponse::default()).unwrap(),
    );

    add(
        "card",
        "AgentCard",
        serde_json::to_value(agent_card("http://127.0.0.1:3000/a2a")).unwrap(),
    );
    add(
        "empty-task",
        "Task",
        serde_json::to_value(Task::default()).unwrap(),
    );
    add(
        "empty-message",
        "Message",
        serde_json::to_value(Message::default()).unwrap(),
    );
    let mut null_data = user("m", "x");
    null_data.parts.push(Part::data(Value::Null));
    null_data.parts.push(Part::data(json!([null])));
    add(
        "null-data",
        "Message",
        serde_json::to_value(null_data).unwrap(),
    );
    let presence = SendMessageRequest {
        message: user("m", "x"),
        configuration: Some(SendMessageConfiguration {
            history_length: Some(0),
            ..Default::default()
        }),
        ..Default::default()
    };
    add(
        "history-length-zero",
        "SendMessageRequest",
        serde_json::to_value(presence).unwrap(),
    );
    let list = ListTasksRequest {
        page_size: Some(1),
        include_artifacts: Some(false),
        status_timestamp_after: Some(Timestamp::from_unix(1_710_497_700, 1_000).unwrap()),
        ..Default::default()
    };
    add(
        "list-request",
        "ListTasksRequest",
        serde_json::to_value(list).unwrap(),
    );
    let caps = AgentCapabilities {
        streaming: Some(false),
        push_notifications: Some(false),
        extended_agent_card: Some(false),
        extensions: vec![AgentExtension::default()],
    };
    let mut card = agent_card("http://h/a2a");
    card.capabilities = caps;
    card.documentation_url = Some(String::new());
    add(
        "card-false-capabilities",
        "AgentCard",
        serde_json::to_value(card).unwrap(),
    );
    out
}

/// The SDK exception class a client raises for an error of `kind`.
pub fn class_of(kind: ErrorKind) -> String {
    format!("{kind:?}Error")
}

/// Our error object for every kind, with metadata, as `{kind, error}`.
pub fn our_errors() -> Vec<Value> {
    ErrorKind::ALL
        .into_iter()
        .map(|kind| {
            let object = A2aError::new(kind, "ours")
                .with_metadata("taskId", "t-9")
                .to_error_object();
            let data: Value = serde_json::from_str(object.data.as_ref().unwrap().get()).unwrap();
            json!({
                "kind": format!("{kind:?}"),
                "error": {"code": object.code, "message": object.message, "data": data},
            })
        })
        .collect()
}

/// An error object in JSON read as an A2A error, the way our client will.
pub fn read_error(error: &Value) -> Option<A2aError> {
    let mut object = sansrpc::ErrorObject::new(
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    );
    if let Some(data) = error.get("data") {
        object = object.with_data(sansrpc::RawValue::from_string(data.to_string()).unwrap());
    }
    A2aError::from_error_object(&object)
}
