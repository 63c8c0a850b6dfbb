//! The contract's echo agent (`shared/contracts/a2a-echo-agent.md`) run on the task
//! machine with virtual time: every command, the task semantics the contract writes down
//! (history as sent, returnImmediately, streams that all get the same events and close at
//! the end, contexts, cancel), and `slow`'s 100 ms steps as virtual waits.

mod support;

use sansrpc_a2a::echo::{agent_card, EchoAgent};
use sansrpc_a2a::machine::{SendMode, Sent};
use sansrpc_a2a::types::{
    ListTasksRequest, Message, Part, PartContent, Role, SendMessageConfiguration, StreamResponse,
    Task, TaskState,
};
use sansrpc_a2a::ErrorKind;
use serde_json::json;
use support::{follow_up, send, send_with, user, Harness};

fn artifact_texts(task: &Task) -> Vec<&str> {
    task.artifacts
        .iter()
        .flat_map(|a| a.parts.iter().filter_map(Part::as_text))
        .collect()
}

fn status_text(task: &Task) -> Option<&str> {
    task.status.message.as_ref().and_then(Message::first_text)
}

#[test]
fn echo_answers_with_one_artifact_and_completes() {
    let mut h = Harness::new(EchoAgent::new());
    let mut message = user("m-1", "  echo hello there ");
    message.metadata = Some(json!({"trace": [1, 2]}).as_object().unwrap().clone());
    message.extensions = vec!["https://example.com/ext".into()];
    let task = h.send_blocking(message.clone());
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(artifact_texts(&task), ["hello there"]);
    assert_eq!(task.artifacts.len(), 1);
    assert!(!task.artifacts[0].artifact_id.is_empty());
    // The history holds the user's message exactly as sent.
    assert_eq!(task.history, [message]);
    assert!(!task.context_id.is_empty());
    assert_eq!(h.now_ms(), 0);
    assert_eq!(h.running(), 0);
}

#[test]
fn other_parts_are_ignored_and_the_first_text_part_is_the_command() {
    let mut h = Harness::new(EchoAgent::new());
    let mut message = user("m-1", "echo x");
    message
        .parts
        .insert(0, Part::data(json!({"ignored": true})));
    message
        .parts
        .insert(1, Part::new(PartContent::Raw(vec![0, 1, 2])));
    message
        .parts
        .push(Part::new(PartContent::Url("https://example.com/f".into())));
    let task = h.send_blocking(message);
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(artifact_texts(&task), ["x"]);
}

#[test]
fn slow_steps_are_100_ms_apart_on_the_virtual_clock_and_a_stream_sees_them_in_order() {
    let mut h = Harness::new(EchoAgent::new());
    let Ok(Sent::Stream(stream)) = h.send(send(user("m-1", "slow 3")), SendMode::Streaming) else {
        panic!()
    };
    h.run_until_idle();
    assert_eq!(h.now_ms(), 300);
    let log = &h.streams[&stream];
    assert!(log.ended);
    let kinds: Vec<String> = log
        .events
        .iter()
        .map(|e| match e {
            StreamResponse::Task(t) => format!("task {}", t.status.state.as_str()),
            StreamResponse::StatusUpdate(u) => format!(
                "status {} {}",
                u.status.state.as_str(),
                u.status
                    .message
                    .as_ref()
                    .and_then(Message::first_text)
                    .unwrap_or("-")
            ),
            StreamResponse::ArtifactUpdate(a) => {
                format!("artifact {}", a.artifact.parts[0].as_text().unwrap())
            }
            StreamResponse::Message(_) => "message".into(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "task TASK_STATE_SUBMITTED",
            "status TASK_STATE_WORKING step 1",
            "status TASK_STATE_WORKING step 2",
            "status TASK_STATE_WORKING step 3",
            "artifact done",
            "status TASK_STATE_COMPLETED -",
        ]
    );
    // Each step's status carries its time: 100 ms apart.
    let times: Vec<i64> = log
        .events
        .iter()
        .filter_map(|e| match e {
            StreamResponse::StatusUpdate(u) => u.status.timestamp.map(|t| {
                (t.seconds() - support::BASE_MS / 1000) * 1000 + i64::from(t.nanos() / 1_000_000)
            }),
            _ => None,
        })
        .collect();
    assert_eq!(times, [100, 200, 300, 300]);
    // The step messages are the agent's, with the task's ids.
    let StreamResponse::StatusUpdate(first) = &log.events[1] else {
        panic!()
    };
    let message = first.status.message.as_ref().unwrap();
    assert_eq!(message.role, Role::Agent);
    assert_eq!(message.task_id.as_deref(), Some(first.task_id.as_str()));
    assert_eq!(
        message.context_id.as_deref(),
        Some(first.context_id.as_str())
    );
    assert!(!message.message_id.is_empty());
}

#[test]
fn return_immediately_answers_at_once_and_the_task_carries_on() {
    let mut h = Harness::new(EchoAgent::new());
    let configuration = SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    };
    let Ok(Sent::Task(task)) = h.send(
        send_with(user("m-1", "slow 2"), configuration),
        SendMode::Blocking,
    ) else {
        panic!()
    };
    assert_eq!(task.status.state, TaskState::Submitted);
    assert_eq!(h.task(&task.id).status.state, TaskState::Submitted);
    h.advance();
    assert_eq!(h.task(&task.id).status.state, TaskState::Working);
    assert_eq!(status_text(&h.task(&task.id)), Some("step 1"));
    h.run_until_idle();
    let done = h.task(&task.id);
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(artifact_texts(&done), ["done"]);
}

#[test]
fn ask_waits_for_input_and_the_answer_continues_the_same_task() {
    let mut h = Harness::new(EchoAgent::new());
    let asked = h.send_blocking(user("m-1", "ask"));
    assert_eq!(asked.status.state, TaskState::InputRequired);
    assert_eq!(status_text(&asked), Some("what?"));
    let answer = follow_up("m-2", "  forty-two ", &asked);
    let done = h.send_blocking(answer.clone());
    assert_eq!(done.id, asked.id);
    assert_eq!(done.context_id, asked.context_id);
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(artifact_texts(&done), ["forty-two"]);
    // The user messages as sent, the agent's question between them.
    let history: Vec<(Role, &str)> = done
        .history
        .iter()
        .map(|m| (m.role, m.first_text().unwrap()))
        .collect();
    assert_eq!(
        history,
        [
            (Role::User, "ask"),
            (Role::Agent, "what?"),
            (Role::User, "  forty-two ")
        ]
    );
    assert_eq!(done.history[2], answer);
}

#[test]
fn wait_works_until_canceled_and_every_stream_sees_the_same_events() {
    let mut h = Harness::new(EchoAgent::new());
    let Ok(Sent::Stream(first)) = h.send(send(user("m-1", "wait")), SendMode::Streaming) else {
        panic!()
    };
    h.run_until_idle();
    let StreamResponse::Task(task) = &h.streams[&first].events[0] else {
        panic!()
    };
    let id = task.id.clone();
    assert_eq!(h.task(&id).status.state, TaskState::Working);
    assert_eq!(h.running(), 1);
    let second = h.subscribe(&id).unwrap();
    let third = h.subscribe(&id).unwrap();
    let canceled = h.cancel(&id).unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(h.running(), 0, "the run is dropped");
    assert_eq!(h.stopped.len(), 1);
    // The two subscribers got the same events: the task, then the cancel, then the end.
    assert_eq!(h.streams[&second], h.streams[&third]);
    let log = &h.streams[&second];
    assert!(log.ended);
    assert_eq!(log.events.len(), 2);
    assert!(
        matches!(&log.events[0], StreamResponse::Task(t) if t.status.state == TaskState::Working)
    );
    // The first stream got the same cancel last.
    assert_eq!(h.streams[&first].events.last(), log.events.last());
    assert!(h.streams[&first].ended);
    // A canceled or completed task is not cancelable.
    assert_eq!(
        h.cancel(&id).unwrap_err().kind(),
        ErrorKind::TaskNotCancelable
    );
    let done = h.send_blocking(user("m-2", "echo x"));
    assert_eq!(
        h.cancel(&done.id).unwrap_err().kind(),
        ErrorKind::TaskNotCancelable
    );
    // Nor can a terminal task be subscribed to, or sent more.
    assert_eq!(
        h.subscribe(&id).unwrap_err().kind(),
        ErrorKind::UnsupportedOperation
    );
    let again = h.send(send(follow_up("m-3", "echo y", &done)), SendMode::Blocking);
    assert_eq!(again.unwrap_err().kind(), ErrorKind::UnsupportedOperation);
}

#[test]
fn anything_else_is_rejected() {
    let mut h = Harness::new(EchoAgent::new());
    for text in ["hello", "slow many", "slow 1001", "ask twice"] {
        let task = h.send_blocking(user("m", text));
        assert_eq!(task.status.state, TaskState::Rejected, "{text}");
        assert!(status_text(&task).unwrap().starts_with("unknown command"));
    }
    let mut no_text = user("m", "x");
    no_text.parts = vec![Part::data(json!(1))];
    assert_eq!(h.send_blocking(no_text).status.state, TaskState::Rejected);
}

#[test]
fn a_context_the_agent_issued_gets_a_new_task_and_list_tasks_finds_both() {
    let mut h = Harness::new(EchoAgent::new());
    let first = h.send_blocking(user("m-1", "echo one"));
    let mut again = user("m-2", "echo two");
    again.context_id = Some(first.context_id.clone());
    let second = h.send_blocking(again);
    assert_ne!(second.id, first.id);
    assert_eq!(second.context_id, first.context_id);
    let other = h.send_blocking(user("m-3", "echo three"));
    assert_ne!(other.context_id, first.context_id);
    let listed = h
        .machine
        .list_tasks(&ListTasksRequest {
            context_id: Some(first.context_id.clone()),
            ..Default::default()
        })
        .unwrap();
    let mut ids: Vec<_> = listed.tasks.iter().map(|t| t.id.clone()).collect();
    ids.sort();
    let mut want = vec![first.id, second.id];
    want.sort();
    assert_eq!(ids, want);
    assert_eq!(listed.total_size, 2);
}

#[test]
fn slow_1000_runs_at_once_on_virtual_time() {
    let mut h = Harness::new(EchoAgent::new());
    let task = h.send_blocking(user("m-1", "slow 1000"));
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(h.now_ms(), 100_000);
    // One user message and the step messages up to the history bound (1,000 by default):
    // the last step's message was its status's message, and was not recorded.
    let kept = h.task(&task.id);
    assert_eq!(kept.history.len(), 1000);
    assert_eq!(kept.history[999].first_text(), Some("step 999"));
}

#[test]
fn with_no_step_delay_slow_takes_no_time() {
    let mut h = Harness::new(EchoAgent::with_step_delay(std::time::Duration::ZERO));
    let task = h.send_blocking(user("m-1", "slow 3"));
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(h.now_ms(), 0);
}

#[test]
fn the_card_is_the_contracts() {
    let card = agent_card("http://127.0.0.1:3000/a2a");
    let json = serde_json::to_value(&card).unwrap();
    assert_eq!(json["name"], "echo-agent");
    assert!(!json["description"].as_str().unwrap().is_empty());
    assert!(!json["version"].as_str().unwrap().is_empty());
    assert_eq!(
        json["supportedInterfaces"],
        json!([{"url": "http://127.0.0.1:3000/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}])
    );
    assert_eq!(json["capabilities"]["streaming"], true);
    assert_ne!(json["capabilities"]["pushNotifications"], true);
    assert_ne!(json["capabilities"]["extendedAgentCard"], true);
    assert_eq!(json["defaultInputModes"], json!(["text/plain"]));
    assert_eq!(json["defaultOutputModes"], json!(["text/plain"]));
    let echo = &json["skills"][0];
    assert_eq!(echo["id"], "echo");
    for field in ["name", "description"] {
        assert!(!echo[field].as_str().unwrap().is_empty());
    }
    assert!(!echo["tags"].as_array().unwrap().is_empty());
}
