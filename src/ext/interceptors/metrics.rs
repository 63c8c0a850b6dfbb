//! The [`Metrics`] trait (seed 000 §20.2), the server's [`MetricsLayer`], and with feature
//! `metrics` a backend on the `metrics` crate.

use alloc::collections::BTreeSet;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use super::Clock;
use crate::error::code;
use crate::router::{Call, Layer, Next, Outcome};
use crate::time::Instant;

/// The method label for calls to methods that do not exist, so that callers cannot grow a
/// metrics backend's label sets without bound.
pub const UNKNOWN_METHOD: &str = "(unknown)";

/// Where call metrics go (seed 000 §20.2). Implementations must be cheap and must not
/// block: they run inside every call.
pub trait Metrics: Send + Sync {
    /// A request or notification to `method` was handled.
    fn record_request(&self, method: &str);
    /// A request to `method` was answered after `duration` (zero without a clock), with a
    /// result (`success`) or an error.
    fn record_response(&self, method: &str, duration: Duration, success: bool);
    /// A batch of `size` messages arrived.
    fn record_batch_size(&self, size: usize);
    /// A request to `method` was answered with error `code`.
    fn record_error(&self, method: &str, code: i64);
}

impl<M: Metrics + ?Sized> Metrics for crate::sync::Arc<M> {
    fn record_request(&self, method: &str) {
        (**self).record_request(method);
    }
    fn record_response(&self, method: &str, duration: Duration, success: bool) {
        (**self).record_response(method, duration, success);
    }
    fn record_batch_size(&self, size: usize) {
        (**self).record_batch_size(size);
    }
    fn record_error(&self, method: &str, code: i64) {
        (**self).record_error(method, code);
    }
}

/// A server layer that reports every call to a [`Metrics`], and every incoming batch's
/// size through [`Layer::batch`] (fed by [`Router::observe_batches`](crate::router::Router::observe_batches)).
///
/// A call answered `-32601` is recorded under [`UNKNOWN_METHOD`]; so is any method not in
/// the list given to [`MetricsLayer::known_methods`], when one is given — do give one when
/// this layer sits outside an [`AuthLayer`](super::AuthLayer), whose refusals do not say
/// whether a method exists. Notifications count as requests and get no response or error.
pub struct MetricsLayer<M> {
    metrics: M,
    clock: Option<Clock>,
    known: Option<BTreeSet<String>>,
}

impl<M> fmt::Debug for MetricsLayer<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsLayer")
            .field("clock", &self.clock.is_some())
            .field("known", &self.known)
            .finish_non_exhaustive()
    }
}

impl<M: Metrics> MetricsLayer<M> {
    /// A layer reporting to `metrics`, with zero durations until a clock is set.
    pub fn new(metrics: M) -> Self {
        MetricsLayer {
            metrics,
            clock: None,
            known: None,
        }
    }

    /// Measures each call's duration with `clock`.
    pub fn clock(mut self, clock: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        self.clock = Some(alloc::boxed::Box::new(clock));
        self
    }

    /// Records only these method names as themselves (for example
    /// `router.method_names()`); any other is [`UNKNOWN_METHOD`].
    pub fn known_methods<'a>(mut self, names: impl IntoIterator<Item = &'a str>) -> Self {
        self.known = Some(names.into_iter().map(ToString::to_string).collect());
        self
    }

    fn record(&self, call: &Call<'_>, outcome: &Outcome, duration: Duration) {
        let method = self.label(call.method, outcome);
        self.metrics.record_request(method);
        if call.id.is_some() {
            self.metrics
                .record_response(method, duration, outcome.is_ok());
            if let Err(e) = outcome {
                self.metrics.record_error(method, e.code);
            }
        }
    }

    /// The label for `method` after an answer with `outcome`.
    fn label<'a>(&self, method: &'a str, outcome: &Outcome) -> &'a str {
        let unknown = matches!(outcome, Err(e) if e.code == code::METHOD_NOT_FOUND)
            || self.known.as_ref().is_some_and(|k| !k.contains(method));
        if unknown {
            UNKNOWN_METHOD
        } else {
            method
        }
    }
}

impl<M: Metrics> Layer for MetricsLayer<M> {
    fn call(&self, call: &Call<'_>, out: &mut Vec<u8>, next: Next<'_>) -> Outcome {
        let start = self.clock.as_ref().map(|c| c());
        let outcome = next.run(call, out);
        let duration = match (&self.clock, start) {
            (Some(clock), Some(start)) => clock() - start,
            _ => Duration::ZERO,
        };
        self.record(call, &outcome, duration);
        outcome
    }

    fn finished(&self, call: &Call<'_>, outcome: &Outcome, elapsed: Duration) {
        self.record(call, outcome, elapsed);
    }

    fn batch(&self, size: usize) {
        self.metrics.record_batch_size(size);
    }
}

/// A [`Metrics`] backend on the `metrics` crate's global recorder (feature `metrics`).
///
/// With the default prefix `sansrpc` it reports `sansrpc_requests_total{method}`,
/// `sansrpc_responses_total{method,success}`,
/// `sansrpc_response_duration_seconds{method,success}` (a histogram),
/// `sansrpc_batch_size` (a histogram) and `sansrpc_errors_total{method,code}`.
#[cfg(feature = "metrics")]
#[derive(Debug, Clone)]
pub struct FacadeMetrics {
    requests: String,
    responses: String,
    duration: String,
    batch: String,
    errors: String,
}

#[cfg(feature = "metrics")]
impl Default for FacadeMetrics {
    fn default() -> Self {
        FacadeMetrics::new("sansrpc")
    }
}

#[cfg(feature = "metrics")]
impl FacadeMetrics {
    /// Metric names starting with `prefix` (for example `sansrpc_client` for a client's).
    pub fn new(prefix: &str) -> Self {
        FacadeMetrics {
            requests: alloc::format!("{prefix}_requests_total"),
            responses: alloc::format!("{prefix}_responses_total"),
            duration: alloc::format!("{prefix}_response_duration_seconds"),
            batch: alloc::format!("{prefix}_batch_size"),
            errors: alloc::format!("{prefix}_errors_total"),
        }
    }
}

#[cfg(feature = "metrics")]
impl Metrics for FacadeMetrics {
    fn record_request(&self, method: &str) {
        metrics::counter!(self.requests.clone(), "method" => method.to_string()).increment(1);
    }

    fn record_response(&self, method: &str, duration: Duration, success: bool) {
        let success = if success { "true" } else { "false" };
        metrics::counter!(self.responses.clone(), "method" => method.to_string(), "success" => success)
            .increment(1);
        metrics::histogram!(self.duration.clone(), "method" => method.to_string(), "success" => success)
            .record(duration.as_secs_f64());
    }

    fn record_batch_size(&self, size: usize) {
        metrics::histogram!(self.batch.clone()).record(size as f64);
    }

    fn record_error(&self, method: &str, code: i64) {
        metrics::counter!(self.errors.clone(), "method" => method.to_string(), "code" => code.to_string())
            .increment(1);
    }
}
