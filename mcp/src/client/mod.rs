//! An MCP client: the primitives from the client's side on any connection the futures adapter
//! drives (a child's stdio, Streamable HTTP through `sansrpc_mcp::tokio`, TCP, on
//! tokio, smol or async-std).
//!
//! [`ClientBuilder`] says who the client is and what it answers when the server asks
//! (sampling, elicitation, roots) or tells (progress, log messages, list and resource
//! changes). Install its [`router`](ClientBuilder::router) on the connection's builder,
//! connect, then [`initialize`](ClientBuilder::initialize) to get an [`McpClient`] with typed
//! calls: tools, resources, prompts, completion, logging. The capabilities the client
//! declares follow from the handlers it has: a client without an elicitation handler does
//! not declare elicitation, and a server that asks anyway gets -32601.
//!
//! ```no_run
//! use sansrpc::connection::{Config, Profile};
//! use sansrpc_futures::Builder;
//! use sansrpc_mcp::client::ClientBuilder;
//! use sansrpc_mcp::types::ElicitResult;
//!
//! # async fn run(transport: impl sansrpc_futures::Transport, timer: impl sansrpc_futures::Timer) -> Result<(), Box<dyn std::error::Error>> {
//! let mcp = ClientBuilder::new("my-client", "1.0.0").on_elicitation(|request| async move {
//!     // Accept the form with the defaults the server gave (SEP-1034).
//!     Ok(ElicitResult::accept(request.defaults()))
//! });
//! let builder = Builder::new().config(Config::for_profile(Profile::Mcp)).router(mcp.router());
//! let (client, driver) = builder.connect(transport, timer);
//! # drop(driver);
//! let server = mcp.initialize(client).await?;
//! for tool in server.all_tools().await? {
//!     println!("{}", tool.name);
//! }
//! let answer = server.call_tool("add", serde_json::json!({"a": 1, "b": 2})).await?;
//! println!("{:?}", answer.content);
//! # Ok(()) }
//! ```
//!
//! Over Streamable HTTP the client starts a new session by itself when the server lost its
//! session (HTTP 404), and sends a call cut before its answer again only when it is
//! idempotent: [`retry`] says which, and what the application sees
//! ([`ClientBuilder::on_session_renewed`], [`McpClient::session_renewals`],
//! [`ClientError::SessionLost`], [`ClientError::OutcomeUnknown`]).
//!
//! On the stateless revision (2026-07-28) a tool's input schema may mark an argument with
//! `"x-mcp-header": "<Name>"` (SEP-2243): over Streamable HTTP its value also travels in an
//! `Mcp-Param-<Name>` header. The client remembers those marks from the `tools/list` pages it
//! reads, leaves out of what it returns the tools whose marks break the revision's rules
//! (and refuses to call them), and says through [`ParamHeaders`] which headers each
//! `tools/call` carries; `sansrpc_mcp::tokio::Connect::headers_for` sends them. The
//! marks are read into the same model the server checks them with,
//! [`crate::streamable::ParamHeader`].

use crate::raw_json;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::streamable::client::sorted::SortedMap;
use crate::streamable::ParamHeader;
use sansrpc::connection::Timeout;
use sansrpc::{ErrorObject, RawValue};
use sansrpc_futures::{AsyncRouter, BoxFuture, CallError, Client, CloseWithSession, PendingCall};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::types::{
    error_codes, methods, notifications, version, CallToolResult, ClientCapabilities,
    CompleteRequestParams, CompleteResult, Completion, CompletionArgument,
    CreateMessageRequestParams, CreateMessageResult, DiscoverResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, GetPromptRequestParams, GetPromptResult, Implementation,
    InitializeResult, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListRootsRequestParams, ListRootsResult, ListToolsResult, LoggingLevel,
    Prompt, ReadResourceResult, Reference, RequestId, Resource, ResourceTemplate,
    ResourceUpdatedNotificationParams, Root, RootsCapability, SamplingCapability,
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenResult,
    Tool,
};

mod builder;
mod calls;
mod listen;
mod params;
pub mod retry;

pub use builder::ClientBuilder;
pub use calls::McpClient;
use calls::{Closer, Stateless};
pub use listen::{ListenNotification, Subscription, MAX_QUEUED_NOTIFICATIONS};
use listen::{Listens, Opening, LISTEN_METHODS};
pub use params::ParamHeaders;
use retry::{Idempotent, Renewal};

/// The most pages [`McpClient::all_tools`] and the other `all_` calls follow: a server
/// whose cursors never end (or repeat) is an error, not a loop.
pub const MAX_PAGES: usize = 1000;

/// The most items the `all_` calls collect; more is [`ClientError::TooManyPages`] (page
/// through with the `list_` calls instead).
pub const MAX_ITEMS: usize = 100_000;

/// The most rounds one call of the stateless revision goes through: a server that keeps
/// answering `input_required` after that is an error ([`ClientError::TooManyRounds`]).
pub const MAX_ROUNDS: usize = 16;

/// Why a call to the server gave no result.
#[derive(Debug)]
pub enum ClientError {
    /// The call failed: the server's JSON-RPC error, a timeout, a closed connection.
    Call(CallError),
    /// The server's answer to `method` is not the shape the protocol gives it.
    Decode {
        /// The method called.
        method: &'static str,
        /// What did not decode.
        error: serde_json::Error,
    },
    /// The server chose a protocol revision this client does not speak.
    Version(String),
    /// A list went on for more than [`MAX_PAGES`] pages or [`MAX_ITEMS`] items, or its
    /// cursor did not move on.
    TooManyPages(&'static str),
    /// The tool arguments given are not a JSON object (or do not serialize); nothing was
    /// sent.
    Arguments(String),
    /// A 2026-07-28 call still needed input after [`MAX_ROUNDS`] rounds.
    TooManyRounds(&'static str),
    /// The server asked (in an `input_required` result) for something this client has no
    /// handler for: the request's method.
    Unanswerable(String),
    /// The tool's `x-mcp-header` marks break the rules of SEP-2243 (see
    /// [`Tool::param_headers`]): the client left it out of the tools it listed and does not
    /// call it; nothing was sent.
    RejectedTool {
        /// The tool's name.
        name: String,
        /// Which rule its input schema breaks.
        reason: String,
    },
    /// `method` exists only on the stateless revision (2026-07-28) and this client is on a
    /// session (2025-11-25 or earlier): nothing was sent. [`McpClient::listen`] says so;
    /// a session gets changes with [`McpClient::subscribe`] and
    /// [`ClientBuilder::on_notification`] instead.
    StatelessOnly(&'static str),
    /// `method` exists only on the session revisions (2025-11-25 and earlier;
    /// [`methods::REMOVED_IN_2026_07_28`]) and this client is on the stateless revision
    /// (started with [`ClientBuilder::discover`]): nothing was sent. `ping` has no
    /// replacement (every request is its own HTTP exchange); `logging/setLevel` is the
    /// per-request `_meta` log level; `resources/subscribe` is [`McpClient::listen`].
    SessionOnly(&'static str),
    /// The server answered `subscriptions/listen` without acknowledging it first
    /// (`notifications/subscriptions/acknowledged`): no subscription is open.
    Unacknowledged,
    /// The server lost the session (HTTP 404 to a request carrying its `Mcp-Session-Id`)
    /// and the client could not go on with `method` on a new one: starting it failed
    /// (`cause`), or the new session was lost too at once (`cause` is `None`: another 404
    /// right after the new session started). The server did not run the call. See
    /// [`retry`].
    SessionLost {
        /// The method called.
        method: &'static str,
        /// Why the new session could not be started, if that is what failed.
        cause: Option<Box<ClientError>>,
    },
    /// The connection was cut before the answer to `method` came (or a proxy answered 502
    /// or 504): the server may or may not have run it, and the client did not send it again
    /// (it is not known to be idempotent, or it was already sent twice). See [`retry`].
    OutcomeUnknown(&'static str),
    /// The request for `method` could not reach the server, for the reason the transport
    /// gave (`cause`): the connection could not be made (the address refused; a TLS failure
    /// with rustls' reason and the host), or the authorization failed (the OAuth step and
    /// the authorization server's `error` and `error_description`: downcast `cause` to
    /// `sansrpc_oauth::Error`). The server did not run it. The Streamable HTTP client of
    /// `sansrpc_mcp::tokio` tells these; see [`TransportFailures`].
    Transport {
        /// The method called.
        method: &'static str,
        /// Why, with its sources.
        cause: Arc<dyn std::error::Error + Send + Sync>,
    },
}

/// What a transport tells the connection's clients of the exchanges it could not make (the
/// connection refused, a TLS failure, an authorization that failed): the last cause, and how
/// many there were. The core ends such a call as
/// [`EndReason::Unanswered`](sansrpc::connection::EndReason::Unanswered), which carries no
/// cause; the typed client reads it here and fails the call with
/// [`ClientError::Transport`]. One per connection ([`Client::local`]); the Streamable HTTP
/// client of `sansrpc_mcp::tokio` records into it.
///
/// A call that ends unanswered is given the cause recorded while it was out: when several
/// calls fail at once, each is given the last cause (the connection's, as a rule the same).
#[derive(Default)]
pub struct TransportFailures {
    count: AtomicU64,
    last: Mutex<Option<Arc<dyn std::error::Error + Send + Sync>>>,
}

impl fmt::Debug for TransportFailures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportFailures")
            .field("count", &self.count())
            .field("last", &self.last().map(|e| e.to_string()))
            .finish()
    }
}

impl TransportFailures {
    /// Records `cause` as the reason of the exchange that just failed; call it before the
    /// connection ends the exchange's calls.
    pub fn record(&self, cause: Arc<dyn std::error::Error + Send + Sync>) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(cause);
        self.count.fetch_add(1, Ordering::AcqRel);
    }

    /// How many failures were recorded so far (read before a call, for [`since`](Self::since)).
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Acquire)
    }

    /// The last cause recorded, if any.
    pub fn last(&self) -> Option<Arc<dyn std::error::Error + Send + Sync>> {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The last cause, when one was recorded after [`count`](Self::count) was `seen`.
    pub fn since(&self, seen: u64) -> Option<Arc<dyn std::error::Error + Send + Sync>> {
        if self.count() > seen {
            self.last()
        } else {
            None
        }
    }
}

/// `error` and its sources, each said once: `client error (Connect): TLS with localhost:
/// invalid peer certificate: UnknownIssuer`.
pub(crate) fn with_sources(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

impl ClientError {
    /// The server's JSON-RPC error, if that is why the call failed.
    pub fn rpc(&self) -> Option<&ErrorObject<'static>> {
        match self {
            ClientError::Call(CallError::Rpc(e)) => Some(e),
            _ => None,
        }
    }

    /// The transport's reason, when the request could not reach the server
    /// ([`ClientError::Transport`], also inside [`ClientError::SessionLost`]).
    pub fn transport(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        match self {
            ClientError::Transport { cause, .. } => Some(cause.as_ref()),
            ClientError::SessionLost {
                cause: Some(cause), ..
            } => cause.transport(),
            _ => None,
        }
    }

    /// `error`, or [`ClientError::Transport`] when it is a call `method` ended unanswered
    /// after `failures` recorded a cause (after the count `seen`).
    pub(crate) fn of_call(
        method: &'static str,
        error: CallError,
        failures: &TransportFailures,
        seen: u64,
    ) -> ClientError {
        match (&error, failures.since(seen)) {
            (CallError::Ended(sansrpc::connection::EndReason::Unanswered { .. }), Some(cause)) => {
                ClientError::Transport { method, cause }
            }
            _ => ClientError::Call(error),
        }
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Call(e) => write!(f, "{e}"),
            ClientError::Decode { method, error } => {
                write!(
                    f,
                    "the server's answer to {method} does not decode: {error}"
                )
            }
            ClientError::Version(v) => {
                write!(
                    f,
                    "the server chose protocol revision {v:?}, not one this client speaks"
                )
            }
            ClientError::TooManyPages(method) => write!(
                f,
                "{method}: more than {MAX_PAGES} pages or {MAX_ITEMS} items, or a repeated cursor"
            ),
            ClientError::Arguments(e) => write!(f, "tool arguments: {e}"),
            ClientError::TooManyRounds(method) => {
                write!(
                    f,
                    "{method}: still input_required after {MAX_ROUNDS} rounds"
                )
            }
            ClientError::Unanswerable(method) => {
                write!(
                    f,
                    "the server asked for {method}, which this client does not answer"
                )
            }
            ClientError::RejectedTool { name, reason } => {
                write!(f, "tool {name:?} was rejected: {reason}")
            }
            ClientError::StatelessOnly(method) => write!(
                f,
                "{method} needs the stateless revision (2026-07-28); this client is on a session"
            ),
            ClientError::SessionOnly(method) => write!(
                f,
                "{method} was removed in the stateless revision (2026-07-28) this client is on"
            ),
            ClientError::Unacknowledged => write!(
                f,
                "the server answered subscriptions/listen without acknowledging it"
            ),
            ClientError::SessionLost {
                method,
                cause: Some(cause),
            } => write!(
                f,
                "{method}: the server lost the session, and a new one could not start: {cause}"
            ),
            ClientError::SessionLost {
                method,
                cause: None,
            } => write!(
                f,
                "{method}: the server lost the session, and the new one at once too (HTTP 404)"
            ),
            ClientError::OutcomeUnknown(method) => write!(
                f,
                "{method}: the connection was cut before the answer; the server may or may not have run it"
            ),
            ClientError::Transport { method, cause } => {
                write!(f, "{method}: the request did not get through: ")?;
                f.write_str(&with_sources(cause.as_ref()))
            }
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Call(e) => Some(e),
            ClientError::Decode { error, .. } => Some(error),
            ClientError::SessionLost {
                cause: Some(cause), ..
            } => Some(cause),
            ClientError::Transport { cause, .. } => Some(cause.as_ref()),
            _ => None,
        }
    }
}

impl From<CallError> for ClientError {
    fn from(e: CallError) -> Self {
        ClientError::Call(e)
    }
}

fn decode<T: DeserializeOwned>(method: &'static str, json: &str) -> Result<T, ClientError> {
    serde_json::from_str(json).map_err(|error| ClientError::Decode { method, error })
}

/// What the client reads of every stateless result first: whether it asks for input.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Round {
    result_type: Option<String>,
    /// The input requests ([`InputRequest`](crate::types::InputRequest)s) by key, each as
    /// JSON: its params are decoded by the handler that answers it.
    input_requests: Option<JsonObject>,
    request_state: Option<String>,
}

fn page(cursor: Option<&str>) -> Value {
    match cursor {
        Some(c) => serde_json::json!({ "cursor": c }),
        None => Value::Object(JsonObject::new()),
    }
}

/// The params of a `tools/call` of `name` with `arguments`: the object
/// [`CallToolRequestParams`](crate::types::CallToolRequestParams) writes for them, made here so that a client does not carry
/// that type's writer (its other members are the stateless round's input responses, with
/// the sampling, elicitation and roots results).
fn tool_params(name: &str, arguments: impl Serialize) -> Result<JsonObject, ClientError> {
    let mut params = JsonObject::new();
    params.insert("name".into(), Value::String(name.into()));
    match serde_json::to_value(arguments) {
        Ok(Value::Object(map)) => {
            params.insert("arguments".into(), Value::Object(map));
        }
        Ok(Value::Null) => {}
        Ok(other) => {
            return Err(ClientError::Arguments(format!(
                "must be an object, not {}",
                crate::json_text(&other)
            )))
        }
        Err(e) => return Err(ClientError::Arguments(e.to_string())),
    }
    Ok(params)
}
