//! The one thing the driver needs from a runtime besides I/O: sleeping until an instant.

use std::future::Future;
use std::task::Context;
use std::time::Instant;

use futures::FutureExt;

use crate::router::BoxFuture;

/// Sleeps until a deadline on the runtime's timer.
///
/// The driver asks for one sleep at a time, for its next deadline (the connection's
/// [`poll_timeout`](sansrpc::connection::Connection::poll_timeout)).
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

/// One sleep at a time, re-armed only when the target moves: how the driver and the
/// reconnect supervisor wait for their machine's next deadline.
#[derive(Default)]
pub(crate) struct Sleep(Option<(Instant, BoxFuture<()>)>);

impl Sleep {
    /// Sleeps until `target` (`None`: no sleep); true once it is reached.
    pub(crate) fn poll_until<Tm: Timer>(
        &mut self,
        cx: &mut Context<'_>,
        timer: &Tm,
        target: Option<Instant>,
    ) -> bool {
        let Some(target) = target else {
            self.0 = None;
            return false;
        };
        if self.0.as_ref().map(|s| s.0) != Some(target) {
            self.0 = Some((target, timer.sleep_until(target).boxed()));
        }
        let fired = self
            .0
            .as_mut()
            .is_some_and(|s| s.1.poll_unpin(cx).is_ready());
        if fired {
            self.0 = None;
        }
        fired
    }
}
