//! [`RedbTaskStore`] (feature `a2a`): an A2A agent's tasks in a redb file, so a restarted
//! agent still answers `GetTask` and `ListTasks` for them, with their history and artifacts,
//! and goes on with those that wait for input.
//!
//! It implements [`sansrpc_a2a::store::TaskStore`], which the A2A HTTP machine calls around
//! its task machine (see [`sansrpc_a2a::store`]): [`save`](TaskStore::save)s wait in memory
//! (at most one per task, the newest) until [`flush`](TaskStore::flush), which the machine
//! calls once per turn, commits them in one redb write transaction (redb's default
//! durability: synced before commit returns). Reads see what waits as well as what was
//! committed. A crash loses at most the turn that was being handled.
//!
//! # Layout
//! - `a2a_tasks`: `task id -> (status seconds, status nanos, record)`, the record as
//!   [`encode_task`] writes it (the version and the task's A2A JSON).
//! - `a2a_by_status`: `(status seconds, status nanos, task id) -> terminal`, every task by
//!   its status time, oldest first: what is forgotten first.
//!
//! # Bounds
//! At most `max_tasks` tasks ([`RedbTaskStore::open`]): past it, each commit forgets the
//! terminal tasks whose status is oldest until the count is back under it. Tasks still
//! running are never forgotten (the machine of each process bounds them). The file does not
//! shrink; redb reuses the freed pages. Its tables are its own (`a2a_*`): it may share a file
//! with nothing else that opens it, as redb allows one writer.
//!
//! ```
//! use sansrpc_a2a::store::TaskStore;
//! use sansrpc_a2a::types::Task;
//! use sansrpc_store_redb::RedbTaskStore;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("tasks.redb");
//! let task = Task { id: "t-1".into(), context_id: "c-1".into(), ..Default::default() };
//! let mut store = RedbTaskStore::open(&path, 10_000).unwrap();
//! store.save(1, &task).unwrap();
//! store.flush().unwrap();
//! drop(store);
//!
//! let mut store = RedbTaskStore::open(&path, 10_000).unwrap();
//! assert_eq!(store.load("t-1").unwrap(), Some((1, task)));
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition};
use sansrpc_a2a::store::{decode_task, encode_task, StoreError, TaskStore};
use sansrpc_a2a::types::Task;

use crate::Error;

const TASKS: TableDefinition<&str, (i64, u32, &[u8])> = TableDefinition::new("a2a_tasks");
const BY_STATUS: TableDefinition<(i64, u32, &str), bool> = TableDefinition::new("a2a_by_status");

/// A task waiting for the next commit.
struct Pending {
    seconds: i64,
    nanos: u32,
    terminal: bool,
    record: Vec<u8>,
}

/// An A2A agent's tasks in a redb file; see the [module docs](self).
pub struct RedbTaskStore {
    db: Database,
    max_tasks: u64,
    pending: BTreeMap<String, Pending>,
}

impl std::fmt::Debug for RedbTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbTaskStore")
            .field("max_tasks", &self.max_tasks)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl RedbTaskStore {
    /// Opens (or creates) the store at `path`, keeping at most `max_tasks` tasks.
    pub fn open(path: impl AsRef<Path>, max_tasks: usize) -> Result<Self, Error> {
        let db = Database::create(path)?;
        let txn = db.begin_write()?;
        txn.open_table(TASKS)?;
        txn.open_table(BY_STATUS)?;
        txn.commit()?;
        Ok(RedbTaskStore {
            db,
            max_tasks: u64::try_from(max_tasks).unwrap_or(u64::MAX),
            pending: BTreeMap::new(),
        })
    }

    /// How many tasks are committed.
    pub fn len(&self) -> Result<u64, Error> {
        let txn = self.db.begin_read()?;
        Ok(txn.open_table(TASKS)?.len()?)
    }

    /// Whether no task is committed.
    pub fn is_empty(&self) -> Result<bool, Error> {
        Ok(self.len()? == 0)
    }

    fn commit(&mut self) -> Result<(), Error> {
        let txn = self.db.begin_write()?;
        {
            let mut tasks = txn.open_table(TASKS)?;
            let mut by_status = txn.open_table(BY_STATUS)?;
            for (id, p) in std::mem::take(&mut self.pending) {
                let old = tasks
                    .insert(id.as_str(), (p.seconds, p.nanos, p.record.as_slice()))?
                    .map(|old| {
                        let (seconds, nanos, _) = old.value();
                        (seconds, nanos)
                    });
                if let Some((seconds, nanos)) = old {
                    by_status.remove((seconds, nanos, id.as_str()))?;
                }
                by_status.insert((p.seconds, p.nanos, id.as_str()), p.terminal)?;
            }
            let mut count = tasks.len()?;
            while count > self.max_tasks {
                let mut victim = None;
                for row in by_status.iter()? {
                    let (key, terminal) = row?;
                    if terminal.value() {
                        let (seconds, nanos, id) = key.value();
                        victim = Some((seconds, nanos, id.to_owned()));
                        break;
                    }
                }
                let Some((seconds, nanos, id)) = victim else {
                    break;
                };
                by_status.remove((seconds, nanos, id.as_str()))?;
                tasks.remove(id.as_str())?;
                count -= 1;
            }
        }
        txn.commit()?;
        Ok(())
    }
}

impl TaskStore for RedbTaskStore {
    fn save(&mut self, version: u64, task: &Task) -> Result<(), StoreError> {
        let time = task.status.timestamp.unwrap_or_default();
        self.pending.insert(
            task.id.clone(),
            Pending {
                seconds: time.seconds(),
                nanos: time.nanos(),
                terminal: task.status.state.is_terminal(),
                record: encode_task(version, task),
            },
        );
        Ok(())
    }

    fn load(&mut self, id: &str) -> Result<Option<(u64, Task)>, StoreError> {
        if let Some(p) = self.pending.get(id) {
            return decode_task(&p.record).map(Some);
        }
        let txn = self.db.begin_read().map_err(Error::from)?;
        let tasks = txn.open_table(TASKS).map_err(Error::from)?;
        let Some(row) = tasks.get(id).map_err(Error::from)? else {
            return Ok(None);
        };
        let (_, _, record) = row.value();
        decode_task(record).map(Some)
    }

    fn list(&mut self, each: &mut dyn FnMut(Task)) -> Result<(), StoreError> {
        let txn = self.db.begin_read().map_err(Error::from)?;
        let tasks = txn.open_table(TASKS).map_err(Error::from)?;
        for row in tasks.iter().map_err(Error::from)? {
            let (id, value) = row.map_err(Error::from)?;
            if self.pending.contains_key(id.value()) {
                continue;
            }
            let (_, _, record) = value.value();
            each(decode_task(record)?.1);
        }
        for p in self.pending.values() {
            each(decode_task(&p.record)?.1);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // A failed commit keeps nothing of this turn: what it held is lost, as a crash
        // would lose it.
        self.commit().map_err(|e| Box::new(e) as StoreError)
    }
}
