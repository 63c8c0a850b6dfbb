//! The `data` of MCP's JSON-RPC errors (codes in [`error_codes`](super::error_codes)).

use serde::Serialize;

use super::{ClientCapabilities, ElicitRequestUrlParams, JsonObject};

/// `data` of an unsupported-protocol-version error: `-32022`
/// ([`UNSUPPORTED_PROTOCOL_VERSION`](super::error_codes::UNSUPPORTED_PROTOCOL_VERSION)) in
/// 2026-07-28; in 2025-11-25 the same shape goes with `-32602` in answer to `initialize`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UnsupportedProtocolVersionData {
    /// The versions the server supports.
    pub supported: Vec<String>,
    /// The version the client asked for.
    pub requested: String,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(UnsupportedProtocolVersionData {
    supported: "supported" required,
    requested: "requested" required,
});

/// `data` of `-32021`
/// ([`MISSING_REQUIRED_CLIENT_CAPABILITY`](super::error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY),
/// 2026-07-28): the capabilities the request needs, as a capabilities object (e.g.
/// `{"sampling": {}}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingRequiredClientCapabilityData {
    /// The client capabilities the server requires for this request.
    pub required_capabilities: ClientCapabilities,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(MissingRequiredClientCapabilityData {
    required_capabilities: "requiredCapabilities" required,
});

/// `data` of `-32042`
/// ([`URL_ELICITATION_REQUIRED`](super::error_codes::URL_ELICITATION_REQUIRED), 2025-11-25
/// only): the URL-mode elicitations the user must complete first.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UrlElicitationRequiredData {
    /// The elicitations.
    pub elicitations: Vec<ElicitRequestUrlParams>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(UrlElicitationRequiredData {
    elicitations: "elicitations" required,
});

/// `data` of a resource-not-found error: `-32602` in 2026-07-28, `-32002`
/// ([`RESOURCE_NOT_FOUND`](super::error_codes::RESOURCE_NOT_FOUND)) before.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ResourceNotFoundData {
    /// The URI that was not found.
    pub uri: String,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ResourceNotFoundData {
    uri: "uri" required,
});
