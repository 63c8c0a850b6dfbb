//! [`Connect`]: how the Streamable HTTP client reaches its server: the TLS it trusts, the
//! headers and credentials every request carries, and the per-call headers of SEP-2243.

use std::io;
use std::sync::Arc;

use hyper::header::{HeaderName, HeaderValue};
use sansrpc_oauth::driver::{AuthorizerBuilder, CredentialProvider, HyperTransport, StaticToken};
use sansrpc_tokio::Builder;

use super::client::{open, ExtraHeaders, Settings};
use crate::streamable::client::OWN_HEADERS;
use crate::types::version;

/// How to reach a Streamable HTTP MCP server: its URL, the certificates to trust, and what
/// every request of the session carries (static headers, a bearer token, or OAuth 2.1
/// credentials), then [`connect`](Connect::connect). [`connect`](super::connect) is the
/// one-liner for a server that needs none of it.
///
/// Whatever the credentials, they go on **every** request of the session: `initialize` (or
/// `server/discover`), each POST, the session's GET stream and its resumptions, and the
/// `DELETE` that ends it.
///
/// ```no_run
/// use sansrpc::connection::{Config, Profile};
/// use sansrpc_mcp::client::ClientBuilder;
/// use sansrpc_mcp::tokio::Connect;
/// use sansrpc_tokio::Builder;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mcp = ClientBuilder::new("me", "1");
/// let builder = Builder::new().config(Config::for_profile(Profile::Mcp)).router(mcp.router());
/// let conn = Connect::new("https://mcp.example.com/mcp")
///     .bearer(&std::env::var("MCP_TOKEN")?)
///     .header("X-Team", "research")
///     .connect(builder)?;
/// let server = mcp.initialize(&conn).await?;
/// println!("{} tools", server.all_tools().await?.len());
/// # Ok(()) }
/// ```
///
/// On a 401 (or a 403 asking for more scope) the credentials decide: a static token
/// ([`bearer`](Self::bearer)) fails the call saying the server refused it; an OAuth
/// authorizer ([`oauth`](Self::oauth), [`auth`](Self::auth)) runs discovery (the
/// `WWW-Authenticate` challenge, RFC 9728, RFC 8414), the client's identity (pre-registered,
/// a Client ID Metadata Document, or dynamic registration), the code flow with PKCE, the
/// `resource` and `iss` checks, the scope, a step-up or a refresh, then sends the request
/// again. A failure fails the call with
/// [`ClientError::Transport`](crate::client::ClientError::Transport) naming the OAuth step
/// and the authorization server's `error` and `error_description`.
#[must_use = "a Connect does nothing until `connect`"]
pub struct Connect {
    url: String,
    tls: Option<Arc<sansrpc_tokio::tls::rustls::ClientConfig>>,
    headers: Vec<(String, String)>,
    credentials: Option<Arc<dyn CredentialProvider>>,
    oauth: Option<Box<AuthorizerBuilder>>,
    per_frame: Option<Arc<ExtraHeaders>>,
    protocol_version: String,
}

impl std::fmt::Debug for Connect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Connect")
            .field("url", &self.url)
            .field("tls", &self.tls.is_some())
            .field("headers", &names)
            .field(
                "credentials",
                &(self.credentials.is_some() || self.oauth.is_some()),
            )
            .field("protocol_version", &self.protocol_version)
            .finish_non_exhaustive()
    }
}

impl Connect {
    /// The server's endpoint: `http://`, or `https://` trusting the Mozilla root
    /// certificates unless [`tls`](Self::tls) says otherwise.
    pub fn new(url: impl Into<String>) -> Connect {
        Connect {
            url: url.into(),
            tls: None,
            headers: Vec::new(),
            credentials: None,
            oauth: None,
            per_frame: None,
            protocol_version: version::LATEST.to_owned(),
        }
    }

    /// Trusts what `config` trusts for `https://` (and the OAuth requests of
    /// [`oauth`](Self::oauth)): a private CA or a self-signed certificate
    /// ([`client_config_with_roots`](sansrpc_tokio::tls::client_config_with_roots), with
    /// the certificates of a PEM file from
    /// `rustls::pki_types::CertificateDer::pem_file_iter`), or the system's store
    /// ([`client_config_with_native_roots`](sansrpc_tokio::tls::client_config_with_native_roots)).
    pub fn tls(mut self, config: Arc<sansrpc_tokio::tls::rustls::ClientConfig>) -> Connect {
        self.tls = Some(config);
        self
    }

    /// Sends the header `name: value` on every request (an API key, a tenant). The names the
    /// transport sets itself (`Accept`, `Content-Type`, `Mcp-Session-Id`,
    /// `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Last-Event-ID`, `Host`) are
    /// refused by [`connect`](Self::connect), as is an `Authorization` header beside
    /// credentials.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Connect {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends `Authorization: Bearer <token>` on every request: a token the user already has
    /// (never refreshed). A 401 fails the call with
    /// [`ClientError::Transport`](crate::client::ClientError::Transport): the server
    /// refused the token, with its `error` and `error_description`.
    pub fn bearer(self, token: &str) -> Connect {
        self.auth(StaticToken::bearer(token))
    }

    /// Takes each request's `Authorization` from `credentials`, and hands it each answer (a
    /// 401 or 403 may start a refresh, an authorization or a step-up, after which the
    /// request is sent again): an `sansrpc_oauth::driver::Authorizer` already built, a
    /// [`StaticToken`], or your own provider. With an `Authorizer`, build it with
    /// `discovery_header("MCP-Protocol-Version", …)` as the MCP specification asks, or let
    /// [`oauth`](Self::oauth) finish it.
    pub fn auth(mut self, credentials: impl CredentialProvider + 'static) -> Connect {
        self.credentials = Some(Arc::new(credentials));
        self.oauth = None;
        self
    }

    /// OAuth 2.1 for this server: [`connect`](Self::connect) builds the authorizer from
    /// `authorizer` (its resource must be this URL or a parent of it on the same origin,
    /// compared in canonical form: an authorizer for another resource is refused with
    /// `InvalidInput`), adding what the
    /// MCP specification adds (`MCP-Protocol-Version` on the discovery requests) and, when
    /// it was given no transport, one that trusts what this connection trusts
    /// ([`tls`](Self::tls)).
    ///
    /// ```no_run
    /// use sansrpc_mcp::tokio::Connect;
    /// use sansrpc_oauth::driver::{Authorizer, HeadlessUserAgent, HyperTransport};
    /// use sansrpc_oauth::Config;
    ///
    /// # fn run(builder: sansrpc_tokio::Builder) -> Result<(), Box<dyn std::error::Error>> {
    /// let url = "https://mcp.example.com/mcp";
    /// let config = Config::authorization_code(url, "http://127.0.0.1:8765/callback")?;
    /// // An authorization server that approves at once; a desktop application opens a
    /// // browser instead (a `UserAgent` of its own).
    /// let user = HeadlessUserAgent::new(HyperTransport::new());
    /// let conn = Connect::new(url)
    ///     .oauth(Authorizer::builder(config).user_agent(user))
    ///     .connect(builder)?;
    /// # drop(conn); Ok(()) }
    /// ```
    pub fn oauth(mut self, authorizer: AuthorizerBuilder) -> Connect {
        self.oauth = Some(Box::new(authorizer));
        self.credentials = None;
        self
    }

    /// The revision named in the `MCP-Protocol-Version` header of the OAuth discovery
    /// requests [`oauth`](Self::oauth) makes (default [`version::LATEST`]); the MCP requests
    /// carry the revision of their session or their `_meta` whatever this says.
    pub fn protocol_version(mut self, version: impl Into<String>) -> Connect {
        self.protocol_version = version.into();
        self
    }

    /// Adds to each POST the headers `headers` gives for its frame (a name and a value each,
    /// sent as they are): the `Mcp-Param-*` headers of a `tools/call`'s `x-mcp-header`
    /// arguments (SEP-2243), from the typed client's
    /// [`ParamHeaders::for_frame`](crate::client::ParamHeaders::for_frame), which remembers
    /// the marks of the tools it listed:
    ///
    /// ```no_run
    /// use sansrpc::connection::{Config, Profile};
    /// use sansrpc_mcp::client::ClientBuilder;
    /// use sansrpc_mcp::tokio::Connect;
    /// use sansrpc_tokio::Builder;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let mcp = ClientBuilder::new("me", "1");
    /// let builder = Builder::new().config(Config::for_profile(Profile::Mcp)).router(mcp.router());
    /// let headers = mcp.param_headers();
    /// let conn = Connect::new("http://127.0.0.1:3000/mcp")
    ///     .headers_for(move |frame| headers.for_frame(frame))
    ///     .connect(builder)?;
    /// let server = mcp.discover(&conn).await?;
    /// for tool in server.all_tools().await? {
    ///     println!("{}", tool.name);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn headers_for<F>(mut self, headers: F) -> Connect
    where
        F: Fn(&[u8]) -> Vec<(String, String)> + Send + Sync + 'static,
    {
        self.per_frame = Some(Arc::new(headers));
        self
    }

    /// Spawns the connection's driver on the current tokio runtime with `builder` (its
    /// router answers the server's requests: sampling, elicitation, roots). Nothing is sent
    /// until the first call (`initialize`, or `server/discover` on 2026-07-28).
    ///
    /// An error (`InvalidInput`) for a URL that is not `http://` or `https://`, a header
    /// that is not one or that the transport sets itself, an OAuth authorizer for another
    /// resource than this URL, or an OAuth configuration the authorizer refuses.
    pub fn connect(self, builder: Builder) -> io::Result<sansrpc_tokio::Spawned> {
        let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
        let mut headers = Vec::with_capacity(self.headers.len());
        for (name, value) in &self.headers {
            let parsed = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| invalid(format!("the header name `{name}` is not one: {e}")))?;
            if OWN_HEADERS.contains(&parsed.as_str()) {
                return Err(invalid(format!(
                    "the header `{name}` is set by the transport itself"
                )));
            }
            let credentials = self.credentials.is_some() || self.oauth.is_some();
            if credentials && parsed == hyper::header::AUTHORIZATION {
                return Err(invalid(format!(
                    "the header `{name}` beside credentials (bearer, auth, oauth): give one"
                )));
            }
            let value = HeaderValue::from_str(value).map_err(|e| {
                invalid(format!("the value of the header `{name}` is not one: {e}"))
            })?;
            headers.push((parsed, value));
        }
        let credentials = match self.oauth {
            Some(authorizer) => {
                // The authorizer's tokens go to this URL: they must be for it (RFC 8707
                // §2, the MCP specification's token audience binding): its resource is
                // this URL or a parent of it on the same origin (a server at `/mcp` may
                // name its origin, as RFC 9728 §3.3 is read). A URL that is not one is for
                // `open` to refuse.
                if let Ok(url) = sansrpc_oauth::uri::canonical_resource(&self.url) {
                    if !sansrpc_oauth::uri::resource_covers(authorizer.resource(), &url) {
                        return Err(invalid(format!(
                            "the OAuth authorizer is for the resource `{}`, not for `{url}`: \
                             its tokens would be sent to a resource they are not for \
                             (build its Config with this URL)",
                            authorizer.resource()
                        )));
                    }
                }
                let mut authorizer =
                    authorizer.discovery_header("MCP-Protocol-Version", self.protocol_version);
                if !authorizer.has_transport() {
                    let transport = match &self.tls {
                        Some(tls) => HyperTransport::with_tls((**tls).clone()),
                        None => HyperTransport::new(),
                    };
                    authorizer = authorizer.transport(transport);
                }
                let authorizer = authorizer.build().map_err(|e| invalid(e.to_string()))?;
                Some(Arc::new(authorizer) as Arc<dyn CredentialProvider>)
            }
            None => self.credentials,
        };
        open(
            &self.url,
            builder,
            Settings {
                tls: self.tls,
                headers,
                credentials,
                per_frame: self.per_frame,
            },
        )
    }
}
