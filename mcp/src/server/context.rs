//! What a handler knows about its request, and how it reaches the client: [`Context`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use sansrpc::ErrorObject;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use super::state::{Notifier, Session};
use super::McpError;
use crate::types::{
    notifications, ClientCapabilities, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, Implementation, InputRequest, InputRequests,
    ListRootsResult, LoggingLevel, RequestMeta,
};

/// What a driver gives the MCP server for one request: `sansrpc_runtime::Peer`, the one
/// face every adapter implements (the futures adapter's serves tokio, smol and async-std;
/// the blocking adapter's, plain threads) and the LSP and A2A crates use too. The protocol
/// logic never sees a socket.
pub use sansrpc_runtime::{BoxFuture, Peer};

/// What the MCP server reads of its [`Peer`], in MCP's own types.
pub(crate) trait McpPeer {
    /// The connection's session state (one per connection).
    fn session(&self) -> Arc<Session>;
    /// A way to notify the session outside this request (list-changed, resource updates).
    fn session_notifier(&self) -> Arc<dyn Notifier>;
    /// The request's JSON-RPC id, as MCP's `RequestId`.
    fn mcp_request_id(&self) -> Option<crate::types::RequestId>;
    /// Sends a notification whose params are a JSON value.
    fn notify_value(&self, method: &str, params: &Value) -> BoxFuture<bool>;
}

impl<P: Peer + ?Sized> McpPeer for P {
    fn session(&self) -> Arc<Session> {
        self.locals().get::<Session>()
    }

    fn session_notifier(&self) -> Arc<dyn Notifier> {
        Arc::new(RawNotifier(self.notifier()))
    }

    fn mcp_request_id(&self) -> Option<crate::types::RequestId> {
        super::request_id(&self.request_id()?)
    }

    fn notify_value(&self, method: &str, params: &Value) -> BoxFuture<bool> {
        self.notify(method, crate::raw_json(params))
    }
}

/// A connection's notifier as MCP's [`Notifier`] of JSON values.
struct RawNotifier(Arc<dyn sansrpc_runtime::ConnectionNotifier>);

impl Notifier for RawNotifier {
    fn notify(&self, method: &str, params: Value) -> bool {
        self.0.notify(method, crate::raw_json(&params))
    }

    fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

/// The request a handler answers: who asked (the revision, the client's capabilities and
/// info), and what the handler may do while it runs: log, report progress, and ask the
/// client (sampling, elicitation, roots).
///
/// Asking the client works the same way on both revisions: on 2025-11-25 sessions
/// [`elicit`](Context::elicit), [`sample`](Context::sample) and
/// [`list_roots`](Context::list_roots) send the request to the client and wait for its
/// answer; on the stateless 2026-07-28 revision there is no way back to the client, so
/// they return the answer the client sent with this round (`inputResponses`, by key), or
/// fail with [`McpError::InputRequired`] after recording the request: the server then
/// answers with an `InputRequiredResult` listing every request recorded this round, the
/// client fulfils them and calls again, and the handler runs again from the start with the
/// answers. Answers of earlier rounds travel in the sealed `requestState`, so a handler
/// that asks in several rounds sees them all.
///
/// ```no_run
/// # use sansrpc_mcp::server::{Context, McpError};
/// # use sansrpc_mcp::types::ElicitRequestParams;
/// async fn greet(cx: Context, ask: ElicitRequestParams) -> Result<String, McpError> {
///     let answer = cx.elicit("name", ask).await?;
///     Ok(format!("Hello, {:?}!", answer.content.unwrap_or_default().get("name")))
/// }
/// ```
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub host: Arc<dyn Peer>,
    /// The server answering: a handler may announce changes through it.
    pub server: super::Server,
    /// Boxed: most requests carry none, and the context stays small.
    pub meta: Option<Box<RequestMeta>>,
    /// The revision of this request: the session's, or the one its `_meta` names.
    pub version: &'static str,
    pub stateless: bool,
    pub capabilities: Option<Arc<ClientCapabilities>>,
    pub client: Option<Arc<Implementation>>,
    /// Input responses from this round and the rounds before, by key.
    pub responses: BTreeMap<String, Value>,
    /// The handler's own state from the round before.
    pub state: Option<Value>,
    /// Whether this method may answer with an `InputRequiredResult`.
    pub may_ask: bool,
    /// What this round asks of the client.
    pub asked: Mutex<InputRequests>,
    /// The handler's state for the next round.
    pub next_state: Mutex<Option<Value>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("version", &self.inner.version)
            .field("stateless", &self.inner.stateless)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// The protocol revision of this request ("2025-11-25", "2026-07-28", …).
    pub fn protocol_version(&self) -> &str {
        self.inner.version
    }

    /// The request came on the stateless 2026-07-28 revision.
    pub fn is_stateless(&self) -> bool {
        self.inner.stateless
    }

    /// The client's capabilities: from `initialize` on a session, from the request's
    /// `_meta` on the stateless revision.
    pub fn client_capabilities(&self) -> Option<&ClientCapabilities> {
        self.inner.capabilities.as_deref()
    }

    /// The client's name and version, where it said them.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.client.as_deref()
    }

    /// The request's `_meta`, if it had one.
    pub fn meta(&self) -> Option<&RequestMeta> {
        self.inner.meta.as_deref()
    }

    /// The client cancelled the request (a handler that runs long checks it and stops).
    pub fn is_cancelled(&self) -> bool {
        self.inner.host.is_cancelled()
    }

    /// Resolves when the client cancels the request: a long handler races its work
    /// against it. Under the MCP profile a cancelled request gets no answer, whatever the
    /// handler returns.
    pub async fn cancelled(&self) {
        self.inner.host.cancelled().await
    }

    /// The session's state (2025-11-25; a stateless request's is empty).
    pub fn session(&self) -> Arc<Session> {
        self.inner.host.session()
    }

    /// The server answering this request: a handler that changes what the server offers
    /// announces it with [`Server::list_changed`](super::Server::list_changed) or
    /// [`Server::resource_updated`](super::Server::resource_updated), which reach the
    /// sessions and the `subscriptions/listen` streams that asked.
    pub fn server(&self) -> &super::Server {
        &self.inner.server
    }

    /// The HTTP request this call came in, over Streamable HTTP: the principal of its bearer
    /// token (when the server checks tokens: `sansrpc_mcp::tokio::serve_with` and its
    /// validator) and its header fields. `None` on stdio and other transports.
    pub fn http(&self) -> Option<Arc<sansrpc::codec::http::HttpRequest>> {
        self.inner.host.http()
    }

    /// Reports progress on the request's token: `notifications/progress`, ahead of the
    /// answer on the request's stream. False when the request carried no token (nothing
    /// is sent) or the connection is gone.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let mut value = json!({ "progress": number(progress) });
        if let Some(total) = total {
            value["total"] = number(total);
        }
        if let Some(message) = message {
            value["message"] = json!(message);
        }
        self.inner.host.progress(crate::raw_json(&value)).await
    }

    /// The request's progress token, if it carried one.
    pub fn progress_token(&self) -> Option<Value> {
        let mut json = Vec::new();
        self.inner.host.progress_token()?.write_json(&mut json);
        serde_json::from_slice(&json).ok()
    }

    /// The level at which log messages reach the client, or `None` when none do: on a
    /// session, the level `logging/setLevel` set (every level before it is set); on the
    /// stateless revision, the request's own `_meta` log level (none when it names none).
    pub fn log_level(&self) -> Option<LoggingLevel> {
        if self.inner.stateless {
            self.inner.meta.as_ref().and_then(|m| m.log_level)
        } else {
            Some(self.session().log_level().unwrap_or(LoggingLevel::Debug))
        }
    }

    /// Sends a log message (`notifications/message`) at `level` with `data`, when the
    /// client asked for that level ([`log_level`](Self::log_level)). Returns whether it
    /// was sent.
    pub async fn log(&self, level: LoggingLevel, data: impl Serialize) -> bool {
        match self.log_level() {
            Some(at) if level >= at => {}
            _ => return false,
        }
        let Ok(data) = serde_json::to_value(data) else {
            return false;
        };
        let params = json!({ "level": level, "data": data });
        let params = crate::raw_json(&params);
        self.inner.host.notify(notifications::MESSAGE, params).await
    }

    /// Sends any notification on behalf of the request.
    pub async fn notify(&self, method: &str, params: Value) -> bool {
        self.inner
            .host
            .notify(method, crate::raw_json(&params))
            .await
    }

    /// Asks the user for input (`elicitation/create`); `key` names the request on the
    /// stateless revision. Fails with [`McpError::MissingCapability`] when the client did
    /// not declare elicitation (on the stateless revision it is then not asked for).
    pub async fn elicit(
        &self,
        key: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, McpError> {
        let capable = self
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());
        if !capable {
            return Err(McpError::MissingCapability("elicitation"));
        }
        self.ask(key, InputRequest::Elicit(params)).await
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    pub async fn sample(
        &self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, McpError> {
        if !self
            .client_capabilities()
            .is_some_and(ClientCapabilities::supports_sampling)
        {
            return Err(McpError::MissingCapability("sampling"));
        }
        self.ask(key, InputRequest::CreateMessage(params)).await
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn list_roots(&self, key: &str) -> Result<ListRootsResult, McpError> {
        if !self
            .client_capabilities()
            .is_some_and(ClientCapabilities::supports_roots)
        {
            return Err(McpError::MissingCapability("roots"));
        }
        self.ask(key, InputRequest::ListRoots(None)).await
    }

    async fn ask<T: DeserializeOwned>(
        &self,
        key: &str,
        request: InputRequest,
    ) -> Result<T, McpError> {
        if !self.inner.stateless {
            let method = request.method().to_owned();
            let params = match &request {
                InputRequest::ListRoots(None) => json!({}),
                other => serde_json::to_value(other)
                    .map(|mut v| v["params"].take())
                    .map_err(McpError::internal)?,
            };
            let answer = self
                .inner
                .host
                .call(&method, crate::raw_json(&params))
                .await
                .map_err(McpError::Rpc)?;
            return serde_json::from_str(answer.get()).map_err(|e| {
                McpError::Rpc(ErrorObject::new(
                    -32603,
                    format!("the client's answer to {method} is malformed: {e}"),
                ))
            });
        }
        if let Some(answer) = self.inner.responses.get(key) {
            return serde_json::from_value(answer.clone()).map_err(|e| {
                McpError::invalid_params(format!("inputResponses[{key:?}] is malformed: {e}"))
            });
        }
        if !self.inner.may_ask {
            return Err(McpError::Rpc(ErrorObject::new(
                -32603,
                format!(
                    "this request cannot ask the client for {}",
                    request.method()
                ),
            )));
        }
        let mut asked = self.inner.asked.lock().unwrap_or_else(|e| e.into_inner());
        asked.insert(key.to_owned(), request);
        Err(McpError::InputRequired)
    }

    /// The answer the client sent under `key` (this round or an earlier one), stateless
    /// revision only.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.inner.responses.get(key)
    }

    /// The state this handler kept for itself in the round before
    /// ([`set_request_state`](Self::set_request_state)), stateless revision only.
    pub fn request_state(&self) -> Option<&Value> {
        self.inner.state.as_ref()
    }

    /// State for the next round (sealed with the server's key into `requestState`, so the
    /// client carries it but cannot change it).
    pub fn set_request_state(&self, state: Value) {
        *self
            .inner
            .next_state
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(state);
    }
}

/// `50`, not `50.0`, for integral numbers, as JavaScript peers write them.
fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        json!(n as i64)
    } else {
        json!(n)
    }
}
