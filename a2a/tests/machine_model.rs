//! The task machine against a small reference model, on arbitrary sequences of requests,
//! agent updates and run ends: the same answers (accepted, or the same error), the same
//! states and history sizes, and the same events to the same streams, waiters and runs.
//! Small bounds, so that every bound is reached too.

mod support;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use proptest::prelude::*;
use sansrpc_a2a::machine::{
    Limits, RunId, SeededIds, SendMode, Sent, StreamId, TaskConfig, TaskEvent, TaskMachine, Update,
    UpdateError, WaiterId,
};
use sansrpc_a2a::types::{
    Artifact, CancelTaskRequest, Message, Role, SendMessageConfiguration, SendMessageResponse,
    StreamResponse, SubscribeToTaskRequest, TaskState,
};
use sansrpc_a2a::ErrorKind;
use support::{at, send_with, user};

const MAX_TASKS: usize = 4;
const MAX_HISTORY: usize = 6;
const MAX_STREAMS: usize = 2;
const MAX_QUEUED: usize = 1;

#[derive(Debug, Clone)]
enum Op {
    New {
        mode: u8,
    },
    FollowUp {
        task: usize,
        mode: u8,
    },
    Status {
        task: usize,
        state: usize,
        say: bool,
    },
    Artifact {
        task: usize,
        id: u8,
        append: bool,
        last: bool,
    },
    RunEnd {
        task: usize,
    },
    Cancel {
        task: usize,
    },
    Subscribe {
        task: usize,
    },
    Close {
        stream: usize,
    },
    DropWaiter {
        waiter: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..3).prop_map(|mode| Op::New { mode }),
        3 => (any::<usize>(), 0u8..3).prop_map(|(task, mode)| Op::FollowUp { task, mode }),
        6 => (any::<usize>(), 0usize..9, any::<bool>()).prop_map(|(task, state, say)| Op::Status { task, state, say }),
        3 => (any::<usize>(), 0u8..3, any::<bool>(), any::<bool>())
            .prop_map(|(task, id, append, last)| Op::Artifact { task, id, append, last }),
        3 => any::<usize>().prop_map(|task| Op::RunEnd { task }),
        2 => any::<usize>().prop_map(|task| Op::Cancel { task }),
        2 => any::<usize>().prop_map(|task| Op::Subscribe { task }),
        1 => any::<usize>().prop_map(|stream| Op::Close { stream }),
        1 => any::<usize>().prop_map(|waiter| Op::DropWaiter { waiter }),
    ]
}

/// An event, as the model predicts it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Abs {
    Run(String),
    Stop(RunId),
    Reply(WaiterId, TaskState),
    Stream(Vec<StreamId>, &'static str, TaskState, bool),
}

/// The events, as the model predicts them, and the ids of the runs they start.
fn observe(m: &mut TaskMachine) -> (Vec<Abs>, Vec<RunId>) {
    let events = support::drain(m);
    let runs = events
        .iter()
        .filter_map(|e| match e {
            TaskEvent::Run(run) => Some(run.id),
            _ => None,
        })
        .collect();
    (abstracted(events), runs)
}

fn abstracted(events: Vec<TaskEvent>) -> Vec<Abs> {
    events
        .into_iter()
        .map(|e| match e {
            TaskEvent::Run(run) => Abs::Run(run.task.id.clone()),
            TaskEvent::Stop { run, .. } => Abs::Stop(run),
            TaskEvent::Reply {
                waiter,
                response: SendMessageResponse::Task(t),
            } => Abs::Reply(waiter, t.status.state),
            TaskEvent::Reply { .. } => panic!("a reply that is not a task"),
            TaskEvent::Stream {
                streams,
                response,
                last,
            } => {
                let (kind, state) = match response {
                    StreamResponse::Task(t) => ("task", t.status.state),
                    StreamResponse::StatusUpdate(u) => ("status", u.status.state),
                    StreamResponse::ArtifactUpdate(_) => ("artifact", TaskState::Unspecified),
                    StreamResponse::Message(_) => ("message", TaskState::Unspecified),
                };
                Abs::Stream(streams, kind, state, last)
            }
        })
        .collect()
}

/// The allowed transitions, written out: the reference.
fn allowed(from: TaskState, to: TaskState) -> bool {
    use TaskState::*;
    match (from, to) {
        (Completed | Failed | Canceled | Rejected, _) => false,
        (_, Unspecified) => false,
        (Submitted, Submitted) => true,
        (_, Submitted) => false,
        (_, Working | InputRequired | AuthRequired) => true,
        (_, Completed | Failed | Canceled | Rejected) => true,
    }
}

#[derive(Debug, Default)]
struct ModelTask {
    id: String,
    state: TaskState,
    time: u64,
    history: usize,
    run: Option<RunId>,
    stale_run: Option<RunId>,
    waiting: Vec<WaiterId>,
    queued: VecDeque<Option<WaiterId>>,
    streams: Vec<StreamId>,
    artifacts: BTreeMap<u8, bool>,
}

#[derive(Default)]
struct Model {
    tasks: Vec<ModelTask>,
    all_streams: Vec<StreamId>,
    all_waiters: Vec<WaiterId>,
}

impl Model {
    /// Records a status change; returns the events it causes.
    fn set_status(&mut self, i: usize, state: TaskState, now: u64, say: bool) -> Vec<Abs> {
        let t = &mut self.tasks[i];
        t.state = state;
        t.time = now;
        if say && t.history < MAX_HISTORY {
            t.history += 1;
        }
        let mut out = Vec::new();
        let last = state.is_terminal() || state == TaskState::InputRequired;
        if !t.streams.is_empty() {
            let streams = if last {
                std::mem::take(&mut t.streams)
            } else {
                t.streams.clone()
            };
            out.push(Abs::Stream(streams, "status", state, last));
        }
        let mut answered = Vec::new();
        if state.is_terminal() || state.is_interrupted() {
            answered.append(&mut t.waiting);
        }
        if state.is_terminal() {
            answered.extend(std::mem::take(&mut t.queued).into_iter().flatten());
        }
        out.extend(answered.into_iter().map(|w| Abs::Reply(w, state)));
        out
    }
}

fn config() -> TaskConfig {
    let mut limits = Limits::default();
    limits.max_tasks = MAX_TASKS;
    limits.max_history = MAX_HISTORY;
    limits.max_streams_per_task = MAX_STREAMS;
    limits.max_queued_messages = MAX_QUEUED;
    TaskConfig::with_limits(limits)
}

fn request(
    text: &str,
    task: Option<&ModelTask>,
    mode: u8,
) -> (sansrpc_a2a::types::SendMessageRequest, SendMode) {
    let mut message = user(text, text);
    if let Some(t) = task {
        message.task_id = Some(t.id.clone());
    }
    let configuration = SendMessageConfiguration {
        return_immediately: mode == 2,
        ..Default::default()
    };
    let mode = if mode == 1 {
        SendMode::Streaming
    } else {
        SendMode::Blocking
    };
    (send_with(message, configuration), mode)
}

fn check(ops: Vec<Op>) {
    let mut m = TaskMachine::new(config(), SeededIds::new(3));
    let mut model = Model::default();
    let mut counter = 0u64;
    for (step, op) in ops.into_iter().enumerate() {
        let now = step as u64 + 1;
        let pick = |n: usize, len: usize| (len > 0).then(|| n % len);
        match op {
            Op::New { mode } => {
                counter += 1;
                let (req, send_mode) = request(&format!("n{counter}"), None, mode);
                let result = m.handle_send(at(now), req, send_mode);
                let (got, runs) = observe(&mut m);
                let mut want = Vec::new();
                if model.tasks.len() >= MAX_TASKS {
                    let victim = model
                        .tasks
                        .iter()
                        .enumerate()
                        .filter(|(_, t)| t.state.is_terminal())
                        .min_by_key(|(_, t)| t.time)
                        .map(|(i, _)| i);
                    let Some(v) = victim else {
                        assert_eq!(result.unwrap_err().kind(), ErrorKind::Internal);
                        assert_eq!(got, []);
                        continue;
                    };
                    let gone = model.tasks.remove(v);
                    assert!(m.task(&gone.id).is_none());
                    if let Some(run) = gone.run {
                        want.push(Abs::Stop(run));
                    }
                }
                let id = got
                    .iter()
                    .find_map(|a| match a {
                        Abs::Run(id) => Some(id.clone()),
                        _ => None,
                    })
                    .expect("a new task's run");
                let mut t = ModelTask {
                    id: id.clone(),
                    state: TaskState::Submitted,
                    time: now,
                    history: 1,
                    ..Default::default()
                };
                match result.unwrap() {
                    Sent::Stream(s) => {
                        want.push(Abs::Stream(vec![s], "task", TaskState::Submitted, false));
                        t.streams.push(s);
                        model.all_streams.push(s);
                    }
                    Sent::Waiting(w) => {
                        t.waiting.push(w);
                        model.all_waiters.push(w);
                    }
                    Sent::Task(task) => assert_eq!(task.id, id),
                }
                want.push(Abs::Run(id));
                t.run = runs.last().copied();
                model.tasks.push(t);
                assert_eq!(got, want);
                continue;
            }
            Op::FollowUp { task, mode } => {
                let Some(i) = pick(task, model.tasks.len()) else {
                    continue;
                };
                counter += 1;
                let (req, send_mode) = request(&format!("f{counter}"), Some(&model.tasks[i]), mode);
                let result = m.handle_send(at(now), req, send_mode);
                let (got, runs) = observe(&mut m);
                let t = &mut model.tasks[i];
                let refusal = if t.state.is_terminal() {
                    Some(ErrorKind::UnsupportedOperation)
                } else if t.history >= MAX_HISTORY {
                    Some(ErrorKind::InvalidParams)
                } else if (send_mode == SendMode::Streaming && t.streams.len() >= MAX_STREAMS)
                    || (t.run.is_some() && t.queued.len() >= MAX_QUEUED)
                {
                    Some(ErrorKind::Internal)
                } else {
                    None
                };
                if let Some(kind) = refusal {
                    assert_eq!(result.unwrap_err().kind(), kind);
                    assert_eq!(got, []);
                    continue;
                }
                t.history += 1;
                let mut want = Vec::new();
                let mut waiter = None;
                match result.unwrap() {
                    Sent::Stream(s) => {
                        want.push(Abs::Stream(vec![s], "task", t.state, false));
                        t.streams.push(s);
                        model.all_streams.push(s);
                    }
                    Sent::Waiting(w) => {
                        waiter = Some(w);
                        model.all_waiters.push(w);
                    }
                    Sent::Task(task) => assert_eq!(task.status.state, t.state),
                }
                if t.run.is_some() {
                    t.queued.push_back(waiter);
                } else {
                    want.push(Abs::Run(t.id.clone()));
                    t.waiting.extend(waiter);
                    t.run = runs.last().copied();
                }
                assert_eq!(got, want);
            }
            Op::Status { task, state, say } => {
                let Some(i) = pick(task, model.tasks.len()) else {
                    continue;
                };
                let to = TaskState::ALL[state];
                let t = &model.tasks[i];
                let Some(run) = t.run.or(t.stale_run) else {
                    continue;
                };
                let message = say.then(|| Message::text(Role::Agent, "", "said"));
                let result = m.handle_update(at(now), run, Update::status(to, message));
                let (got, _) = observe(&mut m);
                if t.run.is_none() {
                    assert_eq!(result, Err(UpdateError::UnknownRun(run)));
                    assert_eq!(got, []);
                } else if t.state.is_terminal() {
                    assert_eq!(result, Err(UpdateError::Finished(t.state)));
                    assert_eq!(got, []);
                } else if !allowed(t.state, to) {
                    assert_eq!(result, Err(UpdateError::Transition { from: t.state, to }));
                    assert_eq!(got, []);
                } else {
                    result.unwrap();
                    assert_eq!(got, model.set_status(i, to, now, say));
                }
            }
            Op::Artifact {
                task,
                id,
                append,
                last,
            } => {
                let Some(i) = pick(task, model.tasks.len()) else {
                    continue;
                };
                let t = &mut model.tasks[i];
                let Some(run) = t.run.or(t.stale_run) else {
                    continue;
                };
                let update = Update::Artifact {
                    artifact: Artifact::text(format!("a{id}"), "part"),
                    append,
                    last_chunk: last,
                    metadata: None,
                };
                let result = m.handle_update(at(now), run, update);
                let (got, _) = observe(&mut m);
                let name = format!("a{id}");
                let want_err = if t.run.is_none() {
                    Some(UpdateError::UnknownRun(run))
                } else if t.state.is_terminal() {
                    Some(UpdateError::Finished(t.state))
                } else if append && !t.artifacts.contains_key(&id) {
                    Some(UpdateError::UnknownArtifact(name))
                } else if append && t.artifacts[&id] {
                    Some(UpdateError::ArtifactClosed(name))
                } else {
                    None
                };
                match want_err {
                    Some(e) => {
                        assert_eq!(result, Err(e));
                        assert_eq!(got, []);
                    }
                    None => {
                        result.unwrap();
                        t.artifacts.insert(id, last);
                        let want = if t.streams.is_empty() {
                            vec![]
                        } else {
                            vec![Abs::Stream(
                                t.streams.clone(),
                                "artifact",
                                TaskState::Unspecified,
                                false,
                            )]
                        };
                        assert_eq!(got, want);
                    }
                }
            }
            Op::RunEnd { task } => {
                let Some(i) = pick(task, model.tasks.len()) else {
                    continue;
                };
                let t = &mut model.tasks[i];
                let Some(run) = t.run.or(t.stale_run) else {
                    continue;
                };
                m.handle_run_end(run);
                let (got, runs) = observe(&mut m);
                let mut want = Vec::new();
                if t.run.is_some() {
                    t.run = None;
                    t.stale_run = Some(run);
                    want.extend(t.waiting.drain(..).map(|w| Abs::Reply(w, t.state)));
                    if !t.state.is_terminal() {
                        if let Some(next) = t.queued.pop_front() {
                            want.push(Abs::Run(t.id.clone()));
                            t.waiting.extend(next);
                            t.run = runs.last().copied();
                        }
                    }
                }
                assert_eq!(got, want);
            }
            Op::Cancel { task } => {
                let Some(i) = pick(task, model.tasks.len()) else {
                    continue;
                };
                let request = CancelTaskRequest {
                    id: model.tasks[i].id.clone(),
                    ..Default::default()
                };
                let result = m.handle_cancel(at(now), &request);
                let (got, _) = observe(&mut m);
                if model.tasks[i].state.is_terminal() {
                    assert_eq!(result.unwrap_err().kind(), ErrorKind::TaskNotCancelable);
                    assert_eq!(got, []);
                } else {
                    assert_eq!(result.unwrap().status.state, TaskState::Canceled);
                    let mut want = model.set_status(i, TaskState::Canceled, now, false);
                    let t = &mut model.tasks[i];
                    if let Some(run) = t.run.take() {
                        want.push(Abs::Stop(run));
                        t.stale_run = Some(run);
                    }
                    assert_eq!(got, want);
                }
            }
            Op::Subscribe { task } => {
                let Some(i) = pick(task, model.tasks.len()) else {
                    continue;
                };
                let t = &mut model.tasks[i];
                let request = SubscribeToTaskRequest {
                    id: t.id.clone(),
                    ..Default::default()
                };
                let result = m.handle_subscribe(&request);
                let (got, _) = observe(&mut m);
                if t.state.is_terminal() {
                    assert_eq!(result.unwrap_err().kind(), ErrorKind::UnsupportedOperation);
                    assert_eq!(got, []);
                } else if t.streams.len() >= MAX_STREAMS {
                    assert_eq!(result.unwrap_err().kind(), ErrorKind::Internal);
                    assert_eq!(got, []);
                } else {
                    let s = result.unwrap();
                    t.streams.push(s);
                    model.all_streams.push(s);
                    assert_eq!(got, [Abs::Stream(vec![s], "task", t.state, false)]);
                }
            }
            Op::Close { stream } => {
                let Some(k) = pick(stream, model.all_streams.len()) else {
                    continue;
                };
                let s = model.all_streams[k];
                m.close_stream(s);
                for t in &mut model.tasks {
                    t.streams.retain(|x| *x != s);
                }
                assert_eq!(observe(&mut m).0, []);
            }
            Op::DropWaiter { waiter } => {
                let Some(k) = pick(waiter, model.all_waiters.len()) else {
                    continue;
                };
                let w = model.all_waiters[k];
                m.drop_waiter(w);
                for t in &mut model.tasks {
                    t.waiting.retain(|x| *x != w);
                    for q in &mut t.queued {
                        if *q == Some(w) {
                            *q = None;
                        }
                    }
                }
                assert_eq!(observe(&mut m).0, []);
            }
        }
        // The machine's tasks are the model's.
        assert_eq!(m.len(), model.tasks.len());
        for t in &model.tasks {
            let task = m.task(&t.id).expect("kept");
            assert_eq!(task.status.state, t.state, "{}", t.id);
            assert_eq!(task.history.len(), t.history, "{}", t.id);
            let artifacts: BTreeSet<String> = task
                .artifacts
                .iter()
                .map(|a| a.artifact_id.clone())
                .collect();
            let want: BTreeSet<String> = t.artifacts.keys().map(|id| format!("a{id}")).collect();
            assert_eq!(artifacts, want);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/machine_model.txt",
            ),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_machine_does_what_the_model_does(ops in proptest::collection::vec(op(), 1..80)) {
        check(ops);
    }
}
