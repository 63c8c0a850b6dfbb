//! Lifecycle: `initialize` / `notifications/initialized` (2025-11-25 and earlier) and
//! `server/discover` (2026-07-28).

use serde::{Deserialize, Serialize};

use super::{
    CacheScope, ClientCapabilities, Implementation, JsonObject, RequestMeta, ResultMeta,
    ResultType, ServerCapabilities,
};

/// Params of `initialize` (2025-11-25 and earlier).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// The latest protocol version the client supports.
    pub protocol_version: String,
    /// The client's capabilities.
    pub capabilities: ClientCapabilities,
    /// The client's identity.
    pub client_info: Implementation,
}

/// Result of `initialize` (2025-11-25 and earlier).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// The version the server chose: the client's if supported, else the server's latest.
    pub protocol_version: String,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// The server's identity.
    pub server_info: Implementation,
    /// How to use the server (e.g. for a system prompt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(InitializeResult {
    meta: "_meta",
    protocol_version: "protocolVersion" required,
    capabilities: "capabilities" required,
    server_info: "serverInfo" required,
    instructions: "instructions",
});

/// Params of `notifications/initialized` (2025-11-25 and earlier).
pub type InitializedNotificationParams = super::NotificationParams;

/// Params of `server/discover` (2026-07-28): only the request `_meta`.
pub type DiscoverRequestParams = super::RequestParams;

/// Result of `server/discover` (2026-07-28; servers MUST implement the method).
///
/// The server's identity is not a member: it goes in `_meta`
/// (`io.modelcontextprotocol/serverInfo`, [`ResultMeta::server_info`]).
/// `resultType`, `ttlMs` and `cacheScope` are required by the schema; they are `Option`s
/// only so that a lenient reader accepts a result without them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Result metadata (SHOULD carry `serverInfo`).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// `"complete"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The protocol versions the server supports.
    pub supported_versions: Vec<String>,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// How to use the server (e.g. for a system prompt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long in milliseconds the client may cache this result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache this result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(DiscoverResult {
    meta: "_meta",
    result_type: "resultType",
    supported_versions: "supportedVersions" required,
    capabilities: "capabilities" required,
    instructions: "instructions",
    ttl_ms: "ttlMs",
    cache_scope: "cacheScope",
});

impl DiscoverResult {
    /// A complete discover result with every schema-required member set.
    pub fn new(
        supported_versions: Vec<String>,
        capabilities: ServerCapabilities,
        server_info: Implementation,
        ttl_ms: u64,
        cache_scope: CacheScope,
    ) -> Self {
        DiscoverResult {
            meta: Some(ResultMeta::server_info(server_info)),
            result_type: Some(ResultType::Complete),
            supported_versions,
            capabilities,
            instructions: None,
            ttl_ms: Some(ttl_ms),
            cache_scope: Some(cache_scope),
            extra: JsonObject::new(),
        }
    }

    /// The server's identity from `_meta`, if given.
    pub fn server_info(&self) -> Option<&Implementation> {
        self.meta.as_ref().and_then(|m| m.server_info.as_ref())
    }
}
