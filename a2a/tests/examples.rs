//! The crate's examples, run with their output checked, and the guide's code: each
//! `rust,ignore` snippet of `docs/a2a.md` that follows a link to an example is in it.

#[path = "../../tests/support/interop.rs"]
mod interop;

use sansrpc_a2a::tokio::Client;
use sansrpc_a2a::types::{Message, Role, SendMessageRequest, SendMessageResponse, TaskState};

/// The snippets of `docs/a2a.md` after a link to `examples/<example>.rs` (before a link to
/// another example): each is in the example as it is; how many there were.
fn snippets_in(example: &str) -> usize {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../");
    let doc = std::fs::read_to_string(format!("{root}docs/a2a.md")).unwrap();
    let source = std::fs::read_to_string(format!("{root}a2a/examples/{example}.rs")).unwrap();
    let link = format!("examples/{example}.rs)");
    let (mut current, mut checked, mut rest) = (false, 0, doc.as_str());
    while let Some(at) = rest.find("```rust,ignore\n") {
        if let Some(last) = rest[..at].rfind("examples/") {
            current = rest[..at][last..].starts_with(&link);
        }
        let block = &rest[at + "```rust,ignore\n".len()..];
        let end = block.find("```").unwrap();
        if current {
            assert!(
                source.contains(&block[..end]),
                "not in {example}.rs:\n{}",
                &block[..end]
            );
            checked += 1;
        }
        rest = &block[end + 3..];
    }
    checked
}

#[test]
fn the_guide_shows_the_examples_as_they_are() {
    assert_eq!(snippets_in("a2a_axum"), 3);
}

#[tokio::test]
async fn the_axum_app_serves_its_agent_beside_mcp() {
    interop::built_example("sansrpc-a2a", "a2a_axum");
    let (_app, line) = interop::start_example("sansrpc-a2a", "a2a_axum", &[("PORT", "0")]);
    let base = line
        .strip_prefix("a2a_axum listening on ")
        .unwrap()
        .to_owned();
    let client = Client::resolve(&base).await.unwrap();
    assert_eq!(client.card().name, "shout");
    let request = SendMessageRequest {
        message: Message::text(Role::User, "m-1", "quiet please"),
        ..Default::default()
    };
    let SendMessageResponse::Task(task) = client.send_message(&request).await.unwrap() else {
        panic!()
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.artifacts[0].parts[0].as_text(), Some("QUIET PLEASE"));
    // The working status's message is in the history, after the user's.
    assert_eq!(task.history[1].first_text(), Some("shouting"));
    // MCP answers beside it.
    let out = std::process::Command::new("curl")
        .args(["-s", "-X", "POST", "-H", "content-type: application/json"])
        .args(["-H", "accept: application/json, text/event-stream"])
        .args(["-H", "mcp-protocol-version: 2025-11-25"])
        .args(["--data-binary", r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#])
        .arg(format!("{base}/mcp"))
        .output()
        .unwrap();
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(answer.contains("\"serverInfo\""), "{answer}");
}

#[tokio::test]
async fn the_tck_agent_keeps_every_task_working_until_it_is_canceled() {
    use sansrpc_a2a::types::GetTaskRequest;
    interop::built_example("sansrpc-a2a", "a2a_tck_agent");
    let (_agent, line) = interop::start_example(
        "sansrpc-a2a",
        "a2a_tck_agent",
        &[("PORT", "0"), ("RESUBSCRIBE_TIMEOUT_MS", "300")],
    );
    let base = line
        .strip_prefix("a2a_tck_agent listening on ")
        .and_then(|u| u.strip_suffix('/'))
        .unwrap_or_else(|| panic!("first line: {line}"))
        .to_owned();
    let client = Client::resolve(&base).await.unwrap();
    let port = base.rsplit(':').next().unwrap();
    assert_eq!(client.url(), format!("http://localhost:{port}/"));
    let send = |id: &str, task: Option<&str>| {
        let mut message = Message::text(Role::User, id, "Hello");
        message.task_id = task.map(str::to_owned);
        SendMessageRequest {
            message,
            ..Default::default()
        }
    };
    let working = |answer: SendMessageResponse| match answer {
        SendMessageResponse::Task(task) if task.status.state == TaskState::Working => task,
        other => panic!("not a working task: {other:?}"),
    };
    // Working once the agent's turn is over, and still working after a follow-up.
    let task = working(client.send_message(&send("m-1", None)).await.unwrap());
    let again = working(
        client
            .send_message(&send("m-2", Some(&task.id)))
            .await
            .unwrap(),
    );
    assert_eq!(again.id, task.id);
    let get = GetTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    let got = client.get_task(&get).await.unwrap();
    assert_eq!(got.status.state, TaskState::Working);
    let ids: Vec<_> = got.history.iter().map(|m| m.message_id.as_str()).collect();
    assert_eq!(ids, ["m-1", "m-2"]);
    assert_eq!(
        client.cancel_task(&task.id).await.unwrap().status.state,
        TaskState::Canceled
    );
    // The TCK's resubscribe message waits first, then works like the rest.
    let waited = working(
        client
            .send_message(&send("test-resubscribe-message-id-1", None))
            .await
            .unwrap(),
    );
    assert_ne!(waited.id, task.id);
}
