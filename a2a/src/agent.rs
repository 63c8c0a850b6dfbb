//! The agent a user writes, and the handle it publishes through.
//!
//! An [`Agent`] gets each [`Run`] (a message sent to a task, and the task) with a
//! [`Publisher`], and returns a future that publishes the task's status changes and
//! artifacts as it works. Nothing here needs a runtime: the future is a plain boxed
//! `Future`, and the publisher hands what it is given to a [`Host`] the driver
//! implements, which feeds the task machine
//! ([`TaskMachine::handle_update`](crate::machine::TaskMachine::handle_update)) and gives
//! the agent timers on the driver's clock (real time in a server, virtual time in a test).
//!
//! ```
//! use sansrpc_a2a::agent::{Agent, BoxFuture, Publisher};
//! use sansrpc_a2a::machine::Run;
//! use sansrpc_a2a::types::{Artifact, TaskState};
//!
//! /// Answers every message with its text upper-cased.
//! struct Shout;
//!
//! impl Agent for Shout {
//!     fn execute(&self, run: Run, events: Publisher) -> BoxFuture<()> {
//!         Box::pin(async move {
//!             let text = run.message.first_text().unwrap_or_default().to_uppercase();
//!             events.artifact(Artifact::text("", text));
//!             events.status(TaskState::Completed, None);
//!         })
//!     }
//! }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::machine::{Run, RunId, Update};
use crate::types::{Artifact, Message, Role, TaskState};

/// A boxed future that can move between threads.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What an agent implements: the handling of one message sent to a task.
///
/// The returned future publishes through `events` and completes when the agent is done
/// with the message (the driver then calls
/// [`handle_run_end`](crate::machine::TaskMachine::handle_run_end)). It may stop at any
/// `.await`: a canceled task's run is dropped.
pub trait Agent: Send + Sync + 'static {
    /// Handles `run.message`, sent to `run.task`.
    fn execute(&self, run: Run, events: Publisher) -> BoxFuture<()>;
}

impl<F> Agent for F
where
    F: Fn(Run, Publisher) -> BoxFuture<()> + Send + Sync + 'static,
{
    fn execute(&self, run: Run, events: Publisher) -> BoxFuture<()> {
        self(run, events)
    }
}

/// What the driver gives agents: a way to the task machine, and a clock to wait on.
pub trait Host: Send + Sync + 'static {
    /// Hands run `run`'s update to the task machine, in order with the run's other
    /// updates and before the run's end.
    fn publish(&self, run: RunId, update: Update);

    /// A future that completes `duration` from now on the driver's clock.
    fn sleep(&self, duration: Duration) -> BoxFuture<()>;
}

/// An agent's handle on its run: publishes the task's status and artifacts, and waits.
/// Cheap to clone.
#[derive(Clone)]
pub struct Publisher {
    run: RunId,
    task_id: String,
    context_id: String,
    host: Arc<dyn Host>,
}

impl Publisher {
    /// The publisher of `run`, publishing to `host` (for drivers).
    pub fn new(run: &Run, host: Arc<dyn Host>) -> Publisher {
        Publisher {
            run: run.id,
            task_id: run.task.id.clone(),
            context_id: run.task.context_id.clone(),
            host,
        }
    }

    /// The run.
    pub fn run(&self) -> RunId {
        self.run
    }

    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The task's context id.
    pub fn context_id(&self) -> &str {
        &self.context_id
    }

    /// Publishes `update`.
    pub fn publish(&self, update: Update) {
        self.host.publish(self.run, update);
    }

    /// The task is now in `state`, with the agent's `message` about it.
    pub fn status(&self, state: TaskState, message: Option<Message>) {
        self.publish(Update::status(state, message));
    }

    /// The task is now in `state`, and the agent says `text` (a message of one text part;
    /// the machine gives it an id).
    pub fn status_text(&self, state: TaskState, text: impl Into<String>) {
        self.status(state, Some(Message::text(Role::Agent, "", text)));
    }

    /// A whole artifact: new, or replacing the one with its id (an empty id gets one).
    pub fn artifact(&self, artifact: Artifact) {
        self.publish(Update::artifact(artifact));
    }

    /// Parts added to the artifact sent before with `artifact`'s id; `last_chunk` when
    /// the artifact is complete.
    pub fn append(&self, artifact: Artifact, last_chunk: bool) {
        self.publish(Update::Artifact {
            artifact,
            append: true,
            last_chunk,
            metadata: None,
        });
    }

    /// Waits `duration` on the driver's clock.
    pub fn sleep(&self, duration: Duration) -> BoxFuture<()> {
        self.host.sleep(duration)
    }
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("run", &self.run)
            .field("task_id", &self.task_id)
            .field("context_id", &self.context_id)
            .finish_non_exhaustive()
    }
}
