//! The agent card and the security schemes it declares (§4.4, §4.5, §8).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::serde_util::{is_false, nullable, opt_bool, opt_string, opt_struct, Struct};

/// What an agent is, where it listens and what it can do: served at
/// [`AGENT_CARD_PATH`](crate::version::AGENT_CARD_PATH) (§4.4.1).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// `name` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// `description` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    pub description: String,
    /// `supportedInterfaces` (REQUIRED): one per binding, the preferred first.
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "supported_interfaces")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// `provider`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// `version` (REQUIRED): the agent's own version.
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
    /// `documentationUrl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "documentation_url")]
    pub documentation_url: Option<String>,
    /// `capabilities` (REQUIRED).
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// `securitySchemes`: by name.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    #[serde(alias = "security_schemes")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// `securityRequirements`: the schemes a client must satisfy (any one entry).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(alias = "security_requirements")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// `defaultInputModes` (REQUIRED): media types the agent takes.
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "default_input_modes")]
    pub default_input_modes: Vec<String>,
    /// `defaultOutputModes` (REQUIRED): media types the agent produces.
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "default_output_modes")]
    pub default_output_modes: Vec<String>,
    /// `skills` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    pub skills: Vec<AgentSkill>,
    /// `signatures`: JWS signatures of the card (§8.4).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub signatures: Vec<AgentCardSignature>,
    /// `iconUrl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "icon_url")]
    pub icon_url: Option<String>,
}

/// One way to reach the agent: a URL, a protocol binding and a protocol version (§4.4.6).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// `url` (REQUIRED): for HTTP bindings, the absolute URL of the endpoint.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// `protocolBinding` (REQUIRED): `JSONRPC`, `GRPC`, `HTTP+JSON` or another.
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "protocol_binding")]
    pub protocol_binding: String,
    /// `tenant`: a routing value the client puts in every request to this interface.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub tenant: Option<String>,
    /// `protocolVersion` (REQUIRED): `1.0`.
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "protocol_version")]
    pub protocol_version: String,
}

impl AgentInterface {
    /// The JSON-RPC binding of protocol version 1.0 at `url` (the endpoint's absolute URL).
    pub fn jsonrpc(url: &str) -> AgentInterface {
        AgentInterface {
            url: url.into(),
            protocol_binding: crate::version::JSONRPC_BINDING.into(),
            tenant: None,
            protocol_version: crate::version::PROTOCOL_VERSION.into(),
        }
    }
}

/// The organization behind the agent (§4.4.2).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// `url` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// `organization` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    pub organization: String,
}

/// The optional features the agent supports (§4.4.3). Absent means not supported.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `streaming`: `SendStreamingMessage` and `SubscribeToTask`.
    #[serde(
        default,
        deserialize_with = "opt_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub streaming: Option<bool>,
    /// `pushNotifications`: the push notification config methods and webhooks.
    #[serde(
        default,
        deserialize_with = "opt_bool",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "push_notifications")]
    pub push_notifications: Option<bool>,
    /// `extensions`: the protocol extensions supported.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<AgentExtension>,
    /// `extendedAgentCard`: `GetExtendedAgentCard`.
    #[serde(
        default,
        deserialize_with = "opt_bool",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "extended_agent_card")]
    pub extended_agent_card: Option<bool>,
}

/// A protocol extension the agent supports (§4.4.4).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    /// `uri`: identifies the extension.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub uri: Option<String>,
    /// `description`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
    /// `required`: clients must declare support for it.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub required: bool,
    /// `params`: the extension's configuration.
    #[serde(
        default,
        deserialize_with = "opt_struct",
        skip_serializing_if = "Option::is_none"
    )]
    pub params: Option<Struct>,
}

/// Something the agent can do (§4.4.5).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// `id` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// `name` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// `description` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    pub description: String,
    /// `tags` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    pub tags: Vec<String>,
    /// `examples`: prompts that use the skill.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub examples: Vec<String>,
    /// `inputModes`: media types, when they differ from the card's defaults.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(alias = "input_modes")]
    pub input_modes: Vec<String>,
    /// `outputModes`: media types, when they differ from the card's defaults.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(alias = "output_modes")]
    pub output_modes: Vec<String>,
    /// `securityRequirements`: for this skill.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(alias = "security_requirements")]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// A JWS signature of the card (§4.4.7, §8.4).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCardSignature {
    /// `protected` (REQUIRED): the base64url protected header.
    #[serde(default, deserialize_with = "nullable")]
    pub protected: String,
    /// `signature` (REQUIRED): base64url.
    #[serde(default, deserialize_with = "nullable")]
    pub signature: String,
    /// `header`: the unprotected header.
    #[serde(
        default,
        deserialize_with = "opt_struct",
        skip_serializing_if = "Option::is_none"
    )]
    pub header: Option<Struct>,
}

/// A list of strings (`StringList`): the scopes of one scheme in a requirement.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StringList {
    /// `list`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub list: Vec<String>,
}

/// Scheme names (keys of [`AgentCard::security_schemes`]) with the scopes each needs; a
/// client satisfies all of them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SecurityRequirement {
    /// `schemes`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub schemes: BTreeMap<String, StringList>,
}

/// How a client authenticates: one member naming the kind (§4.5.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SecurityScheme {
    /// `apiKeySecurityScheme`.
    #[serde(alias = "api_key_security_scheme")]
    ApiKeySecurityScheme(ApiKeySecurityScheme),
    /// `httpAuthSecurityScheme`.
    #[serde(alias = "http_auth_security_scheme")]
    HttpAuthSecurityScheme(HttpAuthSecurityScheme),
    /// `oauth2SecurityScheme`.
    #[serde(alias = "oauth2_security_scheme")]
    Oauth2SecurityScheme(OAuth2SecurityScheme),
    /// `openIdConnectSecurityScheme`.
    #[serde(alias = "open_id_connect_security_scheme")]
    OpenIdConnectSecurityScheme(OpenIdConnectSecurityScheme),
    /// `mtlsSecurityScheme`.
    #[serde(alias = "mtls_security_scheme")]
    MtlsSecurityScheme(MutualTlsSecurityScheme),
}

/// An API key in a header, query parameter or cookie (`APIKeySecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeySecurityScheme {
    /// `description`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
    /// `location` (REQUIRED): `query`, `header` or `cookie`.
    #[serde(default, deserialize_with = "nullable")]
    pub location: String,
    /// `name` (REQUIRED): of the header, parameter or cookie.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
}

/// HTTP authentication, e.g. `Bearer` (`HTTPAuthSecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// `description`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
    /// `scheme` (REQUIRED): the RFC 7235 scheme name (`Bearer`, `Basic`).
    #[serde(default, deserialize_with = "nullable")]
    pub scheme: String,
    /// `bearerFormat`: a hint (`JWT`).
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "bearer_format")]
    pub bearer_format: Option<String>,
}

/// OAuth 2.0 (`OAuth2SecurityScheme`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    /// `description`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
    /// `flows` (REQUIRED).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<OAuthFlows>,
    /// `oauth2MetadataUrl`: RFC 8414 authorization server metadata.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "oauth2_metadata_url")]
    pub oauth2_metadata_url: Option<String>,
}

/// OpenID Connect (`OpenIdConnectSecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    /// `description`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
    /// `openIdConnectUrl` (REQUIRED): the discovery document.
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "open_id_connect_url")]
    pub open_id_connect_url: String,
}

/// Mutual TLS (`MutualTlsSecurityScheme`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MutualTlsSecurityScheme {
    /// `description`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
}

/// The one OAuth 2.0 flow a scheme uses (`OAuthFlows`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OAuthFlows {
    /// `authorizationCode`.
    #[serde(alias = "authorization_code")]
    AuthorizationCode(AuthorizationCodeOAuthFlow),
    /// `clientCredentials`.
    #[serde(alias = "client_credentials")]
    ClientCredentials(ClientCredentialsOAuthFlow),
    /// `implicit` (deprecated by the specification).
    Implicit(ImplicitOAuthFlow),
    /// `password` (deprecated by the specification).
    Password(PasswordOAuthFlow),
    /// `deviceCode`: RFC 8628.
    #[serde(alias = "device_code")]
    DeviceCode(DeviceCodeOAuthFlow),
}

/// The authorization code flow.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationCodeOAuthFlow {
    /// `authorizationUrl` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "authorization_url")]
    pub authorization_url: String,
    /// `tokenUrl` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "token_url")]
    pub token_url: String,
    /// `refreshUrl`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "refresh_url")]
    pub refresh_url: Option<String>,
    /// `scopes` (REQUIRED): scope name to description.
    #[serde(default, deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
    /// `pkceRequired`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    #[serde(alias = "pkce_required")]
    pub pkce_required: bool,
}

/// The client credentials flow.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCredentialsOAuthFlow {
    /// `tokenUrl` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "token_url")]
    pub token_url: String,
    /// `refreshUrl`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "refresh_url")]
    pub refresh_url: Option<String>,
    /// `scopes` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
}

/// The implicit flow (deprecated).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImplicitOAuthFlow {
    /// `authorizationUrl`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "authorization_url")]
    pub authorization_url: Option<String>,
    /// `refreshUrl`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "refresh_url")]
    pub refresh_url: Option<String>,
    /// `scopes`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub scopes: BTreeMap<String, String>,
}

/// The resource owner password flow (deprecated).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PasswordOAuthFlow {
    /// `tokenUrl`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "token_url")]
    pub token_url: Option<String>,
    /// `refreshUrl`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "refresh_url")]
    pub refresh_url: Option<String>,
    /// `scopes`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub scopes: BTreeMap<String, String>,
}

/// The device authorization flow (RFC 8628).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCodeOAuthFlow {
    /// `deviceAuthorizationUrl` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "device_authorization_url")]
    pub device_authorization_url: String,
    /// `tokenUrl` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    #[serde(alias = "token_url")]
    pub token_url: String,
    /// `refreshUrl`.
    #[serde(
        default,
        deserialize_with = "opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "refresh_url")]
    pub refresh_url: Option<String>,
    /// `scopes` (REQUIRED).
    #[serde(default, deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
}
