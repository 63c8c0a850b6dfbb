//! Errors that name the step that failed and, when the server gave one, its OAuth `error`
//! and `error_description`.

use std::fmt;

/// The step of the flow an error comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Step {
    /// Building the configuration (a URL that is not one, a CIMD URL without a path).
    Configuration,
    /// Discovery: the protected resource's metadata, then the authorization server's.
    Discovery,
    /// Client identity: dynamic registration (RFC 7591), or choosing an identity at all.
    Registration,
    /// The authorization request and its redirect (the user's part, `state`, `iss`).
    Authorization,
    /// A token request: the authorization code or client credentials grant.
    Token,
    /// A refresh of the access token.
    Refresh,
    /// The protected resource itself: a request to it could not be sent, it refused a
    /// token the flow had just obtained (or a static one), or it asked for more scope than
    /// the step-up limit allows.
    Resource,
    /// The application's token store.
    Store,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Configuration => "configuration",
            Step::Discovery => "discovery",
            Step::Registration => "registration",
            Step::Authorization => "authorization",
            Step::Token => "token",
            Step::Refresh => "refresh",
            Step::Resource => "resource",
            Step::Store => "token store",
        })
    }
}

/// An OAuth error object a server answered with (RFC 6749 §5.2, RFC 7591 §3.2.2, or the
/// redirect's query, RFC 6749 §4.1.2.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerError {
    /// The HTTP status (0 for an error that came back on the redirect).
    pub status: u16,
    /// `error`: `invalid_client`, `invalid_grant`, `access_denied`…
    pub error: String,
    /// `error_description`, if any.
    pub error_description: Option<String>,
    /// `error_uri`, if any.
    pub error_uri: Option<String>,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.status != 0 {
            write!(f, "the server answered {} ", self.status)?;
        } else {
            f.write_str("the server redirected with ")?;
        }
        f.write_str(&self.error)?;
        if let Some(description) = &self.error_description {
            write!(f, ": {description}")?;
        }
        Ok(())
    }
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cause {
    /// The server answered with an OAuth error object.
    Server(ServerError),
    /// The server answered an unexpected status without an OAuth error object.
    Status {
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// An answer or document that is not what the specifications say (not JSON, a member
    /// missing or of the wrong type, too large).
    Invalid(String),
    /// No metadata at any of the locations tried.
    NotFound {
        /// The URLs tried, in order.
        tried: Vec<String>,
    },
    /// The authorization server's metadata, or the redirect's `iss`, names another issuer
    /// (RFC 8414 §3.3, RFC 9207 §2.4): a mix-up, and the answer is not used.
    IssuerMismatch {
        /// The issuer expected.
        expected: String,
        /// The issuer found (empty when `iss` was missing but advertised).
        found: String,
    },
    /// The protected-resource metadata is for another resource (RFC 9728 §3.3).
    ResourceMismatch {
        /// The resource the client is connecting to.
        expected: String,
        /// The `resource` the metadata names.
        found: String,
    },
    /// The authorization server offers no PKCE with `S256`.
    NoPkce,
    /// An authorization-server endpoint that is neither `https` nor loopback.
    Insecure(String),
    /// No way to identify the client: not pre-registered, no CIMD support, no
    /// registration endpoint.
    NoClientIdentity,
    /// The redirect's `state` is not the one sent.
    StateMismatch,
    /// The resource asked for more scope after this many step-ups.
    StepUpLimit {
        /// Step-ups tried.
        attempts: u32,
        /// The scope last asked for.
        scope: Option<String>,
    },
    /// The resource refused a token the flow had just obtained (or a static token).
    Rejected {
        /// The status (401 or 403).
        status: u16,
        /// The challenge's `error`.
        error: Option<String>,
        /// The challenge's `error_description`.
        error_description: Option<String>,
    },
    /// A refresh was asked for and there is no refresh token.
    NoRefreshToken,
    /// The request could not be sent or its answer not read (the driver's words: TLS and
    /// its reason, the address refused, a timeout).
    Transport(String),
    /// The user's part failed or was abandoned (the user agent's words).
    User(String),
    /// The token store failed (its words).
    Store(String),
    /// The configuration is not usable.
    Config(String),
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Server(e) => e.fmt(f),
            Cause::Status { status, body } if body.is_empty() => {
                write!(f, "the server answered {status}")
            }
            Cause::Status { status, body } => write!(f, "the server answered {status}: {body}"),
            Cause::Invalid(why) => f.write_str(why),
            Cause::NotFound { tried } => {
                write!(f, "no metadata at {}", tried.join(", "))
            }
            Cause::IssuerMismatch { expected, found } if found.is_empty() => write!(
                f,
                "the redirect has no `iss`, which the server `{expected}` advertises"
            ),
            Cause::IssuerMismatch { expected, found } => {
                write!(f, "issuer `{found}` where `{expected}` was expected")
            }
            Cause::ResourceMismatch { expected, found } => write!(
                f,
                "the metadata is for the resource `{found}`, not `{expected}`"
            ),
            Cause::NoPkce => f.write_str(
                "the authorization server does not offer PKCE with S256 \
                 (code_challenge_methods_supported)",
            ),
            Cause::Insecure(url) => write!(f, "`{url}` is neither https nor loopback"),
            Cause::NoClientIdentity => f.write_str(
                "no client identity: not pre-registered, and the server offers neither \
                 Client ID Metadata Documents (with a client_metadata_url configured) nor \
                 dynamic registration",
            ),
            Cause::StateMismatch => f.write_str("the redirect's `state` is not the one sent"),
            Cause::StepUpLimit { attempts, scope } => {
                write!(f, "still insufficient_scope after {attempts} step-ups")?;
                if let Some(scope) = scope {
                    write!(f, " (scope `{scope}`)")?;
                }
                Ok(())
            }
            Cause::Rejected {
                status,
                error,
                error_description,
            } => {
                write!(f, "the resource refused the token ({status}")?;
                if let Some(error) = error {
                    write!(f, " {error}")?;
                }
                if let Some(description) = error_description {
                    write!(f, ": {description}")?;
                }
                f.write_str(")")
            }
            Cause::NoRefreshToken => f.write_str("there is no refresh token"),
            Cause::Transport(why) => write!(f, "the request failed: {why}"),
            Cause::User(why) => write!(f, "the user's part failed: {why}"),
            Cause::Store(why) => f.write_str(why),
            Cause::Config(why) => f.write_str(why),
        }
    }
}

/// An authorization failure: the step, the URL it was at (if any) and the cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The step that failed.
    pub step: Step,
    /// The URL of the request that failed, if one did.
    pub url: Option<String>,
    /// What went wrong.
    pub cause: Cause,
}

impl Error {
    /// An error at `step` with no URL.
    pub fn new(step: Step, cause: Cause) -> Error {
        Error {
            step,
            url: None,
            cause,
        }
    }

    /// An error at `step` for the request to `url`.
    pub fn at(step: Step, url: impl Into<String>, cause: Cause) -> Error {
        Error {
            step,
            url: Some(url.into()),
            cause,
        }
    }

    /// The server's OAuth error object, if that is the cause.
    pub fn server_error(&self) -> Option<&ServerError> {
        match &self.cause {
            Cause::Server(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OAuth {} step failed", self.step)?;
        if let Some(url) = &self.url {
            write!(f, " ({url})")?;
        }
        write!(f, ": {}", self.cause)
    }
}

impl std::error::Error for Error {}
