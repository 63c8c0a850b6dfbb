//! The task machine: every task's state, history and artifacts, the runs of the agent,
//! and the streams and waiting requests that watch them, with no I/O, clock or lock.
//!
//! # The calling contract
//!
//! A driver owns one [`TaskMachine`] and feeds it:
//!
//! - the requests it receives: [`handle_send`](TaskMachine::handle_send) (`SendMessage`,
//!   `SendStreamingMessage`), [`handle_cancel`](TaskMachine::handle_cancel),
//!   [`handle_subscribe`](TaskMachine::handle_subscribe), and the reads
//!   [`get_task`](TaskMachine::get_task) and [`list_tasks`](TaskMachine::list_tasks); an
//!   `Err` is the JSON-RPC error to answer with;
//! - what the agent's runs publish ([`handle_update`](TaskMachine::handle_update)) and
//!   that a run finished ([`handle_run_end`](TaskMachine::handle_run_end));
//! - that a client went away: [`close_stream`](TaskMachine::close_stream),
//!   [`drop_waiter`](TaskMachine::drop_waiter).
//!
//! After each input it drains [`poll_event`](TaskMachine::poll_event): start a run
//! ([`TaskEvent::Run`]), stop one ([`TaskEvent::Stop`]), answer a waiting `SendMessage`
//! ([`TaskEvent::Reply`]), send an event to streams ([`TaskEvent::Stream`]). Time is an input: the
//! current UTC time goes with every input that records a status.
//!
//! # The rules it keeps
//!
//! - A message without `taskId` creates a task (`TASK_STATE_SUBMITTED`, the message its
//!   history) in the message's `contextId`, or in a new context when it has none. A
//!   message with `taskId` continues that task: `TaskNotFound` when there is none,
//!   `UnsupportedOperation` when it is terminal, `InvalidParams` when its `contextId` is
//!   another. User messages are kept exactly as sent.
//! - One agent run per task at a time: a message sent while a run goes on waits its turn.
//! - The agent moves its task to any state but `Unspecified` (and back to `Submitted`);
//!   a terminal state is final. Its status messages get an id, its role and the task's
//!   ids, and join the history.
//! - An artifact with a new id is added, one with a known id replaced; `append` adds parts
//!   to one already sent, until its `lastChunk`.
//! - A stream gets the task first, then every status and artifact update in order, the
//!   same as every other stream of the task; it ends after a terminal status (and after
//!   input required, see [`TaskConfig::end_streams_on_input_required`]).
//! - A blocking `SendMessage` is answered when its run reaches a terminal or interrupted
//!   state, or ends; `returnImmediately` answers at once.
//! - `CancelTask` cancels a task that is not terminal (its run is stopped) and answers
//!   `TaskNotCancelable` for one that is.
//! - `ListTasks` lists the most recently updated first, filtered by context, state and
//!   status time, a page at a time with an opaque cursor.
//! - Every collection is bounded by [`Limits`], with a defined error past each bound.
//!
//! ```
//! use sansrpc_a2a::machine::{TaskEvent, SeededIds, SendMode, Sent, TaskMachine, Update};
//! use sansrpc_a2a::types::{
//!     Artifact, Message, Role, SendMessageRequest, SendMessageResponse, TaskState, Timestamp,
//! };
//!
//! let mut machine = TaskMachine::new(Default::default(), SeededIds::new(1));
//! let now = Timestamp::from_unix_millis(1_700_000_000_000).unwrap();
//! let request = SendMessageRequest {
//!     message: Message::text(Role::User, "m-1", "echo hi"),
//!     ..Default::default()
//! };
//! let Ok(Sent::Waiting(waiter)) = machine.handle_send(now, request, SendMode::Blocking) else {
//!     panic!()
//! };
//! // The driver starts the agent on the run...
//! let Some(TaskEvent::Run(run)) = machine.poll_event() else { panic!() };
//! assert_eq!(run.message.first_text(), Some("echo hi"));
//! // ...which publishes an artifact and completes the task.
//! machine.handle_update(now, run.id, Update::artifact(Artifact::text("", "hi"))).unwrap();
//! machine.handle_update(now, run.id, Update::status(TaskState::Completed, None)).unwrap();
//! // The waiting SendMessage is answered with the completed task.
//! let Some(TaskEvent::Reply { waiter: w, response: SendMessageResponse::Task(task) }) =
//!     machine.poll_event()
//! else {
//!     panic!()
//! };
//! assert_eq!(w, waiter);
//! assert_eq!(task.status.state, TaskState::Completed);
//! assert_eq!(task.artifacts[0].parts[0].as_text(), Some("hi"));
//! machine.handle_run_end(run.id);
//! assert_eq!(machine.poll_event(), None);
//! ```

mod config;
mod event;
mod ids;
pub(crate) mod list;
pub(crate) mod size;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::mem;

pub use crate::store::Change;
pub use config::{Limits, TaskConfig};
pub use event::{Run, RunId, SendMode, Sent, StreamId, TaskEvent, Update, UpdateError, WaiterId};
pub use ids::{IdSource, SeededIds};

use crate::types::{
    Artifact, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, Message,
    Role, SendMessageRequest, SendMessageResponse, StreamResponse, Struct, SubscribeToTaskRequest,
    Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent, Timestamp,
};
use crate::{A2aError, ErrorKind};

/// The tasks of one agent, and everything watching them. See the [module docs](self).
pub struct TaskMachine {
    config: TaskConfig,
    ids: Box<dyn IdSource + Send>,
    tasks: BTreeMap<String, Slot>,
    /// Every task by (status time, id): `ListTasks`' order, and eviction's.
    by_status: BTreeSet<(Timestamp, String)>,
    runs: BTreeMap<RunId, String>,
    streams: BTreeMap<StreamId, String>,
    waiters: BTreeMap<WaiterId, String>,
    /// The last run, stream or waiter id handed out.
    counter: u64,
    events: VecDeque<TaskEvent>,
    /// [`track_changes`](TaskMachine::track_changes): the changes not yet taken.
    tracking: bool,
    changes: VecDeque<Change>,
    /// While a change from another process is applied: its version.
    applying: Option<u64>,
}

/// What became of a change from another process ([`TaskMachine::handle_remote`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remote {
    /// The copy of the task here took it (its streams got the event).
    Applied,
    /// Nothing to do: the task is not held here, the change is one the copy has, or the
    /// task runs here (its copy here is the one that counts).
    Ignored,
    /// The copy here missed changes before this one: load the task again and
    /// [`adopt`](TaskMachine::adopt) it.
    Gap,
}

/// A task kept: live (being worked on, watched or waited for) or, once it is terminal and
/// nothing goes on around it, frozen: its JSON, which is all a finished task needs to be
/// read, at a fraction of the memory of its structs.
enum Slot {
    Live(Box<Entry>),
    Frozen(Frozen),
}

/// A terminal task that nothing watches: what `ListTasks` filters on, and the task as JSON.
struct Frozen {
    version: u64,
    state: TaskState,
    time: Option<Timestamp>,
    context_id: Box<str>,
    json: Box<[u8]>,
}

impl Slot {
    fn live(&self) -> Option<&Entry> {
        match self {
            Slot::Live(entry) => Some(entry),
            Slot::Frozen(_) => None,
        }
    }

    fn live_mut(&mut self) -> Option<&mut Entry> {
        match self {
            Slot::Live(entry) => Some(entry),
            Slot::Frozen(_) => None,
        }
    }

    fn version(&self) -> u64 {
        match self {
            Slot::Live(entry) => entry.version,
            Slot::Frozen(f) => f.version,
        }
    }

    fn state(&self) -> TaskState {
        match self {
            Slot::Live(entry) => entry.task.status.state,
            Slot::Frozen(f) => f.state,
        }
    }

    fn context_id(&self) -> &str {
        match self {
            Slot::Live(entry) => &entry.task.context_id,
            Slot::Frozen(f) => &f.context_id,
        }
    }

    fn time(&self) -> Option<Timestamp> {
        match self {
            Slot::Live(entry) => entry.task.status.timestamp,
            Slot::Frozen(f) => f.time,
        }
    }

    /// The task `id` (this slot's), whole.
    fn task(&self, id: &str) -> Task {
        match self {
            Slot::Live(entry) => entry.task.clone(),
            Slot::Frozen(f) => f.thaw(id),
        }
    }

    /// The task `id` (this slot's) as a reader gets it (see [`snapshot`]).
    fn snapshot(&self, id: &str, history_length: Option<usize>, with_artifacts: bool) -> Task {
        match self {
            Slot::Live(entry) => snapshot(&entry.task, history_length, with_artifacts),
            Slot::Frozen(f) => {
                let mut task = f.thaw(id);
                if let Some(n) = history_length {
                    let cut = task.history.len().saturating_sub(n);
                    task.history.drain(..cut);
                }
                if !with_artifacts {
                    task.artifacts = Vec::new();
                }
                task
            }
        }
    }
}

/// Deepest nesting a frozen task's JSON may have: serde_json reads 128 levels, and an
/// agent's data (a `Value` it built) may be deeper. Such a task stays live.
const MAX_FROZEN_DEPTH: usize = 100;

/// How deeply `json` nests (objects and arrays), strings skipped.
fn json_depth(json: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in json {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

impl Frozen {
    /// `task` frozen, unless its JSON would not read back (too deep).
    fn of(version: u64, task: &Task) -> Option<Frozen> {
        let json = serde_json::to_vec(task).ok()?;
        if json_depth(&json) > MAX_FROZEN_DEPTH {
            return None;
        }
        Some(Frozen {
            version,
            state: task.status.state,
            time: task.status.timestamp,
            context_id: task.context_id.as_str().into(),
            json: json.into_boxed_slice(),
        })
    }

    /// The task back from its JSON (the machine's own, shallow enough to read back). Should
    /// it not read, what the slot knows of it: its id, context and status.
    fn thaw(&self, id: &str) -> Task {
        serde_json::from_slice(&self.json).unwrap_or_else(|_| Task {
            id: id.to_owned(),
            context_id: self.context_id.to_string(),
            status: TaskStatus {
                state: self.state,
                message: None,
                timestamp: self.time,
            },
            ..Task::default()
        })
    }
}

/// One task and what goes on around it.
struct Entry {
    task: Task,
    run: Option<ActiveRun>,
    queued: VecDeque<Queued>,
    streams: Vec<StreamId>,
    /// Beside `task.artifacts`, index for index.
    artifacts: Vec<ArtifactInfo>,
    artifact_bytes: usize,
    /// One more at every change of the task.
    version: u64,
}

struct ActiveRun {
    id: RunId,
    waiters: Vec<Waiter>,
}

struct Waiter {
    id: WaiterId,
    history_length: Option<usize>,
}

/// A message waiting for its run.
struct Queued {
    message: Message,
    accepted_output_modes: Vec<String>,
    metadata: Option<Struct>,
    waiter: Option<Waiter>,
}

struct ArtifactInfo {
    bytes: usize,
    closed: bool,
}

/// `historyLength`: absent is everything; negative is refused.
fn history_length(value: Option<i32>) -> Result<Option<usize>, A2aError> {
    match value {
        None => Ok(None),
        Some(n) => usize::try_from(n).map(Some).map_err(|_| {
            A2aError::invalid_params(format!("historyLength must not be negative: {n}"))
        }),
    }
}

/// The task as a reader gets it: the last `history_length` messages, artifacts or not.
fn snapshot(task: &Task, history_length: Option<usize>, with_artifacts: bool) -> Task {
    let keep = history_length.map_or(task.history.len(), |n| n.min(task.history.len()));
    Task {
        id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: task.status.clone(),
        artifacts: if with_artifacts {
            task.artifacts.clone()
        } else {
            Vec::new()
        },
        history: task.history[task.history.len() - keep..].to_vec(),
        metadata: task.metadata.clone(),
    }
}

/// The live entry of task `id`, which the caller knows to be live (not terminal, or with a
/// run, a message or a stream around it).
fn live<'a>(tasks: &'a BTreeMap<String, Slot>, id: &str) -> &'a Entry {
    tasks
        .get(id)
        .and_then(Slot::live)
        .expect("a task with something going on is live")
}

fn live_mut<'a>(tasks: &'a mut BTreeMap<String, Slot>, id: &str) -> &'a mut Entry {
    tasks
        .get_mut(id)
        .and_then(Slot::live_mut)
        .expect("a task with something going on is live")
}

/// The streams of `entry` that get a status event: all of them; when it is their `last`,
/// they are closed (out of `entry` and of `open`, the machine's index).
fn take_streams(
    entry: &mut Entry,
    last: bool,
    open: &mut BTreeMap<StreamId, String>,
) -> Vec<StreamId> {
    if !last {
        return entry.streams.clone();
    }
    let streams = mem::take(&mut entry.streams);
    for s in &streams {
        open.remove(s);
    }
    streams
}

fn state_error(kind: ErrorKind, id: &str, state: TaskState, what: &str) -> A2aError {
    let state = state.as_str();
    A2aError::new(kind, format!("Task {id} is {state}: {what}"))
        .with_metadata("taskId", id.to_owned())
        .with_metadata("state", state)
}

impl TaskMachine {
    /// A machine with no tasks, taking its ids from `ids`.
    pub fn new(config: TaskConfig, ids: impl IdSource + Send + 'static) -> TaskMachine {
        TaskMachine {
            config,
            ids: Box::new(ids),
            tasks: BTreeMap::new(),
            by_status: BTreeSet::new(),
            runs: BTreeMap::new(),
            streams: BTreeMap::new(),
            waiters: BTreeMap::new(),
            counter: 0,
            events: VecDeque::new(),
            tracking: false,
            changes: VecDeque::new(),
            applying: None,
        }
    }

    /// Keeps a [`Change`] for every change of a task from now on, for
    /// [`poll_change`](Self::poll_change) (off by default). The HTTP machine turns it on
    /// when it has a task store, and drains the changes after every input: a driver that
    /// turns it on must do the same, or they pile up.
    pub fn track_changes(&mut self, on: bool) {
        self.tracking = on;
        if !on {
            self.changes.clear();
        }
    }

    /// The next change of a task, oldest first (with [`track_changes`](Self::track_changes)).
    pub fn poll_change(&mut self) -> Option<Change> {
        self.changes.pop_front()
    }

    /// The version of task `id`: 1 when created, one more at every change (a message, a
    /// status, an artifact) since.
    pub fn version(&self, id: &str) -> Option<u64> {
        self.tasks.get(id).map(Slot::version)
    }

    /// Whether an agent run of task `id` goes on in this machine (or a message waits for
    /// one).
    pub fn runs_here(&self, id: &str) -> bool {
        self.tasks
            .get(id)
            .and_then(Slot::live)
            .is_some_and(|e| e.run.is_some() || !e.queued.is_empty())
    }

    /// The tasks held here that streams watch and that do not run here: those whose events
    /// come from other processes.
    pub fn watched_elsewhere(&self) -> Vec<String> {
        self.tasks
            .iter()
            .filter(|(_, slot)| {
                slot.live()
                    .is_some_and(|e| !e.streams.is_empty() && e.run.is_none())
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Takes `task` at `version` as a store has it (saved by another process, or before a
    /// restart), in place of the copy held here unless that one is as new or runs here.
    /// Streams open on the task get its status when it changed (and end when it is
    /// terminal). True when the task was taken; `Err` when there is no room for it (every
    /// task kept is running).
    pub fn adopt(&mut self, version: u64, task: Task) -> Result<bool, A2aError> {
        let artifacts: Vec<ArtifactInfo> = task
            .artifacts
            .iter()
            .map(|a| ArtifactInfo {
                bytes: size::artifact_size(a),
                closed: false,
            })
            .collect();
        let artifact_bytes = artifacts.iter().map(|a| a.bytes).sum();
        let id = task.id.clone();
        let time = task.status.timestamp.unwrap_or_default();
        let fresh = |task, artifacts, artifact_bytes| {
            Slot::Live(Box::new(Entry {
                task,
                run: None,
                queued: VecDeque::new(),
                streams: Vec::new(),
                artifacts,
                artifact_bytes,
                version,
            }))
        };
        let entry = match self.tasks.get_mut(&id) {
            None => {
                self.make_room()?;
                self.by_status.insert((time, id.clone()));
                self.tasks
                    .insert(id.clone(), fresh(task, artifacts, artifact_bytes));
                self.freeze_if_done(&id);
                return Ok(true);
            }
            Some(Slot::Frozen(frozen)) => {
                if version <= frozen.version {
                    return Ok(false);
                }
                let old = (frozen.time.unwrap_or_default(), id.clone());
                self.by_status.remove(&old);
                self.by_status.insert((time, id.clone()));
                self.tasks
                    .insert(id.clone(), fresh(task, artifacts, artifact_bytes));
                self.freeze_if_done(&id);
                return Ok(true);
            }
            Some(Slot::Live(entry)) => entry,
        };
        if entry.run.is_some() || !entry.queued.is_empty() || version <= entry.version {
            return Ok(false);
        }
        let old = (entry.task.status.timestamp.unwrap_or_default(), id.clone());
        let moved = entry.task.status != task.status;
        entry.task = task;
        entry.artifacts = artifacts;
        entry.artifact_bytes = artifact_bytes;
        entry.version = version;
        self.by_status.remove(&old);
        self.by_status.insert((time, id.clone()));
        if moved && !entry.streams.is_empty() {
            let state = entry.task.status.state;
            let last = state.is_terminal()
                || (state == TaskState::InputRequired && self.config.end_streams_on_input_required);
            let streams = take_streams(entry, last, &mut self.streams);
            let event = TaskStatusUpdateEvent {
                task_id: id.clone(),
                context_id: entry.task.context_id.clone(),
                status: entry.task.status.clone(),
                metadata: None,
            };
            self.events.push_back(TaskEvent::Stream {
                streams,
                response: StreamResponse::StatusUpdate(event),
                last,
            });
        }
        self.freeze_if_done(&id);
        Ok(true)
    }

    /// Freezes task `id` when it is terminal and nothing goes on around it any more (no
    /// run, no message waiting, no stream): from then on it is kept as its JSON.
    fn freeze_if_done(&mut self, id: &str) {
        let Some(slot) = self.tasks.get_mut(id) else {
            return;
        };
        let Slot::Live(entry) = slot else {
            return;
        };
        let done = entry.task.status.state.is_terminal()
            && entry.run.is_none()
            && entry.queued.is_empty()
            && entry.streams.is_empty();
        if done {
            if let Some(frozen) = Frozen::of(entry.version, &entry.task) {
                *slot = Slot::Frozen(frozen);
            }
        }
    }

    /// A change another process made ([`Change`], from a [`Fanout`](crate::store::Fanout)),
    /// applied to the copy of the task held here: its streams get the event as if the
    /// change were made here. A change is applied once, in version order; a task that runs
    /// here takes nothing from elsewhere but a terminal status (a `CancelTask` another
    /// process answered), which stops its run. Applying records no change of its own (it is
    /// not announced again), except that terminal status on a task running here, whose copy
    /// is then saved and announced once (a process that took this run's own change of the
    /// same version first takes it then; the one that canceled ignores it, its copy being
    /// terminal).
    pub fn handle_remote(&mut self, now: Timestamp, change: &Change) -> Remote {
        let Some(event) = &change.event else {
            return Remote::Ignored;
        };
        let Some(slot) = self.tasks.get(&change.task_id) else {
            return Remote::Ignored;
        };
        let id = change.task_id.as_str();
        if slot.state().is_terminal() {
            return Remote::Ignored;
        }
        let entry = live(&self.tasks, id);
        if entry.run.is_some() || !entry.queued.is_empty() {
            let StreamResponse::StatusUpdate(e) = event else {
                return Remote::Ignored;
            };
            if !e.status.state.is_terminal() {
                return Remote::Ignored;
            }
            let time = e.status.timestamp.unwrap_or(now);
            let (state, message) = (e.status.state, e.status.message.clone());
            self.set_status(time, id, state, message, e.metadata.clone());
            let entry = self
                .tasks
                .get_mut(id)
                .and_then(Slot::live_mut)
                .expect("present");
            entry.version = entry.version.max(change.version + 1);
            // Saved, and announced once more with a version past the cancel's: a process
            // that took this run's own change of the cancel's version first (each process
            // made one) ignored the cancel, and takes this one.
            if let Some(last) = self.changes.back_mut().filter(|c| c.task_id == id) {
                last.version = entry.version;
            }
            if let Some(run) = entry.run.take() {
                self.runs.remove(&run.id);
                self.events.push_back(TaskEvent::Stop {
                    run: run.id,
                    task_id: id.to_owned(),
                });
            }
            self.freeze_if_done(id);
            return Remote::Applied;
        }
        if change.version <= entry.version {
            return Remote::Ignored;
        }
        if change.version > entry.version + 1 {
            return Remote::Gap;
        }
        self.applying = Some(change.version);
        let applied = match event {
            StreamResponse::StatusUpdate(e) => {
                let time = e.status.timestamp.unwrap_or(now);
                let (state, message) = (e.status.state, e.status.message.clone());
                self.set_status(time, id, state, message, e.metadata.clone());
                true
            }
            StreamResponse::ArtifactUpdate(e) => self
                .apply_artifact(
                    id,
                    e.artifact.clone(),
                    e.append,
                    e.last_chunk,
                    e.metadata.clone(),
                )
                .is_ok(),
            _ => false,
        };
        self.applying = None;
        if applied {
            self.freeze_if_done(id);
            Remote::Applied
        } else {
            Remote::Gap
        }
    }

    /// Task `task_id` changed: its version moves on, and the change is kept for the driver.
    fn changed(&mut self, task_id: &str, event: Option<StreamResponse>) {
        let Some(entry) = self.tasks.get_mut(task_id).and_then(Slot::live_mut) else {
            return;
        };
        if let Some(version) = self.applying {
            entry.version = version;
            return;
        }
        entry.version += 1;
        if self.tracking {
            self.changes.push_back(Change {
                task_id: task_id.to_owned(),
                version: entry.version,
                event,
            });
        }
    }

    /// The config.
    pub fn config(&self) -> &TaskConfig {
        &self.config
    }

    /// The task `id`, whole (a copy: a finished task is kept as its JSON, read back here).
    pub fn task(&self, id: &str) -> Option<Task> {
        self.tasks.get(id).map(|slot| slot.task(id))
    }

    /// Whether task `id` is kept.
    pub fn contains(&self, id: &str) -> bool {
        self.tasks.contains_key(id)
    }

    /// The state of task `id`.
    pub fn state(&self, id: &str) -> Option<TaskState> {
        self.tasks.get(id).map(Slot::state)
    }

    /// The ids of the tasks kept, in no particular order.
    pub fn task_ids(&self) -> impl Iterator<Item = &str> {
        self.tasks.keys().map(String::as_str)
    }

    /// The task stream `stream` watches, while it is open.
    pub fn stream_task(&self, stream: StreamId) -> Option<&str> {
        self.streams.get(&stream).map(String::as_str)
    }

    /// The task waiter `waiter` waits on, while it waits.
    pub fn waiter_task(&self, waiter: WaiterId) -> Option<&str> {
        self.waiters.get(&waiter).map(String::as_str)
    }

    /// How many tasks are kept.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether no task is kept.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// The next thing the driver must do, if any.
    pub fn poll_event(&mut self) -> Option<TaskEvent> {
        self.events.pop_front()
    }

    fn next_counter(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    /// `SendMessage` (`mode` [`Blocking`](SendMode::Blocking)) or `SendStreamingMessage`
    /// ([`Streaming`](SendMode::Streaming)): creates or continues a task, and starts a run
    /// for the message (or queues it behind the run under way).
    ///
    /// Returns how the answer comes ([`Sent`]); an `Err` is the request's error answer,
    /// and nothing was kept.
    pub fn handle_send(
        &mut self,
        now: Timestamp,
        request: SendMessageRequest,
        mode: SendMode,
    ) -> Result<Sent, A2aError> {
        let SendMessageRequest {
            message,
            configuration,
            metadata,
            ..
        } = request;
        let configuration = configuration.unwrap_or_default();
        let history_length = history_length(configuration.history_length)?;
        self.check_message(&message)?;
        let immediate = mode == SendMode::Blocking && configuration.return_immediately;
        let task_id = match message.task_id.clone() {
            Some(task_id) => {
                self.check_follow_up(&task_id, &message, mode)?;
                let entry = live_mut(&mut self.tasks, &task_id);
                entry.task.history.push(message.clone());
                self.changed(&task_id, None);
                task_id
            }
            None => self.create_task(now, &message, mode)?,
        };
        let mut queued = Queued {
            message,
            accepted_output_modes: configuration.accepted_output_modes,
            metadata,
            waiter: None,
        };
        let entry = live(&self.tasks, &task_id);
        let sent = if immediate {
            Sent::Task(Box::new(snapshot(&entry.task, history_length, true)))
        } else if mode == SendMode::Streaming {
            let first = snapshot(&entry.task, history_length, true);
            Sent::Stream(self.open_stream(&task_id, first))
        } else {
            let id = WaiterId(self.next_counter());
            self.waiters.insert(id, task_id.clone());
            queued.waiter = Some(Waiter { id, history_length });
            Sent::Waiting(id)
        };
        let entry = live_mut(&mut self.tasks, &task_id);
        if entry.run.is_some() {
            entry.queued.push_back(queued);
        } else {
            self.start_run(&task_id, queued);
        }
        Ok(sent)
    }

    fn check_message(&self, message: &Message) -> Result<(), A2aError> {
        let limits = &self.config.limits;
        if message.message_id.is_empty() {
            return Err(A2aError::invalid_params("message.messageId is required"));
        }
        // REQUIRED in the specification's proto; a2a-sdk refuses it missing as well.
        if message.role == Role::Unspecified {
            return Err(A2aError::invalid_params(
                "message.role is required (ROLE_USER)",
            ));
        }
        let ids = [
            ("messageId", Some(&message.message_id)),
            ("taskId", message.task_id.as_ref()),
            ("contextId", message.context_id.as_ref()),
        ];
        for (name, id) in ids {
            if let Some(id) = id.filter(|id| id.len() > limits.max_id_bytes) {
                return Err(A2aError::invalid_params(format!(
                    "message.{name} is {} bytes, over the limit of {}",
                    id.len(),
                    limits.max_id_bytes
                )));
            }
        }
        if message.parts.is_empty() {
            return Err(A2aError::invalid_params(
                "message.parts is empty: a message needs a part",
            ));
        }
        if message.parts.len() > limits.max_parts {
            return Err(A2aError::invalid_params(format!(
                "the message has {} parts, over the limit of {}",
                message.parts.len(),
                limits.max_parts
            )));
        }
        let size = size::message_size(message);
        if size > limits.max_message_bytes {
            return Err(A2aError::invalid_params(format!(
                "the message is {size} bytes, over the limit of {}",
                limits.max_message_bytes
            )));
        }
        Ok(())
    }

    /// Whether `message` may continue task `task_id` (and open a stream on it).
    fn check_follow_up(
        &self,
        task_id: &str,
        message: &Message,
        mode: SendMode,
    ) -> Result<(), A2aError> {
        let limits = &self.config.limits;
        let slot = self
            .tasks
            .get(task_id)
            .ok_or_else(|| A2aError::task_not_found(task_id))?;
        if slot.state().is_terminal() {
            return Err(state_error(
                ErrorKind::UnsupportedOperation,
                task_id,
                slot.state(),
                "a terminal task takes no more messages",
            ));
        }
        let entry = live(&self.tasks, task_id);
        let task = &entry.task;
        if let Some(context_id) = message
            .context_id
            .as_ref()
            .filter(|c| **c != task.context_id)
        {
            return Err(A2aError::invalid_params(format!(
                "contextId {context_id} is not the context of task {task_id} ({})",
                task.context_id
            )));
        }
        if task.history.len() >= limits.max_history {
            return Err(A2aError::invalid_params(format!(
                "the history of task {task_id} is full ({} messages): start a new task in its context",
                limits.max_history
            )));
        }
        if mode == SendMode::Streaming && entry.streams.len() >= limits.max_streams_per_task {
            return Err(self.streams_full(task_id));
        }
        if entry.run.is_some() && entry.queued.len() >= limits.max_queued_messages {
            return Err(A2aError::new(
                ErrorKind::Internal,
                format!(
                    "task {task_id} has {} messages waiting for the agent already",
                    limits.max_queued_messages
                ),
            ));
        }
        Ok(())
    }

    fn streams_full(&self, task_id: &str) -> A2aError {
        A2aError::new(
            ErrorKind::Internal,
            format!(
                "task {task_id} has {} streams open already",
                self.config.limits.max_streams_per_task
            ),
        )
    }

    /// A new task for `message`, its first message; returns its id.
    fn create_task(
        &mut self,
        now: Timestamp,
        message: &Message,
        mode: SendMode,
    ) -> Result<String, A2aError> {
        let limits = &self.config.limits;
        if limits.max_history == 0 {
            return Err(A2aError::invalid_params(
                "this agent keeps no history (max_history 0), so it takes no message",
            ));
        }
        if mode == SendMode::Streaming && limits.max_streams_per_task == 0 {
            return Err(A2aError::new(
                ErrorKind::Internal,
                "this agent opens no streams",
            ));
        }
        // The id first: a refusal evicts nothing.
        let id = self.fresh_id()?;
        self.make_room()?;
        let context_id = match &message.context_id {
            Some(context_id) => context_id.clone(),
            None => self.ids.next_id(),
        };
        let task = Task {
            id: id.clone(),
            context_id,
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(now),
            },
            artifacts: Vec::new(),
            history: vec![message.clone()],
            metadata: None,
        };
        self.by_status.insert((now, id.clone()));
        self.tasks.insert(
            id.clone(),
            Slot::Live(Box::new(Entry {
                task,
                run: None,
                queued: VecDeque::new(),
                streams: Vec::new(),
                artifacts: Vec::new(),
                artifact_bytes: 0,
                version: 0,
            })),
        );
        self.changed(&id, None);
        Ok(id)
    }

    /// A task id not in use.
    fn fresh_id(&mut self) -> Result<String, A2aError> {
        for _ in 0..16 {
            let id = self.ids.next_id();
            if !id.is_empty() && !self.tasks.contains_key(&id) {
                return Ok(id);
            }
        }
        Err(A2aError::new(
            ErrorKind::Internal,
            "the id source gives only ids in use",
        ))
    }

    /// Room for one more task: evicts the terminal task whose status is oldest.
    fn make_room(&mut self) -> Result<(), A2aError> {
        let max = self.config.limits.max_tasks;
        if self.tasks.len() < max {
            return Ok(());
        }
        let victim = self
            .by_status
            .iter()
            .find(|(_, id)| self.tasks[id].state().is_terminal())
            .cloned();
        let Some(key) = victim else {
            return Err(A2aError::new(
                ErrorKind::Internal,
                format!("this agent keeps {max} tasks, and none of them is finished"),
            ));
        };
        self.by_status.remove(&key);
        let slot = self.tasks.remove(&key.1).expect("indexed");
        // A terminal task has no streams, waiters or queued messages left; its run may
        // not have reported its end yet.
        if let Some(run) = slot.live().and_then(|e| e.run.as_ref()) {
            self.runs.remove(&run.id);
            self.events.push_back(TaskEvent::Stop {
                run: run.id,
                task_id: key.1.clone(),
            });
        }
        Ok(())
    }

    fn open_stream(&mut self, task_id: &str, first: Task) -> StreamId {
        let id = StreamId(self.next_counter());
        self.streams.insert(id, task_id.to_owned());
        live_mut(&mut self.tasks, task_id).streams.push(id);
        self.events.push_back(TaskEvent::Stream {
            streams: vec![id],
            response: StreamResponse::Task(first),
            last: false,
        });
        id
    }

    fn start_run(&mut self, task_id: &str, queued: Queued) {
        let id = RunId(self.next_counter());
        let entry = live_mut(&mut self.tasks, task_id);
        entry.run = Some(ActiveRun {
            id,
            waiters: queued.waiter.into_iter().collect(),
        });
        self.runs.insert(id, task_id.to_owned());
        self.events.push_back(TaskEvent::Run(Box::new(Run {
            id,
            message: queued.message,
            task: entry.task.clone(),
            accepted_output_modes: queued.accepted_output_modes,
            metadata: queued.metadata,
        })));
    }

    /// Answers `waiter` with the task as it is now.
    fn reply(&mut self, task_id: &str, waiter: Waiter) {
        self.waiters.remove(&waiter.id);
        let task = self.tasks[task_id].snapshot(task_id, waiter.history_length, true);
        self.events.push_back(TaskEvent::Reply {
            waiter: waiter.id,
            response: SendMessageResponse::Task(task),
        });
    }

    /// What run `run` publishes. `Err` refuses the update and leaves the task as it was.
    pub fn handle_update(
        &mut self,
        now: Timestamp,
        run: RunId,
        update: Update,
    ) -> Result<(), UpdateError> {
        let task_id = self
            .runs
            .get(&run)
            .cloned()
            .ok_or(UpdateError::UnknownRun(run))?;
        let state = self.tasks[&task_id].state();
        if state.is_terminal() {
            return Err(UpdateError::Finished(state));
        }
        match update {
            Update::Status {
                state: to,
                message,
                metadata,
            } => {
                if to == TaskState::Unspecified
                    || (to == TaskState::Submitted && state != TaskState::Submitted)
                {
                    return Err(UpdateError::Transition { from: state, to });
                }
                let message = match message {
                    Some(m) => Some(self.agent_message(&task_id, m)?),
                    None => None,
                };
                self.set_status(now, &task_id, to, message, metadata);
                Ok(())
            }
            Update::Artifact {
                artifact,
                append,
                last_chunk,
                metadata,
            } => self.apply_artifact(&task_id, artifact, append, last_chunk, metadata),
        }
    }

    /// An agent's message, bounded, with what it left out filled in.
    fn agent_message(
        &mut self,
        task_id: &str,
        mut message: Message,
    ) -> Result<Message, UpdateError> {
        let limits = &self.config.limits;
        if message.parts.len() > limits.max_parts {
            return Err(UpdateError::Limit("parts in a message", limits.max_parts));
        }
        if size::message_size(&message) > limits.max_message_bytes {
            return Err(UpdateError::Limit(
                "bytes in a message",
                limits.max_message_bytes,
            ));
        }
        if message.message_id.is_empty() {
            message.message_id = self.ids.next_id();
        }
        if message.role == Role::Unspecified {
            message.role = Role::Agent;
        }
        let task = &live(&self.tasks, task_id).task;
        message.task_id.get_or_insert_with(|| task.id.clone());
        message
            .context_id
            .get_or_insert_with(|| task.context_id.clone());
        Ok(message)
    }

    /// Records a new status and tells everyone watching.
    fn set_status(
        &mut self,
        now: Timestamp,
        task_id: &str,
        state: TaskState,
        message: Option<Message>,
        metadata: Option<Struct>,
    ) {
        let max_history = self.config.limits.max_history;
        let end_on_input = self.config.end_streams_on_input_required;
        let entry = live_mut(&mut self.tasks, task_id);
        let task = &mut entry.task;
        if let Some(m) = &message {
            if task.history.len() < max_history {
                task.history.push(m.clone());
            }
        }
        if let Some(metadata) = &metadata {
            let merged = task.metadata.get_or_insert_with(Struct::new);
            merged.extend(metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let old = (
            task.status.timestamp.unwrap_or_default(),
            task_id.to_owned(),
        );
        self.by_status.remove(&old);
        self.by_status.insert((now, task_id.to_owned()));
        task.status = TaskStatus {
            state,
            message,
            timestamp: Some(now),
        };
        let last = state.is_terminal() || (state == TaskState::InputRequired && end_on_input);
        let event = (!entry.streams.is_empty() || self.tracking).then(|| {
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: entry.task.id.clone(),
                context_id: entry.task.context_id.clone(),
                status: entry.task.status.clone(),
                metadata,
            })
        });
        if let Some(response) = event.clone().filter(|_| !entry.streams.is_empty()) {
            let streams = take_streams(entry, last, &mut self.streams);
            self.events.push_back(TaskEvent::Stream {
                streams,
                response,
                last,
            });
        }
        self.changed(task_id, event);
        let entry = live_mut(&mut self.tasks, task_id);
        let mut answered = Vec::new();
        if state.is_terminal() || state.is_interrupted() {
            if let Some(run) = &mut entry.run {
                answered.append(&mut run.waiters);
            }
        }
        if state.is_terminal() {
            // Messages waiting for a run will not get one.
            answered.extend(
                mem::take(&mut entry.queued)
                    .into_iter()
                    .filter_map(|q| q.waiter),
            );
        }
        for waiter in answered {
            self.reply(task_id, waiter);
        }
    }

    fn apply_artifact(
        &mut self,
        task_id: &str,
        mut artifact: Artifact,
        append: bool,
        last_chunk: bool,
        metadata: Option<Struct>,
    ) -> Result<(), UpdateError> {
        let limits = &self.config.limits;
        if artifact.parts.len() > limits.max_parts {
            return Err(UpdateError::Limit(
                "parts in an artifact update",
                limits.max_parts,
            ));
        }
        let bytes = size::artifact_size(&artifact);
        if bytes > limits.max_message_bytes {
            return Err(UpdateError::Limit(
                "bytes in an artifact update",
                limits.max_message_bytes,
            ));
        }
        if artifact.artifact_id.is_empty() {
            if append {
                return Err(UpdateError::UnknownArtifact(String::new()));
            }
            artifact.artifact_id = self.ids.next_id();
        }
        let (max_artifacts, max_bytes) = (limits.max_artifacts, limits.max_artifact_bytes);
        let entry = live_mut(&mut self.tasks, task_id);
        let index = entry
            .task
            .artifacts
            .iter()
            .position(|a| a.artifact_id == artifact.artifact_id);
        let over = |total: usize| total > max_bytes;
        match (append, index) {
            (true, None) => return Err(UpdateError::UnknownArtifact(artifact.artifact_id)),
            (true, Some(i)) => {
                if entry.artifacts[i].closed {
                    return Err(UpdateError::ArtifactClosed(artifact.artifact_id));
                }
                if over(entry.artifact_bytes.saturating_add(bytes)) {
                    return Err(UpdateError::Limit("bytes of a task's artifacts", max_bytes));
                }
                let existing = &mut entry.task.artifacts[i];
                existing.parts.extend(artifact.parts.iter().cloned());
                if let Some(m) = &artifact.metadata {
                    let merged = existing.metadata.get_or_insert_with(Struct::new);
                    merged.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                if artifact.name.is_some() {
                    existing.name.clone_from(&artifact.name);
                }
                if artifact.description.is_some() {
                    existing.description.clone_from(&artifact.description);
                }
                existing
                    .extensions
                    .extend(artifact.extensions.iter().cloned());
                entry.artifacts[i].bytes += bytes;
                entry.artifacts[i].closed = last_chunk;
                entry.artifact_bytes += bytes;
            }
            (false, Some(i)) => {
                let total = entry.artifact_bytes - entry.artifacts[i].bytes + bytes;
                if over(total) {
                    return Err(UpdateError::Limit("bytes of a task's artifacts", max_bytes));
                }
                entry.task.artifacts[i] = artifact.clone();
                entry.artifacts[i] = ArtifactInfo {
                    bytes,
                    closed: last_chunk,
                };
                entry.artifact_bytes = total;
            }
            (false, None) => {
                if entry.task.artifacts.len() >= max_artifacts {
                    return Err(UpdateError::Limit("artifacts in a task", max_artifacts));
                }
                if over(entry.artifact_bytes.saturating_add(bytes)) {
                    return Err(UpdateError::Limit("bytes of a task's artifacts", max_bytes));
                }
                entry.task.artifacts.push(artifact.clone());
                entry.artifacts.push(ArtifactInfo {
                    bytes,
                    closed: last_chunk,
                });
                entry.artifact_bytes += bytes;
            }
        }
        let event = (!entry.streams.is_empty() || self.tracking).then(|| {
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: entry.task.id.clone(),
                context_id: entry.task.context_id.clone(),
                artifact,
                append,
                last_chunk,
                metadata,
            })
        });
        if let Some(response) = event.clone().filter(|_| !entry.streams.is_empty()) {
            self.events.push_back(TaskEvent::Stream {
                streams: entry.streams.clone(),
                response,
                last: false,
            });
        }
        self.changed(task_id, event);
        Ok(())
    }

    /// Run `run` finished (its future completed). Its waiters still waiting are answered
    /// with the task as it is, and the next message waiting for the task gets its run.
    ///
    /// Report it after everything the run published, in the same order. A run that is
    /// over already (stopped, or reported before) is ignored.
    pub fn handle_run_end(&mut self, run: RunId) {
        let Some(task_id) = self.runs.remove(&run) else {
            return;
        };
        let entry = live_mut(&mut self.tasks, &task_id);
        let waiters = entry.run.take().map(|r| r.waiters).unwrap_or_default();
        let next = if entry.task.status.state.is_terminal() {
            None
        } else {
            entry.queued.pop_front()
        };
        for waiter in waiters {
            self.reply(&task_id, waiter);
        }
        if let Some(queued) = next {
            self.start_run(&task_id, queued);
        }
        self.freeze_if_done(&task_id);
    }

    /// `CancelTask`: a task that is not terminal becomes canceled (its streams get the
    /// status and end, its waiting requests are answered, its run is stopped); answers
    /// with the task. A terminal task is `TaskNotCancelable`.
    pub fn handle_cancel(
        &mut self,
        now: Timestamp,
        request: &CancelTaskRequest,
    ) -> Result<Task, A2aError> {
        let id = &request.id;
        let slot = self
            .tasks
            .get(id)
            .ok_or_else(|| A2aError::task_not_found(id))?;
        if slot.state().is_terminal() {
            return Err(state_error(
                ErrorKind::TaskNotCancelable,
                id,
                slot.state(),
                "it cannot be canceled",
            ));
        }
        self.set_status(now, id, TaskState::Canceled, None, None);
        let entry = live_mut(&mut self.tasks, id);
        let run = entry.run.take();
        let task = entry.task.clone();
        if let Some(run) = run {
            self.runs.remove(&run.id);
            self.events.push_back(TaskEvent::Stop {
                run: run.id,
                task_id: id.clone(),
            });
        }
        self.freeze_if_done(id);
        Ok(task)
    }

    /// `SubscribeToTask`: a stream of the task's events, the task first. A terminal task
    /// has none (`UnsupportedOperation`).
    pub fn handle_subscribe(
        &mut self,
        request: &SubscribeToTaskRequest,
    ) -> Result<StreamId, A2aError> {
        let id = &request.id;
        let slot = self
            .tasks
            .get(id)
            .ok_or_else(|| A2aError::task_not_found(id))?;
        if slot.state().is_terminal() {
            return Err(state_error(
                ErrorKind::UnsupportedOperation,
                id,
                slot.state(),
                "a terminal task has no more events",
            ));
        }
        let entry = live(&self.tasks, id);
        if entry.streams.len() >= self.config.limits.max_streams_per_task {
            return Err(self.streams_full(id));
        }
        let first = entry.task.clone();
        Ok(self.open_stream(id, first))
    }

    /// The client of `stream` went away: it gets no more events. Other streams of the
    /// task are not affected.
    pub fn close_stream(&mut self, stream: StreamId) {
        if let Some(task_id) = self.streams.remove(&stream) {
            if let Some(entry) = self.tasks.get_mut(&task_id).and_then(Slot::live_mut) {
                entry.streams.retain(|s| *s != stream);
            }
        }
    }

    /// The client of `waiter` went away: it gets no answer. Its message stays in the task
    /// and is still handled.
    pub fn drop_waiter(&mut self, waiter: WaiterId) {
        let Some(task_id) = self.waiters.remove(&waiter) else {
            return;
        };
        let Some(entry) = self.tasks.get_mut(&task_id).and_then(Slot::live_mut) else {
            return;
        };
        if let Some(run) = &mut entry.run {
            run.waiters.retain(|w| w.id != waiter);
        }
        for queued in &mut entry.queued {
            if queued.waiter.as_ref().is_some_and(|w| w.id == waiter) {
                queued.waiter = None;
            }
        }
    }

    /// `GetTask`: the task, with at most `historyLength` recent messages.
    pub fn get_task(&self, request: &GetTaskRequest) -> Result<Task, A2aError> {
        let history_length = history_length(request.history_length)?;
        let slot = self
            .tasks
            .get(&request.id)
            .ok_or_else(|| A2aError::task_not_found(&request.id))?;
        Ok(slot.snapshot(&request.id, history_length, true))
    }

    /// `ListTasks`: the tasks that pass the filters, most recently updated first (by
    /// status time, then id), a page at a time.
    ///
    /// `pageSize` is 1 to 100 (50 when absent); `historyLength` limits each task's
    /// history; artifacts are left out unless `includeArtifacts` is true. The
    /// `nextPageToken` marks where the page ended, so a page that follows skips no task
    /// that was there before (a task updated meanwhile moves to the front).
    pub fn list_tasks(&self, request: &ListTasksRequest) -> Result<ListTasksResponse, A2aError> {
        let ordered = self
            .by_status
            .iter()
            .rev()
            .map(|key| Kept(&key.1, &self.tasks[&key.1]));
        list::page(ordered, request)
    }
}

/// A task kept, as `ListTasks` reads it.
struct Kept<'a>(&'a str, &'a Slot);

impl list::Listed for Kept<'_> {
    fn key(&self) -> (Timestamp, &str) {
        (self.1.time().unwrap_or_default(), self.0)
    }

    fn context_id(&self) -> &str {
        self.1.context_id()
    }

    fn state(&self) -> TaskState {
        self.1.state()
    }

    fn time(&self) -> Option<Timestamp> {
        self.1.time()
    }

    fn snapshot(&self, history_length: Option<usize>, with_artifacts: bool) -> Task {
        self.1.snapshot(self.0, history_length, with_artifacts)
    }
}

impl std::fmt::Debug for TaskMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskMachine")
            .field("tasks", &self.tasks.len())
            .field("runs", &self.runs.len())
            .field("streams", &self.streams.len())
            .field("waiters", &self.waiters.len())
            .field("events", &self.events.len())
            .finish()
    }
}
