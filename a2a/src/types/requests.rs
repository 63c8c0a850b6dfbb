//! The params and results of the JSON-RPC methods (§3.1, §3.2, §9.4).

use std::fmt;

use serde::de::{Deserializer, IgnoredAny};
use serde::{Deserialize, Serialize, Serializer};

use super::serde_util::{
    int32, is_zero, nullable, opt_bool, opt_int32, opt_string, opt_struct, Struct,
};
use super::{Message, Task, TaskState, Timestamp};

/// How the client wants a `SendMessage` handled (§3.2.2).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// `acceptedOutputModes`: media types the client takes for response parts.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    /// `taskPushNotificationConfig`: a webhook for this task's updates (its `taskId` empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// `historyLength`: at most this many recent messages in the returned task (0: none;
    /// absent: no limit).
    #[serde(
        default,
        deserialize_with = "opt_int32",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// `returnImmediately`: answer as soon as the task exists instead of when it is
    /// terminal or interrupted.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "super::serde_util::is_false"
    )]
    #[serde(alias = "return_immediately")]
    pub return_immediately: bool,
}

/// The params of `SendMessage` and `SendStreamingMessage` (§3.2.1).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// `tenant`: routing, as the chosen interface declares it.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub tenant: Option<String>,
    /// `message` (REQUIRED).
    #[serde(default)]
    pub message: Message,
    /// `configuration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// `metadata`.
    #[serde(
        default,
        deserialize_with = "opt_struct",
        skip_serializing_if = "Option::is_none"
    )]
    pub metadata: Option<Struct>,
}

/// The params of `GetTask`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// `tenant`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub tenant: Option<String>,
    /// `id` (REQUIRED): the task.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// `historyLength`: at most this many recent messages (0: none; absent: all).
    #[serde(
        default,
        deserialize_with = "opt_int32",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
}

/// The params of `ListTasks`: filters and a page (§3.1.4).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// `tenant`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub tenant: Option<String>,
    /// `contextId`: only tasks of this context.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "context_id")]
    pub context_id: Option<String>,
    /// `status`: only tasks in this state (`Unspecified`: any).
    #[serde(default, skip_serializing_if = "TaskState::is_unspecified")]
    pub status: TaskState,
    /// `pageSize`: 1 to 100; absent is 50.
    #[serde(
        default,
        deserialize_with = "opt_int32",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "page_size")]
    pub page_size: Option<i32>,
    /// `pageToken`: the `nextPageToken` of the page before.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "page_token")]
    pub page_token: Option<String>,
    /// `historyLength`: at most this many recent messages per task.
    #[serde(
        default,
        deserialize_with = "opt_int32",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// `statusTimestampAfter`: only tasks whose status was recorded at or after this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "status_timestamp_after")]
    pub status_timestamp_after: Option<Timestamp>,
    /// `includeArtifacts`: with the tasks' artifacts (absent: without).
    #[serde(
        default,
        deserialize_with = "opt_bool",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "include_artifacts")]
    pub include_artifacts: Option<bool>,
}

/// The result of `ListTasks`. Every member is always written (`nextPageToken` is `""` on
/// the last page), as §3.1.4 requires.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// `tasks`: most recently updated first.
    #[serde(default, deserialize_with = "nullable")]
    pub tasks: Vec<Task>,
    /// `nextPageToken`: for the next page; empty on the last.
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
    /// `pageSize`: the page size used.
    #[serde(default, deserialize_with = "int32")]
    #[serde(alias = "page_size")]
    pub page_size: i32,
    /// `totalSize`: how many tasks match the filters, over all pages.
    #[serde(default, deserialize_with = "int32")]
    #[serde(alias = "total_size")]
    pub total_size: i32,
}

/// The params of `CancelTask`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    /// `tenant`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub tenant: Option<String>,
    /// `id` (REQUIRED): the task.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// `metadata`.
    #[serde(
        default,
        deserialize_with = "opt_struct",
        skip_serializing_if = "Option::is_none"
    )]
    pub metadata: Option<Struct>,
}

/// The params of `SubscribeToTask`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    /// `tenant`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub tenant: Option<String>,
    /// `id` (REQUIRED): the task.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
}

/// How the agent authenticates its webhook calls (§4.3.2).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// `scheme` (REQUIRED): the HTTP authentication scheme (`Bearer`, `Basic`).
    #[serde(default, deserialize_with = "nullable")]
    pub scheme: String,
    /// `credentials`: what goes after the scheme in `Authorization`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub credentials: Option<String>,
}

/// A webhook for a task's updates: the params and result of
/// `CreateTaskPushNotificationConfig`, the result of `GetTaskPushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// `tenant`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub tenant: Option<String>,
    /// `id`: of this configuration.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    /// `taskId`: the task.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "task_id")]
    pub task_id: Option<String>,
    /// `url` (REQUIRED): where the agent POSTs the updates.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// `token`: unique to this task or session, sent back with each notification.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub token: Option<String>,
    /// `authentication`: how the agent authenticates to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// The params of `GetTaskPushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPushNotificationConfigRequest {
    /// `tenant`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub tenant: Option<String>,
    /// `taskId` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// `id` (REQUIRED): of the configuration.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
}

/// The params of `DeleteTaskPushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteTaskPushNotificationConfigRequest {
    /// `tenant`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub tenant: Option<String>,
    /// `taskId` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// `id` (REQUIRED): of the configuration.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
}

/// The params of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    /// `tenant`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub tenant: Option<String>,
    /// `taskId` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// `pageSize`: at most this many (0: the server's choice).
    #[serde(default, deserialize_with = "int32", skip_serializing_if = "is_zero")]
    #[serde(alias = "page_size")]
    pub page_size: i32,
    /// `pageToken`: the `nextPageToken` of the page before.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "page_token")]
    pub page_token: Option<String>,
}

/// The result of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// `configs`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// `nextPageToken`: empty on the last page.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
}

/// The params of `GetExtendedAgentCard` (often sent without params at all).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    /// `tenant`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub tenant: Option<String>,
}

/// No content (`google.protobuf.Empty`): the result of `DeleteTaskPushNotificationConfig`.
///
/// Written as `null`, as both SDKs' servers answer; read from `null` or any object (`{}`
/// is Empty's ProtoJSON form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Empty;

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

impl<'de> Deserialize<'de> for Empty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Empty, D::Error> {
        struct EmptyVisitor;
        impl<'de> serde::de::Visitor<'de> for EmptyVisitor {
            type Value = Empty;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("null or an object")
            }
            fn visit_unit<E>(self) -> Result<Empty, E> {
                Ok(Empty)
            }
            fn visit_none<E>(self) -> Result<Empty, E> {
                Ok(Empty)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Empty, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Empty)
            }
        }
        d.deserialize_any(EmptyVisitor)
    }
}
