//! Time as an input: a point on the caller's clock, with no clock read anywhere.

use core::ops::{Add, Sub};
use core::time::Duration;

/// A point in time: the time elapsed since an epoch the caller picks (process start, boot,
/// the Unix epoch — anything monotonic).
///
/// The core never reads a clock. Adapters convert their runtime's clock into `Instant`s
/// (for example `start.elapsed()` on a `std::time::Instant` taken once); tests pass any
/// value they like and travel in time. Works in `no_std`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(Duration);

impl Instant {
    /// The epoch itself.
    pub const ZERO: Instant = Instant(Duration::ZERO);

    /// The instant `since_epoch` after the epoch.
    pub const fn from_duration(since_epoch: Duration) -> Instant {
        Instant(since_epoch)
    }

    /// The instant `ms` milliseconds after the epoch.
    pub const fn from_millis(ms: u64) -> Instant {
        Instant(Duration::from_millis(ms))
    }

    /// Time elapsed since the epoch.
    pub const fn since_epoch(self) -> Duration {
        self.0
    }

    /// `self + d`, saturating at the largest representable instant.
    pub fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d))
    }

    /// Time from `earlier` to `self`, zero when `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// Saturates instead of overflowing.
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// Saturates at zero.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}
