//! What an application keeps between runs (the client's registration and its tokens), and
//! the trait it keeps them behind.
//!
//! [`Credentials`] is serde data: a store writes it where the application wants (a keychain
//! entry, a file with the right permissions). The machine never calls the store; it takes
//! what was loaded when it is built and emits `Output::Save` when something changed, and a
//! driver (the `hyper` feature's `Authorizer`) calls [`TokenStore::save`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// How the client authenticates at the token endpoint (RFC 6749 §2.3, RFC 7591 §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    /// HTTP Basic with the form-encoded id and secret.
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form body.
    ClientSecretPost,
    /// A public client: `client_id` in the body, no secret.
    None,
}

impl AuthMethod {
    /// The method's registered name.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::None => "none",
        }
    }

    /// The method named `name`, if this client can use it.
    pub fn from_name(name: &str) -> Option<AuthMethod> {
        match name {
            "client_secret_basic" => Some(AuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(AuthMethod::ClientSecretPost),
            "none" => Some(AuthMethod::None),
            _ => None,
        }
    }
}

/// Where a client identity came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientSource {
    /// Given by the application (pre-registration).
    PreRegistered,
    /// A Client ID Metadata Document URL used as the client id.
    MetadataDocument,
    /// Dynamic client registration (RFC 7591).
    Registered,
}

/// A client identity at one authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredClient {
    /// `client_id`.
    pub client_id: String,
    /// `client_secret`, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How it authenticates at the token endpoint.
    pub auth_method: AuthMethod,
    /// The issuer it belongs to (a registration is valid only there); `None` when unbound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// Where it came from.
    pub source: ClientSource,
}

impl fmt::Debug for RegisteredClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredClient")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("auth_method", &self.auth_method)
            .field("issuer", &self.issuer)
            .field("source", &self.source)
            .finish()
    }
}

/// Tokens from one authorization server for one resource.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch (`None`: not said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When the access token was issued, in seconds since the Unix epoch (`None`: not
    /// known, as for tokens stored before this was kept): with `expires_at`, its lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<u64>,
    /// The scope granted (or, when the server did not say, the scope asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The issuer that issued them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The `resource` they were asked for (RFC 8707).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
}

impl TokenSet {
    /// The `Authorization` header value: `Bearer <access token>`.
    pub fn authorization(&self) -> String {
        format!("Bearer {}", self.access_token)
    }

    /// Seconds left before expiry at `now` (`None` when the expiry is unknown; 0 when past).
    pub fn remaining(&self, now: SystemTime) -> Option<u64> {
        self.expires_at
            .map(|at| at.saturating_sub(unix_seconds(now)))
    }

    /// The token's lifetime in seconds, when both ends are known.
    pub fn lifetime(&self) -> Option<u64> {
        Some(self.expires_at?.saturating_sub(self.issued_at?))
    }

    /// Whether the token is expired, or expires within `margin` of `now`; the margin is at
    /// most half the token's lifetime when that is known (a 60 s token with a 60 s margin
    /// is refreshed after 30 s, not at every request).
    pub fn expires_within(&self, now: SystemTime, margin: Duration) -> bool {
        let margin = match self.lifetime() {
            Some(lifetime) => margin.as_secs().min(lifetime / 2),
            None => margin.as_secs(),
        };
        self.remaining(now).is_some_and(|left| left <= margin)
    }
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"<redacted>")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .field("issued_at", &self.issued_at)
            .field("scope", &self.scope)
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .finish()
    }
}

/// What a store keeps for one resource: the client identity and the tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The client identity used (pre-registered ones are kept too, bound to their issuer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<RegisteredClient>,
    /// The tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenSet>,
}

/// `now` in whole seconds since the Unix epoch (0 before it).
pub fn unix_seconds(now: SystemTime) -> u64 {
    now.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A store's failure, in its own words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

/// Where credentials are kept between requests and runs, keyed by the canonical URI of
/// the resource they are for.
///
/// Calls are synchronous and short (a map, a keychain call, a small file). An
/// implementation must keep secrets as secrets: OAuth 2.1 §7.1 asks for secure storage.
///
/// A store backed by a file, for example:
///
/// ```
/// use std::collections::HashMap;
/// use sansrpc_oauth::store::{Credentials, StoreError, TokenStore};
///
/// struct FileStore(std::path::PathBuf);
///
/// impl FileStore {
///     fn all(&self) -> Result<HashMap<String, Credentials>, StoreError> {
///         match std::fs::read(&self.0) {
///             Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError(e.to_string())),
///             Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HashMap::new()),
///             Err(e) => Err(StoreError(format!("{}: {e}", self.0.display()))),
///         }
///     }
/// }
///
/// impl TokenStore for FileStore {
///     fn load(&self, resource: &str) -> Result<Option<Credentials>, StoreError> {
///         Ok(self.all()?.remove(resource))
///     }
///     fn save(&self, resource: &str, credentials: &Credentials) -> Result<(), StoreError> {
///         let mut all = self.all()?;
///         all.insert(resource.to_owned(), credentials.clone());
///         let json = serde_json::to_vec(&all).map_err(|e| StoreError(e.to_string()))?;
///         std::fs::write(&self.0, json).map_err(|e| StoreError(format!("{}: {e}", self.0.display())))
///     }
/// }
/// # let path = std::env::temp_dir().join(format!("sansrpc-oauth-doc-{}.json", std::process::id()));
/// # let store = FileStore(path.clone());
/// # store.save("https://h.example/mcp", &Credentials::default()).unwrap();
/// # assert_eq!(store.load("https://h.example/mcp").unwrap(), Some(Credentials::default()));
/// # std::fs::remove_file(path).unwrap();
/// ```
pub trait TokenStore: Send + Sync {
    /// The credentials kept for `resource`, if any.
    fn load(&self, resource: &str) -> Result<Option<Credentials>, StoreError>;
    /// Keeps `credentials` for `resource`, replacing what was there.
    fn save(&self, resource: &str, credentials: &Credentials) -> Result<(), StoreError>;
}

/// The default store: a map in memory, lost when the process ends.
#[derive(Debug, Default)]
pub struct MemoryStore {
    map: Mutex<HashMap<String, Credentials>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }
}

impl TokenStore for MemoryStore {
    fn load(&self, resource: &str) -> Result<Option<Credentials>, StoreError> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        Ok(map.get(resource).cloned())
    }

    fn save(&self, resource: &str, credentials: &Credentials) -> Result<(), StoreError> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(resource.to_owned(), credentials.clone());
        Ok(())
    }
}

impl<S: TokenStore + ?Sized> TokenStore for std::sync::Arc<S> {
    fn load(&self, resource: &str) -> Result<Option<Credentials>, StoreError> {
        (**self).load(resource)
    }

    fn save(&self, resource: &str, credentials: &Credentials) -> Result<(), StoreError> {
        (**self).save(resource, credentials)
    }
}
