//! [`RedbEventStore`]: the SSE events of MCP's Streamable HTTP machine in a redb file, so a
//! client that reconnects with `Last-Event-ID` after a server restart still gets what it
//! missed.
//!
//! # Semantics
//! The same as [`MemoryEventStore`](sansrpc_mcp::streamable::MemoryEventStore): events are kept
//! per stream in sequence order, at most `max_bytes` of them in all (the oldest event of any
//! stream goes first), none older than `max_age` once [`expire`](EventStore::expire) ran;
//! an event larger than `max_bytes` is not kept and counts as forgotten; a
//! [`replay`](EventStore::replay) is false when something after the asked point was
//! forgotten or the stream is unknown (never appended to, or removed).
//!
//! # Layout
//! - `sse_events`: `(stream, seq) -> (order, event bytes)`, one row per event kept.
//! - `sse_order`: `order -> (stream, seq, at, len)`: every event kept by its append number,
//!   oldest first (for the byte bound and the age bound; `at` is the store clock below, in
//!   nanoseconds; `len` the event's bytes, so forgetting never reads a body).
//! - `sse_streams`: `stream -> forgotten`, the highest sequence number forgotten (0: none);
//!   a row from a stream's first append until [`remove`](EventStore::remove): the streams
//!   the store knows.
//! - `sse_owners`: `stream -> owner` (the session id, [`set_owner`](EventStore::set_owner)).
//! - `sse_meta`: `"bytes"` (event bytes kept), `"clock"` (the store clock at the last
//!   commit), `"last_stream"` (the highest stream number ever appended to or given an owner).
//!
//! Memory holds no per-event index, only a handful of counters, the open write transaction
//! (at most about [`RedbEventStore::FLUSH_BYTES`] of written data, see below) and redb's page
//! cache; opening reads the counters, never the events.
//!
//! # Age across a restart
//! The driver's [`Instant`] is monotonic in one process and means nothing in the next, so
//! the store runs its own clock: the time the store has been open, summed over every process
//! that had it open. A process's clock starts at the value saved by the last commit (`clock`
//! in `sse_meta`) at the `now` of the first [`append`](EventStore::append) or
//! [`expire`](EventStore::expire), and moves with the driver's `now` from there; each event
//! records the clock at its append, its age is the clock minus that. So an event keeps the
//! age it had when the server stopped (as of the last commit), and time while no server runs
//! does not count: an event may be replayed after a restart up to `max_age` of server run
//! time after it was sent, plus the downtime. No wall clock is read. Commits save the clock;
//! an [`expire`](EventStore::expire) while events are kept marks the clock to be saved by the
//! next [`flush`](EventStore::flush), so the saved age lags by at most the expire period
//! (a quarter of the age bound in the server).
//!
//! # When it commits
//! [`append`](EventStore::append), [`set_owner`](EventStore::set_owner),
//! [`remove`](EventStore::remove) and [`expire`](EventStore::expire) write into one redb
//! write transaction the store keeps open (redb holds its pages in memory until commit);
//! nothing is committed per event. [`flush`](EventStore::flush) commits it (redb's default
//! durability: the file is synced before commit returns), so after `flush` a process opening
//! the file sees everything written before it. It is also committed when the data written
//! since the last commit (event and owner bytes) reaches
//! [`FLUSH_BYTES`](RedbEventStore::FLUSH_BYTES) ([`RedbEventStore::with_flush_bytes`]), and
//! when the store is dropped (unless the thread is panicking). Reads
//! ([`replay`](EventStore::replay), [`owner`](EventStore::owner)) go through the open
//! transaction, so they see what was written and not yet committed. A crash loses what was
//! written since the last commit, never more, and never leaves part of a commit.
//!
//! # Errors
//! The trait's methods return nothing, so a failure (the file could not be read or written)
//! is counted ([`RedbEventStore::errors`]) and kept ([`RedbEventStore::take_error`]), and
//! the method goes on as if it had nothing to do: a failed `replay` gives nothing and is
//! false, a failed `owner` is `None`. A write that fails drops the open transaction (what was
//! written since the last commit is lost) and the store reloads its counters from the file.
//! After an I/O error redb refuses every further write to the database; only reopening the
//! store (a new process, or dropping this one and calling [`RedbEventStore::open`]) recovers.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition, WriteTransaction};
use sansrpc::Instant;
use sansrpc_mcp::streamable::EventStore;

use crate::Error;

const EVENTS: TableDefinition<(u64, u64), (u64, &[u8])> = TableDefinition::new("sse_events");
const ORDER: TableDefinition<u64, (u64, u64, u64, u64)> = TableDefinition::new("sse_order");
const STREAMS: TableDefinition<u64, u64> = TableDefinition::new("sse_streams");
const OWNERS: TableDefinition<u64, &[u8]> = TableDefinition::new("sse_owners");
const META: TableDefinition<&str, u64> = TableDefinition::new("sse_meta");
const META_BYTES: &str = "bytes";
const META_CLOCK: &str = "clock";
const META_LAST_STREAM: &str = "last_stream";

type EventsTable<'t> = redb::Table<'t, (u64, u64), (u64, &'static [u8])>;
type OrderTable<'t> = redb::Table<'t, u64, (u64, u64, u64, u64)>;
type StreamsTable<'t> = redb::Table<'t, u64, u64>;

/// A duration in nanoseconds, saturating.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The store's bookkeeping in memory: counters only, never an event.
#[derive(Debug)]
struct State {
    max_bytes: u64,
    max_age: u64,
    flush_bytes: usize,
    /// Event bytes kept, written and not yet committed included.
    bytes: u64,
    /// The append number the next event gets.
    next_order: u64,
    /// Highest stream ever appended to or given an owner (never lowered).
    last_stream: u64,
    /// The clock saved in the file when the store opened.
    offset: u64,
    /// The driver's `now` at the first append or expire of this process.
    base: Option<Instant>,
    /// The store clock at the latest append or expire (nanoseconds).
    clock: u64,
    /// The clock as last committed.
    saved_clock: u64,
    /// Event and owner bytes written since the last commit.
    pending: usize,
    /// Something was written since the last commit.
    dirty: bool,
}

impl State {
    /// The store clock at `now` (never going back).
    fn tick(&mut self, now: Instant) -> u64 {
        let base = *self.base.get_or_insert(now);
        let clock = self
            .offset
            .saturating_add(nanos(now.saturating_duration_since(base)));
        self.clock = self.clock.max(clock);
        self.clock
    }
}

/// The tables an append, an expire or a removal changes, open in the write transaction.
struct Tables<'t> {
    events: EventsTable<'t>,
    order: OrderTable<'t>,
    streams: StreamsTable<'t>,
}

impl<'t> Tables<'t> {
    fn open(txn: &'t WriteTransaction) -> Result<Self, Error> {
        Ok(Tables {
            events: txn.open_table(EVENTS)?,
            order: txn.open_table(ORDER)?,
            streams: txn.open_table(STREAMS)?,
        })
    }

    /// Forgets the oldest event of all; false when there is none.
    fn forget_oldest(&mut self, bytes: &mut u64) -> Result<bool, Error> {
        let Some((stream, seq, len)) = self.order.pop_first()?.map(|(_, row)| {
            let (stream, seq, _, len) = row.value();
            (stream, seq, len)
        }) else {
            return Ok(false);
        };
        self.events.remove((stream, seq))?;
        *bytes = bytes.saturating_sub(len);
        let forgotten = self.streams.get(stream)?.map(|f| f.value());
        if let Some(forgotten) = forgotten {
            self.streams.insert(stream, forgotten.max(seq))?;
        }
        Ok(true)
    }

    /// Forgets the oldest events until `room` more bytes fit under `max_bytes`.
    fn make_room(&mut self, room: u64, state: &mut State) -> Result<(), Error> {
        while state.bytes.saturating_add(room) > state.max_bytes
            && self.forget_oldest(&mut state.bytes)?
        {}
        Ok(())
    }

    /// Raises the highest forgotten sequence number of `stream` to `seq` (0: just makes the
    /// stream known).
    fn mark_forgotten(&mut self, stream: u64, seq: u64) -> Result<(), Error> {
        let forgotten = self.streams.get(stream)?.map(|f| f.value());
        if forgotten.is_none_or(|f| f < seq) {
            self.streams
                .insert(stream, forgotten.unwrap_or(0).max(seq))?;
        }
        Ok(())
    }
}

/// Reads the counters from the file: `(bytes, next_order, last_stream, clock)`.
fn load_counters(db: &Database) -> Result<(u64, u64, u64, u64), Error> {
    let txn = db.begin_read()?;
    let meta = txn.open_table(META)?;
    let get = |key: &str| -> Result<u64, Error> { Ok(meta.get(key)?.map_or(0, |v| v.value())) };
    let next_order = txn
        .open_table(ORDER)?
        .last()?
        .map_or(1, |(k, _)| k.value().saturating_add(1));
    Ok((
        get(META_BYTES)?,
        next_order,
        get(META_LAST_STREAM)?,
        get(META_CLOCK)?,
    ))
}

/// Hands the events of `stream` after `after` to `each`; whether none after `after` was
/// forgotten and the stream is known.
fn replay_from(
    streams: &impl ReadableTable<u64, u64>,
    events: &impl ReadableTable<(u64, u64), (u64, &'static [u8])>,
    stream: u64,
    after: u64,
    each: &mut dyn FnMut(u64, &[u8]),
) -> Result<bool, Error> {
    let Some(forgotten) = streams.get(stream)?.map(|f| f.value()) else {
        return Ok(false);
    };
    if after < u64::MAX {
        for row in events.range((stream, after + 1)..=(stream, u64::MAX))? {
            let (key, value) = row?;
            each(key.value().1, value.value().1);
        }
    }
    Ok(forgotten <= after)
}

/// An [`EventStore`] in one redb file: durable across restarts, single process (redb locks
/// the file), bounded in bytes and in age like
/// [`MemoryEventStore`](sansrpc_mcp::streamable::MemoryEventStore). See the
/// [module docs](crate::events) for the layout, how age survives a restart, when it commits
/// and what it does with errors.
///
/// ```
/// use std::time::Duration;
/// use sansrpc_mcp::streamable::EventStore;
/// use sansrpc::Instant;
/// use sansrpc_store_redb::RedbEventStore;
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("events.redb");
/// let mut store = RedbEventStore::open(&path, 1 << 20, Duration::from_secs(300)).unwrap();
/// store.set_owner(3, b"session-a");
/// store.append(3, 1, b"id: 3/1\ndata: {}\n\n", Instant::ZERO);
/// store.flush();
/// drop(store);
///
/// let mut store = RedbEventStore::open(&path, 1 << 20, Duration::from_secs(300)).unwrap();
/// assert_eq!(store.owner(3).as_deref(), Some(&b"session-a"[..]));
/// assert_eq!(store.last_stream(), 3);
/// let mut seen = Vec::new();
/// assert!(store.replay(3, 0, &mut |seq, _| seen.push(seq)));
/// assert_eq!(seen, [1]);
/// ```
pub struct RedbEventStore {
    /// The open write transaction, if anything was written since the last commit (declared
    /// before `db`: it goes first).
    txn: Option<WriteTransaction>,
    db: Database,
    state: State,
    errors: AtomicU64,
    error: Mutex<Option<Error>>,
}

impl std::fmt::Debug for RedbEventStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbEventStore")
            .field("max_bytes", &self.state.max_bytes)
            .field("max_age", &Duration::from_nanos(self.state.max_age))
            .field("flush_bytes", &self.state.flush_bytes)
            .field("bytes", &self.state.bytes)
            .field("last_stream", &self.state.last_stream)
            .field("uncommitted", &self.state.dirty)
            .field("errors", &self.errors())
            .finish_non_exhaustive()
    }
}

impl RedbEventStore {
    /// How many bytes (events and owners) are written before the store commits without
    /// waiting for [`flush`](EventStore::flush), unless told otherwise: 1 MiB.
    pub const FLUSH_BYTES: usize = 1 << 20;

    /// Opens the store at `path`, creating the file if it does not exist: at most
    /// `max_bytes` of events, each kept at most `max_age` (of server run time, see the
    /// [module docs](crate::events#age-across-a-restart)).
    ///
    /// If the file holds more than `max_bytes` (it was written with a larger bound), its
    /// oldest events are forgotten here. After a crash redb checks and repairs the file
    /// first, which may take a moment on a large file. Fails if another process (or another
    /// store) has the file open.
    pub fn open(
        path: impl AsRef<Path>,
        max_bytes: usize,
        max_age: Duration,
    ) -> Result<Self, Error> {
        let db = Database::create(path)?;
        let txn = db.begin_write()?;
        txn.open_table(EVENTS)?;
        txn.open_table(ORDER)?;
        txn.open_table(STREAMS)?;
        txn.open_table(OWNERS)?;
        txn.open_table(META)?;
        txn.commit()?;
        let (bytes, next_order, last_stream, clock) = load_counters(&db)?;
        let mut state = State {
            max_bytes: max_bytes as u64,
            max_age: nanos(max_age),
            flush_bytes: RedbEventStore::FLUSH_BYTES,
            bytes,
            next_order,
            last_stream,
            offset: clock,
            base: None,
            clock,
            saved_clock: clock,
            pending: 0,
            dirty: false,
        };
        if state.bytes > state.max_bytes {
            let txn = db.begin_write()?;
            Tables::open(&txn)?.make_room(0, &mut state)?;
            txn.open_table(META)?.insert(META_BYTES, state.bytes)?;
            txn.commit()?;
        }
        Ok(RedbEventStore {
            txn: None,
            db,
            state,
            errors: AtomicU64::new(0),
            error: Mutex::new(None),
        })
    }

    /// Commits without waiting for [`flush`](EventStore::flush) once `bytes` of events and
    /// owners were written since the last commit (default [`FLUSH_BYTES`](Self::FLUSH_BYTES));
    /// this bounds what an open transaction holds.
    pub fn with_flush_bytes(mut self, bytes: usize) -> Self {
        self.state.flush_bytes = bytes;
        self
    }

    /// Bytes of events held (written and not yet committed included).
    pub fn bytes(&self) -> usize {
        usize::try_from(self.state.bytes).unwrap_or(usize::MAX)
    }

    /// How many operations failed since the store was opened (the file could not be read or
    /// written).
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// The latest failure, if any since the last call.
    pub fn take_error(&mut self) -> Option<Error> {
        self.error
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Counts and keeps `error`.
    fn fail(&self, error: Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
    }

    /// Counts and keeps `error` and starts over from the file: the open transaction is
    /// dropped (aborted) and the counters are the file's again.
    fn fail_and_reload(&mut self, error: Error) {
        self.fail(error);
        self.txn = None;
        self.state.pending = 0;
        self.state.dirty = false;
        match load_counters(&self.db) {
            Ok((bytes, next_order, last_stream, _)) => {
                self.state.bytes = bytes;
                self.state.next_order = next_order;
                self.state.last_stream = self.state.last_stream.max(last_stream);
            }
            Err(e) => self.fail(e),
        }
    }

    /// Runs `write` in the open write transaction (beginning one if none is); a failure
    /// drops the transaction.
    fn write(&mut self, write: impl FnOnce(&mut State, &WriteTransaction) -> Result<(), Error>) {
        if self.txn.is_none() {
            match self.db.begin_write() {
                Ok(txn) => self.txn = Some(txn),
                Err(e) => return self.fail(e.into()),
            }
        }
        let Some(txn) = self.txn.as_ref() else {
            return;
        };
        if let Err(e) = write(&mut self.state, txn) {
            self.fail_and_reload(e);
        } else if self.state.pending >= self.state.flush_bytes {
            self.commit();
        }
    }

    /// Commits the open transaction if it changed anything (aborts it if not).
    fn commit(&mut self) {
        let Some(txn) = self.txn.take() else {
            return;
        };
        if !self.state.dirty {
            if let Err(e) = txn.abort() {
                self.fail(e.into());
            }
            return;
        }
        let state = &self.state;
        let result = (|| -> Result<(), Error> {
            {
                let mut meta = txn.open_table(META)?;
                meta.insert(META_BYTES, state.bytes)?;
                meta.insert(META_CLOCK, state.clock)?;
                meta.insert(META_LAST_STREAM, state.last_stream)?;
            }
            txn.commit()?;
            Ok(())
        })();
        match result {
            Ok(()) => {
                self.state.saved_clock = self.state.clock;
                self.state.pending = 0;
                self.state.dirty = false;
            }
            Err(e) => self.fail_and_reload(e),
        }
    }
}

impl EventStore for RedbEventStore {
    fn append(&mut self, stream: u64, seq: u64, event: &[u8], now: Instant) {
        self.write(|state, txn| {
            let at = state.tick(now);
            let len = event.len() as u64;
            state.dirty = true;
            state.last_stream = state.last_stream.max(stream);
            let mut tables = Tables::open(txn)?;
            if len > state.max_bytes {
                return tables.mark_forgotten(stream, seq);
            }
            tables.make_room(len, state)?;
            tables.mark_forgotten(stream, 0)?;
            let order = state.next_order;
            state.next_order += 1;
            let replaced = tables
                .events
                .insert((stream, seq), (order, event))?
                .map(|old| old.value().0);
            if let Some(old) = replaced {
                // The same event appended again: the new one replaces it.
                if let Some(row) = tables.order.remove(old)? {
                    state.bytes = state.bytes.saturating_sub(row.value().3);
                }
            }
            tables.order.insert(order, (stream, seq, at, len))?;
            state.bytes += len;
            state.pending = state.pending.saturating_add(event.len());
            Ok(())
        });
    }

    fn replay(&mut self, stream: u64, after: u64, each: &mut dyn FnMut(u64, &[u8])) -> bool {
        let result = match &self.txn {
            Some(txn) => (|| {
                let streams = txn.open_table(STREAMS)?;
                let events = txn.open_table(EVENTS)?;
                replay_from(&streams, &events, stream, after, each)
            })(),
            None => (|| {
                let txn = self.db.begin_read()?;
                let streams = txn.open_table(STREAMS)?;
                let events = txn.open_table(EVENTS)?;
                replay_from(&streams, &events, stream, after, each)
            })(),
        };
        result.unwrap_or_else(|e| {
            self.fail(e);
            false
        })
    }

    fn remove(&mut self, stream: u64) {
        self.write(|state, txn| {
            let mut tables = Tables::open(txn)?;
            let mut owners = txn.open_table(OWNERS)?;
            if tables.streams.remove(stream)?.is_some() | owners.remove(stream)?.is_some() {
                state.dirty = true;
            }
            let mut removed = Vec::new();
            for row in tables.events.range((stream, 0)..=(stream, u64::MAX))? {
                let (key, value) = row?;
                removed.push((key.value().1, value.value().0));
            }
            for (seq, order) in removed {
                tables.events.remove((stream, seq))?;
                if let Some(row) = tables.order.remove(order)? {
                    state.bytes = state.bytes.saturating_sub(row.value().3);
                }
                state.dirty = true;
            }
            Ok(())
        });
    }

    fn expire(&mut self, now: Instant) {
        self.write(|state, txn| {
            let clock = state.tick(now);
            let mut tables = Tables::open(txn)?;
            if tables.order.is_empty()? {
                return Ok(());
            }
            // Events are kept: their ages must survive a restart.
            if clock > state.saved_clock {
                state.dirty = true;
            }
            loop {
                let oldest = tables.order.first()?.map(|(_, row)| row.value().2);
                match oldest {
                    Some(at) if clock.saturating_sub(at) >= state.max_age => {
                        tables.forget_oldest(&mut state.bytes)?;
                    }
                    _ => break,
                }
            }
            Ok(())
        });
    }

    fn owner(&self, stream: u64) -> Option<Vec<u8>> {
        let result = match &self.txn {
            Some(txn) => (|| -> Result<_, Error> {
                let owners = txn.open_table(OWNERS)?;
                let owner = owners.get(stream)?.map(|o| o.value().to_vec());
                Ok(owner)
            })(),
            None => (|| -> Result<_, Error> {
                let txn = self.db.begin_read()?;
                let owners = txn.open_table(OWNERS)?;
                let owner = owners.get(stream)?.map(|o| o.value().to_vec());
                Ok(owner)
            })(),
        };
        result.unwrap_or_else(|e| {
            self.fail(e);
            None
        })
    }

    fn set_owner(&mut self, stream: u64, owner: &[u8]) {
        self.write(|state, txn| {
            txn.open_table(OWNERS)?.insert(stream, owner)?;
            state.dirty = true;
            state.last_stream = state.last_stream.max(stream);
            state.pending = state.pending.saturating_add(owner.len());
            Ok(())
        });
    }

    fn last_stream(&self) -> u64 {
        self.state.last_stream
    }

    fn flush(&mut self) {
        self.commit();
    }
}

impl Drop for RedbEventStore {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // What an interrupted operation left is not committed.
            self.txn = None;
        } else {
            self.commit();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_store_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<super::RedbEventStore>();
    }
}
