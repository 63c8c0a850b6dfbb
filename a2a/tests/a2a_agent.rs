//! The example agent `a2a_agent`, run as a process, against the contract
//! (`shared/contracts/a2a-echo-agent.md`): driven by our client and by a2a-sdk 1.3.0's
//! (installed with pip from `interop/a2a-python/requirements.txt`), and over raw HTTP for
//! the wire details (the card, the version rules, the SSE framing, `Last-Event-ID`).

#[path = "support/events.rs"]
mod events;
#[path = "../../tests/support/interop.rs"]
mod interop;

use std::process::Command;
use std::time::Duration;

use events::describe;
use sansrpc_a2a::tokio::Client;
use sansrpc_a2a::types::{
    GetTaskRequest, ListTasksRequest, Message, Role, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task, TaskState,
};
use sansrpc_a2a::ErrorKind;
use serde_json::{json, Value};

/// Starts `a2a_agent` on a port of its own; its base URL.
fn agent() -> (interop::Running, String) {
    interop::built_example("sansrpc-a2a", "a2a_agent");
    let (process, line) = interop::start_example("sansrpc-a2a", "a2a_agent", &[("PORT", "0")]);
    let url = line
        .strip_prefix("a2a_agent listening on ")
        .and_then(|u| u.strip_suffix("/a2a"))
        .unwrap_or_else(|| panic!("first line: {line}"))
        .to_owned();
    (process, url)
}

fn send(text: &str) -> SendMessageRequest {
    SendMessageRequest {
        message: Message::text(Role::User, format!("m-{text}-{}", rand_suffix()), text),
        ..Default::default()
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn task(answer: SendMessageResponse) -> Task {
    match answer {
        SendMessageResponse::Task(task) => task,
        other => panic!("not a task: {other:?}"),
    }
}

async fn collect(stream: &mut sansrpc_a2a::tokio::EventStream) -> Vec<String> {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(describe(&event.unwrap()));
    }
    events
}

#[tokio::test]
async fn our_client_drives_the_example_agent_through_the_contract() {
    let (_agent, base) = agent();
    contract(&base, Server::Ours).await;
}

/// Whose server answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Server {
    Ours,
    /// a2a-sdk's fills the task and context ids into the user messages it keeps.
    Python,
    /// @a2a-js/sdk's too, and answers a second CancelTask of a canceled task with the
    /// task, where the contract (and the other two) say TaskNotCancelableError.
    Js,
}

/// Our client drives the agent at `base` through every point of the contract.
async fn contract(base: &str, server: Server) {
    let exact = server == Server::Ours;
    let client = Client::resolve(base).await.unwrap();
    let card = client.card().clone();
    assert_eq!(card.name, "echo-agent");
    assert_eq!(client.url(), format!("{base}/a2a"));
    assert_eq!(card.capabilities.streaming, Some(true));
    assert_ne!(card.capabilities.push_notifications, Some(true));
    assert!(card.skills.iter().any(|s| s.id == "echo"));

    // echo: the artifact, completed; the history the message as sent.
    let sent = send("echo hello  world");
    let done = task(client.send_message(&sent).await.unwrap());
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(done.artifacts[0].parts[0].as_text(), Some("hello  world"));
    if exact {
        assert_eq!(done.history, std::slice::from_ref(&sent.message));
    }
    assert_eq!(done.history[0].message_id, sent.message.message_id);
    assert_eq!(done.history[0].parts, sent.message.parts);

    // slow 3 streamed: the task, three steps, the artifact, completed.
    let mut stream = client
        .send_streaming_message(&send("slow 3"))
        .await
        .unwrap();
    assert_eq!(
        collect(&mut stream).await,
        [
            "task TASK_STATE_SUBMITTED",
            "status TASK_STATE_WORKING step 1",
            "status TASK_STATE_WORKING step 2",
            "status TASK_STATE_WORKING step 3",
            "artifact done",
            "status TASK_STATE_COMPLETED "
        ]
    );

    // ask: input required, and the answer continues the task.
    let asked = task(client.send_message(&send("ask")).await.unwrap());
    assert_eq!(asked.status.state, TaskState::InputRequired);
    let mut answer = send("blue");
    answer.message.task_id = Some(asked.id.clone());
    answer.message.context_id = Some(asked.context_id.clone());
    let answered = task(client.send_message(&answer).await.unwrap());
    assert_eq!(
        (answered.id.as_str(), answered.status.state),
        (asked.id.as_str(), TaskState::Completed)
    );
    assert_eq!(answered.artifacts[0].parts[0].as_text(), Some("blue"));

    // returnImmediately: the task at once; GetTask sees it finish.
    let mut later = send("slow 2");
    later.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let started = task(client.send_message(&later).await.unwrap());
    assert!(!started.status.state.is_terminal());
    let get = GetTaskRequest {
        id: started.id.clone(),
        ..Default::default()
    };
    let mut seen = client.get_task(&get).await.unwrap();
    for _ in 0..200 {
        if seen.status.state.is_terminal() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        seen = client.get_task(&get).await.unwrap();
    }
    assert_eq!(seen.status.state, TaskState::Completed);
    assert_eq!(seen.artifacts[0].parts[0].as_text(), Some("done"));

    // wait: three streams on one task get the same events; cancel ends them.
    let mut waiting = send("wait");
    waiting.configuration = later.configuration.clone();
    let waiting = task(client.send_message(&waiting).await.unwrap());
    let mut streams = Vec::new();
    for _ in 0..3 {
        streams.push(client.subscribe(&waiting.id).await.unwrap());
    }
    let canceled = client.cancel_task(&waiting.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    for stream in &mut streams {
        let events = collect(stream).await;
        assert_eq!(events.last().unwrap(), "status TASK_STATE_CANCELED ");
        assert!(events[0].starts_with("task "), "{events:?}");
    }
    let again = client.cancel_task(&waiting.id).await;
    match server {
        Server::Js => assert_eq!(again.unwrap().status.state, TaskState::Canceled),
        _ => assert_eq!(
            again.unwrap_err().a2a().unwrap().kind(),
            ErrorKind::TaskNotCancelable
        ),
    }
    let subscribe_done = client.subscribe(&waiting.id).await.unwrap_err();
    assert_eq!(
        subscribe_done.a2a().unwrap().kind(),
        ErrorKind::UnsupportedOperation
    );

    // ListTasks by context; unknown task; methods of capabilities the card does not declare.
    let listed = client
        .list_tasks(&ListTasksRequest {
            context_id: Some(asked.context_id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.tasks.len(), 1);
    assert_eq!(listed.tasks[0].id, asked.id);
    let missing = GetTaskRequest {
        id: "no-such-task".into(),
        ..Default::default()
    };
    let e = client.get_task(&missing).await.unwrap_err();
    assert_eq!(e.a2a().unwrap().kind(), ErrorKind::TaskNotFound);
    let e = client
        .create_push_config(&sansrpc_a2a::types::TaskPushNotificationConfig {
            task_id: Some(done.id.clone()),
            url: "http://127.0.0.1:9/hook".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        e.a2a().unwrap().kind(),
        ErrorKind::PushNotificationNotSupported
    );
    let e = client.extended_card().await.unwrap_err();
    assert_eq!(e.a2a().unwrap().kind(), ErrorKind::UnsupportedOperation);
    assert!(e.to_string().contains("UNSUPPORTED_OPERATION"), "{e}");
}

#[tokio::test]
async fn twenty_streams_at_once_and_a_broken_stream_resumed_with_last_event_id() {
    let (_agent, base) = agent();
    let client = Client::resolve(&base).await.unwrap();
    let mut all = Vec::new();
    for _ in 0..20 {
        all.push(
            client
                .send_streaming_message(&send("slow 2"))
                .await
                .unwrap(),
        );
    }
    for stream in &mut all {
        assert_eq!(collect(stream).await.len(), 5);
    }

    // A stream read to its second event, then dropped; resumed from there.
    let mut stream = client
        .send_streaming_message(&send("slow 4"))
        .await
        .unwrap();
    let first = stream.next().await.unwrap().unwrap();
    let StreamResponse::Task(t) = &first else {
        panic!("{first:?}")
    };
    let id = t.id.clone();
    let second = describe(&stream.next().await.unwrap().unwrap());
    assert_eq!(second, "status TASK_STATE_WORKING step 1");
    let last_id = stream.last_event_id().to_owned();
    assert!(last_id.ends_with(".2"), "{last_id}");
    let mut resumed = client.resume(&id, &stream).await.unwrap();
    drop(stream);
    assert_eq!(
        collect(&mut resumed).await,
        [
            "status TASK_STATE_WORKING step 2",
            "status TASK_STATE_WORKING step 3",
            "status TASK_STATE_WORKING step 4",
            "artifact done",
            "status TASK_STATE_COMPLETED "
        ]
    );
}

/// A raw POST; the status, content type and body.
async fn post(url: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    let mut command = Command::new("curl");
    command.args([
        "-s",
        "-N",
        "-X",
        "POST",
        "-o",
        "-",
        "-w",
        "\n%{http_code} %{content_type}",
    ]);
    for (name, value) in headers {
        command.arg("-H").arg(format!("{name}: {value}"));
    }
    command.arg("--data-binary").arg(body).arg(url);
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, tail) = text.rsplit_once('\n').unwrap();
    let (status, kind) = tail.split_once(' ').unwrap();
    (status.parse().unwrap(), kind.to_owned(), body.to_owned())
}

#[tokio::test]
async fn the_wire_keeps_the_json_rpc_and_version_rules() {
    let (_agent, base) = agent();
    let url = format!("{base}/a2a");
    let v = [("A2A-Version", "1.0"), ("content-type", "application/json")];
    let error = |body: &str| -> (Value, i64) {
        let v: Value = serde_json::from_str(body).unwrap();
        (v["id"].clone(), v["error"]["code"].as_i64().unwrap())
    };
    // No version header: 0.3, refused; a patch number counts for nothing.
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"x"}}"#;
    let (status, _, body) = post(&url, &[], call).await;
    assert_eq!((status, error(&body)), (200, (json!(7), -32009)));
    let (_, _, body) = post(&url, &[("A2A-Version", "1.0.3")], call).await;
    assert_eq!(error(&body), (json!(7), -32001));
    let (_, _, body) = post(&format!("{url}?A2A-Version=1.0"), &[], call).await;
    assert_eq!(error(&body), (json!(7), -32001));
    // Envelope errors.
    for (sent, id, code) in [
        ("{", json!(null), -32700),
        ("[]", json!(null), -32600),
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#,
            json!(1),
            -32600,
        ),
        // The A2A TCK's JSON-RPC cases: no method, an id that is an object.
        (r#"{"jsonrpc":"2.0","id":5,"params":{}}"#, json!(5), -32600),
        (
            r#"{"jsonrpc":"2.0","id":{"bad":"type"},"method":"SendMessage"}"#,
            json!(null),
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"a","method":"tasks/get"}"#,
            json!("a"),
            -32601,
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"historyLength":"x"}}"#,
            json!(2),
            -32602,
        ),
        // A message without its REQUIRED role or parts (the TCK's business-logic cases).
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"SendMessage","params":{"message":{"messageId":"m","parts":[{"text":"echo x"}]}}}"#,
            json!(8),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER"}}}"#,
            json!(9),
            -32602,
        ),
    ] {
        let (status, kind, body) = post(&url, &v, sent).await;
        assert_eq!((status, kind.as_str()), (200, "application/json"), "{sent}");
        assert_eq!(error(&body), (id, code), "{sent}: {body}");
    }
    // A stream's error before it starts is one JSON answer; a stream is SSE with ids.
    let subscribe = r#"{"jsonrpc":"2.0","id":3,"method":"SubscribeToTask","params":{"id":"nope"}}"#;
    let (_, kind, body) = post(&url, &v, subscribe).await;
    assert_eq!(
        (kind.as_str(), error(&body)),
        ("application/json", (json!(3), -32001))
    );
    let stream = r#"{"jsonrpc":"2.0","id":"s","method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"echo x"}]}}}"#;
    let (status, kind, body) = post(&url, &v, stream).await;
    assert_eq!((status, kind.as_str()), (200, "text/event-stream"));
    let events: Vec<&str> = body
        .split("\n\n")
        .filter(|e| e.contains("data: {"))
        .collect();
    assert_eq!(events.len(), 3, "{body}");
    assert!(body.starts_with("id: "), "{body}");
    assert!(body.contains("retry: 1000"), "{body}");
    for event in events {
        let data = event
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap();
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(
            (v["jsonrpc"].as_str(), v["id"].as_str()),
            (Some("2.0"), Some("s"))
        );
    }
    // The card: GET only, at its well-known path; other paths 404.
    let card = Command::new("curl")
        .args(["-s", &format!("{base}/.well-known/agent-card.json")])
        .output()
        .unwrap();
    let card: Value = serde_json::from_slice(&card.stdout).unwrap();
    assert_eq!(
        card["supportedInterfaces"][0],
        json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"})
    );
    assert_eq!(card["defaultInputModes"], json!(["text/plain"]));
    let (status, _, _) = post(&format!("{base}/.well-known/agent-card.json"), &[], "").await;
    assert_eq!(status, 405);
    let (status, _, _) = post(&format!("{base}/other"), &[], "").await;
    assert_eq!(status, 404);
}

#[test]
fn a2a_sdk_client_drives_the_example_agent() {
    let site = interop::pip_install(env!("CARGO_MANIFEST_DIR"), "a2a-python");
    let (_agent, base) = agent();
    let script = interop::interop(env!("CARGO_MANIFEST_DIR"), "a2a-python").join("client.py");
    let out = interop::output_within(
        Command::new("python3")
            .arg(script)
            .arg(&base)
            .env("PYTHONPATH", site)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        interop::CLIENT_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "client.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Resubscribed to a running `slow 3`: the task first (as it was then), then the rest
    // of its events to the end.
    let resubscribed = report["resubscribe"].as_array().unwrap();
    assert_eq!(resubscribed[0][0], "task");
    assert_eq!(
        resubscribed[resubscribed.len() - 3..],
        [
            json!(["status", "TASK_STATE_WORKING", "step 3"]),
            json!(["artifact", "done"]),
            json!(["status", "TASK_STATE_COMPLETED"])
        ]
    );
    let slow = json!([
        ["task", "TASK_STATE_SUBMITTED"],
        ["status", "TASK_STATE_WORKING", "step 1"],
        ["status", "TASK_STATE_WORKING", "step 2"],
        ["status", "TASK_STATE_WORKING", "step 3"],
        ["artifact", "done"],
        ["status", "TASK_STATE_COMPLETED"]
    ]);
    let canceled = json!([
        ["task", "TASK_STATE_WORKING"],
        ["status", "TASK_STATE_CANCELED"]
    ]);
    assert_eq!(
        report,
        json!({
            "card": {"name": "echo-agent", "streaming": true, "skills": ["echo"], "bindings": ["JSONRPC"]},
            "echo": {"state": "TASK_STATE_COMPLETED", "artifact": ["hello"], "history": ["echo hello"]},
            "slow": slow,
            "ask": {"first": "TASK_STATE_INPUT_REQUIRED", "question": ["what?"], "then": "TASK_STATE_COMPLETED", "artifact": ["blue"], "same_task": true},
            "immediate": {"first": "TASK_STATE_SUBMITTED", "later": "TASK_STATE_COMPLETED", "artifact": ["done"]},
            "wait": {"canceled": "TASK_STATE_CANCELED", "subscribed": canceled, "again": canceled},
            "cancel_again": {"type": "TaskNotCancelableError", "code": null},
            "resubscribe": report["resubscribe"],
            "list": {"count": 1, "ids": [true]},
            "not_found": {"type": "TaskNotFoundError", "code": null},
            "errors": {
                "create_push": {"type": "PushNotificationNotSupportedError", "code": null},
                "get_push": {"type": "PushNotificationNotSupportedError", "code": null},
                "extended_card": {"answered": "echo-agent"}
            }
        })
    );
}

#[test]
fn a2a_js_sdk_client_drives_the_example_agent() {
    let dir = interop::interop(env!("CARGO_MANIFEST_DIR"), "a2a-js");
    interop::npm_ci(&dir, "@a2a-js/sdk");
    let (_agent, base) = agent();
    let out = interop::output_within(
        Command::new("node").arg(dir.join("client.mjs")).arg(&base),
        interop::CLIENT_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "client.mjs failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let resubscribed = report["resubscribe"].as_array().unwrap();
    assert_eq!(resubscribed[0][0], "task");
    assert_eq!(
        resubscribed[resubscribed.len() - 3..],
        [
            json!(["status", "TASK_STATE_WORKING", "step 3"]),
            json!(["artifact", "done"]),
            json!(["status", "TASK_STATE_COMPLETED"])
        ]
    );
    let canceled = json!([
        ["task", "TASK_STATE_WORKING"],
        ["status", "TASK_STATE_CANCELED"]
    ]);
    assert_eq!(
        report,
        json!({
            "card": {"name": "echo-agent", "streaming": true, "skills": ["echo"], "bindings": ["JSONRPC"]},
            "echo": {"state": "TASK_STATE_COMPLETED", "artifact": ["hello"], "history": ["echo hello"]},
            "slow": [
                ["task", "TASK_STATE_SUBMITTED"],
                ["status", "TASK_STATE_WORKING", "step 1"],
                ["status", "TASK_STATE_WORKING", "step 2"],
                ["status", "TASK_STATE_WORKING", "step 3"],
                ["artifact", "done"],
                ["status", "TASK_STATE_COMPLETED"]
            ],
            "ask": {"first": "TASK_STATE_INPUT_REQUIRED", "question": ["what?"], "then": "TASK_STATE_COMPLETED", "artifact": ["blue"], "same_task": true},
            "immediate": {"first": "TASK_STATE_SUBMITTED", "later": "TASK_STATE_COMPLETED", "artifact": ["done"]},
            "wait": {"canceled": "TASK_STATE_CANCELED", "subscribed": canceled, "again": canceled},
            "cancel_again": {"type": "JsonRpcTaskNotCancelableError"},
            "resubscribe": report["resubscribe"],
            "list": {"count": 1, "ids": [true]},
            "not_found": {"type": "JsonRpcTaskNotFoundError"},
            "errors": {
                // What the SDK's client does not refuse itself (it refuses create, get and
                // list of push configs when the card declares none), and its transport
                // asked directly: the agent answers the specification's errors.
                "delete_push": {"type": "JsonRpcPushNotificationNotSupportedError"},
                "create_push_transport": {"type": "JsonRpcPushNotificationNotSupportedError"},
                "extended_card_transport": {"type": "JsonRpcUnsupportedOperationError"},
                "unversioned_transport": {"type": "JsonRpcVersionNotSupportedError"}
            }
        })
    );
}

/// Starts the program `command` (an SDK's server) and waits for its
/// `listening on <url>` line; the process and the URL.
fn sdk_server(command: &mut Command) -> (interop::Running, String) {
    use std::io::BufRead;
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = interop::Running(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .to_owned();
    (child, url)
}

#[tokio::test]
async fn our_client_drives_a2a_sdks_own_server_through_the_contract() {
    let site = tokio::task::spawn_blocking(|| {
        interop::pip_install(env!("CARGO_MANIFEST_DIR"), "a2a-python")
    })
    .await
    .unwrap();
    let script = interop::interop(env!("CARGO_MANIFEST_DIR"), "a2a-python").join("server.py");
    let (_server, base) = sdk_server(
        Command::new("python3")
            .arg(script)
            .env("PORT", "0")
            .env("PYTHONPATH", site)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
    );
    contract(&base, Server::Python).await;
}

#[tokio::test]
async fn our_client_drives_a2a_js_sdks_own_server_through_the_contract() {
    let dir = interop::interop(env!("CARGO_MANIFEST_DIR"), "a2a-js");
    let install = dir.clone();
    tokio::task::spawn_blocking(move || interop::npm_ci(&install, "express"))
        .await
        .unwrap();
    let (_server, base) = sdk_server(
        Command::new("node")
            .arg(dir.join("server.mjs"))
            .env("PORT", "0"),
    );
    contract(&base, Server::Js).await;
}

/// What both SDKs' push scripts report: every event of a `slow 2` task posted to their
/// receiver with their token, and the config methods.
fn push_report(token: &str) -> Value {
    let posted = [
        "task",
        "statusUpdate",
        "statusUpdate",
        "artifactUpdate",
        "statusUpdate",
    ];
    json!({
        "received": posted.iter().map(|kind| json!([token, kind])).collect::<Vec<_>>(),
        "last_state": "TASK_STATE_COMPLETED",
        "listed": [[true, token]],
        "got": token,
        "made": "second",
        "after_delete": ["second"],
    })
}

/// The example agent with push notifications declared (`A2A_PUSH=1`).
fn pushing_agent() -> (interop::Running, String) {
    interop::built_example("sansrpc-a2a", "a2a_agent");
    let env = [("PORT", "0"), ("A2A_PUSH", "1")];
    let (process, line) = interop::start_example("sansrpc-a2a", "a2a_agent", &env);
    let url = line
        .strip_prefix("a2a_agent listening on ")
        .and_then(|u| u.strip_suffix("/a2a"))
        .unwrap()
        .to_owned();
    (process, url)
}

#[test]
fn both_sdks_clients_get_push_notifications_from_the_example_agent() {
    let site = interop::pip_install(env!("CARGO_MANIFEST_DIR"), "a2a-python");
    let js = interop::interop(env!("CARGO_MANIFEST_DIR"), "a2a-js");
    interop::npm_ci(&js, "@a2a-js/sdk");
    let (_agent, base) = pushing_agent();
    let python = interop::interop(env!("CARGO_MANIFEST_DIR"), "a2a-python").join("push.py");
    let mut py = Command::new("python3");
    py.arg(python)
        .arg(&base)
        .env("PYTHONPATH", &site)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let mut node = Command::new("node");
    node.arg(js.join("push.mjs")).arg(&base);
    let runs = [(&mut py, "tok-py"), (&mut node, "tok-js")];
    for (command, token) in runs {
        let out = interop::output_within(command, interop::CLIENT_TIMEOUT);
        assert!(
            out.status.success(),
            "{token}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report, push_report(token));
    }
}
