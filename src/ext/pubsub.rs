//! Publish/subscribe (WebSocket seed §10) and persistent subscriptions (§11) as one sans-I/O
//! state machine, [`Hub`], shared by every connection of a server.
//!
//! # Calling contract
//! The adapter keeps one `Hub` behind a lock and, per connection:
//! - calls [`Hub::connect`] when the connection opens and [`Hub::disconnect`] when it closes
//!   (every subscription of the session goes, persistent subscriptions are released but kept
//!   in the store);
//! - offers every incoming request to [`Hub::handle`] before its router: `Some` is the answer
//!   (the result JSON is in `out`), `None` means the name is not the hub's;
//! - after any hub call, drains [`Hub::poll_woken`] and wakes those sessions' connections,
//!   which then move [`Hub::pop_outgoing`] into their endpoint while it accepts output;
//! - drives time: [`Hub::handle_timeout`] at [`Hub::poll_timeout`] (ack timeouts, retention),
//!   with the monotonic `now` and the wall clock in milliseconds since the Unix epoch (for
//!   timestamps and retention by age). The hub never reads a clock;
//! - logs [`Hub::poll_report`]: store failures and dropped notifications, which the peer sees
//!   only as `-32603` or not at all.
//!
//! # Policies
//! - **Slow subscribers**: each session has a bounded queue ([`HubConfig::max_queued`]
//!   notifications, [`HubConfig::max_queued_bytes`] bytes). When a notification does not
//!   fit, the *oldest* queued notifications are dropped to make room, counted per session and
//!   reported once per episode ([`Report::Dropped`]). A publisher is never slowed down and
//!   memory never grows; a dropped persistent delivery is still unacknowledged and comes
//!   again after the ack timeout.
//! - **Duplicates**: a session subscribed with several patterns matching one topic receives
//!   one `rpc.notification` per publish, not one per pattern (the notification does not say
//!   which subscription it is for).
//! - **One connection per persistent subscription**: with [`HubConfig::takeover`] (the
//!   default), subscribing to an id active on another connection moves it to the new one (the
//!   old connection stops receiving it; a half-dead connection cannot hold a subscription
//!   hostage). Without it the second subscribe is refused with [`SUBSCRIPTION_IN_USE`].
//! - **Persistent delivery**: at most [`HubConfig::max_in_flight`] unacknowledged messages
//!   per subscription are outstanding; each is sent again if not acknowledged within
//!   [`HubConfig::ack_timeout`], and every unacknowledged message is sent again when the
//!   subscription is subscribed anew (after a reconnect). `resumed_from_sequence` is the ack
//!   floor: every sequence up to it is acknowledged; a new subscription starts at the topic's
//!   last sequence (it receives what is published from then on). Wildcards are refused:
//!   sequence ids are per topic.
//! - **How many persistent ids**: the store keeps at most [`HubConfig::max_persistent_ids`]
//!   subscription ids for the server, whoever created them and whether or not a connection
//!   has them now; subscribing with a new id beyond it is refused with
//!   [`TOO_MANY_PERSISTENT_IDS`], while subscribing with an id the store knows is always
//!   served. An id no connection has had for [`HubConfig::persistent_idle_timeout`] is
//!   deleted with its state, which frees its place (see [`HubConfig::persistent_idle_timeout`]
//!   for how exact that time is).
//! - **What is persisted**: with [`HubConfig::persist`] (the default) every [`Hub::publish`]
//!   appends to the store, whoever is listening, so a persistent subscriber that is offline
//!   finds its messages when it comes back; retention bounds the log.
//! - Every store failure answers the peer `-32603` and is reported to the operator.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::{self, Write as _};
use core::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{code, ErrorObject};
use crate::ext::store::{Store, StoredMessage, SubscriptionState};
use crate::ext::topic::{validate_pattern, validate_topic, TopicError, TopicLimits, Trie};
use crate::method::{write_json, ParamsDecoder};
use crate::raw::RawValue;
use crate::router::Outcome;
use crate::time::Instant;

/// The notification every matching subscriber receives: params `{topic, data}`.
pub const NOTIFICATION: &str = "rpc.notification";
/// The notification of a persistent subscription: params `{subscription_id, topic,
/// sequence_id, timestamp, data}`.
pub const PERSISTENT_NOTIFICATION: &str = "rpc.notification.persistent";
/// Every request method the hub answers.
pub const METHODS: [&str; 10] = [
    "rpc.subscribe",
    "rpc.unsubscribe",
    "rpc.subscribe.batch",
    "rpc.unsubscribe.batch",
    "rpc.subscribe.persistent",
    "rpc.acknowledge.persistent",
    "rpc.unsubscribe.persistent",
    "rpc.subscribe.persistent.batch",
    "rpc.acknowledge.persistent.batch",
    "rpc.unsubscribe.persistent.batch",
];

/// Registers on `router` an answer to every subscription method for a transport that
/// cannot push notifications (HTTP: one answer per request, nothing after): `-32601` with
/// a message naming the transports that can. A server offers it on such transports instead
/// of a hub, so a client learns why rather than subscribing into silence.
pub fn refuse_subscriptions(
    router: &mut crate::router::Router,
) -> Result<(), crate::router::RegisterError> {
    for name in METHODS {
        router.extension(name, |_, _| {
            Err(ErrorObject::new(
                crate::error::code::METHOD_NOT_FOUND,
                "Subscriptions need a connection that stays open (WebSocket, TCP, Unix socket \
                 or stdio); this transport cannot push notifications",
            ))
        })?;
    }
    Ok(())
}
/// Error code: the session already has [`HubConfig::max_subscriptions`] subscriptions.
pub const TOO_MANY_SUBSCRIPTIONS: i64 = -32010;
/// Error code: the persistent subscription is active on another connection and
/// [`HubConfig::takeover`] is off.
pub const SUBSCRIPTION_IN_USE: i64 = -32011;
/// Error code: the store already keeps [`HubConfig::max_persistent_ids`] persistent
/// subscription ids, and the request would create a new one.
pub const TOO_MANY_PERSISTENT_IDS: i64 = -32012;

/// A connection as the hub knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(u64);

impl SessionId {
    /// The number behind the id (sequential from 1, never reused), for logs.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Bounds and policies of a [`Hub`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HubConfig {
    /// Bounds on topics and patterns.
    pub topics: TopicLimits,
    /// Most subscriptions per session, patterns and persistent together (default 1024).
    pub max_subscriptions: usize,
    /// Most entries in one `.batch` request (default 256).
    pub max_batch: usize,
    /// Most notifications queued per session (default 1024).
    pub max_queued: usize,
    /// Most bytes of notification params queued per session (default 4 MiB).
    pub max_queued_bytes: usize,
    /// Most unacknowledged deliveries per persistent subscription (default 64).
    pub max_in_flight: usize,
    /// How long a persistent delivery may stay unacknowledged before it is sent again
    /// (default 30 s).
    pub ack_timeout: Duration,
    /// How often the store is asked to expire messages by age (default 10 s).
    pub expire_interval: Duration,
    /// Longest persistent subscription id, in bytes (default 256).
    pub max_subscription_id_len: usize,
    /// A second connection subscribing to an active persistent subscription takes it over
    /// (default `true`); `false` refuses it with [`SUBSCRIPTION_IN_USE`].
    pub takeover: bool,
    /// [`Hub::publish`] appends every message to the store (default `true`).
    pub persist: bool,
    /// Most persistent subscription ids the store keeps, attached to a connection or not
    /// (default 10,000). A subscribe that would create a new id beyond it is refused with
    /// [`TOO_MANY_PERSISTENT_IDS`]; an id the store knows is always served. The count is
    /// taken from [`Store::subscriptions`] once and at every idle sweep, and kept up to date
    /// by this hub in between (with a store shared by several nodes, ids the other nodes
    /// created in between are counted at the next sweep).
    pub max_persistent_ids: usize,
    /// A persistent subscription id that no connection has had for this long is deleted
    /// with its acknowledged state, freeing its place under
    /// [`HubConfig::max_persistent_ids`] (default 24 h; `None`: kept until unsubscribed).
    ///
    /// The time is [`SubscriptionState::last_seen_ms`], which the hub writes when a
    /// connection releases the id, and refreshes while one has it, at most once per
    /// sixteenth of the timeout (so that a connection that comes and goes often costs no
    /// write each time); the sweep that deletes idle ids runs at that cadence too (and never
    /// more often than [`HubConfig::expire_interval`]). So an id goes between 15/16 of the
    /// timeout and the timeout plus a sixteenth after its last connection released it; when
    /// the server crashed while a connection had it, from 7/8 of the timeout after the crash.
    /// A record without a time (from before it was stored) counts as seen at the first
    /// sweep.
    pub persistent_idle_timeout: Option<Duration>,
}

impl Default for HubConfig {
    fn default() -> Self {
        HubConfig {
            topics: TopicLimits::default(),
            max_subscriptions: 1024,
            max_batch: 256,
            max_queued: 1024,
            max_queued_bytes: 4 * 1024 * 1024,
            max_in_flight: 64,
            ack_timeout: Duration::from_secs(30),
            expire_interval: Duration::from_secs(10),
            max_subscription_id_len: 256,
            takeover: true,
            persist: true,
            max_persistent_ids: 10_000,
            persistent_idle_timeout: Some(Duration::from_secs(86_400)),
        }
    }
}

/// One notification waiting for its session's connection. Cheap to clone: the params of a
/// publish are shared by every subscriber.
#[derive(Debug, Clone)]
pub struct Outgoing {
    method: &'static str,
    params: Arc<str>,
}

impl Outgoing {
    /// The notification's method: [`NOTIFICATION`] or [`PERSISTENT_NOTIFICATION`].
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// The notification's params object.
    pub fn params(&self) -> &RawValue {
        // Written by the hub from validated pieces.
        RawValue::from_validated(&self.params)
    }
}

/// Something the operator should know; the peer never sees these.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Report {
    /// A store operation failed (the peer, if any, was answered `-32603`).
    Store {
        /// What the hub was doing.
        operation: &'static str,
        /// The store's error, displayed.
        message: String,
    },
    /// A session's queue was full and notifications were dropped; reported once until its
    /// queue drains empty again.
    Dropped {
        /// The slow session.
        session: SessionId,
        /// Notifications dropped from that session's queue so far.
        total: u64,
    },
    /// A persistent subscription moved to another connection ([`HubConfig::takeover`]).
    TakenOver {
        /// The subscription id.
        subscription_id: String,
        /// The session that had it.
        from: SessionId,
        /// The session that has it now.
        to: SessionId,
    },
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Report::Store { operation, message } => {
                write!(f, "store failed while {operation}: {message}")
            }
            Report::Dropped { session, total } => write!(
                f,
                "session {} is not keeping up: {total} notifications dropped",
                session.0
            ),
            Report::TakenOver {
                subscription_id,
                from,
                to,
            } => write!(
                f,
                "persistent subscription {subscription_id:?} moved from session {} to {}",
                from.0, to.0
            ),
        }
    }
}

/// [`Hub::publish`] refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublishError {
    /// The topic is not a valid exact topic.
    Topic(TopicError),
    /// The store failed to append (also reported with [`Hub::poll_report`]); the ephemeral
    /// fan-out has happened.
    Store(String),
}

impl fmt::Display for PublishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublishError::Topic(e) => write!(f, "invalid topic: {e}"),
            PublishError::Store(e) => write!(f, "store failed: {e}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for PublishError {}

impl PublishError {
    /// The error object a peer that asked to publish is answered with: `-32602` for a bad
    /// topic, `-32603` for a store failure.
    pub fn to_error_object(&self) -> ErrorObject<'static> {
        match self {
            PublishError::Topic(e) => ErrorObject::new(code::INVALID_PARAMS, e.to_string()),
            PublishError::Store(_) => ErrorObject::internal_error(),
        }
    }
}

/// What one [`Hub::publish`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    /// Sessions that were queued an `rpc.notification`.
    pub delivered: usize,
    /// The message's sequence id in the store, when it was persisted.
    pub sequence: Option<u64>,
}

#[derive(Debug, Default)]
struct Session {
    patterns: BTreeSet<String>,
    persistent: BTreeSet<String>,
    queue: VecDeque<Outgoing>,
    bytes: usize,
    dropped: u64,
    drop_reported: bool,
    wake_pending: bool,
}

impl Session {
    fn subscriptions(&self) -> usize {
        self.patterns.len() + self.persistent.len()
    }
}

/// A persistent subscription attached to a session.
#[derive(Debug)]
struct Active {
    session: SessionId,
    /// Names this attachment in [`Deadlines`].
    key: u64,
    state: SubscriptionState,
    /// The highest sequence handed to the session's queue so far.
    cursor: u64,
    /// Unacknowledged deliveries and when each is due again.
    in_flight: BTreeMap<u64, Instant>,
}

impl Active {
    /// Records that `seq` is in flight until `due`.
    fn set_due(&mut self, deadlines: &mut Deadlines, seq: u64, due: Instant) {
        if let Some(old) = self.in_flight.insert(seq, due) {
            deadlines.remove(&(old, self.key, seq));
        }
        deadlines.insert((due, self.key, seq));
    }

    /// `seq` is no longer in flight.
    fn clear_due(&mut self, deadlines: &mut Deadlines, seq: u64) {
        if let Some(old) = self.in_flight.remove(&seq) {
            deadlines.remove(&(old, self.key, seq));
        }
    }
}

/// Every in-flight delivery by deadline: (due, attachment key, sequence), so the next
/// deadline and the due deliveries are found without scanning every subscription.
type Deadlines = BTreeSet<(Instant, u64, u64)>;

const MAX_REPORTS: usize = 256;

#[derive(Debug, Default)]
struct Queues {
    sessions: BTreeMap<SessionId, Session>,
    woken: VecDeque<SessionId>,
    reports: VecDeque<Report>,
}

impl Queues {
    fn report(&mut self, report: Report) {
        if self.reports.len() == MAX_REPORTS {
            self.reports.pop_front();
        }
        self.reports.push_back(report);
    }

    fn store_error(
        &mut self,
        operation: &'static str,
        e: &impl fmt::Display,
    ) -> ErrorObject<'static> {
        self.report(Report::Store {
            operation,
            message: e.to_string(),
        });
        ErrorObject::internal_error()
    }

    /// Queues `item` for `id`, dropping the oldest when full; false if no such session.
    fn enqueue(&mut self, id: SessionId, item: Outgoing, config: &HubConfig) -> bool {
        let Some(s) = self.sessions.get_mut(&id) else {
            return false;
        };
        let size = item.params.len();
        while !s.queue.is_empty()
            && (s.queue.len() >= config.max_queued.max(1)
                || s.bytes + size > config.max_queued_bytes)
        {
            if let Some(old) = s.queue.pop_front() {
                s.bytes -= old.params.len();
                s.dropped += 1;
            }
        }
        s.bytes += size;
        s.queue.push_back(item);
        let report = (s.dropped > 0 && !s.drop_reported).then_some(s.dropped);
        if report.is_some() {
            s.drop_reported = true;
        }
        if !s.wake_pending {
            s.wake_pending = true;
            self.woken.push_back(id);
        }
        if let Some(total) = report {
            self.report(Report::Dropped { session: id, total });
        }
        true
    }
}

/// The pub/sub state of a whole server: sessions, their subscriptions and queues, and the
/// persistent subscriptions over a [`Store`]. See the [module docs](self) for the calling
/// contract and the policies.
#[derive(Debug)]
pub struct Hub<S: Store> {
    store: S,
    config: HubConfig,
    next_session: u64,
    trie: Trie<SessionId>,
    queues: Queues,
    /// Persistent subscriptions attached to a session, by id.
    persistent: BTreeMap<String, Active>,
    /// Attached persistent subscription ids by topic.
    by_topic: BTreeMap<String, BTreeSet<String>>,
    deadlines: Deadlines,
    /// Attachment keys to subscription ids.
    keys: BTreeMap<u64, String>,
    next_key: u64,
    next_expire: Option<Instant>,
    /// When the next sweep for idle persistent ids is due.
    next_sweep: Option<Instant>,
    /// The wall clock last given to [`Hub::handle_timeout`] or [`Hub::publish`] (ms since the
    /// Unix epoch; 0 before any): the time written as a subscription's last-seen time.
    wall_ms: u64,
    /// How many subscription ids the store holds, once counted.
    stored_ids: Option<usize>,
    matched: Vec<SessionId>,
    read_buf: Vec<StoredMessage>,
}

// ----- params and results, exactly the seed's shapes -----

#[derive(Deserialize)]
struct TopicParams {
    topic: String,
}

#[derive(Deserialize)]
struct TopicsParams {
    topics: Vec<String>,
}

#[derive(Deserialize)]
struct PersistentParams {
    subscription_id: String,
    topic: String,
}

#[derive(Deserialize)]
struct PersistentBatchParams {
    subscriptions: Vec<PersistentParams>,
}

#[derive(Deserialize)]
struct AckParams {
    subscription_id: String,
    sequence_id: u64,
}

#[derive(Deserialize)]
struct AckBatchParams {
    acknowledgments: Vec<AckParams>,
}

#[derive(Deserialize)]
struct IdParams {
    subscription_id: String,
}

#[derive(Deserialize)]
struct IdsParams {
    subscription_ids: Vec<String>,
}

#[derive(Serialize)]
struct Subscribed<'a> {
    subscription_id: &'a str,
    topic: &'a str,
    resumed_from_sequence: u64,
}

#[derive(Serialize)]
struct Resumed<'a> {
    subscription_id: &'a str,
    resumed_from_sequence: u64,
}

#[derive(Serialize)]
struct AckResult<'a> {
    subscription_id: &'a str,
    sequence_id: u64,
    success: bool,
}

fn invalid(message: impl Into<String>) -> ErrorObject<'static> {
    ErrorObject::new(code::INVALID_PARAMS, message.into())
}

fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Outcome {
    write_json(out, value).map_err(|_| ErrorObject::internal_error())
}

fn bool_result(out: &mut Vec<u8>, key: &str, value: bool) -> Outcome {
    out.extend_from_slice(b"{\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(if value { b"\":true}" } else { b"\":false}" });
    Ok(())
}

fn list_result<T: Serialize>(out: &mut Vec<u8>, key: &str, items: &[T]) -> Outcome {
    out.extend_from_slice(b"{\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
    write(out, items)?;
    out.push(b'}');
    Ok(())
}

fn decode<T: serde::de::DeserializeOwned>(
    params: Option<&RawValue>,
) -> Result<T, ErrorObject<'static>> {
    ParamsDecoder::<T>::new().decode(params)
}

fn topic_error(topic: &str, e: TopicError) -> ErrorObject<'static> {
    invalid(alloc::format!("Invalid params: topic {topic:?}: {e}"))
}

/// Appends `"key":"value"` JSON-escaped (a `&str` always serializes).
fn push_str(out: &mut String, value: &str) {
    let mut buf = Vec::new();
    let _ = write_json(&mut buf, value);
    out.push_str(core::str::from_utf8(&buf).unwrap_or("\"\""));
}

impl<S: Store> Hub<S> {
    /// A hub over `store`.
    pub fn new(store: S, config: HubConfig) -> Self {
        Hub {
            store,
            config,
            next_session: 1,
            trie: Trie::new(),
            queues: Queues::default(),
            persistent: BTreeMap::new(),
            by_topic: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            keys: BTreeMap::new(),
            next_key: 1,
            next_expire: None,
            next_sweep: None,
            wall_ms: 0,
            stored_ids: None,
            matched: Vec::new(),
            read_buf: Vec::new(),
        }
    }

    /// The config.
    pub fn config(&self) -> &HubConfig {
        &self.config
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The store, mutably (for a cluster backend's own bookkeeping).
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// Opens a session for a new connection.
    pub fn connect(&mut self) -> SessionId {
        let id = SessionId(self.next_session);
        self.next_session += 1;
        self.queues.sessions.insert(id, Session::default());
        id
    }

    /// Closes a session: its subscriptions are removed, its persistent subscriptions
    /// released (their acknowledged state stays in the store), its queue dropped.
    pub fn disconnect(&mut self, session: SessionId) {
        let Some(s) = self.queues.sessions.remove(&session) else {
            return;
        };
        for pattern in &s.patterns {
            self.trie.remove(pattern, session);
        }
        for id in &s.persistent {
            if let Some(mut active) = self.detach(id) {
                self.touch(id, &mut active.state);
            }
        }
    }

    /// How long after a subscription's last-seen time it is written again, in ms.
    fn refresh_ms(&self) -> Option<u64> {
        self.config
            .persistent_idle_timeout
            .map(|idle| millis(idle) / 16)
    }

    /// Saves `state` with the current wall clock as its last-seen time, if the stored one is
    /// older than the refresh interval (or unknown). Failures are reported.
    fn touch(&mut self, id: &str, state: &mut SubscriptionState) {
        let Some(refresh) = self.refresh_ms() else {
            return;
        };
        if state.last_seen_ms != 0 && state.last_seen_ms.saturating_add(refresh) >= self.wall_ms {
            return;
        }
        state.last_seen_ms = self.wall_ms;
        if let Err(e) = self.store.save_subscription(id, state) {
            self.queues.store_error("saving a subscription", &e);
        }
    }

    /// How many subscription ids the store holds (counted once, then kept up to date).
    fn stored_ids(&mut self) -> Result<usize, ErrorObject<'static>> {
        if let Some(n) = self.stored_ids {
            return Ok(n);
        }
        let mut ids = Vec::new();
        self.store
            .subscriptions(&mut ids)
            .map_err(|e| self.queues.store_error("listing subscriptions", &e))?;
        self.stored_ids = Some(ids.len());
        Ok(ids.len())
    }

    /// Deletes every stored subscription id no connection of this hub has and whose
    /// last-seen time is older than `idle`; refreshes the last-seen time of those this hub's
    /// connections have. Recounts the ids.
    fn sweep(&mut self, idle: Duration) {
        let mut ids = Vec::new();
        if let Err(e) = self.store.subscriptions(&mut ids) {
            self.queues.store_error("listing subscriptions", &e);
            return;
        }
        let (wall, idle) = (self.wall_ms, millis(idle));
        let mut kept = ids.len();
        for (id, seen) in ids {
            if let Some(mut active) = self.persistent.remove(&id) {
                active.state.last_seen_ms = active.state.last_seen_ms.max(seen);
                self.touch(&id, &mut active.state);
                self.persistent.insert(id, active);
                continue;
            }
            if seen == 0 {
                // Written before last-seen times were stored: idle from now on.
                match self.store.load_subscription(&id) {
                    Ok(Some(mut state)) => self.touch(&id, &mut state),
                    Ok(None) => kept -= 1,
                    Err(e) => {
                        self.queues.store_error("loading a subscription", &e);
                    }
                }
            } else if seen.saturating_add(idle) <= wall {
                match self.store.delete_subscription(&id) {
                    Ok(()) => kept -= 1,
                    Err(e) => {
                        self.queues.store_error("deleting an idle subscription", &e);
                    }
                }
            }
        }
        self.stored_ids = Some(kept);
    }

    /// Number of open sessions.
    pub fn sessions(&self) -> usize {
        self.queues.sessions.len()
    }

    /// Number of subscriptions (patterns and persistent) of `session`.
    pub fn subscriptions(&self, session: SessionId) -> usize {
        self.queues
            .sessions
            .get(&session)
            .map_or(0, Session::subscriptions)
    }

    /// Number of notifications queued for `session`.
    pub fn queued(&self, session: SessionId) -> usize {
        self.queues
            .sessions
            .get(&session)
            .map_or(0, |s| s.queue.len())
    }

    /// Notifications dropped from `session`'s queue because it was full.
    pub fn dropped(&self, session: SessionId) -> u64 {
        self.queues.sessions.get(&session).map_or(0, |s| s.dropped)
    }

    /// The next notification for `session`'s connection, oldest first.
    pub fn pop_outgoing(&mut self, session: SessionId) -> Option<Outgoing> {
        let s = self.queues.sessions.get_mut(&session)?;
        let item = s.queue.pop_front()?;
        s.bytes -= item.params.len();
        if s.queue.is_empty() {
            s.drop_reported = false;
        }
        Some(item)
    }

    /// A session that was queued something since it was last returned here: wake its
    /// connection so that it drains [`Hub::pop_outgoing`].
    pub fn poll_woken(&mut self) -> Option<SessionId> {
        loop {
            let id = self.queues.woken.pop_front()?;
            if let Some(s) = self.queues.sessions.get_mut(&id) {
                s.wake_pending = false;
                return Some(id);
            }
        }
    }

    /// The next report for the operator (at most 256 are kept; older ones are dropped).
    pub fn poll_report(&mut self) -> Option<Report> {
        self.queues.reports.pop_front()
    }

    /// Handles a request to one of the hub's [`METHODS`] from `session`: `Some(Ok)` with the
    /// result JSON appended to `out`, `Some(Err)` with the error to answer, `None` when the
    /// method is not the hub's. `now` starts acknowledgement deadlines.
    pub fn handle(
        &mut self,
        session: SessionId,
        method: &str,
        params: Option<&RawValue>,
        now: Instant,
        out: &mut Vec<u8>,
    ) -> Option<Outcome> {
        if !METHODS.contains(&method) {
            return None;
        }
        if !self.queues.sessions.contains_key(&session) {
            return Some(Err(ErrorObject::internal_error()));
        }
        let start = out.len();
        let outcome = match method {
            "rpc.subscribe" => decode::<TopicParams>(params)
                .and_then(|p| self.subscribe(session, core::slice::from_ref(&p.topic)))
                .and_then(|_| bool_result(out, "subscribed", true)),
            "rpc.unsubscribe" => decode::<TopicParams>(params).and_then(|p| {
                self.check_patterns(core::slice::from_ref(&p.topic))?;
                let removed = self.unsubscribe(session, &p.topic);
                bool_result(out, "unsubscribed", removed)
            }),
            "rpc.subscribe.batch" => decode::<TopicsParams>(params).and_then(|p| {
                self.check_batch(p.topics.len())?;
                self.subscribe(session, &p.topics)?;
                list_result(out, "subscribed", &p.topics)
            }),
            "rpc.unsubscribe.batch" => decode::<TopicsParams>(params).and_then(|p| {
                self.check_batch(p.topics.len())?;
                self.check_patterns(&p.topics)?;
                let removed: Vec<&String> = p
                    .topics
                    .iter()
                    .filter(|t| self.unsubscribe(session, t))
                    .collect();
                list_result(out, "unsubscribed", &removed)
            }),
            "rpc.subscribe.persistent" => decode::<PersistentParams>(params).and_then(|p| {
                let floors = self.subscribe_persistent(session, core::slice::from_ref(&p), now)?;
                write(
                    out,
                    &Subscribed {
                        subscription_id: &p.subscription_id,
                        topic: &p.topic,
                        resumed_from_sequence: floors[0],
                    },
                )
            }),
            "rpc.subscribe.persistent.batch" => {
                decode::<PersistentBatchParams>(params).and_then(|p| {
                    self.check_batch(p.subscriptions.len())?;
                    let floors = self.subscribe_persistent(session, &p.subscriptions, now)?;
                    let items: Vec<Resumed<'_>> = p
                        .subscriptions
                        .iter()
                        .zip(floors)
                        .map(|(s, floor)| Resumed {
                            subscription_id: &s.subscription_id,
                            resumed_from_sequence: floor,
                        })
                        .collect();
                    list_result(out, "subscriptions", &items)
                })
            }
            "rpc.acknowledge.persistent" => decode::<AckParams>(params).and_then(|p| {
                let acked = self.acknowledge(session, &p.subscription_id, p.sequence_id, now)?;
                bool_result(out, "acknowledged", acked)
            }),
            "rpc.acknowledge.persistent.batch" => decode::<AckBatchParams>(params).and_then(|p| {
                self.check_batch(p.acknowledgments.len())?;
                let mut items = Vec::with_capacity(p.acknowledgments.len());
                for a in &p.acknowledgments {
                    let success =
                        match self.acknowledge(session, &a.subscription_id, a.sequence_id, now) {
                            Ok(acked) => acked,
                            Err(e) if e.code == code::INTERNAL_ERROR => return Err(e),
                            Err(_) => false,
                        };
                    items.push(AckResult {
                        subscription_id: &a.subscription_id,
                        sequence_id: a.sequence_id,
                        success,
                    });
                }
                list_result(out, "acknowledged", &items)
            }),
            "rpc.unsubscribe.persistent" => decode::<IdParams>(params).and_then(|p| {
                let removed = self.unsubscribe_persistent(&p.subscription_id)?;
                bool_result(out, "unsubscribed", removed)
            }),
            _ => decode::<IdsParams>(params).and_then(|p| {
                self.check_batch(p.subscription_ids.len())?;
                let mut removed = Vec::new();
                for id in &p.subscription_ids {
                    if self.unsubscribe_persistent(id)? {
                        removed.push(id);
                    }
                }
                list_result(out, "unsubscribed", &removed)
            }),
        };
        if outcome.is_err() {
            out.truncate(start);
        }
        Some(outcome)
    }

    fn check_batch(&self, len: usize) -> Result<(), ErrorObject<'static>> {
        if len > self.config.max_batch {
            return Err(invalid(alloc::format!(
                "Invalid params: at most {} entries per batch",
                self.config.max_batch
            )));
        }
        Ok(())
    }

    fn check_room(&self, session: SessionId, new: usize) -> Result<(), ErrorObject<'static>> {
        let have = self.subscriptions(session);
        if have + new > self.config.max_subscriptions {
            return Err(ErrorObject::new(
                TOO_MANY_SUBSCRIPTIONS,
                alloc::format!(
                    "Too many subscriptions: at most {} per connection",
                    self.config.max_subscriptions
                ),
            ));
        }
        Ok(())
    }

    fn check_patterns(&self, patterns: &[String]) -> Outcome {
        for p in patterns {
            validate_pattern(p, &self.config.topics).map_err(|e| topic_error(p, e))?;
        }
        Ok(())
    }

    /// Adds every pattern or none.
    fn subscribe(&mut self, session: SessionId, patterns: &[String]) -> Outcome {
        self.check_patterns(patterns)?;
        let s = &self.queues.sessions[&session];
        let new: BTreeSet<&String> = patterns
            .iter()
            .filter(|p| !s.patterns.contains(*p))
            .collect();
        self.check_room(session, new.len())?;
        let s = self
            .queues
            .sessions
            .get_mut(&session)
            .expect("checked above");
        for p in new {
            s.patterns.insert(p.clone());
            self.trie.insert(p, session);
        }
        Ok(())
    }

    fn unsubscribe(&mut self, session: SessionId, pattern: &str) -> bool {
        let removed = self
            .queues
            .sessions
            .get_mut(&session)
            .is_some_and(|s| s.patterns.remove(pattern));
        if removed {
            self.trie.remove(pattern, session);
        }
        removed
    }

    /// Publishes `data` to exact `topic`: every matching session is queued an
    /// `rpc.notification`, and (with [`HubConfig::persist`]) the message is appended to the
    /// store and delivered to this node's persistent subscribers of the topic.
    pub fn publish(
        &mut self,
        topic: &str,
        data: &RawValue,
        now: Instant,
        wall_ms: u64,
    ) -> Result<Published, PublishError> {
        self.wall_ms = wall_ms;
        let delivered = self.publish_local(topic, data)?;
        if !self.config.persist {
            return Ok(Published {
                delivered,
                sequence: None,
            });
        }
        match self.store.append(topic, wall_ms, data) {
            Ok(sequence) => {
                self.on_appended(topic, now);
                Ok(Published {
                    delivered,
                    sequence: Some(sequence),
                })
            }
            Err(e) => {
                self.queues.store_error("appending a message", &e);
                Err(PublishError::Store(e.to_string()))
            }
        }
    }

    /// The ephemeral half of [`Hub::publish`]: queues `rpc.notification` to every session
    /// with a matching pattern, and returns how many. For a cluster backend, on a message
    /// another node published.
    pub fn publish_local(&mut self, topic: &str, data: &RawValue) -> Result<usize, PublishError> {
        validate_topic(topic, &self.config.topics).map_err(PublishError::Topic)?;
        let mut matched = core::mem::take(&mut self.matched);
        matched.clear();
        self.trie.for_each_match(topic, |k| matched.push(k));
        matched.sort_unstable();
        matched.dedup();
        if !matched.is_empty() {
            let mut params = String::with_capacity(topic.len() + data.get().len() + 20);
            params.push_str("{\"topic\":");
            push_str(&mut params, topic);
            params.push_str(",\"data\":");
            params.push_str(data.get());
            params.push('}');
            let item = Outgoing {
                method: NOTIFICATION,
                params: Arc::from(params),
            };
            for &session in &matched {
                self.queues.enqueue(session, item.clone(), &self.config);
            }
        }
        let n = matched.len();
        self.matched = matched;
        Ok(n)
    }

    /// The persistent half of [`Hub::publish`]: a message was appended to `topic` (by this
    /// node or, for a cluster backend, another one); this node's persistent subscribers of
    /// the topic are sent what they have not been sent yet, within their in-flight window.
    pub fn on_appended(&mut self, topic: &str, now: Instant) {
        let Some(ids) = self.by_topic.get(topic) else {
            return;
        };
        let ids: Vec<String> = ids.iter().cloned().collect();
        for id in ids {
            self.fill(&id, now);
        }
    }

    fn subscribe_persistent(
        &mut self,
        session: SessionId,
        subs: &[PersistentParams],
        now: Instant,
    ) -> Result<Vec<u64>, ErrorObject<'static>> {
        // Check everything before changing anything.
        let mut new = 0;
        for (i, p) in subs.iter().enumerate() {
            let id = &p.subscription_id;
            if id.is_empty() || id.len() > self.config.max_subscription_id_len {
                return Err(invalid(alloc::format!(
                    "Invalid params: a subscription_id is 1 to {} bytes",
                    self.config.max_subscription_id_len
                )));
            }
            if subs[..i].iter().any(|q| q.subscription_id == *id) {
                return Err(invalid(alloc::format!(
                    "Invalid params: subscription_id {id:?} appears twice"
                )));
            }
            match validate_topic(&p.topic, &self.config.topics) {
                Err(TopicError::Wildcard) => {
                    return Err(invalid(alloc::format!(
                        "Invalid params: topic {:?}: persistent subscriptions take an exact \
                         topic (sequence ids are per topic)",
                        p.topic
                    )))
                }
                Err(e) => return Err(topic_error(&p.topic, e)),
                Ok(()) => {}
            }
            match self.persistent.get(id) {
                Some(a) if a.session == session => {}
                Some(_) if !self.config.takeover => {
                    return Err(ErrorObject::new(
                        SUBSCRIPTION_IN_USE,
                        alloc::format!("Subscription {id:?} is active on another connection"),
                    ))
                }
                _ => new += 1,
            }
        }
        self.check_room(session, new)?;
        let mut states = Vec::with_capacity(subs.len());
        for p in subs {
            let stored = match self.persistent.get(&p.subscription_id) {
                Some(a) => Some(a.state.clone()),
                None => self
                    .store
                    .load_subscription(&p.subscription_id)
                    .map_err(|e| self.queues.store_error("loading a subscription", &e))?,
            };
            let state = match stored {
                Some(s) if s.topic != p.topic => {
                    return Err(invalid(alloc::format!(
                        "Invalid params: subscription_id {:?} is bound to topic {:?}; \
                         unsubscribe it first to reuse the id",
                        p.subscription_id,
                        s.topic
                    )))
                }
                Some(s) => (s, false),
                None => {
                    let last = self
                        .store
                        .last_sequence(&p.topic)
                        .map_err(|e| self.queues.store_error("reading a topic", &e))?;
                    (SubscriptionState::new(p.topic.clone(), last), true)
                }
            };
            states.push(state);
        }
        let fresh = states.iter().filter(|(_, fresh)| *fresh).count();
        if fresh > 0 && self.stored_ids()? + fresh > self.config.max_persistent_ids {
            return Err(ErrorObject::new(
                TOO_MANY_PERSISTENT_IDS,
                alloc::format!(
                    "Too many persistent subscriptions: this server keeps at most {} ids; \
                     reuse an id or unsubscribe one",
                    self.config.max_persistent_ids
                ),
            ));
        }
        let mut floors = Vec::with_capacity(subs.len());
        for (p, (mut state, fresh)) in subs.iter().zip(states) {
            if fresh {
                state.last_seen_ms = self.wall_ms;
                self.store
                    .save_subscription(&p.subscription_id, &state)
                    .map_err(|e| self.queues.store_error("saving a subscription", &e))?;
                if let Some(n) = &mut self.stored_ids {
                    *n += 1;
                }
            }
            floors.push(state.ack_floor);
            self.attach(session, &p.subscription_id, state);
            self.fill(&p.subscription_id, now);
        }
        Ok(floors)
    }

    /// Gives subscription `id` to `session`, taking it from any other; unacknowledged
    /// messages will be sent again.
    fn attach(&mut self, session: SessionId, id: &str, state: SubscriptionState) {
        if let Some(old) = self.persistent.get(id).map(|a| a.session) {
            if old != session {
                self.queues.report(Report::TakenOver {
                    subscription_id: id.into(),
                    from: old,
                    to: session,
                });
            }
            self.detach(id);
        }
        self.by_topic
            .entry(state.topic.clone())
            .or_default()
            .insert(id.into());
        if let Some(s) = self.queues.sessions.get_mut(&session) {
            s.persistent.insert(id.into());
        }
        let cursor = state.ack_floor;
        let key = self.next_key;
        self.next_key += 1;
        self.keys.insert(key, id.into());
        self.persistent.insert(
            id.into(),
            Active {
                session,
                key,
                state,
                cursor,
                in_flight: BTreeMap::new(),
            },
        );
    }

    fn detach(&mut self, id: &str) -> Option<Active> {
        let active = self.persistent.remove(id)?;
        self.keys.remove(&active.key);
        for (&seq, &due) in &active.in_flight {
            self.deadlines.remove(&(due, active.key, seq));
        }
        if let Some(ids) = self.by_topic.get_mut(&active.state.topic) {
            ids.remove(id);
            if ids.is_empty() {
                self.by_topic.remove(&active.state.topic);
            }
        }
        if let Some(s) = self.queues.sessions.get_mut(&active.session) {
            s.persistent.remove(id);
        }
        Some(active)
    }

    fn unsubscribe_persistent(&mut self, id: &str) -> Result<bool, ErrorObject<'static>> {
        let active = self.detach(id).is_some();
        let stored = self
            .store
            .load_subscription(id)
            .map_err(|e| self.queues.store_error("loading a subscription", &e))?
            .is_some();
        if stored {
            self.store
                .delete_subscription(id)
                .map_err(|e| self.queues.store_error("deleting a subscription", &e))?;
            if let Some(n) = &mut self.stored_ids {
                *n = n.saturating_sub(1);
            }
        }
        Ok(active || stored)
    }

    /// `Ok(false)` for a sequence never delivered to this subscription.
    fn acknowledge(
        &mut self,
        session: SessionId,
        id: &str,
        sequence: u64,
        now: Instant,
    ) -> Result<bool, ErrorObject<'static>> {
        let Some(active) = self.persistent.get_mut(id).filter(|a| a.session == session) else {
            return Err(invalid(alloc::format!(
                "Invalid params: no persistent subscription {id:?} is active on this connection"
            )));
        };
        if sequence == 0 || sequence > active.cursor {
            return Ok(false);
        }
        active.clear_due(&mut self.deadlines, sequence);
        if active.state.ack(sequence) {
            active.state.last_seen_ms = self.wall_ms;
            if let Err(e) = self.store.save_subscription(id, &active.state) {
                return Err(self.queues.store_error("saving an acknowledgement", &e));
            }
        }
        self.fill(id, now);
        Ok(true)
    }

    /// Queues the subscription's next messages from the store while its window has room.
    fn fill(&mut self, id: &str, now: Instant) {
        let Hub {
            store,
            config,
            queues,
            persistent,
            read_buf,
            deadlines,
            ..
        } = self;
        let Some(active) = persistent.get_mut(id) else {
            return;
        };
        loop {
            let room = config
                .max_in_flight
                .max(1)
                .saturating_sub(active.in_flight.len());
            if room == 0 {
                return;
            }
            read_buf.clear();
            if let Err(e) = store.read(&active.state.topic, active.cursor, room, read_buf) {
                queues.store_error("reading messages", &e);
                return;
            }
            let Some(first) = read_buf.first() else {
                return;
            };
            // A gap after the cursor: retention removed those messages, and since it removes
            // from the front of a topic's log, everything before the first one left is gone
            // for good, delivered or not. Without this the floor would stick below them.
            if first.sequence > active.cursor + 1 {
                let gone = first.sequence - 1;
                let stale: Vec<u64> = active.in_flight.range(..=gone).map(|(&s, _)| s).collect();
                for seq in stale {
                    active.clear_due(deadlines, seq);
                }
                active.state.raise_floor(gone);
                if let Err(e) = store.save_subscription(id, &active.state) {
                    queues.store_error("saving a subscription", &e);
                }
            }
            let full = read_buf.len() >= room;
            for m in read_buf.drain(..) {
                active.cursor = active.cursor.max(m.sequence);
                if active.state.is_acked(m.sequence) {
                    continue;
                }
                active.set_due(
                    deadlines,
                    m.sequence,
                    now.saturating_add(config.ack_timeout),
                );
                queues.enqueue(active.session, persistent_item(id, &m), config);
            }
            if !full {
                return;
            }
        }
    }

    /// Acknowledgement deadlines and retention by age: call at [`Hub::poll_timeout`] (calling
    /// earlier or later is harmless). `wall_ms` is the wall clock in milliseconds since the
    /// Unix epoch.
    pub fn handle_timeout(&mut self, now: Instant, wall_ms: u64) {
        self.wall_ms = wall_ms;
        if !matches!(self.next_expire, Some(t) if now < t) {
            self.next_expire = Some(now.saturating_add(self.config.expire_interval));
            if let Err(e) = self.store.expire(wall_ms) {
                self.queues.store_error("expiring messages", &e);
            }
        }
        if let Some(idle) = self.config.persistent_idle_timeout {
            if !matches!(self.next_sweep, Some(t) if now < t) {
                let cadence = (idle / 16).max(self.config.expire_interval);
                self.next_sweep = Some(now.saturating_add(cadence));
                self.sweep(idle);
            }
        }
        let keys: BTreeSet<u64> = self
            .deadlines
            .iter()
            .take_while(|(due, _, _)| *due <= now)
            .map(|&(_, key, _)| key)
            .collect();
        let due: Vec<String> = keys
            .iter()
            .filter_map(|k| self.keys.get(k).cloned())
            .collect();
        for id in due {
            self.redeliver(&id, now);
            self.fill(&id, now);
        }
    }

    fn redeliver(&mut self, id: &str, now: Instant) {
        let Hub {
            store,
            config,
            queues,
            persistent,
            read_buf,
            deadlines,
            ..
        } = self;
        let Some(active) = persistent.get_mut(id) else {
            return;
        };
        let due: Vec<u64> = active
            .in_flight
            .iter()
            .filter(|(_, &t)| t <= now)
            .map(|(&s, _)| s)
            .collect();
        let mut gone = false;
        for seq in due {
            read_buf.clear();
            if let Err(e) = store.read(&active.state.topic, seq - 1, 1, read_buf) {
                queues.store_error("reading messages", &e);
                return;
            }
            match read_buf.first() {
                Some(m) if m.sequence == seq => {
                    active.set_due(deadlines, seq, now.saturating_add(config.ack_timeout));
                    queues.enqueue(active.session, persistent_item(id, m), config);
                }
                // Removed by retention while unacknowledged: nothing left to deliver.
                _ => {
                    active.clear_due(deadlines, seq);
                    gone |= active.state.ack(seq);
                }
            }
        }
        if gone {
            if let Err(e) = store.save_subscription(id, &active.state) {
                queues.store_error("saving a subscription", &e);
            }
        }
    }

    /// The next moment [`Hub::handle_timeout`] has work: an acknowledgement deadline or the
    /// next retention pass (at once before the first call). Cheap: no scan.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let expire = self.next_expire.unwrap_or(Instant::ZERO);
        let acks = self.deadlines.first().map(|&(due, _, _)| due);
        Some(acks.map_or(expire, |a| a.min(expire)))
    }
}

/// `d` in whole milliseconds, saturating.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn persistent_item(id: &str, m: &StoredMessage) -> Outgoing {
    let mut params = String::with_capacity(m.topic.len() + m.data.get().len() + id.len() + 96);
    params.push_str("{\"subscription_id\":");
    push_str(&mut params, id);
    params.push_str(",\"topic\":");
    push_str(&mut params, &m.topic);
    let _ = write!(params, ",\"sequence_id\":{},\"timestamp\":\"", m.sequence);
    write_rfc3339(&mut params, m.timestamp_ms);
    params.push_str("\",\"data\":");
    params.push_str(m.data.get());
    params.push('}');
    Outgoing {
        method: PERSISTENT_NOTIFICATION,
        params: Arc::from(params),
    }
}

/// Writes milliseconds since the Unix epoch as an RFC 3339 UTC timestamp:
/// `2025-12-26T12:00:00Z`, with `.mmm` when the milliseconds are not zero. Times past the
/// year 9999 are written as its last millisecond.
///
/// ```
/// let mut s = String::new();
/// sansrpc::ext::pubsub::write_rfc3339(&mut s, 1_766_750_400_000);
/// assert_eq!(s, "2025-12-26T12:00:00Z");
/// ```
pub fn write_rfc3339(out: &mut String, ms: u64) {
    const MAX_MS: u64 = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
    let ms = ms.min(MAX_MS);
    let (secs, millis) = (ms / 1000, ms % 1000);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian), by 400-year eras.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    );
    if millis != 0 {
        let _ = write!(out, ".{millis:03}");
    }
    out.push('Z');
}
