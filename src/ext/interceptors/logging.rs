//! [`LoggingLayer`]: one `tracing` event per handled call (feature `tracing`).

use alloc::vec::Vec;
use core::fmt;

use super::Clock;
use super::REDACTED;
use crate::raw::RawValue;
use crate::router::{Call, Layer, Next, Outcome};
use crate::time::Instant;

/// A server layer that emits one `tracing` event per call, at `INFO` with target
/// `sansrpc::call`, once the call is answered.
///
/// Fields: `method`; `id` (absent for a notification); `notification`; `outcome` (`"ok"` or
/// `"error"`); `code` (the error code, when there is one); `duration_us` (when a clock is
/// set with [`LoggingLayer::clock`]: the core reads none); `params`, which is
/// [`REDACTED`] unless [`LoggingLayer::params`] switched params logging on (params may hold
/// secrets and personal data). Register it first to log refused calls too.
pub struct LoggingLayer {
    clock: Option<Clock>,
    params: bool,
}

impl fmt::Debug for LoggingLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoggingLayer")
            .field("clock", &self.clock.is_some())
            .field("params", &self.params)
            .finish()
    }
}

impl Default for LoggingLayer {
    fn default() -> Self {
        LoggingLayer::new()
    }
}

impl LoggingLayer {
    /// Logging without durations, params redacted.
    pub fn new() -> Self {
        LoggingLayer {
            clock: None,
            params: false,
        }
    }

    /// Measures each call's duration with `clock`.
    pub fn clock(mut self, clock: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        self.clock = Some(alloc::boxed::Box::new(clock));
        self
    }

    /// Logs params as the caller sent them (`true`) or as [`REDACTED`] (`false`, the default).
    pub fn params(mut self, on: bool) -> Self {
        self.params = on;
        self
    }
}

impl Layer for LoggingLayer {
    fn call(&self, call: &Call<'_>, out: &mut Vec<u8>, next: Next<'_>) -> Outcome {
        let start = self.clock.as_ref().map(|c| c());
        let outcome = next.run(call, out);
        let duration = match (&self.clock, start) {
            (Some(clock), Some(start)) => Some(clock() - start),
            _ => None,
        };
        self.log(call, &outcome, duration);
        outcome
    }

    fn finished(&self, call: &Call<'_>, outcome: &Outcome, elapsed: core::time::Duration) {
        self.log(call, outcome, Some(elapsed));
    }
}

impl LoggingLayer {
    fn log(&self, call: &Call<'_>, outcome: &Outcome, duration: Option<core::time::Duration>) {
        let duration_us = duration.map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        let params = match (self.params, call.params) {
            (true, Some(p)) => Some(RawValue::get(p)),
            (false, Some(_)) => Some(REDACTED),
            (_, None) => None,
        };
        let code = outcome.as_ref().err().map(|e| e.code);
        tracing::info!(
            target: "sansrpc::call",
            method = call.method,
            id = call.id.map(tracing::field::display),
            notification = call.id.is_none(),
            outcome = if outcome.is_ok() { "ok" } else { "error" },
            code,
            duration_us,
            params,
            "rpc call"
        );
    }
}
