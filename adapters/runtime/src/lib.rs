//! sansrpc-runtime: what every driver on `std` shares, beside the sans-I/O core (which reads
//! no clock, takes no lock and asks nothing of the operating system): a [`Clock`] that
//! turns the host's [`time::Instant`] into the core's [`Instant`] and back, per-connection values
//! shared by handlers ([`Locals`]), whether a process still runs ([`process_alive`], for an
//! LSP server whose editor died), the client interceptors' view of each call, timed
//! ([`Observe`], [`ObserveBatch`]), our calls' answers handed to their callers
//! ([`calls::Answer`]), the hash tables of numbers a program counts out itself
//! ([`KeyMap`]: connections, sessions, streams), and [`Peer`]: the one face a protocol crate
//! (`sansrpc-lsp`, `sansrpc-mcp`, `sansrpc-a2a`) needs of a driver, which the futures and
//! the blocking adapters both make with [`DriverPeer`].
#![deny(missing_docs)]

use std::sync::Arc;

use sansrpc::client::{BatchEntry, RawResult};
use sansrpc::ext::interceptors::{CallOutcome, Interceptors};
use sansrpc::method::CallError;
use sansrpc::{Instant, RawValue};

pub mod calls;
mod extension;
mod keys;
mod peer;
pub mod subscriptions;

pub use extension::Extension;
pub use keys::{remove_and_shrink, shrink_when_sparse, KeyHasher, KeyMap, Keys};

/// The host's monotonic clock, which every driver's [`Clock`] and timer read:
/// `std::time::Instant`, except in a browser (`wasm32-unknown-unknown`), where std has no
/// clock (its `Instant::now` panics) and `web_time`'s `Instant`, on `performance.now()`,
/// stands in with the same API.
pub mod time {
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub use std::time::Instant;
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    pub use web_time::Instant;
}

pub use peer::{
    call_error, params_of, BoxFuture, CallFuture, ConnectionNotifier, DriverPeer, Executor, Peer,
    PeerConnection, PeerContext,
};

/// One value per type, kept per connection by a driver: the state a protocol layer keeps
/// for a connection (an MCP server's session, an LSP server's open documents), shared by
/// every handler on it. The futures adapter's `Client::local` and the blocking adapter's
/// `Peer::local` hand these out.
#[derive(Default)]
pub struct Locals {
    /// The first value stored: most connections keep one (their protocol's session), read
    /// here on every request without taking the lock.
    first: std::sync::OnceLock<Local>,
    /// The others, and the lock under which any value is stored.
    rest: std::sync::Mutex<Vec<Local>>,
}

type Local = (
    core::any::TypeId,
    std::sync::Arc<dyn core::any::Any + Send + Sync>,
);

impl core::fmt::Debug for Locals {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let n = usize::from(self.first.get().is_some()) + self.rest.lock().map_or(0, |l| l.len());
        f.debug_struct("Locals").field("values", &n).finish()
    }
}

impl Locals {
    /// The value of type `T`, made with `T::default()` the first time it is asked for.
    pub fn get<T: Default + Send + Sync + 'static>(&self) -> std::sync::Arc<T> {
        use std::sync::Arc;
        let id = core::any::TypeId::of::<T>();
        let take = |(t, value): &Local| {
            (*t == id)
                .then(|| Arc::clone(value).downcast::<T>().ok())
                .flatten()
        };
        if let Some(value) = self.first.get().and_then(take) {
            return value;
        }
        let find = |rest: &[Local]| {
            self.first
                .get()
                .and_then(take)
                .or_else(|| rest.iter().find_map(take))
        };
        if let Some(value) = find(&self.rest.lock().unwrap_or_else(|e| e.into_inner())) {
            return value;
        }
        // Made outside the lock (a `Default` may ask for another local); the first value
        // stored wins, and values are stored under the lock only.
        let made = Arc::new(T::default());
        let mut rest = self.rest.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(value) = find(&rest) {
            return value;
        }
        let local: Local = (
            id,
            Arc::clone(&made) as Arc<dyn core::any::Any + Send + Sync>,
        );
        if let Err(local) = self.first.set(local) {
            rest.push(local);
        }
        made
    }
}

/// A monotonic clock for drivers on `std`: [`Instant`]s measured from when it was made,
/// and back to the host's [`time::Instant`] for sleeping.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: time::Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        Clock {
            start: time::Instant::now(),
        }
    }

    /// The current time.
    pub fn now(&self) -> Instant {
        self.instant(time::Instant::now())
    }

    /// `at` on this clock (the epoch when earlier).
    pub fn instant(&self, at: time::Instant) -> Instant {
        Instant::from_duration(at.saturating_duration_since(self.start))
    }

    /// `at` as the host's [`time::Instant`], to sleep until.
    pub fn to_std(&self, at: Instant) -> time::Instant {
        self.start + at.since_epoch()
    }

    /// How long from now until `at` (zero when it passed): a poller's timeout.
    pub fn until(&self, at: Instant) -> core::time::Duration {
        self.to_std(at)
            .saturating_duration_since(time::Instant::now())
    }
}

/// True while the process `pid` runs (for [`Event::CheckProcess`]: an LSP server whose
/// editor died exits). On Linux it reads `/proc` (a zombie counts as gone); on other Unix
/// systems it asks `kill -0`; elsewhere it cannot tell and answers true.
///
/// [`Event::CheckProcess`]: sansrpc::connection::Event::CheckProcess
pub fn process_alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state follows the command name, which is in parentheses.
            Ok(stat) => !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
            Err(_) => false,
        }
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        std::process::Command::new("kill")
            .args(["-0", &format!("{pid}")])
            .stderr(std::process::Stdio::null())
            .status()
            .map_or(true, |s| s.success())
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// A call the client interceptors saw go out, to report to their
/// [`after`](sansrpc::ext::interceptors::Interceptor::after) hooks with the time it took: the
/// futures and blocking clients' one way of running them.
#[derive(Debug)]
pub struct Observe {
    chain: Arc<Interceptors>,
    method: String,
    start: time::Instant,
}

impl Observe {
    /// Runs the `before` hooks of `chain` (none: nothing to observe) on a call or
    /// notification about to go out, which they may change; a refusal is
    /// [`CallError::Intercepted`] and the call must not be sent.
    pub fn before(
        chain: Option<&Arc<Interceptors>>,
        method: &str,
        params: &mut Option<std::boxed::Box<RawValue>>,
        notification: bool,
    ) -> Result<Option<Observe>, CallError> {
        let Some(chain) = chain else {
            return Ok(None);
        };
        chain.before(method, params, notification)?;
        Ok(Some(Observe {
            chain: Arc::clone(chain),
            method: method.to_string(),
            start: time::Instant::now(),
        }))
    }

    /// Runs the `after` hooks with how the call ended and the time since `before`.
    pub fn after<T>(&self, result: &Result<T, CallError>) {
        self.chain
            .after(&self.method, CallOutcome::of(result), self.start.elapsed());
    }
}

/// A batch the client interceptors saw go out: [`Observe`] for every entry of it.
#[derive(Debug)]
pub struct ObserveBatch {
    chain: Arc<Interceptors>,
    /// The calls' methods, in the order of their results.
    methods: Vec<String>,
    start: time::Instant,
}

impl ObserveBatch {
    /// Runs the `before` hooks of `chain` on every entry in order (calls and notifications
    /// alike); the first refusal is [`CallError::Intercepted`] and nothing of the batch may
    /// be sent.
    pub fn before(
        chain: Option<&Arc<Interceptors>>,
        entries: &mut [BatchEntry],
    ) -> Result<Option<ObserveBatch>, CallError> {
        let Some(chain) = chain else {
            return Ok(None);
        };
        let mut methods = Vec::new();
        for entry in entries {
            chain.before(&entry.method, &mut entry.params, !entry.call)?;
            if entry.call {
                methods.push(entry.method.to_string());
            }
        }
        Ok(Some(ObserveBatch {
            chain: Arc::clone(chain),
            methods,
            start: time::Instant::now(),
        }))
    }

    /// Runs the `after` hooks for each call with its result (when the batch was answered).
    pub fn after(&self, results: &Result<Vec<RawResult>, CallError>) {
        let Ok(results) = results else { return };
        let elapsed = self.start.elapsed();
        for (method, result) in self.methods.iter().zip(results) {
            self.chain.after(method, CallOutcome::of(result), elapsed);
        }
    }
}

/// A clock function on the host's [`time::Instant`], counting from the moment it is made: what the
/// interceptors' rate limits and metrics take as their clock
/// ([`ext::interceptors::Clock`](sansrpc::ext::interceptors::Clock)).
pub fn system_clock() -> impl Fn() -> Instant + Send + Sync + Clone + 'static {
    let epoch = time::Instant::now();
    move || Instant::from_duration(epoch.elapsed())
}

/// A new router (`R::default()`, a driver's router) with what `mount` registers on it: a
/// protocol crate's `router()` for each driver, its `mount` given the new router.
pub fn mounted<R: Default>(mount: impl FnOnce(&mut R)) -> R {
    let mut router = R::default();
    mount(&mut router);
    router
}

/// What [`subscription_types!`] and [`raw_calls!`] name in the crate that uses them.
#[doc(hidden)]
pub mod __private {
    pub use sansrpc::connection::{RequestOptions, Timeout};
    pub use sansrpc::{Id, RawValue};
    pub use serde::de::DeserializeOwned;
}

#[cfg(test)]
mod locals_tests {
    use super::Locals;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    static MADE: AtomicUsize = AtomicUsize::new(0);

    #[derive(Default)]
    struct Session(AtomicUsize);

    /// A value whose `Default` asks for another local (as a protocol's state may).
    struct Documents(Arc<Session>);

    thread_local! {
        static LOCALS: std::cell::RefCell<Option<Arc<Locals>>> = const { std::cell::RefCell::new(None) };
    }

    impl Default for Documents {
        fn default() -> Self {
            MADE.fetch_add(1, Ordering::SeqCst);
            let locals = LOCALS
                .with(|l| l.borrow().clone())
                .expect("set by the test");
            Documents(locals.get::<Session>())
        }
    }

    #[test]
    fn one_value_per_type_the_first_stored_wins_and_a_default_may_ask_for_another() {
        let locals = Arc::new(Locals::default());
        LOCALS.with(|l| *l.borrow_mut() = Some(Arc::clone(&locals)));
        // `Documents` made first asks for `Session` while it is made: the session lands in
        // the first slot, the documents among the rest.
        let documents = locals.get::<Documents>();
        let session = locals.get::<Session>();
        assert!(Arc::ptr_eq(&documents.0, &session));
        assert!(Arc::ptr_eq(&locals.get::<Documents>(), &documents));
        session.0.fetch_add(1, Ordering::SeqCst);
        assert_eq!(locals.get::<Session>().0.load(Ordering::SeqCst), 1);
        assert_eq!(MADE.load(Ordering::SeqCst), 1);
        assert_eq!(format!("{locals:?}"), "Locals { values: 2 }");
    }

    #[test]
    fn threads_asking_at_once_share_one_value() {
        let locals = Arc::new(Locals::default());
        let got: Vec<Arc<Session>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| locals.get::<Session>()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got.iter().all(|v| Arc::ptr_eq(v, &got[0])));
        assert!(Arc::ptr_eq(&locals.get::<Session>(), &got[0]));
        let _ = locals.get::<u64>();
        assert_eq!(format!("{locals:?}"), "Locals { values: 2 }");
    }
}
