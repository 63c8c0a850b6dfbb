//! The `_meta` objects of request params, results and notification params.

use serde::Serialize;

use super::{
    ClientCapabilities, Implementation, JsonObject, LoggingLevel, ProgressToken, RequestId,
};

/// The `_meta` of request params (`RequestMetaObject`).
///
/// 2026-07-28 requires [`protocol_version`](Self::protocol_version) and
/// [`client_capabilities`](Self::client_capabilities) on every request (a request without
/// them gets `-32602`); 2025-11-25 only knows `progressToken`. All fields are optional here
/// so one type reads both; every other key (trace context, `related-task`, vendor keys) is
/// kept in [`extra`](Self::extra).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RequestMeta {
    /// `progressToken`: the sender wants `notifications/progress` with this token.
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    pub progress_token: Option<ProgressToken>,
    /// `io.modelcontextprotocol/protocolVersion` (2026-07-28, required): the protocol
    /// version of this request; must equal the `MCP-Protocol-Version` header on HTTP.
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol_version: Option<String>,
    /// `io.modelcontextprotocol/clientCapabilities` (2026-07-28, required): the client's
    /// capabilities for this request (`{}` = none). Servers must not infer capabilities from
    /// earlier requests.
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_capabilities: Option<ClientCapabilities>,
    /// `io.modelcontextprotocol/clientInfo` (2026-07-28, optional; clients SHOULD send it,
    /// servers MUST NOT require it).
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Implementation>,
    /// `io.modelcontextprotocol/logLevel` (2026-07-28, optional, deprecated with logging):
    /// the client's opt-in to `notifications/message` at this level or above, for this
    /// request only.
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<LoggingLevel>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(RequestMeta {
    progress_token: "progressToken",
    protocol_version: "io.modelcontextprotocol/protocolVersion",
    client_capabilities: "io.modelcontextprotocol/clientCapabilities",
    client_info: "io.modelcontextprotocol/clientInfo",
    log_level: "io.modelcontextprotocol/logLevel",
});

impl RequestMeta {
    /// The `_meta` a 2026-07-28 request needs: a protocol version and client capabilities.
    pub fn stateless(
        protocol_version: impl Into<String>,
        client_capabilities: ClientCapabilities,
    ) -> Self {
        RequestMeta {
            protocol_version: Some(protocol_version.into()),
            client_capabilities: Some(client_capabilities),
            ..Default::default()
        }
    }

    /// A `_meta` that only asks for progress notifications.
    pub fn with_progress_token(token: impl Into<ProgressToken>) -> Self {
        RequestMeta {
            progress_token: Some(token.into()),
            ..Default::default()
        }
    }
}

/// The `_meta` of a result (`ResultMetaObject`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ResultMeta {
    /// `io.modelcontextprotocol/serverInfo` (2026-07-28): the server's identity; servers
    /// SHOULD include it in every result.
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// `io.modelcontextprotocol/subscriptionId` (2026-07-28): set (and required) only on the
    /// result that closes a `subscriptions/listen` stream; the id of that listen request.
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ResultMeta {
    server_info: "io.modelcontextprotocol/serverInfo",
    subscription_id: "io.modelcontextprotocol/subscriptionId",
});

impl ResultMeta {
    /// A `_meta` naming the server.
    pub fn server_info(server_info: Implementation) -> Self {
        ResultMeta {
            server_info: Some(server_info),
            ..Default::default()
        }
    }
}

/// The `_meta` of notification params (`NotificationMetaObject`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NotificationMeta {
    /// `io.modelcontextprotocol/subscriptionId` (2026-07-28): on every notification sent on a
    /// `subscriptions/listen` stream, the id of that listen request (same JSON type); absent
    /// on request-scoped notifications such as progress.
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// Every other key.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(NotificationMeta {
    subscription_id: "io.modelcontextprotocol/subscriptionId",
});

impl NotificationMeta {
    /// A `_meta` tagging a notification with its subscription.
    pub fn subscription(subscription_id: impl Into<RequestId>) -> Self {
        NotificationMeta {
            subscription_id: Some(subscription_id.into()),
            ..Default::default()
        }
    }
}
