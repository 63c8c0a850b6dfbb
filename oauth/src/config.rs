//! What the application tells the machine: the resource, the grant, who the client is, and
//! the limits.

use std::time::Duration;

use url::Url;

use crate::error::{Cause, Error, Step};
use crate::store::AuthMethod;
use crate::uri;

/// A client the application registered with the authorization server beforehand.
#[derive(Clone, PartialEq, Eq)]
pub struct PreRegistered {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    pub(crate) auth_method: Option<AuthMethod>,
    pub(crate) issuer: Option<String>,
}

impl PreRegistered {
    /// A public client with this id (no secret).
    pub fn new(client_id: impl Into<String>) -> PreRegistered {
        PreRegistered {
            client_id: client_id.into(),
            client_secret: None,
            auth_method: None,
            issuer: None,
        }
    }

    /// With a client secret (a confidential client).
    pub fn secret(mut self, secret: impl Into<String>) -> PreRegistered {
        self.client_secret = Some(secret.into());
        self
    }

    /// Authenticating at the token endpoint with `method`. Without it, the method is chosen
    /// from the server's `token_endpoint_auth_methods_supported`: `client_secret_basic`,
    /// then `client_secret_post` for a client with a secret, else `none`.
    pub fn auth_method(mut self, method: AuthMethod) -> PreRegistered {
        self.auth_method = Some(method);
        self
    }

    /// Registered with the authorization server `issuer` only: when the resource names
    /// another server, the flow stops with an error rather than show it these credentials
    /// (MCP 2026-07-28, "Authorization Server Binding").
    pub fn issuer(mut self, issuer: impl Into<String>) -> PreRegistered {
        self.issuer = Some(issuer.into());
        self
    }
}

impl std::fmt::Debug for PreRegistered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreRegistered")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("auth_method", &self.auth_method)
            .field("issuer", &self.issuer)
            .finish()
    }
}

/// The client metadata sent with dynamic registration (RFC 7591 §2). The redirect URI,
/// grant types, response types and scope are filled in by the flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientMetadata {
    pub(crate) client_name: String,
    pub(crate) client_uri: Option<String>,
    pub(crate) software_id: Option<String>,
    pub(crate) software_version: Option<String>,
    pub(crate) auth_method: Option<AuthMethod>,
    pub(crate) application_type: Option<String>,
}

impl ClientMetadata {
    /// Metadata with `client_name` (what the consent screen shows).
    pub fn new(client_name: impl Into<String>) -> ClientMetadata {
        ClientMetadata {
            client_name: client_name.into(),
            client_uri: None,
            software_id: None,
            software_version: None,
            auth_method: None,
            application_type: None,
        }
    }

    /// With `client_uri`.
    pub fn client_uri(mut self, uri: impl Into<String>) -> ClientMetadata {
        self.client_uri = Some(uri.into());
        self
    }

    /// With `software_id` and `software_version`.
    pub fn software(mut self, id: impl Into<String>, version: impl Into<String>) -> ClientMetadata {
        self.software_id = Some(id.into());
        self.software_version = Some(version.into());
        self
    }

    /// Asking for `token_endpoint_auth_method` `method` (without it the member is left
    /// out and the server chooses; RFC 7591 §2 says `client_secret_basic`).
    pub fn auth_method(mut self, method: AuthMethod) -> ClientMetadata {
        self.auth_method = Some(method);
        self
    }

    /// With OpenID Connect's `application_type` (`native` or `web`). Without it, `native`
    /// for a loopback or non-http redirect URI and `web` otherwise, as the MCP
    /// specification (2026-07-28) asks.
    pub fn application_type(mut self, kind: impl Into<String>) -> ClientMetadata {
        self.application_type = Some(kind.into());
        self
    }
}

/// The grant the client uses to get tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Grant {
    /// The authorization code grant with PKCE: a user approves in a browser.
    AuthorizationCode {
        /// Parsed, for matching the redirect.
        redirect_uri: Url,
        /// As the application gave it: sent as it is (servers compare it as a string).
        raw: String,
    },
    /// The client credentials grant: the client acts on its own behalf.
    ClientCredentials,
}

/// The machine's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) resource_url: Url,
    pub(crate) resource: String,
    pub(crate) grant: Grant,
    pub(crate) pre_registered: Option<PreRegistered>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) registration: Option<ClientMetadata>,
    pub(crate) scope: Option<String>,
    pub(crate) authorization_server: Option<String>,
    pub(crate) refresh_margin: Duration,
    pub(crate) max_step_ups: u32,
    pub(crate) discovery_headers: Vec<(String, String)>,
    pub(crate) max_body: usize,
    pub(crate) offline_access: bool,
}

fn config_error(why: String) -> Error {
    Error::new(Step::Configuration, Cause::Config(why))
}

impl Config {
    /// The authorization code grant with PKCE for the protected resource at `resource`
    /// (the URL requests go to, as `https://mcp.example.com/mcp`; `https`, or `http` on a
    /// loopback host), the user's browser
    /// coming back to `redirect_uri` (`https`, or `http` on a loopback host).
    ///
    /// Dynamic registration is allowed (client name "sansrpc"), refresh tokens are asked
    /// for, and nothing is pre-registered.
    pub fn authorization_code(resource: &str, redirect_uri: &str) -> Result<Config, Error> {
        let redirect = uri::parse_http(redirect_uri).map_err(config_error)?;
        if !uri::secure_or_loopback(&redirect) {
            return Err(config_error(format!(
                "the redirect URI `{redirect_uri}` must be https or on a loopback host"
            )));
        }
        if redirect.fragment().is_some() {
            return Err(config_error(format!(
                "the redirect URI `{redirect_uri}` has a fragment"
            )));
        }
        Config::with_grant(
            resource,
            Grant::AuthorizationCode {
                redirect_uri: redirect,
                raw: redirect_uri.to_owned(),
            },
        )
    }

    /// The client credentials grant for the protected resource at `resource`, as the
    /// pre-registered confidential client `client_id` with `client_secret`.
    pub fn client_credentials(
        resource: &str,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Result<Config, Error> {
        let mut config = Config::with_grant(resource, Grant::ClientCredentials)?;
        config.pre_registered = Some(PreRegistered::new(client_id).secret(client_secret));
        config.registration = None;
        config.offline_access = false;
        Ok(config)
    }

    fn with_grant(resource: &str, grant: Grant) -> Result<Config, Error> {
        let resource_url = uri::parse_http(resource).map_err(config_error)?;
        // OAuth 2.1 §1.5 and §5: bearer tokens travel over TLS only.
        if !uri::secure_or_loopback(&resource_url) {
            return Err(config_error(format!(
                "the resource `{resource}` must be https or on a loopback host: its tokens \
                 would travel in the clear"
            )));
        }
        let canonical = uri::canonical_resource(resource).map_err(config_error)?;
        Ok(Config {
            resource_url,
            resource: canonical,
            grant,
            pre_registered: None,
            client_metadata_url: None,
            registration: Some(ClientMetadata::new("sansrpc")),
            scope: None,
            authorization_server: None,
            refresh_margin: Duration::from_secs(60),
            max_step_ups: 2,
            discovery_headers: Vec::new(),
            max_body: 256 * 1024,
            offline_access: true,
        })
    }

    /// Uses the pre-registered client `client` first (the first choice of the MCP
    /// specification's order).
    pub fn pre_registered(mut self, client: PreRegistered) -> Config {
        self.pre_registered = Some(client);
        self
    }

    /// Uses `url`, where the application hosts its Client ID Metadata Document, as the
    /// client id when the server advertises `client_id_metadata_document_supported` (the
    /// second choice). It must be `https` with a path.
    pub fn client_metadata_url(mut self, url: &str) -> Result<Config, Error> {
        let parsed = uri::parse_http(url).map_err(config_error)?;
        if parsed.scheme() != "https" || parsed.path() == "/" {
            return Err(config_error(format!(
                "the client metadata URL `{url}` must be https with a path"
            )));
        }
        self.client_metadata_url = Some(url.to_owned());
        Ok(self)
    }

    /// Registers dynamically with `metadata` when nothing else identifies the client (the
    /// last choice).
    pub fn registration(mut self, metadata: ClientMetadata) -> Config {
        self.registration = Some(metadata);
        self
    }

    /// Never registers dynamically.
    pub fn without_registration(mut self) -> Config {
        self.registration = None;
        self
    }

    /// The scope to ask for when neither the challenge nor the resource's
    /// `scopes_supported` says (both come first, as the MCP specification orders them).
    pub fn scope(mut self, scope: impl Into<String>) -> Config {
        self.scope = Some(scope.into());
        self
    }

    /// The authorization server to use when the resource publishes no metadata (the
    /// "pre-configured values" of the MCP specification); without it, that is an error.
    pub fn authorization_server(mut self, issuer: &str) -> Result<Config, Error> {
        uri::parse_http(issuer).map_err(config_error)?;
        self.authorization_server = Some(issuer.to_owned());
        Ok(self)
    }

    /// Refreshes a token this long before it expires (default 60 s), or after half its
    /// lifetime when that comes first (a 60 s token is refreshed after 30 s).
    pub fn refresh_margin(mut self, margin: Duration) -> Config {
        self.refresh_margin = margin;
        self
    }

    /// Gives up after this many step-ups in a row for `insufficient_scope` (default 2: with
    /// the authorization before them, three authorization requests for one refusal, the
    /// most the MCP conformance suite allows a client that meets a scope it never gets).
    pub fn max_step_ups(mut self, n: u32) -> Config {
        self.max_step_ups = n;
        self
    }

    /// Sends this header with every metadata request (MCP adds `MCP-Protocol-Version`),
    /// in place of one of the same name given before.
    pub fn discovery_header(mut self, name: &str, value: impl Into<String>) -> Config {
        let name = name.to_ascii_lowercase();
        self.discovery_headers.retain(|(n, _)| *n != name);
        self.discovery_headers.push((name, value.into()));
        self
    }

    /// Refuses answers with a body longer than `bytes` (default 256 KiB).
    pub fn max_body(mut self, bytes: usize) -> Config {
        self.max_body = bytes;
        self
    }

    /// Whether to ask for refresh tokens: the `refresh_token` grant type at registration,
    /// and `offline_access` when the server lists it (default on).
    pub fn offline_access(mut self, on: bool) -> Config {
        self.offline_access = on;
        self
    }

    /// The canonical URI of the resource (the `resource` parameter unless its metadata
    /// names a parent, and the key a store keeps credentials under).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The redirect URI, for the authorization code grant.
    pub fn redirect_uri(&self) -> Option<&str> {
        match &self.grant {
            Grant::AuthorizationCode { raw, .. } => Some(raw),
            Grant::ClientCredentials => None,
        }
    }
}
