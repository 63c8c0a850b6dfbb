//! Connection lifecycle, the reconnect schedule, and the subscriptions to replay after a
//! reconnect: the pure logic every adapter's reconnecting client shares.
//!
//! - [`State`]: the four states of WebSocket seed §5 (connecting, open, closing, closed)
//!   and the transitions between them. Nothing may be sent unless the state is
//!   [`State::Open`].
//! - [`Backoff`] and [`ReconnectPolicy`]: none, a fixed delay, or exponential backoff with
//!   jitter, a bound on attempts, a connect timeout, and what happens to the requests pending
//!   when a connection is lost ([`PendingPolicy`]).
//! - [`Schedule`]: the policy's state machine. It never sleeps and never draws random
//!   numbers itself: the caller passes a random `u64` and sleeps for the delay it returns.
//! - [`Subscriptions`]: the pub/sub subscriptions a client holds (`rpc.subscribe`,
//!   `rpc.subscribe.batch`, `rpc.subscribe.persistent`, and their batch and unsubscribe
//!   forms), bounded, replayed after a reconnect.

use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use serde_json::Value;

use crate::time::Instant;
use crate::RawValue;

/// Where a connection is in its life (WebSocket seed §5.1).
///
/// ```text
/// Connecting → Open → Closing → Closed
///      ↓         ↓ (lost)
///   Closed    Closed, or Connecting again when a reconnect is tried
/// ```
///
/// Requests and notifications may be sent only while [`Open`](State::Open); a reconnecting
/// client refuses them in the other states with a typed error
/// ([`SendError::Connecting`](crate::error::SendError::Connecting) or
/// [`SendError::Closed`](crate::error::SendError::Closed)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// Connecting (a handshake in progress, or waiting for the next reconnect attempt):
    /// nothing may be sent.
    Connecting,
    /// Established: messages flow both ways.
    Open,
    /// The application asked to close: nothing new may be sent, pending requests may still
    /// be answered until the connection is gone.
    Closing,
    /// Gone for good: nothing is sent or received again.
    Closed,
}

impl State {
    /// True when messages may be sent.
    pub fn is_open(self) -> bool {
        self == State::Open
    }

    /// True when `self → next` is a transition of seed §5.2, with the reconnecting client's
    /// one addition: `Open → Connecting` when a lost connection will be re-established.
    /// Staying in the same state is not a transition.
    pub fn can_become(self, next: State) -> bool {
        use State::*;
        matches!(
            (self, next),
            (Connecting, Open)
                | (Connecting, Closing)
                | (Connecting, Closed)
                | (Open, Closing)
                | (Open, Closed)
                | (Open, Connecting)
                | (Closing, Closed)
        )
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Connecting => "connecting",
            State::Open => "open",
            State::Closing => "closing",
            State::Closed => "closed",
        })
    }
}

/// How long to wait between reconnect attempts, and how many to make (seed 000 §10.6).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Backoff {
    /// Never reconnect: a lost connection is closed for good.
    None,
    /// The same delay before every attempt.
    Fixed {
        /// Wait before each attempt.
        delay: Duration,
        /// Consecutive failed attempts before giving up (at least one attempt is made).
        max_attempts: u32,
    },
    /// A delay that starts at `initial` and is multiplied by `multiplier` after every failed
    /// attempt, up to `max`.
    Exponential {
        /// Wait before the first attempt.
        initial: Duration,
        /// The longest wait.
        max: Duration,
        /// Growth per attempt; values below 1 (or not finite) count as 1.
        multiplier: f64,
        /// Consecutive failed attempts before giving up (at least one attempt is made).
        max_attempts: u32,
    },
}

impl Backoff {
    /// The seed's exponential default: 1 s doubling up to 30 s, 10 attempts.
    pub const fn exponential() -> Backoff {
        Backoff::Exponential {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(30),
            multiplier: 2.0,
            max_attempts: 10,
        }
    }

    /// The delay before attempt `attempt` (1-based), before jitter; `None` past the last
    /// attempt or when the strategy never reconnects.
    pub fn delay(&self, attempt: u32) -> Option<Duration> {
        match *self {
            Backoff::None => None,
            Backoff::Fixed {
                delay,
                max_attempts,
            } => (attempt >= 1 && attempt <= max_attempts.max(1)).then_some(delay),
            Backoff::Exponential {
                initial,
                max,
                multiplier,
                max_attempts,
            } => {
                if attempt == 0 || attempt > max_attempts.max(1) {
                    return None;
                }
                let m = if multiplier.is_finite() && multiplier > 1.0 {
                    multiplier
                } else {
                    1.0
                };
                let cap = max.max(initial).as_secs_f64();
                let mut secs = initial.as_secs_f64();
                for _ in 1..attempt {
                    if secs >= cap {
                        break;
                    }
                    secs *= m;
                }
                // `secs` is finite and non-negative here; the cap keeps it representable.
                Some(if secs >= cap {
                    max.max(initial)
                } else {
                    Duration::try_from_secs_f64(secs).unwrap_or(max)
                })
            }
        }
    }
}

/// What happens to our requests still waiting for an answer when the connection is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PendingPolicy {
    /// Every pending request fails with "connection closed" (the default: the peer may or
    /// may not have acted on it, and only the caller knows whether repeating it is safe).
    #[default]
    Fail,
    /// Requests the caller marked idempotent wait for the next connection and are sent again
    /// on it (with a fresh deadline); the others fail as with [`Fail`](PendingPolicy::Fail).
    /// If no connection comes back they fail when the client gives up.
    ResendIdempotent,
}

/// How one call is made through a reconnecting client: its deadline, and whether it may be
/// made twice. A [`Timeout`](crate::Timeout) converts into the options of a call that is
/// not idempotent, so `call_with(&params, Timeout::After(d))` reads as on a plain client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallOptions {
    /// The call's deadline (restarted when it is re-sent).
    pub timeout: crate::Timeout,
    /// The call may safely be made twice: under [`PendingPolicy::ResendIdempotent`] it is
    /// re-sent on the next connection when the connection is lost before its answer.
    pub idempotent: bool,
}

impl CallOptions {
    /// The default deadline, idempotent.
    pub fn idempotent() -> Self {
        CallOptions {
            timeout: crate::Timeout::Default,
            idempotent: true,
        }
    }
}

impl From<crate::Timeout> for CallOptions {
    fn from(timeout: crate::Timeout) -> Self {
        CallOptions {
            timeout,
            idempotent: false,
        }
    }
}

/// A reconnecting client's policy: the backoff, its jitter, the connect timeout and the
/// pending-request policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReconnectPolicy {
    /// The delays between attempts and their number.
    pub backoff: Backoff,
    /// Each delay is shortened by a random fraction of up to `jitter` of itself (0 = none,
    /// 1 = anywhere between zero and the full delay), so that many clients of one server do
    /// not reconnect in lockstep. Clamped to `0..=1`.
    pub jitter: f64,
    /// How long one connection attempt (connect and handshake) may take before it counts as
    /// failed.
    pub connect_timeout: Duration,
    /// What happens to requests pending when the connection is lost.
    pub pending: PendingPolicy,
}

impl Default for ReconnectPolicy {
    /// Exponential backoff (1 s doubling to 30 s, 10 attempts), 20 % jitter, a 10 s connect
    /// timeout (seed 000 §10.6), pending requests failed.
    fn default() -> Self {
        ReconnectPolicy {
            backoff: Backoff::exponential(),
            jitter: 0.2,
            connect_timeout: Duration::from_secs(10),
            pending: PendingPolicy::Fail,
        }
    }
}

impl ReconnectPolicy {
    /// A policy that never reconnects (the lifecycle and connect timeout still apply).
    pub fn never() -> Self {
        ReconnectPolicy {
            backoff: Backoff::None,
            ..ReconnectPolicy::default()
        }
    }
}

/// The reconnect schedule: how many attempts failed in a row, and the wait before the next.
///
/// Call [`next_delay`](Schedule::next_delay) each time a connection is lost or an attempt
/// fails; sleep for what it returns and try again, or give up on `None`. Call
/// [`connected`](Schedule::connected) when an attempt succeeds.
#[derive(Debug, Clone)]
pub struct Schedule {
    policy: ReconnectPolicy,
    failures: u32,
}

impl Schedule {
    /// A schedule with no failures yet.
    pub fn new(policy: ReconnectPolicy) -> Self {
        Schedule {
            policy,
            failures: 0,
        }
    }

    /// The policy.
    pub fn policy(&self) -> &ReconnectPolicy {
        &self.policy
    }

    /// Consecutive attempts (or losses) since the last successful connection.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// The connection was lost or an attempt failed: the wait before the next attempt, with
    /// jitter drawn from `random` (any uniformly distributed `u64`), or `None` when the
    /// policy's attempts are used up.
    pub fn next_delay(&mut self, random: u64) -> Option<Duration> {
        self.failures = self.failures.saturating_add(1);
        let delay = self.policy.backoff.delay(self.failures)?;
        let jitter = if self.policy.jitter.is_finite() {
            self.policy.jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        // A fraction in [0, 1) from the top 53 bits.
        let fraction = (random >> 11) as f64 / (1u64 << 53) as f64;
        let keep = 1.0 - jitter * fraction;
        Some(Duration::try_from_secs_f64(delay.as_secs_f64() * keep).unwrap_or(delay))
    }

    /// An attempt succeeded: the next loss starts the schedule from the beginning.
    pub fn connected(&mut self) {
        self.failures = 0;
    }
}

/// The random source for reconnect jitter: a small seedable generator (xorshift64), so the
/// core draws no randomness of its own and a fixed seed makes every delay reproducible.
/// Jitter needs spread, not cryptographic quality. Adapters seed it once per client from
/// whatever entropy their platform has.
#[derive(Debug, Clone)]
pub struct Jitter {
    state: u64,
}

impl Jitter {
    /// A generator seeded with `seed` (any value; 0 is replaced by a fixed non-zero one,
    /// since xorshift would stay at 0).
    pub fn new(seed: u64) -> Self {
        Jitter {
            state: if seed == 0 {
                0x9E37_79B9_7F4A_7C15
            } else {
                seed
            },
        }
    }

    /// A generator seeded from std's per-process random hasher keys: different in every
    /// process, for clients that need no reproducible delays.
    #[cfg(feature = "std")]
    pub fn from_std_random_state() -> Self {
        use std::hash::BuildHasher;
        Jitter::new(std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64))
    }

    /// The next uniformly distributed `u64`, for [`Schedule::next_delay`].
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }
}

/// Method names of the pub/sub extension (WebSocket seed §10, §11) that
/// [`Subscriptions`] follows.
pub mod methods {
    /// `{"topic": t}`
    pub const SUBSCRIBE: &str = "rpc.subscribe";
    /// `{"topic": t}`
    pub const UNSUBSCRIBE: &str = "rpc.unsubscribe";
    /// `{"topics": [t, ..]}`
    pub const SUBSCRIBE_BATCH: &str = "rpc.subscribe.batch";
    /// `{"topics": [t, ..]}`
    pub const UNSUBSCRIBE_BATCH: &str = "rpc.unsubscribe.batch";
    /// `{"subscription_id": s, "topic": t}`
    pub const SUBSCRIBE_PERSISTENT: &str = "rpc.subscribe.persistent";
    /// `{"subscriptions": [{"subscription_id": s, "topic": t}, ..]}`
    pub const SUBSCRIBE_PERSISTENT_BATCH: &str = "rpc.subscribe.persistent.batch";
    /// `{"subscription_id": s}`
    pub const UNSUBSCRIBE_PERSISTENT: &str = "rpc.unsubscribe.persistent";
}

/// The subscriptions a client holds, to re-establish after a reconnect (the server forgets
/// them with the connection, seed §10.6).
///
/// Feed it every call the client makes to a pub/sub method: [`subscribed`] when a
/// subscribe call succeeded, [`unsubscribing`] when an unsubscribe call is sent (the caller
/// no longer wants it, whatever the answer). After a reconnect, send what [`replay`]
/// yields: one `rpc.subscribe` per topic and one `rpc.subscribe.persistent` per persistent
/// subscription (which the server resumes from its last acknowledged message). At most
/// `capacity` entries are kept; subscriptions beyond it are not replayed.
///
/// [`subscribed`]: Subscriptions::subscribed
/// [`unsubscribing`]: Subscriptions::unsubscribing
/// [`replay`]: Subscriptions::replay
#[derive(Debug, Clone)]
pub struct Subscriptions {
    topics: BTreeSet<String>,
    /// Persistent subscriptions: id → topic.
    persistent: BTreeMap<String, String>,
    capacity: usize,
}

impl Default for Subscriptions {
    /// Room for 1024 subscriptions.
    fn default() -> Self {
        Subscriptions::new(1024)
    }
}

fn parse(params: Option<&RawValue>) -> Option<Value> {
    serde_json::from_str(params?.get()).ok()
}

fn str_field<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key)?.as_str()
}

impl Subscriptions {
    /// An empty table keeping at most `capacity` subscriptions.
    pub fn new(capacity: usize) -> Self {
        Subscriptions {
            topics: BTreeSet::new(),
            persistent: BTreeMap::new(),
            capacity,
        }
    }

    /// True for the methods this table follows.
    pub fn follows(method: &str) -> bool {
        method.starts_with("rpc.subscribe") || method.starts_with("rpc.unsubscribe")
    }

    /// Subscriptions held: topics plus persistent subscriptions.
    pub fn len(&self) -> usize {
        self.topics.len() + self.persistent.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn room(&self) -> bool {
        self.len() < self.capacity
    }

    fn add_topic(&mut self, topic: &str) {
        if self.topics.contains(topic) || self.room() {
            self.topics.insert(topic.to_owned());
        }
    }

    fn add_persistent(&mut self, entry: &Value) {
        let (Some(id), Some(topic)) = (
            str_field(entry, "subscription_id"),
            str_field(entry, "topic"),
        ) else {
            return;
        };
        if self.persistent.contains_key(id) || self.room() {
            self.persistent.insert(id.to_owned(), topic.to_owned());
        }
    }

    /// A call to `method` with `params` succeeded: remembers the subscriptions it made.
    /// Anything else (other methods, params of another shape) is ignored.
    pub fn subscribed(&mut self, method: &str, params: Option<&RawValue>) {
        if !Self::follows(method) {
            return;
        }
        let Some(params) = parse(params) else {
            return;
        };
        match method {
            methods::SUBSCRIBE => {
                if let Some(topic) = str_field(&params, "topic") {
                    self.add_topic(topic);
                }
            }
            methods::SUBSCRIBE_BATCH => {
                let topics = params.get("topics").and_then(Value::as_array);
                for topic in topics.into_iter().flatten().filter_map(Value::as_str) {
                    self.add_topic(topic);
                }
            }
            methods::SUBSCRIBE_PERSISTENT => self.add_persistent(&params),
            methods::SUBSCRIBE_PERSISTENT_BATCH => {
                let entries = params.get("subscriptions").and_then(Value::as_array);
                for entry in entries.into_iter().flatten() {
                    self.add_persistent(entry);
                }
            }
            _ => {}
        }
    }

    /// A call to `method` with `params` is being sent: forgets the subscriptions it ends.
    pub fn unsubscribing(&mut self, method: &str, params: Option<&RawValue>) {
        if !method.starts_with("rpc.unsubscribe") {
            return;
        }
        let Some(params) = parse(params) else {
            return;
        };
        match method {
            methods::UNSUBSCRIBE => {
                if let Some(topic) = str_field(&params, "topic") {
                    self.topics.remove(topic);
                }
            }
            methods::UNSUBSCRIBE_BATCH => {
                let topics = params.get("topics").and_then(Value::as_array);
                for topic in topics.into_iter().flatten().filter_map(Value::as_str) {
                    self.topics.remove(topic);
                }
            }
            methods::UNSUBSCRIBE_PERSISTENT => {
                if let Some(id) = str_field(&params, "subscription_id") {
                    self.persistent.remove(id);
                }
            }
            _ => {}
        }
    }

    /// The server refused a replayed subscription: it is not tried again.
    pub fn refused(&mut self, method: &str, params: Option<&RawValue>) {
        let Some(params) = parse(params) else {
            return;
        };
        match method {
            methods::SUBSCRIBE => {
                if let Some(topic) = str_field(&params, "topic") {
                    self.topics.remove(topic);
                }
            }
            methods::SUBSCRIBE_PERSISTENT => {
                if let Some(id) = str_field(&params, "subscription_id") {
                    self.persistent.remove(id);
                }
            }
            _ => {}
        }
    }

    /// The calls that re-establish every subscription held, in a stable order (topics
    /// sorted, then persistent subscriptions by id): method and params.
    pub fn replay(&self) -> Vec<(&'static str, Box<RawValue>)> {
        let mut calls = Vec::with_capacity(self.len());
        for topic in &self.topics {
            let params = serde_json::json!({ "topic": topic });
            calls.push((methods::SUBSCRIBE, raw(&params)));
        }
        for (id, topic) in &self.persistent {
            let params = serde_json::json!({ "subscription_id": id, "topic": topic });
            calls.push((methods::SUBSCRIBE_PERSISTENT, raw(&params)));
        }
        calls
    }

    /// The topics held (plain subscriptions), sorted.
    pub fn topics(&self) -> impl Iterator<Item = &str> {
        self.topics.iter().map(String::as_str)
    }

    /// The persistent subscriptions held: id and topic, sorted by id.
    pub fn persistent(&self) -> impl Iterator<Item = (&str, &str)> {
        self.persistent
            .iter()
            .map(|(id, topic)| (id.as_str(), topic.as_str()))
    }
}

fn raw(value: &Value) -> Box<RawValue> {
    // A `Value` always serializes to valid JSON.
    let text = serde_json::to_string(value).unwrap_or_default();
    RawValue::from_string(text).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// What a reconnecting client's driver does next; from [`Reconnector::poll_action`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Start a connection attempt now; report [`Reconnector::handle_connected`] or
    /// [`Reconnector::handle_failed`].
    Connect,
    /// The attempt in progress took longer than the connect timeout: drop it (the
    /// reconnector already counted it as failed).
    Abandon,
    /// The connection is open. Before anything else, send the calls of
    /// [`Reconnector::replay`] (the subscriptions held) and then again the calls of the
    /// tokens [`Reconnector::take_resend`] gives (idempotent calls the last connection
    /// lost); only then report the state as open.
    Open,
    /// The policy's attempts are used up: the client is closed for good; the calls
    /// [`Reconnector::take_resend`] still gives fail.
    GiveUp {
        /// Attempts made since the last successful connection.
        attempts: u32,
    },
    /// The client was closed ([`Reconnector::close`]) and no connection is left; the calls
    /// [`Reconnector::take_resend`] still gives fail.
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    /// Waiting to try again at this instant.
    Waiting(Instant),
    /// An attempt runs, until this deadline.
    Connecting(Instant),
    Open,
    Closed,
}

/// A reconnecting client as a sans-I/O machine: when to connect, how long an attempt may
/// take, when to try again (backoff with jitter from a seedable [`Jitter`]), what to replay
/// on a new connection (subscriptions, idempotent calls), when to give up, and which calls
/// a caller may make in each [`State`]. Every adapter's reconnecting client drives one, so
/// the rules are the same on every runtime.
///
/// Inputs: [`handle_connected`](Reconnector::handle_connected),
/// [`handle_failed`](Reconnector::handle_failed) (an attempt failed),
/// [`handle_lost`](Reconnector::handle_lost) (an open connection ended),
/// [`handle_timeout`](Reconnector::handle_timeout), [`close`](Reconnector::close), and what
/// calls did ([`call_lost`](Reconnector::call_lost), [`subscriptions`](Reconnector::subscriptions)).
/// Outputs: [`poll_action`](Reconnector::poll_action), [`poll_timeout`](Reconnector::poll_timeout),
/// [`state`](Reconnector::state), [`admit`](Reconnector::admit).
///
/// ```
/// use core::time::Duration;
/// use sansrpc::ext::reconnect::{Action, Backoff, Jitter, ReconnectPolicy, Reconnector, State};
/// use sansrpc::Instant;
///
/// let policy = ReconnectPolicy {
///     backoff: Backoff::Fixed { delay: Duration::from_secs(1), max_attempts: 2 },
///     jitter: 0.0,
///     ..ReconnectPolicy::default()
/// };
/// let mut rc = Reconnector::new(policy, Jitter::new(7), Instant::ZERO);
/// assert_eq!(rc.poll_action(), Some(Action::Connect));
/// rc.handle_failed(Instant::ZERO);
/// assert_eq!(rc.state(), State::Connecting);
/// let retry = rc.poll_timeout().unwrap();
/// assert_eq!(retry.since_epoch(), Duration::from_secs(1));
/// rc.handle_timeout(retry);
/// assert_eq!(rc.poll_action(), Some(Action::Connect));
/// rc.handle_connected(retry);
/// assert_eq!(rc.poll_action(), Some(Action::Open));
/// assert_eq!(rc.state(), State::Open);
/// ```
#[derive(Debug, Clone)]
pub struct Reconnector {
    schedule: Schedule,
    jitter: Jitter,
    state: State,
    link: Link,
    subscriptions: Subscriptions,
    resend: alloc::collections::VecDeque<u64>,
    actions: alloc::collections::VecDeque<Action>,
    closing: bool,
}

impl Reconnector {
    /// A client about to make its first attempt at `now` ([`Action::Connect`] is queued).
    pub fn new(policy: ReconnectPolicy, jitter: Jitter, now: Instant) -> Self {
        let mut actions = alloc::collections::VecDeque::new();
        actions.push_back(Action::Connect);
        Reconnector {
            link: Link::Connecting(now.saturating_add(policy.connect_timeout)),
            schedule: Schedule::new(policy),
            jitter,
            state: State::Connecting,
            subscriptions: Subscriptions::default(),
            resend: alloc::collections::VecDeque::new(),
            actions,
            closing: false,
        }
    }

    /// The policy.
    pub fn policy(&self) -> &ReconnectPolicy {
        self.schedule.policy()
    }

    /// The client's state, as callers see it.
    pub fn state(&self) -> State {
        self.state
    }

    /// Consecutive failed attempts (or losses) since the last successful connection.
    pub fn failures(&self) -> u32 {
        self.schedule.failures()
    }

    /// Whether a caller may send now: `Ok` while open, [`SendError::Connecting`] while
    /// (re)connecting, [`SendError::Closed`] once closing or closed.
    ///
    /// [`SendError::Connecting`]: crate::error::SendError::Connecting
    /// [`SendError::Closed`]: crate::error::SendError::Closed
    pub fn admit(&self) -> Result<(), crate::error::SendError> {
        match self.state {
            State::Open => Ok(()),
            State::Connecting => Err(crate::error::SendError::Connecting),
            State::Closing | State::Closed => Err(crate::error::SendError::Closed),
        }
    }

    /// The subscriptions held, to feed with every pub/sub call the client makes.
    pub fn subscriptions(&mut self) -> &mut Subscriptions {
        &mut self.subscriptions
    }

    /// The calls that re-establish the subscriptions held (on [`Action::Open`]).
    pub fn replay(&self) -> Vec<(&'static str, Box<RawValue>)> {
        self.subscriptions.replay()
    }

    /// The next thing to do; `None` when there is nothing.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`handle_timeout`](Reconnector::handle_timeout) has work: the next attempt, or
    /// the deadline of the one in progress.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.link {
            Link::Waiting(at) | Link::Connecting(at) => Some(at),
            Link::Open | Link::Closed => None,
        }
    }

    /// Starts the next attempt once its wait is over; abandons an attempt past the connect
    /// timeout.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.link {
            Link::Waiting(at) if now >= at => self.connect(now),
            Link::Connecting(deadline) if now >= deadline => {
                self.actions.push_back(Action::Abandon);
                self.handle_failed(now);
            }
            _ => {}
        }
    }

    /// The attempt succeeded: the schedule starts over, [`Action::Open`] is queued.
    pub fn handle_connected(&mut self, _now: Instant) {
        if !matches!(self.link, Link::Connecting(_)) {
            return;
        }
        self.schedule.connected();
        self.link = Link::Open;
        if !self.closing {
            self.state = State::Open;
        }
        self.actions.push_back(Action::Open);
    }

    /// The attempt failed: wait and try again, or give up.
    pub fn handle_failed(&mut self, now: Instant) {
        if matches!(self.link, Link::Connecting(_)) {
            self.retry(now);
        }
    }

    /// The open connection ended: wait and try again (or close, when closing).
    pub fn handle_lost(&mut self, now: Instant) {
        if self.link == Link::Open {
            self.retry(now);
        }
    }

    /// Closes the client: no new calls; an open connection should be shut down by the
    /// driver (its end is then [`handle_lost`](Reconnector::handle_lost)); with none open,
    /// [`Action::Closed`] is queued at once.
    pub fn close(&mut self) {
        if self.closing || self.link == Link::Closed {
            return;
        }
        self.closing = true;
        self.state = State::Closing;
        if self.link != Link::Open {
            self.shut(Action::Closed);
        }
    }

    /// A call was lost with its connection: true when it waits to be sent again on the next
    /// connection (the policy resends idempotent calls and `idempotent` is set), its token
    /// then given by [`take_resend`](Reconnector::take_resend); false when it fails.
    pub fn call_lost(&mut self, token: u64, idempotent: bool) -> bool {
        let resend = self.schedule.policy().pending == PendingPolicy::ResendIdempotent
            && idempotent
            && !self.closing
            && self.link != Link::Closed;
        if resend {
            self.resend.push_back(token);
        }
        resend
    }

    /// The tokens of calls waiting to be sent again (on [`Action::Open`]), or to fail (on
    /// [`Action::GiveUp`] and [`Action::Closed`]), oldest first.
    pub fn take_resend(&mut self) -> impl Iterator<Item = u64> + '_ {
        self.resend.drain(..)
    }

    fn connect(&mut self, now: Instant) {
        self.link = Link::Connecting(now.saturating_add(self.schedule.policy().connect_timeout));
        self.actions.push_back(Action::Connect);
    }

    fn retry(&mut self, now: Instant) {
        if self.closing {
            return self.shut(Action::Closed);
        }
        match self.schedule.next_delay(self.jitter.next_u64()) {
            Some(delay) => {
                self.state = State::Connecting;
                self.link = Link::Waiting(now.saturating_add(delay));
            }
            None => {
                let attempts = self.schedule.failures().saturating_sub(1);
                self.shut(Action::GiveUp { attempts });
            }
        }
    }

    fn shut(&mut self, why: Action) {
        self.link = Link::Closed;
        self.state = State::Closed;
        self.actions.push_back(why);
    }
}
