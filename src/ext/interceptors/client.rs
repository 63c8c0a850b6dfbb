//! Client-side interceptors: hooks around every outgoing call, run by the adapters'
//! clients, and the built-ins (bearer token, rate limit, logging, metrics).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use super::credential::attach_credential;
use super::metrics::Metrics;
use super::rate::{limited, TokenBucket};
use super::Clock;
use crate::error::ErrorObject;
use crate::method::CallError;
use crate::raw::RawValue;
use crate::time::Instant;

/// An outgoing call or notification, before it is sent.
#[derive(Debug)]
pub struct Outgoing<'a> {
    /// The method name.
    pub method: &'a str,
    /// The params; an interceptor may replace them.
    pub params: &'a mut Option<Box<RawValue>>,
    /// True for a notification (no answer will come).
    pub notification: bool,
}

/// How an outgoing call ended, as [`Interceptor::after`] sees it.
#[derive(Debug, Clone, Copy)]
pub enum CallOutcome<'a> {
    /// A result came back (for a notification: it was queued for the wire).
    Success,
    /// The peer answered with this error, or an interceptor refused the call with it.
    Error(&'a ErrorObject<'static>),
    /// No answer: timed out, cancelled, closed, not sent, or an undecodable result.
    Failed,
}

impl<'a> CallOutcome<'a> {
    /// The outcome of a call's result.
    pub fn of<T>(result: &'a Result<T, CallError>) -> Self {
        match result {
            Ok(_) => CallOutcome::Success,
            Err(CallError::Rpc(e) | CallError::Intercepted(e)) => CallOutcome::Error(e),
            Err(_) => CallOutcome::Failed,
        }
    }

    /// True for [`CallOutcome::Success`].
    pub fn is_success(&self) -> bool {
        matches!(self, CallOutcome::Success)
    }
}

/// A hook around every outgoing call and notification of a client.
///
/// The adapters' clients (`sansrpc-futures`, `sansrpc-blocking`) run [`before`](Self::before)
/// in registration order just before a call is handed to the connection, and
/// [`after`](Self::after) in reverse order once it has ended, with the time it took on the
/// adapter's clock. Both run on the caller's thread or task and must not block.
pub trait Interceptor: Send + Sync {
    /// Sees (and may rewrite) a call before it is sent; an error refuses it, and the caller
    /// gets [`CallError::Intercepted`] without anything going out.
    fn before(&self, call: &mut Outgoing<'_>) -> Result<(), ErrorObject<'static>> {
        let _ = call;
        Ok(())
    }

    /// Sees how a call ended and how long it took. Not called for a call whose future was
    /// dropped before it ended.
    fn after(&self, method: &str, outcome: CallOutcome<'_>, elapsed: Duration) {
        let _ = (method, outcome, elapsed);
    }
}

/// The interceptors of one client, in order; what the adapters' clients hold.
#[derive(Default)]
pub struct Interceptors {
    chain: Vec<Box<dyn Interceptor>>,
}

impl fmt::Debug for Interceptors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interceptors")
            .field("len", &self.chain.len())
            .finish()
    }
}

impl Interceptors {
    /// No interceptors.
    pub fn new() -> Self {
        Interceptors::default()
    }

    /// Adds `interceptor` after the ones already there (it runs later before sending and
    /// earlier after the answer).
    pub fn with(mut self, interceptor: impl Interceptor + 'static) -> Self {
        self.chain.push(Box::new(interceptor));
        self
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.chain.is_empty()
    }

    /// Runs every [`Interceptor::before`] in order. On a refusal, the interceptors that
    /// already ran see it through [`Interceptor::after`] (in reverse order, zero elapsed),
    /// and the caller gets the error: it must then not call [`Interceptors::after`].
    pub fn before(
        &self,
        method: &str,
        params: &mut Option<Box<RawValue>>,
        notification: bool,
    ) -> Result<(), CallError> {
        for (i, interceptor) in self.chain.iter().enumerate() {
            let mut call = Outgoing {
                method,
                params: &mut *params,
                notification,
            };
            if let Err(e) = interceptor.before(&mut call) {
                for earlier in self.chain[..i].iter().rev() {
                    earlier.after(method, CallOutcome::Error(&e), Duration::ZERO);
                }
                return Err(CallError::Intercepted(e));
            }
        }
        Ok(())
    }

    /// Runs every [`Interceptor::after`] in reverse order.
    pub fn after(&self, method: &str, outcome: CallOutcome<'_>, elapsed: Duration) {
        for interceptor in self.chain.iter().rev() {
            interceptor.after(method, outcome, elapsed);
        }
    }
}

/// Attaches a bearer token from a provider to every call, as the server's
/// [`AuthLayer`](super::AuthLayer) expects it (the `"$auth"` params member, see
/// [`attach_credential`](super::attach_credential)).
///
/// The provider runs once per call, so a refreshed token is picked up by the next call;
/// when it returns `None` the call goes out without one.
pub struct BearerToken<P> {
    provider: P,
}

impl<P> fmt::Debug for BearerToken<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerToken").finish_non_exhaustive()
    }
}

impl<P: Fn() -> Option<String> + Send + Sync> BearerToken<P> {
    /// Tokens from `provider`.
    pub fn new(provider: P) -> Self {
        BearerToken { provider }
    }
}

impl<P: Fn() -> Option<String> + Send + Sync> Interceptor for BearerToken<P> {
    fn before(&self, call: &mut Outgoing<'_>) -> Result<(), ErrorObject<'static>> {
        if let Some(token) = (self.provider)() {
            *call.params = Some(attach_credential(call.params.as_deref(), &token));
        }
        Ok(())
    }
}

/// A client-side rate limit: calls beyond a [`TokenBucket`] fail at once, without being
/// sent, with [`CallError::Intercepted`] carrying `-32002` (or a configured code) and
/// `{"retryAfterMs": n}`. It does not wait: a caller that wants to wait sleeps for
/// `retryAfterMs` and tries again.
pub struct ClientRateLimit {
    bucket: TokenBucket,
    clock: Clock,
    code: i64,
}

impl fmt::Debug for ClientRateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRateLimit")
            .field("bucket", &self.bucket)
            .field("code", &self.code)
            .finish_non_exhaustive()
    }
}

impl ClientRateLimit {
    /// A limit taking one token from `bucket` per call and notification, at the time
    /// `clock` gives.
    pub fn new(bucket: TokenBucket, clock: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        ClientRateLimit {
            bucket,
            clock: Box::new(clock),
            code: crate::error::code::SERVER_BUSY,
        }
    }

    /// Refuses with `code` instead of `-32002`.
    pub fn code(mut self, code: i64) -> Self {
        self.code = code;
        self
    }
}

impl Interceptor for ClientRateLimit {
    fn before(&self, _: &mut Outgoing<'_>) -> Result<(), ErrorObject<'static>> {
        self.bucket
            .try_take((self.clock)())
            .map_err(|wait| limited(self.code, "Client rate limit exceeded", wait))
    }
}

/// Reports a client's calls to a [`Metrics`]: a request when sent, a response (and an
/// error, with its code) when answered. Notifications count as requests only.
#[derive(Debug)]
pub struct ClientMetrics<M> {
    metrics: M,
}

impl<M: Metrics> ClientMetrics<M> {
    /// Reporting to `metrics`.
    pub fn new(metrics: M) -> Self {
        ClientMetrics { metrics }
    }
}

impl<M: Metrics> Interceptor for ClientMetrics<M> {
    fn before(&self, call: &mut Outgoing<'_>) -> Result<(), ErrorObject<'static>> {
        self.metrics.record_request(call.method);
        Ok(())
    }

    fn after(&self, method: &str, outcome: CallOutcome<'_>, elapsed: Duration) {
        self.metrics
            .record_response(method, elapsed, outcome.is_success());
        if let CallOutcome::Error(e) = outcome {
            self.metrics.record_error(method, e.code);
        }
    }
}

/// Logs a client's calls through `tracing` (feature `tracing`), target `sansrpc::client`: a
/// `DEBUG` event when a call is sent (`method`, `notification`, `params` —
/// [`REDACTED`](super::REDACTED) unless switched on) and an `INFO` event when it ends
/// (`method`, `outcome` — `"ok"`, `"error"` or `"failed"` —, `code`, `duration_us`).
/// The request id is the connection's business and is not known here.
#[cfg(feature = "tracing")]
#[derive(Debug, Default)]
pub struct ClientLogging {
    params: bool,
}

#[cfg(feature = "tracing")]
impl ClientLogging {
    /// Logging with params redacted.
    pub fn new() -> Self {
        ClientLogging::default()
    }

    /// Logs params as sent (`true`) or redacted (`false`, the default).
    pub fn params(mut self, on: bool) -> Self {
        self.params = on;
        self
    }
}

#[cfg(feature = "tracing")]
impl Interceptor for ClientLogging {
    fn before(&self, call: &mut Outgoing<'_>) -> Result<(), ErrorObject<'static>> {
        let params = match (self.params, call.params.as_deref()) {
            (true, Some(p)) => Some(p.get()),
            (false, Some(_)) => Some(super::REDACTED),
            (_, None) => None,
        };
        tracing::debug!(
            target: "sansrpc::client",
            method = call.method,
            notification = call.notification,
            params,
            "rpc send"
        );
        Ok(())
    }

    fn after(&self, method: &str, outcome: CallOutcome<'_>, elapsed: Duration) {
        let (label, code) = match outcome {
            CallOutcome::Success => ("ok", None),
            CallOutcome::Error(e) => ("error", Some(e.code)),
            CallOutcome::Failed => ("failed", None),
        };
        tracing::info!(
            target: "sansrpc::client",
            method,
            outcome = label,
            code,
            duration_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            "rpc call"
        );
    }
}
