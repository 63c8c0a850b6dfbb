//! What the task machine keeps, and how much of it.

/// Bounds on everything the task machine keeps. Past each, the machine answers with a
/// defined error and keeps nothing of what was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Tasks kept. A new task past it evicts the finished (terminal) task whose status is
    /// oldest; when every task is still running, the message is refused (`-32603`).
    pub max_tasks: usize,
    /// Messages in a task's history. A user message past it is refused (`-32602`: start a
    /// new task in the same context); an agent's status message past it is not recorded
    /// in the history (it is still the status's message and still streamed).
    pub max_history: usize,
    /// Parts in one message or one artifact update (`-32602` for a client's message).
    pub max_parts: usize,
    /// Bytes in one message or one artifact update: each part's content (text, raw bytes,
    /// URL, data as JSON), file name, media type and metadata, plus the message's
    /// metadata (`-32602` for a client's message).
    pub max_message_bytes: usize,
    /// Artifacts in one task.
    pub max_artifacts: usize,
    /// Bytes of all a task's artifacts together, appends included.
    pub max_artifact_bytes: usize,
    /// Open streams (`SendStreamingMessage` and `SubscribeToTask`) on one task (`-32603`).
    pub max_streams_per_task: usize,
    /// Messages sent to a task while its agent still runs, waiting their turn (`-32603`).
    pub max_queued_messages: usize,
    /// Bytes in an id the client sends (`messageId`, `taskId`, `contextId`) (`-32602`).
    pub max_id_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_tasks: 10_000,
            max_history: 1_000,
            max_parts: 64,
            max_message_bytes: 1 << 20,
            max_artifacts: 256,
            max_artifact_bytes: 16 << 20,
            max_streams_per_task: 64,
            max_queued_messages: 8,
            max_id_bytes: 256,
        }
    }
}

/// How the task machine behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskConfig {
    /// The bounds.
    pub limits: Limits,
    /// Streams end when their task reaches input required, as well as at a terminal state
    /// (default `true`). Both SDKs end their streams there, and their clients read a
    /// stream to its end before sending the answer; with `false` a stream stays open
    /// across the exchange (the specification only requires the end at a terminal state).
    /// Auth required never ends a stream: credentials may arrive out of band and the task
    /// go on (§7.6.1).
    pub end_streams_on_input_required: bool,
}

impl Default for TaskConfig {
    fn default() -> TaskConfig {
        TaskConfig {
            limits: Limits::default(),
            end_streams_on_input_required: true,
        }
    }
}

impl TaskConfig {
    /// The default config with `limits`.
    pub fn with_limits(limits: Limits) -> TaskConfig {
        TaskConfig {
            limits,
            ..TaskConfig::default()
        }
    }
}
