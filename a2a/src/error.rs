//! The A2A errors (§3.3.2) and their JSON-RPC error objects (§5.4, §9.5).

use std::collections::BTreeMap;
use std::fmt;

use sansrpc::error::code;
use sansrpc::{ErrorObject, RawValue};
use serde::{Deserialize, Serialize};

/// The kind of an A2A error: its JSON-RPC code and its `google.rpc.ErrorInfo` reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `TaskNotFoundError` (-32001): no such task, or not visible to this client.
    TaskNotFound,
    /// `TaskNotCancelableError` (-32002): the task is terminal.
    TaskNotCancelable,
    /// `PushNotificationNotSupportedError` (-32003): the card declares no push
    /// notifications.
    PushNotificationNotSupported,
    /// `UnsupportedOperationError` (-32004): the agent does not do this (a message to a
    /// terminal task, streaming when the card declares none, subscribing to a terminal
    /// task).
    UnsupportedOperation,
    /// `ContentTypeNotSupportedError` (-32005): a media type the agent does not take.
    ContentTypeNotSupported,
    /// `InvalidAgentResponseError` (-32006): an agent answered outside the specification.
    InvalidAgentResponse,
    /// `ExtendedAgentCardNotConfiguredError` (-32007): declared but not configured.
    ExtendedAgentCardNotConfigured,
    /// `ExtensionSupportRequiredError` (-32008): the client did not declare a required
    /// extension.
    ExtensionSupportRequired,
    /// `VersionNotSupportedError` (-32009): the `A2A-Version` asked for is not served.
    VersionNotSupported,
    /// JSON-RPC's invalid params (-32602): a value the agent cannot work with.
    InvalidParams,
    /// JSON-RPC's invalid request (-32600).
    InvalidRequest,
    /// JSON-RPC's method not found (-32601).
    MethodNotFound,
    /// JSON-RPC's internal error (-32603): the agent's own failure, or a bound of its own
    /// reached (tasks kept, streams per task).
    Internal,
}

impl ErrorKind {
    /// Every kind, in code order of the A2A errors, then the JSON-RPC ones.
    pub const ALL: [ErrorKind; 13] = [
        ErrorKind::TaskNotFound,
        ErrorKind::TaskNotCancelable,
        ErrorKind::PushNotificationNotSupported,
        ErrorKind::UnsupportedOperation,
        ErrorKind::ContentTypeNotSupported,
        ErrorKind::InvalidAgentResponse,
        ErrorKind::ExtendedAgentCardNotConfigured,
        ErrorKind::ExtensionSupportRequired,
        ErrorKind::VersionNotSupported,
        ErrorKind::InvalidParams,
        ErrorKind::InvalidRequest,
        ErrorKind::MethodNotFound,
        ErrorKind::Internal,
    ];

    /// The JSON-RPC error code (§5.4).
    pub const fn code(self) -> i64 {
        match self {
            ErrorKind::TaskNotFound => -32001,
            ErrorKind::TaskNotCancelable => -32002,
            ErrorKind::PushNotificationNotSupported => -32003,
            ErrorKind::UnsupportedOperation => -32004,
            ErrorKind::ContentTypeNotSupported => -32005,
            ErrorKind::InvalidAgentResponse => -32006,
            ErrorKind::ExtendedAgentCardNotConfigured => -32007,
            ErrorKind::ExtensionSupportRequired => -32008,
            ErrorKind::VersionNotSupported => -32009,
            ErrorKind::InvalidParams => code::INVALID_PARAMS,
            ErrorKind::InvalidRequest => code::INVALID_REQUEST,
            ErrorKind::MethodNotFound => code::METHOD_NOT_FOUND,
            ErrorKind::Internal => code::INTERNAL_ERROR,
        }
    }

    /// The kind with JSON-RPC code `code`, if any.
    pub fn from_code(code: i64) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The `google.rpc.ErrorInfo` reason: the error's name in UPPER_SNAKE_CASE without
    /// "Error" (§9.5), as both SDKs write it (`TASK_NOT_FOUND`).
    pub const fn reason(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound => "TASK_NOT_FOUND",
            ErrorKind::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            ErrorKind::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ErrorKind::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            ErrorKind::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            ErrorKind::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            ErrorKind::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ErrorKind::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            ErrorKind::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            ErrorKind::InvalidParams => "INVALID_PARAMS",
            ErrorKind::InvalidRequest => "INVALID_REQUEST",
            ErrorKind::MethodNotFound => "METHOD_NOT_FOUND",
            ErrorKind::Internal => "INTERNAL_ERROR",
        }
    }

    /// The kind with ErrorInfo reason `reason`, if any.
    pub fn from_reason(reason: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.reason() == reason)
    }

    /// The message when nothing more specific is said (a2a-sdk's wording).
    pub const fn default_message(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound => "Task not found",
            ErrorKind::TaskNotCancelable => "Task cannot be canceled",
            ErrorKind::PushNotificationNotSupported => "Push Notification is not supported",
            ErrorKind::UnsupportedOperation => "This operation is not supported",
            ErrorKind::ContentTypeNotSupported => "Incompatible content types",
            ErrorKind::InvalidAgentResponse => "Invalid agent response",
            ErrorKind::ExtendedAgentCardNotConfigured => {
                "Authenticated Extended Card is not configured"
            }
            ErrorKind::ExtensionSupportRequired => "Extension support required",
            ErrorKind::VersionNotSupported => "Version not supported",
            ErrorKind::InvalidParams => "Invalid params",
            ErrorKind::InvalidRequest => "Invalid Request",
            ErrorKind::MethodNotFound => "Method not found",
            ErrorKind::Internal => "Internal error",
        }
    }
}

/// `type.googleapis.com/google.rpc.ErrorInfo`: the `@type` of the first entry of an A2A
/// error's `data`.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
/// `a2a-protocol.org`: the ErrorInfo `domain` of A2A errors.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// A `google.rpc.ErrorInfo` in ProtoJSON: an entry of an A2A error's `data` array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// `@type`: [`ERROR_INFO_TYPE`].
    #[serde(rename = "@type")]
    pub type_url: String,
    /// `reason`: [`ErrorKind::reason`].
    pub reason: String,
    /// `domain`: [`ERROR_DOMAIN`].
    pub domain: String,
    /// `metadata`: context (string values, as `google.rpc.ErrorInfo` has them).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// An A2A error: a kind, a message for people, and string metadata for programs.
///
/// As a JSON-RPC error object ([`A2aError::to_error_object`]) it is the kind's code, the
/// message, and `data`: an array whose first entry is a `google.rpc.ErrorInfo` with the
/// kind's reason, the domain `a2a-protocol.org` and the metadata (§9.5), which is what
/// a2a-sdk's and @a2a-js/sdk's clients read back.
///
/// ```
/// use sansrpc_a2a::{A2aError, ErrorKind};
///
/// let e = A2aError::task_not_found("t-1");
/// let object = e.to_error_object();
/// assert_eq!(object.code, -32001);
/// let data: serde_json::Value = serde_json::from_str(object.data.unwrap().get()).unwrap();
/// assert_eq!(data[0]["reason"], "TASK_NOT_FOUND");
/// assert_eq!(data[0]["metadata"]["taskId"], "t-1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A2aError {
    kind: ErrorKind,
    message: String,
    metadata: BTreeMap<String, String>,
}

impl A2aError {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> A2aError {
        A2aError {
            kind,
            message: message.into(),
            metadata: BTreeMap::new(),
        }
    }

    /// Adds a metadata entry (carried in the ErrorInfo).
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> A2aError {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The JSON-RPC code.
    pub fn code(&self) -> i64 {
        self.kind.code()
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The metadata.
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// `TaskNotFoundError` for task `id`.
    pub fn task_not_found(id: &str) -> A2aError {
        A2aError::new(ErrorKind::TaskNotFound, format!("Task not found: {id}"))
            .with_metadata("taskId", id)
    }

    /// `InvalidParams` saying `message`.
    pub fn invalid_params(message: impl Into<String>) -> A2aError {
        A2aError::new(ErrorKind::InvalidParams, message)
    }

    /// The ErrorInfo this error carries in its `data`.
    pub fn error_info(&self) -> ErrorInfo {
        ErrorInfo {
            type_url: ERROR_INFO_TYPE.to_owned(),
            reason: self.kind.reason().to_owned(),
            domain: ERROR_DOMAIN.to_owned(),
            metadata: self.metadata.clone(),
        }
    }

    /// The JSON-RPC error object: code, message and `data: [ErrorInfo]`.
    pub fn to_error_object(&self) -> ErrorObject<'static> {
        let data = RawValue::from_serialize(&[self.error_info()]).expect("ErrorInfo serializes");
        ErrorObject::new(self.code(), self.message.clone()).with_data(data)
    }

    /// The A2A error an error object stands for, as a client reads it: the kind from the
    /// ErrorInfo's reason when `data` carries one in the A2A domain, else from the code;
    /// `None` when neither is an A2A or standard JSON-RPC error.
    pub fn from_error_object(object: &ErrorObject<'_>) -> Option<A2aError> {
        let info = object
            .data
            .as_deref()
            .and_then(|d| serde_json::from_str::<Vec<serde_json::Value>>(d.get()).ok())
            .into_iter()
            .flatten()
            .filter(|v| v.get("@type").and_then(|t| t.as_str()) == Some(ERROR_INFO_TYPE))
            .find_map(|v| serde_json::from_value::<ErrorInfo>(v).ok());
        let from_reason = info
            .as_ref()
            .filter(|i| i.domain == ERROR_DOMAIN)
            .and_then(|i| ErrorKind::from_reason(&i.reason));
        let kind = from_reason.or_else(|| ErrorKind::from_code(object.code))?;
        Some(A2aError {
            kind,
            message: object.message.clone().into_owned(),
            metadata: info.map(|i| i.metadata).unwrap_or_default(),
        })
    }
}

impl From<ErrorKind> for A2aError {
    fn from(kind: ErrorKind) -> A2aError {
        A2aError::new(kind, kind.default_message())
    }
}

impl fmt::Display for A2aError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.kind.reason(),
            self.code(),
            self.message
        )
    }
}

impl std::error::Error for A2aError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_reasons_are_the_specifications() {
        let table: Vec<(i64, &str)> = ErrorKind::ALL
            .iter()
            .map(|k| (k.code(), k.reason()))
            .collect();
        assert_eq!(
            &table[..9],
            &[
                (-32001, "TASK_NOT_FOUND"),
                (-32002, "TASK_NOT_CANCELABLE"),
                (-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
                (-32004, "UNSUPPORTED_OPERATION"),
                (-32005, "CONTENT_TYPE_NOT_SUPPORTED"),
                (-32006, "INVALID_AGENT_RESPONSE"),
                (-32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
                (-32008, "EXTENSION_SUPPORT_REQUIRED"),
                (-32009, "VERSION_NOT_SUPPORTED"),
            ]
        );
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_code(kind.code()), Some(kind));
            assert_eq!(ErrorKind::from_reason(kind.reason()), Some(kind));
        }
    }

    #[test]
    fn an_error_object_reads_back() {
        for kind in ErrorKind::ALL {
            let e = A2aError::new(kind, "why").with_metadata("k", "v");
            let object = e.to_error_object();
            let wire = serde_json::to_string(&serde_json::json!({
                "code": object.code, "message": object.message,
                "data": serde_json::from_str::<serde_json::Value>(object.data.as_ref().unwrap().get()).unwrap(),
            }))
            .unwrap();
            let back: serde_json::Value = serde_json::from_str(&wire).unwrap();
            assert_eq!(back["data"][0]["@type"], ERROR_INFO_TYPE);
            assert_eq!(back["data"][0]["domain"], "a2a-protocol.org");
            assert_eq!(A2aError::from_error_object(&object), Some(e));
        }
        // Without data, the code decides; an unknown code is no A2A error.
        let bare = ErrorObject::new(-32002, "nope");
        assert_eq!(
            A2aError::from_error_object(&bare).map(|e| e.kind()),
            Some(ErrorKind::TaskNotCancelable)
        );
        assert_eq!(
            A2aError::from_error_object(&ErrorObject::new(-32050, "?")),
            None
        );
    }
}
