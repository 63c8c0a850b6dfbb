//! [`McpClient`]: the typed calls of an initialized session (or a stateless client).

use super::*;

/// An initialized session with an MCP server: typed calls. Cheap to clone; dropping a call's
/// future cancels the request (`notifications/cancelled`).
///
/// [`close`](Self::close) ends the session and the connection: over Streamable HTTP
/// (`sansrpc_mcp::tokio`) the transport ends the session with a `DELETE` first. Over
/// Streamable HTTP, when the last clone is dropped without it, the same close starts by
/// itself, in the background, best-effort (the connection's driver does it; nothing waits
/// for it; other handles on the connection then fail as closed). Other connections (a
/// child process: its own `shutdown` ends it) are left as they are when the last clone
/// goes ([`CloseWithSession`] marks the ones that close).
#[derive(Clone, Debug)]
pub struct McpClient {
    /// Closes the connection when the last clone goes (held for its `Drop`).
    pub(super) _closer: Arc<Closer>,
    pub(super) client: Client,
    pub(super) init: InitializeResult,
    pub(super) roots: Option<Arc<Mutex<Vec<Root>>>>,
    /// On the stateless revision (2026-07-28): what every request carries, and how the
    /// client answers the server's input requests.
    pub(super) stateless: Option<Arc<Stateless>>,
    /// The `x-mcp-header` marks of the tools listed (shared with the builder).
    pub(super) param_headers: ParamHeaders,
    /// The open `subscriptions/listen` requests (shared with the builder's router).
    pub(super) listens: Listens,
    /// On a session: how to start a new one when the server lost it.
    pub(super) renewal: Option<Arc<Renewal>>,
    /// The tools listed with `idempotentHint: true`: sent again after a cut connection.
    pub(super) idempotent: Arc<Idempotent>,
    /// The causes the transport recorded for the exchanges it could not make.
    pub(super) failures: Arc<TransportFailures>,
}

/// Asks the connection to close when dropped (with the last [`McpClient`] clone).
#[derive(Debug)]
pub(super) struct Closer(pub(super) Client);

impl Drop for Closer {
    fn drop(&mut self) {
        // Only where the transport asks for it (an HTTP session); the close is asked when
        // `close` is called, its future only waits for the end.
        if self.0.local::<CloseWithSession>().is_set() {
            drop(self.0.close());
        }
    }
}

/// A client on the stateless revision.
#[derive(Debug)]
pub(super) struct Stateless {
    /// `_meta` of every request: the revision, the client's capabilities and identity.
    pub(super) meta: JsonObject,
    /// The handlers that answer `input_required` rounds.
    pub(super) answers: ClientBuilder,
    /// [`McpClient::rounds`] and [`ParamHeaders::screen`], reached through here: only
    /// [`ClientBuilder::discover`] sets them, so a program that never calls it carries
    /// neither the rounds (the answers' decoders) nor the screening of `x-mcp-header` marks
    /// (31 KB of a browser page).
    pub(super) rounds: Rounds,
    pub(super) screen: Screen,
}

/// [`McpClient::rounds`], as [`Stateless`] holds it.
pub(super) type Rounds = for<'a> fn(
    &'a McpClient,
    &'a Stateless,
    &'static str,
    Value,
    Option<(i64, Duration, Duration)>,
) -> Pin<
    Box<dyn Future<Output = Result<Box<RawValue>, ClientError>> + Send + 'a>,
>;

/// [`ParamHeaders::screen`], as [`Stateless`] holds it.
pub(super) type Screen = fn(&ParamHeaders, Vec<Tool>, bool) -> Result<Vec<Tool>, ClientError>;

impl McpClient {
    /// Ends the session and closes the connection, and waits until it is closed: the
    /// handlers in flight get the connection's `end_grace`, pending calls fail as closed,
    /// then the transport closes; over Streamable HTTP (`sansrpc_mcp::tokio`) that
    /// sends the session's `DELETE` and waits for its answer, at most a second. Every
    /// handle on the connection fails from then on. A child process is shut down with its
    /// own `shutdown(grace)` (MCP's stdio rules: close stdin, wait, kill).
    pub async fn close(&self) {
        self.client.close().await;
    }

    /// The server's answer to `initialize`: its identity, capabilities, instructions and
    /// the revision it chose. The first one: the answers of the sessions started after the
    /// server lost one go to [`ClientBuilder::on_session_renewed`].
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

    /// How many new sessions the client started because the server lost the last one
    /// (HTTP 404; see [`retry`](super::retry) and [`ClientBuilder::on_session_renewed`]).
    /// Always 0 on the stateless revision.
    pub fn session_renewals(&self) -> u64 {
        self.renewal
            .as_ref()
            .map_or(0, |r| r.generation.load(Ordering::Acquire))
    }

    /// True when `method` (with `params`) may be sent twice: a read-only method, or a
    /// `tools/call` of a tool listed with `idempotentHint: true`.
    fn idempotent(&self, method: &str, params: &Value) -> bool {
        retry::is_read_only(method)
            || (method == methods::TOOLS_CALL
                && params
                    .get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|name| self.idempotent.contains(name)))
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
        params: Value,
        progress: Option<(i64, Duration, Duration)>,
    ) -> Result<Box<RawValue>, ClientError> {
        if self.is_stateless() && methods::REMOVED_IN_2026_07_28.contains(&method) {
            return Err(ClientError::SessionOnly(method));
        }
        let Some(stateless) = &self.stateless else {
            let idempotent = self.idempotent(method, &params);
            let mut attempts = retry::Attempts::default();
            return self
                .send(method, &params, progress, idempotent, &mut attempts)
                .await;
        };
        (stateless.rounds)(self, stateless, method, params, progress).await
    }

    /// [`call`](Self::call) on the stateless revision: with the request `_meta` and as
    /// many `input_required` rounds as the server needs (at most [`MAX_ROUNDS`]).
    pub(super) fn rounds<'a>(
        &'a self,
        stateless: &'a Stateless,
        method: &'static str,
        mut params: Value,
        progress: Option<(i64, Duration, Duration)>,
    ) -> Pin<Box<dyn Future<Output = Result<Box<RawValue>, ClientError>> + Send + 'a>> {
        Box::pin(async move {
            let idempotent = self.idempotent(method, &params);
            let mut attempts = retry::Attempts::default();
            if let Value::Object(map) = &mut params {
                let meta = map
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(JsonObject::new()));
                if let Value::Object(meta) = meta {
                    meta.extend(stateless.meta.clone());
                }
            }
            for _ in 0..MAX_ROUNDS {
                let result = self
                    .send(method, &params, progress, idempotent, &mut attempts)
                    .await?;
                let round: Round = decode(method, result.get())?;
                if round.result_type.as_deref() != Some("input_required") {
                    return Ok(result);
                }
                let mut answers = JsonObject::new();
                for (key, request) in round.input_requests.unwrap_or_default() {
                    answers.insert(key, stateless.answers.answer(method, request).await?);
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
        })
    }

    /// Sends one request, and again after a lost session or a cut connection where the
    /// rules of [`retry`](super::retry) allow it (`attempts` counts for the whole call).
    async fn send(
        &self,
        method: &'static str,
        params: &Value,
        progress: Option<(i64, Duration, Duration)>,
        idempotent: bool,
        attempts: &mut retry::Attempts,
    ) -> Result<Box<RawValue>, ClientError> {
        let params = raw_json(params);
        loop {
            // The session this sending goes on: a renewal since is another call's.
            let seen = self
                .renewal
                .as_ref()
                .map_or(0, |r| r.generation.load(Ordering::Acquire));
            let failed_before = self.failures.count();
            let pending = match progress {
                Some((token, timeout, cap)) => {
                    self.client
                        .call_raw_with_progress(method, Some(&params), timeout, token, cap)
                }
                None => self.client.call_raw(method, Some(&params)),
            };
            let error = match pending.await {
                Ok(result) => return Ok(result),
                Err(error) => error,
            };
            // The transport could not deliver it (no connection, no authorization): the
            // server did not run it, and sending it again now would fail the same way.
            let error = match ClientError::of_call(method, error, &self.failures, failed_before) {
                ClientError::Call(error) => error,
                not_delivered => return Err(not_delivered),
            };
            let loss = match (retry::Loss::of(&error), &self.renewal) {
                // A 404 is a lost session only where there is one.
                (Some(retry::Loss::Session), None) | (None, _) => {
                    return Err(ClientError::Call(error))
                }
                (Some(loss), _) => loss,
            };
            match (attempts.next(loss, idempotent), &self.renewal) {
                (retry::Next::Renew, Some(renewal)) => {
                    renewal.renew(&self.client, method, seen).await?;
                }
                (retry::Next::Resend, _) => {}
                (_, _) if loss == retry::Loss::Session => {
                    return Err(ClientError::SessionLost {
                        method,
                        cause: None,
                    })
                }
                _ => return Err(ClientError::OutcomeUnknown(method)),
            }
        }
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
        self.idempotent.learn(&page.tools, false);
        if let Some(stateless) = &self.stateless {
            page.tools = (stateless.screen)(&self.param_headers, page.tools, false)?;
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
        self.idempotent.learn(&tools, true);
        if let Some(stateless) = &self.stateless {
            return (stateless.screen)(&self.param_headers, tools, true);
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
        let arguments = params.get("arguments").and_then(Value::as_object);
        self.param_headers.check(name, arguments)?;
        let result = self
            .call(methods::TOOLS_CALL, Value::Object(params), None)
            .await?;
        decode(methods::TOOLS_CALL, result.get())
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
        let arguments = params.get("arguments").and_then(Value::as_object);
        self.param_headers.check(name, arguments)?;
        let mut params = Value::Object(params);
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
    /// The client subscribes again on a new session when the server lost the session.
    pub async fn subscribe(&self, uri: &str) -> Result<(), ClientError> {
        self.request::<JsonObject>(
            methods::RESOURCES_SUBSCRIBE,
            &serde_json::json!({ "uri": uri }),
        )
        .await?;
        if let Some(renewal) = &self.renewal {
            let mut subscribed = renewal
                .subscribed
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            subscribed.insert(uri.to_owned());
        }
        Ok(())
    }

    /// `resources/unsubscribe`.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), ClientError> {
        if let Some(renewal) = &self.renewal {
            let mut subscribed = renewal
                .subscribed
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            subscribed.remove(uri);
        }
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

    /// `logging/setLevel`: the server sends log messages at `level` and above. The client
    /// sets it again on a new session when the server lost the session.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), ClientError> {
        self.request::<JsonObject>(
            methods::LOGGING_SET_LEVEL,
            &serde_json::json!({ "level": level }),
        )
        .await?;
        if let Some(renewal) = &self.renewal {
            *renewal.level.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
        }
        Ok(())
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
