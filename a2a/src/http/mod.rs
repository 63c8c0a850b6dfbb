//! A2A's JSON-RPC binding over HTTP as a sans-I/O machine: for each HTTP request it
//! decides the answer and writes every byte of it; an adapter only moves bytes, runs the
//! agent and posts the push notifications.
//!
//! For each request the adapter parsed (a [`Head`] from a decoder that keeps the header
//! fields, and the body), [`Endpoint::handle_request`] gives a [`Verdict`]:
//!
//! - [`Verdict::Respond`]: write the [`Response`] (the agent card at
//!   [`Config::card_path`], every answer known at once, every refusal);
//! - [`Verdict::Stream`]: write what [`Endpoint::poll_stream`] gives (or
//!   [`Endpoint::poll_stream_parts`] for hyper) until it ends, waking when the stream is
//!   [ready](Endpoint::poll_ready): one JSON answer that comes later (a `SendMessage` that
//!   waits for its task to finish or ask for input), or Server-Sent Events
//!   (`SendStreamingMessage`, `SubscribeToTask`), each event a JSON-RPC response.
//!
//! The rules, as the A2A 1.0 specification and both SDKs (a2a-sdk 1.3, @a2a-js/sdk 1.3)
//! keep them: `POST` to [`Config::path`] with one JSON-RPC request (a batch is `-32600`,
//! unparsable JSON `-32700`, an unknown method `-32601`, params that do not decode
//! `-32602`), the `A2A-Version` header (or query parameter) checked on every call
//! (`-32009`; none means 0.3), every error a JSON-RPC error object with its ErrorInfo
//! (HTTP 200), an error found before a stream starts answered as one JSON body, and a
//! stream's events each `data: {"jsonrpc":"2.0","id":…,"result":<StreamResponse>}`.
//!
//! What MCP's streams have, A2A's have: every SSE event has an id (`stream.seq`), the
//! stream opens with a `retry` delay, idle streams get keep-alive comments, and the
//! events are kept in an [`EventStore`] so a client whose stream broke sends
//! `SubscribeToTask` again with `Last-Event-ID` and gets what it missed, then the rest
//! (a stream whose client went away lives on [`Config::detached`] for that). Without the
//! events (forgotten, or an unknown id) the new stream starts as a fresh subscription,
//! the task first: nothing of the task's state is lost either way.
//!
//! Push notifications: the configs of a task are kept here, bounded; every event of a task
//! with configs comes out as [`Event::Push`] for each of them, for the adapter to POST.
//!
//! Time is an argument ([`Now`]); the agent's runs are the adapter's
//! ([`Event::Run`], [`Event::Stop`], [`Endpoint::handle_update`], [`Endpoint::handle_run_end`]).

mod push;
mod rpc;
mod stream;
mod tasks;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use sansrpc::codec::http::{Head, HttpFault, HttpMethod};
use sansrpc::codec::sse::{EventStore, MemoryEventStore};
use sansrpc::driver::Timers;
use sansrpc::Instant;

use crate::machine::{self, Run, RunId, StreamId, TaskMachine, Update, UpdateError, WaiterId};
use crate::store::{Change, TaskStore};
use crate::types::{AgentCard, Timestamp};
use crate::version::AGENT_CARD_PATH;

pub use push::{Delivery, PushLimits, TOKEN_HEADER};
use stream::Stream;
pub use stream::StreamHead;

/// How the A2A endpoint behaves; every bound it keeps is here (the tasks' own are the task
/// machine's, [`machine::TaskConfig`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The JSON-RPC endpoint's path (default `/a2a`).
    pub path: String,
    /// Where the agent card is served (default `/.well-known/agent-card.json`).
    pub card_path: String,
    /// The task machine's config.
    pub tasks: machine::TaskConfig,
    /// Largest request body (default 4 MiB; the adapter's decoder refuses more with 413).
    pub max_body: usize,
    /// Most SSE streams at once, those kept for a client to resume included (default
    /// 1024): past it a streaming request is answered `-32603`.
    pub max_streams: usize,
    /// Most `SendMessage` requests waiting for their task at once (default 1024): past it
    /// `-32603`.
    pub max_waiting: usize,
    /// Most bytes a response may have waiting to be written (default 4 MiB): beyond it
    /// the response is cut (the client can resume the stream).
    pub max_stream_buffer: usize,
    /// How long a client whose stream broke waits before it resumes it: the stream's first
    /// event says (`retry`, default 1 s).
    pub retry: Duration,
    /// Idle streams get a keep-alive comment at this interval (default 15 s), so proxies
    /// and clients do not take them for dead.
    pub keepalive: Duration,
    /// How long a stream whose client went away is kept for it to resume with
    /// `Last-Event-ID` (default 60 s; zero: not kept).
    pub detached: Duration,
    /// The memory event store's bound on bytes (default 8 MiB) ...
    pub store_bytes: usize,
    /// ... and on an event's age (default 5 min).
    pub store_age: Duration,
    /// Bounds of the push notification configs (used when the card declares push
    /// notifications).
    pub push: PushLimits,
    /// `GetExtendedAgentCard` needs a valid bearer token (the adapter's validator says;
    /// default `true`): without one it is answered HTTP 401.
    pub extended_card_needs_token: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            path: String::from("/a2a"),
            card_path: String::from(AGENT_CARD_PATH),
            tasks: machine::TaskConfig::default(),
            max_body: 4 << 20,
            max_streams: 1024,
            max_waiting: 1024,
            max_stream_buffer: 4 << 20,
            retry: Duration::from_secs(1),
            keepalive: Duration::from_secs(15),
            detached: Duration::from_secs(60),
            store_bytes: 8 << 20,
            store_age: Duration::from_secs(300),
            push: PushLimits::default(),
            extended_card_needs_token: true,
        }
    }
}

/// The time, as the machine takes it: monotonic for its timers, UTC for the tasks'
/// statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// The driver's monotonic clock.
    pub instant: Instant,
    /// The wall clock, in UTC.
    pub utc: Timestamp,
}

// What the adapter's token validator found, and an answer written whole: HTTP's, the same
// for every server (`codec::http`).
pub use sansrpc::codec::http::{Authorized, WholeResponse as Response};

/// The answer to a request the adapter could not read ([`HttpFault`]): a JSON-RPC error
/// (id `null`, `-32600`) that names the fault
/// ([`WholeResponse::refusal`](sansrpc::codec::http::WholeResponse::refusal)), with
/// `connection: close`. An adapter writes it and closes.
pub fn refusal(fault: HttpFault) -> Response {
    Response::refusal(fault.status()).header("connection", "close")
}

/// What to do with one HTTP request; from [`Endpoint::handle_request`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Write this response.
    Respond(Response),
    /// Serve this stream ([`Endpoint::poll_stream`]) until it ends.
    Stream(u64),
}

/// What the machine asks of its adapter; from [`Endpoint::poll_event`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// Start the agent on this run; report what it publishes with
    /// [`Endpoint::handle_update`] and its end with [`Endpoint::handle_run_end`].
    Run(Box<Run>),
    /// Stop this run (its task was canceled or evicted): drop the agent's future.
    Stop(RunId),
    /// POST this notification.
    Push(Box<Delivery>),
    /// Hand this change of a task to the [`Fanout`](crate::store::Fanout), for the other
    /// processes (with [`Endpoint::announce_changes`]).
    Announce(Box<Change>),
}

/// What a timer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// A stream's keep-alive, or the end of its wait for a client to resume it.
    Stream(u64),
    /// The event store's age bound.
    Store,
}

/// The A2A endpoint; see the [module documentation](self).
pub struct Endpoint {
    config: Config,
    card: AgentCard,
    card_json: Vec<u8>,
    extended: Option<Vec<u8>>,
    tasks: TaskMachine,
    streams: BTreeMap<u64, Stream>,
    /// The HTTP stream of each task stream and waiter of the task machine.
    by_stream: BTreeMap<StreamId, u64>,
    by_waiter: BTreeMap<WaiterId, u64>,
    sse_streams: usize,
    next: u64,
    store: Box<dyn EventStore>,
    timers: Timers<Timer>,
    store_armed: bool,
    /// Streams with something for their writers.
    ready: BTreeSet<u64>,
    events: VecDeque<Event>,
    push: push::Configs,
    /// Where tasks are kept beyond the machine (see [`crate::store`]).
    task_store: Option<Box<dyn TaskStore>>,
    store_errors: u64,
    announce: bool,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("tasks", &self.tasks)
            .field("streams", &self.streams.len())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// The endpoint of the agent described by `card`, its tasks' ids from `ids`.
    pub fn new(
        config: Config,
        card: AgentCard,
        ids: impl machine::IdSource + Send + 'static,
    ) -> Self {
        let store = MemoryEventStore::new(config.store_bytes, config.store_age);
        Endpoint::with_store(config, card, ids, Box::new(store))
    }

    /// [`new`](Self::new), the SSE events kept in `store`.
    pub fn with_store(
        config: Config,
        card: AgentCard,
        ids: impl machine::IdSource + Send + 'static,
        store: Box<dyn EventStore>,
    ) -> Self {
        let card_json = serde_json::to_vec(&card).expect("a card serializes");
        // On a durable store, new streams are numbered above what it holds from before a
        // restart: a stream number never names another run's events (a new stream's
        // replay would otherwise give the old stream's later events, of another task).
        let next = store.last_stream();
        Endpoint {
            tasks: TaskMachine::new(config.tasks.clone(), ids),
            push: push::Configs::new(config.push.clone()),
            config,
            card,
            card_json,
            extended: None,
            streams: BTreeMap::new(),
            by_stream: BTreeMap::new(),
            by_waiter: BTreeMap::new(),
            sse_streams: 0,
            next,
            store,
            timers: Timers::new(),
            store_armed: false,
            ready: BTreeSet::new(),
            events: VecDeque::new(),
            task_store: None,
            store_errors: 0,
            announce: false,
        }
    }

    /// The card `GetExtendedAgentCard` answers with (the card must declare
    /// `capabilities.extendedAgentCard`).
    pub fn set_extended_card(&mut self, card: &AgentCard) {
        self.extended = Some(serde_json::to_vec(card).expect("a card serializes"));
    }

    /// The config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The agent card.
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    /// The task machine (to read tasks).
    pub fn tasks(&self) -> &TaskMachine {
        &self.tasks
    }

    /// HTTP streams open (SSE streams, kept ones included, and waiting answers).
    pub fn streams(&self) -> usize {
        self.streams.len()
    }

    /// Numbers the endpoint's new HTTP streams from `base` on (never below what the
    /// event store holds, nor below streams already numbered). A server among several
    /// behind one balancer gives each process a random base, so that an SSE event id of
    /// one process's stream names none of another's: a `Last-Event-ID` that reaches
    /// another process starts a fresh subscription there, rather than resuming that
    /// process's stream of the same number (another subscriber's, whose events it numbers
    /// otherwise). The tokio server does this itself.
    pub fn number_streams_from(&mut self, base: u64) {
        self.next = self.next.max(base);
    }

    /// Makes the events the store took since the last call durable (a durable store
    /// commits them; the in-memory one has nothing to do). A driver calls it once per
    /// turn, after handing the machine its input and before waking the writers of the
    /// streams it made ready, so a store commits once per turn rather than once per
    /// event, and nothing reaches a client that a crash could take back.
    pub fn flush_store(&mut self) {
        self.store.flush();
    }

    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Decides what to answer to one HTTP request; see [`Verdict`].
    pub fn handle_request(
        &mut self,
        head: &Head,
        body: &[u8],
        authorized: Authorized,
        now: Now,
    ) -> Verdict {
        let path = head.target().split('?').next().unwrap_or_default();
        if path == self.config.card_path {
            return Verdict::Respond(match head.method {
                HttpMethod::Get => Response::json(200, self.card_json.clone()),
                _ => Response::new(405).header("allow", "GET"),
            });
        }
        if path != self.config.path {
            return Verdict::Respond(Response::new(404));
        }
        if head.method != HttpMethod::Post {
            return Verdict::Respond(Response::new(405).header("allow", "POST"));
        }
        if body.len() > self.config.max_body {
            return Verdict::Respond(refusal(HttpFault::BodyTooLarge));
        }
        let verdict = self.call(head, body, authorized, now);
        // Whichever request a stream's response answers now (a resumption may be another).
        if let Some(s) = match verdict {
            Verdict::Stream(stream) => self.streams.get_mut(&stream),
            Verdict::Respond(_) => None,
        } {
            s.close_delimited = head.http10;
        }
        self.drain(now);
        verdict
    }

    /// What run `run` publishes; `Err` refuses it (the task is unchanged).
    pub fn handle_update(
        &mut self,
        now: Now,
        run: RunId,
        update: Update,
    ) -> Result<(), UpdateError> {
        let result = self.tasks.handle_update(now.utc, run, update);
        self.drain(now);
        result
    }

    /// Run `run` ended.
    pub fn handle_run_end(&mut self, now: Now, run: RunId) {
        self.tasks.handle_run_end(run);
        self.drain(now);
    }

    /// The next thing the adapter must do, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The next stream with something for its writer (each once, oldest first).
    pub fn poll_ready(&mut self) -> Option<u64> {
        self.ready.pop_first()
    }

    fn wake(&mut self, stream: u64) {
        if self.streams.contains_key(&stream) {
            self.ready.insert(stream);
        }
    }

    /// The earliest deadline; call [`handle_timeout`](Self::handle_timeout) then.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }

    /// Runs what is due at `now`: keep-alives, streams no client resumed, old events.
    pub fn handle_timeout(&mut self, now: Now) {
        while let Some(timer) = self.timers.pop_due(now.instant) {
            match timer {
                Timer::Store => {
                    self.store.expire(now.instant);
                    self.store_armed = false;
                    self.arm_store(now.instant);
                }
                Timer::Stream(stream) => self.stream_timer(stream, now),
            }
        }
        self.drain(now);
    }

    fn arm_store(&mut self, now: Instant) {
        if !self.store_armed && self.sse_streams > 0 {
            self.store_armed = true;
            self.timers.set(
                Timer::Store,
                Some(now + self.config.store_age.max(Duration::from_secs(1))),
            );
        }
    }

    /// A task whose push watcher ended (a stream ends when its task asks for input) and
    /// that is not over: watched again, so that what it does once answered is posted too.
    fn watch_again(&mut self, task: String) {
        let request = crate::types::SubscribeToTaskRequest {
            id: task,
            ..Default::default()
        };
        // A terminal task has no stream: nothing more to post.
        if let Ok(stream) = self.tasks.handle_subscribe(&request) {
            self.push.watch_again(&request.id, stream);
        }
    }

    /// Hands the task machine's events on: answers to waiting requests and streams,
    /// runs and stops to the adapter, task updates to the push configs.
    fn drain(&mut self, now: Now) {
        while let Some(event) = self.tasks.poll_event() {
            match event {
                machine::TaskEvent::Run(run) => self.events.push_back(Event::Run(run)),
                machine::TaskEvent::Stop { run, .. } => self.events.push_back(Event::Stop(run)),
                machine::TaskEvent::Reply { waiter, response } => {
                    if let Some(stream) = self.by_waiter.remove(&waiter) {
                        self.reply(stream, &response);
                    }
                }
                machine::TaskEvent::Stream {
                    streams,
                    response,
                    last,
                } => {
                    let json = serde_json::to_vec(&response).expect("events serialize");
                    for id in streams {
                        if let Some(&stream) = self.by_stream.get(&id) {
                            self.send_event(stream, &json, last, now.instant);
                        } else if let Some(task) = self.push.watcher(id) {
                            let task = task.to_owned();
                            if !self.push.quiet(id) {
                                for delivery in self.push.deliveries(&task, &json) {
                                    self.events.push_back(Event::Push(Box::new(delivery)));
                                }
                            }
                        }
                        if last {
                            self.by_stream.remove(&id);
                            if let Some(task) = self.push.watch_ended(id) {
                                self.watch_again(task);
                            }
                        }
                    }
                }
            }
        }
        self.persist();
    }
}
