//! Tasks beyond one process: where they are kept ([`TaskStore`]) and how their events reach
//! the other processes of the same agent ([`Fanout`]), with no I/O here.
//!
//! Without a store the [`TaskMachine`](crate::TaskMachine)'s own map is the store: tasks in
//! memory, bounded by [`Limits::max_tasks`](crate::machine::Limits::max_tasks), gone with
//! the process. With one ([`Server::set_task_store`](crate::http::Endpoint::set_task_store),
//! or `Options::task_store` on tokio) the machine still holds the tasks it works on, and
//! the HTTP machine calls the store around it, as it calls the SSE
//! [`EventStore`](sansrpc::codec::sse::EventStore):
//!
//! - after every input, each task the machine changed is [saved](TaskStore::save) with its
//!   [version](crate::TaskMachine::version) (one more at every change), then the store is
//!   [flushed](TaskStore::flush) once, before anything of the turn is written to a client;
//! - `GetTask` and `ListTasks` read the store (a task this process runs, from the machine);
//! - before a message continues a task, a `CancelTask` and a `SubscribeToTask`, a task
//!   that does not run here is [loaded](TaskStore::load) and handed to the machine
//!   ([`adopt`](crate::TaskMachine::adopt)), so what another process (or an earlier run of
//!   this one) did is where it goes on from.
//!
//! The stores: `sansrpc-store-redb`'s `RedbTaskStore` (a file: tasks survive a restart) and
//! `sansrpc-store-nats`'s `NatsTaskStore` (a JetStream key-value bucket shared by every
//! process of the agent), each behind its crate's `a2a` feature.
//!
//! A task's events travel as [`Change`]s: the machine gives one for every change of a task
//! when told to ([`TaskMachine::track_changes`](crate::TaskMachine::track_changes)), the
//! HTTP machine hands those with an event to the adapter
//! ([`http::Event::Announce`](crate::http::Event::Announce)), a [`Fanout`] carries them to
//! the other processes, and there [`Server::handle_remote`](crate::http::Endpoint::handle_remote)
//! applies them to the copy of the task that process holds for its own streams (its
//! `SubscribeToTask` streams on a task running elsewhere). A terminal status from elsewhere
//! (a `CancelTask` answered by another process) also stops the run here.

use serde::{Deserialize, Serialize};

use crate::types::{StreamResponse, Task};

/// Why a store could not do what it was asked: its own error, boxed.
pub type StoreError = Box<dyn std::error::Error + Send + Sync>;

/// Where an agent's tasks are kept beyond the machine's memory. See the
/// [module docs](self).
///
/// Calls come from the HTTP machine under its lock, so they should be quick: a store that
/// talks to a server buffers [`save`](Self::save)s and sends them at
/// [`flush`](Self::flush), once per turn.
pub trait TaskStore: Send {
    /// Keeps `task` at `version` (replacing what was kept of it). It must be visible to
    /// [`load`](Self::load) and [`list`](Self::list) at once, and durable (or shared) after
    /// the next [`flush`](Self::flush).
    fn save(&mut self, version: u64, task: &Task) -> Result<(), StoreError>;

    /// The task `id` and its version, if the store has it.
    fn load(&mut self, id: &str) -> Result<Option<(u64, Task)>, StoreError>;

    /// Hands every task kept to `each` (at most the store's own bound of them), in no
    /// particular order.
    fn list(&mut self, each: &mut dyn FnMut(Task)) -> Result<(), StoreError>;

    /// Makes what was saved since the last call durable (or seen by the other processes).
    /// Called once per turn of the HTTP machine, after its saves.
    fn flush(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// One change of one task: its new version and, for a status or artifact update, the
/// event its streams got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// The task.
    pub task_id: String,
    /// The task's version after the change.
    pub version: u64,
    /// The event (`statusUpdate` or `artifactUpdate`); none for a change that streams do not
    /// see (a task created, a user message added to its history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<StreamResponse>,
}

impl Change {
    /// The change as JSON, as a [`Fanout`] sends it: `{"taskId":…,"version":…,"event":…}`.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("changes serialize")
    }

    /// A change from its JSON; `None` when it is not one.
    pub fn from_json(bytes: &[u8]) -> Option<Change> {
        serde_json::from_slice(bytes).ok()
    }
}

/// Carries the changes of this process's tasks to the other processes of the same agent
/// (`sansrpc-store-nats`'s `A2aFanout`, over core NATS). [`announce`](Self::announce) is
/// called under the server's lock: it must not block (queue, and drop past a bound).
pub trait Fanout: Send + Sync {
    /// A change made here (one with an event), to publish.
    fn announce(&self, change: &Change);
}

/// A task as stores keep it, with its version.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RecordRef<'a> {
    version: u64,
    task: &'a Task,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    version: u64,
    task: Task,
}

/// The bytes a store keeps for `task` at `version`: `{"version":…,"task":<Task JSON>}`, the
/// task in its A2A JSON shape. Every store of this crate's trait uses it, so a bucket or
/// file reads the same from any of them.
pub fn encode_task(version: u64, task: &Task) -> Vec<u8> {
    serde_json::to_vec(&RecordRef { version, task }).expect("tasks serialize")
}

/// The version and task [`encode_task`] wrote; an error for bytes it did not write.
pub fn decode_task(bytes: &[u8]) -> Result<(u64, Task), StoreError> {
    let record: Record = serde_json::from_slice(bytes)?;
    Ok((record.version, record.task))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Message, Role, TaskState, TaskStatus, TaskStatusUpdateEvent};

    #[test]
    fn records_and_changes_read_back() {
        let task = Task {
            id: "t-1".into(),
            context_id: "c-1".into(),
            history: vec![Message::text(Role::User, "m-1", "hi")],
            ..Default::default()
        };
        let (version, back) = decode_task(&encode_task(7, &task)).unwrap();
        assert_eq!((version, back), (7, task));
        assert!(decode_task(b"{\"task\":1}").is_err());
        let change = Change {
            task_id: "t-1".into(),
            version: 3,
            event: Some(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: "t-1".into(),
                context_id: "c-1".into(),
                status: TaskStatus {
                    state: TaskState::Working,
                    ..Default::default()
                },
                metadata: None,
            })),
        };
        assert_eq!(Change::from_json(&change.to_json()), Some(change));
        assert_eq!(Change::from_json(b"[]"), None);
    }
}
