//! Work on a document's versions, beside the connection: the signal that a version was
//! superseded, a timer and a way to run the analysis hook that work on every runtime the
//! server does (tokio's when there is one, else the executor the driver was given, as in a
//! browser, else a thread of their own), and the cache of values computed per version.

use std::any::{Any, TypeId};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

use super::context::{BoxFuture, Peer};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Set once: when a newer version of the document arrived, or it was closed. Cheap to
/// clone (shared).
#[derive(Clone, Default, Debug)]
pub(crate) struct Signal(Arc<Mutex<SignalState>>);

#[derive(Default, Debug)]
struct SignalState {
    set: bool,
    wakers: Vec<Waker>,
}

impl Signal {
    /// True when `other` is this very signal (not a copy of its state).
    pub fn same(&self, other: &Signal) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Sets it, waking every waiter.
    pub fn set(&self) {
        let wakers = {
            let mut state = lock(&self.0);
            state.set = true;
            std::mem::take(&mut state.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    pub fn is_set(&self) -> bool {
        lock(&self.0).set
    }

    /// Resolves once it is set.
    pub fn wait(&self) -> BoxFuture<()> {
        Box::pin(SignalWait(self.clone()))
    }
}

struct SignalWait(Signal);

impl Future for SignalWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        let mut state = lock(&self.0 .0);
        if state.set {
            return Poll::Ready(());
        }
        if !state.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            state.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// Resolves after `wait`: on tokio's timer inside a tokio runtime, else on the timer of the
/// executor `host`'s driver was given (a browser's), else on a thread that sleeps that long
/// (a thread per call: meant for a debounce, not for a hot loop).
pub(crate) fn sleep(host: &dyn Peer, wait: Duration) -> BoxFuture<()> {
    #[cfg(feature = "tokio")]
    if tokio::runtime::Handle::try_current().is_ok() {
        return Box::pin(tokio::time::sleep(wait));
    }
    if let Some(executor) = host.executor() {
        return executor.sleep(wait);
    }
    let elapsed = Signal::default();
    let set = elapsed.clone();
    let spawned = std::thread::Builder::new()
        .name("sansrpc-lsp-sleep".into())
        .spawn(move || {
            std::thread::sleep(wait);
            set.set();
        });
    if spawned.is_err() {
        // No thread to be had: the wait ends at once rather than never.
        elapsed.set();
    }
    elapsed.wait()
}

/// Whichever of two futures ends first: `true` when it is `first`.
pub(crate) async fn first_of(first: BoxFuture<()>, second: BoxFuture<()>) -> bool {
    struct Race(BoxFuture<()>, BoxFuture<()>);
    impl Future for Race {
        type Output = bool;
        fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<bool> {
            if self.0.as_mut().poll(cx).is_ready() {
                return Poll::Ready(true);
            }
            if self.1.as_mut().poll(cx).is_ready() {
                return Poll::Ready(false);
            }
            Poll::Pending
        }
    }
    Race(first, second).await
}

/// Runs `work` beside the connection: on the current tokio runtime when there is one, else
/// on the executor `host`'s driver was given (a browser's: no thread there), else to its end
/// on a thread of its own.
pub(crate) fn run_beside(host: &dyn Peer, work: BoxFuture<()>) {
    #[cfg(feature = "tokio")]
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(work);
        return;
    }
    if let Some(executor) = host.executor() {
        executor.spawn(work);
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("sansrpc-lsp-analysis".into())
        .spawn(move || pollster::block_on(work));
    if let Err(e) = spawned {
        eprintln!("sansrpc-lsp: no thread for a document's analysis: {e}");
    }
}

/// Values computed from one version of a document, one per type.
#[derive(Default)]
pub(crate) struct Cached {
    entries: Vec<(TypeId, i32, Arc<dyn Any + Send + Sync>)>,
}

impl std::fmt::Debug for Cached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|(_, version, _)| version))
            .finish()
    }
}

impl Cached {
    /// The value of type `T` kept for `version`.
    pub fn get<T: Send + Sync + 'static>(&self, version: i32) -> Option<Arc<T>> {
        let (_, _, value) = self
            .entries
            .iter()
            .find(|(t, v, _)| *t == TypeId::of::<T>() && *v == version)?;
        Arc::clone(value).downcast::<T>().ok()
    }

    /// Keeps `value` for `version`, unless a value of a later version is kept already.
    pub fn put<T: Send + Sync + 'static>(&mut self, version: i32, value: Arc<T>) {
        let type_id = TypeId::of::<T>();
        match self.entries.iter_mut().find(|(t, ..)| *t == type_id) {
            Some(entry) if entry.1 > version => {}
            Some(entry) => *entry = (type_id, version, value),
            None => self.entries.push((type_id, version, value)),
        }
    }
}
