//! The two metadata documents a client reads before it authorizes: the protected
//! resource's (RFC 9728 §2) and the authorization server's (RFC 8414 §2, or an OpenID
//! Provider configuration). Only the members the flow acts on are read; the rest is
//! ignored, not refused (both documents are extensible).

use serde::{Deserialize, Serialize};

/// What a client reads from protected-resource metadata (RFC 9728 §2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// `resource`: the resource identifier.
    pub resource: String,
    /// `authorization_servers`: issuer identifiers of the servers that issue tokens for it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// `scopes_supported`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// `resource_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
}

/// What a client reads from authorization-server metadata (RFC 8414 §2, RFC 9207 §3,
/// the Client ID Metadata Document draft).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuthorizationServerMetadata {
    /// `issuer`: must be the identifier the document's URL was built from.
    pub issuer: String,
    /// `authorization_endpoint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// `token_endpoint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// `registration_endpoint`: dynamic client registration (RFC 7591) is offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// `scopes_supported`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// `grant_types_supported`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// `token_endpoint_auth_methods_supported` (absent means `client_secret_basic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// `code_challenge_methods_supported`: absent means no PKCE, and the MCP
    /// specification says to refuse such a server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// `client_id_metadata_document_supported`: a URL may be the client id (CIMD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    /// `authorization_response_iss_parameter_supported` (RFC 9207): the redirect carries
    /// `iss`, and one without it is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
}

impl AuthorizationServerMetadata {
    /// Whether `scopes_supported` lists `scope`.
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }

    /// Whether PKCE with `S256` is offered.
    pub fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|x| x == "S256"))
    }

    /// The token-endpoint authentication methods offered (RFC 8414 §2: when the member is
    /// absent, `client_secret_basic`).
    pub fn auth_methods(&self) -> Vec<&str> {
        match &self.token_endpoint_auth_methods_supported {
            Some(methods) => methods.iter().map(String::as_str).collect(),
            None => vec!["client_secret_basic"],
        }
    }
}
