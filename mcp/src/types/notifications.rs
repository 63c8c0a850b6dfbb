//! Notification method names, for both revisions.

/// `notifications/initialized`: client → server after `initialize`. 2025-11-25 and earlier.
pub const INITIALIZED: &str = "notifications/initialized";
/// `notifications/cancelled`: both revisions. In 2025-11-25 either side cancels a request it
/// issued; in 2026-07-28 the client cancels (stdio only; on HTTP closing the stream cancels)
/// and the server uses it only to end a `subscriptions/listen` stream on stdio.
pub const CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`: both revisions.
pub const PROGRESS: &str = "notifications/progress";
/// `notifications/message`: server → client log message. Both revisions (deprecated in
/// 2026-07-28, where it needs the request's `logLevel` opt-in).
pub const MESSAGE: &str = "notifications/message";
/// `notifications/resources/updated`: both revisions (2026-07-28: on a listen stream only).
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// `notifications/resources/list_changed`: both revisions (2026-07-28: on a listen stream
/// only).
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/tools/list_changed`: both revisions (2026-07-28: on a listen stream only).
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/prompts/list_changed`: both revisions (2026-07-28: on a listen stream
/// only).
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/roots/list_changed`: client → server. 2025-11-25 and earlier; removed in
/// 2026-07-28.
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// `notifications/elicitation/complete`: server → client, URL-mode elicitation finished.
/// 2025-11-25 only.
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// `notifications/tasks/status`: either direction, experimental. 2025-11-25 only.
pub const TASKS_STATUS: &str = "notifications/tasks/status";
/// `notifications/subscriptions/acknowledged`: server → client, first message of a
/// `subscriptions/listen` stream. 2026-07-28.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// The client → server notifications of 2025-11-25.
pub const CLIENT_2025_11_25: &[&str] = &[
    CANCELLED,
    PROGRESS,
    INITIALIZED,
    ROOTS_LIST_CHANGED,
    TASKS_STATUS,
];

/// The server → client notifications of 2025-11-25.
pub const SERVER_2025_11_25: &[&str] = &[
    CANCELLED,
    PROGRESS,
    MESSAGE,
    RESOURCES_UPDATED,
    RESOURCES_LIST_CHANGED,
    TOOLS_LIST_CHANGED,
    PROMPTS_LIST_CHANGED,
    ELICITATION_COMPLETE,
    TASKS_STATUS,
];

/// The client → server notifications of 2026-07-28.
pub const CLIENT_2026_07_28: &[&str] = &[CANCELLED];

/// The server → client notifications of 2026-07-28.
pub const SERVER_2026_07_28: &[&str] = &[
    CANCELLED,
    PROGRESS,
    MESSAGE,
    RESOURCES_UPDATED,
    RESOURCES_LIST_CHANGED,
    TOOLS_LIST_CHANGED,
    PROMPTS_LIST_CHANGED,
    SUBSCRIPTIONS_ACKNOWLEDGED,
];
