//! Tasks (2025-11-25 only, experimental): durable requests polled with `tasks/get` and
//! collected with `tasks/result`. 2026-07-28 moves tasks out of the core protocol into the
//! `io.modelcontextprotocol/tasks` extension.

use serde::{Deserialize, Serialize};

use super::{Cursor, JsonObject, NotificationMeta, RequestMeta, ResultMeta, ResultType};

/// `task` of a task-augmented request: run it as a task.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskMetadata {
    /// How long to keep the task after creation, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// The value of the `io.modelcontextprotocol/related-task` `_meta` key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedTaskMetadata {
    /// The task the message belongs to.
    pub task_id: String,
}

/// State of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// `"working"`.
    Working,
    /// `"input_required"`: waiting for elicitation or sampling.
    InputRequired,
    /// `"completed"`.
    Completed,
    /// `"failed"` (including tool results with `isError`).
    Failed,
    /// `"cancelled"`.
    Cancelled,
}

/// A task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Task id.
    pub task_id: String,
    /// State.
    pub status: TaskStatus,
    /// Human-readable state description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last update.
    pub last_updated_at: String,
    /// Retention from creation in milliseconds; `null` = unlimited (always written).
    pub ttl: Option<u64>,
    /// Suggested polling interval in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
}

/// Result of a task-augmented request.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// The created task.
    pub task: Task,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(CreateTaskResult {
    meta: "_meta",
    task: "task" required,
});

/// Params of `tasks/get`, `tasks/result` and `tasks/cancel`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// The task.
    pub task_id: String,
}

/// Params of `tasks/get`.
pub type GetTaskRequestParams = TaskIdParams;
/// Params of `tasks/result`.
pub type GetTaskPayloadRequestParams = TaskIdParams;
/// Params of `tasks/cancel`.
pub type CancelTaskRequestParams = TaskIdParams;
/// Params of `tasks/list`.
pub type ListTasksRequestParams = super::PaginatedRequestParams;

/// Result of `tasks/get` and `tasks/cancel`: the task's fields plus result `_meta`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Result of `tasks/get`.
pub type GetTaskResult = TaskResult;
/// Result of `tasks/cancel`.
pub type CancelTaskResult = TaskResult;

/// Result of `tasks/result`: the result of the original request (e.g. a `CallToolResult`),
/// kept as a JSON object.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPayloadResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// `resultType`, if the payload has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The payload's members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(GetTaskPayloadResult {
    meta: "_meta",
    result_type: "resultType",
});

/// Result of `tasks/list`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// The tasks.
    pub tasks: Vec<Task>,
    /// Cursor of the next page, if there may be more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ListTasksResult {
    meta: "_meta",
    tasks: "tasks" required,
    next_cursor: "nextCursor",
});

/// Params of `notifications/tasks/status`: the task's fields plus `_meta`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskStatusNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The task.
    #[serde(flatten)]
    pub task: Task,
}
