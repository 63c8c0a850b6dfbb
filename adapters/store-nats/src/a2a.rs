//! A2A agents across processes (feature `a2a`): [`NatsTaskStore`], the tasks in a JetStream
//! key-value bucket every process of the agent shares, and [`A2aFanout`], which carries the
//! tasks' events between the processes over core NATS.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::stream::{self, DiscardPolicy};
use async_nats::jetstream::{self, kv};
use futures::StreamExt;
use sansrpc_a2a::store::{decode_task, encode_task, Change, Fanout, StoreError, TaskStore};
use sansrpc_a2a::tokio::Peers;
use sansrpc_a2a::types::Task;

use crate::fanout::{Inbox, Link, Outbox};
use crate::runtime::Runtime;
use crate::store::open_bucket;
use crate::{escape, nats, Error, DEFAULT_TIMEOUT, MAX_NAME_LEN, PUB_PREFIX};

/// How many changes may wait to be published; past it a change is dropped, counted, and the
/// other processes are asked to resync.
pub const A2A_QUEUE: usize = 1024;

/// The suffix of the subject a task's change travels on.
const CHANGES: &str = "changes";

/// The bucket of an agent's tasks, and its bounds ([`NatsTaskStore::connect_with`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskBucket {
    /// Bytes the bucket holds at most (default 1 GiB): past it, the records written longest
    /// ago go first.
    pub max_bytes: i64,
    /// How long a task is kept after it was last saved (default: zero, no limit).
    pub max_age: Duration,
    /// Most tasks one `ListTasks` reads (default 10,000).
    pub max_listed: usize,
    /// How long one operation may take (default [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
}

impl Default for TaskBucket {
    fn default() -> Self {
        TaskBucket {
            max_bytes: 1 << 30,
            max_age: Duration::ZERO,
            max_listed: 10_000,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// The key-value bucket of agent `agent`'s tasks: `SANSRPC_A2A_<agent escaped>`.
pub fn bucket_name(agent: &str) -> Result<String, Error> {
    let name = format!("SANSRPC_A2A_{}", escape(agent));
    if name.len() > MAX_NAME_LEN {
        return Err(Error::IdTooLong(name.len()));
    }
    Ok(name)
}

/// An A2A agent's tasks ([`sansrpc_a2a::store::TaskStore`]) in a JetStream key-value bucket,
/// shared by every process of the agent that connects to the same NATS: a task created
/// through one process is read, continued, canceled and subscribed to through any other.
///
/// ```no_run
/// use sansrpc_a2a::echo::{agent_card, EchoAgent};
/// use sansrpc_a2a::tokio::Options;
/// use sansrpc_store_nats::NatsTaskStore;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // A nats-server with JetStream (`nats-server -js`) on its default port.
/// let store = NatsTaskStore::connect("nats://127.0.0.1:4222", "echo")?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// let card = agent_card("http://127.0.0.1:3000/a2a");
/// let options = Options::default().task_store(store);
/// sansrpc_a2a::tokio::serve_with(
///     listener, EchoAgent::new(), card, Default::default(), options, std::future::pending(),
/// )
/// .await?;
/// # Ok(())
/// # }
/// ```
///
/// # Layout
/// One bucket per agent ([`bucket_name`]), one key per task (its id escaped as topics are:
/// letters, digits and `-` kept, every other byte `_XX`), the value the task as
/// [`encode_task`] writes it (its version and its A2A JSON). A task larger than the NATS
/// server's `max_payload` (1 MiB by default) cannot be saved: the save fails and the
/// server counts it (`http::Endpoint::store_errors`).
///
/// # When it writes
/// [`save`](TaskStore::save)s wait in memory (the newest of each task) until
/// [`flush`](TaskStore::flush), which the HTTP machine calls once per turn: every task
/// saved is then put at once, and `flush` returns when JetStream acknowledged them all
/// (at most the timeout). So a task a request changed is in the bucket before the answer to
/// that request is written. Loads and lists see the waiting saves too.
///
/// While the connection to NATS is down, every call but `save` fails at once (the server
/// counts it and goes on; `GetTask` answers an internal error naming it) and the saves
/// wait, at most one per task; they are put at the first flush after the reconnection
/// (the fan-out's resync makes one), so the bucket catches up with what changed meanwhile.
///
/// # Bounds
/// The bucket holds at most [`TaskBucket::max_bytes`] (the oldest records go first) and
/// keeps records [`TaskBucket::max_age`]; `ListTasks` reads at most
/// [`TaskBucket::max_listed`] tasks, one round trip each.
pub struct NatsTaskStore {
    runtime: Runtime,
    client: async_nats::Client,
    kv: kv::Store,
    bucket: TaskBucket,
    pending: BTreeMap<String, Vec<u8>>,
}

impl std::fmt::Debug for NatsTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsTaskStore")
            .field("bucket", &self.bucket)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl NatsTaskStore {
    /// Connects to the NATS server at `url` (JetStream enabled) and opens (or creates) the
    /// bucket of agent `agent`'s tasks, with the default [`TaskBucket`].
    pub fn connect(url: &str, agent: &str) -> Result<Self, Error> {
        Self::connect_with(url, agent, TaskBucket::default())
    }

    /// [`connect`](Self::connect) with the bucket's bounds.
    pub fn connect_with(url: &str, agent: &str, bucket: TaskBucket) -> Result<Self, Error> {
        let name = bucket_name(agent)?;
        let runtime = Runtime::start("sansrpc-a2a-tasks", bucket.timeout)?;
        let url = url.to_owned();
        let (timeout, max_bytes, max_age) = (bucket.timeout, bucket.max_bytes, bucket.max_age);
        let (client, kv) = runtime.run(async move {
            let client = async_nats::ConnectOptions::new()
                .name("sansrpc a2a tasks")
                .connect(url)
                .await
                .map_err(nats("connect"))?;
            let mut js = jetstream::new(client.clone());
            js.set_timeout(timeout);
            let config = stream::Config {
                description: Some("sansrpc A2A tasks".into()),
                max_bytes,
                max_age,
                discard: DiscardPolicy::Old,
                ..Default::default()
            };
            Ok((client, open_bucket(&js, &name, config).await?))
        })?;
        Ok(NatsTaskStore {
            runtime,
            client,
            kv,
            bucket,
            pending: BTreeMap::new(),
        })
    }
}

fn boxed(e: Error) -> StoreError {
    Box::new(e)
}

impl NatsTaskStore {
    /// Fails at once while the connection is down, rather than holding the server's turn
    /// for the timeout.
    fn connected(&self, op: &'static str) -> Result<(), StoreError> {
        if self.client.connection_state() == async_nats::connection::State::Connected {
            return Ok(());
        }
        Err(boxed(Error::Nats {
            op,
            source: "not connected to NATS".into(),
        }))
    }
}

impl TaskStore for NatsTaskStore {
    fn save(&mut self, version: u64, task: &Task) -> Result<(), StoreError> {
        self.pending
            .insert(task.id.clone(), encode_task(version, task));
        Ok(())
    }

    fn load(&mut self, id: &str) -> Result<Option<(u64, Task)>, StoreError> {
        if let Some(record) = self.pending.get(id) {
            return decode_task(record).map(Some);
        }
        if id.is_empty() {
            return Ok(None);
        }
        self.connected("load task")?;
        let kv = self.kv.clone();
        let key = escape(id);
        let found = self
            .runtime
            .run(async move { kv.get(key).await.map_err(nats("load task")) })
            .map_err(boxed)?;
        found.map(|record| decode_task(&record)).transpose()
    }

    fn list(&mut self, each: &mut dyn FnMut(Task)) -> Result<(), StoreError> {
        self.connected("list tasks")?;
        let kv = self.kv.clone();
        let max = self.bucket.max_listed;
        let found = self
            .runtime
            .run(async move {
                let mut keys = kv.keys().await.map_err(nats("list tasks"))?;
                let mut found = Vec::new();
                while let Some(key) = keys.next().await {
                    if found.len() >= max {
                        break;
                    }
                    let key = key.map_err(nats("list tasks"))?;
                    // Gone since it was listed: skipped.
                    if let Some(record) = kv.get(key).await.map_err(nats("load task"))? {
                        found.push(record);
                    }
                }
                Ok(found)
            })
            .map_err(boxed)?;
        for record in found {
            let (_, task) = decode_task(&record)?;
            if !self.pending.contains_key(&task.id) {
                each(task);
            }
        }
        for record in self.pending.values() {
            each(decode_task(record)?.1);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.connected("save task")?;
        let kv = self.kv.clone();
        let puts: Vec<(String, Vec<u8>)> = self
            .pending
            .iter()
            .map(|(id, record)| (escape(id), record.clone()))
            .collect();
        self.runtime
            .run(async move {
                let all = puts.into_iter().map(|(key, record)| {
                    let kv = kv.clone();
                    async move { kv.put(key, record.into()).await }
                });
                for put in futures::future::join_all(all).await {
                    put.map_err(nats("save task"))?;
                }
                Ok(())
            })
            .map_err(boxed)?;
        self.pending.clear();
        Ok(())
    }
}

/// Carries the events of an A2A agent's tasks between its processes over core NATS, the
/// way [`McpFanout`](crate::McpFanout) carries MCP's changes: a `SubscribeToTask` (or
/// `SendStreamingMessage`) stream opened through one process gets the status and artifact
/// updates of a task running on another, and a `CancelTask` answered by one process stops
/// the task's run on the process that runs it.
///
/// Use it with a shared task store ([`NatsTaskStore`]): a process that missed events of a
/// task loads the task from there.
///
/// ```no_run
/// use sansrpc_a2a::echo::{agent_card, EchoAgent};
/// use sansrpc_a2a::tokio::{Options, Peers};
/// use sansrpc_store_nats::{A2aFanout, NatsTaskStore};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let nats = "nats://127.0.0.1:4222";
/// let peers = Peers::new();
/// // Every process of "echo" connects to the same NATS...
/// let fanout = A2aFanout::connect(nats, "echo", &peers)?;
/// let options = Options::default()
///     .task_store(NatsTaskStore::connect(nats, "echo")?)
///     .peers(peers);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// let card = agent_card("http://127.0.0.1:3000/a2a");
/// sansrpc_a2a::tokio::serve_with(
///     listener, EchoAgent::new(), card, Default::default(), options, std::future::pending(),
/// )
/// .await?;
/// // ...and keeps the fan-out while serving.
/// drop(fanout);
/// # Ok(())
/// # }
/// ```
///
/// # Subjects
/// Under the bus's prefix ([`PUB_PREFIX`]) and the agent's name (escaped as topics are), so
/// `sansrpc.pub.a2a.<agent>.` followed by `changes` (the payload a
/// [`Change`](sansrpc_a2a::store::Change) as JSON: task id, version, event) or `resync`.
/// Processes of one agent (same name) on one NATS account hear each other.
///
/// # Delivery
/// As [`McpFanout`](crate::McpFanout)'s: at most once, no loop (`no_echo`; a change applied
/// from elsewhere is not announced again, but for a cancel reaching the process that runs
/// the task, which announces the canceled task once more), nothing stored by core NATS. Each change carries
/// the task's version, so a process applies a task's changes once and in order, and one
/// that sees a version jump (it missed a change) loads the task from the store instead. What
/// may be lost is covered by a resync (every process loads again the tasks its streams
/// watch): after this process was disconnected (it resyncs, and asks the others to),
/// past [`A2A_QUEUE`] changes waiting to be published (dropped, counted in
/// [`dropped`](Self::dropped), then `resync` published), and when NATS dropped messages for
/// this slow subscriber. A stream on a task whose last event was lost gets the task's status
/// at the next resync.
pub struct A2aFanout {
    peers: Peers,
    hook: Arc<Hook>,
    // Last: dropping it stops the tasks.
    link: Link,
}

impl std::fmt::Debug for A2aFanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aFanout")
            .field("subjects", &self.link.subject())
            .field("connected", &self.is_connected())
            .field("dropped", &self.dropped())
            .field("received", &self.received())
            .field("resyncs", &self.resyncs())
            .finish_non_exhaustive()
    }
}

/// What the server's [`Peers`] holds: the publishing task's queue.
struct Hook(Arc<Outbox>);

impl Fanout for Hook {
    fn announce(&self, change: &Change) {
        self.0.send(CHANGES, change.to_json());
    }
}

/// What the other processes' changes do here.
struct Server(Peers);

impl Inbox for Server {
    fn heard(&self, suffix: &str, payload: &[u8]) -> bool {
        if suffix != CHANGES {
            return false;
        }
        match Change::from_json(payload) {
            Some(change) => self.0.apply(&change),
            None => false,
        }
    }

    fn resync(&self) {
        self.0.resync();
    }
}

impl A2aFanout {
    /// Connects to the NATS server at `url`, subscribes to the changes of agent `agent`'s
    /// other processes, and sets itself as the fan-out of `peers` (the link the server is
    /// given with `Options::peers`). Returns once the subscription is registered at the NATS
    /// server; fails when NATS is unreachable. Dropping it removes the fan-out again.
    pub fn connect(url: &str, agent: &str, peers: &Peers) -> Result<Self, Error> {
        let subject = format!("{PUB_PREFIX}a2a.{}", escape(agent));
        let link = Link::connect(
            url,
            "sansrpc a2a fanout",
            subject,
            A2A_QUEUE,
            Arc::new(Server(peers.clone())),
        )?;
        let hook = Arc::new(Hook(link.outbox.clone()));
        peers.set_fanout(Some(hook.clone()));
        Ok(A2aFanout {
            peers: peers.clone(),
            hook,
            link,
        })
    }

    /// The subjects' common prefix: `sansrpc.pub.a2a.<escaped agent name>`.
    pub fn subject_prefix(&self) -> &str {
        self.link.subject()
    }

    /// Whether the connection to NATS is up.
    pub fn is_connected(&self) -> bool {
        self.link.is_connected()
    }

    /// How many changes made here were not handed to NATS (made while disconnected, past
    /// [`A2A_QUEUE`] waiting, or refused by the client).
    pub fn dropped(&self) -> u64 {
        self.link.dropped()
    }

    /// How many changes from other processes were applied here.
    pub fn received(&self) -> u64 {
        self.link.received()
    }

    /// How many times this process loaded its watched tasks again (resyncs).
    pub fn resyncs(&self) -> u64 {
        self.link.resyncs()
    }

    /// Waits until the NATS server processed everything this process published so far.
    pub fn flush(&self) -> Result<(), Error> {
        self.link.flush()
    }
}

impl Drop for A2aFanout {
    fn drop(&mut self) {
        // Removes the hook only if it is still this one.
        if let Some(current) = self.peers.set_fanout(None) {
            let ours: Arc<dyn Fanout> = self.hook.clone();
            if !Arc::ptr_eq(&current, &ours) {
                self.peers.set_fanout(Some(current));
            }
        }
    }
}
