//! The standalone server and what it shares with the tower service: the machine behind
//! one lock, the agent's runs, the timer task and the push notifications' sender.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::FutureExt;

use sansrpc::codec::http::{Head, HttpFault};
use sansrpc_oauth::driver::{HttpTransport, HyperTransport};
use sansrpc_oauth::HttpRequest;
use sansrpc_runtime::{remove_and_shrink, Clock};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use sansrpc_tokio::host::{
    authorize, run_timers, serve_http, write_stream, Answerer, Keys, PollParts, PollStream,
    Request, Requests, ServerOptions, Streams, Times, TokenCheck, Validator, Wakeup, Writer,
    Writers,
};

use crate::agent::{Agent, BoxFuture, Host, Publisher};
use crate::http::{self, Delivery, Event, Now, Verdict};
use crate::machine::{RunId, SeededIds, Update};
use crate::store::{Change, Fanout, TaskStore};
use crate::types::{AgentCard, TaskState, Timestamp};

/// What [`serve_with`] and [`A2aService::with_options`](super::A2aService::with_options)
/// add to the defaults.
#[non_exhaustive]
pub struct Options {
    /// What every protocol's server takes: the bearer-token validator (the one MCP's
    /// servers take; `GetExtendedAgentCard` needs a valid token when
    /// [`http::Config::extended_card_needs_token`]), the event store of resumable streams
    /// (in memory by default, bounded by the config's `store_bytes` and `store_age`), and
    /// the listener's side (the standalone server only).
    pub server: ServerOptions,
    /// The card `GetExtendedAgentCard` answers with (the public card must declare
    /// `capabilities.extendedAgentCard`).
    pub extended_card: Option<AgentCard>,
    /// The HTTP client push notifications are POSTed with (default: hyper's, with
    /// rustls, `HyperTransport`); any [`HttpTransport`] replaces it.
    pub push_client: Option<Arc<dyn HttpTransport>>,
    /// Tries of one notification (default 3); between two, a wait of
    /// [`push_backoff`](Self::push_backoff), doubled each time. A 4xx answer but 408 and
    /// 429 is not tried again.
    pub push_attempts: u32,
    /// The first wait before a notification is tried again (default 200 ms).
    pub push_backoff: Duration,
    /// Notifications waiting to be sent (default 1024); past it a notification is
    /// dropped, so a webhook that does not answer slows nothing else.
    pub push_queue: usize,
    /// Where tasks are kept beyond the machine's memory (see [`crate::store`]): none by
    /// default (the machine's memory is the store); `sansrpc-store-redb`'s
    /// `RedbTaskStore` keeps them across restarts, `sansrpc-store-nats`'s `NatsTaskStore`
    /// shares them among the processes of the agent.
    pub task_store: Option<Box<dyn TaskStore>>,
    /// The link to the other processes of the agent: the server attaches itself to it, and
    /// a [`Fanout`] set on it carries the changes of tasks both ways.
    pub peers: Option<Peers>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            server: ServerOptions::default(),
            extended_card: None,
            push_client: None,
            push_attempts: 3,
            push_backoff: Duration::from_millis(200),
            push_queue: 1024,
            task_store: None,
            peers: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("server", &self.server)
            .field("extended_card", &self.extended_card.is_some())
            .field("push_attempts", &self.push_attempts)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Bearer tokens checked by `validator`.
    pub fn validator(self, validator: impl Fn(&str) -> TokenCheck + Send + Sync + 'static) -> Self {
        Options {
            server: self.server.validator(validator),
            ..self
        }
    }

    /// `card` for `GetExtendedAgentCard`.
    pub fn extended_card(mut self, card: AgentCard) -> Self {
        self.extended_card = Some(card);
        self
    }

    /// Push notifications POSTed with `client`.
    pub fn push_client(mut self, client: impl HttpTransport) -> Self {
        self.push_client = Some(Arc::new(client));
        self
    }

    /// Tasks kept in `store` as well.
    pub fn task_store(mut self, store: impl TaskStore + 'static) -> Self {
        self.task_store = Some(Box::new(store));
        self
    }

    /// The server attached to `peers`.
    pub fn peers(mut self, peers: Peers) -> Self {
        self.peers = Some(peers);
        self
    }
}

/// The link between one server and the other processes of the same agent: a
/// [`Fanout`] set on it ([`set_fanout`](Self::set_fanout)) gets every change of a task
/// made here, and hands the changes made elsewhere back with [`apply`](Self::apply) (as
/// `sansrpc-store-nats`'s `A2aFanout` does over NATS). Give a clone to the server
/// ([`Options::peers`]); it holds no server alive.
#[derive(Clone, Default)]
pub struct Peers(Arc<Mutex<Link>>);

#[derive(Default)]
struct Link {
    fanout: Option<Arc<dyn Fanout>>,
    server: Option<Weak<Mutex<Shared>>>,
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let link = self.link();
        f.debug_struct("Peers")
            .field("fanout", &link.fanout.is_some())
            .field("server", &link.server.is_some())
            .finish()
    }
}

impl Peers {
    /// A link with no server and no fan-out yet.
    pub fn new() -> Peers {
        Peers::default()
    }

    fn link(&self) -> MutexGuard<'_, Link> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets (or, with `None`, removes) the fan-out; returns the one it replaces.
    pub fn set_fanout(&self, fanout: Option<Arc<dyn Fanout>>) -> Option<Arc<dyn Fanout>> {
        std::mem::replace(&mut self.link().fanout, fanout)
    }

    fn fanout(&self) -> Option<Arc<dyn Fanout>> {
        self.link().fanout.clone()
    }

    fn server(&self) -> Option<State> {
        self.link().server.as_ref()?.upgrade().map(State)
    }

    /// A change another process made: applied by the server attached here
    /// ([`http::Endpoint::handle_remote`]). False when no server is attached (any more).
    pub fn apply(&self, change: &Change) -> bool {
        let Some(state) = self.server() else {
            return false;
        };
        let mut shared = state.lock();
        let now = shared.now();
        shared.server.handle_remote(now, change);
        state.settle(&mut shared);
        true
    }

    /// Changes from other processes may have been lost: the server attached here loads
    /// again the tasks its streams watch that run elsewhere ([`http::Endpoint::resync`]).
    pub fn resync(&self) -> bool {
        let Some(state) = self.server() else {
            return false;
        };
        let mut shared = state.lock();
        let now = shared.now();
        shared.server.resync(now);
        state.settle(&mut shared);
        true
    }
}

/// Serves `agent`, described by `card`, on `listener` until `shutdown` completes: the
/// card at `config.card_path`, JSON-RPC at `config.path`.
pub async fn serve(
    listener: TcpListener,
    agent: impl Agent,
    card: AgentCard,
    config: http::Config,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    serve_with(listener, agent, card, config, Options::default(), shutdown).await
}

/// [`serve`] with [`Options`].
pub async fn serve_with(
    listener: TcpListener,
    agent: impl Agent,
    card: AgentCard,
    config: http::Config,
    mut options: Options,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let serve = std::mem::take(&mut options.server.serve);
    let times = Times::of(
        serve
            .builder(sansrpc_tokio::Builder::new())
            .connection_config(),
    );
    let max_body = config.max_body;
    let (state, tasks) = serving(Arc::new(agent), card, config, options);
    let socket = |_| Socket(state.clone());
    let result = serve_http(listener, &serve, times, max_body, socket, shutdown, || {
        state.stop()
    })
    .await;
    // Once they are gone, so is the machine (and the task store it holds: a file is free
    // to open again when this returns, runs aside).
    tasks.stop().await;
    result
}

/// The tasks a server runs beside its requests: its timers and its push sender.
pub(crate) struct Background(tokio::task::JoinHandle<()>, tokio::task::JoinHandle<()>);

impl Background {
    pub(crate) fn abort(&self) {
        self.0.abort();
        self.1.abort();
    }

    /// Aborts both tasks and waits until they are dropped.
    async fn stop(self) {
        self.abort();
        let _ = self.0.await;
        let _ = self.1.await;
    }
}

/// The machine for `card` and `config`, with its timer task and push sender running.
pub(crate) fn serving(
    agent: Arc<dyn Agent>,
    card: AgentCard,
    config: http::Config,
    options: Options,
) -> (State, Background) {
    let seed = getrandom::u64().unwrap_or_else(|_| {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    });
    let ids = SeededIds::new(seed);
    let mut server = match options.server.event_store {
        Some(store) => http::Endpoint::with_store(config, card, ids, store),
        None => http::Endpoint::new(config, card, ids),
    };
    // Each process its own range of stream numbers (2^20 streams from a random base under
    // 2^52), so that a resume reaching another process behind a balancer names none of
    // its streams and starts fresh there.
    let base = getrandom::u64().unwrap_or(seed.rotate_left(29)) & 0xffff_ffff;
    server.number_streams_from(base << 20);
    if let Some(extended) = &options.extended_card {
        server.set_extended_card(extended);
    }
    if let Some(store) = options.task_store {
        server.set_task_store(store);
    }
    server.announce_changes(options.peers.is_some());
    let (push, deliveries) = mpsc::channel(options.push_queue.max(1));
    let state = State(Arc::new(Mutex::new(Shared {
        server,
        clock: Clock::new(),
        writers: Writers::default(),
        runs: HashMap::default(),
        agent,
        timer: Wakeup::default(),
        validator: options.server.validator,
        push,
        peers: options.peers.clone(),
    })));
    if let Some(peers) = &options.peers {
        peers.link().server = Some(Arc::downgrade(&state.0));
    }
    let client = options
        .push_client
        .unwrap_or_else(|| Arc::new(HyperTransport::new().timeout(Duration::from_secs(10))));
    let sender = PushSender {
        client,
        attempts: options.push_attempts.max(1),
        backoff: options.push_backoff,
    };
    let timers = tokio::spawn(timers(state.clone()));
    let pushes = tokio::spawn(sender.run(deliveries));
    (state, Background(timers, pushes))
}

/// What every request and run of one server shares.
pub(crate) struct Shared {
    pub(crate) server: http::Endpoint,
    clock: Clock,
    pub(crate) writers: Writers,
    /// The agent's runs going on.
    runs: HashMap<u64, AbortHandle, Keys>,
    agent: Arc<dyn Agent>,
    /// The timer task, woken when the machine's next deadline moved earlier.
    timer: Wakeup,
    validator: Option<Validator>,
    push: mpsc::Sender<Delivery>,
    peers: Option<Peers>,
}

/// The server behind its lock.
#[derive(Clone)]
pub(crate) struct State(Arc<Mutex<Shared>>);

impl State {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Shared> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops every run (the server stops).
    pub(crate) fn stop(&self) {
        for (_, run) in self.lock().runs.drain() {
            run.abort();
        }
    }

    /// Decides one request: what to write.
    pub(crate) fn dispatch(&self, head: &Head, body: &[u8]) -> Dispatched {
        let mut shared = self.lock();
        let now = shared.now();
        let (authorized, _) = authorize(shared.validator.as_ref(), head);
        let verdict = shared.server.handle_request(head, body, authorized, now);
        let dispatched = match verdict {
            Verdict::Respond(response) => Dispatched::Whole(response),
            Verdict::Stream(stream) => Dispatched::Stream(shared.writers.writer(stream)),
        };
        self.settle(&mut shared);
        dispatched
    }

    /// Does what the machine asks after an input: starts and stops runs, queues push
    /// notifications, wakes the writers of ready streams, and tells the timer task when the
    /// next deadline moved earlier.
    fn settle(&self, shared: &mut Shared) {
        while let Some(event) = shared.server.poll_event() {
            match event {
                Event::Run(run) => {
                    let id = run.id;
                    let host: Arc<dyn Host> = Arc::new(RunHost(self.clone()));
                    let publisher = Publisher::new(&run, host);
                    let work = shared.agent.execute(*run, publisher);
                    let state = self.clone();
                    let task = tokio::spawn(async move {
                        // An agent that panics fails its task (it was left working for
                        // ever: its blocking callers waiting, its follow-ups queued, never
                        // evicted).
                        let panicked = std::panic::AssertUnwindSafe(work)
                            .catch_unwind()
                            .await
                            .is_err();
                        let mut shared = state.lock();
                        remove_and_shrink(&mut shared.runs, &id.get());
                        let now = shared.now();
                        if panicked {
                            let failed = Update::status(TaskState::Failed, None);
                            let _ = shared.server.handle_update(now, id, failed);
                        }
                        shared.server.handle_run_end(now, id);
                        state.settle(&mut shared);
                    });
                    shared.runs.insert(id.get(), task.abort_handle());
                }
                Event::Stop(run) => {
                    if let Some(task) = remove_and_shrink(&mut shared.runs, &run.get()) {
                        task.abort();
                    }
                }
                Event::Push(delivery) => {
                    // Past the queue's bound the notification is dropped: a webhook that
                    // does not answer slows nothing else.
                    let _ = shared.push.try_send(*delivery);
                }
                Event::Announce(change) => {
                    if let Some(fanout) = shared.peers.as_ref().and_then(Peers::fanout) {
                        fanout.announce(&change);
                    }
                }
            }
        }
        // Durable before any of it reaches a client.
        shared.server.flush_store();
        while let Some(stream) = shared.server.poll_ready() {
            shared.writers.wake(stream);
        }
        let next = shared.server.poll_timeout();
        shared.timer.moved(next);
    }
}

impl Shared {
    fn now(&self) -> Now {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Now {
            instant: self.clock.now(),
            utc: Timestamp::from_duration_since_epoch(since).unwrap_or_default(),
        }
    }
}

/// What a request became.
pub(crate) enum Dispatched {
    /// Write this answer.
    Whole(http::Response),
    /// Serve this writer's stream until it ends.
    Stream(Writer),
}

/// What a run's agent publishes through: the machine, under the server's lock.
struct RunHost(State);

impl Host for RunHost {
    fn publish(&self, run: RunId, update: Update) {
        let mut shared = self.0.lock();
        let now = shared.now();
        // A refused update (past a bound, after the end) leaves the task as it was.
        let _ = shared.server.handle_update(now, run, update);
        self.0.settle(&mut shared);
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// The timer task: runs the machine's deadlines, and what they make ready.
async fn timers(state: State) {
    let sleep = || {
        let shared = &mut *state.lock();
        let next = shared.server.poll_timeout();
        shared.timer.sleep(next, &shared.clock)
    };
    let fire = || {
        let mut shared = state.lock();
        let now = shared.now();
        shared.server.handle_timeout(now);
        state.settle(&mut shared);
    };
    run_timers(sleep, fire).await
}

/// Posts the push notifications, in order, each tried a bounded number of times.
struct PushSender {
    client: Arc<dyn HttpTransport>,
    attempts: u32,
    backoff: Duration,
}

impl PushSender {
    async fn run(self, mut deliveries: mpsc::Receiver<Delivery>) {
        while let Some(delivery) = deliveries.recv().await {
            let mut wait = self.backoff;
            for attempt in 1..=self.attempts {
                let mut request = HttpRequest::post(delivery.url.clone(), delivery.body.clone());
                for (name, value) in &delivery.headers {
                    request = request.header(name, value.clone());
                }
                match self.client.send(request).await {
                    Ok(answer) if answer.is_success() => break,
                    // A refusal the receiver means (4xx but 408 and 429) is not tried again.
                    Ok(answer)
                        if (400..500).contains(&answer.status)
                            && ![408, 429].contains(&answer.status) =>
                    {
                        break
                    }
                    _ if attempt < self.attempts => {
                        tokio::time::sleep(wait).await;
                        wait *= 2;
                    }
                    _ => {}
                }
            }
        }
    }
}

/// One socket's side of the server.
struct Socket(State);

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Answerer<S> for Socket {
    fn refusal(&self, fault: HttpFault) -> Vec<u8> {
        http::refusal(fault).to_bytes()
    }

    async fn answer(&self, socket: &mut S, request: Request, reader: &mut Requests) -> bool {
        let (head, body) = request;
        match self.0.dispatch(&head, &body) {
            Dispatched::Whole(response) => socket.write_all(&response.to_bytes()).await.is_ok(),
            Dispatched::Stream(writer) => write_stream(socket, &self.0, writer, reader).await,
        }
    }
}

/// The machine's streams, as the drivers of their responses see them.
impl Streams for State {
    type Machine = http::Endpoint;
    type Head = http::StreamHead;
    const POLL: PollStream<http::Endpoint> = http::Endpoint::poll_stream;
    const POLL_PARTS: PollParts<http::Endpoint, http::StreamHead> =
        http::Endpoint::poll_stream_parts;

    fn locked<R>(&self, f: impl FnOnce(&mut http::Endpoint, &mut Writers) -> R) -> R {
        let shared = &mut *self.lock();
        f(&mut shared.server, &mut shared.writers)
    }

    fn closed(&self, writer: &Writer) {
        let mut shared = self.lock();
        if shared.writers.owns(writer) {
            let now = shared.now();
            shared.server.handle_stream_closed(writer.stream, now);
            self.settle(&mut shared);
        }
    }
}
