//! The one thing the driver needs from a runtime besides I/O: sleeping until an instant.

use sansrpc_runtime::time::Instant;
use std::future::Future;
use std::task::Context;

use futures::FutureExt;

use crate::router::BoxFuture;

/// Sleeps until a deadline on the runtime's timer.
///
/// The driver asks for one sleep at a time, for its next deadline (the connection's
/// [`poll_timeout`](sansrpc::connection::Connection::poll_timeout)), on the host's clock
/// ([`sansrpc_runtime::time::Instant`]: std's, or `performance.now()` in a browser).
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

/// One sleep at a time, re-armed only when the target comes earlier: how the driver and
/// the reconnect supervisor wait for their machine's next deadline.
///
/// An idle timeout's deadline moves later with every message; re-arming the runtime's timer
/// each time would cost an allocation and a timer-wheel update a message. A sleep armed
/// for an earlier instant is kept instead: when it wakes before the target, it is re-armed
/// then, once per period of the timeout rather than once per message.
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
        loop {
            // A sleep that wakes no later than the target is kept.
            let armed = match &mut self.0 {
                Some((at, sleep)) if *at <= target => (*at, sleep),
                slot => {
                    let sleep = slot.insert((target, timer.sleep_until(target).boxed()));
                    (sleep.0, &mut sleep.1)
                }
            };
            let (at, sleep) = armed;
            if sleep.poll_unpin(cx).is_pending() {
                return false;
            }
            self.0 = None;
            if at >= target {
                return true;
            }
            // Woke early for a target that has moved since: sleep again, for the target.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Poll;
    use std::time::Duration;

    /// A timer whose sleeps are done once a shared clock reaches their deadline, counting
    /// the sleeps it made.
    #[derive(Clone, Default)]
    struct Manual {
        now: Arc<std::sync::Mutex<Option<Instant>>>,
        made: Arc<AtomicUsize>,
    }

    impl Timer for Manual {
        fn sleep_until(&self, deadline: Instant) -> impl Future<Output = ()> + Send + 'static {
            self.made.fetch_add(1, Ordering::SeqCst);
            let now = self.now.clone();
            std::future::poll_fn(move |_| match *now.lock().unwrap() {
                Some(now) if now >= deadline => Poll::Ready(()),
                _ => Poll::Pending,
            })
        }
    }

    #[test]
    fn a_target_that_moves_later_keeps_the_sleep_until_it_wakes() {
        let timer = Manual::default();
        let start = Instant::now();
        let at = |s| start + Duration::from_secs(s);
        *timer.now.lock().unwrap() = Some(start);
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut sleep = Sleep::default();
        // The idle deadline moves later with each message: one sleep, not one a message.
        for s in 10..20 {
            assert!(!sleep.poll_until(&mut cx, &timer, Some(at(s))));
        }
        assert_eq!(timer.made.load(Ordering::SeqCst), 1);
        // The first sleep wakes at 10 s: not the target (19 s), so it sleeps again.
        *timer.now.lock().unwrap() = Some(at(10));
        assert!(!sleep.poll_until(&mut cx, &timer, Some(at(19))));
        assert_eq!(timer.made.load(Ordering::SeqCst), 2);
        // An earlier target re-arms at once.
        assert!(!sleep.poll_until(&mut cx, &timer, Some(at(15))));
        assert_eq!(timer.made.load(Ordering::SeqCst), 3);
        *timer.now.lock().unwrap() = Some(at(15));
        assert!(sleep.poll_until(&mut cx, &timer, Some(at(15))));
        // No target: no sleep.
        assert!(!sleep.poll_until(&mut cx, &timer, None));
        assert_eq!(timer.made.load(Ordering::SeqCst), 3);
    }
}
