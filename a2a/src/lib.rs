//! Agent2Agent (A2A) 1.0 for sansrpc: the protocol's types, the task machine and the
//! agent trait, with no I/O.
//!
//! A2A is how one agent hands a task to another: JSON-RPC 2.0 over HTTP (the JSON-RPC
//! binding), Server-Sent Events for streams, an agent card at
//! `/.well-known/agent-card.json`. This crate holds what is A2A's own, in the shapes the
//! 1.0 specification (`specification/a2a.proto`) and its SDKs (a2a-sdk 1.3, @a2a-js/sdk
//! 1.3) put on the wire:
//!
//! - [`types`]: every message of the data model (agent card, message, part, task,
//!   artifact, stream events, request params and results) as serde types in ProtoJSON
//!   shape;
//! - [`methods`]: the method names, each a typed [`sansrpc::method::Method`];
//! - [`A2aError`]: the A2A errors and their JSON-RPC error objects; [`version`]: the
//!   `A2A-Version` header and its check;
//! - [`machine`]: the [`TaskMachine`], which keeps tasks (states, history, artifacts),
//!   starts and stops the agent's runs, and feeds the streams and waiting requests that
//!   watch them; bounded, and sans-I/O: no clock, no lock, no thread;
//! - [`agent`]: the [`Agent`](agent::Agent) trait a user implements, and [`echo`], the
//!   example agent's logic.
//!
//! The HTTP side (serving the card and the JSON-RPC endpoint, SSE framing, push
//! notifications) belongs to the transport layers that drive the machine.
//!
//! A streamed exchange in which the agent asks a question, driven by hand (a driver
//! starts the agent on each [`TaskEvent::Run`](machine::TaskEvent::Run) and feeds its updates
//! back):
//!
//! ```
//! use sansrpc_a2a::machine::{TaskEvent, SeededIds, SendMode, Sent, TaskMachine, Update};
//! use sansrpc_a2a::types::{Message, Role, SendMessageRequest, StreamResponse, TaskState, Timestamp};
//!
//! let mut machine = TaskMachine::new(Default::default(), SeededIds::new(42));
//! let now = Timestamp::from_unix_millis(1_700_000_000_000).unwrap();
//! let send = |message| SendMessageRequest { message, ..Default::default() };
//!
//! // SendStreamingMessage: the stream gets the task first.
//! let ask = Message::text(Role::User, "m-1", "ask");
//! let Ok(Sent::Stream(stream)) = machine.handle_send(now, send(ask), SendMode::Streaming) else {
//!     panic!()
//! };
//! let Some(TaskEvent::Stream { response: StreamResponse::Task(task), .. }) = machine.poll_event()
//! else {
//!     panic!()
//! };
//! assert_eq!(task.status.state, TaskState::Submitted);
//! let Some(TaskEvent::Run(run)) = machine.poll_event() else { panic!() };
//!
//! // The agent asks; the stream gets the status and ends.
//! let question = Message::text(Role::Agent, "", "what?");
//! machine.handle_update(now, run.id, Update::status(TaskState::InputRequired, Some(question))).unwrap();
//! machine.handle_run_end(run.id);
//! let Some(TaskEvent::Stream { streams, last: true, .. }) = machine.poll_event() else { panic!() };
//! assert_eq!(streams, [stream]);
//!
//! // The answer continues the same task, in the same context.
//! let mut answer = Message::text(Role::User, "m-2", "blue");
//! answer.task_id = Some(task.id.clone());
//! answer.context_id = Some(task.context_id.clone());
//! let Ok(Sent::Stream(_)) = machine.handle_send(now, send(answer), SendMode::Streaming) else {
//!     panic!()
//! };
//! let Some(TaskEvent::Stream { response: StreamResponse::Task(again), .. }) = machine.poll_event()
//! else {
//!     panic!()
//! };
//! assert_eq!((again.id, again.status.state), (task.id, TaskState::InputRequired));
//! let Some(TaskEvent::Run(run)) = machine.poll_event() else { panic!() };
//! assert_eq!(run.message.first_text(), Some("blue"));
//! // History: the question, the agent's question, the answer; user messages as sent.
//! assert_eq!(run.task.history.len(), 3);
//! ```

#![deny(missing_docs)]

pub mod agent;
pub mod echo;
mod error;
pub mod http;
pub mod machine;
pub mod methods;
pub mod store;
#[cfg(feature = "tokio")]
pub mod tokio;
pub mod types;
pub mod version;

pub use error::{A2aError, ErrorInfo, ErrorKind, ERROR_DOMAIN, ERROR_INFO_TYPE};
pub use machine::TaskMachine;
