//! The driver: one task per connection that owns the [`Endpoint`] and runs its loop.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::io;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::channel::{mpsc, oneshot};
use futures::future::{AbortHandle, Abortable};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use sansrpc::codec::FrameError;
use sansrpc::endpoint::{
    Config, EndReason, Event, IncomingId, RequestId, RequestOptions, SendError,
};
use sansrpc::ext::keepalive::{self, Beat, Heard, Heartbeat, HeartbeatConfig};
use sansrpc::router::Reply;
use sansrpc::{Endpoint, ErrorObject, Instant, Notification};

use crate::client::{CallError, Client, Command, RawResult};
use crate::extension::{Extension, Slot};
use crate::router::{AsyncRouter, BoxFuture, HandlerResult, Work};
use crate::stream::Producer;
use crate::timer::Timer;
use crate::transport::{Received, Transport};
use sansrpc::ext::stream::{Produced, StreamConfig, StreamTable};

/// How long output queued at close may take to reach the peer before the driver gives up.
const LINGER: Duration = Duration::from_secs(1);

/// Commands taken per turn of the loop, so a flood of calls cannot starve input.
const COMMANDS_PER_TURN: usize = 64;

/// Stream items produced per turn of the loop, so a fast stream cannot starve the rest.
const ITEMS_PER_TURN: usize = 4096;

type EventHook = Arc<dyn for<'a> Fn(Event<'a>) + Send + Sync>;

/// Sets up a connection: the endpoint's [`Config`], the router that serves the peer's
/// requests, and the driver's own bounds. Cheap to clone, for accept loops.
#[derive(Clone)]
pub struct Builder {
    config: Config,
    router: Option<Arc<AsyncRouter>>,
    max_concurrent: usize,
    max_queued_notifications: usize,
    on_event: Option<EventHook>,
    heartbeat: Option<HeartbeatConfig>,
    streams: StreamConfig,
    /// Extension: per-connection hook (pub/sub), set with `Builder::extension`.
    pub(crate) extension: Option<Extension>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("config", &self.config)
            .field("router", &self.router)
            .field("max_concurrent", &self.max_concurrent)
            .field("max_queued_notifications", &self.max_queued_notifications)
            .field("heartbeat", &self.heartbeat)
            .finish()
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// The default endpoint config, no router (the peer's requests get `-32601`), 64
    /// concurrent requests, 1024 queued notifications.
    pub fn new() -> Self {
        Builder {
            config: Config::default(),
            router: None,
            max_concurrent: 64,
            max_queued_notifications: 1024,
            on_event: None,
            heartbeat: None,
            streams: StreamConfig::default(),
            extension: None,
        }
    }

    /// Bounds of the streams this connection serves (open streams, queued pulls, items per
    /// answer, idle timeout); see [`sansrpc::ext::stream`].
    pub fn stream_config(mut self, config: StreamConfig) -> Self {
        self.streams = config;
        self
    }

    /// The endpoint's config: framing of a byte stream, limits, default deadline,
    /// cancellation, bounds.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// The endpoint's config as set so far (message transports size their own buffers from
    /// its [`Limits`](sansrpc::Limits)).
    pub fn endpoint_config(&self) -> &Config {
        &self.config
    }

    /// The framing of a byte stream (Content-Length unless set).
    pub fn framing(mut self, framing: sansrpc::codec::Framing) -> Self {
        self.config.framing = Some(framing);
        self
    }

    /// Serves the peer's requests and notifications with `router`. A connection with a
    /// router runs until the peer closes or it is shut down; one without stops once every
    /// [`Client`] is dropped.
    pub fn router(self, router: AsyncRouter) -> Self {
        self.shared_router(Arc::new(router))
    }

    /// Like [`router`](Builder::router), sharing one router between connections.
    pub fn shared_router(mut self, router: Arc<AsyncRouter>) -> Self {
        self.router = Some(router);
        self
    }

    /// Most async request handlers running at once (default 64); further requests wait, in
    /// arrival order, and the endpoint answers `-32002` beyond
    /// [`Config::max_inflight_incoming`].
    pub fn max_concurrent_requests(mut self, n: usize) -> Self {
        self.max_concurrent = n.max(1);
        self
    }

    /// Most notifications waiting for their turn (default 1024); beyond it the driver stops
    /// reading until the handlers catch up.
    pub fn max_queued_notifications(mut self, n: usize) -> Self {
        self.max_queued_notifications = n.max(1);
        self
    }

    /// Called with every event the driver does not act on itself (unknown responses,
    /// errors without id, protocol and framing errors, rejected frames): for logging.
    pub fn on_event(mut self, hook: impl for<'a> Fn(Event<'a>) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(hook));
        self
    }

    /// Runs the application-level heartbeat of seed 002 §3.3.2 (for byte streams without
    /// native pings): the peer's `ping` notifications are answered with `pong` and never
    /// reach the router; with an interval set, a `ping` goes out every interval and the
    /// driver fails with [`io::ErrorKind::TimedOut`] when its `pong` is later than the
    /// timeout (pending calls then fail with [`CallError::is_closed`]).
    pub fn heartbeat(mut self, config: HeartbeatConfig) -> Self {
        self.heartbeat = Some(config);
        self
    }

    /// Builds the connection over `transport`, sleeping on `timer`: a [`Client`] to call the
    /// peer with, and the [`Driver`] future to spawn (or await) that does all the work.
    pub fn connect<T: Transport, Tm: Timer>(
        self,
        transport: T,
        timer: Tm,
    ) -> (Client, Driver<T, Tm>) {
        let mut config = self.config;
        if transport.is_message_based() {
            config.framing = None;
        } else if config.framing.is_none() {
            config.framing = Some(sansrpc::codec::Framing::ContentLength);
        }
        let (tx, commands) = mpsc::unbounded();
        let (shutdown_tx, shutdown_rx) = mpsc::unbounded();
        let serving = self.router.is_some();
        let driver = Driver {
            endpoint: Endpoint::new(config),
            transport,
            timer,
            start: std::time::Instant::now(),
            reached: None,
            commands,
            commands_open: true,
            deferred: None,
            shutdown_tx,
            shutdown_rx,
            phase: Phase::Running,
            input_open: true,
            closed_seen: false,
            sleep: None,
            calls: Calls::default(),
            server: Server {
                router: self.router.unwrap_or_default(),
                serving,
                reply: Reply::default(),
                running: FuturesUnordered::new(),
                aborts: BTreeMap::new(),
                waiting: VecDeque::new(),
                notifications: VecDeque::new(),
                max_concurrent: self.max_concurrent,
                max_queued: self.max_queued_notifications,
                streams: StreamTable::new(self.streams),
            },
            on_event: self.on_event,
            heartbeat: self.heartbeat.map(|c| Heartbeat::new(c, Instant::ZERO)),
            // Extension: per-connection hook (pub/sub).
            ext: self.extension.as_ref().map(Slot::open),
        };
        (Client::new(tx), driver)
    }
}

/// Asks a driver to shut down gracefully; from [`Driver::shutdown_handle`].
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    tx: mpsc::UnboundedSender<Duration>,
}

impl ShutdownHandle {
    /// Stops reading and taking new calls, lets the handlers in flight finish for up to
    /// `grace` (their answers go out), then closes: pending calls fail with
    /// [`CallError::is_closed`], unfinished handlers are dropped, queued output gets a
    /// short while to reach the peer. The driver future completes after that.
    pub fn shutdown(&self, grace: Duration) {
        let _ = self.tx.unbounded_send(grace);
    }

    /// True once the driver has finished.
    pub fn is_finished(&self) -> bool {
        self.tx.is_closed()
    }
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Running,
    /// Shutting down: handlers may finish until the deadline.
    Draining(std::time::Instant),
    /// The endpoint is closed: output may drain until the deadline.
    Closing(std::time::Instant),
    Done,
}

enum Waiter {
    Single {
        key: u64,
        reply: oneshot::Sender<RawResult>,
    },
    Batch {
        key: u64,
        index: usize,
    },
}

struct PendingBatch {
    ids: Vec<RequestId>,
    results: Vec<Option<RawResult>>,
    remaining: usize,
    reply: oneshot::Sender<Result<Vec<RawResult>, CallError>>,
}

/// Our calls awaiting answers, by request id and by the handle's key.
#[derive(Default)]
struct Calls {
    waiters: BTreeMap<RequestId, Waiter>,
    singles: BTreeMap<u64, RequestId>,
    batches: BTreeMap<u64, PendingBatch>,
}

impl Calls {
    fn resolve(&mut self, id: RequestId, result: RawResult) {
        match self.waiters.remove(&id) {
            Some(Waiter::Single { key, reply }) => {
                self.singles.remove(&key);
                let _ = reply.send(result);
            }
            Some(Waiter::Batch { key, index }) => {
                let Some(batch) = self.batches.get_mut(&key) else {
                    return;
                };
                batch.results[index] = Some(result);
                batch.remaining -= 1;
                if batch.remaining == 0 {
                    if let Some(batch) = self.batches.remove(&key) {
                        let results = batch.results.into_iter();
                        let missing = || Err(CallError::Ended(EndReason::Cancelled));
                        let results = results.map(|r| r.unwrap_or_else(missing)).collect();
                        let _ = batch.reply.send(Ok(results));
                    }
                }
            }
            None => {}
        }
    }

    /// The requests of the call or batch with this key, forgotten.
    fn forget(&mut self, key: u64) -> Vec<RequestId> {
        if let Some(id) = self.singles.remove(&key) {
            self.waiters.remove(&id);
            return vec![id];
        }
        let ids = self.batches.remove(&key).map(|b| b.ids).unwrap_or_default();
        ids.into_iter()
            .filter(|id| self.waiters.remove(id).is_some())
            .collect()
    }
}

type Running = BoxFuture<(IncomingId, Option<HandlerResult>)>;

/// The peer's requests and notifications being handled.
struct Server {
    router: Arc<AsyncRouter>,
    serving: bool,
    reply: Reply,
    running: FuturesUnordered<Running>,
    aborts: BTreeMap<IncomingId, AbortHandle>,
    waiting: VecDeque<(IncomingId, BoxFuture<HandlerResult>)>,
    notifications: VecDeque<BoxFuture<()>>,
    max_concurrent: usize,
    max_queued: usize,
    streams: StreamTable<Producer>,
}

impl Server {
    fn enqueue(&mut self, id: IncomingId, work: BoxFuture<HandlerResult>) {
        let work = AssertUnwindSafe(work)
            .catch_unwind()
            .map(|r| r.unwrap_or_else(|_| Err(ErrorObject::internal_error())))
            .boxed();
        if self.running.len() < self.max_concurrent {
            self.start(id, work);
        } else {
            self.waiting.push_back((id, work));
        }
    }

    fn start(&mut self, id: IncomingId, work: BoxFuture<HandlerResult>) {
        let (handle, registration) = AbortHandle::new_pair();
        self.aborts.insert(id, handle);
        let running = Abortable::new(work, registration).map(move |r| (id, r.ok()));
        self.running.push(running.boxed());
    }

    fn notify(&mut self, work: BoxFuture<()>) {
        let work = AssertUnwindSafe(work).catch_unwind().map(|_| ()).boxed();
        self.notifications.push_back(work);
    }

    fn idle(&self) -> bool {
        self.running.is_empty() && self.waiting.is_empty() && self.notifications.is_empty()
    }

    fn clear(&mut self) {
        self.streams.clear();
        self.running.clear();
        self.aborts.clear();
        self.waiting.clear();
        self.notifications.clear();
    }
}

/// One connection's driver: a future that owns the [`Endpoint`] and runs until the peer
/// closes, an I/O error, or a [shutdown](ShutdownHandle::shutdown). Spawn it on any
/// executor (it is `Send`), or await it.
///
/// Each turn of its loop, until nothing moves: takes commands from [`Client`]s (send,
/// notify, batch, cancel); reads input into the endpoint, respecting its back-pressure;
/// routes events (responses to their callers, requests to handlers, notifications to the
/// in-order queue, peer cancels to the running handler); polls handlers and answers for
/// the finished ones; sleeps until the endpoint's next deadline; writes output.
pub struct Driver<T, Tm> {
    endpoint: Endpoint,
    transport: T,
    timer: Tm,
    start: std::time::Instant,
    /// The latest deadline a sleep completed for: the clock is never read as earlier.
    reached: Option<std::time::Instant>,
    commands: mpsc::UnboundedReceiver<Command>,
    commands_open: bool,
    /// A command the endpoint refused for a full output buffer, retried once it drains.
    deferred: Option<Command>,
    shutdown_tx: mpsc::UnboundedSender<Duration>,
    shutdown_rx: mpsc::UnboundedReceiver<Duration>,
    phase: Phase,
    input_open: bool,
    closed_seen: bool,
    sleep: Option<(std::time::Instant, BoxFuture<()>)>,
    calls: Calls,
    server: Server,
    on_event: Option<EventHook>,
    heartbeat: Option<Heartbeat>,
    /// The connection's extension (pub/sub), offered requests before the router.
    ext: Option<Slot>,
}

impl<T, Tm> fmt::Debug for Driver<T, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("endpoint", &self.endpoint)
            .field("phase", &self.phase)
            .field("calls", &self.calls.waiters.len())
            .field("running", &self.server.running.len())
            .finish()
    }
}

impl<T: Transport, Tm: Timer> Driver<T, Tm> {
    /// A handle to shut this driver down gracefully.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            tx: self.shutdown_tx.clone(),
        }
    }

    fn clock(&self) -> std::time::Instant {
        let now = std::time::Instant::now();
        self.reached.map_or(now, |r| r.max(now))
    }

    fn now(&self) -> Instant {
        Instant::from_duration(self.clock().saturating_duration_since(self.start))
    }

    fn cancelled(&self) -> ErrorObject<'static> {
        ErrorObject::fixed(self.endpoint.config().cancelled_code, "Request cancelled")
    }

    fn respond(&mut self, id: IncomingId, result: &HandlerResult) {
        // Fails only when the endpoint closed meanwhile: nobody to answer.
        let _ = match result {
            Ok(raw) => self.endpoint.respond(id, Ok(raw)),
            Err(e) => self.endpoint.respond(id, Err(e)),
        };
    }

    /// Hands one command to the endpoint; gives it back when the output buffer is full.
    fn apply(&mut self, command: Command, now: Instant) -> Option<Command> {
        let open = matches!(self.phase, Phase::Running);
        match command {
            Command::Cancel(key) => {
                for id in self.calls.forget(key) {
                    self.endpoint.cancel(id, now);
                }
            }
            Command::Call { reply, .. } if !open => {
                let _ = reply.send(Err(CallError::Send(SendError::Closed)));
            }
            Command::Notify { ack, .. } | Command::Progress { ack, .. } if !open => {
                let _ = ack.send(Err(CallError::Send(SendError::Closed)));
            }
            Command::Batch { reply, .. } if !open => {
                let _ = reply.send(Err(CallError::Send(SendError::Closed)));
            }
            Command::Call {
                key,
                method,
                params,
                timeout,
                progress,
                reply,
            } => {
                if reply.is_canceled() {
                    return None; // The caller left before it went out.
                }
                let mut options = RequestOptions::timeout(timeout);
                options.progress = progress.clone();
                match self
                    .endpoint
                    .send_request(&method, params.as_deref(), options, now)
                {
                    Ok(id) => {
                        self.calls.singles.insert(key, id);
                        self.calls.waiters.insert(id, Waiter::Single { key, reply });
                    }
                    Err(SendError::OutputFull) => {
                        return Some(Command::Call {
                            key,
                            method,
                            params,
                            timeout,
                            progress,
                            reply,
                        })
                    }
                    Err(e) => {
                        let _ = reply.send(Err(CallError::Send(e)));
                    }
                }
            }
            Command::Notify {
                method,
                params,
                ack,
            } => match self.endpoint.send_notification(&method, params.as_deref()) {
                Err(SendError::OutputFull) => {
                    return Some(Command::Notify {
                        method,
                        params,
                        ack,
                    })
                }
                r => {
                    let _ = ack.send(r.map_err(CallError::Send));
                }
            },
            Command::Progress { token, value, ack } => {
                match self.endpoint.send_progress(&token, &value) {
                    Err(SendError::OutputFull) => {
                        return Some(Command::Progress { token, value, ack })
                    }
                    r => {
                        let _ = ack.send(r.map_err(CallError::Send));
                    }
                }
            }
            Command::Batch {
                key,
                entries,
                timeout,
                reply,
            } => {
                if reply.is_canceled() {
                    return None;
                }
                let options = RequestOptions::timeout(timeout);
                let mut ids = Vec::new();
                let mut batch = self.endpoint.batch(now);
                let mut sent = Ok(());
                for e in &entries {
                    sent = if e.call {
                        batch
                            .request(&e.method, e.params.as_deref(), options.clone())
                            .map(|id| ids.push(id))
                    } else {
                        batch.notify(&e.method, e.params.as_deref())
                    };
                    if sent.is_err() {
                        break;
                    }
                }
                // Dropping an unsent builder forgets the requests it registered.
                let sent = sent.and_then(|()| batch.send());
                match sent {
                    Err(SendError::OutputFull) => {
                        return Some(Command::Batch {
                            key,
                            entries,
                            timeout,
                            reply,
                        })
                    }
                    Err(e) => {
                        let _ = reply.send(Err(CallError::Send(e)));
                    }
                    Ok(()) if ids.is_empty() => {
                        let _ = reply.send(Ok(Vec::new()));
                    }
                    Ok(()) => {
                        for (index, id) in ids.iter().enumerate() {
                            self.calls.waiters.insert(*id, Waiter::Batch { key, index });
                        }
                        let pending = PendingBatch {
                            results: ids.iter().map(|_| None).collect(),
                            remaining: ids.len(),
                            ids,
                            reply,
                        };
                        self.calls.batches.insert(key, pending);
                    }
                }
            }
        }
        None
    }

    fn poll_commands(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        let mut progress = false;
        if let Some(command) = self.deferred.take() {
            self.deferred = self.apply(command, now);
            if self.deferred.is_some() {
                return false;
            }
            progress = true;
        }
        for _ in 0..COMMANDS_PER_TURN {
            if !self.commands_open {
                break;
            }
            match self.commands.poll_next_unpin(cx) {
                Poll::Ready(Some(command)) => {
                    progress = true;
                    self.deferred = self.apply(command, now);
                    if self.deferred.is_some() {
                        break;
                    }
                }
                Poll::Ready(None) => {
                    self.commands_open = false;
                    progress = true;
                }
                Poll::Pending => break,
            }
        }
        progress
    }

    /// Drains the endpoint's events and acts on each.
    fn route_events(&mut self) -> bool {
        let mut any = false;
        // Batch sizes for the router's layers (metrics), before the batch's calls run.
        self.server
            .router
            .core()
            .observe_batches(&mut self.endpoint);
        let now = self.now();
        while let Some(event) = self.endpoint.poll_event() {
            any = true;
            match event {
                Event::Request { id, request } if request.method.starts_with("rpc.stream.") => {
                    let request = request.into_owned();
                    let now = self.now();
                    let streams = &mut self.server.streams;
                    if !streams.handle_request(&mut self.endpoint, id, &request, now) {
                        self.server
                            .router
                            .core()
                            .dispatch(&request, &mut self.server.reply);
                        let _ = self.server.reply.send(&mut self.endpoint, id);
                    }
                }
                Event::Notification(n) if n.method == sansrpc::ext::stream::CANCEL_METHOD => {
                    let n = n.into_owned();
                    self.server
                        .streams
                        .handle_notification(&mut self.endpoint, &n);
                }
                Event::Request { id, request }
                    if !self.server.streams.has_room()
                        && self.server.router.is_stream(&request.method) =>
                {
                    let refused = sansrpc::ext::stream::too_many_streams();
                    self.respond(id, &Err(refused));
                }
                Event::Request { id, request } => {
                    // Extension: offered the request before the router.
                    let request = match &mut self.ext {
                        Some(ext) => {
                            let request = request.into_owned();
                            if ext.offer(&mut self.endpoint, id, &request) {
                                continue;
                            }
                            request
                        }
                        None => request,
                    };
                    let router = &self.server.router;
                    let params = request.params.as_deref();
                    let work = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        router.request(&request.method, params, &request.id)
                    }));
                    match work {
                        Ok(Work::Call(work)) => self.server.enqueue(id, work),
                        Ok(Work::Stream(Ok(producer))) => {
                            let now = self.now();
                            let streams = &mut self.server.streams;
                            let _ = streams.open(&mut self.endpoint, id, producer, now);
                        }
                        Ok(Work::Stream(Err(e))) => self.respond(id, &Err(e)),
                        Ok(_) => {
                            router.core().dispatch(&request, &mut self.server.reply);
                            let _ = self.server.reply.send(&mut self.endpoint, id);
                        }
                        Err(_) => self.respond(id, &Err(ErrorObject::internal_error())),
                    }
                }
                Event::Notification(n) if self.heartbeat.is_some() && is_beat(&n.method) => {
                    let heard = self
                        .heartbeat
                        .as_mut()
                        .map(|h| h.handle_notification(&n.method, now));
                    if heard == Some(Heard::Ping) {
                        // A pong that finds the output full is dropped; the peer pings again.
                        let _ = self.endpoint.send_notification(keepalive::PONG, None);
                    }
                }
                Event::Notification(n) => {
                    let router = self.server.router.clone();
                    let params = n.params.as_deref();
                    let work = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        router.notification_work(&n.method, params)
                    }));
                    match work {
                        Ok(Work::Notify(work)) => self.server.notify(work),
                        // In order behind the async ones still queued; at once otherwise.
                        Ok(_) if self.server.notifications.is_empty() => router.core().notify(&n),
                        Ok(_) => {
                            let n = Notification {
                                method: Cow::Owned(n.method.into_owned()),
                                params: n.params.map(|p| Cow::Owned(p.into_owned())),
                                version: n.version,
                            };
                            self.server
                                .notify(async move { router.core().notify(&n) }.boxed());
                        }
                        Err(_) => {}
                    }
                }
                Event::Response { id, result } => {
                    let result = match result {
                        Ok(raw) => Ok(raw.into_owned()),
                        Err(e) => Err(CallError::Rpc(e.into_owned())),
                    };
                    self.calls.resolve(id, result);
                }
                Event::Ended { id, reason } => {
                    self.calls.resolve(id, Err(CallError::Ended(reason)))
                }
                Event::PeerCancelled { id } => {
                    if self
                        .server
                        .streams
                        .handle_peer_cancelled(&mut self.endpoint, id)
                    {
                        continue;
                    }
                    if let Some(handle) = self.server.aborts.get(&id) {
                        handle.abort(); // Answered when its future is dropped.
                    } else if let Some(i) = self.server.waiting.iter().position(|w| w.0 == id) {
                        self.server.waiting.remove(i);
                        let cancelled = self.cancelled();
                        self.respond(id, &Err(cancelled));
                    }
                }
                Event::Closed => {
                    self.closed_seen = true;
                    self.server.clear();
                }
                other => {
                    if let Event::FrameError(e @ FrameError::WrongFraming { .. }) = &other {
                        tracing::warn!("sansrpc: {e}");
                    }
                    if let Some(hook) = &self.on_event {
                        hook(other);
                    }
                }
            }
        }
        any
    }

    /// Polls request handlers (answering the finished ones) and the notification in turn.
    fn poll_handlers(&mut self, cx: &mut Context<'_>) -> bool {
        let mut progress = false;
        while let Poll::Ready(Some((id, outcome))) = self.server.running.poll_next_unpin(cx) {
            progress = true;
            self.server.aborts.remove(&id);
            let outcome = outcome.unwrap_or_else(|| Err(self.cancelled()));
            self.respond(id, &outcome);
        }
        while self.server.running.len() < self.server.max_concurrent {
            let Some((id, work)) = self.server.waiting.pop_front() else {
                break;
            };
            self.server.start(id, work);
            progress = true;
        }
        if self.server.streams.wants_items() {
            let now = self.now();
            let taken = self.server.streams.produce(
                &mut self.endpoint,
                now,
                ITEMS_PER_TURN,
                |_, producer, out, _| match std::panic::catch_unwind(AssertUnwindSafe(|| {
                    producer.poll_item(cx, out)
                })) {
                    Ok(produced) => produced,
                    Err(_) => Produced::Error(ErrorObject::internal_error()),
                },
            );
            progress |= taken > 0;
        }
        if progress {
            // Newly started handlers must be polled to register their wakers.
            return true;
        }
        while let Some(front) = self.server.notifications.front_mut() {
            match front.poll_unpin(cx) {
                Poll::Ready(()) => {
                    self.server.notifications.pop_front();
                    progress = true;
                }
                Poll::Pending => break,
            }
        }
        progress
    }

    /// Fires the endpoint's deadlines; sleeps until the next one (or the phase's).
    fn poll_timers(&mut self, cx: &mut Context<'_>) -> bool {
        let now = self.now();
        let deadline = match (
            self.endpoint.poll_timeout(),
            self.server.streams.poll_timeout(),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(d) = deadline.filter(|d| *d <= now) {
            self.endpoint.handle_timeout(now.max(d));
            self.server.streams.handle_timeout(now.max(d));
            return true;
        }
        let heartbeat = self
            .heartbeat
            .as_mut()
            .filter(|_| matches!(self.phase, Phase::Running));
        let beat = heartbeat.as_ref().and_then(|h| h.poll_timeout());
        if let (Some(h), Some(_)) = (heartbeat, beat.filter(|d| *d <= now)) {
            if h.handle_timeout(now) == Some(Beat::SendPing) {
                let _ = self.endpoint.send_notification(keepalive::PING, None);
            }
            return true;
        }
        let deadline = match (deadline, beat) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let phase_deadline = match self.phase {
            Phase::Draining(d) | Phase::Closing(d) => Some(d),
            _ => None,
        };
        let endpoint_deadline = deadline.map(|d| self.start + d.since_epoch());
        let target = match (endpoint_deadline, phase_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(target) = target else {
            self.sleep = None;
            return false;
        };
        if self.sleep.as_ref().map(|s| s.0) != Some(target) {
            self.sleep = Some((target, self.timer.sleep_until(target).boxed()));
        }
        let fired = self
            .sleep
            .as_mut()
            .is_some_and(|s| s.1.poll_unpin(cx).is_ready());
        if fired {
            self.sleep = None;
            self.reached = Some(self.clock().max(target));
        }
        fired
    }

    /// Moves between phases: shutdown requested, handlers done, endpoint closed.
    fn advance(&mut self, cx: &mut Context<'_>) -> bool {
        let clock = self.clock();
        if self.closed_seen && matches!(self.phase, Phase::Running | Phase::Draining(_)) {
            self.phase = Phase::Closing(clock + LINGER);
            return true;
        }
        match self.phase {
            Phase::Running => {
                let grace = match self.shutdown_rx.poll_next_unpin(cx) {
                    Poll::Ready(Some(grace)) => Some(grace),
                    // Nobody can call any more and nothing is served: nothing left to do.
                    _ if !self.commands_open && !self.server.serving => Some(Duration::ZERO),
                    _ => None,
                };
                if let Some(grace) = grace {
                    self.phase = Phase::Draining(clock + grace);
                    return true;
                }
                false
            }
            Phase::Draining(deadline) if self.server.idle() || clock >= deadline => {
                self.server.clear();
                self.endpoint.close(self.now());
                true
            }
            _ => false,
        }
    }

    /// Closes the endpoint, fails every call still waiting, and stops taking commands.
    fn finish(&mut self) {
        // Extension: the connection is over.
        if let Some(ext) = &mut self.ext {
            ext.close();
        }
        self.endpoint.close(self.now());
        self.route_events();
        self.server.clear();
        self.commands.close();
        let mut commands = Vec::new();
        commands.extend(self.deferred.take());
        while let Ok(command) = self.commands.try_recv() {
            commands.push(command);
        }
        self.phase = Phase::Done;
        for command in commands {
            self.apply(command, self.now());
        }
        self.shutdown_rx.close();
    }

    fn poll_drive(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if matches!(self.phase, Phase::Done) {
            return Poll::Ready(Ok(()));
        }
        loop {
            let now = self.now();
            let mut progress = self.poll_commands(cx, now);
            let reading = matches!(self.phase, Phase::Running)
                && self.input_open
                && self.server.notifications.len() < self.server.max_queued;
            if reading {
                match self.transport.poll_receive(cx, &mut self.endpoint, now) {
                    Poll::Ready(Ok(Received::Data)) => progress = true,
                    Poll::Ready(Ok(Received::Stalled)) | Poll::Pending => {}
                    Poll::Ready(Ok(Received::End)) => {
                        self.input_open = false;
                        progress = true;
                    }
                    Poll::Ready(Err(e)) => {
                        self.finish();
                        return Poll::Ready(Err(e));
                    }
                }
            }
            progress |= self.route_events();
            progress |= self.poll_handlers(cx);
            progress |= self.poll_timers(cx);
            if self.heartbeat.as_ref().is_some_and(Heartbeat::is_dead) {
                self.finish();
                let timeout = self.heartbeat.as_ref().map(|h| h.config().timeout);
                let e = format!("no pong within {timeout:?}");
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, e)));
            }
            progress |= self.advance(cx);
            // Extension: its notifications, as much as the output takes.
            if let Some(ext) = &mut self.ext {
                progress |= ext.poll(cx, &mut self.endpoint);
            }
            let before = self.endpoint.buffered_output();
            let flushed = match self.transport.poll_transmit(cx, &mut self.endpoint) {
                Poll::Ready(Ok(())) => true,
                Poll::Ready(Err(e)) => {
                    self.finish();
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => false,
            };
            let wrote = self.endpoint.buffered_output() < before;
            progress |= wrote;
            // The write-stall rule is the endpoint's: it is told whether output moved.
            let pending = !flushed || self.endpoint.buffered_output() > 0;
            self.endpoint.handle_write(wrote, pending, self.now());
            if let Phase::Closing(deadline) = self.phase {
                let late = self.clock() >= deadline;
                if late || (flushed && self.transport.poll_close(cx).is_ready()) {
                    self.finish();
                    return Poll::Ready(Ok(()));
                }
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }
}

fn is_beat(method: &str) -> bool {
    method == keepalive::PING || method == keepalive::PONG
}

// Nothing in the driver is ever pinned in place: the timer is only borrowed, the transport
// is `Unpin`, and every future it holds is boxed.
impl<T, Tm> Unpin for Driver<T, Tm> {}

impl<T: Transport, Tm: Timer> Future for Driver<T, Tm> {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_drive(cx)
    }
}
