//! Publish/subscribe (WebSocket seed §10) and persistent subscriptions (§11) as one sans-I/O
//! state machine, [`Hub`], shared by every connection of a server.
//!
//! # Calling contract
//! The adapter keeps one `Hub` behind a lock and, per connection:
//! - calls [`Hub::connect`] when the connection opens and [`Hub::disconnect`] when it closes
//!   (every subscription of the session goes, persistent subscriptions are released but kept
//!   in the store);
//! - offers every incoming request to [`Hub::handle`] before its router: `None` means the
//!   name is not the hub's; [`Handled::Answered`] is the answer (the result JSON is in
//!   `out`); [`Handled::Later`] means the answer needs the store and comes from
//!   [`Hub::pop_answer`] for that session once its store tasks are done;
//! - after any hub call, drains [`Hub::poll_woken`] and wakes those sessions' connections,
//!   which then move [`Hub::pop_answer`] and [`Hub::pop_outgoing`] into their endpoint while
//!   it accepts output (or opens each session with [`Hub::connect_waking`], and drains
//!   [`Hub::poll_woken_waker`]: the session's waker comes with it, no table of its own to
//!   look it up in);
//! - performs the store's work: [`Hub::poll_store`] hands out [`StoreTask`]s in the order
//!   to perform them; [`StoreTask::perform`] runs one on a [`Store`](crate::store::Store)
//!   (blocking as long as the store does: off the lock, off any async worker), and
//!   [`Hub::handle_store`] takes the task back with its result. The hub never calls a store, so no lock is
//!   held across store I/O. [`InlineHub`] does all of this at once for a caller that may
//!   block (tests, an in-memory store, one thread);
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

use core::fmt::{self, Write as _};
use core::task::Waker;
use core::time::Duration;
use std::borrow::ToOwned;
use std::boxed::Box;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::string::{String, ToString};
use std::sync::Arc;
use std::vec::Vec;

use serde::{Deserialize, Serialize};

use crate::store::{StoredMessage, SubscriptionState};
use crate::topic::{validate_pattern, validate_topic, TopicError, TopicLimits, Trie};
use sansrpc::connection::bypass::{notification_head, Bypass, Bypassed, NOTIFICATION_TAIL};
use sansrpc::connection::subscriptions::Fifo;
use sansrpc::error::{code, ErrorObject};
use sansrpc::method::ParamsDecoder;
use sansrpc::router::Outcome;
use sansrpc::Instant;
use sansrpc::RawValue;
use sansrpc_runtime::{remove_and_shrink, KeyMap};

mod store_ops;

pub use store_ops::{InlineHub, StoreDone, StoreOp, StoreTask, StoreToken};

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
    router: &mut sansrpc::router::Router,
) -> Result<(), sansrpc::router::RegisterError> {
    for name in METHODS {
        router.extension(name, |_, _| {
            Err(ErrorObject::new(
                sansrpc::error::code::METHOD_NOT_FOUND,
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
    /// taken from [`Store::subscriptions`](crate::store::Store::subscriptions) once and at every idle sweep, and kept up to date
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
    /// Most store operations queued and not handed out yet before [`Hub::publish`] refuses
    /// a persisted message with [`PublishError::Busy`] (default 4096): a store slower than
    /// the publishers makes them wait instead of growing memory. Requests of connections
    /// are bounded by their endpoints and never refused for it.
    pub max_store_backlog: usize,
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
            max_store_backlog: 4096,
        }
    }
}

/// One notification waiting for its session's connection. Cheap to clone: the params of a
/// publish are shared by every subscriber.
#[derive(Debug, Clone)]
pub struct Outgoing {
    method: &'static str,
    params: Arc<RawValue>,
}

impl Outgoing {
    /// The notification's method: [`NOTIFICATION`] or [`PERSISTENT_NOTIFICATION`].
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// The notification's params object.
    pub fn params(&self) -> &RawValue {
        &self.params
    }

    /// The params object, as the subscribers of the publish share it.
    pub(crate) fn shared_params(&self) -> &Arc<RawValue> {
        &self.params
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
    /// [`HubConfig::max_store_backlog`] store operations wait already: nothing was
    /// published; try again once the store caught up.
    Busy,
}

impl fmt::Display for PublishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublishError::Topic(e) => write!(f, "invalid topic: {e}"),
            PublishError::Store(e) => write!(f, "store failed: {e}"),
            PublishError::Busy => f.write_str("the store is behind: too many operations wait"),
        }
    }
}

impl std::error::Error for PublishError {}

impl PublishError {
    /// The error object a peer that asked to publish is answered with: `-32602` for a bad
    /// topic, `-32603` for a store failure, `-32002` when the store is behind.
    pub fn to_error_object(&self) -> ErrorObject<'static> {
        match self {
            PublishError::Topic(e) => ErrorObject::new(code::INVALID_PARAMS, e.to_string()),
            PublishError::Store(_) => ErrorObject::internal_error(),
            PublishError::Busy => ErrorObject::new(
                code::SERVER_BUSY,
                "Server busy: the message store is behind; publish again later",
            ),
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
    /// The notifications queued: the oldest held here while it is the only one (a
    /// subscriber's session has one at a time; a deque's buffer would be one more cache line
    /// written by the publisher and read by the connection, cold with many sessions).
    queue: Fifo<Outgoing>,
    /// Answers to requests the hub took with [`Handled::Later`], oldest first.
    answers: VecDeque<(Ticket, HubAnswer)>,
    bytes: usize,
    dropped: u64,
    drop_reported: bool,
    /// The place in the woken list where this session waits to be returned by
    /// [`Hub::poll_woken`], counted from the list's start ([`Woken`]); `None` or a place
    /// already passed when it is not there.
    woken_at: Option<u64>,
    /// What wakes its connection ([`Hub::connect_waking`]), handed out with it.
    waker: Option<Waker>,
    /// Set while its connection's driver is parked with nothing queued and lets its
    /// notifications be written past it ([`Hub::open_bypass`]).
    bypass: Option<Through>,
    /// Room held for persistent subscriptions whose subscribe is between its checks and
    /// its attach (saving new ids), so concurrent subscribes cannot pass the limit together.
    room_held: usize,
}

/// What writes a session's notifications past its parked connection's driver.
struct Through(Arc<dyn Bypass>);

impl fmt::Debug for Through {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Through")
    }
}

/// What a notification of each of the hub's methods starts with, as the connection's
/// output writes it (the core's [`notification_head`]).
#[derive(Debug)]
struct Heads {
    notification: Vec<u8>,
    persistent: Vec<u8>,
}

impl Default for Heads {
    fn default() -> Self {
        Heads {
            notification: notification_head(NOTIFICATION).unwrap_or_default(),
            persistent: notification_head(PERSISTENT_NOTIFICATION).unwrap_or_default(),
        }
    }
}

impl Session {
    fn subscriptions(&self) -> usize {
        self.patterns.len() + self.persistent.len()
    }

    /// Takes the oldest notification queued.
    fn pop_outgoing(&mut self) -> Option<Outgoing> {
        let item = self.queue.pop_front()?;
        self.bytes -= item.params.get().len();
        if self.queue.is_empty() {
            self.drop_reported = false;
        }
        Some(item)
    }
}

/// A persistent subscription attached to a session.
#[derive(Debug)]
struct Active {
    session: SessionId,
    /// Names this attachment in [`Deadlines`] and in store tasks under way for it.
    key: u64,
    state: SubscriptionState,
    /// The highest sequence handed to the session's queue so far.
    cursor: u64,
    /// Unacknowledged deliveries and when each is due again.
    in_flight: BTreeMap<u64, Instant>,
    /// A read of the log for it is under way.
    filling: bool,
    /// Something changed while it was: read again when it is back.
    refill: bool,
    /// A save of its acknowledgements failed: its state in memory is ahead of the store's,
    /// and is saved again with the next acknowledgement (the same one retried too) or when
    /// its connection ends.
    unsaved: bool,
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

/// How long after a failed read of the log a persistent subscription's is tried again.
const READ_RETRY: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
struct Queues {
    /// By id: a hash table, as a notification to every subscriber looks up each of them
    /// (a B-tree's search of 1,000 sessions read four nodes or more a lookup).
    sessions: KeyMap<SessionId, Session>,
    woken: Woken,
    reports: VecDeque<Report>,
    heads: Heads,
}

/// The sessions queued something since they were last returned by [`Hub::poll_woken`], in
/// order, each at most once, with its waker. Whether a session is in it is known from the
/// session alone (the place it was put at, against how many have left): handing one out
/// looks no session up, and a publish to many subscribers looks each up once.
#[derive(Debug, Default)]
struct Woken {
    /// A session gone meanwhile leaves `None` in its place.
    list: VecDeque<Option<(SessionId, Option<Waker>)>>,
    /// Places handed out since the start: the front's place.
    popped: u64,
}

impl Woken {
    /// True while `s` waits in the list.
    fn holds(&self, s: &Session) -> bool {
        s.woken_at.is_some_and(|at| at >= self.popped)
    }

    /// Puts `s` (session `id`) last unless it is in the list.
    fn push(&mut self, id: SessionId, s: &mut Session) {
        if !self.holds(s) {
            s.woken_at = Some(self.popped + self.list.len() as u64);
            self.list.push_back(Some((id, s.waker.clone())));
        }
    }

    /// Takes `s` out of the list, where it is (it is gone).
    fn remove(&mut self, s: &Session) {
        if let Some(at) = s.woken_at.filter(|_| self.holds(s)) {
            if let Some(entry) = self.list.get_mut((at - self.popped) as usize) {
                *entry = None;
            }
        }
    }

    /// The first session in the list, with its waker.
    fn pop(&mut self) -> Option<(SessionId, Option<Waker>)> {
        loop {
            let entry = self.list.pop_front()?;
            self.popped += 1;
            if entry.is_some() {
                return entry;
            }
        }
    }
}

impl Queues {
    fn report(&mut self, report: Report) {
        if self.reports.len() == MAX_REPORTS {
            self.reports.pop_front();
        }
        self.reports.push_back(report);
    }

    fn store_error(&mut self, operation: &'static str, e: &str) -> ErrorObject<'static> {
        self.report(Report::Store {
            operation,
            message: e.into(),
        });
        ErrorObject::internal_error()
    }

    fn wake(&mut self, id: SessionId) {
        if let Some(s) = self.sessions.get_mut(&id) {
            self.woken.push(id, s);
        }
    }

    /// Queues the answer to `ticket` for `id`'s connection (never dropped: one per request
    /// the connection made, which its endpoint bounds).
    fn answer(&mut self, id: SessionId, ticket: Ticket, answer: HubAnswer) {
        if let Some(s) = self.sessions.get_mut(&id) {
            s.answers.push_back((ticket, answer));
            self.wake(id);
        }
    }

    /// Queues `item` for `id`, dropping the oldest when full; false if no such session.
    fn enqueue(&mut self, id: SessionId, item: Outgoing, config: &HubConfig) -> bool {
        let Some(s) = self.sessions.get_mut(&id) else {
            return false;
        };
        // Its connection's driver is parked with nothing queued, and nothing waits here:
        // the notification goes to the socket now, from the publisher.
        if let Some(through) = s.bypass.as_ref() {
            if s.queue.is_empty() && s.answers.is_empty() {
                let head = if item.method == NOTIFICATION {
                    &self.heads.notification
                } else {
                    &self.heads.persistent
                };
                let params = &item.params;
                match through
                    .0
                    .try_write(head, params, Some(params), NOTIFICATION_TAIL)
                {
                    Bypassed::Whole => return true,
                    Bypassed::Part => {
                        // The rest waits in the transport: its driver is woken to write it,
                        // and nothing more goes past it.
                        s.bypass = None;
                        self.woken.push(id, s);
                        return true;
                    }
                    // Queued as with no bypass, and the driver woken for it.
                    Bypassed::Not => s.bypass = None,
                }
            }
        }
        let size = item.params.get().len();
        while !s.queue.is_empty()
            && (s.queue.len() >= config.max_queued.max(1)
                || s.bytes + size > config.max_queued_bytes)
        {
            if let Some(old) = s.queue.pop_front() {
                s.bytes -= old.params.get().len();
                s.dropped += 1;
            }
        }
        s.bytes += size;
        s.queue.push_back(item);
        let report = (s.dropped > 0 && !s.drop_reported).then_some(s.dropped);
        if report.is_some() {
            s.drop_reported = true;
        }
        self.woken.push(id, s);
        if let Some(total) = report {
            self.report(Report::Dropped { session: id, total });
        }
        true
    }
}

/// What a session's connection sends next ([`Hub::pop_next`]).
#[derive(Debug)]
pub enum Next {
    /// The answer to a request taken with [`Handled::Later`].
    Answer(Ticket, HubAnswer),
    /// A notification.
    Outgoing(Outgoing),
}

/// A request the hub took and answers later: see [`Handled::Later`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(u64);

impl Ticket {
    /// The number behind the ticket (unique per hub), for a connection's own bookkeeping.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// The answer to a request taken with [`Handled::Later`]: the result JSON, or the error.
pub type HubAnswer = Result<String, ErrorObject<'static>>;

/// What [`Hub::handle`] did with a request.
#[derive(Debug)]
pub enum Handled {
    /// Answered now: the result JSON is in `out`, or the error is here.
    Answered(Outcome),
    /// It needs the store: the answer comes from [`Hub::pop_answer`] for the same session
    /// once the store tasks it queued are done (the session is woken then).
    Later(Ticket),
}

/// A publish's append to the store, under way: see [`Hub::poll_appended`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AppendId(u64);

/// Something another node of a cluster did, for this node's hub: what a cluster backend
/// (a bus between servers, like `sansrpc-store-nats`'s) hands to [`Hub::handle_node_event`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeEvent {
    /// Another node published `data` to `topic`: deliver it to this node's subscribers
    /// ([`Hub::publish_local`]). A bus never hands a node its own publishes back.
    Published {
        /// The topic published to.
        topic: String,
        /// The published data.
        data: Box<RawValue>,
    },
    /// A persistent message was appended to `topic`'s shared log, by any node: this node's
    /// persistent subscribers of the topic have something to read ([`Hub::on_appended`]).
    /// A hint only; the log is the truth.
    Appended {
        /// The topic appended to.
        topic: String,
    },
}

/// What [`Hub::publish`] did at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Publishing {
    /// Sessions that were queued an `rpc.notification`.
    pub delivered: usize,
    /// The append to the store, when the message is persisted: its sequence id comes from
    /// [`Hub::poll_appended`].
    pub append: Option<AppendId>,
}

/// A persistent subscribe waiting for the store.
#[derive(Debug)]
struct Job {
    session: SessionId,
    ticket: Ticket,
    subs: Vec<PersistentParams>,
    batch: bool,
    /// From the store (after [`StoreOp::Prepare`]).
    states: Vec<SubscriptionState>,
    /// How many of them are new ids (counted in `Hub::pending_fresh` meanwhile).
    fresh: usize,
    /// How many of them the session holds room for (in its `room_held`) until attached.
    room: usize,
}

/// What to do with a store task's result.
#[derive(Debug)]
enum Then {
    Append(AppendId),
    Fill {
        id: String,
        key: u64,
        after: u64,
        max: usize,
    },
    Redeliver {
        id: String,
        key: u64,
        seq: u64,
    },
    Prepared(Box<Job>),
    Created(Box<Job>),
    /// The acknowledgements saved: their answer, and the ids whose states were saved.
    Acked(SessionId, Ticket, String, Vec<String>),
    Removed {
        session: SessionId,
        ticket: Ticket,
        ids: Vec<String>,
        active: Vec<bool>,
        batch: bool,
    },
    Swept,
    /// Nobody waits: a failure is reported as this operation.
    Quiet(&'static str),
}

/// A persistent subscribe or unsubscribe held back to keep the order a connection sent
/// them in: an unsubscribe of an id whose subscribe is under way waits for it (else the
/// subscribe's save, coming after the removal, brought the subscription back), and a
/// subscribe of an id such an unsubscribe holds waits behind it.
#[derive(Debug)]
enum Held {
    Subscribe {
        session: SessionId,
        ticket: Ticket,
        subs: Vec<PersistentParams>,
        batch: bool,
    },
    Unsubscribe {
        session: SessionId,
        ticket: Ticket,
        ids: Vec<String>,
        batch: bool,
    },
}

impl Held {
    fn touches(&self, id: &str) -> bool {
        match self {
            Held::Subscribe { subs, .. } => subs.iter().any(|p| p.subscription_id == id),
            Held::Unsubscribe { ids, .. } => ids.iter().any(|i| i == id),
        }
    }
}

/// The pub/sub state of a whole server: sessions, their subscriptions and queues, and the
/// persistent subscriptions. It performs no store operation itself: it hands them out as
/// [`StoreTask`]s (see the [module docs](self) for the calling contract and the policies).
#[derive(Debug)]
pub struct Hub {
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
    /// The persistent subscriptions whose read of the log failed, read again at
    /// `next_refill` (nothing else would: a subscriber with nothing in flight waits on a
    /// publish, an ack or a resubscribe).
    stalled: BTreeSet<String>,
    next_refill: Option<Instant>,
    /// The wall clock last given to [`Hub::handle_timeout`] or [`Hub::publish`] (ms since the
    /// Unix epoch; 0 before any): the time written as a subscription's last-seen time.
    wall_ms: u64,
    /// How many subscription ids the store holds, once counted.
    stored_ids: Option<usize>,
    /// New ids of subscribes under way (not in `stored_ids` yet).
    pending_fresh: usize,
    /// Ids of subscribes under way, with how many: a sweep keeps them.
    reserved: BTreeMap<String, usize>,
    /// Persistent subscribes and unsubscribes held back to keep their order, oldest first.
    held: VecDeque<Held>,
    matched: Vec<SessionId>,
    /// Where notification params are written before their one copy is taken.
    scratch: Vec<u8>,
    tasks: VecDeque<StoreTask>,
    waiting: BTreeMap<u64, Then>,
    next_token: u64,
    appended: VecDeque<(AppendId, Result<u64, PublishError>)>,
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

#[derive(Debug, Clone, Deserialize)]
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
    invalid(std::format!("Invalid params: topic {topic:?}: {e}"))
}

impl Hub {
    /// A hub. Its store lives with whoever performs its [`StoreTask`]s.
    pub fn new(config: HubConfig) -> Self {
        Hub {
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
            stalled: BTreeSet::new(),
            next_refill: None,
            wall_ms: 0,
            stored_ids: None,
            pending_fresh: 0,
            reserved: BTreeMap::new(),
            held: VecDeque::new(),
            matched: Vec::new(),
            scratch: Vec::new(),
            tasks: VecDeque::new(),
            waiting: BTreeMap::new(),
            next_token: 1,
            appended: VecDeque::new(),
        }
    }

    /// The config.
    pub fn config(&self) -> &HubConfig {
        &self.config
    }

    // ----- store tasks -----

    fn task(&mut self, op: StoreOp, then: Then) {
        let token = self.next_token;
        self.next_token += 1;
        self.waiting.insert(token, then);
        self.tasks.push_back(StoreTask {
            token: StoreToken(token),
            op,
        });
    }

    fn save(&mut self, id: &str, state: &SubscriptionState, operation: &'static str) {
        let states = std::vec![(id.to_string(), state.clone())];
        self.task(StoreOp::Save { states }, Then::Quiet(operation));
    }

    /// The next store operation to perform, oldest first; its result goes to
    /// [`Hub::handle_store`]. Check after every call into the hub.
    pub fn poll_store(&mut self) -> Option<StoreTask> {
        self.tasks.pop_front()
    }

    /// Store tasks handed out and not answered yet, plus those queued.
    pub fn store_tasks(&self) -> usize {
        self.waiting.len()
    }

    /// Store tasks queued and not handed out by [`Hub::poll_store`] yet.
    pub fn queued_store_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// A store task, given back with its result ([`StoreTask::perform`]). `now` starts the
    /// acknowledgement deadlines of what it delivers. A task of another hub is ignored.
    pub fn handle_store(&mut self, task: StoreTask, done: StoreDone, now: Instant) {
        let Some(then) = self.waiting.remove(&task.token.0) else {
            return;
        };
        let failed = match &done {
            StoreDone::Failed(e) => Some(e.clone()),
            _ => None,
        };
        match (then, done) {
            (Then::Append(id), StoreDone::Appended(seq)) => {
                self.push_appended(id, Ok(seq));
                if let StoreOp::Append { topic, .. } = &task.op {
                    self.on_appended(topic, now);
                }
            }
            (Then::Append(id), _) => {
                let e = failed.unwrap_or_default();
                self.queues.store_error("appending a message", &e);
                self.push_appended(id, Err(PublishError::Store(e)));
            }
            (
                Then::Fill {
                    id,
                    key,
                    after,
                    max,
                },
                done,
            ) => {
                let read = match done {
                    StoreDone::Read(messages) => Ok(messages),
                    _ => Err(failed.unwrap_or_default()),
                };
                self.filled(&id, key, after, max, read, now);
            }
            (Then::Redeliver { id, key, seq }, done) => {
                let read = match done {
                    StoreDone::Read(messages) => Ok(messages),
                    _ => Err(failed.unwrap_or_default()),
                };
                self.redelivered(&id, key, seq, read);
            }
            (Then::Prepared(job), StoreDone::Prepared { states, count }) => {
                if let Some(n) = count {
                    self.stored_ids.get_or_insert(n);
                }
                self.prepared(job, states);
            }
            (Then::Created(job), StoreDone::Saved) => {
                if let Some(n) = &mut self.stored_ids {
                    *n += job.fresh;
                }
                self.created(job);
            }
            (Then::Prepared(job) | Then::Created(job), _) => {
                let op = "loading or saving a subscription";
                let e = self.queues.store_error(op, &failed.unwrap_or_default());
                self.end_job(&job);
                self.queues.answer(job.session, job.ticket, Err(e));
            }
            (Then::Acked(session, ticket, json, _), StoreDone::Saved) => {
                self.queues.answer(session, ticket, Ok(json));
            }
            (Then::Acked(session, ticket, _, ids), _) => {
                for id in ids {
                    if let Some(active) = self.persistent.get_mut(&id) {
                        active.unsaved = true;
                    }
                }
                let op = "saving an acknowledgement";
                let e = self.queues.store_error(op, &failed.unwrap_or_default());
                self.queues.answer(session, ticket, Err(e));
            }
            (
                Then::Removed {
                    session,
                    ticket,
                    ids,
                    active,
                    batch,
                },
                StoreDone::Removed(stored),
            ) => {
                let gone = stored.iter().filter(|s| **s).count();
                if let Some(n) = &mut self.stored_ids {
                    *n = n.saturating_sub(gone);
                }
                let removed: Vec<&String> = ids
                    .iter()
                    .zip(active.iter().zip(&stored))
                    .filter(|(_, (a, s))| **a || **s)
                    .map(|(id, _)| id)
                    .collect();
                let mut out = Vec::new();
                let written = if batch {
                    list_result(&mut out, "unsubscribed", &removed)
                } else {
                    bool_result(&mut out, "unsubscribed", !removed.is_empty())
                };
                self.queues
                    .answer(session, ticket, json_answer(written, out));
            }
            (
                Then::Removed {
                    session, ticket, ..
                },
                _,
            ) => {
                let op = "deleting a subscription";
                let e = self.queues.store_error(op, &failed.unwrap_or_default());
                self.queues.answer(session, ticket, Err(e));
            }
            (Then::Swept, StoreDone::Swept(kept)) => self.stored_ids = Some(kept),
            (Then::Swept, _) => {
                let op = "sweeping idle subscriptions";
                self.queues.store_error(op, &failed.unwrap_or_default());
            }
            (Then::Quiet(operation), StoreDone::Failed(e)) => {
                self.queues.store_error(operation, &e);
            }
            (Then::Quiet(_), _) => {}
        }
        if !self.held.is_empty() {
            self.start_held();
        }
    }

    fn push_appended(&mut self, id: AppendId, result: Result<u64, PublishError>) {
        // Bounded like the reports: a caller that never asks loses the oldest.
        if self.appended.len() == MAX_REPORTS {
            self.appended.pop_front();
        }
        self.appended.push_back((id, result));
    }

    /// A publish's append finished: its [`AppendId`] and the message's sequence id, or the
    /// store's failure (also reported). At most 256 are kept for a caller that never asks.
    pub fn poll_appended(&mut self) -> Option<(AppendId, Result<u64, PublishError>)> {
        self.appended.pop_front()
    }

    // ----- sessions -----

    /// Opens a session for a new connection.
    pub fn connect(&mut self) -> SessionId {
        self.open(None)
    }

    /// Opens a session for a new connection that `waker` wakes: [`Hub::poll_woken_waker`]
    /// hands a clone of it out with the session each time the session is woken.
    pub fn connect_waking(&mut self, waker: Waker) -> SessionId {
        self.open(Some(waker))
    }

    fn open(&mut self, waker: Option<Waker>) -> SessionId {
        let id = SessionId(self.next_session);
        self.next_session += 1;
        let session = Session {
            waker,
            ..Session::default()
        };
        self.queues.sessions.insert(id, session);
        id
    }

    /// Closes a session: its subscriptions are removed, its persistent subscriptions
    /// released (their acknowledged state stays in the store), its queue and unsent answers
    /// dropped.
    pub fn disconnect(&mut self, session: SessionId) {
        let Some(s) = remove_and_shrink(&mut self.queues.sessions, &session) else {
            return;
        };
        self.queues.woken.remove(&s);
        for pattern in &s.patterns {
            self.trie.remove(pattern, session);
        }
        for id in &s.persistent {
            if let Some(mut active) = self.detach(id) {
                if active.unsaved {
                    // What a failed save left in memory only: tried once more.
                    active.state.last_seen_ms = self.wall_ms;
                    self.save(id, &active.state, "saving a subscription");
                } else {
                    self.touch(id, &mut active.state);
                }
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
    /// older than the refresh interval (or unknown).
    fn touch(&mut self, id: &str, state: &mut SubscriptionState) {
        let Some(refresh) = self.refresh_ms() else {
            return;
        };
        if state.last_seen_ms != 0 && state.last_seen_ms.saturating_add(refresh) >= self.wall_ms {
            return;
        }
        state.last_seen_ms = self.wall_ms;
        self.save(id, state, "saving a subscription");
    }

    /// Refreshes the last-seen time of the ids this hub's connections have, and asks the
    /// store to delete the idle ones nobody has (and to recount).
    fn sweep(&mut self, idle: Duration) {
        let ids: Vec<String> = self.persistent.keys().cloned().collect();
        for id in ids {
            if let Some(mut active) = self.persistent.remove(&id) {
                self.touch(&id, &mut active.state);
                self.persistent.insert(id, active);
            }
        }
        let keep = self
            .persistent
            .keys()
            .chain(self.reserved.keys())
            .cloned()
            .collect();
        let op = StoreOp::Sweep {
            keep,
            now_ms: self.wall_ms,
            idle_ms: millis(idle),
        };
        self.task(op, Then::Swept);
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

    /// Lets `session`'s notifications be written through `bypass` as they are published,
    /// past its connection's driver, until [`Hub::close_bypass`]: call it as the driver
    /// parks with nothing queued (the core's rule,
    /// [`Connection::open_hook_bypass`](sansrpc::connection::Connection::open_hook_bypass)).
    /// Each is written as the connection's output would write it, in the order published;
    /// one taken in part or not at all ends it (the rest, or the notification, waits for
    /// the connection, which is woken). False (nothing opened) when something waits for
    /// the connection, or the session subscribes to nothing.
    pub fn open_bypass(&mut self, session: SessionId, bypass: Arc<dyn Bypass>) -> bool {
        let Some(s) = self.queues.sessions.get_mut(&session) else {
            return false;
        };
        let waits = !s.queue.is_empty() || !s.answers.is_empty() || self.queues.woken.holds(s);
        if waits || s.subscriptions() == 0 {
            return false;
        }
        s.bypass = Some(Through(bypass));
        true
    }

    /// Ends what [`Hub::open_bypass`] opened: `session`'s notifications are queued for its
    /// connection again. Call it first thing on the driver's turn.
    pub fn close_bypass(&mut self, session: SessionId) {
        if let Some(s) = self.queues.sessions.get_mut(&session) {
            s.bypass = None;
        }
    }

    /// The next notification for `session`'s connection, oldest first.
    pub fn pop_outgoing(&mut self, session: SessionId) -> Option<Outgoing> {
        self.queues.sessions.get_mut(&session)?.pop_outgoing()
    }

    /// What `session`'s connection sends next, answers ([`Hub::pop_answer`]) before
    /// notifications ([`Hub::pop_outgoing`]), and whether more waits after it: one look at
    /// the session for each (a subscriber's connection, woken for each message, looks once).
    pub fn pop_next(&mut self, session: SessionId) -> Option<(Next, bool)> {
        let s = self.queues.sessions.get_mut(&session)?;
        let next = match s.answers.pop_front() {
            Some((ticket, answer)) => Next::Answer(ticket, answer),
            None => Next::Outgoing(s.pop_outgoing()?),
        };
        let more = !s.answers.is_empty() || !s.queue.is_empty();
        Some((next, more))
    }

    /// The next answer for `session`'s connection to a request taken with
    /// [`Handled::Later`], oldest first. Send these before [`Hub::pop_outgoing`]: an answer
    /// comes before the notifications its request caused.
    pub fn pop_answer(&mut self, session: SessionId) -> Option<(Ticket, HubAnswer)> {
        self.queues.sessions.get_mut(&session)?.answers.pop_front()
    }

    /// The answer to `ticket` for `session`, if it is there.
    pub fn take_answer(&mut self, session: SessionId, ticket: Ticket) -> Option<HubAnswer> {
        let answers = &mut self.queues.sessions.get_mut(&session)?.answers;
        let at = answers.iter().position(|(t, _)| *t == ticket)?;
        answers.remove(at).map(|(_, answer)| answer)
    }

    /// A session that was queued something since it was last returned here: wake its
    /// connection so that it drains [`Hub::pop_answer`] and [`Hub::pop_outgoing`].
    pub fn poll_woken(&mut self) -> Option<SessionId> {
        self.queues.woken.pop().map(|(id, _)| id)
    }

    /// [`Hub::poll_woken`] with the waker the session was opened with
    /// ([`Hub::connect_waking`]; `None` for one opened with [`Hub::connect`]), to wake once
    /// the hub's lock is released.
    pub fn poll_woken_waker(&mut self) -> Option<(SessionId, Option<Waker>)> {
        self.queues.woken.pop()
    }

    /// The next report for the operator (at most 256 are kept; older ones are dropped).
    pub fn poll_report(&mut self) -> Option<Report> {
        self.queues.reports.pop_front()
    }

    // ----- requests -----

    /// Handles a request to one of the hub's [`METHODS`] from `session`: `None` when the
    /// method is not the hub's; [`Handled::Answered`] with the result JSON appended to
    /// `out` or the error; [`Handled::Later`] when the answer needs the store (the
    /// persistent methods that read or write it). `now` starts acknowledgement deadlines.
    pub fn handle(
        &mut self,
        session: SessionId,
        method: &str,
        params: Option<&RawValue>,
        now: Instant,
        out: &mut Vec<u8>,
    ) -> Option<Handled> {
        if !METHODS.contains(&method) {
            return None;
        }
        if !self.queues.sessions.contains_key(&session) {
            return Some(Handled::Answered(Err(ErrorObject::internal_error())));
        }
        let start = out.len();
        let handled: Handled = match method {
            "rpc.subscribe" => decode::<TopicParams>(params)
                .and_then(|p| self.subscribe(session, core::slice::from_ref(&p.topic)))
                .and_then(|_| bool_result(out, "subscribed", true))
                .into(),
            "rpc.unsubscribe" => decode::<TopicParams>(params)
                .and_then(|p| {
                    self.check_patterns(core::slice::from_ref(&p.topic))?;
                    let removed = self.unsubscribe(session, &p.topic);
                    bool_result(out, "unsubscribed", removed)
                })
                .into(),
            "rpc.subscribe.batch" => decode::<TopicsParams>(params)
                .and_then(|p| {
                    self.check_batch(p.topics.len())?;
                    self.subscribe(session, &p.topics)?;
                    list_result(out, "subscribed", &p.topics)
                })
                .into(),
            "rpc.unsubscribe.batch" => decode::<TopicsParams>(params)
                .and_then(|p| {
                    self.check_batch(p.topics.len())?;
                    self.check_patterns(&p.topics)?;
                    let removed: Vec<&String> = p
                        .topics
                        .iter()
                        .filter(|t| self.unsubscribe(session, t))
                        .collect();
                    list_result(out, "unsubscribed", &removed)
                })
                .into(),
            "rpc.subscribe.persistent" => decode::<PersistentParams>(params)
                .and_then(|p| self.subscribe_persistent(session, std::vec![p], false))
                .into(),
            "rpc.subscribe.persistent.batch" => decode::<PersistentBatchParams>(params)
                .and_then(|p| {
                    self.check_batch(p.subscriptions.len())?;
                    self.subscribe_persistent(session, p.subscriptions, true)
                })
                .into(),
            "rpc.acknowledge.persistent" => decode::<AckParams>(params)
                .and_then(|p| {
                    let mut saves = Vec::new();
                    let acked = self.acknowledge(
                        session,
                        &p.subscription_id,
                        p.sequence_id,
                        now,
                        &mut saves,
                    )?;
                    bool_result(out, "acknowledged", acked)?;
                    let handled = self.after_saves(session, saves, out, start);
                    if acked {
                        self.fill(&p.subscription_id);
                    }
                    Ok(handled)
                })
                .into(),
            "rpc.acknowledge.persistent.batch" => decode::<AckBatchParams>(params)
                .and_then(|p| {
                    self.check_batch(p.acknowledgments.len())?;
                    let mut items = Vec::with_capacity(p.acknowledgments.len());
                    let mut saves = Vec::new();
                    for a in &p.acknowledgments {
                        let id = &a.subscription_id;
                        let success = self
                            .acknowledge(session, id, a.sequence_id, now, &mut saves)
                            .unwrap_or(false);
                        items.push(AckResult {
                            subscription_id: id,
                            sequence_id: a.sequence_id,
                            success,
                        });
                    }
                    list_result(out, "acknowledged", &items)?;
                    let handled = self.after_saves(session, saves, out, start);
                    let mut acked: Vec<&str> = items
                        .iter()
                        .filter(|i| i.success)
                        .map(|i| i.subscription_id)
                        .collect();
                    acked.sort_unstable();
                    acked.dedup();
                    for id in acked {
                        self.fill(id);
                    }
                    Ok(handled)
                })
                .into(),
            "rpc.unsubscribe.persistent" => decode::<IdParams>(params)
                .map(|p| self.unsubscribe_persistent(session, std::vec![p.subscription_id], false))
                .into(),
            _ => decode::<IdsParams>(params)
                .and_then(|p| {
                    self.check_batch(p.subscription_ids.len())?;
                    Ok(self.unsubscribe_persistent(session, p.subscription_ids, true))
                })
                .into(),
        };
        if !matches!(handled, Handled::Answered(Ok(()))) {
            out.truncate(start);
        }
        Some(handled)
    }

    /// Answers now when nothing needs saving; otherwise saves, and answers what is in `out`
    /// (from `start`) once saved.
    fn after_saves(
        &mut self,
        session: SessionId,
        saves: Vec<(String, SubscriptionState)>,
        out: &[u8],
        start: usize,
    ) -> Handled {
        if saves.is_empty() {
            return Handled::Answered(Ok(()));
        }
        let json = String::from_utf8_lossy(&out[start..]).into_owned();
        let ticket = self.ticket();
        let ids = saves.iter().map(|(id, _)| id.clone()).collect();
        let then = Then::Acked(session, ticket, json, ids);
        self.task(StoreOp::Save { states: saves }, then);
        Handled::Later(ticket)
    }

    fn ticket(&mut self) -> Ticket {
        let t = Ticket(self.next_token);
        self.next_token += 1;
        t
    }

    fn check_batch(&self, len: usize) -> Result<(), ErrorObject<'static>> {
        if len > self.config.max_batch {
            return Err(invalid(std::format!(
                "Invalid params: at most {} entries per batch",
                self.config.max_batch
            )));
        }
        Ok(())
    }

    fn check_room(&self, session: SessionId, new: usize) -> Result<usize, ErrorObject<'static>> {
        let have = self
            .queues
            .sessions
            .get(&session)
            .map_or(0, |s| s.subscriptions() + s.room_held);
        if have + new > self.config.max_subscriptions {
            return Err(ErrorObject::new(
                TOO_MANY_SUBSCRIPTIONS,
                std::format!(
                    "Too many subscriptions: at most {} per connection",
                    self.config.max_subscriptions
                ),
            ));
        }
        Ok(new)
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

    // ----- publishing -----

    /// Publishes `data` to exact `topic`: every matching session is queued an
    /// `rpc.notification` at once, and (with [`HubConfig::persist`]) an append to the store
    /// is queued, after which this node's persistent subscribers of the topic get it.
    pub fn publish(
        &mut self,
        topic: &str,
        data: &RawValue,
        _now: Instant,
        wall_ms: u64,
    ) -> Result<Publishing, PublishError> {
        self.wall_ms = wall_ms;
        if self.config.persist && self.tasks.len() >= self.config.max_store_backlog {
            validate_topic(topic, &self.config.topics).map_err(PublishError::Topic)?;
            return Err(PublishError::Busy);
        }
        let delivered = self.publish_local(topic, data)?;
        if !self.config.persist {
            return Ok(Publishing {
                delivered,
                append: None,
            });
        }
        let id = AppendId(self.next_token);
        let op = StoreOp::Append {
            topic: topic.into(),
            timestamp_ms: wall_ms,
            data: data.to_owned(),
        };
        self.task(op, Then::Append(id));
        Ok(Publishing {
            delivered,
            append: Some(id),
        })
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
            let Ok(params) = RawValue::write_object(&mut self.scratch, |o| {
                o.string("topic", topic);
                o.raw("data", data);
                Ok::<_, core::convert::Infallible>(())
            });
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

    /// Applies what another node of the cluster did ([`NodeEvent`]).
    pub fn handle_node_event(
        &mut self,
        event: &NodeEvent,
        now: Instant,
    ) -> Result<(), PublishError> {
        match event {
            NodeEvent::Published { topic, data } => self.publish_local(topic, data).map(|_| ()),
            NodeEvent::Appended { topic } => {
                self.on_appended(topic, now);
                Ok(())
            }
        }
    }

    /// The persistent half of [`Hub::publish`]: a message was appended to `topic` (by this
    /// node or, for a cluster backend, another one); this node's persistent subscribers of
    /// the topic are sent what they have not been sent yet, within their in-flight window.
    pub fn on_appended(&mut self, topic: &str, _now: Instant) {
        let Some(ids) = self.by_topic.get(topic) else {
            return;
        };
        let ids: Vec<String> = ids.iter().cloned().collect();
        for id in ids {
            self.fill(&id);
        }
    }

    // ----- persistent subscriptions -----

    fn subscribe_persistent(
        &mut self,
        session: SessionId,
        subs: Vec<PersistentParams>,
        batch: bool,
    ) -> Result<Handled, ErrorObject<'static>> {
        // Check everything that needs no store before asking it.
        for (i, p) in subs.iter().enumerate() {
            let id = &p.subscription_id;
            if id.is_empty() || id.len() > self.config.max_subscription_id_len {
                return Err(invalid(std::format!(
                    "Invalid params: a subscription_id is 1 to {} bytes",
                    self.config.max_subscription_id_len
                )));
            }
            if subs[..i].iter().any(|q| q.subscription_id == *id) {
                return Err(invalid(std::format!(
                    "Invalid params: subscription_id {id:?} appears twice"
                )));
            }
            match validate_topic(&p.topic, &self.config.topics) {
                Err(TopicError::Wildcard) => {
                    return Err(invalid(std::format!(
                        "Invalid params: topic {:?}: persistent subscriptions take an exact \
                         topic (sequence ids are per topic)",
                        p.topic
                    )))
                }
                Err(e) => return Err(topic_error(&p.topic, e)),
                Ok(()) => {}
            }
        }
        let ticket = self.ticket();
        if subs
            .iter()
            .any(|p| self.held.iter().any(|h| h.touches(&p.subscription_id)))
        {
            self.held.push_back(Held::Subscribe {
                session,
                ticket,
                subs,
                batch,
            });
            return Ok(Handled::Later(ticket));
        }
        self.start_subscribe(session, ticket, subs, batch)?;
        Ok(Handled::Later(ticket))
    }

    /// A subscribe's checks against what is attached, its reservations, and its load from
    /// the store (answered under `ticket` once that is done).
    fn start_subscribe(
        &mut self,
        session: SessionId,
        ticket: Ticket,
        subs: Vec<PersistentParams>,
        batch: bool,
    ) -> Result<(), ErrorObject<'static>> {
        self.check_attach(session, &subs)?;
        for p in &subs {
            *self.reserved.entry(p.subscription_id.clone()).or_default() += 1;
        }
        let op = StoreOp::Prepare {
            subscriptions: subs
                .iter()
                .map(|p| (p.subscription_id.clone(), p.topic.clone()))
                .collect(),
            count: self.stored_ids.is_none(),
        };
        let job = Job {
            session,
            ticket,
            subs,
            batch,
            states: Vec::new(),
            fresh: 0,
            room: 0,
        };
        self.task(op, Then::Prepared(Box::new(job)));
        Ok(())
    }

    /// The takeover rule and the session's room, against what is attached now and the room
    /// other subscribes under way hold; `Ok` says how many subscriptions would be new.
    fn check_attach(
        &self,
        session: SessionId,
        subs: &[PersistentParams],
    ) -> Result<usize, ErrorObject<'static>> {
        let mut new = 0;
        for p in subs {
            match self.persistent.get(&p.subscription_id) {
                Some(a) if a.session == session => {}
                Some(_) if !self.config.takeover => {
                    return Err(ErrorObject::new(
                        SUBSCRIPTION_IN_USE,
                        std::format!(
                            "Subscription {:?} is active on another connection",
                            p.subscription_id
                        ),
                    ))
                }
                _ => new += 1,
            }
        }
        self.check_room(session, new)
    }

    /// A subscribe's ids are loaded: check again against what happened meanwhile, then
    /// create the new ids in the store, or attach at once.
    fn prepared(&mut self, mut job: Box<Job>, loaded: Vec<(SubscriptionState, bool)>) {
        let checked = self.check_prepared(&mut job, loaded);
        let fresh: Vec<(String, SubscriptionState)> = match checked {
            Ok(fresh) => fresh,
            Err(e) => {
                self.end_job(&job);
                self.queues.answer(job.session, job.ticket, Err(e));
                return;
            }
        };
        if fresh.is_empty() {
            return self.created(job);
        }
        job.fresh = fresh.len();
        self.pending_fresh += job.fresh;
        self.task(StoreOp::Save { states: fresh }, Then::Created(job));
    }

    fn check_prepared(
        &mut self,
        job: &mut Job,
        loaded: Vec<(SubscriptionState, bool)>,
    ) -> Result<Vec<(String, SubscriptionState)>, ErrorObject<'static>> {
        if !self.queues.sessions.contains_key(&job.session) {
            return Err(ErrorObject::internal_error());
        }
        let room = self.check_attach(job.session, &job.subs)?;
        let mut fresh = Vec::new();
        for (p, (stored, new)) in job.subs.iter().zip(loaded) {
            // Attached meanwhile (here or by another subscribe): memory is newer.
            let (state, new) = match self.persistent.get(&p.subscription_id) {
                Some(a) => (a.state.clone(), false),
                None => (stored, new),
            };
            if state.topic != p.topic {
                return Err(invalid(std::format!(
                    "Invalid params: subscription_id {:?} is bound to topic {:?}; \
                     unsubscribe it first to reuse the id",
                    p.subscription_id,
                    state.topic
                )));
            }
            if new {
                let mut state = state.clone();
                state.last_seen_ms = self.wall_ms;
                fresh.push((p.subscription_id.clone(), state));
            }
            job.states.push(state);
        }
        let stored = self.stored_ids.unwrap_or(0) + self.pending_fresh;
        if !fresh.is_empty() && stored + fresh.len() > self.config.max_persistent_ids {
            return Err(ErrorObject::new(
                TOO_MANY_PERSISTENT_IDS,
                std::format!(
                    "Too many persistent subscriptions: this server keeps at most {} ids; \
                     reuse an id or unsubscribe one",
                    self.config.max_persistent_ids
                ),
            ));
        }
        // Held until the job ends (attached or failed): see `Session::room_held`.
        if let Some(s) = self.queues.sessions.get_mut(&job.session) {
            s.room_held += room;
            job.room = room;
        }
        Ok(fresh)
    }

    /// A subscribe's new ids are in the store: attach every subscription and answer.
    fn created(&mut self, job: Box<Job>) {
        self.end_job(&job);
        let Job {
            session,
            ticket,
            subs,
            batch,
            states,
            ..
        } = *job;
        if !self.queues.sessions.contains_key(&session) {
            return;
        }
        let mut floors = Vec::with_capacity(subs.len());
        for (p, state) in subs.iter().zip(states) {
            // Attached meanwhile (the copy taken when the ids were loaded is older than
            // the acks its holder made while the new ids were saved): memory is newer.
            let state = match self.persistent.get(&p.subscription_id) {
                Some(active) => active.state.clone(),
                None => state,
            };
            floors.push(state.ack_floor);
            // Subscribing again on the same connection starts over from the floor too.
            self.attach(session, &p.subscription_id, state);
            self.fill(&p.subscription_id);
        }
        let mut out = Vec::new();
        let written = if batch {
            let items: Vec<Resumed<'_>> = subs
                .iter()
                .zip(&floors)
                .map(|(s, &floor)| Resumed {
                    subscription_id: &s.subscription_id,
                    resumed_from_sequence: floor,
                })
                .collect();
            list_result(&mut out, "subscriptions", &items)
        } else {
            write(
                &mut out,
                &Subscribed {
                    subscription_id: &subs[0].subscription_id,
                    topic: &subs[0].topic,
                    resumed_from_sequence: floors[0],
                },
            )
        };
        self.queues
            .answer(session, ticket, json_answer(written, out));
    }

    /// A subscribe job ends: its reservations go.
    fn end_job(&mut self, job: &Job) {
        self.pending_fresh -= job.fresh.min(self.pending_fresh);
        if let Some(s) = self.queues.sessions.get_mut(&job.session) {
            s.room_held -= job.room.min(s.room_held);
        }
        for p in &job.subs {
            if let Some(n) = self.reserved.get_mut(&p.subscription_id) {
                *n -= 1;
                if *n == 0 {
                    self.reserved.remove(&p.subscription_id);
                }
            }
        }
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
                filling: false,
                refill: false,
                unsaved: false,
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

    fn unsubscribe_persistent(
        &mut self,
        session: SessionId,
        ids: Vec<String>,
        batch: bool,
    ) -> Handled {
        let ticket = self.ticket();
        let waits =
            |id: &String| self.reserved.contains_key(id) || self.held.iter().any(|h| h.touches(id));
        if ids.iter().any(waits) {
            self.held.push_back(Held::Unsubscribe {
                session,
                ticket,
                ids,
                batch,
            });
        } else {
            self.start_unsubscribe(session, ticket, ids, batch);
        }
        Handled::Later(ticket)
    }

    /// An unsubscribe's detach and its removal from the store (answered under `ticket`
    /// once that is done).
    fn start_unsubscribe(
        &mut self,
        session: SessionId,
        ticket: Ticket,
        ids: Vec<String>,
        batch: bool,
    ) {
        let active = ids.iter().map(|id| self.detach(id).is_some()).collect();
        let op = StoreOp::Remove { ids: ids.clone() };
        let then = Then::Removed {
            session,
            ticket,
            ids,
            active,
            batch,
        };
        self.task(op, then);
    }

    /// Starts the held subscribes and unsubscribes nothing holds any more, in order: an
    /// unsubscribe once no subscribe of its ids is under way, either once no earlier held
    /// one names its ids.
    fn start_held(&mut self) {
        let mut i = 0;
        while i < self.held.len() {
            let op = &self.held[i];
            let blocked = |id: &str| {
                self.held.iter().take(i).any(|h| h.touches(id))
                    || (matches!(op, Held::Unsubscribe { .. }) && self.reserved.contains_key(id))
            };
            let waits = match op {
                Held::Subscribe { subs, .. } => subs.iter().any(|p| blocked(&p.subscription_id)),
                Held::Unsubscribe { ids, .. } => ids.iter().any(|id| blocked(id)),
            };
            if waits {
                i += 1;
                continue;
            }
            match self.held.remove(i).expect("in range") {
                Held::Subscribe {
                    session,
                    ticket,
                    subs,
                    batch,
                } => {
                    if !self.queues.sessions.contains_key(&session) {
                        continue;
                    }
                    if let Err(e) = self.start_subscribe(session, ticket, subs, batch) {
                        self.queues.answer(session, ticket, Err(e));
                    }
                }
                Held::Unsubscribe {
                    session,
                    ticket,
                    ids,
                    batch,
                } => self.start_unsubscribe(session, ticket, ids, batch),
            }
        }
    }

    /// `Ok(false)` for a sequence never delivered to this subscription. A state to save goes
    /// to `saves`; the caller fills the window again (after queuing the save, so that the
    /// answer comes before what the fill brings).
    fn acknowledge(
        &mut self,
        session: SessionId,
        id: &str,
        sequence: u64,
        _now: Instant,
        saves: &mut Vec<(String, SubscriptionState)>,
    ) -> Result<bool, ErrorObject<'static>> {
        let Some(active) = self.persistent.get_mut(id).filter(|a| a.session == session) else {
            return Err(invalid(std::format!(
                "Invalid params: no persistent subscription {id:?} is active on this connection"
            )));
        };
        if sequence == 0 || sequence > active.cursor {
            return Ok(false);
        }
        active.clear_due(&mut self.deadlines, sequence);
        // Saved when it moves the state, and when the last save failed: the client's retry
        // of the same acknowledgement is then answered only once it is stored.
        if active.state.ack(sequence) | core::mem::take(&mut active.unsaved) {
            active.state.last_seen_ms = self.wall_ms;
            match saves.iter_mut().find(|(s, _)| s == id) {
                Some((_, state)) => *state = active.state.clone(),
                None => saves.push((id.into(), active.state.clone())),
            }
        }
        Ok(true)
    }

    /// Asks the store for the subscription's next messages while its window has room (one
    /// read under way per subscription; a change meanwhile reads again after it).
    fn fill(&mut self, id: &str) {
        let Some(active) = self.persistent.get_mut(id) else {
            return;
        };
        if active.filling {
            active.refill = true;
            return;
        }
        let room = self
            .config
            .max_in_flight
            .max(1)
            .saturating_sub(active.in_flight.len());
        if room == 0 {
            return;
        }
        active.filling = true;
        active.refill = false;
        let (key, after) = (active.key, active.cursor);
        let op = StoreOp::Read {
            topic: active.state.topic.clone(),
            after,
            max: room,
        };
        let then = Then::Fill {
            id: id.into(),
            key,
            after,
            max: room,
        };
        self.task(op, then);
    }

    /// A read for `fill` is back: queue what is new, within the window.
    fn filled(
        &mut self,
        id: &str,
        key: u64,
        after: u64,
        max: usize,
        read: Result<Vec<StoredMessage>, String>,
        now: Instant,
    ) {
        let Hub {
            config,
            queues,
            persistent,
            deadlines,
            stalled,
            next_refill,
            ..
        } = self;
        let Some(active) = persistent.get_mut(id).filter(|a| a.key == key) else {
            return;
        };
        active.filling = false;
        let messages = match read {
            Ok(messages) => messages,
            Err(e) => {
                queues.store_error("reading messages", &e);
                // Read again a little later.
                stalled.insert(id.into());
                next_refill.get_or_insert(now.saturating_add(READ_RETRY));
                return;
            }
        };
        let mut save = false;
        // A gap after what was asked for: retention removed those messages, and since it
        // removes from the front of a topic's log, everything before the first one left is
        // gone for good, delivered or not. Without this the floor would stick below them.
        if let Some(first) = messages.first().filter(|m| m.sequence > after + 1) {
            let gone = first.sequence - 1;
            let stale: Vec<u64> = active.in_flight.range(..=gone).map(|(&s, _)| s).collect();
            for seq in stale {
                active.clear_due(deadlines, seq);
            }
            active.state.raise_floor(gone);
            active.cursor = active.cursor.max(gone);
            save = true;
        }
        let cap = config.max_in_flight.max(1);
        let full = messages.len() >= max;
        for m in &messages {
            if m.sequence <= active.cursor {
                continue;
            }
            if active.in_flight.len() >= cap {
                break;
            }
            active.cursor = m.sequence;
            if active.state.is_acked(m.sequence) {
                continue;
            }
            active.set_due(
                deadlines,
                m.sequence,
                now.saturating_add(config.ack_timeout),
            );
            queues.enqueue(active.session, persistent_item(id, m), config);
        }
        let again = full || active.refill;
        if save {
            let state = active.state.clone();
            self.save(id, &state, "saving a subscription");
        }
        if again {
            self.fill(id);
        }
    }

    /// Acknowledgement deadlines and retention by age: call at [`Hub::poll_timeout`] (calling
    /// earlier or later is harmless). `wall_ms` is the wall clock in milliseconds since the
    /// Unix epoch.
    pub fn handle_timeout(&mut self, now: Instant, wall_ms: u64) {
        self.wall_ms = wall_ms;
        if !matches!(self.next_expire, Some(t) if now < t) {
            self.next_expire = Some(now.saturating_add(self.config.expire_interval));
            let op = StoreOp::Expire { now_ms: wall_ms };
            self.task(op, Then::Quiet("expiring messages"));
        }
        if let Some(idle) = self.config.persistent_idle_timeout {
            if !matches!(self.next_sweep, Some(t) if now < t) {
                let cadence = (idle / 16).max(self.config.expire_interval);
                self.next_sweep = Some(now.saturating_add(cadence));
                self.sweep(idle);
            }
        }
        if self.next_refill.is_some_and(|t| t <= now) {
            self.next_refill = None;
            for id in core::mem::take(&mut self.stalled) {
                self.fill(&id);
            }
        }
        let due: Vec<(u64, u64)> = self
            .deadlines
            .iter()
            .take_while(|(due, _, _)| *due <= now)
            .map(|&(_, key, seq)| (key, seq))
            .collect();
        let again = now.saturating_add(self.config.ack_timeout);
        for (key, seq) in due {
            let Some(id) = self.keys.get(&key).cloned() else {
                continue;
            };
            let Some(active) = self.persistent.get_mut(&id) else {
                continue;
            };
            // Due again later unless the read below finds it gone.
            active.set_due(&mut self.deadlines, seq, again);
            let op = StoreOp::Read {
                topic: active.state.topic.clone(),
                after: seq - 1,
                max: 1,
            };
            self.task(op, Then::Redeliver { id, key, seq });
        }
    }

    /// A read for a redelivery is back.
    fn redelivered(
        &mut self,
        id: &str,
        key: u64,
        seq: u64,
        read: Result<Vec<StoredMessage>, String>,
    ) {
        let Hub {
            config,
            queues,
            persistent,
            deadlines,
            ..
        } = self;
        let Some(active) = persistent.get_mut(id).filter(|a| a.key == key) else {
            return;
        };
        if !active.in_flight.contains_key(&seq) {
            return; // acknowledged meanwhile
        }
        let messages = match read {
            Ok(messages) => messages,
            Err(e) => {
                queues.store_error("reading messages", &e);
                return;
            }
        };
        match messages.first() {
            Some(m) if m.sequence == seq => {
                queues.enqueue(active.session, persistent_item(id, m), config);
            }
            // Removed by retention while unacknowledged: nothing left to deliver.
            _ => {
                active.clear_due(deadlines, seq);
                if active.state.ack(seq) {
                    let state = active.state.clone();
                    self.save(id, &state, "saving a subscription");
                }
                self.fill(id);
            }
        }
    }

    /// The next moment [`Hub::handle_timeout`] has work: an acknowledgement deadline or the
    /// next retention pass (at once before the first call). Cheap: no scan.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let expire = self.next_expire.unwrap_or(Instant::ZERO);
        let acks = self.deadlines.first().map(|&(due, _, _)| due);
        let first = acks.map_or(expire, |a| a.min(expire));
        Some(self.next_refill.map_or(first, |r| r.min(first)))
    }
}

impl From<Outcome> for Handled {
    fn from(outcome: Outcome) -> Self {
        Handled::Answered(outcome)
    }
}

impl From<Result<Handled, ErrorObject<'static>>> for Handled {
    fn from(handled: Result<Handled, ErrorObject<'static>>) -> Self {
        handled.unwrap_or_else(|e| Handled::Answered(Err(e)))
    }
}

fn json_answer(written: Outcome, out: Vec<u8>) -> HubAnswer {
    written.and_then(|()| String::from_utf8(out).map_err(|_| ErrorObject::internal_error()))
}

/// `d` in whole milliseconds, saturating.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn persistent_item(id: &str, m: &StoredMessage) -> Outgoing {
    let mut timestamp = String::with_capacity(24);
    write_rfc3339(&mut timestamp, m.timestamp_ms);
    let mut scratch = Vec::with_capacity(m.topic.len() + m.data.get().len() + id.len() + 96);
    // Only `value` could fail, and a u64 always serializes.
    let params = RawValue::write_object(&mut scratch, |o| {
        o.string("subscription_id", id);
        o.string("topic", &m.topic);
        o.value("sequence_id", &m.sequence)?;
        o.string("timestamp", &timestamp);
        o.raw("data", &m.data);
        Ok::<_, serde_json::Error>(())
    })
    .unwrap_or_else(|_| RawValue::NULL.to_owned());
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
/// sansrpc_pubsub::hub::write_rfc3339(&mut s, 1_766_750_400_000);
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

/// Appends `value` as JSON (nothing when it fails to serialize).
fn write_json<T: serde::Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    let written = serde_json::to_writer(&mut *out, value);
    if written.is_err() {
        out.truncate(start);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sessions_table_gives_back_its_room_when_a_burst_of_connections_has_left() {
        let mut hub = Hub::new(HubConfig::default());
        let sessions: Vec<SessionId> = (0..10_000).map(|_| hub.connect()).collect();
        let full = hub.queues.sessions.capacity();
        assert!(full >= 10_000);
        for &session in &sessions[10..] {
            hub.disconnect(session);
        }
        assert_eq!(hub.sessions(), 10);
        assert!(
            hub.queues.sessions.capacity() <= 64,
            "{}",
            hub.queues.sessions.capacity()
        );
        // The ten left are all still there and served.
        assert!(sessions[..10]
            .iter()
            .all(|s| hub.queues.sessions.contains_key(s)));
        // A table that is still well used keeps its room.
        let more: Vec<SessionId> = (0..1_000).map(|_| hub.connect()).collect();
        let room = hub.queues.sessions.capacity();
        for &session in &more[..500] {
            hub.disconnect(session);
        }
        assert_eq!(hub.queues.sessions.capacity(), room);
    }
}
