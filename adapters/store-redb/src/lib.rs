//! The embedded durable store behind sansrpc persistent subscriptions: one
//! [redb](https://www.redb.org) file per server.
//!
//! [`RedbStore`] implements [`sansrpc::ext::store::Store`]. Every [`Store::append`],
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
//! # Example
//! ```
//! use sansrpc::ext::store::{RetentionPolicy, Store, SubscriptionState};
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

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use redb::{Database, ReadableTable, TableDefinition, WriteTransaction};
use sansrpc::ext::store::{RetentionPolicy, Store, StoredMessage, SubscriptionState};
use sansrpc::RawValue;

const LOG: TableDefinition<(&str, u64), (u64, &str)> = TableDefinition::new("log");
const TOPICS: TableDefinition<&str, (u64, u64, u64)> = TableDefinition::new("topics");
const SUBSCRIPTIONS: TableDefinition<&str, (&str, u64, &[u8])> =
    TableDefinition::new("subscriptions");
const SEEN: TableDefinition<&str, u64> = TableDefinition::new("subscription_seen");
const TOUCHED: TableDefinition<&str, u64> = TableDefinition::new("topic_touched");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const FORGOTTEN_MAX: &str = "forgotten_max";

/// What went wrong in a [`RedbStore`].
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
    max_topics: usize,
    max_total_bytes: u64,
    /// What the file holds, kept beside it (the file is this process's alone).
    held: Held,
}

/// The store's bookkeeping of what its file holds, read once at open.
#[derive(Debug, Default)]
struct Held {
    /// Each topic's recency (the append count at its last append).
    touched: BTreeMap<String, u64>,
    /// The same, ordered by recency.
    order: BTreeSet<(u64, String)>,
    /// Bytes of every retained message: data and topic name.
    total_bytes: u64,
    /// Appends so far (the highest recency).
    clock: u64,
    /// The highest sequence any forgotten topic reached.
    forgotten_max: u64,
}

impl Held {
    /// Reads the bookkeeping from the file.
    fn load(db: &Database) -> Result<Held, Error> {
        let mut held = Held::default();
        let txn = db.begin_read()?;
        let touched = txn.open_table(TOUCHED)?;
        for row in txn.open_table(TOPICS)?.iter()? {
            let (name, meta) = row?;
            let (name, (_, count, bytes)) = (name.value(), meta.value());
            held.total_bytes += bytes + name.len() as u64 * count;
            let clock = touched.get(name)?.map_or(0, |v| v.value());
            held.touch(name, clock);
        }
        held.forgotten_max = txn
            .open_table(META)?
            .get(FORGOTTEN_MAX)?
            .map_or(0, |v| v.value());
        Ok(held)
    }

    fn touch(&mut self, topic: &str, clock: u64) {
        if let Some(old) = self.touched.insert(topic.to_owned(), clock) {
            self.order.remove(&(old, topic.to_owned()));
        }
        self.order.insert((clock, topic.to_owned()));
        self.clock = self.clock.max(clock);
    }

    fn forget(&mut self, topic: &str) {
        if let Some(old) = self.touched.remove(topic) {
            self.order.remove(&(old, topic.to_owned()));
        }
    }
}

/// What one stored message counts for in the total: its data and its topic name.
fn message_size(topic: &str, data_len: u64) -> u64 {
    topic.len() as u64 + data_len
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("retention", &self.retention)
            .field("max_topics", &self.max_topics)
            .field("max_total_bytes", &self.max_total_bytes)
            .field("topics", &self.held.touched.len())
            .field("total_bytes", &self.held.total_bytes)
            .finish_non_exhaustive()
    }
}

impl RedbStore {
    /// How many topics a store keeps unless told otherwise.
    pub const DEFAULT_MAX_TOPICS: usize = 10_000;

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
        let held = Held::load(&db)?;
        Ok(RedbStore {
            db,
            retention,
            max_topics: RedbStore::DEFAULT_MAX_TOPICS,
            max_total_bytes: RedbStore::DEFAULT_MAX_TOTAL_BYTES,
            held,
        })
    }

    /// Keeps at most `max` topics (at least 1), from the next append on.
    pub fn with_max_topics(mut self, max: usize) -> Self {
        self.max_topics = max.max(1);
        self
    }

    /// Keeps at most `max` bytes of messages across all topics (data and topic names), from
    /// the next append on; the newest message is kept even when it alone is larger.
    pub fn with_max_total_bytes(mut self, max: u64) -> Self {
        self.max_total_bytes = max;
        self
    }

    /// Bytes of messages (data and topic names) the store holds now.
    pub fn total_bytes(&self) -> u64 {
        self.held.total_bytes
    }

    /// How many topics the store holds now.
    pub fn topic_count(&self) -> usize {
        self.held.touched.len()
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

/// Removes the oldest retained message of `topic` inside the transaction; returns its data
/// length.
fn remove_oldest(log: &mut LogTable<'_>, topic: &str) -> Result<u64, Error> {
    let oldest = match log.range((topic, 0)..=(topic, u64::MAX))?.next() {
        Some(row) => {
            let (key, value) = row?;
            (key.value().1, value.value().1.len() as u64)
        }
        None => return Err(Error::Corrupt("topic counts more messages than its log")),
    };
    log.remove((topic, oldest.0))?;
    Ok(oldest.1)
}

/// Forgets the least recently appended topic with its messages, inside the transaction.
fn forget_oldest(
    held: &mut Held,
    topics: &mut redb::Table<'_, &'static str, (u64, u64, u64)>,
    log: &mut LogTable<'_>,
    touched: &mut redb::Table<'_, &'static str, u64>,
) -> Result<(), Error> {
    let Some((_, name)) = held.order.first().cloned() else {
        return Ok(());
    };
    held.forget(&name);
    let name = name.as_str();
    if let Some(meta) = topics.remove(name)? {
        let (last, count, bytes) = meta.value();
        held.forgotten_max = held.forgotten_max.max(last);
        held.total_bytes = held
            .total_bytes
            .saturating_sub(bytes + name.len() as u64 * count);
    }
    log.retain_in((name, 0)..=(name, u64::MAX), |_, _| false)?;
    touched.remove(name)?;
    Ok(())
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
        let held = &mut self.held;
        let forgotten_before = held.forgotten_max;
        let txn = self.db.begin_write()?;
        let sequence = {
            let mut topics = txn.open_table(TOPICS)?;
            let mut log = txn.open_table(LOG)?;
            let mut touched = txn.open_table(TOUCHED)?;
            if !held.touched.contains_key(topic) {
                while held.touched.len() >= self.max_topics {
                    forget_oldest(held, &mut topics, &mut log, &mut touched)?;
                }
            }
            let (last, count, bytes) = topics
                .get(topic)?
                .map_or((held.forgotten_max, 0, 0), |m| m.value());
            let sequence = last + 1;
            log.insert((topic, sequence), (timestamp_ms, data.get()))?;
            held.touch(topic, held.clock + 1);
            touched.insert(topic, held.clock)?;
            held.total_bytes += message_size(topic, len);
            let (mut count, mut bytes) = (count + 1, bytes + len);
            // The newest message always stays, even when it alone exceeds max_bytes.
            while count > 1
                && (retention.max_count.is_some_and(|max| count > max)
                    || retention.max_bytes.is_some_and(|max| bytes > max))
            {
                let removed = remove_oldest(&mut log, topic)?;
                count -= 1;
                bytes = bytes.saturating_sub(removed);
                held.total_bytes = held
                    .total_bytes
                    .saturating_sub(message_size(topic, removed));
            }
            topics.insert(topic, (sequence, count, bytes))?;
            // Over the total: forget whole topics, least recently appended first (never this
            // one while another is left), then this topic's oldest messages.
            while held.total_bytes > self.max_total_bytes && held.touched.len() > 1 {
                forget_oldest(held, &mut topics, &mut log, &mut touched)?;
            }
            while held.total_bytes > self.max_total_bytes && count > 1 {
                let removed = remove_oldest(&mut log, topic)?;
                count -= 1;
                bytes = bytes.saturating_sub(removed);
                held.total_bytes = held
                    .total_bytes
                    .saturating_sub(message_size(topic, removed));
                topics.insert(topic, (sequence, count, bytes))?;
            }
            if held.forgotten_max != forgotten_before {
                txn.open_table(META)?
                    .insert(FORGOTTEN_MAX, held.forgotten_max)?;
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
            if let Ok(held) = Held::load(&self.db) {
                self.held = held;
            }
        }
        result
    }

    fn last_sequence(&mut self, topic: &str) -> Result<u64, Error> {
        let txn = self.db.begin_read()?;
        let topics = txn.open_table(TOPICS)?;
        Ok(topics
            .get(topic)?
            .map_or(self.held.forgotten_max, |m| m.value().0))
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
        let mut freed = 0;
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
                    freed += message_size(name, data.len() as u64);
                }
                if !expired.is_empty() {
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
            self.held.total_bytes = self.held.total_bytes.saturating_sub(freed);
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
