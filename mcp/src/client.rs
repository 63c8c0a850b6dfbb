//! An MCP client: the primitives from the client's side on any connection the futures adapter
//! drives (a child's stdio, Streamable HTTP through `sansrpc_tokio::mcp_client`, TCP, on
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
//! On the stateless revision (2026-07-28) a tool's input schema may mark an argument with
//! `"x-mcp-header": "<Name>"` (SEP-2243): over Streamable HTTP its value also travels in an
//! `Mcp-Param-<Name>` header. The client remembers those marks from the `tools/list` pages it
//! reads, leaves out of what it returns the tools whose marks break the revision's rules
//! (and refuses to call them), and says through [`ParamHeaders`] which headers each
//! `tools/call` carries; `sansrpc_tokio::mcp_client::connect_with_headers` sends them. The
//! marks are read into the same model the server checks them with,
//! [`sansrpc::streamable::ParamHeader`].

use crate::raw_json;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use sansrpc::connection::Timeout;
use sansrpc::streamable::ParamHeader;
use sansrpc::{ErrorObject, RawValue};
use sansrpc_futures::{AsyncRouter, BoxFuture, CallError, Client, PendingCall};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::types::{
    error_codes, methods, notifications, version, CallToolRequestParams, CallToolResult,
    ClientCapabilities, CompleteRequestParams, CompleteResult, Completion, CompletionArgument,
    CreateMessageRequestParams, CreateMessageResult, DiscoverResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, GetPromptRequestParams, GetPromptResult, Implementation,
    InitializeResult, InputRequest, InputRequests, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListRootsResult, ListToolsResult,
    LoggingLevel, Prompt, ReadResourceResult, Reference, RequestId, Resource, ResourceTemplate,
    ResourceUpdatedNotificationParams, Root, RootsCapability, SamplingCapability,
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenResult,
    Tool,
};

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
}

impl ClientError {
    /// The server's JSON-RPC error, if that is why the call failed.
    pub fn rpc(&self) -> Option<&ErrorObject<'static>> {
        match self {
            ClientError::Call(CallError::Rpc(e)) => Some(e),
            _ => None,
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
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Call(e) => Some(e),
            ClientError::Decode { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<CallError> for ClientError {
    fn from(e: CallError) -> Self {
        ClientError::Call(e)
    }
}

type Answer<T> = BoxFuture<Result<T, ErrorObject<'static>>>;
type SamplingFn = dyn Fn(CreateMessageRequestParams) -> Answer<CreateMessageResult> + Send + Sync;
type ElicitationFn = dyn Fn(ElicitRequestParams) -> Answer<ElicitResult> + Send + Sync;
type NotificationFn = dyn Fn(&str, &Value) + Send + Sync;

/// Who the client is, and how it answers what the server asks.
#[derive(Clone)]
pub struct ClientBuilder {
    info: Implementation,
    version: String,
    sampling: Option<Arc<SamplingFn>>,
    elicitation: Option<Arc<ElicitationFn>>,
    url_elicitation: bool,
    roots: Option<Arc<Mutex<Vec<Root>>>>,
    notifications: Option<Arc<NotificationFn>>,
    param_headers: ParamHeaders,
    /// The open `subscriptions/listen` requests of the clients this builder starts.
    listens: Listens,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("version", &self.version)
            .field("capabilities", &self.capabilities())
            .finish()
    }
}

fn decode_params<T: DeserializeOwned>(
    params: Option<Box<RawValue>>,
) -> Result<T, ErrorObject<'static>> {
    let json = params.as_deref().map_or("{}", RawValue::get);
    serde_json::from_str(json)
        .map_err(|e| ErrorObject::new(error_codes::INVALID_PARAMS, format!("invalid params: {e}")))
}

impl ClientBuilder {
    /// A client named `name` at `version`, asking for revision 2025-11-25 (and accepting an
    /// earlier session revision, down to 2024-11-05, when the server offers it instead).
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ClientBuilder {
            info: Implementation::new(name, version),
            version: version::LATEST.to_owned(),
            sampling: None,
            elicitation: None,
            url_elicitation: false,
            roots: None,
            notifications: None,
            param_headers: ParamHeaders::default(),
            listens: Listens::default(),
        }
    }

    /// The revision asked for in `initialize` (one of the session revisions, up to
    /// 2025-11-25).
    pub fn protocol_version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Answers `sampling/createMessage` (and declares the `sampling` capability): the
    /// server asks for an LLM completion from inside one of its handlers.
    pub fn on_sampling<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject<'static>>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |p| Box::pin(handler(p))));
        self
    }

    /// Answers `elicitation/create` in form mode (and declares the `elicitation`
    /// capability): the server asks the user for input. [`ElicitRequestParams::defaults`]
    /// gives the form's defaults (SEP-1034). URL-mode requests reach the handler only with
    /// [`url_elicitation`](Self::url_elicitation); without it they are refused with -32602.
    pub fn on_elicitation<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, ErrorObject<'static>>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |p| Box::pin(handler(p))));
        self
    }

    /// Declares URL-mode elicitation too: the elicitation handler also gets requests to
    /// send the user to a URL (`ElicitRequestParams::Url`), and answers `accept` only once
    /// the user was shown it.
    pub fn url_elicitation(mut self) -> Self {
        self.url_elicitation = true;
        self
    }

    /// Answers `roots/list` with `roots` (and declares the `roots` capability, with
    /// `listChanged`); [`McpClient::set_roots`] changes them later.
    pub fn roots(mut self, roots: Vec<Root>) -> Self {
        self.roots = Some(Arc::new(Mutex::new(roots)));
        self
    }

    /// Called with every notification MCP defines for the server to send
    /// (`notifications/progress`, `notifications/message`, the list-changed ones,
    /// `notifications/resources/updated`, …) but `notifications/cancelled`, which the
    /// connection handles: its method and params (`{}` when it has none). Other methods go
    /// on the router (`mount` on your own).
    ///
    /// The notifications of a [`Subscription`] ([`McpClient::listen`]) reach this handler
    /// too, as before there was `listen`, with their `_meta` (the subscription id); the
    /// subscription gets its own copy. `notifications/subscriptions/acknowledged` does not
    /// reach it: [`McpClient::listen`] takes it.
    pub fn on_notification<F>(mut self, handler: F) -> Self
    where
        F: Fn(&str, &Value) + Send + Sync + 'static,
    {
        self.notifications = Some(Arc::new(handler));
        self
    }

    /// The `x-mcp-header` marks (SEP-2243) of the tools the clients this builder starts
    /// (and its clones) have listed, shared: give it to the HTTP transport, which asks it
    /// for the `Mcp-Param-*` headers of each `tools/call` (with
    /// `sansrpc_tokio::mcp_client::connect_with_headers`). One builder per server: the
    /// marks are remembered by tool name.
    pub fn param_headers(&self) -> ParamHeaders {
        self.param_headers.clone()
    }

    /// The capabilities declared in `initialize`, from the handlers given.
    pub fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if self.sampling.is_some() {
            caps.sampling = Some(SamplingCapability::default());
        }
        if self.elicitation.is_some() {
            caps.elicitation = Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                url: self.url_elicitation.then(JsonObject::new),
                ..Default::default()
            });
        }
        if self.roots.is_some() {
            caps.roots = Some(RootsCapability {
                list_changed: Some(true),
                ..Default::default()
            });
        }
        caps
    }

    /// The client's side as an [`AsyncRouter`]: give it to the connection's builder. Call
    /// it once the builder is complete: the router has the handlers given so far, and
    /// [`initialize`](Self::initialize) declares the capabilities of the handlers it has.
    pub fn router(&self) -> AsyncRouter {
        let mut router = AsyncRouter::new();
        self.mount(&mut router);
        router
    }

    /// Registers the client's handlers on `router`, beside the application's own.
    ///
    /// For [`McpClient::listen`] it also registers `notifications/subscriptions/acknowledged`
    /// and the notifications a listen stream carries (the three list-changed ones and
    /// `notifications/resources/updated`), whether or not there is an
    /// [`on_notification`](Self::on_notification) handler. Without that handler, one of
    /// these the router already has is left to the router's own handler (and does not
    /// reach the subscriptions).
    ///
    /// # Panics
    /// When `router` already has one of the methods (but those just named, when there is
    /// no [`on_notification`](Self::on_notification) handler).
    pub fn mount(&self, router: &mut AsyncRouter) {
        let registered = |r: Result<(), sansrpc::router::RegisterError>, name: &str| {
            r.unwrap_or_else(|e| panic!("mounting {name}: {e}"));
        };
        registered(
            router.raw_method(methods::PING, |_| async {
                Ok(raw_json(&JsonObject::new()))
            }),
            methods::PING,
        );
        if let Some(sampling) = self.sampling.clone() {
            let r = router.raw_method(methods::SAMPLING_CREATE_MESSAGE, move |params| {
                let sampling = sampling.clone();
                async move { Ok(raw_json(&sampling(decode_params(params)?).await?)) }
            });
            registered(r, methods::SAMPLING_CREATE_MESSAGE);
        }
        if let Some(elicitation) = self.elicitation.clone() {
            let url = self.url_elicitation;
            let r = router.raw_method(methods::ELICITATION_CREATE, move |params| {
                let elicitation = elicitation.clone();
                async move {
                    let request: ElicitRequestParams = decode_params(params)?;
                    if matches!(request, ElicitRequestParams::Url(_)) && !url {
                        let e = "URL-mode elicitation was not declared by this client";
                        return Err(ErrorObject::new(error_codes::INVALID_PARAMS, e));
                    }
                    Ok(raw_json(&elicitation(request).await?))
                }
            });
            registered(r, methods::ELICITATION_CREATE);
        }
        if let Some(roots) = self.roots.clone() {
            let r = router.raw_method(methods::ROOTS_LIST, move |_| {
                let roots = roots.lock().unwrap_or_else(PoisonError::into_inner).clone();
                async move {
                    Ok(raw_json(&ListRootsResult {
                        meta: None,
                        roots,
                        extra: JsonObject::new(),
                    }))
                }
            });
            registered(r, methods::ROOTS_LIST);
        }
        let methods = notifications::SERVER_2025_11_25
            .iter()
            .chain([&notifications::SUBSCRIPTIONS_ACKNOWLEDGED]);
        for &method in methods {
            if method == notifications::CANCELLED {
                // The connection handles cancellation of the server's requests itself.
                continue;
            }
            let listen = LISTEN_METHODS.contains(&method);
            let acknowledged = method == notifications::SUBSCRIPTIONS_ACKNOWLEDGED;
            let handler = self.notifications.clone().filter(|_| !acknowledged);
            if handler.is_none() && !listen && !acknowledged {
                continue;
            }
            let listens = self.listens.clone();
            let optional = handler.is_none();
            let r = router.raw_notification(method, move |params| {
                let value = params
                    .and_then(|p| serde_json::from_str(p.get()).ok())
                    .unwrap_or_else(|| Value::Object(JsonObject::new()));
                if acknowledged {
                    listens.acknowledged(value);
                } else {
                    if listen {
                        listens.deliver(method, &value);
                    }
                    if let Some(handler) = &handler {
                        handler(method, &value);
                    }
                }
                async {}
            });
            match r {
                // Left to the application's own handler (documented above).
                Err(_) if optional => {}
                r => registered(r, method),
            }
        }
    }

    /// The MCP handshake on `client`'s connection: `initialize` with this client's
    /// identity and capabilities, a check that the server chose a revision this client
    /// speaks, then `notifications/initialized`.
    ///
    /// `client` is the connection's [`Client`], by value or borrowed, or anything that
    /// lends one: every connection of `sansrpc-tokio` does (`&conn` for a
    /// `sansrpc_tokio::Spawned`, from `mcp_client::connect` or `spawn`, and for a
    /// `ChildProcess`, from `spawn_child`). The [`McpClient`] keeps its own handle.
    pub async fn initialize(&self, client: impl AsRef<Client>) -> Result<McpClient, ClientError> {
        let client = client.as_ref().clone();
        let params = serde_json::json!({
            "protocolVersion": self.version,
            "capabilities": self.capabilities(),
            "clientInfo": self.info,
        });
        let result = client
            .call_raw(methods::INITIALIZE, Some(&raw_json(&params)))
            .await?;
        let init: InitializeResult = decode(methods::INITIALIZE, result.get())?;
        if !version::HANDSHAKE.contains(&init.protocol_version.as_str()) {
            return Err(ClientError::Version(init.protocol_version));
        }
        client.notify_raw(notifications::INITIALIZED, None).await?;
        Ok(McpClient {
            _closer: Arc::new(Closer(client.clone())),
            client,
            init,
            roots: self.roots.clone(),
            stateless: None,
            param_headers: self.param_headers.clone(),
            listens: self.listens.clone(),
        })
    }

    /// The `_meta` every request of the stateless revision `version` carries.
    fn request_meta(&self, version: &str) -> JsonObject {
        let mut meta = JsonObject::new();
        meta.insert(
            "io.modelcontextprotocol/protocolVersion".into(),
            Value::String(version.to_owned()),
        );
        meta.insert(
            "io.modelcontextprotocol/clientCapabilities".into(),
            serde_json::to_value(self.capabilities()).expect("MCP types serialize"),
        );
        meta.insert(
            "io.modelcontextprotocol/clientInfo".into(),
            serde_json::to_value(&self.info).expect("MCP types serialize"),
        );
        meta
    }

    /// Starts on the stateless revision (2026-07-28) on `client`'s connection: no handshake
    /// and no session; `server/discover` says who the server is, and every request then
    /// carries the revision, this client's capabilities and identity in its `_meta`. A
    /// server that refuses the revision (-32022) and names one this client speaks is asked
    /// once more with it. When a call answers `input_required`, the client fulfils the
    /// server's requests with its handlers (sampling, elicitation, roots) and calls again
    /// with the answers and the server's `requestState`, up to [`MAX_ROUNDS`] rounds.
    ///
    /// The methods 2026-07-28 removed (`ping`, `logging/setLevel`, `resources/subscribe`,
    /// [`methods::REMOVED_IN_2026_07_28`]) are refused by the client itself
    /// ([`ClientError::SessionOnly`]: nothing is sent), as [`McpClient::listen`] is on a
    /// session.
    ///
    /// `client` as for [`initialize`](Self::initialize).
    pub async fn discover(&self, client: impl AsRef<Client>) -> Result<McpClient, ClientError> {
        let client = client.as_ref().clone();
        let mut chosen = version::STATELESS.to_owned();
        let mut retried = false;
        let result = loop {
            let params = serde_json::json!({ "_meta": self.request_meta(&chosen) });
            match client
                .call_raw(methods::SERVER_DISCOVER, Some(&raw_json(&params)))
                .await
            {
                Ok(result) => break result,
                Err(CallError::Rpc(e))
                    if e.code == error_codes::UNSUPPORTED_PROTOCOL_VERSION && !retried =>
                {
                    // The server names what it speaks: take the first this client does.
                    let supported = e
                        .data
                        .as_ref()
                        .and_then(|d| serde_json::from_str::<Value>(d.get()).ok())
                        .and_then(|d| d.get("supported").cloned())
                        .and_then(|s| serde_json::from_value::<Vec<String>>(s).ok())
                        .unwrap_or_default();
                    match supported
                        .into_iter()
                        .find(|v| version::STATELESS_VERSIONS.contains(&v.as_str()))
                    {
                        Some(v) => chosen = v,
                        None => return Err(ClientError::Call(CallError::Rpc(e))),
                    }
                    retried = true;
                }
                Err(e) => return Err(e.into()),
            }
        };
        let discovered: DiscoverResult = decode(methods::SERVER_DISCOVER, result.get())?;
        if !discovered.supported_versions.is_empty()
            && !discovered.supported_versions.contains(&chosen)
        {
            return Err(ClientError::Version(
                discovered.supported_versions.join(", "),
            ));
        }
        let server_info = discovered
            .server_info()
            .cloned()
            .or_else(|| {
                let info = discovered.extra.get("serverInfo")?;
                serde_json::from_value(info.clone()).ok()
            })
            .unwrap_or_else(|| Implementation::new("", ""));
        let init = InitializeResult {
            meta: None,
            protocol_version: chosen.clone(),
            capabilities: discovered.capabilities,
            server_info,
            instructions: discovered.instructions,
            extra: JsonObject::new(),
        };
        Ok(McpClient {
            _closer: Arc::new(Closer(client.clone())),
            client,
            init,
            roots: self.roots.clone(),
            stateless: Some(Arc::new(Stateless {
                meta: self.request_meta(&chosen),
                answers: self.clone(),
            })),
            param_headers: self.param_headers.clone(),
            listens: self.listens.clone(),
        })
    }

    /// Fulfils one of the server's input requests with this client's handlers.
    async fn answer(&self, request: InputRequest) -> Result<Value, ClientError> {
        let refused = |e: ErrorObject<'static>| ClientError::Call(CallError::Rpc(e));
        let value = match request {
            InputRequest::Elicit(params) => {
                let Some(elicitation) = &self.elicitation else {
                    return Err(ClientError::Unanswerable(
                        methods::ELICITATION_CREATE.into(),
                    ));
                };
                if matches!(params, ElicitRequestParams::Url(_)) && !self.url_elicitation {
                    return Err(ClientError::Unanswerable(
                        "elicitation/create (URL mode)".into(),
                    ));
                }
                serde_json::to_value(elicitation(params).await.map_err(refused)?)
            }
            InputRequest::CreateMessage(params) => {
                let Some(sampling) = &self.sampling else {
                    return Err(ClientError::Unanswerable(
                        methods::SAMPLING_CREATE_MESSAGE.into(),
                    ));
                };
                serde_json::to_value(sampling(params).await.map_err(refused)?)
            }
            InputRequest::ListRoots(_) => {
                let Some(roots) = &self.roots else {
                    return Err(ClientError::Unanswerable(methods::ROOTS_LIST.into()));
                };
                let roots = roots.lock().unwrap_or_else(PoisonError::into_inner).clone();
                serde_json::to_value(ListRootsResult {
                    meta: None,
                    roots,
                    extra: JsonObject::new(),
                })
            }
            InputRequest::Other { method, .. } => return Err(ClientError::Unanswerable(method)),
        };
        Ok(value.expect("MCP types serialize"))
    }
}

fn decode<T: DeserializeOwned>(method: &'static str, json: &str) -> Result<T, ClientError> {
    serde_json::from_str(json).map_err(|error| ClientError::Decode { method, error })
}

/// An initialized session with an MCP server: typed calls. Cheap to clone; dropping a call's
/// future cancels the request (`notifications/cancelled`).
///
/// [`close`](Self::close) ends the session and the connection: over Streamable HTTP
/// (`sansrpc_tokio::mcp_client`) the transport ends the session with a `DELETE` first. When
/// the last clone is dropped without it, the same close starts by itself, in the
/// background, best-effort (the connection's driver does it; nothing waits for it). Other
/// handles on the connection (the [`Client`] it was made from) then fail as closed.
#[derive(Clone, Debug)]
pub struct McpClient {
    /// Closes the connection when the last clone goes (held for its `Drop`).
    _closer: Arc<Closer>,
    client: Client,
    init: InitializeResult,
    roots: Option<Arc<Mutex<Vec<Root>>>>,
    /// On the stateless revision (2026-07-28): what every request carries, and how the
    /// client answers the server's input requests.
    stateless: Option<Arc<Stateless>>,
    /// The `x-mcp-header` marks of the tools listed (shared with the builder).
    param_headers: ParamHeaders,
    /// The open `subscriptions/listen` requests (shared with the builder's router).
    listens: Listens,
}

/// Asks the connection to close when dropped (with the last [`McpClient`] clone).
#[derive(Debug)]
struct Closer(Client);

impl Drop for Closer {
    fn drop(&mut self) {
        // The close is asked when `close` is called; its future only waits for the end.
        drop(self.0.close());
    }
}

/// A client on the stateless revision.
#[derive(Debug)]
struct Stateless {
    /// `_meta` of every request: the revision, the client's capabilities and identity.
    meta: JsonObject,
    /// The handlers that answer `input_required` rounds.
    answers: ClientBuilder,
}

impl McpClient {
    /// Ends the session and closes the connection, and waits until it is closed: the
    /// handlers in flight get the connection's `end_grace`, pending calls fail as closed,
    /// then the transport closes; over Streamable HTTP (`sansrpc_tokio::mcp_client`) that
    /// sends the session's `DELETE` and waits for its answer, at most a second. Every
    /// handle on the connection fails from then on. A child process is shut down with its
    /// own `shutdown(grace)` (MCP's stdio rules: close stdin, wait, kill).
    pub async fn close(&self) {
        self.client.close().await;
    }

    /// The server's answer to `initialize`: its identity, capabilities, instructions and
    /// the revision it chose.
    pub fn initialize_result(&self) -> &InitializeResult {
        &self.init
    }

    /// The server's identity.
    pub fn server_info(&self) -> &Implementation {
        &self.init.server_info
    }

    /// The revision in use.
    pub fn protocol_version(&self) -> &str {
        &self.init.protocol_version
    }

    /// The connection underneath, for calls outside MCP's primitives.
    pub fn connection(&self) -> &Client {
        &self.client
    }

    /// True on the stateless revision (started with [`ClientBuilder::discover`]).
    pub fn is_stateless(&self) -> bool {
        self.stateless.is_some()
    }

    async fn request<T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &impl Serialize,
    ) -> Result<T, ClientError> {
        let params = serde_json::to_value(params).expect("MCP types serialize");
        let result = self.call(method, params, None).await?;
        decode(method, result.get())
    }

    /// One call: on a session, one request; on the stateless revision, with the request
    /// `_meta` and as many `input_required` rounds as the server needs (at most
    /// [`MAX_ROUNDS`]). `progress`: a token, the timeout each progress report renews, and
    /// the cap.
    async fn call(
        &self,
        method: &'static str,
        mut params: Value,
        progress: Option<(i64, Duration, Duration)>,
    ) -> Result<Box<RawValue>, ClientError> {
        if self.is_stateless() && methods::REMOVED_IN_2026_07_28.contains(&method) {
            return Err(ClientError::SessionOnly(method));
        }
        let send = |params: &Value| match progress {
            Some((token, timeout, cap)) => self.client.call_raw_with_progress(
                method,
                Some(&raw_json(params)),
                timeout,
                token,
                cap,
            ),
            None => self.client.call_raw(method, Some(&raw_json(params))),
        };
        let Some(stateless) = &self.stateless else {
            return Ok(send(&params).await?);
        };
        if let Value::Object(map) = &mut params {
            let meta = map
                .entry("_meta")
                .or_insert_with(|| Value::Object(JsonObject::new()));
            if let Value::Object(meta) = meta {
                meta.extend(stateless.meta.clone());
            }
        }
        for _ in 0..MAX_ROUNDS {
            let result = send(&params).await?;
            let round: Round = decode(method, result.get())?;
            if round.result_type.as_deref() != Some("input_required") {
                return Ok(result);
            }
            let mut answers = JsonObject::new();
            for (key, request) in round.input_requests.unwrap_or_default() {
                answers.insert(key, stateless.answers.answer(request).await?);
            }
            if let Value::Object(map) = &mut params {
                map.insert("inputResponses".into(), Value::Object(answers));
                match round.request_state {
                    Some(state) => map.insert("requestState".into(), Value::String(state)),
                    None => map.remove("requestState"),
                };
            }
        }
        Err(ClientError::TooManyRounds(method))
    }

    /// Every item of a paginated list: each page's items, following the cursors (at most
    /// [`MAX_PAGES`] pages).
    async fn all<P: DeserializeOwned, T>(
        &self,
        method: &'static str,
        split: impl Fn(P) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>, ClientError> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let (items, next) = split(self.request(method, &page(cursor.as_deref())).await?);
            all.extend(items);
            if all.len() > MAX_ITEMS {
                return Err(ClientError::TooManyPages(method));
            }
            match next {
                // A cursor that does not move on would loop.
                Some(next) if cursor.as_deref() == Some(next.as_str()) => {
                    return Err(ClientError::TooManyPages(method))
                }
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
        Err(ClientError::TooManyPages(method))
    }

    /// `ping`. On the stateless revision it is [`ClientError::SessionOnly`] and nothing is
    /// sent (2026-07-28 has no `ping`).
    pub async fn ping(&self) -> Result<(), ClientError> {
        self.request::<JsonObject>(methods::PING, &JsonObject::new())
            .await
            .map(drop)
    }

    /// One page of `tools/list` (`cursor` from the previous page's `next_cursor`).
    ///
    /// On the stateless revision the page's `x-mcp-header` marks are remembered (for the
    /// `Mcp-Param-*` headers of later calls, see [`ParamHeaders`]) and the tools whose marks
    /// break SEP-2243's rules ([`Tool::param_headers`]) are left out of the page; calling one
    /// is [`ClientError::RejectedTool`]. More than [`MAX_ITEMS`] marked tools remembered from
    /// single pages is [`ClientError::TooManyPages`] ([`all_tools`](Self::all_tools) starts
    /// afresh).
    pub async fn list_tools(&self, cursor: Option<&str>) -> Result<ListToolsResult, ClientError> {
        let mut page: ListToolsResult = self.request(methods::TOOLS_LIST, &page(cursor)).await?;
        if self.is_stateless() {
            page.tools = self.param_headers.screen(page.tools, false)?;
        }
        Ok(page)
    }

    /// Every tool, following the cursors (at most [`MAX_PAGES`] pages).
    ///
    /// On the stateless revision, as [`list_tools`](Self::list_tools): the tools whose
    /// `x-mcp-header` marks break SEP-2243's rules are left out, and the marks of this
    /// listing replace all those remembered before.
    pub async fn all_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let tools = self
            .all(methods::TOOLS_LIST, |page: ListToolsResult| {
                (page.tools, page.next_cursor)
            })
            .await?;
        if self.is_stateless() {
            return self.param_headers.screen(tools, true);
        }
        Ok(tools)
    }

    /// The `x-mcp-header` marks (SEP-2243) of the tools listed, and the `Mcp-Param-*`
    /// headers they give a `tools/call`.
    pub fn param_headers(&self) -> &ParamHeaders {
        &self.param_headers
    }

    /// `tools/call` of `name` with `arguments` (a struct or a JSON object; `()` for none).
    /// A tool's own failure is a result with `is_error`, not an `Err`.
    ///
    /// A tool the listing rejected is [`ClientError::RejectedTool`]; an argument mirrored in
    /// an `Mcp-Param-*` header that is no string, boolean or integer within ±(2^53−1) (nor
    /// null) is [`ClientError::Arguments`]. Neither sends anything.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, ClientError> {
        let params = tool_params(name, arguments)?;
        self.param_headers.check(name, params.arguments.as_ref())?;
        self.request(methods::TOOLS_CALL, &params).await
    }

    /// [`call_tool`](Self::call_tool) with a progress token: the server's
    /// `notifications/progress` on `token` reach
    /// [`on_notification`](ClientBuilder::on_notification), and each extends the deadline
    /// by `timeout` again (never past `cap` in all).
    pub async fn call_tool_with_progress(
        &self,
        name: &str,
        arguments: impl Serialize,
        token: i64,
        timeout: Duration,
        cap: Duration,
    ) -> Result<CallToolResult, ClientError> {
        let params = tool_params(name, arguments)?;
        self.param_headers.check(name, params.arguments.as_ref())?;
        let mut params = serde_json::to_value(params).expect("MCP types serialize");
        params["_meta"] = serde_json::json!({ "progressToken": token });
        let result = self
            .call(methods::TOOLS_CALL, params, Some((token, timeout, cap)))
            .await?;
        decode(methods::TOOLS_CALL, result.get())
    }

    /// One page of `resources/list`.
    pub async fn list_resources(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourcesResult, ClientError> {
        self.request(methods::RESOURCES_LIST, &page(cursor)).await
    }

    /// Every resource, following the cursors.
    pub async fn all_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.all(methods::RESOURCES_LIST, |page: ListResourcesResult| {
            (page.resources, page.next_cursor)
        })
        .await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        self.request(methods::RESOURCES_TEMPLATES_LIST, &page(cursor))
            .await
    }

    /// Every resource template, following the cursors.
    pub async fn all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.all(
            methods::RESOURCES_TEMPLATES_LIST,
            |page: ListResourceTemplatesResult| (page.resource_templates, page.next_cursor),
        )
        .await
    }

    /// `resources/read` of `uri`.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        self.request(methods::RESOURCES_READ, &serde_json::json!({ "uri": uri }))
            .await
    }

    /// `resources/subscribe`: the server sends `notifications/resources/updated` for `uri`.
    pub async fn subscribe(&self, uri: &str) -> Result<(), ClientError> {
        self.request::<JsonObject>(
            methods::RESOURCES_SUBSCRIBE,
            &serde_json::json!({ "uri": uri }),
        )
        .await
        .map(drop)
    }

    /// `resources/unsubscribe`.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), ClientError> {
        self.request::<JsonObject>(
            methods::RESOURCES_UNSUBSCRIBE,
            &serde_json::json!({ "uri": uri }),
        )
        .await
        .map(drop)
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListPromptsResult, ClientError> {
        self.request(methods::PROMPTS_LIST, &page(cursor)).await
    }

    /// Every prompt, following the cursors.
    pub async fn all_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.all(methods::PROMPTS_LIST, |page: ListPromptsResult| {
            (page.prompts, page.next_cursor)
        })
        .await
    }

    /// `prompts/get` of `name` with its arguments.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, ClientError> {
        let params = GetPromptRequestParams {
            name: name.to_owned(),
            arguments: Some(arguments),
            ..Default::default()
        };
        self.request(methods::PROMPTS_GET, &params).await
    }

    /// `completion/complete`: values for argument `argument` of a prompt or resource
    /// template, given what was typed so far (`value`).
    pub async fn complete(
        &self,
        reference: Reference,
        argument: &str,
        value: &str,
    ) -> Result<Completion, ClientError> {
        let params = CompleteRequestParams {
            meta: None,
            reference,
            argument: CompletionArgument {
                name: argument.to_owned(),
                value: value.to_owned(),
            },
            context: None,
        };
        let result: CompleteResult = self.request(methods::COMPLETION_COMPLETE, &params).await?;
        Ok(result.completion)
    }

    /// `logging/setLevel`: the server sends log messages at `level` and above.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        self.request::<JsonObject>(
            methods::LOGGING_SET_LEVEL,
            &serde_json::json!({ "level": level }),
        )
        .await
        .map(drop)
    }

    /// Replaces the roots `roots/list` answers with and tells the server
    /// (`notifications/roots/list_changed`). Without [`ClientBuilder::roots`] the client
    /// declared no roots: nothing is sent and it returns `false`.
    pub async fn set_roots(&self, roots: Vec<Root>) -> Result<bool, ClientError> {
        let Some(shared) = &self.roots else {
            return Ok(false);
        };
        *shared.lock().unwrap_or_else(PoisonError::into_inner) = roots;
        self.client
            .notify_raw(notifications::ROOTS_LIST_CHANGED, None)
            .await?;
        Ok(true)
    }

    /// `subscriptions/listen` (2026-07-28) with `filter`: opens a subscription and waits
    /// for the server's acknowledgement (`notifications/subscriptions/acknowledged`), which
    /// gives the subscription id (the listen request's id) and the part of `filter` the
    /// server honours. The request carries the revision's `_meta`, has no deadline (it
    /// stays pending while the subscription is open), and its notifications are read with
    /// [`Subscription::next`].
    ///
    /// The client opens one listen at a time (the acknowledgement does not say which
    /// request it answers until it is read): a second `listen` meanwhile, also from a clone,
    /// waits for the first's acknowledgement. A `listen` dropped before its acknowledgement
    /// came cancels its request once the acknowledgement comes (or the request ends), and
    /// the next `listen` waits for that too.
    ///
    /// # Errors
    /// - [`ClientError::StatelessOnly`] on a session (2025-11-25 or earlier, started with
    ///   [`ClientBuilder::initialize`]): nothing is sent.
    /// - [`ClientError::Call`] when the server refuses the request (-32602 for a filter too
    ///   large, -32601 when it has no `subscriptions/listen`) or the connection ends first.
    /// - [`ClientError::Unacknowledged`] when the server answers it without acknowledging
    ///   it.
    ///
    /// The notifications reach the subscription only through the router of the builder
    /// this client came from ([`ClientBuilder::router`] or [`ClientBuilder::mount`]): use
    /// one builder (and its clones) per connection, as subscription ids are the
    /// connection's request ids.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, ClientError> {
        let Some(stateless) = &self.stateless else {
            return Err(ClientError::StatelessOnly(methods::SUBSCRIPTIONS_LISTEN));
        };
        let params = serde_json::json!({
            "_meta": stateless.meta,
            "notifications": filter,
        });
        let params = raw_json(&params);
        // The slot first: the acknowledgement that comes next is this request's.
        std::future::poll_fn(|cx| self.listens.poll_slot(cx)).await;
        let mut opening = Opening {
            listens: self.listens.clone(),
            call: Some(self.client.call_raw_with(
                methods::SUBSCRIPTIONS_LISTEN,
                Some(&params),
                Timeout::Never,
            )),
            owns: true,
        };
        let acknowledged = std::future::poll_fn(|cx| opening.poll_acknowledged(cx)).await?;
        let (id, filter) = acknowledged;
        Ok(Subscription {
            id,
            filter,
            call: opening.call.take(),
            listens: self.listens.clone(),
            lagged: 0,
            error: None,
        })
    }
}

/// The notifications a `subscriptions/listen` stream carries; the client's router hands
/// them (when tagged with an open subscription's id) to that [`Subscription`].
const LISTEN_METHODS: &[&str] = &[
    notifications::TOOLS_LIST_CHANGED,
    notifications::PROMPTS_LIST_CHANGED,
    notifications::RESOURCES_LIST_CHANGED,
    notifications::RESOURCES_UPDATED,
];

/// The most notifications one [`Subscription`] holds that the application has not read
/// with [`Subscription::next`]. When another comes, the oldest held is dropped and counted;
/// `next` then reports the count first ([`ListenNotification::Lagged`]) and goes on with
/// the newest held. The server is not slowed down, nor the connection's other calls.
pub const MAX_QUEUED_NOTIFICATIONS: usize = 256;

/// One notification of a [`Subscription`], from [`Subscription::next`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ListenNotification {
    /// `notifications/tools/list_changed`: list the tools again.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`: list the prompts again.
    PromptsListChanged,
    /// `notifications/resources/list_changed`: list the resources again.
    ResourcesListChanged,
    /// `notifications/resources/updated`: read the resource again.
    ResourceUpdated(ResourceUpdatedNotificationParams),
    /// A notification tagged with this subscription that has no variant above (or whose
    /// params do not decode): its method and params (`{}` when it had none).
    Other {
        /// The method.
        method: String,
        /// The params, `_meta` included.
        params: Value,
    },
    /// The application did not read for a while: this many notifications, the oldest,
    /// were dropped (past [`MAX_QUEUED_NOTIFICATIONS`]) just before the next one `next`
    /// gives. List (or read) again what the subscription watches.
    Lagged(u64),
}

impl ListenNotification {
    /// Its method (`""` for [`Lagged`](Self::Lagged), which the server did not send).
    pub fn method(&self) -> &str {
        match self {
            ListenNotification::ToolsListChanged => notifications::TOOLS_LIST_CHANGED,
            ListenNotification::PromptsListChanged => notifications::PROMPTS_LIST_CHANGED,
            ListenNotification::ResourcesListChanged => notifications::RESOURCES_LIST_CHANGED,
            ListenNotification::ResourceUpdated(_) => notifications::RESOURCES_UPDATED,
            ListenNotification::Other { method, .. } => method,
            ListenNotification::Lagged(_) => "",
        }
    }

    fn decode(method: &str, params: &Value) -> Self {
        match method {
            notifications::TOOLS_LIST_CHANGED => ListenNotification::ToolsListChanged,
            notifications::PROMPTS_LIST_CHANGED => ListenNotification::PromptsListChanged,
            notifications::RESOURCES_LIST_CHANGED => ListenNotification::ResourcesListChanged,
            notifications::RESOURCES_UPDATED => match serde_json::from_value(params.clone()) {
                Ok(updated) => ListenNotification::ResourceUpdated(updated),
                Err(_) => ListenNotification::Other {
                    method: method.to_owned(),
                    params: params.clone(),
                },
            },
            _ => ListenNotification::Other {
                method: method.to_owned(),
                params: params.clone(),
            },
        }
    }
}

/// What one open subscription has received and the application not yet read.
#[derive(Default)]
struct Queue {
    held: VecDeque<ListenNotification>,
    /// Dropped since `next` last reported it.
    lagged: u64,
    waker: Option<Waker>,
}

/// Where the one `subscriptions/listen` being opened is.
#[derive(Default)]
enum Slot {
    /// None is being opened.
    #[default]
    Free,
    /// A `listen` waits for its acknowledgement; then, its id and the filter honoured.
    Waiting {
        waker: Option<Waker>,
        acknowledged: Option<(RequestId, SubscriptionFilter)>,
    },
    /// A `listen` was dropped before its acknowledgement: its request, cancelled (dropped)
    /// when the acknowledgement comes, or forgotten when the request ends first.
    Abandoned(PendingCall),
}

#[derive(Default)]
struct Hub {
    open: HashMap<RequestId, Queue>,
    slot: Slot,
    /// `listen` calls waiting for the slot.
    waiting: Vec<Waker>,
}

impl Hub {
    fn free_slot(&mut self) {
        self.slot = Slot::Free;
        self.waiting.drain(..).for_each(Waker::wake);
    }
}

/// The open subscriptions of the clients of one builder, shared with its router.
#[derive(Clone, Default)]
struct Listens(Arc<Mutex<Hub>>);

impl fmt::Debug for Listens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listens")
            .field("open", &self.lock().open.len())
            .finish()
    }
}

/// The subscription id in a notification's `_meta`.
fn subscription_id(params: &Value) -> Option<RequestId> {
    let id = params
        .get("_meta")?
        .get("io.modelcontextprotocol/subscriptionId")?;
    serde_json::from_value(id.clone()).ok()
}

impl Listens {
    fn lock(&self) -> MutexGuard<'_, Hub> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ready once this caller holds the slot (then [`Slot::Waiting`]).
    fn poll_slot(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut hub = self.lock();
        let abandoned_ended = match &mut hub.slot {
            Slot::Free => true,
            // Its request ended (answered, refused, closed) before an acknowledgement came:
            // none comes now.
            Slot::Abandoned(call) => Pin::new(call).poll(cx).is_ready(),
            Slot::Waiting { .. } => false,
        };
        if abandoned_ended {
            hub.slot = Slot::Waiting {
                waker: None,
                acknowledged: None,
            };
            return Poll::Ready(());
        }
        hub.waiting.push(cx.waker().clone());
        Poll::Pending
    }

    /// `notifications/subscriptions/acknowledged`: the one being opened is acknowledged.
    /// One nobody waits for is ignored.
    fn acknowledged(&self, params: Value) {
        let Ok(ack) = serde_json::from_value::<SubscriptionsAcknowledgedNotificationParams>(params)
        else {
            return;
        };
        let Some(id) = ack.meta.and_then(|m| m.subscription_id) else {
            return;
        };
        let mut guard = self.lock();
        let hub = &mut *guard;
        let known = hub.open.contains_key(&id);
        let cancelled = match &mut hub.slot {
            Slot::Waiting {
                waker,
                acknowledged: acknowledged @ None,
            } if !known => {
                *acknowledged = Some((id.clone(), ack.notifications));
                if let Some(waker) = waker.take() {
                    waker.wake();
                }
                // Held from now on: what comes next on the stream is kept.
                hub.open.insert(id, Queue::default());
                return;
            }
            Slot::Abandoned(_) => match std::mem::take(&mut hub.slot) {
                Slot::Abandoned(call) => call,
                _ => return,
            },
            _ => return,
        };
        hub.free_slot();
        drop(guard);
        // Cancels the abandoned listen request (`notifications/cancelled`).
        drop(cancelled);
    }

    /// A notification a listen stream carries: held for its subscription, if it is open.
    fn deliver(&self, method: &str, params: &Value) {
        let Some(id) = subscription_id(params) else {
            return;
        };
        let mut hub = self.lock();
        let Some(queue) = hub.open.get_mut(&id) else {
            return;
        };
        if queue.held.len() >= MAX_QUEUED_NOTIFICATIONS {
            queue.held.pop_front();
            queue.lagged += 1;
        }
        queue
            .held
            .push_back(ListenNotification::decode(method, params));
        if let Some(waker) = queue.waker.take() {
            waker.wake();
        }
    }

    /// The next notification held for `id`; `cx` is woken when one comes.
    fn poll_held(&self, id: &RequestId, cx: &mut Context<'_>) -> Option<ListenNotification> {
        let mut hub = self.lock();
        let queue = hub.open.get_mut(id)?;
        if queue.lagged > 0 {
            return Some(ListenNotification::Lagged(std::mem::take(
                &mut queue.lagged,
            )));
        }
        let next = queue.held.pop_front();
        if next.is_none() {
            queue.waker = Some(cx.waker().clone());
        }
        next
    }
}

/// A `subscriptions/listen` being opened; dropped before its acknowledgement, it leaves its
/// request to be cancelled once that comes ([`Slot::Abandoned`]).
struct Opening {
    listens: Listens,
    call: Option<PendingCall>,
    /// The slot is still this opening's.
    owns: bool,
}

impl Opening {
    fn poll_acknowledged(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(RequestId, SubscriptionFilter), ClientError>> {
        let mut hub = self.listens.lock();
        let Slot::Waiting {
            waker,
            acknowledged,
        } = &mut hub.slot
        else {
            self.owns = false;
            // Not reached: the slot stays this opening's until it ends.
            return Poll::Ready(Err(ClientError::Unacknowledged));
        };
        if let Some(acknowledged) = acknowledged.take() {
            hub.free_slot();
            self.owns = false;
            return Poll::Ready(Ok(acknowledged));
        }
        *waker = Some(cx.waker().clone());
        // The router takes an acknowledgement before the answer that follows it reaches
        // the call: an answered call had none.
        let Some(call) = &mut self.call else {
            hub.free_slot();
            self.owns = false;
            return Poll::Ready(Err(ClientError::Unacknowledged));
        };
        let Poll::Ready(answer) = Pin::new(call).poll(cx) else {
            return Poll::Pending;
        };
        self.call = None;
        hub.free_slot();
        self.owns = false;
        Poll::Ready(match answer {
            Ok(_) => Err(ClientError::Unacknowledged),
            Err(e) => Err(ClientError::Call(e)),
        })
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        if !self.owns {
            // Acknowledged (and handed on) or answered: nothing left here.
            return;
        }
        let mut hub = self.listens.lock();
        let Slot::Waiting { acknowledged, .. } = &mut hub.slot else {
            return;
        };
        if let Some((id, _)) = acknowledged.take() {
            // Acknowledged, but the `listen` was dropped before it saw it.
            hub.open.remove(&id);
            hub.free_slot();
            drop(hub);
            drop(self.call.take());
            return;
        }
        match self.call.take() {
            Some(call) => hub.slot = Slot::Abandoned(call),
            None => hub.free_slot(),
        }
    }
}

/// An open `subscriptions/listen` request (2026-07-28), from [`McpClient::listen`]: the
/// notifications the server sends for it, in order, with [`next`](Self::next).
///
/// It holds at most [`MAX_QUEUED_NOTIFICATIONS`] unread notifications (past that the oldest
/// are dropped and reported, see [`ListenNotification::Lagged`]). Dropping it, or
/// [`cancel`](Self::cancel), cancels the listen request (`notifications/cancelled`; over
/// Streamable HTTP the transport closes the request's stream), and the server forgets the
/// subscription.
pub struct Subscription {
    id: RequestId,
    filter: SubscriptionFilter,
    /// The listen request, until it is answered or the connection ends.
    call: Option<PendingCall>,
    listens: Listens,
    /// Dropped notifications, in all.
    lagged: u64,
    /// Why the subscription ended, when it did otherwise than by the server's `complete`.
    error: Option<ClientError>,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("filter", &self.filter)
            .field("open", &self.call.is_some())
            .finish()
    }
}

impl Subscription {
    /// The subscription id: the listen request's id, which tags every notification of it.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// What the server acknowledged it will send: the part of the filter asked for that it
    /// honours (a kind it does not offer is left out).
    pub fn filter(&self) -> &SubscriptionFilter {
        &self.filter
    }

    /// The notifications dropped so far because the application did not read them in time
    /// (each reported once by [`next`](Self::next) as [`ListenNotification::Lagged`]).
    pub fn lagged(&self) -> u64 {
        self.lagged
    }

    /// True once the listen request has ended ([`next`](Self::next) then gives what is
    /// still held, then `None`).
    pub fn is_ended(&self) -> bool {
        self.call.is_none()
    }

    /// Why the subscription ended, once [`next`](Self::next) said `None`: `None` when the
    /// server ended it (a `complete` answer, as
    /// [`Server::end_subscriptions`](crate::server::Server::end_subscriptions) sends);
    /// [`ClientError::Call`] when the connection ended or the server answered with an
    /// error; [`ClientError::Decode`] when its answer was not a listen result.
    pub fn error(&self) -> Option<&ClientError> {
        self.error.as_ref()
    }

    /// The next notification of this subscription, in the order the server sent them;
    /// `None` once the listen request has ended (the server answered it, or the connection
    /// ended: see [`error`](Self::error)) and everything received before was read. Cancel
    /// safe: dropping the future loses nothing.
    pub async fn next(&mut self) -> Option<ListenNotification> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// [`next`](Self::next) as a poll function (for a [`Stream`] of your own: `None` once
    /// ended).
    ///
    /// [`Stream`]: https://docs.rs/futures/latest/futures/stream/trait.Stream.html
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<ListenNotification>> {
        if let Some(next) = self.listens.poll_held(&self.id, cx) {
            if let ListenNotification::Lagged(n) = next {
                self.lagged += n;
            }
            return Poll::Ready(Some(next));
        }
        let Some(call) = &mut self.call else {
            self.listens.lock().open.remove(&self.id);
            return Poll::Ready(None);
        };
        let Poll::Ready(answer) = Pin::new(call).poll(cx) else {
            return Poll::Pending;
        };
        self.call = None;
        self.error = match answer {
            Ok(result) => {
                decode::<SubscriptionsListenResult>(methods::SUBSCRIPTIONS_LISTEN, result.get())
                    .err()
            }
            Err(e) => Some(ClientError::Call(e)),
        };
        // Everything the stream carried came before its answer: read what is still held.
        self.poll_next(cx)
    }

    /// Cancels the subscription: the same as dropping it. The cancellation is queued at
    /// once; the server forgets the subscription when it reads it.
    pub fn cancel(self) {
        drop(self);
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.listens.lock().open.remove(&self.id);
        // Dropping the pending request cancels it (`notifications/cancelled`).
        drop(self.call.take());
    }
}

/// What the client reads of every stateless result first: whether it asks for input.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Round {
    result_type: Option<String>,
    input_requests: Option<InputRequests>,
    request_state: Option<String>,
}

fn page(cursor: Option<&str>) -> Value {
    match cursor {
        Some(c) => serde_json::json!({ "cursor": c }),
        None => Value::Object(JsonObject::new()),
    }
}

fn tool_params(
    name: &str,
    arguments: impl Serialize,
) -> Result<CallToolRequestParams, ClientError> {
    let arguments = match serde_json::to_value(arguments) {
        Ok(Value::Object(map)) => Some(map),
        Ok(Value::Null) => None,
        Ok(other) => {
            return Err(ClientError::Arguments(format!(
                "must be an object, not {other}"
            )))
        }
        Err(e) => return Err(ClientError::Arguments(e.to_string())),
    };
    Ok(CallToolRequestParams::new(name, arguments))
}

/// What the client remembers of one tool with `x-mcp-header` marks.
#[derive(Debug, Clone)]
enum Marks {
    Mirrors(Arc<[ParamHeader]>),
    Rejected(String),
}

/// The `x-mcp-header` marks (SEP-2243) of the tools a client listed on the stateless
/// revision, by tool name, and the `Mcp-Param-*` headers they give each `tools/call`. A
/// shared handle (cheap to clone): the typed client fills it from its `tools/list` pages
/// ([`McpClient::list_tools`], [`McpClient::all_tools`]); the HTTP transport asks it, for
/// each `tools/call` it POSTs, which headers to add ([`for_frame`](Self::for_frame)). Tools
/// without marks are not remembered; a call of one (or of a tool never listed) has no
/// such header.
#[derive(Clone, Default)]
pub struct ParamHeaders {
    tools: Arc<Mutex<HashMap<String, Marks>>>,
}

impl fmt::Debug for ParamHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("ParamHeaders")
            .field("tools", &tools.len())
            .finish()
    }
}

impl ParamHeaders {
    /// The marks of `tool`, if it has any (or was rejected).
    fn marks(&self, tool: &str) -> Option<Marks> {
        let tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        if tools.is_empty() {
            return None;
        }
        tools.get(tool).cloned()
    }

    /// Why the listing rejected `tool` ([`Tool::param_headers`]), if it did.
    pub fn rejection(&self, tool: &str) -> Option<String> {
        match self.marks(tool)? {
            Marks::Rejected(reason) => Some(reason),
            Marks::Mirrors(_) => None,
        }
    }

    /// The arguments `tool` mirrors in headers (empty for a tool without marks, rejected or
    /// never listed).
    pub fn mirrors(&self, tool: &str) -> Vec<ParamHeader> {
        match self.marks(tool) {
            Some(Marks::Mirrors(mirrors)) => mirrors.to_vec(),
            _ => Vec::new(),
        }
    }

    /// Remembers the marks of `tools` (replacing all remembered before when `afresh`) and
    /// returns the tools that keep to the rules.
    fn screen(&self, tools: Vec<Tool>, afresh: bool) -> Result<Vec<Tool>, ClientError> {
        // The schemas are read before the lock is taken: a transport asking for a call's
        // headers meanwhile does not wait on a long listing.
        let mut kept = Vec::with_capacity(tools.len());
        let mut changes = Vec::new();
        for tool in tools {
            match tool.param_headers() {
                Ok(mirrors) if mirrors.is_empty() => {
                    if !afresh {
                        changes.push((tool.name.clone(), None));
                    }
                    kept.push(tool);
                }
                Ok(mirrors) => {
                    changes.push((tool.name.clone(), Some(Marks::Mirrors(mirrors.into()))));
                    kept.push(tool);
                }
                Err(reason) => changes.push((tool.name, Some(Marks::Rejected(reason)))),
            }
        }
        let mut fresh = HashMap::new();
        let mut remembered = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        let marks = if afresh { &mut fresh } else { &mut *remembered };
        for (name, entry) in changes {
            match entry {
                None => {
                    marks.remove(&name);
                }
                Some(_) if marks.len() >= MAX_ITEMS && !marks.contains_key(&name) => {
                    return Err(ClientError::TooManyPages(methods::TOOLS_LIST));
                }
                Some(entry) => {
                    marks.insert(name, entry);
                }
            }
        }
        if afresh {
            *remembered = fresh;
        }
        Ok(kept)
    }

    /// Whether a `tools/call` of `tool` with `arguments` may be sent: not a rejected tool,
    /// and every mirrored argument something a header carries.
    fn check(&self, tool: &str, arguments: Option<&JsonObject>) -> Result<(), ClientError> {
        match self.marks(tool) {
            None => Ok(()),
            Some(Marks::Rejected(reason)) => Err(ClientError::RejectedTool {
                name: tool.to_owned(),
                reason,
            }),
            Some(Marks::Mirrors(mirrors)) => {
                let Some(arguments) = arguments else {
                    return Ok(());
                };
                for mirror in mirrors.iter() {
                    if let Some(value) = mirror.argument(arguments) {
                        if ParamHeader::header_text(value).is_err() {
                            return Err(ClientError::Arguments(format!(
                                "{} is mirrored in Mcp-Param-{} and must be a string, a boolean \
                                 or an integer within ±(2^53−1), not {value}",
                                mirror.path.join("."),
                                mirror.header
                            )));
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// The `Mcp-Param-<Name>` headers of a `tools/call` of `tool` with `arguments`: name and
    /// value (encoded with [`sansrpc::streamable::encode_header_value`]: plain when it is
    /// visible ASCII with inner spaces only, else `=?base64?…?=`), one per marked argument
    /// present and not null. Empty (and not allocated) for a tool without marks.
    pub fn for_call(&self, tool: &str, arguments: Option<&JsonObject>) -> Vec<(String, String)> {
        let (Some(Marks::Mirrors(mirrors)), Some(arguments)) = (self.marks(tool), arguments) else {
            return Vec::new();
        };
        mirrors
            .iter()
            .filter_map(|mirror| {
                let value = ParamHeader::header_text(mirror.argument(arguments)?).ok()??;
                Some((
                    format!("Mcp-Param-{}", mirror.header),
                    sansrpc::streamable::encode_header_value(&value),
                ))
            })
            .collect()
    }

    /// [`for_call`](Self::for_call) of the request a transport sends (a JSON-RPC message's
    /// bytes): the `Mcp-Param-*` headers of a `tools/call`, nothing for anything else. When
    /// no tool has marks it returns at once, without reading the frame.
    pub fn for_frame(&self, frame: &[u8]) -> Vec<(String, String)> {
        #[derive(serde::Deserialize)]
        struct Frame<'a> {
            #[serde(borrow)]
            method: Option<Cow<'a, str>>,
            #[serde(borrow)]
            params: Option<Params<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(borrow)]
            name: Option<Cow<'a, str>>,
            #[serde(borrow)]
            arguments: Option<&'a serde_json::value::RawValue>,
        }
        if self
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
        {
            return Vec::new();
        }
        let Ok(Frame {
            method: Some(method),
            params:
                Some(Params {
                    name: Some(name),
                    arguments,
                }),
        }) = serde_json::from_slice::<Frame<'_>>(frame)
        else {
            return Vec::new();
        };
        if method != methods::TOOLS_CALL || !matches!(self.marks(&name), Some(Marks::Mirrors(_))) {
            return Vec::new();
        }
        let arguments = arguments.and_then(|a| serde_json::from_str::<JsonObject>(a.get()).ok());
        self.for_call(&name, arguments.as_ref())
    }
}
