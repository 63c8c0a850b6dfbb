//! [`ClientBuilder`]: who the client is, the handlers that answer the server, the
//! handshake (`initialize`, `discover`) that makes an [`McpClient`].

use super::*;

type Answer = BoxFuture<Result<Box<RawValue>, ErrorObject<'static>>>;
/// The sampling handler on the request's params as JSON text: it decodes them (into the
/// handler's own type, so that a client without a handler carries no decoder for the
/// sampling types), runs the handler and writes its answer.
type SamplingFn = dyn Fn(&str) -> Result<Answer, serde_json::Error> + Send + Sync;
/// The elicitation handler as [`SamplingFn`] is the sampling one; `true` when the client
/// declared URL mode (a URL-mode request is refused without it).
type ElicitationFn = dyn Fn(&str, bool) -> Result<Answer, Refusal> + Send + Sync;
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
    /// How the answer to `roots/list` is written, set with the roots ([`roots_result`]).
    roots_result: Option<RootsResult>,
    notifications: Option<Arc<NotificationFn>>,
    param_headers: ParamHeaders,
    /// The open `subscriptions/listen` requests of the clients this builder starts.
    listens: Listens,
    /// Told of each new session started after the server lost one.
    pub(super) renewed: Option<Arc<retry::RenewedFn>>,
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

/// Why a handler of the server's requests did not run.
enum Refusal {
    /// Its params are not what the method takes.
    Params(serde_json::Error),
    /// A URL-mode elicitation, which this client did not declare.
    UrlMode,
}

impl Refusal {
    /// The error the server's request is answered with.
    fn error(self) -> ErrorObject<'static> {
        match self {
            Refusal::Params(e) => {
                ErrorObject::new(error_codes::INVALID_PARAMS, format!("invalid params: {e}"))
            }
            Refusal::UrlMode => ErrorObject::new(
                error_codes::INVALID_PARAMS,
                "URL-mode elicitation was not declared by this client",
            ),
        }
    }
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
            roots_result: None,
            notifications: None,
            param_headers: ParamHeaders::default(),
            listens: Listens::default(),
            renewed: None,
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
        self.sampling = Some(Arc::new(move |params: &str| {
            let answer = handler(serde_json::from_str(params)?);
            Ok(Box::pin(async move { Ok(raw_json(&answer.await?)) }) as Answer)
        }));
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
        self.elicitation = Some(Arc::new(move |params: &str, url: bool| {
            let params: ElicitRequestParams =
                serde_json::from_str(params).map_err(Refusal::Params)?;
            if matches!(params, ElicitRequestParams::Url(_)) && !url {
                return Err(Refusal::UrlMode);
            }
            let answer = handler(params);
            Ok(Box::pin(async move { Ok(raw_json(&answer.await?)) }) as Answer)
        }));
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
        self.roots_result = Some(roots_result);
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

    /// Called each time a client this builder initialized starts a new session because the
    /// server lost its session (HTTP 404 to a request carrying its `Mcp-Session-Id`), with
    /// the server's answer to the new `initialize`; the call that met the 404 is then sent
    /// again (see [`retry`](super::retry)). [`McpClient::session_renewals`] counts them.
    pub fn on_session_renewed<F>(mut self, handler: F) -> Self
    where
        F: Fn(&InitializeResult) + Send + Sync + 'static,
    {
        self.renewed = Some(Arc::new(handler));
        self
    }

    /// The `x-mcp-header` marks (SEP-2243) of the tools the clients this builder starts
    /// (and its clones) have listed, shared: give it to the HTTP transport, which asks it
    /// for the `Mcp-Param-*` headers of each `tools/call` (with
    /// `sansrpc_mcp::tokio::Connect::headers_for`). One builder per server: the
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

    /// [`capabilities`](Self::capabilities) as JSON: the object its `Serialize` writes,
    /// made here so that a client does not carry the writers of every capability type (a
    /// browser page's MCP client: 3.6 KB). The members are the ones `capabilities` sets.
    fn capabilities_json(&self) -> Value {
        let mut caps = JsonObject::new();
        if self.sampling.is_some() {
            caps.insert("sampling".into(), Value::Object(JsonObject::new()));
        }
        if self.elicitation.is_some() {
            let mut modes = JsonObject::new();
            modes.insert("form".into(), Value::Object(JsonObject::new()));
            if self.url_elicitation {
                modes.insert("url".into(), Value::Object(JsonObject::new()));
            }
            caps.insert("elicitation".into(), Value::Object(modes));
        }
        if self.roots.is_some() {
            let mut roots = JsonObject::new();
            roots.insert("listChanged".into(), Value::Bool(true));
            caps.insert("roots".into(), Value::Object(roots));
        }
        Value::Object(caps)
    }

    /// The client's `Implementation` as JSON: [`implementation_json`].
    fn info_json(&self) -> Value {
        implementation_json(&self.info)
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
        let answerer = Arc::new(self.answerer());
        for method in answerer.answered() {
            let answerer = Arc::clone(&answerer);
            let r = router.raw_method(method, move |params| {
                // Each method registered is one `answer` takes.
                let answer = answerer.answer(method, params);
                answer.unwrap_or_else(|| Box::pin(async { Err(ErrorObject::method_not_found()) }))
            });
            registered(r, method);
        }
        for (method, optional) in answerer.heard() {
            let answerer = Arc::clone(&answerer);
            let r = router.raw_notification(method, move |params| {
                answerer.hear(method, params.as_deref());
                async {}
            });
            match r {
                // Left to the application's own handler (documented above).
                Err(_) if optional => {}
                r => registered(r, method),
            }
        }
    }

    /// What this client answers of the server's requests (`ping`, and sampling,
    /// elicitation and roots when it has their handlers) and hears of its notifications,
    /// for a connection with no router of its own:
    /// [`sansrpc_futures::Builder::connect_answering`], or
    /// `sansrpc_mcp::wasm::connect_answering` in a browser page, whose driver then carries
    /// none of the router's serving code. The same handlers as [`mount`](Self::mount)'s.
    pub fn answers(&self) -> Arc<dyn sansrpc_futures::Answers> {
        Arc::new(self.answerer())
    }

    fn answerer(&self) -> Answerer {
        Answerer {
            sampling: self.sampling.clone(),
            elicitation: self.elicitation.clone(),
            url_elicitation: self.url_elicitation,
            roots: self.roots.clone().zip(self.roots_result),
            notifications: self.notifications.clone(),
            listens: self.listens.clone(),
        }
    }

    /// The MCP handshake on `client`'s connection: `initialize` with this client's
    /// identity and capabilities, a check that the server chose a revision this client
    /// speaks, then `notifications/initialized`.
    ///
    /// `client` is the connection's [`Client`], by value or borrowed, or anything that
    /// lends one: every connection of `sansrpc-tokio` does (`&conn` for a
    /// `sansrpc_tokio::Spawned`, from `sansrpc_mcp::tokio::connect` or `spawn`, and for a
    /// `ChildProcess`, from `spawn_child`). The [`McpClient`] keeps its own handle.
    ///
    /// Over Streamable HTTP, when the server loses the session later (HTTP 404), the client
    /// starts a new one by itself and sends the call again: see [`retry`](super::retry).
    pub async fn initialize(&self, client: impl AsRef<Client>) -> Result<McpClient, ClientError> {
        let client = client.as_ref().clone();
        let init = self.handshake(&client).await?;
        let failures = client.local::<TransportFailures>();
        Ok(McpClient {
            _closer: Arc::new(Closer(client.clone())),
            client,
            init,
            roots: self.roots.clone(),
            stateless: None,
            param_headers: self.param_headers.clone(),
            listens: self.listens.clone(),
            renewal: Some(Arc::new(Renewal::new(self))),
            idempotent: Arc::default(),
            failures,
        })
    }

    /// `initialize`, its check, `notifications/initialized`.
    pub(super) async fn handshake(&self, client: &Client) -> Result<InitializeResult, ClientError> {
        // The object `json!` made of them, without its writer of each value into a `Value`.
        let mut params = JsonObject::new();
        params.insert("protocolVersion".into(), Value::from(self.version.as_str()));
        params.insert("capabilities".into(), self.capabilities_json());
        params.insert("clientInfo".into(), self.info_json());
        let params = Value::Object(params);
        let failures = client.local::<TransportFailures>();
        let seen = failures.count();
        let result = client
            .call_raw(methods::INITIALIZE, Some(&raw_json(&params)))
            .await
            .map_err(|e| ClientError::of_call(methods::INITIALIZE, e, &failures, seen))?;
        let init: InitializeResult = decode(methods::INITIALIZE, result.get())?;
        if !version::HANDSHAKE.contains(&init.protocol_version.as_str()) {
            return Err(ClientError::Version(init.protocol_version));
        }
        client.notify_raw(notifications::INITIALIZED, None).await?;
        Ok(init)
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
            self.capabilities_json(),
        );
        meta.insert(
            "io.modelcontextprotocol/clientInfo".into(),
            self.info_json(),
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
        let failures = client.local::<TransportFailures>();
        let result = loop {
            let params = serde_json::json!({ "_meta": self.request_meta(&chosen) });
            let seen = failures.count();
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
                Err(e) => {
                    return Err(ClientError::of_call(
                        methods::SERVER_DISCOVER,
                        e,
                        &failures,
                        seen,
                    ))
                }
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
                rounds: McpClient::rounds,
                screen: ParamHeaders::screen,
            })),
            param_headers: self.param_headers.clone(),
            listens: self.listens.clone(),
            renewal: None,
            idempotent: Arc::default(),
            failures,
        })
    }

    /// Fulfils one of the server's input requests (`{"method": …, "params": …}`) with this
    /// client's handlers: its params decoded for the handler there is (a round of
    /// `method`'s call).
    pub(super) async fn answer(
        &self,
        method: &'static str,
        request: Value,
    ) -> Result<Value, ClientError> {
        let refused = |e: ErrorObject<'static>| ClientError::Call(CallError::Rpc(e));
        let undecoded = |error| ClientError::Decode { method, error };
        let Value::Object(mut request) = request else {
            let e = "an input request that is not an object";
            return Err(undecoded(serde::de::Error::custom(e)));
        };
        let Some(Value::String(name)) = request.remove("method") else {
            return Err(undecoded(serde::de::Error::missing_field("method")));
        };
        // As text, for the handler's own decoder (`null` is none).
        let params = request
            .remove("params")
            .filter(|p| !p.is_null())
            .map(|p| p.to_string());
        let params = || {
            let params = params.as_deref();
            params.ok_or_else(|| undecoded(serde::de::Error::missing_field("params")))
        };
        let answer = match name.as_str() {
            methods::ELICITATION_CREATE => {
                let Some(elicitation) = &self.elicitation else {
                    return Err(ClientError::Unanswerable(
                        methods::ELICITATION_CREATE.into(),
                    ));
                };
                match elicitation(params()?, self.url_elicitation) {
                    Ok(answer) => answer,
                    Err(Refusal::Params(error)) => return Err(undecoded(error)),
                    Err(Refusal::UrlMode) => {
                        return Err(ClientError::Unanswerable(
                            "elicitation/create (URL mode)".into(),
                        ))
                    }
                }
            }
            methods::SAMPLING_CREATE_MESSAGE => {
                let Some(sampling) = &self.sampling else {
                    return Err(ClientError::Unanswerable(
                        methods::SAMPLING_CREATE_MESSAGE.into(),
                    ));
                };
                sampling(params()?).map_err(undecoded)?
            }
            methods::ROOTS_LIST => {
                // Checked before it is answered.
                if let Ok(params) = params() {
                    let _: ListRootsRequestParams =
                        serde_json::from_str(params).map_err(undecoded)?;
                }
                let Some(roots) = &self.roots else {
                    return Err(ClientError::Unanswerable(methods::ROOTS_LIST.into()));
                };
                let roots = roots.lock().unwrap_or_else(PoisonError::into_inner).clone();
                return Ok(serde_json::to_value(ListRootsResult {
                    meta: None,
                    roots,
                    extra: JsonObject::new(),
                })
                .expect("MCP types serialize"));
            }
            _ => return Err(ClientError::Unanswerable(name)),
        };
        let answer = answer.await.map_err(refused)?;
        serde_json::from_str(answer.get()).map_err(undecoded)
    }
}

/// The client's handlers of the server's requests and notifications, as
/// [`ClientBuilder::mount`] registers them and [`ClientBuilder::answers`] gives them.
struct Answerer {
    sampling: Option<Arc<SamplingFn>>,
    elicitation: Option<Arc<ElicitationFn>>,
    url_elicitation: bool,
    roots: Option<(Arc<Mutex<Vec<Root>>>, RootsResult)>,
    notifications: Option<Arc<NotificationFn>>,
    listens: Listens,
}

/// [`roots_result`], as the builder holds it.
type RootsResult = fn(Vec<Root>) -> Box<RawValue>;

/// The answer to `roots/list` with `roots`: reached through the builder, which
/// [`ClientBuilder::roots`] sets, so a client without roots carries no writer for it (4.2 KB
/// of a browser page).
fn roots_result(roots: Vec<Root>) -> Box<RawValue> {
    raw_json(&ListRootsResult {
        meta: None,
        roots,
        extra: JsonObject::new(),
    })
}

impl Answerer {
    /// The server's requests answered: `ping`, and those with a handler.
    fn answered(&self) -> impl Iterator<Item = &'static str> {
        [
            Some(methods::PING),
            self.sampling
                .as_ref()
                .map(|_| methods::SAMPLING_CREATE_MESSAGE),
            self.elicitation
                .as_ref()
                .map(|_| methods::ELICITATION_CREATE),
            self.roots.as_ref().map(|_| methods::ROOTS_LIST),
        ]
        .into_iter()
        .flatten()
    }

    /// The answer to the server's request `method`, `None` for one not answered (the
    /// server gets `-32601`).
    fn answer(&self, method: &str, params: Option<Box<RawValue>>) -> Option<Answer> {
        let json = params.as_deref().map_or("{}", RawValue::get);
        let answer = match method {
            methods::PING => return Some(Box::pin(async { Ok(raw_json(&JsonObject::new())) })),
            methods::SAMPLING_CREATE_MESSAGE => self
                .sampling
                .as_ref()
                .map(|sampling| sampling(json).map_err(|e| Refusal::Params(e).error())),
            methods::ELICITATION_CREATE => self
                .elicitation
                .as_ref()
                .map(|elicitation| elicitation(json, self.url_elicitation).map_err(Refusal::error)),
            methods::ROOTS_LIST => self.roots.as_ref().map(|(roots, write)| {
                let roots = roots.lock().unwrap_or_else(PoisonError::into_inner).clone();
                let write = *write;
                Ok(Box::pin(async move { Ok(write(roots)) }) as Answer)
            }),
            _ => None,
        };
        Some(answer?.unwrap_or_else(|e| Box::pin(async move { Err(e) })))
    }

    /// The server's notifications heard, each with whether the application's own handler
    /// may have it instead (one of the listen stream's, with no
    /// [`on_notification`](ClientBuilder::on_notification) handler here).
    fn heard(&self) -> impl Iterator<Item = (&'static str, bool)> + '_ {
        notifications::SERVER_2025_11_25
            .iter()
            .chain([&notifications::SUBSCRIPTIONS_ACKNOWLEDGED])
            .copied()
            // The connection handles cancellation of the server's requests itself.
            .filter(|&method| method != notifications::CANCELLED)
            .filter_map(|method| {
                let listen = LISTEN_METHODS.contains(&method);
                let acknowledged = method == notifications::SUBSCRIPTIONS_ACKNOWLEDGED;
                let handled = self.notifications.is_some() && !acknowledged;
                (handled || listen || acknowledged).then_some((method, !handled))
            })
    }

    /// The server's notification `method`, to the listen streams and the application's
    /// handler; one this client does not hear is dropped.
    fn hear(&self, method: &str, params: Option<&RawValue>) {
        let Some((method, _)) = self.heard().find(|(m, _)| *m == method) else {
            return;
        };
        // The listen streams read their typed params from the text, not from the `Value`: a
        // typed decoder instantiated for `serde_json::Value` too is code a browser page
        // carries twice.
        let text = params.map_or("{}", RawValue::get);
        if method == notifications::SUBSCRIPTIONS_ACKNOWLEDGED {
            self.listens.take(method, text, None);
            return;
        }
        let value = serde_json::from_str(text).unwrap_or_else(|_| Value::Object(JsonObject::new()));
        if LISTEN_METHODS.contains(&method) {
            self.listens.take(method, text, Some(&value));
        }
        if let Some(handler) = &self.notifications {
            handler(method, &value);
        }
    }
}

impl sansrpc_futures::Answers for Answerer {
    fn request(&self, method: &str, params: Option<Box<RawValue>>) -> Option<Answer> {
        self.answer(method, params)
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        self.hear(method, params);
    }
}

/// An `Implementation` as JSON: the object its `Serialize` writes (the members that are set,
/// in its order), made here so that a client does not carry the writers of `Implementation`
/// and `Icon` (a browser page's MCP client: KBs).
fn implementation_json(info: &Implementation) -> Value {
    fn put(object: &mut JsonObject, key: &str, value: &Option<String>) {
        if let Some(value) = value {
            object.insert(key.into(), Value::String(value.clone()));
        }
    }
    let mut object = JsonObject::new();
    object.insert("name".into(), Value::String(info.name.clone()));
    put(&mut object, "title", &info.title);
    object.insert("version".into(), Value::String(info.version.clone()));
    put(&mut object, "description", &info.description);
    if let Some(icons) = &info.icons {
        let icons = icons.iter().map(|icon| {
            let mut o = JsonObject::new();
            o.insert("src".into(), Value::String(icon.src.clone()));
            put(&mut o, "mimeType", &icon.mime_type);
            if let Some(sizes) = &icon.sizes {
                let sizes = sizes.iter().map(|s| Value::String(s.clone())).collect();
                o.insert("sizes".into(), Value::Array(sizes));
            }
            if let Some(theme) = icon.theme {
                let theme = match theme {
                    crate::types::IconTheme::Light => "light",
                    crate::types::IconTheme::Dark => "dark",
                };
                o.insert("theme".into(), Value::String(theme.into()));
            }
            Value::Object(o)
        });
        object.insert("icons".into(), Value::Array(icons.collect()));
    }
    put(&mut object, "websiteUrl", &info.website_url);
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `capabilities_json` writes what `capabilities`' `Serialize` writes, for every set of
    /// handlers.
    #[test]
    fn capabilities_json_is_what_capabilities_serialize() {
        for mask in 0..16u8 {
            let mut builder = ClientBuilder::new("c", "1");
            if mask & 1 != 0 {
                builder = builder.on_sampling(|_| async { Err(ErrorObject::method_not_found()) });
            }
            if mask & 2 != 0 {
                builder =
                    builder.on_elicitation(|_| async { Err(ErrorObject::method_not_found()) });
            }
            if mask & 4 != 0 {
                builder = builder.url_elicitation();
            }
            if mask & 8 != 0 {
                builder = builder.roots(Vec::new());
            }
            let serialized = serde_json::to_value(builder.capabilities()).unwrap();
            assert_eq!(
                builder.capabilities_json(),
                serialized,
                "handlers {mask:04b}"
            );
            assert_eq!(
                builder.capabilities_json().to_string(),
                serialized.to_string(),
                "handlers {mask:04b}"
            );
        }
    }

    /// `implementation_json` writes what `Implementation`'s `Serialize` writes: the
    /// builder's, and others with every member (icons with and without theirs).
    #[test]
    fn implementation_json_is_what_implementation_serializes() {
        use crate::types::{Icon, IconTheme};
        let mut infos = vec![
            ClientBuilder::new("c", "1").info,
            ClientBuilder::new("", "").info,
            ClientBuilder::new("a \"b\"\n", "2.0.0-rc.1").info,
        ];
        let icon = |theme| Icon {
            src: "data:image/png;base64,aGk=".into(),
            mime_type: Some("image/png".into()),
            sizes: Some(vec!["48x48".into(), "any".into()]),
            theme,
        };
        infos.push(Implementation {
            name: "n".into(),
            title: Some("T".into()),
            version: "1".into(),
            description: Some("d".into()),
            icons: Some(vec![
                icon(Some(IconTheme::Light)),
                icon(Some(IconTheme::Dark)),
                icon(None),
                Icon {
                    src: "s".into(),
                    ..Default::default()
                },
                Icon {
                    src: "s".into(),
                    sizes: Some(Vec::new()),
                    ..Default::default()
                },
            ]),
            website_url: Some("https://example.com".into()),
        });
        infos.push(Implementation {
            icons: Some(Vec::new()),
            website_url: Some(String::new()),
            ..Implementation::new("n", "v")
        });
        for info in infos {
            let serialized = serde_json::to_value(&info).unwrap();
            assert_eq!(implementation_json(&info), serialized, "{info:?}");
            assert_eq!(
                implementation_json(&info).to_string(),
                serialized.to_string()
            );
        }
    }
}
