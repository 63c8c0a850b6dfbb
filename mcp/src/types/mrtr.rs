//! Multi round-trip requests (2026-07-28, SEP-2322): instead of sending server → client
//! requests, a server answers `tools/call`, `prompts/get` or `resources/read` with an
//! [`InputRequiredResult`]; the client fulfils its input requests and retries the original
//! request (new id) with `inputResponses` and the echoed `requestState`.

use std::collections::BTreeMap;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    methods, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    JsonObject, ListRootsRequestParams, ListRootsResult, ResultMeta, ResultType,
};

/// The input requests of an [`InputRequiredResult`], by server-chosen key.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The client's answers, by the keys of the [`InputRequests`] they answer.
pub type InputResponses = BTreeMap<String, InputResponse>;

/// A request the server needs the client to fulfil: `{"method": …, "params": …}` without
/// `jsonrpc` or `id`.
#[derive(Clone, Debug, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create` (needs the client's `elicitation` capability).
    Elicit(ElicitRequestParams),
    /// `sampling/createMessage` (needs `sampling`).
    CreateMessage(CreateMessageRequestParams),
    /// `roots/list` (needs `roots`); params are optional (`None` = no `params` member).
    ListRoots(Option<ListRootsRequestParams>),
    /// Any other method (defined by an extension).
    Other {
        /// The method.
        method: String,
        /// The params, if any.
        params: Option<Value>,
    },
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &str {
        match self {
            InputRequest::Elicit(_) => methods::ELICITATION_CREATE,
            InputRequest::CreateMessage(_) => methods::SAMPLING_CREATE_MESSAGE,
            InputRequest::ListRoots(_) => methods::ROOTS_LIST,
            InputRequest::Other { method, .. } => method,
        }
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("method", self.method())?;
        match self {
            InputRequest::Elicit(p) => map.serialize_entry("params", p)?,
            InputRequest::CreateMessage(p) => map.serialize_entry("params", p)?,
            InputRequest::ListRoots(Some(p)) => map.serialize_entry("params", p)?,
            InputRequest::Other {
                params: Some(p), ..
            } => map.serialize_entry("params", p)?,
            InputRequest::ListRoots(None) | InputRequest::Other { params: None, .. } => {}
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            method: String,
            #[serde(default)]
            params: Option<Value>,
        }
        let raw = Raw::deserialize(deserializer)?;
        let params = raw.params;
        let need = |p: Option<Value>| p.ok_or_else(|| de::Error::missing_field("params"));
        Ok(match raw.method.as_str() {
            methods::ELICITATION_CREATE => InputRequest::Elicit(
                serde_json::from_value(need(params)?).map_err(de::Error::custom)?,
            ),
            methods::SAMPLING_CREATE_MESSAGE => InputRequest::CreateMessage(
                serde_json::from_value(need(params)?).map_err(de::Error::custom)?,
            ),
            methods::ROOTS_LIST => InputRequest::ListRoots(match params {
                None | Some(Value::Null) => None,
                Some(p) => Some(serde_json::from_value(p).map_err(de::Error::custom)?),
            }),
            _ => InputRequest::Other {
                method: raw.method,
                params,
            },
        })
    }
}

/// The client's answer to one [`InputRequest`] (untagged: told apart by shape).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum InputResponse {
    /// Answer to `sampling/createMessage` (has `role`, `content`, `model`).
    CreateMessage(CreateMessageResult),
    /// Answer to `elicitation/create` (has `action`).
    Elicit(ElicitResult),
    /// Answer to `roots/list` (has `roots`).
    ListRoots(ListRootsResult),
}

/// A result asking for more input before the request can complete
/// (`resultType: "input_required"`; 2026-07-28).
///
/// At least one of `inputRequests` and `requestState` must be present. Only `tools/call`,
/// `prompts/get` and `resources/read` may return it; it carries no caching hints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// `"input_required"`.
    #[serde(default = "input_required")]
    pub result_type: ResultType,
    /// What the client must fulfil before retrying.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes exactly on the retry (servers should integrity-protect
    /// it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

fn input_required() -> ResultType {
    ResultType::InputRequired
}

impl Default for InputRequiredResult {
    fn default() -> Self {
        InputRequiredResult {
            meta: None,
            result_type: ResultType::InputRequired,
            input_requests: None,
            request_state: None,
            extra: JsonObject::new(),
        }
    }
}

impl InputRequiredResult {
    /// An input-required result with these input requests and state.
    pub fn new(input_requests: Option<InputRequests>, request_state: Option<String>) -> Self {
        InputRequiredResult {
            input_requests,
            request_state,
            ..Default::default()
        }
    }
}

/// The result of a request that may answer with an [`InputRequiredResult`] (`tools/call`,
/// `prompts/get`, `resources/read` in 2026-07-28).
///
/// Read by `resultType`: `"input_required"` is [`InputRequired`](Self::InputRequired);
/// anything else, or none (every 2025-11-25 result), is [`Complete`](Self::Complete).
/// Serializes as the inner result.
#[derive(Clone, Debug, PartialEq)]
pub enum ResultOrInputRequired<T> {
    /// The final result.
    Complete(T),
    /// More input is needed.
    InputRequired(Box<InputRequiredResult>),
}

impl<T: Serialize> Serialize for ResultOrInputRequired<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ResultOrInputRequired::Complete(r) => r.serialize(serializer),
            ResultOrInputRequired::InputRequired(r) => r.serialize(serializer),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for ResultOrInputRequired<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        let input_required =
            matches!(map.get("resultType"), Some(Value::String(t)) if t == "input_required");
        let value = Value::Object(map);
        if input_required {
            serde_json::from_value(value).map(|r| ResultOrInputRequired::InputRequired(Box::new(r)))
        } else {
            serde_json::from_value(value).map(ResultOrInputRequired::Complete)
        }
        .map_err(de::Error::custom)
    }
}
