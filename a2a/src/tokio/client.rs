//! The A2A client: the agent card resolved from a base URL, the JSON-RPC interface picked
//! from it, and every method called with the `A2A-Version` header and the credentials of a
//! `sansrpc_oauth` [`CredentialProvider`]; streams read as Server-Sent Events by the core's
//! decoder.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method as HttpMethod, Request, Uri};
use hyper_util::rt::TokioExecutor;
use sansrpc::codec::sse;
use sansrpc::method::Method;
use sansrpc::ErrorObject;
use sansrpc_oauth::driver::{CredentialProvider, Retry};
use serde::de::DeserializeOwned;
use serde::Serialize;

use sansrpc_tokio::host::{self, Dial, HttpTarget};

use crate::methods::{self, *};
use crate::types::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use crate::version::{AGENT_CARD_PATH, JSONRPC_BINDING, PROTOCOL_VERSION, VERSION_HEADER};
use crate::A2aError;

/// Largest answer body read whole (a card, a task, a page of tasks).
const MAX_ANSWER: usize = 16 << 20;

type Http = hyper_util::client::legacy::Client<Dial, Full<Bytes>>;

/// Why a call failed: the layer that failed, and what it said.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// The agent answered the call with this A2A error (`TaskNotFoundError`, ...).
    A2a(A2aError),
    /// The agent answered with a JSON-RPC error that is no A2A or standard one.
    Rpc {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// An HTTP answer that is not one: the status, and the start of its body.
    Http {
        /// The URL asked.
        url: String,
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The connection or the exchange failed (the address, TLS, a cut answer).
    Transport {
        /// The URL asked.
        url: String,
        /// What failed.
        reason: String,
    },
    /// The answer is not what the method returns.
    Decode(String),
    /// The card has no JSON-RPC interface of protocol version 1.0.
    NoJsonRpcInterface,
    /// The credentials could not be had (the authorization step that failed).
    Credentials(sansrpc_oauth::Error),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::A2a(e) => write!(f, "the agent answered {e}"),
            ClientError::Rpc { code, message } => {
                write!(f, "the agent answered JSON-RPC error {code}: {message}")
            }
            ClientError::Http { url, status, body } => {
                write!(f, "{url} answered HTTP {status}: {body}")
            }
            ClientError::Transport { url, reason } => write!(f, "{url}: {reason}"),
            ClientError::Decode(why) => write!(f, "the answer does not decode: {why}"),
            ClientError::NoJsonRpcInterface => {
                write!(
                    f,
                    "the agent card has no JSONRPC interface of version {PROTOCOL_VERSION}"
                )
            }
            ClientError::Credentials(e) => write!(f, "credentials: {e}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl ClientError {
    /// The A2A error the agent answered, if that is what this is.
    pub fn a2a(&self) -> Option<&A2aError> {
        match self {
            ClientError::A2a(e) => Some(e),
            _ => None,
        }
    }
}

fn http_client(url: &str) -> Result<Http, ClientError> {
    let target = HttpTarget::of(url, None).map_err(|e| ClientError::Transport {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(
        hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .build(Dial(Arc::new(target))),
    )
}

/// A client of one agent's JSON-RPC interface.
#[derive(Clone)]
pub struct Client {
    http: Http,
    url: String,
    card: Arc<AgentCard>,
    credentials: Option<Arc<dyn CredentialProvider>>,
    ids: Arc<AtomicU64>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.url)
            .field("agent", &self.card.name)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// The client of the agent whose card is at `base_url` +
    /// `/.well-known/agent-card.json`, on the card's JSON-RPC interface.
    pub async fn resolve(base_url: &str) -> Result<Client, ClientError> {
        Client::resolve_with(base_url, None).await
    }

    /// [`resolve`](Self::resolve) with `credentials` on every request (the card's too).
    pub async fn resolve_with(
        base_url: &str,
        credentials: Option<Arc<dyn CredentialProvider>>,
    ) -> Result<Client, ClientError> {
        let url = format!("{}{AGENT_CARD_PATH}", base_url.trim_end_matches('/'));
        let http = http_client(&url)?;
        let response = send(&http, &url, credentials.as_deref(), |r| {
            r.method(HttpMethod::GET).body(Full::new(Bytes::new()))
        })
        .await?;
        let status = response.status().as_u16();
        let body =
            read_whole(response.into_body())
                .await
                .map_err(|reason| ClientError::Transport {
                    url: url.clone(),
                    reason,
                })?;
        if status != 200 {
            return Err(http_error(&url, status, &body));
        }
        let card: AgentCard = serde_json::from_slice(&body)
            .map_err(|e| ClientError::Decode(format!("the agent card at {url}: {e}")))?;
        Client::from_card(card, credentials)
    }

    /// The client of `card`'s JSON-RPC interface (protocol version 1.0).
    pub fn from_card(
        card: AgentCard,
        credentials: Option<Arc<dyn CredentialProvider>>,
    ) -> Result<Client, ClientError> {
        let interface = card
            .supported_interfaces
            .iter()
            .find(|i| {
                i.protocol_binding.eq_ignore_ascii_case(JSONRPC_BINDING)
                    && crate::version::check_version(Some(&i.protocol_version)).is_ok()
            })
            .ok_or(ClientError::NoJsonRpcInterface)?;
        let url = interface.url.clone();
        let _: Uri = url.parse().map_err(|_| ClientError::Transport {
            url: url.clone(),
            reason: "not a URL".into(),
        })?;
        Ok(Client {
            http: http_client(&url)?,
            url,
            card: Arc::new(card),
            credentials,
            ids: Arc::new(AtomicU64::new(1)),
        })
    }

    /// The agent's card.
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    /// The JSON-RPC endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Calls method `M` and decodes its result.
    pub async fn call<M: Method>(&self, params: &M::Params) -> Result<M::Result, ClientError>
    where
        M::Params: Serialize,
        M::Result: DeserializeOwned,
    {
        let (id, request) = self.request(M::NAME, params)?;
        let (status, body) = self.post(request, "application/json").await?;
        let body = match body {
            Answer::Whole(body) => body,
            Answer::Stream(_) => {
                return Err(ClientError::Decode(format!(
                    "{} answered with a stream",
                    M::NAME
                )))
            }
        };
        if status != 200 {
            // An HTTP refusal (401 without credentials, 413, ...): the status, and the
            // start of the body (a JSON-RPC error that says why).
            return Err(http_error(&self.url, status, &body));
        }
        rpc_result(&body, id)?
    }

    /// `SendMessage`: the task (or a message) once the agent finished it, needs input, or
    /// at once with `configuration.returnImmediately`.
    pub async fn send_message(
        &self,
        request: &SendMessageRequest,
    ) -> Result<SendMessageResponse, ClientError> {
        self.call::<SendMessage>(request).await
    }

    /// `SendStreamingMessage`: the task's events as they come.
    pub async fn send_streaming_message(
        &self,
        request: &SendMessageRequest,
    ) -> Result<EventStream, ClientError> {
        self.stream(methods::SEND_STREAMING_MESSAGE, request, None)
            .await
    }

    /// `SubscribeToTask`: the events of task `id` (the task first).
    pub async fn subscribe(&self, id: &str) -> Result<EventStream, ClientError> {
        let request = SubscribeToTaskRequest {
            id: id.to_owned(),
            ..Default::default()
        };
        self.stream(methods::SUBSCRIBE_TO_TASK, &request, None)
            .await
    }

    /// `SubscribeToTask` for a stream that broke: with its `Last-Event-ID`, so the agent
    /// sends what it missed (or the task again when it has no more of them).
    pub async fn resume(&self, id: &str, stream: &EventStream) -> Result<EventStream, ClientError> {
        let request = SubscribeToTaskRequest {
            id: id.to_owned(),
            ..Default::default()
        };
        let last = stream.last_event_id().to_owned();
        let last = (!last.is_empty()).then_some(last);
        self.stream(methods::SUBSCRIBE_TO_TASK, &request, last)
            .await
    }

    /// `GetTask`.
    pub async fn get_task(&self, request: &GetTaskRequest) -> Result<Task, ClientError> {
        self.call::<GetTask>(request).await
    }

    /// `ListTasks`.
    pub async fn list_tasks(
        &self,
        request: &ListTasksRequest,
    ) -> Result<ListTasksResponse, ClientError> {
        self.call::<ListTasks>(request).await
    }

    /// `CancelTask`.
    pub async fn cancel_task(&self, id: &str) -> Result<Task, ClientError> {
        let request = CancelTaskRequest {
            id: id.to_owned(),
            ..Default::default()
        };
        self.call::<CancelTask>(&request).await
    }

    /// `CreateTaskPushNotificationConfig`.
    pub async fn create_push_config(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        self.call::<CreateTaskPushNotificationConfig>(config).await
    }

    /// `GetTaskPushNotificationConfig`.
    pub async fn get_push_config(
        &self,
        request: &GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        self.call::<GetTaskPushNotificationConfig>(request).await
    }

    /// `ListTaskPushNotificationConfigs`.
    pub async fn list_push_configs(
        &self,
        request: &ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError> {
        self.call::<ListTaskPushNotificationConfigs>(request).await
    }

    /// `DeleteTaskPushNotificationConfig`.
    pub async fn delete_push_config(
        &self,
        request: &DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), ClientError> {
        self.call::<DeleteTaskPushNotificationConfig>(request)
            .await
            .map(drop)
    }

    /// `GetExtendedAgentCard`.
    pub async fn extended_card(&self) -> Result<AgentCard, ClientError> {
        self.call::<GetExtendedAgentCard>(&GetExtendedAgentCardRequest::default())
            .await
    }

    fn request(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<(u64, Vec<u8>), ClientError> {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params,
        }))
        .map_err(|e| ClientError::Decode(e.to_string()))?;
        Ok((id, body))
    }

    async fn stream(
        &self,
        method: &str,
        params: &impl Serialize,
        last_event_id: Option<String>,
    ) -> Result<EventStream, ClientError> {
        let (id, request) = self.request(method, params)?;
        let (status, answer) = self
            .post_with(request, "text/event-stream", last_event_id)
            .await?;
        match answer {
            Answer::Stream(body) if status == 200 => Ok(EventStream {
                body,
                id,
                decoder: sse::SseDecoder::new(sse::SseLimits::default()),
                events: VecDeque::new(),
                ended: false,
            }),
            Answer::Stream(_) => Err(ClientError::Http {
                url: self.url.clone(),
                status,
                body: String::new(),
            }),
            // An error before the stream started comes as one JSON answer.
            Answer::Whole(body) => match rpc_result::<serde_json::Value>(&body, id) {
                Ok(Err(e)) => Err(e),
                _ => Err(http_error(&self.url, status, &body)),
            },
        }
    }

    async fn post(
        &self,
        body: Vec<u8>,
        accept: &'static str,
    ) -> Result<(u16, Answer), ClientError> {
        self.post_with(body, accept, None).await
    }

    async fn post_with(
        &self,
        body: Vec<u8>,
        accept: &'static str,
        last_event_id: Option<String>,
    ) -> Result<(u16, Answer), ClientError> {
        let response = send(&self.http, &self.url, self.credentials.as_deref(), |r| {
            let mut r = r
                .method(HttpMethod::POST)
                .header("content-type", "application/json")
                .header("accept", accept);
            if let Some(last) = &last_event_id {
                r = r.header("last-event-id", last);
            }
            r.body(Full::new(Bytes::from(body.clone())))
        })
        .await?;
        let status = response.status().as_u16();
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let body = response.into_body();
        if sse {
            return Ok((status, Answer::Stream(body)));
        }
        let bytes = read_whole(body)
            .await
            .map_err(|reason| ClientError::Transport {
                url: self.url.clone(),
                reason,
            })?;
        Ok((status, Answer::Whole(bytes)))
    }
}

/// An error and its sources, each after a colon (hyper-util's error names the layer, its
/// sources say why: refused, TLS and its reason, ...).
fn chain(e: &dyn std::error::Error) -> String {
    let mut reason = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        reason.push_str(": ");
        reason.push_str(&cause.to_string());
        source = cause.source();
    }
    reason
}

enum Answer {
    Whole(Vec<u8>),
    Stream(Incoming),
}

async fn read_whole(body: Incoming) -> Result<Vec<u8>, String> {
    host::read_whole(body, MAX_ANSWER)
        .await
        .map_err(|e| e.to_string())
}

/// Sends the request `build` makes (with the `A2A-Version` header and, when there are
/// credentials, their `Authorization`) until the credentials say the answer stands.
async fn send(
    http: &Http,
    url: &str,
    credentials: Option<&dyn CredentialProvider>,
    build: impl Fn(hyper::http::request::Builder) -> Result<Request<Full<Bytes>>, hyper::http::Error>,
) -> Result<hyper::Response<Incoming>, ClientError> {
    let transport = |reason: String| ClientError::Transport {
        url: url.to_owned(),
        reason,
    };
    loop {
        let sent = match credentials {
            Some(c) => c.authorization().await.map_err(ClientError::Credentials)?,
            None => None,
        };
        let mut request = Request::builder()
            .uri(url)
            .header(VERSION_HEADER, PROTOCOL_VERSION);
        if let Some(value) = &sent {
            request = request.header("authorization", value);
        }
        let request = build(request).map_err(|e| transport(chain(&e)))?;
        let response = http
            .request(request)
            .await
            .map_err(|e| transport(chain(&e)))?;
        let Some(c) = credentials else {
            return Ok(response);
        };
        let challenges: Vec<&str> = response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let status = response.status().as_u16();
        let retry = c
            .on_response(status, &challenges, sent.as_deref())
            .await
            .map_err(ClientError::Credentials)?;
        if retry == Retry::No {
            return Ok(response);
        }
    }
}

fn http_error(url: &str, status: u16, body: &[u8]) -> ClientError {
    ClientError::Http {
        url: url.to_owned(),
        status,
        body: String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
    }
}

/// A JSON-RPC response's result (`Ok(Ok)`), or its error (`Ok(Err)`); `Err` when it is no
/// response to call `id`.
fn rpc_result<T: DeserializeOwned>(
    body: &[u8],
    id: u64,
) -> Result<Result<T, ClientError>, ClientError> {
    #[derive(serde::Deserialize)]
    struct Error<'a> {
        code: i64,
        #[serde(default)]
        message: String,
        #[serde(borrow, default)]
        data: Option<&'a serde_json::value::RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Response<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow)]
        result: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow)]
        error: Option<Error<'a>>,
    }
    let response: Response = serde_json::from_slice(body)
        .map_err(|e| ClientError::Decode(format!("not a JSON-RPC response: {e}")))?;
    if let Some(error) = response.error {
        let mut object = ErrorObject::new(error.code, error.message);
        if let Some(data) = error.data {
            object = object.with_data(sansrpc::RawValue::from_serde_json(data));
        }
        let error = object;
        return Ok(Err(match A2aError::from_error_object(&error) {
            Some(e) => ClientError::A2a(e),
            None => ClientError::Rpc {
                code: error.code,
                message: error.message.into_owned(),
            },
        }));
    }
    if response.id.map(|i| i.get().trim()) != Some(id.to_string().as_str()) {
        return Err(ClientError::Decode(format!(
            "an answer to another call than {id}"
        )));
    }
    let result = response.result.map_or("null", |r| r.get());
    Ok(serde_json::from_str(result).map_err(|e| ClientError::Decode(e.to_string())))
}

/// The events of a stream (`SendStreamingMessage`, `SubscribeToTask`), as they come.
pub struct EventStream {
    body: Incoming,
    id: u64,
    decoder: sse::SseDecoder,
    events: VecDeque<Result<sse::SseEvent, sse::SseError>>,
    ended: bool,
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("last_event_id", &self.decoder.last_event_id())
            .finish_non_exhaustive()
    }
}

impl EventStream {
    /// The next event; `None` once the agent ended the stream (the task is terminal, or
    /// waits for input). An `Err` is an error event, or a stream that broke (resume it
    /// with [`Client::resume`]).
    pub async fn next(&mut self) -> Option<Result<StreamResponse, ClientError>> {
        loop {
            if let Some(event) = self.events.pop_front() {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => return Some(Err(ClientError::Decode(e.to_string()))),
                };
                if event.data.is_empty() {
                    continue;
                }
                return Some(rpc_result(event.data.as_bytes(), self.id).and_then(|r| r));
            }
            if self.ended {
                return None;
            }
            match self.body.frame().await {
                None => {
                    self.ended = true;
                    self.decoder.finish();
                }
                Some(Err(e)) => {
                    self.ended = true;
                    return Some(Err(ClientError::Transport {
                        url: String::new(),
                        reason: format!("the stream broke: {e}"),
                    }));
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        let events = &mut self.events;
                        self.decoder.feed(&data, |e| events.push_back(e));
                    }
                }
            }
        }
    }

    /// The id of the last event received (for [`Client::resume`]).
    pub fn last_event_id(&self) -> &str {
        self.decoder.last_event_id()
    }
}
