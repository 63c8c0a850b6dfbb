//! An OAuth 2.1 client that does no I/O, for MCP, A2A and any HTTP API protected the way
//! the MCP authorization specification (2025-11-25, 2026-07-28) describes.
//!
//! [`OAuthClient`] is a machine: HTTP answers, the redirect of the user's part and the
//! time go in; HTTP requests to send, the user's part to do, credentials to keep and the
//! end of each flow come out ([`Output`]). It reads no clock and no random source (its
//! PKCE verifiers and `state` values derive from a seed it is given), and knows nothing of
//! MCP: a protocol adds what its specification adds through [`Config`] (a header on
//! discovery requests).
//!
//! What it does, step by step (each failure names its [`Step`] and the server's `error`
//! and `error_description`):
//! - **Discovery** on a 401: the `WWW-Authenticate` Bearer challenge ([`challenge`],
//!   RFC 6750 §3, several challenges and fields), its `resource_metadata` (RFC 9728 §5.1)
//!   else the path-aware then the root well-known location; the resource's metadata must
//!   cover the resource (RFC 9728 §3.3); then the authorization server's metadata at the
//!   RFC 8414 and OpenID Connect locations in the order of the MCP specification, its
//!   `issuer` checked (RFC 8414 §3.3), PKCE `S256` required, endpoints `https` or loopback.
//! - **Client identity**, in the MCP specification's order: pre-registered
//!   ([`PreRegistered`]), a stored registration, a Client ID Metadata Document URL when the
//!   server advertises `client_id_metadata_document_supported`, dynamic registration
//!   (RFC 7591); token-endpoint authentication `client_secret_basic`, `client_secret_post`
//!   or `none`; credentials bound to the issuer that issued them.
//! - **The grant**: authorization code with PKCE `S256` (RFC 7636), `state`, the
//!   `resource` parameter (RFC 8707) on the authorization and token requests, the
//!   redirect's `iss` checked (RFC 9207); or client credentials.
//! - **Scopes**: the challenge's, else the resource's `scopes_supported`, else none (or the
//!   configured fallback); `offline_access` added only when the server lists it; step-up on
//!   403 `insufficient_scope` with the union of scopes, up to a limit.
//! - **Tokens**: kept behind [`store::TokenStore`] ([`store::MemoryStore`] by default);
//!   refreshed before expiry (time is an input) and on a 401; one flow at a time, shared by
//!   concurrent requests.
//!
//! The `hyper` feature (on by default) adds [`driver`]: the machine run on tokio over
//! hyper-util's client with rustls, an [`driver::Authorizer`] that gives each request its
//! `Authorization` header and handles 401/403 answers, and a headless user agent.
#![deny(missing_docs)]

pub mod challenge;
mod config;
mod error;
mod http;
mod machine;
pub mod metadata;
mod pkce;
pub mod store;
pub mod uri;
mod wire;

#[cfg(feature = "hyper")]
pub mod driver;

pub use config::{ClientMetadata, Config, PreRegistered};
pub use error::{Cause, Error, ServerError, Step};
pub use http::{HttpRequest, HttpResponse, Method};
pub use machine::{AuthorizationRequest, Credential, OAuthClient, Output, RequestId, Verdict};
pub use pkce::Pkce;
pub use store::{AuthMethod, Credentials, TokenSet};
