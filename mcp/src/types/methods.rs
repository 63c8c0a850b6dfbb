//! Request method names, for both revisions.
//!
//! Each constant says which revisions define the method. Notification method names are in
//! [`notifications`](super::notifications).

/// `initialize`: client → server handshake. 2025-11-25 and earlier; removed in 2026-07-28.
pub const INITIALIZE: &str = "initialize";
/// `ping`: either direction. 2025-11-25 and earlier; removed in 2026-07-28.
pub const PING: &str = "ping";
/// `server/discover`: client → server, versions and capabilities. 2026-07-28 (servers MUST
/// implement it).
pub const SERVER_DISCOVER: &str = "server/discover";
/// `subscriptions/listen`: client → server, long-lived notification stream. 2026-07-28.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// `tools/list`: both revisions.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`: both revisions (may answer with an input-required result in 2026-07-28).
pub const TOOLS_CALL: &str = "tools/call";

/// `resources/list`: both revisions.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`: both revisions.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`: both revisions (may answer with an input-required result in 2026-07-28).
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe`: 2025-11-25 and earlier; replaced by `subscriptions/listen`.
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe`: 2025-11-25 and earlier; replaced by `subscriptions/listen`.
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";

/// `prompts/list`: both revisions.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`: both revisions (may answer with an input-required result in 2026-07-28).
pub const PROMPTS_GET: &str = "prompts/get";

/// `completion/complete`: both revisions.
pub const COMPLETION_COMPLETE: &str = "completion/complete";

/// `logging/setLevel`: 2025-11-25 and earlier; replaced by the per-request
/// `io.modelcontextprotocol/logLevel` `_meta` key.
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";

/// `sampling/createMessage`: a server → client request in 2025-11-25; an input request
/// inside an input-required result in 2026-07-28 (deprecated there).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `elicitation/create`: a server → client request in 2025-11-25; an input request inside
/// an input-required result in 2026-07-28.
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `roots/list`: a server → client request in 2025-11-25; an input request inside an
/// input-required result in 2026-07-28 (deprecated there).
pub const ROOTS_LIST: &str = "roots/list";

/// `tasks/get`: either direction, experimental. 2025-11-25 only (moved to the
/// `io.modelcontextprotocol/tasks` extension in 2026-07-28).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/result`: either direction, experimental. 2025-11-25 only.
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list`: either direction, experimental. 2025-11-25 only.
pub const TASKS_LIST: &str = "tasks/list";
/// `tasks/cancel`: either direction, experimental. 2025-11-25 only (also in the 2026 tasks
/// extension).
pub const TASKS_CANCEL: &str = "tasks/cancel";

/// The client → server requests 2026-07-28 removed (the session revisions have them): a
/// 2026-07-28 server answers them -32601, and the client refuses them before sending
/// (`ClientError::SessionOnly`).
pub const REMOVED_IN_2026_07_28: &[&str] = &[
    INITIALIZE,
    PING,
    LOGGING_SET_LEVEL,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
];

/// The client → server request methods of 2025-11-25.
pub const CLIENT_REQUESTS_2025_11_25: &[&str] = &[
    PING,
    INITIALIZE,
    COMPLETION_COMPLETE,
    LOGGING_SET_LEVEL,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    TOOLS_CALL,
    TOOLS_LIST,
    TASKS_GET,
    TASKS_RESULT,
    TASKS_LIST,
    TASKS_CANCEL,
];

/// The server → client request methods of 2025-11-25.
pub const SERVER_REQUESTS_2025_11_25: &[&str] = &[
    PING,
    SAMPLING_CREATE_MESSAGE,
    ROOTS_LIST,
    ELICITATION_CREATE,
    TASKS_GET,
    TASKS_RESULT,
    TASKS_LIST,
    TASKS_CANCEL,
];

/// The client → server request methods of 2026-07-28. (There are no server → client
/// requests in 2026-07-28.)
pub const CLIENT_REQUESTS_2026_07_28: &[&str] = &[
    SERVER_DISCOVER,
    COMPLETION_COMPLETE,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
    SUBSCRIPTIONS_LISTEN,
    TOOLS_CALL,
    TOOLS_LIST,
];

/// The methods an input-required result may ask the client to fulfil (2026-07-28).
pub const INPUT_REQUESTS_2026_07_28: &[&str] =
    &[ELICITATION_CREATE, SAMPLING_CREATE_MESSAGE, ROOTS_LIST];

/// The requests that may be answered with an input-required result (2026-07-28).
pub const INPUT_REQUIRED_CAPABLE_2026_07_28: &[&str] = &[TOOLS_CALL, PROMPTS_GET, RESOURCES_READ];
