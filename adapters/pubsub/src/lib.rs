//! Pub/sub and persistent subscriptions (WebSocket seed §10–11) for sansrpc servers, on any
//! adapter.
//!
//! [`PubSub`] puts the core's sans-I/O [`Hub`] behind a lock shared by every connection,
//! gives it the clocks it needs (a thread of its own sleeps until the hub's next deadline:
//! acknowledgement timeouts, retention by age), and implements
//! [`ConnectionExtension`], the hook the blocking and futures/tokio drivers offer each
//! connection's requests to and drain notifications from. Store failures and dropped
//! notifications go to a reporter (stderr unless set).
//!
//! ```no_run
//! use std::sync::Arc;
//! use sansrpc::ext::pubsub::HubConfig;
//! use sansrpc::ext::store::{MemoryStore, RetentionPolicy};
//! use sansrpc_pubsub::PubSub;
//!
//! let store = MemoryStore::new(RetentionPolicy::default());
//! let pubsub = Arc::new(PubSub::new(store, HubConfig::default()));
//! let mut config = sansrpc_blocking::Config::default();
//! config.extension = Some(sansrpc_blocking::Extension::new(pubsub.clone()));
//! let router = Arc::new(sansrpc::router::Router::new());
//! let server = sansrpc_blocking::serve_tcp("127.0.0.1:0", router, config).unwrap();
//! // Publish from anywhere: every connection's matching subscribers are notified.
//! let data = sansrpc::RawValue::from_json(r#"{"price": 1}"#).unwrap();
//! pubsub.publish("stock.prices.AAPL", data).unwrap();
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant as StdInstant, SystemTime, UNIX_EPOCH};

use sansrpc::ext::connection::{ConnectionExtension, ConnectionHook, Wake};
use sansrpc::ext::pubsub::{Hub, HubConfig, Outgoing, PublishError, Published, Report, SessionId};
use sansrpc::ext::store::Store;
use sansrpc::router::Outcome;
use sansrpc::{Instant, RawValue};

/// Where [`Report`]s go.
pub type Reporter = Box<dyn Fn(&Report) + Send + Sync>;

/// Most notifications one [`ConnectionHook::drain`] call moves, so that one busy
/// connection does not hold the hub's lock for long.
const DRAIN_PER_CALL: usize = 256;

/// A [`Hub`] shared by every connection of a server. See the [crate docs](crate).
pub struct PubSub<S: Store> {
    shared: Arc<Shared<S>>,
}

struct Shared<S: Store> {
    state: Mutex<State<S>>,
    /// Signalled when the hub's next deadline may have moved, or on drop.
    timer: Condvar,
    start: StdInstant,
    reporter: Reporter,
}

struct State<S: Store> {
    hub: Hub<S>,
    wakes: BTreeMap<SessionId, Wake>,
    /// What the timer thread sleeps until (`None`: it is awake or sleeps with no deadline).
    sleeping_until: Option<Instant>,
    stop: bool,
}

impl<S: Store> fmt::Debug for PubSub<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PubSub").finish_non_exhaustive()
    }
}

impl<S: Store + Send + 'static> PubSub<S> {
    /// A hub over `store`, with its timer thread; reports go to stderr.
    pub fn new(store: S, config: HubConfig) -> Self {
        PubSub::with_reporter(
            store,
            config,
            Box::new(|r| eprintln!("sansrpc pubsub: {r}")),
        )
    }

    /// Like [`PubSub::new`], sending reports to `reporter` (called without the lock held).
    pub fn with_reporter(store: S, config: HubConfig, reporter: Reporter) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                hub: Hub::new(store, config),
                wakes: BTreeMap::new(),
                sleeping_until: None,
                stop: false,
            }),
            timer: Condvar::new(),
            start: StdInstant::now(),
            reporter,
        });
        let timer = Arc::clone(&shared);
        // Without the thread, acknowledgement timeouts and retention by age never fire;
        // everything else works.
        let spawned = thread::Builder::new()
            .name("pubsub-timer".into())
            .spawn(move || timer.run_timer());
        if let Err(e) = spawned {
            eprintln!("sansrpc pubsub: no timer thread: {e}");
        }
        PubSub { shared }
    }
}

impl<S: Store> PubSub<S> {
    /// Publishes `data` to `topic`: every matching subscriber of every connection is sent
    /// `rpc.notification`, and the message is appended to the store for persistent
    /// subscribers.
    pub fn publish(&self, topic: &str, data: &RawValue) -> Result<Published, PublishError> {
        let (now, wall) = self.shared.clocks();
        self.shared.with(|hub| hub.publish(topic, data, now, wall))
    }

    /// [`Hub::publish_local`]: the ephemeral fan-out only (a message from another node).
    pub fn publish_local(&self, topic: &str, data: &RawValue) -> Result<usize, PublishError> {
        self.shared.with(|hub| hub.publish_local(topic, data))
    }

    /// [`Hub::on_appended`]: another node appended to `topic`'s log.
    pub fn on_appended(&self, topic: &str) {
        let (now, _) = self.shared.clocks();
        self.shared.with(|hub| hub.on_appended(topic, now));
    }

    /// Runs `f` on the hub under the lock, then wakes the connections it queued for.
    pub fn with_hub<R>(&self, f: impl FnOnce(&mut Hub<S>) -> R) -> R {
        self.shared.with(f)
    }
}

impl<S: Store> Drop for PubSub<S> {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.timer.notify_all();
    }
}

impl<S: Store> Shared<S> {
    fn lock(&self) -> MutexGuard<'_, State<S>> {
        // A panic under the lock leaves the hub as consistent as its last call did.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn clocks(&self) -> (Instant, u64) {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        (Instant::from_duration(self.start.elapsed()), wall)
    }

    /// Runs `f` under the lock, then (without it) wakes the sessions it queued for and
    /// hands out reports.
    fn with<R>(&self, f: impl FnOnce(&mut Hub<S>) -> R) -> R {
        let mut state = self.lock();
        let result = f(&mut state.hub);
        let (wakes, reports) = settle(&mut state);
        // Wake the timer only when the hub's next deadline came earlier than its sleep.
        let earlier = match (state.hub.poll_timeout(), state.sleeping_until) {
            (Some(next), Some(until)) => next < until,
            (Some(_), None) => true,
            (None, _) => false,
        };
        drop(state);
        if earlier {
            self.timer.notify_all();
        }
        wakes.iter().for_each(|w| w());
        reports.iter().for_each(|r| (self.reporter)(r));
        result
    }

    fn run_timer(&self) {
        let mut state = self.lock();
        loop {
            if state.stop {
                return;
            }
            let (now, wall) = self.clocks();
            let next = state.hub.poll_timeout();
            if next.is_some_and(|t| t <= now) {
                state.hub.handle_timeout(now, wall);
                let (wakes, reports) = settle(&mut state);
                drop(state);
                wakes.iter().for_each(|w| w());
                reports.iter().for_each(|r| (self.reporter)(r));
                state = self.lock();
                continue;
            }
            let wait = next.map_or(Duration::from_secs(3600), |t| t - now);
            state.sleeping_until = Some(now.saturating_add(wait));
            state = self
                .timer
                .wait_timeout(state, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            state.sleeping_until = None;
        }
    }
}

fn settle<S: Store>(state: &mut State<S>) -> (Vec<Wake>, Vec<Report>) {
    let mut wakes = Vec::new();
    while let Some(id) = state.hub.poll_woken() {
        if let Some(w) = state.wakes.get(&id) {
            wakes.push(Arc::clone(w));
        }
    }
    let reports = std::iter::from_fn(|| state.hub.poll_report()).collect();
    (wakes, reports)
}

impl<S: Store + Send + 'static> ConnectionExtension for PubSub<S> {
    fn open(&self, wake: Wake) -> Box<dyn ConnectionHook> {
        let ready = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ready);
        let wake: Wake = Arc::new(move || {
            flag.store(true, Ordering::Release);
            wake();
        });
        let session = {
            let mut state = self.shared.lock();
            let session = state.hub.connect();
            state.wakes.insert(session, wake);
            session
        };
        Box::new(Hook {
            shared: Arc::clone(&self.shared),
            session,
            ready,
            held: None,
            closed: false,
        })
    }
}

struct Hook<S: Store> {
    shared: Arc<Shared<S>>,
    session: SessionId,
    /// Set by the wake: the hub queued something since the last drain.
    ready: Arc<AtomicBool>,
    /// A notification the endpoint had no room for.
    held: Option<Outgoing>,
    closed: bool,
}

impl<S: Store + Send + 'static> ConnectionHook for Hook<S> {
    fn request(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        out: &mut Vec<u8>,
    ) -> Option<Outcome> {
        if !method.starts_with("rpc.") {
            return None;
        }
        let (now, _) = self.shared.clocks();
        let session = self.session;
        self.shared
            .with(|hub| hub.handle(session, method, params, now, out))
    }

    fn drain(&mut self, send: &mut dyn FnMut(&str, &RawValue) -> bool) -> bool {
        if let Some(item) = self.held.take() {
            if !send(item.method(), item.params()) {
                self.held = Some(item);
                return true;
            }
        }
        if !self.ready.swap(false, Ordering::AcqRel) {
            return false;
        }
        let mut state = self.shared.lock();
        for _ in 0..DRAIN_PER_CALL {
            let Some(item) = state.hub.pop_outgoing(self.session) else {
                return false;
            };
            if !send(item.method(), item.params()) {
                self.held = Some(item);
                break;
            }
        }
        // Stopped early: more may wait.
        self.ready.store(true, Ordering::Release);
        true
    }

    fn close(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        let session = self.session;
        self.shared.with(|hub| hub.disconnect(session));
        self.shared.lock().wakes.remove(&session);
    }
}

impl<S: Store> Drop for Hook<S> {
    fn drop(&mut self) {
        if !self.closed {
            self.closed = true;
            let mut state = self.shared.lock();
            state.hub.disconnect(self.session);
            state.wakes.remove(&self.session);
        }
    }
}
