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
//! use sansrpc::endpoint::{Config, Profile};
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

use crate::raw_json;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sansrpc::{ErrorObject, RawValue};
use sansrpc_futures::{AsyncRouter, BoxFuture, CallError, Client};
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
    LoggingLevel, Prompt, ReadResourceResult, Reference, Resource, ResourceTemplate, Root,
    RootsCapability, SamplingCapability, Tool,
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
    pub fn on_notification<F>(mut self, handler: F) -> Self
    where
        F: Fn(&str, &Value) + Send + Sync + 'static,
    {
        self.notifications = Some(Arc::new(handler));
        self
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
    /// # Panics
    /// When `router` already has one of the methods.
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
        if let Some(handler) = self.notifications.clone() {
            for &method in notifications::SERVER_2025_11_25 {
                if method == notifications::CANCELLED {
                    // The connection handles cancellation of the server's requests itself.
                    continue;
                }
                let handler = handler.clone();
                let r = router.raw_notification(method, move |params| {
                    let value = params
                        .and_then(|p| serde_json::from_str(p.get()).ok())
                        .unwrap_or_else(|| Value::Object(JsonObject::new()));
                    handler(method, &value);
                    async {}
                });
                registered(r, method);
            }
        }
    }

    /// The MCP handshake on `client`'s connection: `initialize` with this client's
    /// identity and capabilities, a check that the server chose a revision this client
    /// speaks, then `notifications/initialized`.
    pub async fn initialize(&self, client: Client) -> Result<McpClient, ClientError> {
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
            client,
            init,
            roots: self.roots.clone(),
            stateless: None,
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
    /// The methods 2026-07-28 removed (`ping`, `logging/setLevel`,
    /// `resources/subscribe`) are refused by such a server with -32601.
    pub async fn discover(&self, client: Client) -> Result<McpClient, ClientError> {
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
            client,
            init,
            roots: self.roots.clone(),
            stateless: Some(Arc::new(Stateless {
                meta: self.request_meta(&chosen),
                answers: self.clone(),
            })),
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
#[derive(Clone, Debug)]
pub struct McpClient {
    client: Client,
    init: InitializeResult,
    roots: Option<Arc<Mutex<Vec<Root>>>>,
    /// On the stateless revision (2026-07-28): what every request carries, and how the
    /// client answers the server's input requests.
    stateless: Option<Arc<Stateless>>,
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

    /// `ping`.
    pub async fn ping(&self) -> Result<(), ClientError> {
        self.request::<JsonObject>(methods::PING, &JsonObject::new())
            .await
            .map(drop)
    }

    /// One page of `tools/list` (`cursor` from the previous page's `next_cursor`).
    pub async fn list_tools(&self, cursor: Option<&str>) -> Result<ListToolsResult, ClientError> {
        self.request(methods::TOOLS_LIST, &page(cursor)).await
    }

    /// Every tool, following the cursors (at most [`MAX_PAGES`] pages).
    pub async fn all_tools(&self) -> Result<Vec<Tool>, ClientError> {
        self.all(methods::TOOLS_LIST, |page: ListToolsResult| {
            (page.tools, page.next_cursor)
        })
        .await
    }

    /// `tools/call` of `name` with `arguments` (a struct or a JSON object; `()` for none).
    /// A tool's own failure is a result with `is_error`, not an `Err`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, ClientError> {
        self.request(methods::TOOLS_CALL, &tool_params(name, arguments)?)
            .await
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
        let mut params =
            serde_json::to_value(tool_params(name, arguments)?).expect("MCP types serialize");
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
