//! Built-in interceptors: authentication, rate limiting, logging and metrics, as router
//! [`Layer`](crate::router::Layer)s on the server side and as [`Interceptor`]s that the
//! adapters' clients run around every outgoing call.
//!
//! Server layers (add with [`Router::layer`](crate::router::Router::layer); the first added
//! is the outermost):
//! - [`AuthLayer`]: a bearer token checked per call; a refused caller gets one application
//!   error whatever the method, so it cannot tell which methods exist.
//! - [`RateLimitLayer`]: a [`TokenBucket`] shared by every connection on the router;
//!   answers `-32002` beyond it.
//! - `LoggingLayer` (feature `tracing`): one event per call with id, method, outcome,
//!   code and duration; params redacted unless switched on.
//! - [`MetricsLayer`]: requests, responses with duration and success, errors by code and
//!   batch sizes, to any [`Metrics`]; `FacadeMetrics` (feature `metrics`) reports them
//!   to the `metrics` crate.
//!
//! Client interceptors (`Client::with_interceptors` in `sansrpc-futures` and
//! `sansrpc-blocking`): [`BearerToken`], [`ClientRateLimit`], `ClientLogging` (feature
//! `tracing`), [`ClientMetrics`].
//!
//! ## Where the credential travels
//!
//! JSON-RPC has no headers, and a router is shared by connections of every transport, so
//! the credential travels with each call, inside its params, as a reserved `"$auth"`
//! member: named params get the member added, other params are wrapped as
//! `{"$auth": token, "$params": params}`. [`AuthLayer`] removes it before the call goes
//! on, so handlers see exactly the params the caller meant. Any client can do this by hand
//! (`{"$auth": "s3cret", "a": 1}`); [`BearerToken`] does it for the adapters' clients.
//!
//! ## Time
//!
//! The core reads no clock: layers that measure or limit take a clock function returning
//! an [`Instant`](crate::Instant): `sansrpc_runtime::system_clock` on `std`, or your own.

mod auth;
mod client;
mod credential;
#[cfg(feature = "tracing")]
mod logging;
mod metrics;
mod rate;

pub use auth::{AuthLayer, UNAUTHORIZED};
#[cfg(feature = "tracing")]
pub use client::ClientLogging;
pub use client::ClientRateLimit;
pub use client::{BearerToken, CallOutcome, ClientMetrics, Interceptor, Interceptors, Outgoing};
pub use credential::{
    attach_credential, take_credential, Credential, CREDENTIAL_MEMBER, PARAMS_MEMBER,
};
#[cfg(feature = "tracing")]
pub use logging::LoggingLayer;
#[cfg(feature = "metrics")]
pub use metrics::FacadeMetrics;
pub use metrics::{Metrics, MetricsLayer, UNKNOWN_METHOD};
pub use rate::{RateLimitLayer, TokenBucket};

/// What params look like in logs when params logging is off.
pub const REDACTED: &str = "<redacted>";

/// A clock function: the current time on the caller's clock.
pub type Clock = alloc::boxed::Box<dyn Fn() -> crate::Instant + Send + Sync>;
