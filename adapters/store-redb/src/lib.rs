//! The embedded durable store behind sansrpc persistent subscriptions: one
//! [redb](https://www.redb.org) file per server.
//!
//! [`RedbStore`] implements [`sansrpc_pubsub::store::Store`]. Every [`Store::append`],
//! [`Store::save_subscription`] and [`Store::delete_subscription`] is one committed redb write
//! transaction with redb's default durability (the file is synced before commit returns), so
//! whatever returned `Ok` survives a crash of the process or of the machine.
//!
//! # Layout
//! - `log`: `(topic, sequence) -> (timestamp_ms, data)`, one row per retained message.
//! - `topics`: `topic -> (last_sequence, retained_count, retained_bytes)`; the last sequence
//!   is never lowered, so sequences continue after retention removed every message and after
//!   a restart.
//! - `subscriptions`: `id -> (topic, ack_floor, out-of-order acks as little-endian u64s)`.
//! - `topic_touched`: `topic -> n`, the store's append count at the topic's last append (its
//!   recency, for forgetting the least recently appended topic first).
//! - `meta`: `"forgotten_max" -> the highest sequence a forgotten topic reached`.
//! - `subscription_seen`: `id -> last_seen_ms`, written with the record (a table of its own so
//!   that files written before it existed still open; a record without a row here loads with
//!   `last_seen_ms` 0, unknown).
//!
//! # Bounds
//! Besides per-topic retention, the store keeps at most [`RedbStore::DEFAULT_MAX_TOPICS`]
//! topics ([`RedbStore::with_max_topics`]) holding at most
//! [`RedbStore::DEFAULT_MAX_TOTAL_BYTES`] of messages in all, data and topic name per
//! message ([`RedbStore::with_max_total_bytes`]): beyond either, the topic appended to least
//! recently is forgotten with its messages in the same transaction (and if the topic just
//! appended to is the only one, its oldest messages go; the newest always stays). Per-topic
//! retention alone would let peers publishing to ever new topics fill the disk (10,000
//! topics × 10 MiB). Sequence ids still only grow: a topic seen for the first time (or again
//! after being forgotten) starts above every sequence a forgotten topic reached. The file
//! itself does not shrink when messages go: redb reuses the freed pages.
//!
//! # SSE events
//! [`RedbEventStore`] (module [`events`]) implements [`sansrpc_mcp::streamable::EventStore`], the
//! store of the events MCP's Streamable HTTP machine sends, so a client resuming with
//! `Last-Event-ID` after a server restart gets what it missed. Unlike [`RedbStore`] it does not
//! commit per call: it writes into one open transaction that
//! [`EventStore::flush`](sansrpc_mcp::streamable::EventStore::flush) (once per driver turn) commits.
//! Its tables (`sse_*`) are its own; give it a file of its own.
//!
//! # A2A tasks
//! `RedbTaskStore` (feature `a2a`, module `tasks`) implements sansrpc-a2a's `TaskStore`:
//! an A2A agent's tasks, with their history and artifacts, kept across a restart.
//!
//! # Example
//! ```
//! use sansrpc_pubsub::store::{RetentionPolicy, Store, SubscriptionState};
//! use sansrpc::RawValue;
//! use sansrpc_store_redb::RedbStore;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("sansrpc.redb");
//! let mut store = RedbStore::open(&path, RetentionPolicy::default()).unwrap();
//! let data = RawValue::from_json(r#"{"order":1}"#).unwrap();
//! assert_eq!(store.append("orders", 1_700_000_000_000, data).unwrap(), 1);
//! let mut sub = SubscriptionState::new("orders", 0);
//! sub.ack(1);
//! store.save_subscription("worker-1", &sub).unwrap();
//! drop(store);
//!
//! let mut store = RedbStore::open(&path, RetentionPolicy::default()).unwrap();
//! assert_eq!(store.append("orders", 1_700_000_000_001, data).unwrap(), 2);
//! assert_eq!(store.load_subscription("worker-1").unwrap().unwrap().ack_floor, 1);
//! ```
#![deny(missing_docs)]

use std::path::Path;

pub mod events;
pub use events::RedbEventStore;
#[cfg(feature = "a2a")]
pub mod tasks;
#[cfg(feature = "a2a")]
pub use tasks::RedbTaskStore;

use redb::{Database, ReadableTable, TableDefinition, WriteTransaction};
use sansrpc::RawValue;
use sansrpc_pubsub::store::{
    RetentionPolicy, Store, StoredMessage, SubscriptionState, TopicBudget,
};

const LOG: TableDefinition<(&str, u64), (u64, &str)> = TableDefinition::new("log");
const TOPICS: TableDefinition<&str, (u64, u64, u64)> = TableDefinition::new("topics");
const SUBSCRIPTIONS: TableDefinition<&str, (&str, u64, &[u8])> =
    TableDefinition::new("subscriptions");
const SEEN: TableDefinition<&str, u64> = TableDefinition::new("subscription_seen");
const TOUCHED: TableDefinition<&str, u64> = TableDefinition::new("topic_touched");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const FORGOTTEN_MAX: &str = "forgotten_max";

/// What went wrong in a [`RedbStore`] or a [`RedbEventStore`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The database file could not be opened, read or written.
    #[error("redb store: {0}")]
    Redb(#[source] Box<redb::Error>),
    /// A stored row did not decode (the file was written by something else, or damaged).
    #[error("redb store: corrupt row: {0}")]
    Corrupt(&'static str),
}

macro_rules! from_redb {
    ($($ty:ty),*) => {$(
        impl From<$ty> for Error {
            fn from(e: $ty) -> Self {
                Error::Redb(Box::new(e.into()))
            }
        }
    )*};
}
from_redb!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

/// A [`Store`] in one redb file: durable, single process (redb locks the file). Bounded in
/// topics and total bytes (see the [crate docs](crate#bounds)).
pub struct RedbStore {
    db: Database,
    retention: RetentionPolicy,
    /// What the file holds, kept beside it (the file is this process's alone).
    budget: TopicBudget,
}

/// Reads the bookkeeping of the topics in the file into `budget`.
fn load_budget(db: &Database, budget: &mut TopicBudget) -> Result<(), Error> {
    let mut loaded = TopicBudget::new(budget.max_topics(), budget.max_total_bytes());
    let txn = db.begin_read()?;
    let touched = txn.open_table(TOUCHED)?;
    for row in txn.open_table(TOPICS)?.iter()? {
        let (name, meta) = row?;
        let (name, (_, count, bytes)) = (name.value(), meta.value());
        let recency = touched.get(name)?.map_or(0, |v| v.value());
        loaded.restore(name, recency, bytes + name.len() as u64 * count);
    }
    if let Some(max) = txn.open_table(META)?.get(FORGOTTEN_MAX)? {
        loaded.restore_forgotten_max(max.value());
    }
    *budget = loaded;
    Ok(())
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("retention", &self.retention)
            .field("max_topics", &self.budget.max_topics())
            .field("max_total_bytes", &self.budget.max_total_bytes())
            .field("topics", &self.budget.topic_count())
            .field("total_bytes", &self.budget.total_bytes())
            .finish_non_exhaustive()
    }
}

impl RedbStore {
    /// How many topics a store keeps unless told otherwise.
    pub const DEFAULT_MAX_TOPICS: usize = TopicBudget::DEFAULT_MAX_TOPICS;

    /// How many bytes of messages (data and topic names) a store keeps in all unless told
    /// otherwise: 1 GiB (on disk; redb's page cache is what the process holds in memory).
    pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 1024 * 1024 * 1024;

    /// Opens the store at `path`, creating the file if it does not exist.
    ///
    /// After a crash redb checks and repairs the file here, which may take a moment on a
    /// large file. Fails if another process (or another `RedbStore`) has the file open.
    pub fn open(path: impl AsRef<Path>, retention: RetentionPolicy) -> Result<Self, Error> {
        let db = Database::create(path)?;
        let txn = db.begin_write()?;
        txn.open_table(LOG)?;
        txn.open_table(TOPICS)?;
        txn.open_table(SUBSCRIPTIONS)?;
        txn.open_table(SEEN)?;
        txn.open_table(TOUCHED)?;
        txn.open_table(META)?;
        txn.commit()?;
        let mut budget = TopicBudget::new(
            RedbStore::DEFAULT_MAX_TOPICS,
            RedbStore::DEFAULT_MAX_TOTAL_BYTES,
        );
        load_budget(&db, &mut budget)?;
        Ok(RedbStore {
            db,
            retention,
            budget,
        })
    }

    /// Keeps at most `max` topics (at least 1), from the next append on.
    pub fn with_max_topics(mut self, max: usize) -> Self {
        self.budget.set_max_topics(max);
        self
    }

    /// Keeps at most `max` bytes of messages across all topics (data and topic names), from
    /// the next append on; the newest message is kept even when it alone is larger.
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
        self.budget.topic_count()
    }

    /// The retention policy this store applies.
    pub fn retention(&self) -> &RetentionPolicy {
        &self.retention
    }

    /// Replaces the retention policy; it applies from the next append or expire on.
    pub fn set_retention(&mut self, retention: RetentionPolicy) {
        self.retention = retention;
    }

    /// How many messages of `topic` are retained, and their data bytes.
    pub fn retained(&self, topic: &str) -> Result<(u64, u64), Error> {
        let txn = self.db.begin_read()?;
        let topics = txn.open_table(TOPICS)?;
        Ok(topics
            .get(topic)?
            .map_or((0, 0), |m| (m.value().1, m.value().2)))
    }
}

type LogTable<'t> = redb::Table<'t, (&'static str, u64), (u64, &'static str)>;

/// Removes the oldest retained message of `topic` inside the transaction, taking it off
/// `held` (the topic's message count and data bytes) and the budget.
fn pop_oldest(
    log: &mut LogTable<'_>,
    topic: &str,
    held: &mut (u64, u64),
    budget: &mut TopicBudget,
) -> Result<(), Error> {
    let (sequence, len) = match log.range((topic, 0)..=(topic, u64::MAX))?.next() {
        Some(row) => {
            let (key, value) = row?;
            (key.value().1, value.value().1.len() as u64)
        }
        None => return Err(Error::Corrupt("topic counts more messages than its log")),
    };
    log.remove((topic, sequence))?;
    held.0 -= 1;
    held.1 = held.1.saturating_sub(len);
    budget.removed(topic, 1, len);
    Ok(())
}

/// Forgets the topic the budget names with its messages, inside the transaction; false when
/// there is none (`room`: see [`TopicBudget::to_forget`]).
fn forget_one(
    budget: &mut TopicBudget,
    room: bool,
    topics: &mut redb::Table<'_, &'static str, (u64, u64, u64)>,
    log: &mut LogTable<'_>,
    touched: &mut redb::Table<'_, &'static str, u64>,
) -> Result<bool, Error> {
    let Some(name) = budget.to_forget(room).map(str::to_owned) else {
        return Ok(false);
    };
    let name = name.as_str();
    let (last, count, bytes) = topics.remove(name)?.map_or((0, 0, 0), |m| m.value());
    budget.forgot(name, last, count, bytes);
    log.retain_in((name, 0)..=(name, u64::MAX), |_, _| false)?;
    touched.remove(name)?;
    Ok(true)
}

fn subscription_row(state: &SubscriptionState) -> Vec<u8> {
    state.acked.iter().flat_map(|s| s.to_le_bytes()).collect()
}

fn commit(txn: WriteTransaction) -> Result<(), Error> {
    txn.commit()?;
    Ok(())
}

impl RedbStore {
    /// [`Store::append`] in one transaction, keeping the bookkeeping as it goes (reloaded by
    /// the caller if the transaction fails).
    fn append_in_txn(
        &mut self,
        topic: &str,
        timestamp_ms: u64,
        data: &RawValue,
    ) -> Result<u64, Error> {
        let retention = self.retention.for_topic(topic);
        let len = data.get().len() as u64;
        let budget = &mut self.budget;
        let forgotten_before = budget.forgotten_max();
        let txn = self.db.begin_write()?;
        let sequence = {
            let mut topics = txn.open_table(TOPICS)?;
            let mut log = txn.open_table(LOG)?;
            let mut touched = txn.open_table(TOUCHED)?;
            while budget.needs_room_for(topic)
                && forget_one(budget, true, &mut topics, &mut log, &mut touched)?
            {}
            let (last, count, bytes) = topics
                .get(topic)?
                .map_or((budget.forgotten_max(), 0, 0), |m| m.value());
            let sequence = last + 1;
            log.insert((topic, sequence), (timestamp_ms, data.get()))?;
            touched.insert(topic, budget.touch(topic))?;
            budget.added(topic, len);
            let mut held = (count + 1, bytes + len);
            // The newest message always stays, even when it alone exceeds max_bytes.
            while held.0 > 1
                && (retention.max_count.is_some_and(|max| held.0 > max)
                    || retention.max_bytes.is_some_and(|max| held.1 > max))
            {
                pop_oldest(&mut log, topic, &mut held, budget)?;
            }
            // Over the total: forget whole topics, least recently appended first (never this
            // one while another is left), then this topic's oldest messages.
            while budget.over_bytes()
                && forget_one(budget, false, &mut topics, &mut log, &mut touched)?
            {}
            while budget.over_bytes() && held.0 > 1 {
                pop_oldest(&mut log, topic, &mut held, budget)?;
            }
            topics.insert(topic, (sequence, held.0, held.1))?;
            if budget.forgotten_max() != forgotten_before {
                txn.open_table(META)?
                    .insert(FORGOTTEN_MAX, budget.forgotten_max())?;
            }
            sequence
        };
        commit(txn)?;
        Ok(sequence)
    }
}

impl Store for RedbStore {
    type Error = Error;

    fn append(&mut self, topic: &str, timestamp_ms: u64, data: &RawValue) -> Result<u64, Error> {
        let result = self.append_in_txn(topic, timestamp_ms, data);
        if result.is_err() {
            // The transaction did not commit: the bookkeeping is the file's again.
            let _ = load_budget(&self.db, &mut self.budget);
        }
        result
    }

    fn last_sequence(&mut self, topic: &str) -> Result<u64, Error> {
        let txn = self.db.begin_read()?;
        let topics = txn.open_table(TOPICS)?;
        Ok(topics
            .get(topic)?
            .map_or(self.budget.forgotten_max(), |m| m.value().0))
    }

    fn read(
        &mut self,
        topic: &str,
        after: u64,
        max: usize,
        out: &mut Vec<StoredMessage>,
    ) -> Result<(), Error> {
        if max == 0 || after == u64::MAX {
            return Ok(());
        }
        let txn = self.db.begin_read()?;
        let log = txn.open_table(LOG)?;
        for row in log.range((topic, after + 1)..=(topic, u64::MAX))?.take(max) {
            let (key, value) = row?;
            let (timestamp_ms, data) = value.value();
            let data = RawValue::from_string(data.to_owned())
                .map_err(|_| Error::Corrupt("a logged message is not valid JSON"))?;
            out.push(StoredMessage {
                topic: topic.to_owned(),
                sequence: key.value().1,
                timestamp_ms,
                data,
            });
        }
        Ok(())
    }

    fn load_subscription(&mut self, id: &str) -> Result<Option<SubscriptionState>, Error> {
        let txn = self.db.begin_read()?;
        let subscriptions = txn.open_table(SUBSCRIPTIONS)?;
        let Some(row) = subscriptions.get(id)? else {
            return Ok(None);
        };
        let last_seen_ms = txn.open_table(SEEN)?.get(id)?.map_or(0, |v| v.value());
        let (topic, ack_floor, acked) = row.value();
        if acked.len() % 8 != 0 {
            return Err(Error::Corrupt("a subscription's acks are not whole u64s"));
        }
        let acked = acked
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
            .collect();
        Ok(Some(SubscriptionState {
            topic: topic.to_owned(),
            ack_floor,
            acked,
            last_seen_ms,
        }))
    }

    fn save_subscription(&mut self, id: &str, state: &SubscriptionState) -> Result<(), Error> {
        let acked = subscription_row(state);
        let txn = self.db.begin_write()?;
        txn.open_table(SUBSCRIPTIONS)?.insert(
            id,
            (state.topic.as_str(), state.ack_floor, acked.as_slice()),
        )?;
        txn.open_table(SEEN)?.insert(id, state.last_seen_ms)?;
        commit(txn)
    }

    fn delete_subscription(&mut self, id: &str) -> Result<(), Error> {
        let txn = self.db.begin_write()?;
        txn.open_table(SUBSCRIPTIONS)?.remove(id)?;
        txn.open_table(SEEN)?.remove(id)?;
        commit(txn)
    }

    fn subscriptions(&mut self, out: &mut Vec<(String, u64)>) -> Result<(), Error> {
        let txn = self.db.begin_read()?;
        let subscriptions = txn.open_table(SUBSCRIPTIONS)?;
        let seen = txn.open_table(SEEN)?;
        for row in subscriptions.iter()? {
            let (id, _) = row?;
            let id = id.value();
            let last_seen_ms = seen.get(id)?.map_or(0, |v| v.value());
            out.push((id.to_owned(), last_seen_ms));
        }
        Ok(())
    }

    fn expire(&mut self, now_ms: u64) -> Result<(), Error> {
        let txn = self.db.begin_write()?;
        let mut changed = false;
        let mut freed = Vec::new();
        {
            let mut topics = txn.open_table(TOPICS)?;
            let mut log = txn.open_table(LOG)?;
            let mut updates = Vec::new();
            for row in topics.iter()? {
                let (name, meta) = row?;
                let name = name.value();
                let Some(max_age) = self.retention.for_topic(name).max_age else {
                    continue;
                };
                let cutoff =
                    now_ms.saturating_sub(u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX));
                let (last, mut count, mut bytes) = meta.value();
                let (old_count, old_bytes) = (count, bytes);
                let mut expired = Vec::new();
                for row in log.range((name, 0)..=(name, u64::MAX))? {
                    let (key, value) = row?;
                    let (timestamp_ms, data) = value.value();
                    if timestamp_ms >= cutoff {
                        break;
                    }
                    expired.push(key.value().1);
                    count = count.saturating_sub(1);
                    bytes = bytes.saturating_sub(data.len() as u64);
                }
                if !expired.is_empty() {
                    freed.push((name.to_owned(), old_count - count, old_bytes - bytes));
                    updates.push((name.to_owned(), (last, count, bytes), expired));
                }
            }
            for (name, meta, expired) in updates {
                for sequence in expired {
                    log.remove((name.as_str(), sequence))?;
                }
                topics.insert(name.as_str(), meta)?;
                changed = true;
            }
        }
        if changed {
            commit(txn)?;
            for (name, count, data_bytes) in freed {
                self.budget.removed(&name, count, data_bytes);
            }
            Ok(())
        } else {
            txn.abort()?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_store_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<super::RedbStore>();
    }
}
