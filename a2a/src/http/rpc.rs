//! One JSON-RPC request to the endpoint: its envelope, version, method and params checked
//! in the order both SDKs check them, then handed to the task machine or the push configs.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;

use sansrpc::codec::http::Head;
use sansrpc::codec::sse;

use super::stream::result_body;
use super::{Authorized, Endpoint, Now, Response, Verdict};
use crate::machine::{SendMode, Sent};
use crate::methods;
use crate::types::{
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest, TaskPushNotificationConfig,
};
use crate::version::{check_version, VERSION_HEADER};
use crate::{A2aError, ErrorKind};

/// A JSON-RPC error response's bytes for request `id` (JSON; `null` without one).
pub(super) fn error_body(id: &str, error: &A2aError) -> Vec<u8> {
    let mut out = Vec::from(&b"{\"jsonrpc\":\"2.0\",\"id\":"[..]);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b",\"error\":");
    error.to_error_object().write_json(&mut out);
    out.push(b'}');
    out
}

/// The envelope of a request, as far as it is read before its method.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

fn answer(id: &str, result: Result<Vec<u8>, A2aError>) -> Verdict {
    let body = match result {
        Ok(result) => result_body(id, &result),
        Err(error) => error_body(id, &error),
    };
    Verdict::Respond(Response::json(200, body))
}

fn params<T: DeserializeOwned + Default>(raw: Option<&RawValue>) -> Result<T, A2aError> {
    match raw.map(RawValue::get) {
        None | Some("null") => Ok(T::default()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| A2aError::invalid_params(format!("Invalid params: {e}"))),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("results serialize")
}

/// The version the request asks for: the `A2A-Version` header, else the query parameter
/// of that name (§3.6.1).
fn version(head: &Head) -> Option<String> {
    if let Some(v) = head.field_lowercase("a2a-version") {
        return Some(String::from_utf8_lossy(v).into_owned());
    }
    let query = head.target().split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        name.eq_ignore_ascii_case(VERSION_HEADER)
            .then(|| value.to_owned())
    })
}

const EXTENDED_NEEDS: &str = "GetExtendedAgentCard needs an authenticated client";

/// The HTTP refusal of a request without the credentials it needs (`why`), as the
/// validator judged them (`authorized`): 401 with `WWW-Authenticate: Bearer` when missing or
/// invalid, 403 naming the scope when insufficient; `None` when they do (or nothing was
/// checked: no validator).
fn refusal(id: &str, authorized: &Authorized, why: &str) -> Option<Verdict> {
    let (status, challenge) = authorized.refusal("")?;
    let error = A2aError::new(ErrorKind::InvalidRequest, why);
    Some(Verdict::Respond(
        Response::json(status, error_body(id, &error)).header("www-authenticate", &challenge),
    ))
}

impl Endpoint {
    pub(super) fn call(&mut self, head: &Head, body: &[u8], auth: Authorized, now: Now) -> Verdict {
        let value: serde_json::Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                let mut body = Vec::from(
                    &b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":"[..],
                );
                sansrpc::message::write_json_string(&mut body, &format!("Parse error: {e}"));
                body.extend_from_slice(b"}}");
                return Verdict::Respond(Response::json(200, body));
            }
        };
        if !value.is_object() {
            let why = match value.is_array() {
                true => "Batch requests are not supported",
                false => "Invalid request: not a JSON-RPC request object",
            };
            return answer("null", Err(A2aError::new(ErrorKind::InvalidRequest, why)));
        }
        let Ok(envelope) = serde_json::from_slice::<Envelope>(body) else {
            return answer("null", Err(A2aError::from(ErrorKind::InvalidRequest)));
        };
        // The id as sent when it is a string, a number or null; else null.
        let id = match envelope.id.map(RawValue::get) {
            Some(t)
                if t.starts_with('"')
                    || t == "null"
                    || t.starts_with(['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']) =>
            {
                t.to_owned()
            }
            Some(_) => {
                let error = A2aError::new(
                    ErrorKind::InvalidRequest,
                    "Invalid request: id must be a string, a number or null",
                );
                return answer("null", Err(error));
            }
            None => "null".to_owned(),
        };
        if envelope.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
            let error = A2aError::new(
                ErrorKind::InvalidRequest,
                "Invalid request: 'jsonrpc' must be exactly '2.0'",
            );
            return answer(&id, Err(error));
        }
        let method = match envelope
            .method
            .map(|m| serde_json::from_str::<String>(m.get()))
        {
            Some(Ok(m)) if !m.is_empty() => m,
            _ => {
                let error = A2aError::new(
                    ErrorKind::InvalidRequest,
                    "Invalid request: method is required",
                );
                return answer(&id, Err(error));
            }
        };
        if envelope.id.is_none() {
            // A notification: nothing is answered, so nothing is done.
            return Verdict::Respond(Response::new(204));
        }
        if !methods::ALL.contains(&method.as_str()) {
            let error = A2aError::new(
                ErrorKind::MethodNotFound,
                format!("Method not found: {method}"),
            );
            return answer(&id, Err(error));
        }
        if let Err(error) = check_version(version(head).as_deref()) {
            return answer(&id, Err(error));
        }
        // A card that declares security requirements is an agent that takes no request
        // without credentials (A2A §3.3.2: missing or invalid ones are refused), checked by
        // the server's validator; the extended card has its own rule below.
        if method != methods::GET_EXTENDED_AGENT_CARD && !self.card.security_requirements.is_empty()
        {
            if let Some(refused) = refusal(&id, &auth, "This agent needs an authenticated client") {
                return refused;
            }
        }
        let raw = envelope.params;
        let result = match method.as_str() {
            methods::SEND_MESSAGE => return self.send(id, raw, SendMode::Blocking, now),
            methods::SEND_STREAMING_MESSAGE => return self.send(id, raw, SendMode::Streaming, now),
            methods::SUBSCRIBE_TO_TASK => return self.subscribe(head, id, raw, now),
            methods::GET_TASK => params::<GetTaskRequest>(raw)
                .and_then(|p| self.get_task(&p))
                .map(|t| to_json(&t)),
            methods::LIST_TASKS => params::<ListTasksRequest>(raw)
                .and_then(|p| self.list_tasks(&p))
                .map(|t| to_json(&t)),
            methods::CANCEL_TASK => params::<CancelTaskRequest>(raw)
                .and_then(|p| {
                    self.refresh(&p.id)?;
                    self.tasks.handle_cancel(now.utc, &p)
                })
                .map(|t| to_json(&t)),
            methods::GET_EXTENDED_AGENT_CARD => return self.extended_card(&id, auth),
            push => self.push_call(push, raw),
        };
        answer(&id, result)
    }

    fn send(&mut self, id: String, raw: Option<&RawValue>, mode: SendMode, now: Now) -> Verdict {
        let request = match params::<SendMessageRequest>(raw) {
            Ok(r) => r,
            Err(e) => return answer(&id, Err(e)),
        };
        if mode == SendMode::Streaming {
            if let Err(e) = self.can_stream() {
                return answer(&id, Err(e));
            }
        }
        let push = request
            .configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.clone());
        if push.is_some() && !self.pushes() {
            return answer(&id, Err(ErrorKind::PushNotificationNotSupported.into()));
        }
        if mode == SendMode::Blocking && self.by_waiter.len() >= self.config.max_waiting {
            let error = A2aError::new(
                ErrorKind::Internal,
                format!(
                    "this agent has {} requests waiting already",
                    self.config.max_waiting
                ),
            );
            return answer(&id, Err(error));
        }
        if let Some(task) = &request.message.task_id {
            if let Err(e) = self.refresh(task) {
                return answer(&id, Err(e));
            }
        }
        let sent = match self.tasks.handle_send(now.utc, request, mode) {
            Ok(sent) => sent,
            Err(e) => return answer(&id, Err(e)),
        };
        let task = match &sent {
            Sent::Task(task) => Some(task.id.clone()),
            Sent::Waiting(w) => self.tasks.waiter_task(*w).map(str::to_owned),
            Sent::Stream(s) => self.tasks.stream_task(*s).map(str::to_owned),
        };
        if let (Some(config), Some(task)) = (push, task) {
            // Refused configs do not undo the message: it is the task's already.
            let _ = self.add_push(&task, config);
        }
        match sent {
            Sent::Task(task) => {
                let response = crate::types::SendMessageResponse::Task(*task);
                answer(&id, Ok(to_json(&response)))
            }
            Sent::Waiting(waiter) => Verdict::Stream(self.open_json(waiter, id, now.instant)),
            Sent::Stream(stream) => Verdict::Stream(self.open_sse(stream, id, now.instant)),
        }
    }

    fn can_stream(&self) -> Result<(), A2aError> {
        if self.card.capabilities.streaming != Some(true) {
            return Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                "Streaming is not supported by this agent",
            ));
        }
        if self.sse_streams >= self.config.max_streams {
            return Err(A2aError::new(
                ErrorKind::Internal,
                format!(
                    "this agent has {} streams open already",
                    self.config.max_streams
                ),
            ));
        }
        Ok(())
    }

    fn subscribe(&mut self, head: &Head, id: String, raw: Option<&RawValue>, now: Now) -> Verdict {
        let request = match params::<SubscribeToTaskRequest>(raw) {
            Ok(r) => r,
            Err(e) => return answer(&id, Err(e)),
        };
        let resumed = head
            .field_lowercase("last-event-id")
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(sse::parse_event_id);
        if let Some(at) = resumed {
            if let Some(stream) = self.resume(at, &request.id, id.clone(), now.instant) {
                return Verdict::Stream(stream);
            }
        }
        if let Err(e) = self.can_stream() {
            return answer(&id, Err(e));
        }
        if let Err(e) = self.refresh(&request.id) {
            return answer(&id, Err(e));
        }
        match self.tasks.handle_subscribe(&request) {
            Ok(stream) => Verdict::Stream(self.open_sse(stream, id, now.instant)),
            Err(e) => answer(&id, Err(e)),
        }
    }

    fn extended_card(&self, id: &str, authorized: Authorized) -> Verdict {
        if self.card.capabilities.extended_agent_card != Some(true) {
            let error = A2aError::new(
                ErrorKind::UnsupportedOperation,
                "The agent does not support authenticated extended cards",
            );
            return answer(id, Err(error));
        }
        let Some(card) = &self.extended else {
            return answer(id, Err(ErrorKind::ExtendedAgentCardNotConfigured.into()));
        };
        // Without a validator it is refused as a token missing, when it needs one.
        let authorized = match authorized {
            Authorized::NotRequired if self.config.extended_card_needs_token => Authorized::Missing,
            checked => checked,
        };
        if let Some(refused) = refusal(id, &authorized, EXTENDED_NEEDS) {
            return refused;
        }
        answer(id, Ok(card.clone()))
    }

    /// Whether the card declares push notifications.
    pub(super) fn pushes(&self) -> bool {
        self.card.capabilities.push_notifications == Some(true)
    }

    fn push_call(&mut self, method: &str, raw: Option<&RawValue>) -> Result<Vec<u8>, A2aError> {
        if !self.pushes() {
            return Err(ErrorKind::PushNotificationNotSupported.into());
        }
        match method {
            methods::CREATE_TASK_PUSH_NOTIFICATION_CONFIG => {
                let config = params::<TaskPushNotificationConfig>(raw)?;
                let task = config.task_id.clone().unwrap_or_default();
                self.refresh(&task)?;
                if !self.tasks.contains(&task) {
                    return Err(A2aError::task_not_found(&task));
                }
                self.add_push(&task, config).map(|c| to_json(&c))
            }
            methods::GET_TASK_PUSH_NOTIFICATION_CONFIG => {
                let p = params::<GetTaskPushNotificationConfigRequest>(raw)?;
                self.push.get(&p.task_id, &p.id).map(|c| to_json(&c))
            }
            methods::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => {
                let p = params::<ListTaskPushNotificationConfigsRequest>(raw)?;
                if !self.tasks.contains(&p.task_id) {
                    return Err(A2aError::task_not_found(&p.task_id));
                }
                Ok(to_json(&self.push.list(&p.task_id)))
            }
            _ => {
                let p = params::<DeleteTaskPushNotificationConfigRequest>(raw)?;
                if !self.tasks.contains(&p.task_id) {
                    return Err(A2aError::task_not_found(&p.task_id));
                }
                if let Some(watcher) = self.push.delete(&p.task_id, &p.id) {
                    self.tasks.close_stream(watcher);
                }
                Ok(b"null".to_vec())
            }
        }
    }

    /// Keeps `config` for `task`, and watches the task for it (unless it is terminal).
    fn add_push(
        &mut self,
        task: &str,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        if self.push.is_full() {
            // The configs of tasks the machine evicted since go first.
            let tasks = &self.tasks;
            for watcher in self.push.prune(|task| tasks.contains(task)) {
                self.tasks.close_stream(watcher);
            }
        }
        let config = self.push.add(task, config)?;
        if !self.push.watched(task) {
            let request = SubscribeToTaskRequest {
                id: task.to_owned(),
                ..Default::default()
            };
            if let Ok(stream) = self.tasks.handle_subscribe(&request) {
                // Its first event is the task as it is: posted too, as a2a-sdk posts the
                // task it starts with.
                self.push.watch(task, stream);
            }
        }
        Ok(config)
    }
}
