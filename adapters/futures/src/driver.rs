//! The driver: one task per connection that owns its [`Connection`] machine and does its
//! I/O. Every protocol rule (correlation, batches, cancellation, streams, heartbeat, the
//! close phases) is the core's; this file reads, writes, sleeps and runs handlers.

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
use futures::task::AtomicWaker;
use futures::{FutureExt, StreamExt};
use sansrpc::codec::FrameError;
use sansrpc::connection::{self, CloseReason, Connection};
use sansrpc::endpoint::{Config, EndReason, Event, IncomingId, RequestOptions, SendError};
use sansrpc::ext::keepalive::HeartbeatConfig;
use sansrpc::ext::stream::{Produced, StreamConfig};
use sansrpc::router::Reply;
use sansrpc::{ErrorObject, Instant, Notification};

use crate::client::{CallError, Client, Command, RawResult};
use crate::extension::Extension;
use crate::router::{AsyncRouter, BoxFuture, HandlerResult, Work};
use crate::stream::Producer;
use crate::timer::Timer;
use crate::transport::{Received, Transport};

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
        let mut config = connection::Config::new(self.config);
        if transport.is_message_based() {
            config.endpoint.framing = None;
        } else if config.endpoint.framing.is_none() {
            config.endpoint.framing = Some(sansrpc::codec::Framing::ContentLength);
        }
        config.streams = self.streams;
        config.heartbeat = self.heartbeat;
        config.linger = LINGER;
        let mut conn = Connection::new(config, Instant::ZERO);
        // Extension: per-connection hook (pub/sub), woken through the driver's waker.
        let wake = self.extension.as_ref().map(|ext| {
            let (hook, waker) = ext.open();
            conn.set_hook(hook);
            waker
        });
        let (tx, commands) = mpsc::unbounded();
        let (shutdown_tx, shutdown_rx) = mpsc::unbounded();
        let serving = self.router.is_some();
        let driver = Driver {
            conn,
            transport,
            timer,
            start: std::time::Instant::now(),
            reached: None,
            commands,
            commands_open: true,
            deferred: None,
            shutdown_tx,
            shutdown_rx,
            sleep: None,
            closing: None,
            waiters: BTreeMap::new(),
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
                producers: BTreeMap::new(),
            },
            on_event: self.on_event,
            wake,
            reason: None,
            done: false,
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

/// Who waits for the answers of one token.
enum Waiter {
    Single(oneshot::Sender<RawResult>),
    Batch {
        results: Vec<Option<RawResult>>,
        reply: oneshot::Sender<Result<Vec<RawResult>, CallError>>,
    },
}

type Running = BoxFuture<(IncomingId, Option<HandlerResult>)>;

/// The peer's requests and notifications being handled, and the streams being produced.
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
    producers: BTreeMap<u64, Producer>,
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

    fn clear(&mut self) {
        self.producers.clear();
        self.running.clear();
        self.aborts.clear();
        self.waiting.clear();
        self.notifications.clear();
    }
}

/// One connection's driver: a future that owns the [`Connection`] and runs until the peer
/// closes, an I/O error, or a [shutdown](ShutdownHandle::shutdown). Spawn it on any
/// executor (it is `Send`), or await it.
///
/// Each turn of its loop, until nothing moves: takes commands from [`Client`]s; reads input
/// into the connection while it wants input; acts on the connection's events (answers to
/// their callers, requests to handlers, notifications to the in-order queue, cancels to the
/// running handler); polls handlers and stream producers; sleeps until the connection's
/// next deadline; writes output. It completes with an error of kind
/// [`io::ErrorKind::TimedOut`] when a heartbeat went unanswered.
pub struct Driver<T, Tm> {
    conn: Connection,
    transport: T,
    timer: Tm,
    start: std::time::Instant,
    /// The latest deadline a sleep completed for: the clock is never read as earlier.
    reached: Option<std::time::Instant>,
    commands: mpsc::UnboundedReceiver<Command>,
    commands_open: bool,
    /// A command the connection refused for a full output buffer, retried once it drains.
    deferred: Option<Command>,
    shutdown_tx: mpsc::UnboundedSender<Duration>,
    shutdown_rx: mpsc::UnboundedReceiver<Duration>,
    sleep: Option<(std::time::Instant, BoxFuture<()>)>,
    /// Once the connection finished: until when closing the transport may take.
    closing: Option<std::time::Instant>,
    waiters: BTreeMap<u64, Waiter>,
    server: Server,
    on_event: Option<EventHook>,
    /// Woken by the connection's extension when it queued notifications.
    wake: Option<Arc<AtomicWaker>>,
    reason: Option<CloseReason>,
    done: bool,
}

impl<T, Tm> fmt::Debug for Driver<T, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("connection", &self.conn)
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

    /// Hands one command to the connection; gives it back when the output buffer is full.
    fn apply(&mut self, command: Command, now: Instant) -> Option<Command> {
        let conn = &mut self.conn;
        match command {
            Command::Cancel(key) => {
                self.waiters.remove(&key);
                conn.cancel_call(key, now);
            }
            // The caller left before it went out.
            Command::Call { ref reply, .. } if reply.is_canceled() => {}
            Command::Batch { ref reply, .. } if reply.is_canceled() => {}
            Command::Call {
                key,
                method,
                params,
                timeout,
                progress,
                reply,
            } => {
                let mut options = RequestOptions::timeout(timeout);
                options.progress = progress.clone();
                match conn.call(key, &method, params.as_deref(), options, now) {
                    Ok(()) => {
                        self.waiters.insert(key, Waiter::Single(reply));
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
            } => match conn.notify(&method, params.as_deref()) {
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
            Command::Progress { token, value, ack } => match conn.send_progress(&token, &value) {
                Err(SendError::OutputFull) => return Some(Command::Progress { token, value, ack }),
                r => {
                    let _ = ack.send(r.map_err(CallError::Send));
                }
            },
            Command::Batch {
                key,
                entries,
                timeout,
                reply,
            } => {
                let options = RequestOptions::timeout(timeout);
                let mut batch = conn.batch(key, now);
                let mut sent = Ok(());
                for e in &entries {
                    sent = if e.call {
                        batch.call(&e.method, e.params.as_deref(), options.clone())
                    } else {
                        batch.notify(&e.method, e.params.as_deref())
                    };
                    if sent.is_err() {
                        break;
                    }
                }
                // Dropping an unsent batch forgets the calls it registered.
                match sent.and_then(|()| batch.send()) {
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
                    Ok(0) => {
                        let _ = reply.send(Ok(Vec::new()));
                    }
                    Ok(n) => {
                        let results = (0..n).map(|_| None).collect();
                        self.waiters.insert(key, Waiter::Batch { results, reply });
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
        if let Poll::Ready(Some(grace)) = self.shutdown_rx.poll_next_unpin(cx) {
            self.conn.shutdown(grace, now);
            progress = true;
        } else if !self.commands_open && !self.server.serving && self.conn.wants_input() {
            // Nobody can call any more and nothing is served: nothing left to do.
            self.conn.shutdown(Duration::ZERO, now);
            progress = true;
        }
        progress
    }

    /// Gives the answer of one call to whoever waits for its token.
    fn answer(&mut self, token: u64, index: usize, result: RawResult, last: bool) {
        match self.waiters.get_mut(&token) {
            Some(Waiter::Batch { results, .. }) => {
                if let Some(slot) = results.get_mut(index) {
                    *slot = Some(result);
                }
            }
            Some(Waiter::Single(_)) => {
                if let Some(Waiter::Single(reply)) = self.waiters.remove(&token) {
                    let _ = reply.send(result);
                }
                return;
            }
            None => return,
        }
        if last {
            if let Some(Waiter::Batch { results, reply }) = self.waiters.remove(&token) {
                let missing = || Err(CallError::Ended(EndReason::Cancelled));
                let results = results.into_iter().map(|r| r.unwrap_or_else(missing));
                let _ = reply.send(Ok(results.collect()));
            }
        }
    }

    /// Acts on the connection's events.
    fn route_events(&mut self) -> bool {
        let mut any = false;
        // Batch sizes for the router's layers (metrics), before the batch's calls run.
        let router = Arc::clone(&self.server.router);
        router.core().observe_connection_batches(&mut self.conn);
        let now = self.now();
        // Checked before a stream method's handler runs, so a flood of opens builds nothing.
        let mut room = self.conn.stream_room();
        while let Some(event) = self.conn.poll_event() {
            any = true;
            match event {
                connection::Event::Request { handle, request } => {
                    if room == 0 && router.is_stream(&request.method) {
                        self.conn.refuse_stream(handle);
                        continue;
                    }
                    let params = request.params.as_deref();
                    let work = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        router.request(&request.method, params, &request.id)
                    }));
                    let work = match work {
                        Ok(Work::Sync) => {
                            router.core().dispatch(&request, &mut self.server.reply);
                            self.server.reply.answer(&mut self.conn, handle);
                            continue;
                        }
                        Ok(work) => work,
                        Err(_) => Work::Stream(Err(ErrorObject::internal_error())),
                    };
                    match work {
                        Work::Call(work) => self.server.enqueue(handle, work),
                        Work::Stream(Ok(producer)) => {
                            if let Some(stream) = self.conn.open_stream(handle, now) {
                                self.server.producers.insert(stream, producer);
                                room = room.saturating_sub(1);
                            }
                        }
                        Work::Stream(Err(e)) => self.conn.respond(handle, Err(&e)),
                        Work::Notify(_) | Work::Sync => {}
                    }
                }
                connection::Event::Notification(n) => {
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
                            let router = Arc::clone(&router);
                            self.server
                                .notify(async move { router.core().notify(&n) }.boxed());
                        }
                        Err(_) => {}
                    }
                }
                connection::Event::Answer {
                    token,
                    index,
                    result,
                    last,
                } => {
                    let result = match result {
                        Ok(raw) => Ok(raw.into_owned()),
                        Err(e) => Err(CallError::Rpc(e.into_owned())),
                    };
                    self.answer(token, index, result, last);
                }
                connection::Event::Ended {
                    token,
                    index,
                    reason,
                    last,
                } => self.answer(token, index, Err(CallError::Ended(reason)), last),
                connection::Event::Cancel { handle } => {
                    if let Some(abort) = self.server.aborts.get(&handle) {
                        abort.abort(); // Answered when its future is dropped.
                    } else if let Some(i) = self.server.waiting.iter().position(|w| w.0 == handle) {
                        self.server.waiting.remove(i);
                        self.conn.respond_cancelled(handle);
                    }
                }
                connection::Event::StreamClosed { stream } => {
                    self.server.producers.remove(&stream);
                    room += 1;
                }
                connection::Event::Closed { reason } => {
                    self.reason = Some(reason);
                    self.server.clear();
                }
                connection::Event::Other(other) => {
                    if let Event::FrameError(e @ FrameError::WrongFraming { .. }) = &other {
                        tracing::warn!("sansrpc: {e}");
                    }
                    if let Some(hook) = &self.on_event {
                        hook(other);
                    }
                }
                _ => {}
            }
        }
        any
    }

    /// Polls request handlers (answering the finished ones), stream producers, and the
    /// notification in turn.
    fn poll_handlers(&mut self, cx: &mut Context<'_>) -> bool {
        let mut progress = false;
        while let Poll::Ready(Some((id, outcome))) = self.server.running.poll_next_unpin(cx) {
            progress = true;
            self.server.aborts.remove(&id);
            match outcome {
                Some(Ok(raw)) => self.conn.respond(id, Ok(&raw)),
                Some(Err(e)) => self.conn.respond(id, Err(&e)),
                None => self.conn.respond_cancelled(id),
            }
        }
        while self.server.running.len() < self.server.max_concurrent {
            let Some((id, work)) = self.server.waiting.pop_front() else {
                break;
            };
            self.server.start(id, work);
            progress = true;
        }
        if self.conn.wants_items() {
            let (now, producers) = (self.now(), &mut self.server.producers);
            let taken = self.conn.produce(now, ITEMS_PER_TURN, |stream, out, _| {
                let Some(producer) = producers.get_mut(&stream) else {
                    return Produced::End;
                };
                let item = AssertUnwindSafe(|| producer.poll_item(cx, out));
                std::panic::catch_unwind(item)
                    .unwrap_or_else(|_| Produced::Error(ErrorObject::internal_error()))
            });
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

    /// Fires the connection's deadline; sleeps until the next one.
    fn poll_timer(&mut self, cx: &mut Context<'_>) -> bool {
        let now = self.now();
        let deadline = self.conn.poll_timeout();
        if deadline.is_some_and(|d| d <= now) {
            self.conn.handle_timeout(now);
            return true;
        }
        let target = deadline.map(|d| self.start + d.since_epoch());
        let Some(target) = target.into_iter().chain(self.closing).min() else {
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

    /// Closes the connection, fails every call still waiting, and stops taking commands.
    fn finish(&mut self) -> io::Result<()> {
        self.conn.close(self.now());
        self.route_events();
        self.server.clear();
        self.commands.close();
        let mut commands = Vec::new();
        commands.extend(self.deferred.take());
        while let Ok(command) = self.commands.try_recv() {
            commands.push(command);
        }
        for command in commands {
            self.apply(command, self.now());
        }
        self.waiters.clear();
        self.shutdown_rx.close();
        self.done = true;
        match self.reason {
            Some(CloseReason::HeartbeatTimeout) => {
                let timeout = self.conn.config().heartbeat.map(|h| h.timeout);
                let e = format!("no pong within {timeout:?}");
                Err(io::Error::new(io::ErrorKind::TimedOut, e))
            }
            _ => Ok(()),
        }
    }

    fn poll_drive(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.done {
            return Poll::Ready(Ok(()));
        }
        loop {
            let now = self.now();
            let mut progress = self.poll_commands(cx, now);
            let reading =
                self.conn.wants_input() && self.server.notifications.len() < self.server.max_queued;
            if reading {
                match self.transport.poll_receive(cx, &mut self.conn, now) {
                    Poll::Ready(Ok(Received::Data | Received::End)) => progress = true,
                    Poll::Ready(Ok(Received::Stalled)) | Poll::Pending => {}
                    Poll::Ready(Err(e)) => {
                        let _ = self.finish();
                        return Poll::Ready(Err(e));
                    }
                }
            }
            progress |= self.route_events();
            progress |= self.poll_handlers(cx);
            progress |= self.poll_timer(cx);
            // Registered before output is taken, so a wake while the hook drains is not lost.
            if let Some(wake) = &self.wake {
                wake.register(cx.waker());
            }
            let before = self.conn.buffered_output();
            let flushed = match self.transport.poll_transmit(cx, &mut self.conn) {
                Poll::Ready(Ok(())) => true,
                Poll::Ready(Err(e)) => {
                    let _ = self.finish();
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => false,
            };
            let wrote = self.conn.buffered_output() < before;
            progress |= wrote;
            let pending = !flushed || self.conn.buffered_output() > 0;
            self.conn.handle_write(wrote, pending, self.now());
            if self.conn.is_finished() {
                if self.closing.is_none() {
                    // The close may never complete (a peer that does not read): bounded.
                    self.closing = Some(self.clock() + LINGER);
                    progress = true;
                }
                let deadline = self.closing.unwrap_or_else(|| self.clock());
                let closed = self.transport.poll_close(cx).is_ready();
                if closed || self.clock() >= deadline {
                    return Poll::Ready(self.finish());
                }
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }
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
