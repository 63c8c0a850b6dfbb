//! The one thing the driver needs from a runtime besides I/O: sleeping until an instant.

use std::future::Future;
use std::time::Instant;

/// Sleeps until a deadline on the runtime's timer.
///
/// The driver asks for one sleep at a time, for its next deadline (the endpoint's
/// [`poll_timeout`](sansrpc::Endpoint::poll_timeout), or a shutdown's grace period).
pub trait Timer: Send + Sync + 'static {
    /// A future that completes at or after `deadline`.
    fn sleep_until(&self, deadline: Instant) -> impl Future<Output = ()> + Send + 'static;
}

/// The timer of `async-io`, the reactor under smol and async-std; it works under any
/// executor (async-io drives itself on a thread of its own when nobody else does).
#[cfg(feature = "async-io")]
#[derive(Debug, Clone, Copy, Default)]
pub struct AsyncIoTimer;

#[cfg(feature = "async-io")]
impl Timer for AsyncIoTimer {
    fn sleep_until(&self, deadline: Instant) -> impl Future<Output = ()> + Send + 'static {
        let timer = async_io::Timer::at(deadline);
        async move {
            timer.await;
        }
    }
}
