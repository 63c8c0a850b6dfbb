//! The task machine driven by hand: transitions, history, artifacts, streams fanned out,
//! blocking answers, queued messages, cancel, ListTasks pages, and every bound.

mod support;

use sansrpc_a2a::machine::{
    Limits, Run, RunId, SeededIds, SendMode, Sent, StreamId, TaskConfig, TaskEvent, TaskMachine,
    Update, UpdateError, WaiterId,
};
use sansrpc_a2a::types::{
    Artifact, CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, Part, Role,
    SendMessageConfiguration, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskState, Timestamp,
};
use sansrpc_a2a::{A2aError, ErrorKind};
use serde_json::json;
use support::{at, drain, follow_up, send, send_with, user};

fn machine() -> TaskMachine {
    TaskMachine::new(TaskConfig::default(), SeededIds::new(7))
}

fn machine_with(edit: impl FnOnce(&mut Limits)) -> TaskMachine {
    let mut limits = Limits::default();
    edit(&mut limits);
    TaskMachine::new(TaskConfig::with_limits(limits), SeededIds::new(7))
}

/// Sends `message` (blocking) and returns the waiter and the run it started.
fn start(m: &mut TaskMachine, now: Timestamp, message: Message) -> (WaiterId, Box<Run>) {
    let Ok(Sent::Waiting(w)) = m.handle_send(now, send(message), SendMode::Blocking) else {
        panic!("not waiting")
    };
    let events = drain(m);
    let [TaskEvent::Run(run)] = &events[..] else {
        panic!("{events:?}")
    };
    (w, run.clone())
}

fn status(
    m: &mut TaskMachine,
    now: Timestamp,
    run: RunId,
    state: TaskState,
) -> Result<(), UpdateError> {
    m.handle_update(now, run, Update::status(state, None))
}

fn stream_events(events: &[TaskEvent]) -> Vec<(Vec<StreamId>, StreamResponse, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            TaskEvent::Stream {
                streams,
                response,
                last,
            } => Some((streams.clone(), response.clone(), *last)),
            _ => None,
        })
        .collect()
}

fn replies(events: &[TaskEvent]) -> Vec<(WaiterId, Task)> {
    events
        .iter()
        .filter_map(|e| match e {
            TaskEvent::Reply {
                waiter,
                response: SendMessageResponse::Task(t),
            } => Some((*waiter, t.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn the_agent_moves_its_task_anywhere_but_back_and_a_terminal_state_is_final() {
    use TaskState::*;
    let live = [Submitted, Working, InputRequired, AuthRequired];
    for from in live {
        for to in TaskState::ALL {
            let mut m = machine();
            let (_, run) = start(&mut m, at(0), user("m", "x"));
            if from != Submitted {
                status(&mut m, at(1), run.id, from).unwrap();
            }
            let result = status(&mut m, at(2), run.id, to);
            let allowed = to != Unspecified && (to != Submitted || from == Submitted);
            assert_eq!(result.is_ok(), allowed, "{from:?} -> {to:?}");
            let now = m.task(&run.task.id).unwrap().status.state;
            assert_eq!(now, if allowed { to } else { from });
            if !allowed {
                assert_eq!(result, Err(UpdateError::Transition { from, to }));
            }
        }
    }
    for terminal in [Completed, Failed, Canceled, Rejected] {
        let mut m = machine();
        let (_, run) = start(&mut m, at(0), user("m", "x"));
        status(&mut m, at(1), run.id, terminal).unwrap();
        for to in TaskState::ALL {
            assert_eq!(
                status(&mut m, at(2), run.id, to),
                Err(UpdateError::Finished(terminal))
            );
        }
        let art = Update::artifact(Artifact::text("a", "late"));
        assert_eq!(
            m.handle_update(at(2), run.id, art),
            Err(UpdateError::Finished(terminal))
        );
        m.handle_run_end(run.id);
        assert_eq!(
            status(&mut m, at(3), run.id, Working),
            Err(UpdateError::UnknownRun(run.id))
        );
        assert!(m.task(&run.task.id).unwrap().artifacts.is_empty());
    }
}

#[test]
fn a_status_records_its_time_message_and_metadata() {
    let mut m = machine();
    let (_, run) = start(&mut m, at(5), user("m-1", "x"));
    let task = m.task(&run.task.id).unwrap();
    assert_eq!(task.status.timestamp, Some(at(5)));
    let mut said = Message::text(Role::Unspecified, "", "thinking");
    said.metadata = Some(json!({"k": 1}).as_object().unwrap().clone());
    let metadata = json!({"progress": 0.5}).as_object().unwrap().clone();
    m.handle_update(
        at(9),
        run.id,
        Update::Status {
            state: TaskState::Working,
            message: Some(said),
            metadata: Some(metadata.clone()),
        },
    )
    .unwrap();
    let task = m.task(&run.task.id).unwrap();
    assert_eq!(task.status.timestamp, Some(at(9)));
    let message = task.status.message.as_ref().unwrap();
    assert_eq!(message.role, Role::Agent);
    assert!(!message.message_id.is_empty());
    assert_eq!(message.task_id.as_deref(), Some(task.id.as_str()));
    assert_eq!(
        message.context_id.as_deref(),
        Some(task.context_id.as_str())
    );
    assert_eq!(task.history.last(), Some(message));
    assert_eq!(task.metadata.as_ref(), Some(&metadata));
}

#[test]
fn history_keeps_user_messages_as_sent_and_reads_honour_history_length() {
    let mut m = machine();
    let mut first = user("m-1", "one");
    first.metadata = Some(json!({"a": [1, {"b": null}]}).as_object().unwrap().clone());
    first.reference_task_ids = vec!["elsewhere".into()];
    first.parts.push(Part::data(json!({"x": 1.5})));
    let (_, run) = start(&mut m, at(0), first.clone());
    let id = run.task.id.clone();
    assert_eq!(run.task.history, [first.clone()]);
    status(&mut m, at(1), run.id, TaskState::InputRequired).unwrap();
    m.handle_run_end(run.id);
    drain(&mut m);
    let task = m.task(&id).unwrap().clone();
    let second = follow_up("m-2", "two", &task);
    let (_, run2) = start(&mut m, at(2), second.clone());
    assert_eq!(run2.message, second);
    assert_eq!(run2.task.history, [first.clone(), second.clone()]);
    let get = |n: Option<i32>| {
        m.get_task(&GetTaskRequest {
            id: id.clone(),
            history_length: n,
            ..Default::default()
        })
    };
    assert_eq!(get(None).unwrap().history, [first.clone(), second.clone()]);
    assert_eq!(get(Some(1)).unwrap().history, std::slice::from_ref(&second));
    assert_eq!(get(Some(5)).unwrap().history.len(), 2);
    assert!(get(Some(0)).unwrap().history.is_empty());
    // Omitted from the JSON when empty (§3.2.4).
    assert!(serde_json::to_value(get(Some(0)).unwrap())
        .unwrap()
        .get("history")
        .is_none());
    assert_eq!(get(Some(-1)).unwrap_err().kind(), ErrorKind::InvalidParams);
    let missing = m.get_task(&GetTaskRequest {
        id: "nope".into(),
        ..Default::default()
    });
    assert_eq!(missing.unwrap_err().kind(), ErrorKind::TaskNotFound);
}

#[test]
fn a_blocking_answer_and_a_streams_first_task_use_the_requests_history_length() {
    let mut m = machine();
    let (_, run) = start(&mut m, at(0), user("m-1", "one"));
    status(&mut m, at(1), run.id, TaskState::InputRequired).unwrap();
    m.handle_run_end(run.id);
    drain(&mut m);
    let task = m.task(&run.task.id).unwrap().clone();
    let config = SendMessageConfiguration {
        history_length: Some(1),
        ..Default::default()
    };
    let Ok(Sent::Stream(_)) = m.handle_send(
        at(2),
        send_with(follow_up("m-2", "two", &task), config.clone()),
        SendMode::Streaming,
    ) else {
        panic!()
    };
    let events = drain(&mut m);
    let (_, StreamResponse::Task(first), false) = &stream_events(&events)[0] else {
        panic!()
    };
    assert_eq!(first.history.len(), 1);
    assert_eq!(first.history[0].message_id, "m-2");
    let Some(TaskEvent::Run(run)) = events.into_iter().last() else {
        panic!()
    };
    status(&mut m, at(3), run.id, TaskState::InputRequired).unwrap();
    m.handle_run_end(run.id);
    drain(&mut m);
    let task = m.task(&run.task.id).unwrap().clone();
    let Ok(Sent::Waiting(w)) = m.handle_send(
        at(4),
        send_with(follow_up("m-3", "three", &task), config),
        SendMode::Blocking,
    ) else {
        panic!()
    };
    let Some(TaskEvent::Run(run)) = drain(&mut m).pop() else {
        panic!()
    };
    status(&mut m, at(5), run.id, TaskState::Completed).unwrap();
    let answered = replies(&drain(&mut m));
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0].0, w);
    assert_eq!(answered[0].1.history.len(), 1);
    assert_eq!(answered[0].1.history[0].message_id, "m-3");
    // Negative is refused before anything is kept.
    let bad = SendMessageConfiguration {
        history_length: Some(-2),
        ..Default::default()
    };
    let e = m.handle_send(at(6), send_with(user("m-4", "x"), bad), SendMode::Blocking);
    assert_eq!(e.unwrap_err().kind(), ErrorKind::InvalidParams);
}

#[test]
fn artifacts_are_added_replaced_and_appended_until_their_last_chunk() {
    let mut m = machine();
    let (_, run) = start(&mut m, at(0), user("m", "x"));
    let s = m
        .handle_subscribe(&SubscribeToTaskRequest {
            id: run.task.id.clone(),
            ..Default::default()
        })
        .unwrap();
    drain(&mut m);
    let update = |artifact, append, last_chunk| Update::Artifact {
        artifact,
        append,
        last_chunk,
        metadata: None,
    };
    let mut a = Artifact::text("a", "one");
    a.name = Some("first".into());
    m.handle_update(at(1), run.id, update(a, false, false))
        .unwrap();
    m.handle_update(
        at(1),
        run.id,
        update(Artifact::text("a", " two"), true, false),
    )
    .unwrap();
    m.handle_update(
        at(1),
        run.id,
        update(Artifact::text("a", " three"), true, true),
    )
    .unwrap();
    assert_eq!(
        m.handle_update(
            at(1),
            run.id,
            update(Artifact::text("a", "four"), true, false)
        ),
        Err(UpdateError::ArtifactClosed("a".into()))
    );
    assert_eq!(
        m.handle_update(at(1), run.id, update(Artifact::text("b", "?"), true, false)),
        Err(UpdateError::UnknownArtifact("b".into()))
    );
    m.handle_update(
        at(1),
        run.id,
        update(Artifact::text("", "generated id"), false, true),
    )
    .unwrap();
    let task = m.task(&run.task.id).unwrap();
    assert_eq!(task.artifacts.len(), 2);
    let texts: Vec<_> = task.artifacts[0]
        .parts
        .iter()
        .filter_map(Part::as_text)
        .collect();
    assert_eq!(texts, ["one", " two", " three"]);
    assert_eq!(task.artifacts[0].name.as_deref(), Some("first"));
    let generated = task.artifacts[1].artifact_id.clone();
    assert!(!generated.is_empty());
    // Replacing reopens it.
    m.handle_update(
        at(2),
        run.id,
        update(Artifact::text("a", "new"), false, false),
    )
    .unwrap();
    m.handle_update(at(2), run.id, update(Artifact::text("a", "+"), true, false))
        .unwrap();
    let task = m.task(&run.task.id).unwrap();
    let texts: Vec<_> = task.artifacts[0]
        .parts
        .iter()
        .filter_map(Part::as_text)
        .collect();
    assert_eq!(texts, ["new", "+"]);
    assert_eq!(task.artifacts[0].name, None);
    // The stream saw each accepted update as published, flags and all.
    let seen: Vec<(String, bool, bool)> = stream_events(&drain(&mut m))
        .into_iter()
        .map(|(streams, response, last)| {
            assert_eq!(streams, [s]);
            assert!(!last);
            let StreamResponse::ArtifactUpdate(u) = response else {
                panic!()
            };
            (u.artifact.artifact_id, u.append, u.last_chunk)
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("a".into(), false, false),
            ("a".into(), true, false),
            ("a".into(), true, true),
            (generated, false, true),
            ("a".into(), false, false),
            ("a".into(), true, false),
        ]
    );
}

#[test]
fn every_stream_of_a_task_gets_the_same_events_and_they_end_together() {
    let mut m = machine();
    let Ok(Sent::Stream(s1)) = m.handle_send(at(0), send(user("m", "x")), SendMode::Streaming)
    else {
        panic!()
    };
    let events = drain(&mut m);
    let Some(TaskEvent::Run(run)) = events.last().cloned() else {
        panic!()
    };
    let sub = SubscribeToTaskRequest {
        id: run.task.id.clone(),
        ..Default::default()
    };
    status(&mut m, at(1), run.id, TaskState::Working).unwrap();
    let s2 = m.handle_subscribe(&sub).unwrap();
    let s3 = m.handle_subscribe(&sub).unwrap();
    let s4 = m.handle_subscribe(&sub).unwrap();
    drain(&mut m);
    m.close_stream(s4);
    m.handle_update(
        at(2),
        run.id,
        Update::artifact(Artifact::text("r", "result")),
    )
    .unwrap();
    status(&mut m, at(3), run.id, TaskState::AuthRequired).unwrap();
    status(&mut m, at(4), run.id, TaskState::Working).unwrap();
    status(&mut m, at(5), run.id, TaskState::Completed).unwrap();
    let events = stream_events(&drain(&mut m));
    // One event per update, each for the three open streams; auth required ends none.
    assert_eq!(events.len(), 4);
    for (i, (streams, _, last)) in events.iter().enumerate() {
        assert_eq!(streams, &[s1, s2, s3]);
        assert_eq!(*last, i == 3);
    }
    let StreamResponse::StatusUpdate(done) = &events[3].1 else {
        panic!()
    };
    assert_eq!(done.status.state, TaskState::Completed);
    // Closed streams get nothing more, and closing twice or late is harmless.
    m.close_stream(s4);
    m.close_stream(s1);
    let e = m.handle_subscribe(&sub).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnsupportedOperation);
    assert_eq!(e.code(), -32004);
}

#[test]
fn input_required_ends_streams_unless_configured_otherwise() {
    for end in [true, false] {
        let mut config = TaskConfig::default();
        config.end_streams_on_input_required = end;
        let mut m = TaskMachine::new(config, SeededIds::new(1));
        let Ok(Sent::Stream(s)) = m.handle_send(at(0), send(user("m", "x")), SendMode::Streaming)
        else {
            panic!()
        };
        let Some(TaskEvent::Run(run)) = drain(&mut m).pop() else {
            panic!()
        };
        status(&mut m, at(1), run.id, TaskState::InputRequired).unwrap();
        let events = stream_events(&drain(&mut m));
        assert_eq!(events, [(vec![s], events[0].1.clone(), end)]);
        m.handle_run_end(run.id);
        let task = m.task(&run.task.id).unwrap().clone();
        let _ = m
            .handle_send(
                at(2),
                send(follow_up("m-2", "y", &task)),
                SendMode::Blocking,
            )
            .unwrap();
        let Some(TaskEvent::Run(run)) = drain(&mut m).pop() else {
            panic!()
        };
        status(&mut m, at(3), run.id, TaskState::Completed).unwrap();
        let later = stream_events(&drain(&mut m));
        assert_eq!(later.len(), usize::from(!end), "end {end}");
    }
}

#[test]
fn messages_sent_while_a_run_goes_on_wait_their_turn_each_answered_by_its_own_run() {
    let mut m = machine();
    let (w1, run1) = start(&mut m, at(0), user("m-1", "first"));
    status(&mut m, at(1), run1.id, TaskState::Working).unwrap();
    let task = m.task(&run1.task.id).unwrap().clone();
    let Ok(Sent::Waiting(w2)) = m.handle_send(
        at(2),
        send(follow_up("m-2", "second", &task)),
        SendMode::Blocking,
    ) else {
        panic!()
    };
    assert!(
        drain(&mut m).is_empty(),
        "no second run while the first goes on"
    );
    // The message is in the history at once.
    assert_eq!(m.task(&task.id).unwrap().history.len(), 2);
    // The first run asks; only its waiter is answered.
    status(&mut m, at(3), run1.id, TaskState::InputRequired).unwrap();
    let answered = replies(&drain(&mut m));
    assert_eq!(answered.iter().map(|(w, _)| *w).collect::<Vec<_>>(), [w1]);
    m.handle_run_end(run1.id);
    let events = drain(&mut m);
    let [TaskEvent::Run(run2)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(run2.message.message_id, "m-2");
    assert_eq!(run2.task.status.state, TaskState::InputRequired);
    // A run that ends without a final state answers its waiter with the task as it is.
    status(&mut m, at(4), run2.id, TaskState::Working).unwrap();
    m.handle_run_end(run2.id);
    let answered = replies(&drain(&mut m));
    assert_eq!(answered.len(), 1);
    assert_eq!(
        (answered[0].0, answered[0].1.status.state),
        (w2, TaskState::Working)
    );
    // Ending a run twice, or one that never was, does nothing.
    m.handle_run_end(run2.id);
    m.handle_run_end(RunId::clone(&run1.id));
    assert!(drain(&mut m).is_empty());
}

#[test]
fn cancel_stops_the_run_and_answers_everyone_waiting() {
    let mut m = machine();
    let (w1, run) = start(&mut m, at(0), user("m-1", "first"));
    let task = m.task(&run.task.id).unwrap().clone();
    let Ok(Sent::Waiting(w2)) = m.handle_send(
        at(1),
        send(follow_up("m-2", "queued", &task)),
        SendMode::Blocking,
    ) else {
        panic!()
    };
    let s = m
        .handle_subscribe(&SubscribeToTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .unwrap();
    drain(&mut m);
    let cancel = CancelTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    let canceled = m.handle_cancel(at(2), &cancel).unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(canceled.status.timestamp, Some(at(2)));
    let events = drain(&mut m);
    let streamed = stream_events(&events);
    assert_eq!(streamed.len(), 1);
    assert_eq!(streamed[0].0, [s]);
    assert!(streamed[0].2);
    let mut answered: Vec<_> = replies(&events)
        .into_iter()
        .map(|(w, t)| (w, t.status.state))
        .collect();
    answered.sort();
    assert_eq!(
        answered,
        [(w1, TaskState::Canceled), (w2, TaskState::Canceled)]
    );
    assert!(events.contains(&TaskEvent::Stop {
        run: run.id,
        task_id: task.id.clone()
    }));
    // The run is over: its updates and its end are ignored; no queued run starts.
    assert_eq!(
        status(&mut m, at(3), run.id, TaskState::Completed),
        Err(UpdateError::UnknownRun(run.id))
    );
    m.handle_run_end(run.id);
    assert!(drain(&mut m).is_empty());
    let again = m.handle_cancel(at(4), &cancel).unwrap_err();
    assert_eq!(
        (again.kind(), again.code()),
        (ErrorKind::TaskNotCancelable, -32002)
    );
    assert_eq!(again.metadata()["state"], "TASK_STATE_CANCELED");
    let missing = CancelTaskRequest {
        id: "nope".into(),
        ..Default::default()
    };
    assert_eq!(
        m.handle_cancel(at(4), &missing).unwrap_err().kind(),
        ErrorKind::TaskNotFound
    );
}

#[test]
fn a_dropped_waiter_gets_no_answer_and_its_message_is_still_handled() {
    let mut m = machine();
    let (w, run) = start(&mut m, at(0), user("m-1", "x"));
    m.drop_waiter(w);
    status(&mut m, at(1), run.id, TaskState::Completed).unwrap();
    assert!(replies(&drain(&mut m)).is_empty());
    assert_eq!(
        m.task(&run.task.id).unwrap().status.state,
        TaskState::Completed
    );
}

#[test]
fn follow_ups_are_checked_against_their_task() {
    let mut m = machine();
    let (_, run) = start(&mut m, at(0), user("m-1", "x"));
    let task = m.task(&run.task.id).unwrap().clone();
    let mut unknown = user("m-2", "y");
    unknown.task_id = Some("nope".into());
    let kind = |m: &mut TaskMachine, msg| {
        m.handle_send(at(1), send(msg), SendMode::Blocking)
            .unwrap_err()
            .kind()
    };
    assert_eq!(kind(&mut m, unknown), ErrorKind::TaskNotFound);
    let mut other_context = follow_up("m-3", "y", &task);
    other_context.context_id = Some("another".into());
    assert_eq!(kind(&mut m, other_context), ErrorKind::InvalidParams);
    let mut no_id = follow_up("", "y", &task);
    assert_eq!(kind(&mut m, no_id.clone()), ErrorKind::InvalidParams);
    no_id.message_id = "m-4".into();
    no_id.parts.clear();
    assert_eq!(kind(&mut m, no_id), ErrorKind::InvalidParams);
    // A taskId alone is enough: the context comes from the task.
    let mut task_only = user("m-5", "z");
    task_only.task_id = Some(task.id.clone());
    assert!(m
        .handle_send(at(1), send(task_only), SendMode::Blocking)
        .is_ok());
    assert_eq!(m.task(&task.id).unwrap().history.len(), 2);
    status(&mut m, at(2), run.id, TaskState::Rejected).unwrap();
    let e = m
        .handle_send(
            at(3),
            send(follow_up("m-6", "w", &task)),
            SendMode::Blocking,
        )
        .unwrap_err();
    assert_eq!(
        (e.kind(), e.code()),
        (ErrorKind::UnsupportedOperation, -32004)
    );
    assert_eq!(
        m.task(&task.id).unwrap().history.len(),
        2,
        "a refused message is not kept"
    );
}

#[test]
fn contexts_come_from_the_message_or_the_id_source() {
    let mut m = machine();
    let (_, a) = start(&mut m, at(0), user("m-1", "x"));
    let (_, b) = start(&mut m, at(0), user("m-2", "x"));
    assert_ne!(a.task.context_id, b.task.context_id);
    let mut in_a = user("m-3", "x");
    in_a.context_id = Some(a.task.context_id.clone());
    let (_, c) = start(&mut m, at(0), in_a);
    assert_eq!(c.task.context_id, a.task.context_id);
    assert_ne!(c.task.id, a.task.id);
    // The same seed gives the same ids.
    let mut again = machine();
    let (_, a2) = start(&mut again, at(0), user("m-1", "x"));
    assert_eq!(
        (a2.task.id, a2.task.context_id),
        (a.task.id.clone(), a.task.context_id.clone())
    );
}

/// Creates a task per entry, each finished at its time, in the given contexts.
fn listed(entries: &[(&str, u64, TaskState)]) -> (TaskMachine, Vec<String>) {
    let mut m = machine();
    let mut ids = Vec::new();
    for (i, (context, time, state)) in entries.iter().enumerate() {
        let mut message = user(&format!("m-{i}"), "x");
        message.context_id = Some((*context).into());
        let (_, run) = start(&mut m, at(*time), message);
        m.handle_update(
            at(*time),
            run.id,
            Update::artifact(Artifact::text("a", "out")),
        )
        .unwrap();
        if *state != TaskState::Submitted {
            status(&mut m, at(*time), run.id, *state).unwrap();
        }
        ids.push(run.task.id.clone());
        drain(&mut m);
    }
    (m, ids)
}

#[test]
fn list_tasks_filters_and_orders_by_last_update() {
    use TaskState::*;
    let (m, ids) = listed(&[
        ("c1", 10, Completed),
        ("c2", 30, Working),
        ("c1", 20, Working),
        ("c1", 40, Failed),
        ("c2", 20, Completed),
    ]);
    let list = |r: ListTasksRequest| m.list_tasks(&r).unwrap();
    let order = |r: ListTasksRequest| list(r).tasks.into_iter().map(|t| t.id).collect::<Vec<_>>();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    // Most recent first; equal times by id, higher first.
    let (a, b) = if ids[2] > ids[4] { (2, 4) } else { (4, 2) };
    assert_eq!(
        order(ListTasksRequest::default()),
        [ids[3], ids[1], ids[a], ids[b], ids[0]]
    );
    let c1 = ListTasksRequest {
        context_id: Some("c1".into()),
        ..Default::default()
    };
    assert_eq!(order(c1.clone()), [ids[3], ids[2], ids[0]]);
    let working = ListTasksRequest {
        status: Working,
        ..Default::default()
    };
    assert_eq!(order(working), [ids[1], ids[2]]);
    let recent = ListTasksRequest {
        status_timestamp_after: Some(at(30)),
        ..Default::default()
    };
    assert_eq!(order(recent), [ids[3], ids[1]], "at or after");
    let all = list(c1.clone());
    assert_eq!(
        (all.total_size, all.page_size, all.next_page_token.as_str()),
        (3, 50, "")
    );
    // Artifacts only when asked for; history length per task.
    assert!(all.tasks.iter().all(|t| t.artifacts.is_empty()));
    let with = list(ListTasksRequest {
        include_artifacts: Some(true),
        history_length: Some(0),
        ..c1
    });
    assert!(with
        .tasks
        .iter()
        .all(|t| t.artifacts.len() == 1 && t.history.is_empty()));
    // Every member written, the token empty on the last page.
    let json = serde_json::to_value(&all).unwrap();
    for member in ["tasks", "nextPageToken", "pageSize", "totalSize"] {
        assert!(json.get(member).is_some(), "{member}");
    }
}

#[test]
fn list_tasks_pages_cover_every_task_once_even_when_tasks_change_between_pages() {
    let entries: Vec<(&str, u64, TaskState)> = (0..23)
        .map(|i| ("c", (i % 7) * 10, TaskState::Completed))
        .collect();
    let (mut m, ids) = listed(&entries);
    let full: Vec<String> = m
        .list_tasks(&ListTasksRequest::default())
        .unwrap()
        .tasks
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(full.len(), 23);
    for size in [1, 2, 5, 22, 23, 100] {
        let mut seen = Vec::new();
        let mut token = None;
        loop {
            let page = m
                .list_tasks(&ListTasksRequest {
                    page_size: Some(size),
                    page_token: token.clone(),
                    ..Default::default()
                })
                .unwrap();
            assert_eq!(page.total_size, 23);
            assert_eq!(page.page_size, size);
            assert!(page.tasks.len() <= size as usize);
            seen.extend(page.tasks.into_iter().map(|t| t.id));
            if page.next_page_token.is_empty() {
                break;
            }
            token = Some(page.next_page_token);
        }
        assert_eq!(seen, full, "page size {size}");
    }
    // A new task between pages goes to the front: the next page neither repeats nor skips.
    let first = m
        .list_tasks(&ListTasksRequest {
            page_size: Some(10),
            ..Default::default()
        })
        .unwrap();
    let _ = start(&mut m, at(1000), user("late", "x"));
    let rest = m
        .list_tasks(&ListTasksRequest {
            page_size: Some(100),
            page_token: Some(first.next_page_token.clone()),
            ..Default::default()
        })
        .unwrap();
    let mut seen: Vec<_> = first.tasks.iter().map(|t| t.id.clone()).collect();
    seen.extend(rest.tasks.into_iter().map(|t| t.id));
    assert_eq!(seen, full);
    assert_eq!(ids.len(), 23);
}

#[test]
fn list_tasks_refuses_bad_pages() {
    let m = machine();
    for size in [0, -1, 101] {
        let e = m
            .list_tasks(&ListTasksRequest {
                page_size: Some(size),
                ..Default::default()
            })
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams, "{size}");
    }
    for token in ["garbage!", "Zm9v"] {
        let e = m
            .list_tasks(&ListTasksRequest {
                page_token: Some(token.into()),
                ..Default::default()
            })
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams, "{token}");
    }
    let e = m
        .list_tasks(&ListTasksRequest {
            history_length: Some(-1),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParams);
    let empty = m.list_tasks(&ListTasksRequest::default()).unwrap();
    assert_eq!(
        (
            empty.tasks.len(),
            empty.total_size,
            empty.next_page_token.as_str()
        ),
        (0, 0, "")
    );
}

fn kind_of(r: Result<Sent, A2aError>) -> ErrorKind {
    r.unwrap_err().kind()
}

#[test]
fn past_max_tasks_the_oldest_finished_task_goes_and_with_none_finished_a_message_is_refused() {
    let mut m = machine_with(|l| l.max_tasks = 3);
    let (_, a) = start(&mut m, at(0), user("a", "x"));
    let (_, b) = start(&mut m, at(1), user("b", "x"));
    let (_, c) = start(&mut m, at(2), user("c", "x"));
    assert_eq!(
        kind_of(m.handle_send(at(3), send(user("d", "x")), SendMode::Blocking)),
        ErrorKind::Internal
    );
    assert_eq!(m.len(), 3);
    // b finishes, then a: b's status is the older of the two finished.
    status(&mut m, at(4), b.id, TaskState::Completed).unwrap();
    status(&mut m, at(5), a.id, TaskState::Completed).unwrap();
    drain(&mut m);
    let stopped = |m: &mut TaskMachine, now, id: &str| {
        let sent = m.handle_send(at(now), send(user(id, "x")), SendMode::Blocking);
        assert!(matches!(sent, Ok(Sent::Waiting(_))));
        drain(m)
            .into_iter()
            .filter_map(|e| match e {
                TaskEvent::Stop { run, .. } => Some(run),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // b goes; its run had not reported its end, so it is stopped.
    assert_eq!(stopped(&mut m, 6, "d"), [b.id]);
    assert!(m.task(&b.task.id).is_none());
    assert!(m.task(&a.task.id).is_some());
    assert_eq!(m.len(), 3);
    // a's run ended: nothing to stop when a goes next.
    m.handle_run_end(a.id);
    status(&mut m, at(7), c.id, TaskState::Failed).unwrap();
    drain(&mut m);
    assert_eq!(stopped(&mut m, 8, "e"), []);
    assert!(m.task(&a.task.id).is_none());
    assert!(m.task(&c.task.id).is_some());
    let get = m.get_task(&GetTaskRequest {
        id: b.task.id.clone(),
        ..Default::default()
    });
    assert_eq!(get.unwrap_err().kind(), ErrorKind::TaskNotFound);
}

#[test]
fn past_max_history_a_user_message_is_refused_and_an_agent_message_not_recorded() {
    let mut m = machine_with(|l| l.max_history = 3);
    let (_, run) = start(&mut m, at(0), user("m-1", "x"));
    let said =
        |t: &str| Update::status(TaskState::Working, Some(Message::text(Role::Agent, "", t)));
    m.handle_update(at(1), run.id, said("a")).unwrap();
    let task = m.task(&run.task.id).unwrap().clone();
    let _ = m
        .handle_send(
            at(2),
            send(follow_up("m-2", "y", &task)),
            SendMode::Blocking,
        )
        .unwrap();
    assert_eq!(m.task(&task.id).unwrap().history.len(), 3);
    assert_eq!(
        kind_of(m.handle_send(
            at(3),
            send(follow_up("m-3", "z", &task)),
            SendMode::Blocking
        )),
        ErrorKind::InvalidParams
    );
    m.handle_update(at(4), run.id, said("b")).unwrap();
    let task = m.task(&task.id).unwrap();
    assert_eq!(task.history.len(), 3);
    assert_eq!(
        task.status.message.as_ref().unwrap().first_text(),
        Some("b")
    );
}

#[test]
fn past_the_size_bounds_messages_and_updates_are_refused() {
    let mut m = machine_with(|l| {
        l.max_parts = 2;
        l.max_message_bytes = 100;
        l.max_id_bytes = 8;
        l.max_artifacts = 2;
        l.max_artifact_bytes = 160;
    });
    let mut three = user("m", "a");
    three.parts.extend([Part::text("b"), Part::text("c")]);
    let big = user("m", &"x".repeat(100));
    let long_id = user("123456789", "x");
    let mut long_context = user("m", "x");
    long_context.context_id = Some("c".repeat(9));
    let mut big_data = user("m", "x");
    big_data.parts[0] = Part::data(json!({"k": "v".repeat(90)}));
    for bad in [three, big, long_id, long_context, big_data] {
        assert_eq!(
            kind_of(m.handle_send(at(0), send(bad), SendMode::Blocking)),
            ErrorKind::InvalidParams
        );
    }
    assert!(m.is_empty());
    let (_, run) = start(&mut m, at(0), user("m", "x"));
    let art = |id: &str, n: usize| Update::artifact(Artifact::text(id, "x".repeat(n)));
    assert_eq!(
        m.handle_update(at(1), run.id, art("a", 90)),
        Err(UpdateError::Limit("bytes in an artifact update", 100))
    );
    m.handle_update(at(1), run.id, art("a", 60)).unwrap();
    m.handle_update(at(1), run.id, art("b", 60)).unwrap();
    assert_eq!(
        m.handle_update(at(1), run.id, art("c", 1)),
        Err(UpdateError::Limit("artifacts in a task", 2))
    );
    let append = Update::Artifact {
        artifact: Artifact::text("a", "x".repeat(10)),
        append: true,
        last_chunk: false,
        metadata: None,
    };
    assert_eq!(
        m.handle_update(at(1), run.id, append),
        Err(UpdateError::Limit("bytes of a task's artifacts", 160))
    );
    // Replacing counts the new size in place of the old.
    m.handle_update(at(1), run.id, art("a", 10)).unwrap();
    let mut chatty = Message::text(Role::Agent, "", "x");
    chatty.parts.extend([Part::text("y"), Part::text("z")]);
    assert_eq!(
        m.handle_update(
            at(1),
            run.id,
            Update::status(TaskState::Working, Some(chatty))
        ),
        Err(UpdateError::Limit("parts in a message", 2))
    );
    assert_eq!(
        m.task(&run.task.id).unwrap().status.state,
        TaskState::Submitted
    );
}

#[test]
fn past_max_streams_and_max_queued_the_request_is_refused() {
    let mut m = machine_with(|l| {
        l.max_streams_per_task = 2;
        l.max_queued_messages = 1;
    });
    let Ok(Sent::Stream(_)) = m.handle_send(at(0), send(user("m-1", "x")), SendMode::Streaming)
    else {
        panic!()
    };
    let Some(TaskEvent::Run(run)) = drain(&mut m).pop() else {
        panic!()
    };
    let id = run.task.id.clone();
    let sub = SubscribeToTaskRequest {
        id: id.clone(),
        ..Default::default()
    };
    let s2 = m.handle_subscribe(&sub).unwrap();
    assert_eq!(
        m.handle_subscribe(&sub).unwrap_err().kind(),
        ErrorKind::Internal
    );
    let task = m.task(&id).unwrap().clone();
    assert_eq!(
        kind_of(m.handle_send(
            at(1),
            send(follow_up("m-2", "y", &task)),
            SendMode::Streaming
        )),
        ErrorKind::Internal
    );
    m.close_stream(s2);
    assert!(m.handle_subscribe(&sub).is_ok());
    // One message may wait behind the run; the next is refused, and not kept.
    assert!(m
        .handle_send(
            at(1),
            send(follow_up("m-3", "y", &task)),
            SendMode::Blocking
        )
        .is_ok());
    assert_eq!(
        kind_of(m.handle_send(
            at(1),
            send(follow_up("m-4", "y", &task)),
            SendMode::Blocking
        )),
        ErrorKind::Internal
    );
    assert_eq!(m.task(&id).unwrap().history.len(), 2);
    let missing = SubscribeToTaskRequest {
        id: "nope".into(),
        ..Default::default()
    };
    assert_eq!(
        m.handle_subscribe(&missing).unwrap_err().kind(),
        ErrorKind::TaskNotFound
    );
}

#[test]
fn an_id_source_that_repeats_itself_is_an_internal_error_not_a_hang() {
    let mut m = TaskMachine::new(TaskConfig::default(), || "same".to_owned());
    let _ = start(&mut m, at(0), user("m-1", "x"));
    assert_eq!(
        kind_of(m.handle_send(at(1), send(user("m-2", "x")), SendMode::Blocking)),
        ErrorKind::Internal
    );
}

#[test]
fn return_immediately_answers_with_the_task_and_a_run_still_starts() {
    let mut m = machine();
    let config = SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    };
    let Ok(Sent::Task(task)) = m.handle_send(
        at(0),
        send_with(user("m-1", "x"), config.clone()),
        SendMode::Blocking,
    ) else {
        panic!()
    };
    assert_eq!(task.status.state, TaskState::Submitted);
    assert_eq!(task.history.len(), 1);
    let events = drain(&mut m);
    assert!(matches!(&events[..], [TaskEvent::Run(r)] if r.task.id == task.id));
    // It has no effect on a stream.
    let Ok(Sent::Stream(_)) = m.handle_send(
        at(1),
        send_with(user("m-2", "x"), config),
        SendMode::Streaming,
    ) else {
        panic!()
    };
}

/// A finished task is kept as its JSON once nothing goes on around it: it reads back as it
/// was (whole, by `GetTask` with a history length, by `ListTasks` without artifacts), its
/// data however deep (past what JSON reads back, the task stays as it was kept).
#[test]
fn a_finished_task_reads_back_as_it_was_however_deep_its_data() {
    use sansrpc_a2a::types::PartContent;
    for depth in [0, 90, 140] {
        let mut m = TaskMachine::new(TaskConfig::default(), SeededIds::new(3));
        let mut message = user("m-1", "keep");
        message.metadata = Some(json!({"n": 1.5, "s": "\"]}"}).as_object().unwrap().clone());
        let Ok(Sent::Waiting(_)) = m.handle_send(at(0), send(message), SendMode::Blocking) else {
            panic!()
        };
        let Some(TaskEvent::Run(run)) = drain(&mut m).into_iter().next() else {
            panic!()
        };
        let mut value = json!({"leaf": [1, -2, 3.25, null, true, "x"]});
        for _ in 0..depth {
            value = json!([value]);
        }
        let mut artifact = Artifact::text("a-1", "text");
        artifact.parts.push(Part::new(PartContent::Data(value)));
        artifact
            .parts
            .push(Part::new(PartContent::Raw(vec![0, 1, 254, 255])));
        m.handle_update(at(1), run.id, Update::artifact(artifact))
            .unwrap();
        let said = Message::text(Role::Agent, "", "done");
        m.handle_update(
            at(2),
            run.id,
            Update::status(TaskState::Completed, Some(said)),
        )
        .unwrap();
        let live = m.task(&run.task.id).unwrap();
        m.handle_run_end(run.id);
        drain(&mut m);
        assert_eq!(m.task(&run.task.id).unwrap(), live, "depth {depth}");
        let get = GetTaskRequest {
            id: live.id.clone(),
            history_length: Some(1),
            ..Default::default()
        };
        let got = m.get_task(&get).unwrap();
        assert_eq!(got.history, live.history[1..], "depth {depth}");
        assert_eq!(got.artifacts, live.artifacts);
        let listed = m.list_tasks(&ListTasksRequest::default()).unwrap();
        assert_eq!(listed.tasks.len(), 1);
        assert!(listed.tasks[0].artifacts.is_empty());
        assert_eq!(listed.tasks[0].history, live.history);
        // Still a task like any other: not continued, not canceled, not subscribed to.
        let cancel = CancelTaskRequest {
            id: live.id.clone(),
            ..Default::default()
        };
        let refused = m.handle_cancel(at(3), &cancel).unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::TaskNotCancelable);
        assert_eq!(m.version(&live.id), Some(3));
    }
}
