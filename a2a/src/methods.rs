//! The JSON-RPC methods of A2A 1.0 (§5.3, §9.4): their names, and each as a typed
//! [`Method`] of the core (params and result types).
//!
//! The two streaming methods answer with a Server-Sent Events stream whose every event is
//! a JSON-RPC response; their [`Method::Result`] is the type of one event's `result`.

use sansrpc::method::Method;

use crate::types::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, Empty,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};

macro_rules! methods {
    ($($(#[$doc:meta])* $ty:ident = $name:literal, $konst:ident: $params:ty => $result:ty;)*) => {
        $(
            #[doc = concat!("`", $name, "`.")]
            pub const $konst: &str = $name;

            $(#[$doc])*
            #[derive(Debug)]
            pub enum $ty {}

            impl Method for $ty {
                const NAME: &'static str = $name;
                type Params = $params;
                type Result = $result;
            }
        )*

        /// Every method name, in the order of the specification's §5.3 table.
        pub const ALL: &[&str] = &[$($name),*];
    };
}

methods! {
    /// Sends a message that creates or continues a task; answers with the task (or a
    /// message).
    SendMessage = "SendMessage", SEND_MESSAGE: SendMessageRequest => SendMessageResponse;
    /// Sends a message and streams the task's events (the task first).
    SendStreamingMessage = "SendStreamingMessage", SEND_STREAMING_MESSAGE: SendMessageRequest => StreamResponse;
    /// Reads a task.
    GetTask = "GetTask", GET_TASK: GetTaskRequest => Task;
    /// Lists tasks, filtered, a page at a time.
    ListTasks = "ListTasks", LIST_TASKS: ListTasksRequest => ListTasksResponse;
    /// Cancels a task; answers with it, canceled.
    CancelTask = "CancelTask", CANCEL_TASK: CancelTaskRequest => Task;
    /// Streams the events of a task that is not terminal (the task first).
    SubscribeToTask = "SubscribeToTask", SUBSCRIBE_TO_TASK: SubscribeToTaskRequest => StreamResponse;
    /// Registers a webhook for a task's updates.
    CreateTaskPushNotificationConfig = "CreateTaskPushNotificationConfig", CREATE_TASK_PUSH_NOTIFICATION_CONFIG: TaskPushNotificationConfig => TaskPushNotificationConfig;
    /// Reads a webhook registration.
    GetTaskPushNotificationConfig = "GetTaskPushNotificationConfig", GET_TASK_PUSH_NOTIFICATION_CONFIG: GetTaskPushNotificationConfigRequest => TaskPushNotificationConfig;
    /// Lists a task's webhook registrations.
    ListTaskPushNotificationConfigs = "ListTaskPushNotificationConfigs", LIST_TASK_PUSH_NOTIFICATION_CONFIGS: ListTaskPushNotificationConfigsRequest => ListTaskPushNotificationConfigsResponse;
    /// Removes a webhook registration (idempotent); answers `null`.
    DeleteTaskPushNotificationConfig = "DeleteTaskPushNotificationConfig", DELETE_TASK_PUSH_NOTIFICATION_CONFIG: DeleteTaskPushNotificationConfigRequest => Empty;
    /// Reads the card an authenticated client sees.
    GetExtendedAgentCard = "GetExtendedAgentCard", GET_EXTENDED_AGENT_CARD: GetExtendedAgentCardRequest => AgentCard;
}

/// Whether `method` answers with a Server-Sent Events stream.
pub fn is_streaming(method: &str) -> bool {
    method == SEND_STREAMING_MESSAGE || method == SUBSCRIBE_TO_TASK
}
