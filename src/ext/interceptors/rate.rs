//! Token-bucket rate limiting: [`TokenBucket`] and the server's [`RateLimitLayer`].

use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::Ordering;

use crate::sync::AtomicU64;
use core::time::Duration;

use super::Clock;
use crate::error::{code, ErrorObject};
use crate::raw::RawValue;
use crate::router::{Admit, Call, Layer, Next, Outcome};
use crate::time::Instant;

/// A token bucket shared by every caller: up to `capacity` tokens, one more every
/// `interval`; each call takes one.
///
/// Lock-free (one atomic, the generic cell rate algorithm), so it can sit in a layer that
/// every connection's calls go through at once. Time is an input: [`TokenBucket::try_take`]
/// is given `now`; the bucket reads no clock.
#[derive(Debug)]
pub struct TokenBucket {
    /// Nanoseconds per token.
    interval: u64,
    /// `capacity * interval`: how far ahead of `now` the schedule may run.
    burst: u64,
    /// The theoretical arrival time of the next call, in nanoseconds since the epoch.
    tat: AtomicU64,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl TokenBucket {
    /// A full bucket of `capacity` tokens (at least one), refilled at one per `interval`
    /// (at least one nanosecond).
    pub fn new(capacity: u32, interval: Duration) -> Self {
        let interval = nanos(interval).max(1);
        TokenBucket {
            interval,
            burst: interval.saturating_mul(u64::from(capacity.max(1))),
            tat: AtomicU64::new(0),
        }
    }

    /// `per_second` calls a second on average, in bursts of up to `per_second`.
    pub fn per_second(per_second: u32) -> Self {
        let per_second = per_second.max(1);
        TokenBucket::new(per_second, Duration::from_secs(1) / per_second)
    }

    /// Takes a token at `now`; when the bucket is empty, says how long until the next one.
    pub fn try_take(&self, now: Instant) -> Result<(), Duration> {
        let now = nanos(now.since_epoch());
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            let next = tat.max(now).saturating_add(self.interval);
            let ahead = next - now;
            if ahead > self.burst {
                return Err(Duration::from_nanos(ahead - self.burst));
            }
            match self
                .tat
                .compare_exchange_weak(tat, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(current) => tat = current,
            }
        }
    }
}

/// The error a refused call gets: `code` and `message`, with
/// `{"retryAfterMs": n}` as data.
pub(crate) fn limited(code: i64, message: &'static str, wait: Duration) -> ErrorObject<'static> {
    let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
    let mut data = Vec::with_capacity(32);
    data.extend_from_slice(b"{\"retryAfterMs\":");
    data.extend_from_slice(alloc::format!("{ms}").as_bytes());
    data.push(b'}');
    let text = alloc::string::String::from_utf8(data).unwrap_or_default();
    ErrorObject::new(code, message).with_data(RawValue::boxed_from_validated(text.into_boxed_str()))
}

/// A server layer that answers calls beyond a [`TokenBucket`] with `-32002` (Server busy,
/// seed 000 appendix B) or a configured code, across every connection that shares the
/// router.
///
/// The error carries `{"retryAfterMs": n}` as data. Notifications take tokens too; one
/// refused is dropped. For a per-connection limit, see the endpoint's config instead.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
/// use sansrpc::ext::interceptors::{RateLimitLayer, TokenBucket};
/// use sansrpc::router::{Reply, Router};
/// use sansrpc::{Id, Instant, Request, Version};
///
/// let now = Arc::new(AtomicU64::new(0)); // a test clock, in milliseconds
/// let clock = { let now = now.clone(); move || Instant::from_millis(now.load(Ordering::Relaxed)) };
/// let mut router = Router::new();
/// router.raw_method("ping", |_, out| { out.extend_from_slice(b"true"); Ok(()) }).unwrap();
/// router.layer(RateLimitLayer::new(TokenBucket::new(2, Duration::from_secs(1)), clock));
///
/// let ping = Request { id: Id::number(1), method: "ping".into(), params: None, version: Version::V2 };
/// let mut reply = Reply::default();
/// for _ in 0..2 {
///     router.dispatch(&ping, &mut reply);
///     assert_eq!(reply.result_json(), Some("true"));
/// }
/// router.dispatch(&ping, &mut reply);
/// assert_eq!(reply.error().unwrap().code, -32002);
/// now.store(1000, Ordering::Relaxed); // a second later, one token is back
/// router.dispatch(&ping, &mut reply);
/// assert_eq!(reply.result_json(), Some("true"));
/// ```
pub struct RateLimitLayer {
    bucket: TokenBucket,
    clock: Clock,
    code: i64,
}

impl fmt::Debug for RateLimitLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("bucket", &self.bucket)
            .field("code", &self.code)
            .finish_non_exhaustive()
    }
}

impl RateLimitLayer {
    /// A layer taking one token from `bucket` per call, at the time `clock` gives.
    pub fn new(bucket: TokenBucket, clock: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        RateLimitLayer {
            bucket,
            clock: alloc::boxed::Box::new(clock),
            code: code::SERVER_BUSY,
        }
    }

    /// Answers refused calls with `code` (for one, in the 1400–1499 rate-limit range of
    /// seed 000 appendix B.3) instead of `-32002`.
    pub fn code(mut self, code: i64) -> Self {
        self.code = code;
        self
    }
}

impl Layer for RateLimitLayer {
    fn call(&self, call: &Call<'_>, out: &mut Vec<u8>, next: Next<'_>) -> Outcome {
        match self.bucket.try_take((self.clock)()) {
            Ok(()) => next.run(call, out),
            Err(wait) => Err(limited(self.code, "Rate limit exceeded", wait)),
        }
    }

    fn admit(&self, _: &Call<'_>) -> Result<Admit, ErrorObject<'static>> {
        match self.bucket.try_take((self.clock)()) {
            Ok(()) => Ok(Admit::Unchanged),
            Err(wait) => Err(limited(self.code, "Rate limit exceeded", wait)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_allows_its_burst_then_refills_one_token_per_interval() {
        let b = TokenBucket::new(3, Duration::from_millis(100));
        let t = Instant::from_millis(1_000);
        for _ in 0..3 {
            assert_eq!(b.try_take(t), Ok(()));
        }
        assert_eq!(b.try_take(t), Err(Duration::from_millis(100)));
        assert_eq!(
            b.try_take(Instant::from_millis(1_050)),
            Err(Duration::from_millis(50))
        );
        assert_eq!(b.try_take(Instant::from_millis(1_100)), Ok(()));
        assert!(b.try_take(Instant::from_millis(1_100)).is_err());
        // Idle time refills up to the capacity, never beyond.
        let later = Instant::from_millis(60_000);
        for _ in 0..3 {
            assert_eq!(b.try_take(later), Ok(()));
        }
        assert!(b.try_take(later).is_err());
    }
}
