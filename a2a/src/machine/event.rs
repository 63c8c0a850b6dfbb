//! What goes into the task machine besides requests, and what comes out.

use std::fmt;

use crate::types::{
    Artifact, Message, SendMessageResponse, StreamResponse, Struct, Task, TaskState,
};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub(crate) u64);

        impl $name {
            /// The number behind the id (unique among the machine's ids of this kind).
            pub fn get(self) -> u64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id_type!(
    /// One run of the agent: the handling of one message sent to a task.
    RunId
);
id_type!(
    /// One stream (`SendStreamingMessage` or `SubscribeToTask`) a client has open.
    StreamId
);
id_type!(
    /// One `SendMessage` waiting for its answer.
    WaiterId
);

/// How the caller answers a `SendMessage` or `SendStreamingMessage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    /// `SendMessage`: one answer, the task, once it is terminal or interrupted (or at
    /// once with `returnImmediately`).
    Blocking,
    /// `SendStreamingMessage`: a stream of events, the task first.
    Streaming,
}

/// What became of a message handed to [`TaskMachine::handle_send`](super::TaskMachine::handle_send).
#[derive(Debug, Clone, PartialEq)]
pub enum Sent {
    /// `returnImmediately`: the answer, now (the task as it is, the message in its
    /// history).
    Task(Box<Task>),
    /// The answer comes later as [`TaskEvent::Reply`] for this waiter.
    Waiting(WaiterId),
    /// The events come as [`TaskEvent::Stream`] naming this stream, the task first.
    Stream(StreamId),
}

/// An agent run to start: the message it handles and the task as it was when the run
/// began.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// This run.
    pub id: RunId,
    /// The user's message, exactly as sent.
    pub message: Message,
    /// The task: its id, context, status (`Submitted` for a new task; `InputRequired`
    /// when this message answers the agent's question) and history (the message last).
    pub task: Task,
    /// `configuration.acceptedOutputModes` of the request.
    pub accepted_output_modes: Vec<String>,
    /// The request's `metadata`.
    pub metadata: Option<Struct>,
}

impl Run {
    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.task.id
    }

    /// The task's context id.
    pub fn context_id(&self) -> &str {
        &self.task.context_id
    }
}

/// What the task machine asks of its driver. Take them with
/// [`TaskMachine::poll_event`](super::TaskMachine::poll_event) after every input.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEvent {
    /// Start the agent on this run (one run per task at a time), and report its end with
    /// [`TaskMachine::handle_run_end`](super::TaskMachine::handle_run_end).
    Run(Box<Run>),
    /// Stop this run: its task was canceled. Drop the agent's future; the machine takes
    /// nothing more from the run.
    Stop {
        /// The run.
        run: RunId,
        /// Its task.
        task_id: String,
    },
    /// The answer to a waiting `SendMessage`.
    Reply {
        /// The waiter.
        waiter: WaiterId,
        /// The task, with the history length the request asked for.
        response: SendMessageResponse,
    },
    /// An event for one or more streams of a task: all of them send the same event, in
    /// this order.
    Stream {
        /// The streams.
        streams: Vec<StreamId>,
        /// The event.
        response: StreamResponse,
        /// The streams end after this event (their task is terminal, or waits for input):
        /// send it, then close them.
        last: bool,
    },
}

/// What an agent's run publishes.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// The task's status changed. The message (the agent's, about this state) gets an id,
    /// the agent role and the task's ids where it has none.
    Status {
        /// The new state.
        state: TaskState,
        /// What the agent says about it.
        message: Option<Message>,
        /// Merged into the task's metadata and sent with the event.
        metadata: Option<Struct>,
    },
    /// An artifact: new, replacing the one with the same id, or (with `append`) parts
    /// added to it. An empty `artifactId` gets one.
    Artifact {
        /// The artifact, or the parts to append.
        artifact: Artifact,
        /// Extend the artifact sent before with the same id.
        append: bool,
        /// The artifact is complete: no more appends.
        last_chunk: bool,
        /// Sent with the event.
        metadata: Option<Struct>,
    },
}

impl Update {
    /// A status update.
    pub fn status(state: TaskState, message: Option<Message>) -> Update {
        Update::Status {
            state,
            message,
            metadata: None,
        }
    }

    /// A whole artifact (new, or replacing the one with its id).
    pub fn artifact(artifact: Artifact) -> Update {
        Update::Artifact {
            artifact,
            append: false,
            last_chunk: false,
            metadata: None,
        }
    }
}

/// Why the machine did not take an agent's update. The task is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpdateError {
    /// The run is over: it ended, was stopped (its task canceled), or never was.
    UnknownRun(RunId),
    /// The task is terminal already.
    Finished(TaskState),
    /// A state the task cannot move to from where it is (`Unspecified`, or back to
    /// `Submitted`).
    Transition {
        /// Where the task is.
        from: TaskState,
        /// Where the update would take it.
        to: TaskState,
    },
    /// `append` to an artifact the run never sent.
    UnknownArtifact(String),
    /// `append` to an artifact after its last chunk.
    ArtifactClosed(String),
    /// Past a bound of [`Limits`](super::Limits): what, and the bound.
    Limit(&'static str, usize),
}

impl fmt::Display for UpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpdateError::UnknownRun(run) => write!(f, "run {run} is over"),
            UpdateError::Finished(state) => write!(f, "the task is {} already", state.as_str()),
            UpdateError::Transition { from, to } => write!(
                f,
                "a task cannot go from {} to {}",
                from.as_str(),
                to.as_str()
            ),
            UpdateError::UnknownArtifact(id) => {
                write!(f, "append to artifact {id:?}, which was never sent")
            }
            UpdateError::ArtifactClosed(id) => {
                write!(f, "append to artifact {id:?} after its last chunk")
            }
            UpdateError::Limit(what, max) => write!(f, "{what} over the limit of {max}"),
        }
    }
}

impl std::error::Error for UpdateError {}
