//! What wakes a driver's task, and which of its sources did.
//!
//! Each source the driver polls (the commands' channels, the transport, the sleep) is
//! given a waker of its own ([`Wakers`]): it records its bit in [`Woken`], then wakes the
//! task; the driver leaves a source it polled pending alone until its bit is set. The
//! subscription hub and a connection's extension wake the task through the same
//! [`Woken`]. The task's waker is kept there across wakes (a wake does not take it, as
//! `AtomicWaker`'s does), so a driver polled by the same task again, the common case,
//! registers nothing: a subscriber's connection woken once per notification it sends
//! spends no atomic operation on its wakers.

use std::cell::OnceCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Wake, Waker};
use std::time::Duration;

/// The commands' channel, and a shutdown asked for.
pub(crate) const COMMANDS: u8 = 1;
/// The transport (its reads, writes, and what it waits on for them).
pub(crate) const SOCKET: u8 = 2;
/// The connection's sleep.
pub(crate) const TIMER: u8 = 4;

/// The sources that woke the task since the driver last looked, and the task's waker; a
/// shutdown asked for ([`ShutdownHandle`](crate::ShutdownHandle)), and whether the driver
/// has finished.
#[derive(Debug, Default)]
pub(crate) struct Woken {
    bits: AtomicU8,
    /// The driver has finished, or was dropped: its task is not woken any more.
    finished: AtomicBool,
    /// The grace of a shutdown asked for and not taken yet, in nanoseconds plus one; 0 for
    /// none. One slot, not a queue: a later shutdown replaces one not taken yet.
    shutdown: AtomicU64,
    task: Mutex<Option<Waker>>,
}

impl Woken {
    /// Wakes the task (with the waker it was last polled with). Named apart from
    /// [`Wake::wake`](std::task::Wake::wake), which the subscription hub's wake is (it
    /// skips the wake while the driver polls its own handlers).
    pub(crate) fn wake_task(&self) {
        let task = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        // Outside the lock: an executor may poll the task from its wake.
        if let Some(task) = task {
            task.wake();
        }
    }

    /// The task is polled with `waker`, which differs from the one kept.
    pub(crate) fn set_task(&self, waker: &Waker) {
        *self.task.lock().unwrap_or_else(PoisonError::into_inner) = Some(waker.clone());
    }

    /// The sources woken since the last [`take`](Self::take), left set.
    pub(crate) fn peek(&self) -> u8 {
        self.bits.load(Ordering::Acquire)
    }

    /// The sources woken since the last call.
    pub(crate) fn take(&self) -> u8 {
        self.bits.swap(0, Ordering::AcqRel)
    }

    /// Asks the driver to shut down with `grace`, and wakes its task (as its commands
    /// would).
    pub(crate) fn ask_shutdown(&self, grace: Duration) {
        if self.is_finished() {
            return;
        }
        let nanos = u64::try_from(grace.as_nanos()).map_or(u64::MAX, |n| n.saturating_add(1));
        self.shutdown.store(nanos, Ordering::Release);
        self.bits.fetch_or(COMMANDS, Ordering::AcqRel);
        self.wake_task();
    }

    /// The grace of the shutdown asked for since the last call, if one was.
    pub(crate) fn take_shutdown(&self) -> Option<Duration> {
        match self.shutdown.swap(0, Ordering::AcqRel) {
            0 => None,
            nanos => Some(Duration::from_nanos(nanos - 1)),
        }
    }

    /// The driver has finished (or is dropped): its task is let go, and later wakes (a
    /// client dropped after it, a subscription's) find none.
    pub(crate) fn finish(&self) {
        self.finished.store(true, Ordering::Release);
        let task = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(task);
    }

    /// [`finish`](Woken::finish) was called.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}

/// A waker of one source: records the source in [`Woken`] and wakes the task.
struct Source {
    woken: Arc<Woken>,
    bit: u8,
}

impl Wake for Source {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.bits.fetch_or(self.bit, Ordering::AcqRel);
        self.woken.wake_task();
    }
}

/// What the driver reads on every poll: the sources woken, and the task's waker kept
/// there.
pub(crate) struct Wakers {
    /// The task's waker kept in `woken`, to tell at no cost whether a poll's is the same.
    task: Option<Waker>,
    pub woken: Arc<Woken>,
}

/// A waker per source the driver polls, made once per connection: each source keeps the
/// same one, so no registration clones a waker again. Kept apart from [`Wakers`], which
/// every poll reads: a source's waker is read only when its source is polled. The
/// transport's and the sleep's are made when first asked for: most transports are polled
/// with the task's waker ([`Transport::wakes_on_input`](crate::Transport::wakes_on_input)),
/// and a connection without deadlines never sleeps (each waker is an allocation).
pub(crate) struct Sources {
    pub commands: Waker,
    socket: OnceCell<Waker>,
    timer: OnceCell<Waker>,
    woken: Arc<Woken>,
}

impl Sources {
    /// The waker the transport is polled with: its own (`own`), or the task's, `task`.
    pub(crate) fn transport<'a>(&'a self, own: bool, task: &'a Waker) -> &'a Waker {
        if own {
            self.socket.get_or_init(|| source(&self.woken, SOCKET))
        } else {
            task
        }
    }

    /// The sleep's waker.
    pub(crate) fn timer(&self) -> &Waker {
        self.timer.get_or_init(|| source(&self.woken, TIMER))
    }
}

/// The waker of the source `bit`.
fn source(woken: &Arc<Woken>, bit: u8) -> Waker {
    Waker::from(Arc::new(Source {
        woken: woken.clone(),
        bit,
    }))
}

impl Wakers {
    pub(crate) fn new(woken: Arc<Woken>) -> (Wakers, Sources) {
        let sources = Sources {
            commands: source(&woken, COMMANDS),
            socket: OnceCell::new(),
            timer: OnceCell::new(),
            woken: woken.clone(),
        };
        (Wakers { woken, task: None }, sources)
    }

    /// The task is polled with `waker`: kept for the sources' wakes unless it is the one
    /// kept already.
    pub(crate) fn polled_with(&mut self, waker: &Waker) {
        if !self.task.as_ref().is_some_and(|t| t.will_wake(waker)) {
            self.woken.set_task(waker);
            self.task = Some(waker.clone());
        }
    }
}
