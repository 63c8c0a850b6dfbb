//! The durable log behind persistent subscriptions (WebSocket seed §11).
//!
//! The persistent-subscription state machine decides *what* to deliver and when; a [`Store`]
//! only remembers: per topic an append-only log of messages with sequence ids, and per
//! subscription id how far it has been acknowledged. The trait is synchronous and knows
//! nothing of connections, time or JSON-RPC, so an embedded database (redb), a remote log
//! (NATS JetStream) or a plain map ([`MemoryStore`]) can stand behind it.
//!
//! # Contract
//! - Sequence ids are per topic, start at 1 and only grow: a topic's next sequence is one
//!   more than the last it *ever* had, even after retention removed old messages and across
//!   restarts of a durable store. [`Store::append`] returns only once the message is durable
//!   (for a durable store).
//! - Retention ([`Retention`]) is enforced by the store: count and bytes on every append, age
//!   when [`Store::expire`] is called with the wall clock. A removed message is simply absent
//!   from [`Store::read`].
//! - A [`SubscriptionState`] is saved whole; the state machine saves it after acks.

use core::fmt;
use core::time::Duration;
use std::borrow::ToOwned;
use std::boxed::Box;
use std::collections::{BTreeMap, BTreeSet};
use std::string::String;
use std::vec::Vec;

use sansrpc::RawValue;

/// How much of a topic's log is kept (seed §11.6). `None` means no bound of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Messages older than this are removed by [`Store::expire`].
    pub max_age: Option<Duration>,
    /// At most this many messages per topic; the oldest go first.
    pub max_count: Option<u64>,
    /// At most this many bytes of message data per topic; the oldest go first. A single
    /// message larger than this is still kept (alone) so that a publish never vanishes
    /// before anyone could read it.
    pub max_bytes: Option<u64>,
}

impl Default for Retention {
    /// The seed's example: one day, 10,000 messages, 10 MiB per topic.
    fn default() -> Self {
        Retention {
            max_age: Some(Duration::from_secs(86_400)),
            max_count: Some(10_000),
            max_bytes: Some(10 * 1024 * 1024),
        }
    }
}

/// Retention for every topic: a default and exact-topic overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// For topics without an override.
    pub default: Retention,
    /// Per exact topic name.
    pub topics: BTreeMap<String, Retention>,
}

impl RetentionPolicy {
    /// The retention that applies to `topic`.
    pub fn for_topic(&self, topic: &str) -> Retention {
        self.topics.get(topic).copied().unwrap_or(self.default)
    }
}

/// One message of a topic's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// The topic it was published to.
    pub topic: String,
    /// Its sequence id within the topic.
    pub sequence: u64,
    /// When it was published: milliseconds since the Unix epoch (wall clock, given by the
    /// caller; the core never reads a clock).
    pub timestamp_ms: u64,
    /// The published `data`, exactly as it was given.
    pub data: Box<RawValue>,
}

/// What a store remembers of one persistent subscription.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriptionState {
    /// The topic subscribed to (an exact topic: persistent subscriptions take no wildcards,
    /// since a sequence id is only meaningful within one topic).
    pub topic: String,
    /// Every sequence up to and including this one is acknowledged (or was removed by
    /// retention). 0 when nothing is.
    pub ack_floor: u64,
    /// Sequences above the floor that were acknowledged out of order, ascending.
    pub acked: Vec<u64>,
    /// When a connection last had the subscription, in milliseconds since the Unix epoch
    /// (wall clock, given by the caller), refreshed now and then while one has it; 0 when
    /// unknown (a record written before this field existed). The hub deletes a record whose
    /// time is older than its idle timeout.
    pub last_seen_ms: u64,
}

impl SubscriptionState {
    /// A fresh subscription to `topic` that starts after `last_sequence` (only messages
    /// published from now on are delivered).
    pub fn new(topic: impl Into<String>, last_sequence: u64) -> Self {
        SubscriptionState {
            topic: topic.into(),
            ack_floor: last_sequence,
            acked: Vec::new(),
            last_seen_ms: 0,
        }
    }

    /// Whether `sequence` is acknowledged.
    pub fn is_acked(&self, sequence: u64) -> bool {
        sequence <= self.ack_floor || self.acked.binary_search(&sequence).is_ok()
    }

    /// Records an acknowledgement of `sequence`; returns `false` if it already was. The floor
    /// advances over every contiguous acknowledged sequence.
    pub fn ack(&mut self, sequence: u64) -> bool {
        if self.is_acked(sequence) {
            return false;
        }
        if let Err(at) = self.acked.binary_search(&sequence) {
            self.acked.insert(at, sequence);
        }
        let mut drained = 0;
        while self.acked.get(drained) == Some(&(self.ack_floor + 1)) {
            self.ack_floor += 1;
            drained += 1;
        }
        self.acked.drain(..drained);
        true
    }

    /// Raises the floor to `sequence` (messages at or below it no longer exist), dropping
    /// out-of-order acks it covers.
    pub fn raise_floor(&mut self, sequence: u64) {
        if sequence > self.ack_floor {
            self.ack_floor = sequence;
            self.acked.retain(|&s| s > sequence);
            while self.acked.first() == Some(&(self.ack_floor + 1)) {
                self.ack_floor += 1;
                self.acked.remove(0);
            }
        }
    }
}

/// The log and the subscription records behind persistent subscriptions.
pub trait Store {
    /// What went wrong; shown to operators, never to peers (a peer sees `-32603`).
    type Error: fmt::Display + fmt::Debug;

    /// Appends `data` to `topic`'s log and returns its sequence id, applying the count and
    /// bytes retention of the topic. Durable when it returns.
    fn append(
        &mut self,
        topic: &str,
        timestamp_ms: u64,
        data: &RawValue,
    ) -> Result<u64, Self::Error>;

    /// The last sequence id `topic` ever had; 0 if nothing was ever published to it.
    fn last_sequence(&mut self, topic: &str) -> Result<u64, Self::Error>;

    /// Appends to `out`, in ascending order, at most `max` messages of `topic` with a
    /// sequence id greater than `after`. Messages removed by retention are absent.
    fn read(
        &mut self,
        topic: &str,
        after: u64,
        max: usize,
        out: &mut Vec<StoredMessage>,
    ) -> Result<(), Self::Error>;

    /// The record of subscription `id`, if it exists.
    fn load_subscription(&mut self, id: &str) -> Result<Option<SubscriptionState>, Self::Error>;

    /// Creates or replaces the record of subscription `id`. Durable when it returns.
    fn save_subscription(&mut self, id: &str, state: &SubscriptionState)
        -> Result<(), Self::Error>;

    /// Forgets subscription `id` (no error if it does not exist).
    fn delete_subscription(&mut self, id: &str) -> Result<(), Self::Error>;

    /// Appends to `out` the id and [`SubscriptionState::last_seen_ms`] of every subscription
    /// record, in no particular order. The hub calls it to count the records (to bound how
    /// many ids peers may create) and, now and then, to find the idle ones.
    fn subscriptions(&mut self, out: &mut Vec<(String, u64)>) -> Result<(), Self::Error>;

    /// Removes every message older than its topic's `max_age`, given the wall clock in
    /// milliseconds since the Unix epoch.
    fn expire(&mut self, now_ms: u64) -> Result<(), Self::Error>;

    /// Whether an operation may wait on I/O (a disk, a network): `true` unless the store
    /// lives in memory. A server performs the operations of a store that waits off its
    /// locks, on a worker of their own, and those of one that does not inline, where the
    /// handoff would cost more than the operation.
    fn waits(&self) -> bool {
        true
    }
}

/// A store chosen at run time (an embedded one, a remote one, memory): any [`Store`] behind
/// one type, with its errors as text. Made by [`boxed`].
pub type DynStore = Box<dyn Store<Error = String> + Send>;

/// `store` as a [`DynStore`].
pub fn boxed<S>(store: S) -> DynStore
where
    S: Store + Send + 'static,
{
    Box::new(TextErrors(store))
}

/// A store whose errors are shown as text.
struct TextErrors<S>(S);

impl<S: Store> Store for TextErrors<S> {
    type Error = String;

    fn append(&mut self, topic: &str, timestamp_ms: u64, data: &RawValue) -> Result<u64, String> {
        self.0.append(topic, timestamp_ms, data).map_err(text)
    }

    fn last_sequence(&mut self, topic: &str) -> Result<u64, String> {
        self.0.last_sequence(topic).map_err(text)
    }

    fn read(
        &mut self,
        topic: &str,
        after: u64,
        max: usize,
        out: &mut Vec<StoredMessage>,
    ) -> Result<(), String> {
        self.0.read(topic, after, max, out).map_err(text)
    }

    fn load_subscription(&mut self, id: &str) -> Result<Option<SubscriptionState>, String> {
        self.0.load_subscription(id).map_err(text)
    }

    fn save_subscription(&mut self, id: &str, state: &SubscriptionState) -> Result<(), String> {
        self.0.save_subscription(id, state).map_err(text)
    }

    fn delete_subscription(&mut self, id: &str) -> Result<(), String> {
        self.0.delete_subscription(id).map_err(text)
    }

    fn subscriptions(&mut self, out: &mut Vec<(String, u64)>) -> Result<(), String> {
        self.0.subscriptions(out).map_err(text)
    }

    fn expire(&mut self, now_ms: u64) -> Result<(), String> {
        self.0.expire(now_ms).map_err(text)
    }

    fn waits(&self) -> bool {
        self.0.waits()
    }
}

fn text(e: impl fmt::Display) -> String {
    std::format!("{e}")
}

impl<S: Store + ?Sized> Store for Box<S> {
    type Error = S::Error;

    fn append(&mut self, topic: &str, timestamp_ms: u64, data: &RawValue) -> Result<u64, S::Error> {
        (**self).append(topic, timestamp_ms, data)
    }

    fn last_sequence(&mut self, topic: &str) -> Result<u64, S::Error> {
        (**self).last_sequence(topic)
    }

    fn read(
        &mut self,
        topic: &str,
        after: u64,
        max: usize,
        out: &mut Vec<StoredMessage>,
    ) -> Result<(), S::Error> {
        (**self).read(topic, after, max, out)
    }

    fn load_subscription(&mut self, id: &str) -> Result<Option<SubscriptionState>, S::Error> {
        (**self).load_subscription(id)
    }

    fn save_subscription(&mut self, id: &str, state: &SubscriptionState) -> Result<(), S::Error> {
        (**self).save_subscription(id, state)
    }

    fn delete_subscription(&mut self, id: &str) -> Result<(), S::Error> {
        (**self).delete_subscription(id)
    }

    fn subscriptions(&mut self, out: &mut Vec<(String, u64)>) -> Result<(), S::Error> {
        (**self).subscriptions(out)
    }

    fn expire(&mut self, now_ms: u64) -> Result<(), S::Error> {
        (**self).expire(now_ms)
    }

    fn waits(&self) -> bool {
        (**self).waits()
    }
}

/// The bounds a store keeps on all its topics together, and the bookkeeping they need: how
/// many topics there are, their bytes (data and topic name per message), each topic's
/// recency, and the highest sequence a forgotten topic reached. Shared by [`MemoryStore`]
/// and the embedded durable store so that both forget the same topics.
///
/// The rule: beyond [`TopicBudget::max_topics`] topics or [`TopicBudget::max_total_bytes`]
/// bytes, the topic appended to least recently is forgotten with its messages (never the one
/// just appended while another is left; if it is the only one, its oldest messages go and
/// the newest stays). A topic seen for the first time (or again after being forgotten)
/// starts its sequence ids at [`TopicBudget::forgotten_max`], so sequence ids only grow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicBudget {
    max_topics: usize,
    max_total_bytes: u64,
    /// Each topic's recency.
    touched: BTreeMap<String, u64>,
    /// The same, ordered by recency.
    order: BTreeSet<(u64, String)>,
    total_bytes: u64,
    /// The highest recency given so far.
    clock: u64,
    forgotten_max: u64,
}

impl TopicBudget {
    /// How many topics a store keeps unless told otherwise.
    pub const DEFAULT_MAX_TOPICS: usize = 10_000;

    /// An empty budget of `max_topics` topics (at least 1) and `max_total_bytes` bytes.
    pub fn new(max_topics: usize, max_total_bytes: u64) -> Self {
        TopicBudget {
            max_topics: max_topics.max(1),
            max_total_bytes,
            touched: BTreeMap::new(),
            order: BTreeSet::new(),
            total_bytes: 0,
            clock: 0,
            forgotten_max: 0,
        }
    }

    /// The most topics kept.
    pub fn max_topics(&self) -> usize {
        self.max_topics
    }

    /// Sets the most topics kept (at least 1).
    pub fn set_max_topics(&mut self, max: usize) {
        self.max_topics = max.max(1);
    }

    /// The most bytes kept across all topics.
    pub fn max_total_bytes(&self) -> u64 {
        self.max_total_bytes
    }

    /// Sets the most bytes kept across all topics.
    pub fn set_max_total_bytes(&mut self, max: u64) {
        self.max_total_bytes = max;
    }

    /// Bytes of messages (data and topic names) held now.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// How many topics are held now.
    pub fn topic_count(&self) -> usize {
        self.touched.len()
    }

    /// The highest sequence id a forgotten topic reached: where a new topic starts.
    pub fn forgotten_max(&self) -> u64 {
        self.forgotten_max
    }

    /// Whether `topic` is held.
    pub fn contains(&self, topic: &str) -> bool {
        self.touched.contains_key(topic)
    }

    /// Records `topic` as held with `recency` and `bytes` (data and topic name per message),
    /// as read back from a durable store at open.
    pub fn restore(&mut self, topic: &str, recency: u64, bytes: u64) {
        self.set_recency(topic, recency);
        self.total_bytes += bytes;
    }

    /// Records the highest sequence a forgotten topic reached, as read back at open.
    pub fn restore_forgotten_max(&mut self, sequence: u64) {
        self.forgotten_max = self.forgotten_max.max(sequence);
    }

    /// `topic` is appended to now (held from now on if it was not): returns its new recency.
    pub fn touch(&mut self, topic: &str) -> u64 {
        let recency = self.clock + 1;
        self.set_recency(topic, recency);
        recency
    }

    fn set_recency(&mut self, topic: &str, recency: u64) {
        if let Some(old) = self.touched.insert(topic.into(), recency) {
            self.order.remove(&(old, topic.into()));
        }
        self.order.insert((recency, topic.into()));
        self.clock = self.clock.max(recency);
    }

    /// A message of `topic` with `data_len` bytes of data was stored.
    pub fn added(&mut self, topic: &str, data_len: u64) {
        self.total_bytes += topic.len() as u64 + data_len;
    }

    /// `count` messages of `topic` with `data_bytes` bytes of data in all were removed.
    pub fn removed(&mut self, topic: &str, count: u64, data_bytes: u64) {
        self.total_bytes = self
            .total_bytes
            .saturating_sub(topic.len() as u64 * count + data_bytes);
    }

    /// Whether a topic must be forgotten before `topic` is added.
    pub fn needs_room_for(&self, topic: &str) -> bool {
        !self.contains(topic) && self.touched.len() >= self.max_topics
    }

    /// Whether the bytes held are over the bound.
    pub fn over_bytes(&self) -> bool {
        self.total_bytes > self.max_total_bytes
    }

    /// The topic to forget next: the least recently appended one, unless it is the only one.
    /// `room` (for a topic about to be added) allows forgetting the only one.
    pub fn to_forget(&self, room: bool) -> Option<&str> {
        if !room && self.touched.len() <= 1 {
            return None;
        }
        self.order.first().map(|(_, name)| name.as_str())
    }

    /// `topic` was forgotten: its last sequence was `last`, and it held `count` messages of
    /// `data_bytes` data in all.
    pub fn forgot(&mut self, topic: &str, last: u64, count: u64, data_bytes: u64) {
        if let Some(old) = self.touched.remove(topic) {
            self.order.remove(&(old, topic.into()));
        }
        self.forgotten_max = self.forgotten_max.max(last);
        self.total_bytes = self
            .total_bytes
            .saturating_sub(data_bytes + topic.len() as u64 * count);
    }
}

/// A [`Store`] in memory: for tests, `no_std` targets and servers that need no durability.
/// Retention applies as for a durable store.
///
/// Memory stays bounded when peers publish to ever new topics: at most
/// [`MemoryStore::DEFAULT_MAX_TOPICS`] topics (or [`MemoryStore::with_max_topics`]) are kept,
/// holding at most [`MemoryStore::DEFAULT_MAX_TOTAL_BYTES`] of message data and topic names
/// in all (or [`MemoryStore::with_max_total_bytes`]); beyond either, the topic appended to
/// least recently is forgotten with its messages (and if the topic just appended to is the
/// only one, its oldest messages go, the newest always stays). Per-topic retention alone
/// would multiply out to 10,000 topics × 10 MiB. Sequence ids still only grow: a topic
/// seen for the first time (or again after being forgotten) starts above every sequence id
/// a forgotten topic reached.
#[derive(Debug)]
pub struct MemoryStore {
    retention: RetentionPolicy,
    topics: BTreeMap<String, MemoryTopic>,
    subscriptions: BTreeMap<String, SubscriptionState>,
    budget: TopicBudget,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            retention: RetentionPolicy::default(),
            topics: BTreeMap::new(),
            subscriptions: BTreeMap::new(),
            budget: TopicBudget::new(
                MemoryStore::DEFAULT_MAX_TOPICS,
                MemoryStore::DEFAULT_MAX_TOTAL_BYTES,
            ),
        }
    }
}

#[derive(Debug, Default)]
struct MemoryTopic {
    last: u64,
    bytes: u64,
    messages: std::collections::VecDeque<StoredMessage>,
}

impl MemoryStore {
    /// How many topics a store keeps unless told otherwise.
    pub const DEFAULT_MAX_TOPICS: usize = TopicBudget::DEFAULT_MAX_TOPICS;

    /// How many bytes of messages (data and topic names) a store keeps in all unless told
    /// otherwise: 256 MiB.
    pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 256 * 1024 * 1024;

    /// An empty store with the given retention.
    pub fn new(retention: RetentionPolicy) -> Self {
        MemoryStore {
            retention,
            ..MemoryStore::default()
        }
    }

    /// Keeps at most `max` topics (at least 1).
    pub fn with_max_topics(mut self, max: usize) -> Self {
        self.budget.set_max_topics(max);
        self
    }

    /// Keeps at most `max` bytes of messages across all topics (data and topic names); the
    /// newest message is kept even when it alone is larger.
    pub fn with_max_total_bytes(mut self, max: u64) -> Self {
        self.budget.set_max_total_bytes(max);
        self
    }

    /// Bytes of messages (data and topic names) the store holds now.
    pub fn total_bytes(&self) -> u64 {
        self.budget.total_bytes()
    }

    /// How many topics the store holds now.
    pub fn topic_count(&self) -> usize {
        self.topics.len()
    }

    /// Forgets the topic the budget names; false when there is none.
    fn forget_one(&mut self, room: bool) -> bool {
        let Some(name) = self.budget.to_forget(room).map(String::from) else {
            return false;
        };
        if let Some(topic) = self.topics.remove(&name) {
            let count = topic.messages.len() as u64;
            self.budget.forgot(&name, topic.last, count, topic.bytes);
        }
        true
    }

    /// Removes the oldest message of `topic`'s log, unless it is the last one.
    fn pop_oldest(budget: &mut TopicBudget, log: &mut MemoryTopic) -> bool {
        if log.messages.len() <= 1 {
            return false;
        }
        if let Some(old) = log.messages.pop_front() {
            log.bytes -= old.data.get().len() as u64;
            budget.removed(&old.topic, 1, old.data.get().len() as u64);
        }
        true
    }
}

/// A [`MemoryStore`] never fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Never {}

impl fmt::Display for Never {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {}
    }
}

impl Store for MemoryStore {
    type Error = Never;

    fn append(&mut self, topic: &str, timestamp_ms: u64, data: &RawValue) -> Result<u64, Never> {
        let retention = self.retention.for_topic(topic);
        while self.budget.needs_room_for(topic) && self.forget_one(true) {}
        let forgotten_max = self.budget.forgotten_max();
        self.budget.touch(topic);
        let log = self
            .topics
            .entry(topic.into())
            .or_insert_with(|| MemoryTopic {
                last: forgotten_max,
                ..MemoryTopic::default()
            });
        log.last += 1;
        log.bytes += data.get().len() as u64;
        self.budget.added(topic, data.get().len() as u64);
        log.messages.push_back(StoredMessage {
            topic: topic.into(),
            sequence: log.last,
            timestamp_ms,
            data: data.to_owned(),
        });
        while (retention
            .max_count
            .is_some_and(|max| log.messages.len() as u64 > max)
            || retention.max_bytes.is_some_and(|max| log.bytes > max))
            && MemoryStore::pop_oldest(&mut self.budget, log)
        {}
        let last = log.last;
        // Over the total: forget whole topics, least recently appended first, then this
        // topic's oldest messages.
        while self.budget.over_bytes() && self.forget_one(false) {}
        if let Some(log) = self.topics.get_mut(topic) {
            while self.budget.over_bytes() && MemoryStore::pop_oldest(&mut self.budget, log) {}
        }
        Ok(last)
    }

    fn last_sequence(&mut self, topic: &str) -> Result<u64, Never> {
        Ok(self
            .topics
            .get(topic)
            .map_or(self.budget.forgotten_max(), |t| t.last))
    }

    fn read(
        &mut self,
        topic: &str,
        after: u64,
        max: usize,
        out: &mut Vec<StoredMessage>,
    ) -> Result<(), Never> {
        if let Some(log) = self.topics.get(topic) {
            let start = log.messages.partition_point(|m| m.sequence <= after);
            out.extend(log.messages.range(start..).take(max).cloned());
        }
        Ok(())
    }

    fn load_subscription(&mut self, id: &str) -> Result<Option<SubscriptionState>, Never> {
        Ok(self.subscriptions.get(id).cloned())
    }

    fn save_subscription(&mut self, id: &str, state: &SubscriptionState) -> Result<(), Never> {
        self.subscriptions.insert(id.into(), state.clone());
        Ok(())
    }

    fn delete_subscription(&mut self, id: &str) -> Result<(), Never> {
        self.subscriptions.remove(id);
        Ok(())
    }

    fn subscriptions(&mut self, out: &mut Vec<(String, u64)>) -> Result<(), Never> {
        out.extend(
            self.subscriptions
                .iter()
                .map(|(id, s)| (id.clone(), s.last_seen_ms)),
        );
        Ok(())
    }

    fn expire(&mut self, now_ms: u64) -> Result<(), Never> {
        for (name, log) in &mut self.topics {
            let Some(max_age) = self.retention.for_topic(name).max_age else {
                continue;
            };
            let cutoff = now_ms.saturating_sub(max_age.as_millis() as u64);
            while log
                .messages
                .front()
                .is_some_and(|m| m.timestamp_ms < cutoff)
            {
                if let Some(old) = log.messages.pop_front() {
                    log.bytes -= old.data.get().len() as u64;
                    self.budget
                        .removed(&old.topic, 1, old.data.get().len() as u64);
                }
            }
        }
        Ok(())
    }

    fn waits(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.into()).unwrap()
    }

    #[test]
    fn acks_advance_the_floor_over_contiguous_sequences() {
        let mut s = SubscriptionState::new("t", 2);
        assert!(s.ack(4));
        assert_eq!((s.ack_floor, s.acked.as_slice()), (2, &[4][..]));
        assert!(!s.ack(4));
        assert!(!s.ack(1));
        assert!(s.ack(3));
        assert_eq!((s.ack_floor, s.acked.len()), (4, 0));
        s.ack(7);
        s.raise_floor(5);
        assert_eq!((s.ack_floor, s.acked.as_slice()), (5, &[7][..]));
        s.raise_floor(6);
        assert_eq!((s.ack_floor, s.acked.len()), (7, 0));
    }

    #[test]
    fn memory_store_sequences_continue_past_retention() {
        let mut policy = RetentionPolicy::default();
        policy.default.max_count = Some(2);
        let mut store = MemoryStore::new(policy);
        for i in 0..5 {
            assert_eq!(store.append("a", i, &raw("1")).unwrap(), i + 1);
        }
        let mut out = Vec::new();
        store.read("a", 0, 10, &mut out).unwrap();
        assert_eq!(out.iter().map(|m| m.sequence).collect::<Vec<_>>(), [4, 5]);
        assert_eq!(store.last_sequence("a").unwrap(), 5);
        assert_eq!(store.last_sequence("b").unwrap(), 0);
    }

    #[test]
    fn memory_store_bounds_the_bytes_of_all_topics_together() {
        // Each message: a 1-byte topic name and 100 bytes of data.
        let data = raw(&std::format!("\"{}\"", "x".repeat(98)));
        let mut store = MemoryStore::new(RetentionPolicy::default()).with_max_total_bytes(1_000);
        // Ever new topics, each far under its own retention: the total still holds.
        for i in 0..500u32 {
            let topic = std::format!("{}", char::from(b'a' + (i % 26) as u8));
            store.append(&topic, 0, &data).unwrap();
            assert!(store.total_bytes() <= 1_000, "{}", store.total_bytes());
        }
        assert!(store.total_bytes() > 900, "keeps as much as fits");
        // The topic appended to last keeps its newest message; one topic over the total
        // loses its oldest messages, never the newest.
        let mut out = Vec::new();
        store.read("z", 0, 100, &mut out).unwrap();
        let newest = store.last_sequence("z").unwrap();
        assert_eq!(out.last().map(|m| m.sequence), Some(newest));
        let big = raw(&std::format!("\"{}\"", "y".repeat(5_000)));
        let before = store.last_sequence("q").unwrap();
        assert_eq!(store.append("q", 0, &big).unwrap(), before + 1);
        assert_eq!(
            store.topic_count(),
            1,
            "every other topic went to make room"
        );
        out.clear();
        store.read("q", 0, 100, &mut out).unwrap();
        assert_eq!(
            out.len(),
            1,
            "a message larger than the total is kept alone"
        );
        // Expiry keeps the count right.
        let mut store = MemoryStore::new(RetentionPolicy {
            default: Retention {
                max_age: Some(Duration::from_millis(10)),
                ..Retention::default()
            },
            ..RetentionPolicy::default()
        });
        store.append("a", 0, &data).unwrap();
        store.append("bb", 0, &data).unwrap();
        assert_eq!(store.total_bytes(), 203);
        store.expire(1_000).unwrap();
        assert_eq!(store.total_bytes(), 0);
    }

    #[test]
    fn memory_store_forgets_old_topics_and_sequences_still_grow() {
        let mut store = MemoryStore::new(RetentionPolicy::default()).with_max_topics(2);
        assert_eq!(store.append("a", 0, &raw("1")).unwrap(), 1);
        assert_eq!(store.append("a", 0, &raw("1")).unwrap(), 2);
        assert_eq!(store.append("b", 0, &raw("1")).unwrap(), 1);
        assert_eq!(store.append("a", 0, &raw("1")).unwrap(), 3);
        // "b" was appended to least recently: it goes, and "c" starts above it.
        assert_eq!(store.append("c", 0, &raw("1")).unwrap(), 2);
        assert_eq!(store.topic_count(), 2);
        let mut out = Vec::new();
        store.read("b", 0, 10, &mut out).unwrap();
        assert!(out.is_empty());
        // "a" goes next (the least recent now): coming back, it continues above 3.
        assert_eq!(store.append("d", 0, &raw("1")).unwrap(), 4);
        assert_eq!(store.last_sequence("a").unwrap(), 3);
        assert_eq!(store.append("a", 0, &raw("1")).unwrap(), 4);
        for i in 0..1000 {
            store.append(&std::format!("t{i}"), 0, &raw("1")).unwrap();
        }
        assert_eq!(
            store.topic_count(),
            2,
            "bounded whatever the peers publish to"
        );
    }

    #[test]
    fn a_boxed_store_is_the_store_behind_it() {
        let mut store = boxed(MemoryStore::new(RetentionPolicy::default()));
        assert_eq!(store.append("a", 0, &raw("1")).unwrap(), 1);
        assert_eq!(store.last_sequence("a").unwrap(), 1);
        store
            .save_subscription("s", &SubscriptionState::new("a", 1))
            .unwrap();
        assert_eq!(store.load_subscription("s").unwrap().unwrap().ack_floor, 1);
    }

    #[test]
    fn memory_store_bytes_and_age() {
        let mut policy = RetentionPolicy::default();
        policy.default.max_bytes = Some(10);
        policy.default.max_age = Some(Duration::from_millis(100));
        let mut store = MemoryStore::new(policy);
        store.append("a", 1000, &raw("\"12345\"")).unwrap();
        store.append("a", 1050, &raw("\"12345\"")).unwrap();
        let mut out = Vec::new();
        store.read("a", 0, 10, &mut out).unwrap();
        assert_eq!(out.len(), 1, "7 + 7 bytes exceed 10: the oldest goes");
        store.append("a", 1100, &raw("\"a\"")).unwrap();
        store.expire(1160).unwrap();
        out.clear();
        store.read("a", 0, 10, &mut out).unwrap();
        assert_eq!(out.iter().map(|m| m.sequence).collect::<Vec<_>>(), [3]);
    }
}
