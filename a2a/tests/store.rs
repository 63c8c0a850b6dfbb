//! The task machine's side of tasks beyond one process, with no I/O: versions and the
//! changes it records, `adopt` (a task as a store has it), and `handle_remote` (a change
//! another process made): two machines stand for two processes, the changes carried by hand.

mod support;

use sansrpc_a2a::machine::{
    Change, Remote, RunId, SeededIds, SendMode, Sent, StreamId, TaskEvent, TaskMachine, Update,
};
use sansrpc_a2a::types::{
    Artifact, CancelTaskRequest, StreamResponse, SubscribeToTaskRequest, Task, TaskState,
};
use support::{at, drain, send, user};

fn machine(seed: u64) -> TaskMachine {
    let mut machine = TaskMachine::new(Default::default(), SeededIds::new(seed));
    machine.track_changes(true);
    machine
}

fn changes(machine: &mut TaskMachine) -> Vec<Change> {
    std::iter::from_fn(|| machine.poll_change()).collect()
}

/// A task started on `machine` with `text`: its id and its run.
fn start(machine: &mut TaskMachine, text: &str) -> (String, RunId) {
    let sent = machine.handle_send(at(0), send(user("m-1", text)), SendMode::Blocking);
    assert!(matches!(sent, Ok(Sent::Waiting(_))), "{sent:?}");
    let run = drain(machine)
        .into_iter()
        .find_map(|e| match e {
            TaskEvent::Run(run) => Some(run),
            _ => None,
        })
        .unwrap();
    (run.task.id.clone(), run.id)
}

fn subscribe(machine: &mut TaskMachine, id: &str) -> StreamId {
    let request = SubscribeToTaskRequest {
        id: id.to_owned(),
        ..Default::default()
    };
    machine.handle_subscribe(&request).unwrap()
}

/// What `stream` got from `events`: one line per event, `!` after the last.
fn seen(events: &[TaskEvent], stream: StreamId) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            TaskEvent::Stream {
                streams,
                response,
                last,
            } if streams.contains(&stream) => {
                let what = match response {
                    StreamResponse::Task(t) => format!("task {}", t.status.state.as_str()),
                    StreamResponse::StatusUpdate(s) => {
                        format!("status {}", s.status.state.as_str())
                    }
                    StreamResponse::ArtifactUpdate(a) => format!(
                        "artifact {}",
                        a.artifact.parts[0].as_text().unwrap_or_default()
                    ),
                    StreamResponse::Message(_) => "message".to_owned(),
                };
                Some(if *last { format!("{what} !") } else { what })
            }
            _ => None,
        })
        .collect()
}

/// The task as a store would have it from `machine`.
fn stored(machine: &TaskMachine, id: &str) -> (u64, Task) {
    (
        machine.version(id).unwrap(),
        machine.task(id).unwrap().clone(),
    )
}

#[test]
fn every_change_moves_the_version_and_is_recorded_with_its_event() {
    let mut a = machine(1);
    let (id, run) = start(&mut a, "work");
    a.handle_update(at(1), run, Update::status(TaskState::Working, None))
        .unwrap();
    a.handle_update(at(2), run, Update::artifact(Artifact::text("x", "done")))
        .unwrap();
    a.handle_update(at(3), run, Update::status(TaskState::Completed, None))
        .unwrap();
    let recorded: Vec<(u64, Option<&str>)> = changes(&mut a)
        .iter()
        .map(|c| {
            assert_eq!(c.task_id, id);
            let kind = c.event.as_ref().map(|e| match e {
                StreamResponse::StatusUpdate(_) => "status",
                StreamResponse::ArtifactUpdate(_) => "artifact",
                _ => "other",
            });
            (c.version, kind)
        })
        .collect();
    assert_eq!(
        recorded,
        [
            (1, None),
            (2, Some("status")),
            (3, Some("artifact")),
            (4, Some("status"))
        ]
    );
    assert_eq!(a.version(&id), Some(4));

    // Not tracking: the version still counts, nothing is recorded.
    let mut quiet = TaskMachine::new(Default::default(), SeededIds::new(1));
    let (id, run) = start(&mut quiet, "work");
    quiet
        .handle_update(at(1), run, Update::status(TaskState::Working, None))
        .unwrap();
    assert_eq!(quiet.version(&id), Some(2));
    assert_eq!(quiet.poll_change(), None);
}

#[test]
fn a_stream_on_another_process_gets_the_changes_of_the_process_that_runs_the_task() {
    let (mut a, mut b) = (machine(1), machine(2));
    let (id, run) = start(&mut a, "work");
    a.handle_update(at(1), run, Update::status(TaskState::Working, None))
        .unwrap();
    changes(&mut a);
    // B takes the task as the store has it, and a client subscribes there.
    let (version, task) = stored(&a, &id);
    assert_eq!(b.adopt(version, task), Ok(true));
    assert!(!b.runs_here(&id));
    let stream = subscribe(&mut b, &id);
    assert_eq!(b.watched_elsewhere(), std::slice::from_ref(&id));
    drain(&mut b);

    a.handle_update(at(2), run, Update::artifact(Artifact::text("x", "half")))
        .unwrap();
    a.handle_update(at(3), run, Update::status(TaskState::Completed, None))
        .unwrap();
    let made = changes(&mut a);
    // The first change twice: applied once.
    assert_eq!(b.handle_remote(at(9), &made[0]), Remote::Applied);
    assert_eq!(b.handle_remote(at(9), &made[0]), Remote::Ignored);
    assert_eq!(b.handle_remote(at(9), &made[1]), Remote::Applied);
    assert_eq!(
        seen(&drain(&mut b), stream),
        ["artifact half", "status TASK_STATE_COMPLETED !"]
    );
    // B's copy is A's, and B records nothing of its own (nothing to announce again).
    assert_eq!(stored(&b, &id), stored(&a, &id));
    assert_eq!(b.poll_change(), None);
    // A change of a task B does not hold: nothing.
    let other = Change {
        task_id: "elsewhere".into(),
        ..made[0].clone()
    };
    assert_eq!(b.handle_remote(at(9), &other), Remote::Ignored);
}

#[test]
fn a_missed_change_is_a_gap_and_the_task_loaded_again_brings_the_stream_up_to_date() {
    let (mut a, mut b) = (machine(1), machine(2));
    let (id, run) = start(&mut a, "work");
    let (version, task) = stored(&a, &id);
    b.adopt(version, task).unwrap();
    let stream = subscribe(&mut b, &id);
    drain(&mut b);
    a.handle_update(at(1), run, Update::status(TaskState::Working, None))
        .unwrap();
    a.handle_update(at(2), run, Update::status(TaskState::Failed, None))
        .unwrap();
    let made = changes(&mut a);
    // The working status was lost: the failure is a gap.
    assert_eq!(b.handle_remote(at(9), &made[2]), Remote::Gap);
    assert_eq!(seen(&drain(&mut b), stream), Vec::<String>::new());
    // An older copy is not taken; the newer one is, and the stream gets its status.
    let (version, task) = stored(&a, &id);
    assert_eq!(b.adopt(1, task.clone()), Ok(false));
    assert_eq!(b.adopt(version, task), Ok(true));
    assert_eq!(seen(&drain(&mut b), stream), ["status TASK_STATE_FAILED !"]);
    assert_eq!(stored(&b, &id), stored(&a, &id));
}

#[test]
fn a_cancel_answered_by_another_process_stops_the_run_where_it_runs() {
    let (mut a, mut b) = (machine(1), machine(2));
    let (id, run) = start(&mut a, "wait");
    a.handle_update(at(1), run, Update::status(TaskState::Working, None))
        .unwrap();
    let watching = subscribe(&mut a, &id);
    drain(&mut a);
    changes(&mut a);
    let (version, task) = stored(&a, &id);
    b.adopt(version, task).unwrap();
    let request = CancelTaskRequest {
        id: id.clone(),
        ..Default::default()
    };
    let canceled = b.handle_cancel(at(2), &request).unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // B stops no run: none runs there.
    assert!(!drain(&mut b)
        .iter()
        .any(|e| matches!(e, TaskEvent::Stop { .. })));
    let cancel = changes(&mut b).pop().unwrap();
    assert_eq!(cancel.version, version + 1);

    // A runs the task: only a terminal status from elsewhere is taken, and it stops the run.
    let working = Change {
        event: None,
        ..cancel.clone()
    };
    assert_eq!(a.handle_remote(at(3), &working), Remote::Ignored);
    assert_eq!(a.handle_remote(at(3), &cancel), Remote::Applied);
    let events = drain(&mut a);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, TaskEvent::Stop { run: r, .. } if *r == run)),
        "{events:?}"
    );
    assert_eq!(seen(&events, watching), ["status TASK_STATE_CANCELED !"]);
    assert!(a
        .handle_update(at(4), run, Update::status(TaskState::Completed, None))
        .is_err());
    // A saves its copy (a run's late save must not win) and announces it once: a third
    // process that took a change of A's with the cancel's version first takes this one.
    let saved = changes(&mut a);
    assert_eq!(saved.len(), 1);
    assert!(saved[0].version > cancel.version, "{saved:?}");
    assert!(matches!(
        &saved[0].event,
        Some(StreamResponse::StatusUpdate(s)) if s.status.state == TaskState::Canceled
    ));
    assert_eq!(a.task(&id).unwrap().status.state, TaskState::Canceled);
    // B, whose copy is terminal, ignores it: no loop.
    assert_eq!(b.handle_remote(at(4), &saved[0]), Remote::Ignored);
    assert_eq!(b.poll_change(), None);
}

#[test]
fn adopting_needs_room_like_any_task() {
    let mut limits = sansrpc_a2a::machine::Limits::default();
    limits.max_tasks = 1;
    let mut a = TaskMachine::new(
        sansrpc_a2a::machine::TaskConfig::with_limits(limits),
        SeededIds::new(1),
    );
    let (id, _run) = start(&mut a, "wait");
    let other = Task {
        id: format!("{id}-other"),
        context_id: "c".into(),
        ..Default::default()
    };
    // The one task kept is running: no room.
    assert!(a.adopt(1, other).is_err());
    assert_eq!(a.len(), 1);
}
