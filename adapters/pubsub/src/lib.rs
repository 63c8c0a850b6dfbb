//! Pub/sub and persistent subscriptions (WebSocket seed §10–11) for sansrpc servers, on any
//! adapter.
//!
//! [`PubSub`] puts the core's sans-I/O [`Hub`] behind a lock shared by every connection and
//! implements [`ConnectionExtension`], the hook the blocking and futures/tokio drivers offer
//! each connection's requests to and drain answers and notifications from.
//!
//! # Where the store runs
//! The hub never calls the store: it hands out store operations ([`StoreTask`]) and takes
//! their results back. For a store that waits on I/O ([`Store::waits`]: redb, NATS), one
//! worker thread owns the store and performs them in order, without the lock, so a slow
//! store (a NATS round trip, an fsync) never holds the lock every connection needs and
//! never blocks a runtime's worker. The in-memory store does not wait: its operations are
//! performed at once under the lock, where a handoff to another thread would cost more
//! than the operation. A request that needs the store
//! (the persistent methods) is answered when its operations are done, through the
//! connection's hook; a publish fans out to the ephemeral subscribers at once and appends in
//! the background ([`Receipt`]). The same worker drives the hub's deadlines (acknowledgement
//! timeouts, retention by age, idle ids) from [`Hub::poll_timeout`], between store
//! operations: a store worker waits anyway, so time costs no thread of its own.
//!
//! Store failures and dropped notifications go to a reporter (stderr unless set).
//!
//! ```no_run
//! use std::sync::Arc;
//! use sansrpc_pubsub::hub::HubConfig;
//! use sansrpc_pubsub::store::{MemoryStore, RetentionPolicy};
//! use sansrpc_pubsub::PubSub;
//!
//! let store = MemoryStore::new(RetentionPolicy::default());
//! let pubsub = Arc::new(PubSub::new(store, HubConfig::default()));
//! let mut config = sansrpc_blocking::Options::default();
//! config.extension = Some(sansrpc_blocking::Extension::new(pubsub.clone()));
//! let router = Arc::new(sansrpc::router::Router::new());
//! let server = sansrpc_blocking::serve_tcp("127.0.0.1:0", router, config).unwrap();
//! // Publish from anywhere: every connection's matching subscribers are notified.
//! let data = sansrpc::RawValue::from_json(r#"{"price": 1}"#).unwrap();
//! let receipt = pubsub.publish("stock.prices.AAPL", data).unwrap();
//! // Blocks until the store has it (or `receipt.appended().await` in async code).
//! let sequence = receipt.wait().unwrap();
//! ```
#![deny(missing_docs)]

pub mod hub;
pub mod store;
pub mod topic;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::task::Waker;
use std::thread;
use std::time::{Duration, Instant as StdInstant, SystemTime, UNIX_EPOCH};

use crate::hub::{
    AppendId, Handled, Hub, HubConfig, Next, NodeEvent, Outgoing, PublishError, Report, SessionId,
    StoreTask,
};
use crate::store::{DynStore, Store};
use futures_channel::oneshot;
use sansrpc::connection::bypass::Bypass;
use sansrpc::connection::hook::{ConnectionExtension, ConnectionHook, Item, Taken, Wake};
use sansrpc::{Instant, RawValue};

/// Where [`Report`]s go.
pub type Reporter = Box<dyn Fn(&Report) + Send + Sync>;

/// Carries a publish of this node to the other nodes of a cluster: `(topic, data)`, an
/// error as text (reported, the local fan-out happened).
pub type Forward = Box<dyn Fn(&str, &RawValue) -> Result<(), String> + Send + Sync>;

/// Most notifications one [`ConnectionHook::drain`] call moves, so that one busy
/// connection does not hold the hub's lock for long.
const DRAIN_PER_CALL: usize = 256;

/// Most store tasks the worker takes per round, so that results (and the notifications
/// they bring) flow while publishes keep coming.
const TASKS_PER_ROUND: usize = 64;

/// A [`Hub`] shared by every connection of a server, with the worker that performs its
/// store operations. See the [crate docs](crate).
pub struct PubSub {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Carries this node's publishes to the other nodes of a cluster.
    forward: OnceLock<Forward>,
    /// Signalled when the worker has store tasks or an earlier deadline, or on drop.
    worker: Condvar,
    start: StdInstant,
    reporter: Reporter,
}

struct State {
    hub: Hub,
    /// A store that does not wait ([`Store::waits`] false, memory): its operations are
    /// performed at once under the lock, where a handoff to the worker would cost more.
    inline: Option<DynStore>,
    receipts: BTreeMap<AppendId, oneshot::Sender<Result<u64, PublishError>>>,
    /// What the worker sleeps until (`None`: it is busy, or sleeps with no deadline).
    sleeping_until: Option<Instant>,
    sleeping: bool,
    stop: bool,
}

impl fmt::Debug for PubSub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PubSub").finish_non_exhaustive()
    }
}

/// What [`PubSub::publish`] did at once, and the append to the store under way.
#[derive(Debug)]
pub struct Receipt {
    delivered: usize,
    append: Append,
}

#[derive(Debug)]
enum Append {
    /// Not persisted.
    None,
    /// Appended already (a store that does not wait).
    Done(Result<u64, PublishError>),
    /// On the worker.
    Pending(oneshot::Receiver<Result<u64, PublishError>>),
}

impl Receipt {
    /// Sessions that were queued an `rpc.notification`.
    pub fn delivered(&self) -> usize {
        self.delivered
    }

    /// Waits for the store: the message's sequence id (`None` when the hub does not
    /// persist), or the store's failure. Blocks the thread: use [`Receipt::appended`] in
    /// async code.
    pub fn wait(self) -> Result<Option<u64>, PublishError> {
        futures_lite::future::block_on(self.appended())
    }

    /// Like [`Receipt::wait`], as a future (any runtime).
    pub async fn appended(self) -> Result<Option<u64>, PublishError> {
        match self.append {
            Append::None => Ok(None),
            Append::Done(result) => result.map(Some),
            Append::Pending(rx) => match rx.await {
                Ok(result) => result.map(Some),
                Err(_) => Err(PublishError::Store("the hub stopped".into())),
            },
        }
    }
}

impl PubSub {
    /// A hub over `store`, with its store worker; reports go to stderr.
    pub fn new<S: Store + Send + 'static>(store: S, config: HubConfig) -> Self {
        PubSub::with_reporter(
            store,
            config,
            Box::new(|r| eprintln!("sansrpc pubsub: {r}")),
        )
    }

    /// Like [`PubSub::new`], sending reports to `reporter` (called without the lock held).
    pub fn with_reporter<S: Store + Send + 'static>(
        store: S,
        config: HubConfig,
        reporter: Reporter,
    ) -> Self {
        let store = store::boxed(store);
        let (inline, worker_store) = if store.waits() {
            (None, Some(store))
        } else {
            (Some(store), None)
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                hub: Hub::new(config),
                inline,
                receipts: BTreeMap::new(),
                sleeping_until: None,
                sleeping: false,
                stop: false,
            }),
            worker: Condvar::new(),
            forward: OnceLock::new(),
            start: StdInstant::now(),
            reporter,
        });
        let worker = Arc::clone(&shared);
        // Without the worker the persistent methods are never answered and nothing is
        // appended; the ephemeral pub/sub still works.
        let spawned = thread::Builder::new()
            .name("pubsub-store".into())
            .spawn(move || worker.run_store(worker_store));
        if let Err(e) = spawned {
            (shared.reporter)(&Report::Store {
                operation: "starting the store worker",
                message: e.to_string(),
            });
        }
        PubSub { shared }
    }

    /// Publishes `data` to `topic`: every matching subscriber of every connection is queued
    /// `rpc.notification` now, and the message is appended to the store for persistent
    /// subscribers by the store worker; the [`Receipt`] tells when.
    pub fn publish(&self, topic: &str, data: &RawValue) -> Result<Receipt, PublishError> {
        let (now, wall) = self.shared.clocks();
        let receipt = self.shared.with(|state| {
            let publishing = state.hub.publish(topic, data, now, wall)?;
            let append = match publishing.append {
                None => Append::None,
                Some(id) if state.inline.is_some() => {
                    self.shared.run_inline(state);
                    let mut mine = None;
                    while let Some((done, result)) = state.hub.poll_appended() {
                        if done == id {
                            mine = Some(result);
                        } else if let Some(tx) = state.receipts.remove(&done) {
                            let _ = tx.send(result);
                        }
                    }
                    Append::Done(mine.unwrap_or(Err(PublishError::Store("lost".into()))))
                }
                Some(id) => {
                    let (tx, rx) = oneshot::channel();
                    state.receipts.insert(id, tx);
                    Append::Pending(rx)
                }
            };
            Ok(Receipt {
                delivered: publishing.delivered,
                append,
            })
        })?;
        if let Some(forward) = self.shared.forward.get() {
            // The other nodes' subscribers (a bus never hands a node its own publishes back).
            if let Err(message) = forward(topic, data) {
                (self.shared.reporter)(&Report::Store {
                    operation: "publishing to the other nodes",
                    message,
                });
            }
        }
        Ok(receipt)
    }

    /// Joins a cluster: every event of `events` (what the other nodes did) is applied to
    /// this hub, on a thread of its own, until the events end or the hub is dropped; and
    /// from now on every [`PubSub::publish`] is also handed to `forward`, for the other
    /// nodes' subscribers. With `sansrpc-store-nats`:
    /// `let (bus, events) = NatsBus::connect(url, 4096)?;` then
    /// `pubsub.join_cluster(events, Box::new(move |t, d| bus.publish(t, d).map_err(|e| e.to_string())))`.
    /// Joining twice is refused.
    pub fn join_cluster<I>(&self, events: I, forward: Forward) -> std::io::Result<()>
    where
        I: IntoIterator<Item = NodeEvent>,
        I::IntoIter: Send + 'static,
    {
        if self.shared.forward.set(forward).is_err() {
            return Err(std::io::Error::other("this hub joined a cluster already"));
        }
        let shared = Arc::downgrade(&self.shared);
        let events = events.into_iter();
        thread::Builder::new()
            .name("pubsub-cluster".into())
            .spawn(move || {
                for event in events {
                    let Some(shared) = shared.upgrade() else {
                        break;
                    };
                    if shared.lock().stop {
                        break;
                    }
                    let (now, _) = shared.clocks();
                    let applied = shared.with(|state| state.hub.handle_node_event(&event, now));
                    if let Err(e) = applied {
                        (shared.reporter)(&Report::Store {
                            operation: "applying another node's publish",
                            message: e.to_string(),
                        });
                    }
                }
            })
            .map(|_| ())
    }

    /// [`Hub::publish_local`]: the ephemeral fan-out only (a message from another node).
    pub fn publish_local(&self, topic: &str, data: &RawValue) -> Result<usize, PublishError> {
        self.shared
            .with(|state| state.hub.publish_local(topic, data))
    }

    /// [`Hub::on_appended`]: another node appended to `topic`'s log.
    pub fn on_appended(&self, topic: &str) {
        let (now, _) = self.shared.clocks();
        self.shared.with(|state| state.hub.on_appended(topic, now));
    }

    /// Runs `f` on the hub under the lock, then wakes the connections and the worker it
    /// queued work for. `f` must not block.
    pub fn with_hub<R>(&self, f: impl FnOnce(&mut Hub) -> R) -> R {
        self.shared.with(|state| f(&mut state.hub))
    }
}

impl Drop for PubSub {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.worker.notify_all();
    }
}

/// What to do once the lock is released.
#[derive(Default)]
struct Settled {
    /// The wakers of the sessions woken ([`Hub::poll_woken_waker`]): a session's is kept by
    /// the hub with it, not looked up in a table of its own.
    wakes: Vec<Waker>,
    reports: Vec<Report>,
    worker: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under the lock leaves the hub as consistent as its last call did.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn clocks(&self) -> (Instant, u64) {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        (Instant::from_duration(self.start.elapsed()), wall)
    }

    /// Runs `f` under the lock, then (without it) wakes the sessions and the worker it
    /// queued work for and hands out reports.
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut state = self.lock();
        let result = f(&mut state);
        self.run_inline(&mut state);
        let settled = settle(&mut state);
        drop(state);
        self.deliver(settled);
        result
    }

    fn deliver(&self, settled: Settled) {
        if settled.worker {
            self.worker.notify_all();
        }
        settled.wakes.into_iter().for_each(Waker::wake);
        settled.reports.iter().for_each(|r| (self.reporter)(r));
    }

    /// Performs the hub's store tasks at once, when the store does not wait.
    fn run_inline(&self, state: &mut State) {
        let State { hub, inline, .. } = state;
        if let Some(store) = inline {
            let (now, _) = self.clocks();
            while let Some(task) = hub.poll_store() {
                let done = task.perform(store);
                hub.handle_store(task, done, now);
            }
        }
    }

    /// The worker: performs the hub's store tasks in order, without the lock (when the
    /// store waits; `store` is `None` when they are performed inline), and the hub's
    /// deadlines in between.
    fn run_store(&self, mut store: Option<DynStore>) {
        let mut tasks: Vec<StoreTask> = Vec::with_capacity(TASKS_PER_ROUND);
        let mut done = Vec::with_capacity(TASKS_PER_ROUND);
        let mut state = self.lock();
        loop {
            if state.stop {
                return;
            }
            let (now, wall) = self.clocks();
            if state.hub.poll_timeout().is_some_and(|t| t <= now) {
                state.hub.handle_timeout(now, wall);
                self.run_inline(&mut state);
            }
            while store.is_some() && tasks.len() < TASKS_PER_ROUND {
                match state.hub.poll_store() {
                    Some(task) => tasks.push(task),
                    None => break,
                }
            }
            if tasks.is_empty() {
                let settled = settle(&mut state);
                if !settled.wakes.is_empty() || !settled.reports.is_empty() {
                    drop(state);
                    self.deliver(settled);
                    state = self.lock();
                    continue;
                }
                let next = state.hub.poll_timeout();
                let wait = next.map_or(Duration::from_secs(3600), |t| t - now);
                state.sleeping_until = next;
                state.sleeping = true;
                state = self
                    .worker
                    .wait_timeout(state, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                state.sleeping = false;
                state.sleeping_until = None;
                continue;
            }
            let settled = settle(&mut state);
            drop(state);
            self.deliver(settled);
            if let Some(store) = &mut store {
                done.extend(tasks.drain(..).map(|t| {
                    let result = t.perform(store);
                    (t, result)
                }));
            }
            state = self.lock();
            let (now, _) = self.clocks();
            for (task, result) in done.drain(..) {
                state.hub.handle_store(task, result, now);
            }
        }
    }
}

/// Collects, under the lock, what the last hub calls queued for others.
fn settle(state: &mut State) -> Settled {
    let mut settled = Settled::default();
    while let Some((_, waker)) = state.hub.poll_woken_waker() {
        settled.wakes.extend(waker);
    }
    while let Some((id, result)) = state.hub.poll_appended() {
        if let Some(tx) = state.receipts.remove(&id) {
            // The receipt may have been dropped: nobody waits.
            let _ = tx.send(result);
        }
    }
    settled.reports = std::iter::from_fn(|| state.hub.poll_report()).collect();
    // Wake the worker when it sleeps and has work now or an earlier deadline.
    settled.worker = state.sleeping
        && (state.hub.queued_store_tasks() > 0
            || match (state.hub.poll_timeout(), state.sleeping_until) {
                (Some(next), Some(until)) => next < until,
                (Some(_), None) => true,
                (None, _) => false,
            });
    settled
}

impl ConnectionExtension for PubSub {
    fn open(&self, wake: Wake) -> Box<dyn ConnectionHook> {
        let wake = Arc::new(SessionWake {
            ready: AtomicBool::new(false),
            wake,
        });
        let waker = Waker::from(Arc::clone(&wake));
        let session = self.shared.with(|state| state.hub.connect_waking(waker));
        Box::new(Hook {
            shared: Arc::clone(&self.shared),
            session,
            wake,
            held: None,
            closed: false,
            subscribing: false,
        })
    }
}

/// How a session's connection is woken: its flag (the hub queued something since its last
/// drain) set, then its driver's wake. One allocation for both, as a publish wakes every
/// subscribed session; the hub keeps it with the session as a [`Waker`].
struct SessionWake {
    ready: AtomicBool,
    wake: Wake,
}

impl std::task::Wake for SessionWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.ready.store(true, Ordering::Release);
        (self.wake)();
    }
}

struct Hook {
    shared: Arc<Shared>,
    session: SessionId,
    /// Its flag is set by the wake: the hub queued something since the last drain.
    wake: Arc<SessionWake>,
    /// A notification the endpoint had no room for.
    held: Option<Outgoing>,
    closed: bool,
    /// The connection asked to subscribe at least once: only then does its driver's park
    /// take the hub's lock to let its notifications be written past it.
    subscribing: bool,
}

impl ConnectionHook for Hook {
    fn request(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        out: &mut Vec<u8>,
    ) -> Option<Taken> {
        if !method.starts_with("rpc.") {
            return None;
        }
        self.subscribing |= method.starts_with("rpc.subscribe");
        let (now, _) = self.shared.clocks();
        let session = self.session;
        let handled = self
            .shared
            .with(|state| state.hub.handle(session, method, params, now, out))?;
        Some(match handled {
            Handled::Answered(outcome) => Taken::Now(outcome),
            Handled::Later(ticket) => Taken::Later(ticket.get()),
        })
    }

    fn drain(&mut self, send: &mut dyn FnMut(Item<'_>) -> bool) -> bool {
        if !self.wake.ready.swap(false, Ordering::AcqRel) {
            if let Some(item) = self.held.take() {
                if !send(Item::Shared(item.method(), item.shared_params())) {
                    self.held = Some(item);
                    return true;
                }
            }
            return false;
        }
        let mut state = self.shared.lock();
        if let Some(item) = self.held.take() {
            // A notification held back goes after the answers, before the rest.
            while let Some((ticket, answer)) = state.hub.pop_answer(self.session) {
                send(Item::Answer(ticket.get(), answer.as_deref()));
            }
            if !send(Item::Shared(item.method(), item.shared_params())) {
                self.held = Some(item);
                self.wake.ready.store(true, Ordering::Release);
                return true;
            }
        }
        // Answers and notifications in order, one look at the session for each (a
        // subscriber's connection, woken for each notification, looks once).
        for _ in 0..DRAIN_PER_CALL {
            let Some((next, more)) = state.hub.pop_next(self.session) else {
                return false;
            };
            match next {
                Next::Answer(ticket, answer) => {
                    send(Item::Answer(ticket.get(), answer.as_deref()));
                }
                Next::Outgoing(item) => {
                    if !send(Item::Shared(item.method(), item.shared_params())) {
                        self.held = Some(item);
                        break;
                    }
                }
            }
            if !more {
                return false;
            }
        }
        // Stopped early: more may wait.
        self.wake.ready.store(true, Ordering::Release);
        true
    }

    fn open_bypass(&mut self, bypass: &Arc<dyn Bypass>) -> bool {
        // What the connection refused goes first, through the output.
        if !self.subscribing || self.held.is_some() || self.closed {
            return false;
        }
        let session = self.session;
        self.shared
            .lock()
            .hub
            .open_bypass(session, Arc::clone(bypass))
    }

    fn close_bypass(&mut self) {
        let session = self.session;
        self.shared.lock().hub.close_bypass(session);
    }

    fn close(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        let session = self.session;
        self.shared.with(|state| state.hub.disconnect(session));
    }
}

impl Drop for Hook {
    fn drop(&mut self) {
        self.close();
    }
}
