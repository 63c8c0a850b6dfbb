//! Tasks, their status, and the events a stream carries (§4.1.1-§4.1.3, §4.2, §3.2.3).

use serde::{Deserialize, Serialize};

use super::serde_util::{nullable, opt_struct, proto_enum_serde, ProtoEnum, Struct};
use super::{Artifact, Message, Timestamp};

/// Where a task is in its life (`TASK_STATE_*`).
///
/// Submitted and working are in progress; input required and auth required are
/// *interrupted* (the agent waits for the client); completed, failed, canceled and rejected
/// are *terminal*: a terminal task never changes again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum TaskState {
    /// `TASK_STATE_UNSPECIFIED`: not set.
    #[default]
    Unspecified,
    /// `TASK_STATE_SUBMITTED`: received and acknowledged.
    Submitted,
    /// `TASK_STATE_WORKING`: being processed.
    Working,
    /// `TASK_STATE_COMPLETED`: finished successfully (terminal).
    Completed,
    /// `TASK_STATE_FAILED`: finished with an error (terminal).
    Failed,
    /// `TASK_STATE_CANCELED`: canceled before it finished (terminal).
    Canceled,
    /// `TASK_STATE_INPUT_REQUIRED`: the agent waits for the client's next message
    /// (interrupted).
    InputRequired,
    /// `TASK_STATE_REJECTED`: the agent will not do it (terminal).
    Rejected,
    /// `TASK_STATE_AUTH_REQUIRED`: the agent waits for authorization (interrupted).
    AuthRequired,
}

impl ProtoEnum for TaskState {
    const TYPE: &'static str = "TaskState";
    const VALUES: &'static [(TaskState, &'static str, i32)] = &[
        (TaskState::Unspecified, "TASK_STATE_UNSPECIFIED", 0),
        (TaskState::Submitted, "TASK_STATE_SUBMITTED", 1),
        (TaskState::Working, "TASK_STATE_WORKING", 2),
        (TaskState::Completed, "TASK_STATE_COMPLETED", 3),
        (TaskState::Failed, "TASK_STATE_FAILED", 4),
        (TaskState::Canceled, "TASK_STATE_CANCELED", 5),
        (TaskState::InputRequired, "TASK_STATE_INPUT_REQUIRED", 6),
        (TaskState::Rejected, "TASK_STATE_REJECTED", 7),
        (TaskState::AuthRequired, "TASK_STATE_AUTH_REQUIRED", 8),
    ];

    fn name(self) -> &'static str {
        TaskState::VALUES[self as usize].1
    }
}

proto_enum_serde!(TaskState);

impl TaskState {
    /// Every state, `Unspecified` first, in proto number order.
    pub const ALL: [TaskState; 9] = [
        TaskState::Unspecified,
        TaskState::Submitted,
        TaskState::Working,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::InputRequired,
        TaskState::Rejected,
        TaskState::AuthRequired,
    ];

    /// The proto name (`TASK_STATE_WORKING`).
    pub fn as_str(self) -> &'static str {
        self.name()
    }

    /// The state with proto name `name`.
    pub fn from_proto_name(name: &str) -> Option<TaskState> {
        TaskState::from_name(name)
    }

    /// Completed, failed, canceled or rejected: the task never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Input required or auth required: the agent waits for the client.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    pub(crate) fn is_unspecified(&self) -> bool {
        *self == TaskState::Unspecified
    }
}

/// A task's state, the agent's message about it, and when it was recorded (§4.1.2).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// `state` (REQUIRED).
    #[serde(default)]
    pub state: TaskState,
    /// `message`: what the agent says about this state (the question, when input is
    /// required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// `timestamp`: when the status was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
}

impl TaskStatus {
    /// A status in `state`, with no message and no time.
    pub fn new(state: TaskState) -> TaskStatus {
        TaskStatus {
            state,
            message: None,
            timestamp: None,
        }
    }
}

/// A unit of work the agent does for the client (§4.1.1).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// `id` (REQUIRED): made by the server.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// `contextId`: the conversation the task belongs to.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// `status` (REQUIRED).
    #[serde(default)]
    pub status: TaskStatus,
    /// `artifacts`: what the task produced.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub artifacts: Vec<Artifact>,
    /// `history`: the messages exchanged (oldest first).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub history: Vec<Message>,
    /// `metadata`.
    #[serde(
        default,
        deserialize_with = "opt_struct",
        skip_serializing_if = "Option::is_none"
    )]
    pub metadata: Option<Struct>,
}

/// A task's status changed (§4.2.1).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// `taskId` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// `contextId` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// `status` (REQUIRED): the new status.
    #[serde(default)]
    pub status: TaskStatus,
    /// `metadata`.
    #[serde(
        default,
        deserialize_with = "opt_struct",
        skip_serializing_if = "Option::is_none"
    )]
    pub metadata: Option<Struct>,
}

/// A task's artifact was created, replaced or extended (§4.2.2).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// `taskId` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// `contextId` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// `artifact` (REQUIRED): the artifact, or with `append` the parts to add to it.
    #[serde(default)]
    pub artifact: Artifact,
    /// `append`: the parts extend the artifact sent before with the same id (instead of
    /// replacing it).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "super::serde_util::is_false"
    )]
    pub append: bool,
    /// `lastChunk`: the artifact is complete.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "super::serde_util::is_false"
    )]
    #[serde(alias = "last_chunk")]
    pub last_chunk: bool,
    /// `metadata`.
    #[serde(
        default,
        deserialize_with = "opt_struct",
        skip_serializing_if = "Option::is_none"
    )]
    pub metadata: Option<Struct>,
}

/// One event of a stream (`SendStreamingMessage`, `SubscribeToTask`) or a push
/// notification: `{"task": ...}`, `{"message": ...}`, `{"statusUpdate": ...}` or
/// `{"artifactUpdate": ...}` (§3.2.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The task as it is (a stream's first event).
    Task(Task),
    /// A message (the only event of a message-only stream).
    Message(Message),
    /// A status change.
    #[serde(alias = "status_update")]
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact change.
    #[serde(alias = "artifact_update")]
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// The result of `SendMessage`: `{"task": ...}` or `{"message": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// The task the message created or continued.
    Task(Task),
    /// A direct reply, with no task.
    Message(Message),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn states_are_proto_names() {
        for (i, state) in TaskState::ALL.into_iter().enumerate() {
            let json = serde_json::to_value(state).unwrap();
            assert_eq!(json, json!(state.as_str()));
            assert_eq!(serde_json::from_value::<TaskState>(json).unwrap(), state);
            assert_eq!(
                serde_json::from_value::<TaskState>(json!(i)).unwrap(),
                state
            );
        }
        assert_eq!(
            serde_json::to_value(TaskState::InputRequired).unwrap(),
            json!("TASK_STATE_INPUT_REQUIRED")
        );
        let terminal: Vec<_> = TaskState::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(
            terminal,
            [
                TaskState::Completed,
                TaskState::Failed,
                TaskState::Canceled,
                TaskState::Rejected
            ]
        );
    }

    #[test]
    fn stream_responses_are_one_member_objects() {
        let ev = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus::new(TaskState::Working),
            metadata: None,
        });
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(
            json,
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}})
        );
        assert_eq!(serde_json::from_value::<StreamResponse>(json).unwrap(), ev);
    }
}
