//! A client that reconnects: [`Reconnect`] handles and the [`Supervisor`] future behind
//! them, which opens a connection with a connector, runs its [`Driver`](crate::Driver), and
//! when the connection is lost tries again on the [`ReconnectPolicy`]'s schedule.
//!
//! # Lifecycle
//! The supervisor's [`State`] (WebSocket seed §5) is visible through [`Reconnect::state`]
//! and [`Reconnect::watch`]: `Connecting` while an attempt runs or the next one waits,
//! `Open` while a connection is up, `Closing` after [`Reconnect::close`], `Closed` at the
//! end (closed, or given up after the policy's attempts). Calls and notifications are sent
//! only while `Open`: in `Connecting` they fail at once with
//! [`SendError::Connecting`], in `Closing` and
//! `Closed` with [`SendError::Closed`]. Wait for
//! `Open` with [`Reconnect::wait_open`].
//!
//! # Requests pending when the connection is lost
//! With [`PendingPolicy::Fail`] (the default) they fail with
//! [`CallError::is_closed`]: the peer may or may not have acted on them. With
//! [`PendingPolicy::ResendIdempotent`], calls made with [`CallOptions::idempotent`] (or
//! [`Reconnect::call_idempotent`]) wait for the next connection and are sent again on it,
//! with a fresh deadline; they fail with [`CallError::is_closed`] if the supervisor gives
//! up. Notifications are never re-sent.
//!
//! # Subscriptions
//! Successful `rpc.subscribe`, `rpc.subscribe.batch`, `rpc.subscribe.persistent` and
//! `rpc.subscribe.persistent.batch` calls are remembered (an unsubscribe call forgets them)
//! and made again, one `rpc.subscribe` per topic and one `rpc.subscribe.persistent` per
//! subscription id, on every new connection before any other call (see
//! [`Subscriptions`]). A replayed subscription the server refuses is forgotten.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::channel::{mpsc, oneshot};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use sansrpc::client as shared;
use sansrpc::connection::{EndReason, SendError};
pub use sansrpc::ext::reconnect::CallOptions;
use sansrpc::ext::reconnect::{Action, Jitter, ReconnectPolicy, Reconnector, State};
#[cfg(doc)]
use sansrpc::ext::reconnect::{PendingPolicy, Subscriptions};
use sansrpc::method::{Method, NotificationMethod};
use sansrpc::RawValue;

use crate::builder::Builder;
use crate::client::{CallError, Client, RawResult};
use crate::driver::ShutdownHandle;
use crate::router::BoxFuture;
use crate::timer::{Sleep, Timer};
use crate::transport::Transport;

/// The supervisor gave up: the policy's attempts were used up (or it never reconnects) and
/// the connection is closed for good.
#[derive(Debug)]
pub struct GaveUp {
    /// Attempts made since the last successful connection (0 when the policy never
    /// reconnects).
    pub attempts: u32,
    /// Why the last attempt failed, or why the connection was lost.
    pub error: io::Error,
}

impl fmt::Display for GaveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gave up reconnecting after {} attempts: {}",
            self.attempts, self.error
        )
    }
}

impl std::error::Error for GaveUp {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The lifecycle state shared by the supervisor and its handles.
#[derive(Debug)]
struct Watch {
    inner: Mutex<WatchInner>,
}

#[derive(Debug)]
struct WatchInner {
    state: State,
    version: u64,
    connections: u64,
    wakers: Vec<Waker>,
}

impl Watch {
    fn lock(&self) -> std::sync::MutexGuard<'_, WatchInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, state: State) {
        let mut inner = self.lock();
        // Only the transitions of seed §5 (and Open → Connecting): never out of Closed,
        // never back from Closing.
        if !inner.state.can_become(state) {
            return;
        }
        inner.state = state;
        inner.version += 1;
        if state == State::Open {
            inner.connections += 1;
        }
        for waker in inner.wakers.drain(..) {
            waker.wake();
        }
    }

    fn state(&self) -> State {
        self.lock().state
    }
}

/// Follows a [`Reconnect`]'s lifecycle state; from [`Reconnect::watch`].
#[derive(Debug, Clone)]
pub struct StateWatch {
    watch: Arc<Watch>,
    seen: u64,
}

impl StateWatch {
    /// The current state.
    pub fn state(&self) -> State {
        self.watch.state()
    }

    /// Waits until the state differs from the one last seen by this watch (the state when
    /// it was made, at first) and returns the new one; several changes in a row may be seen
    /// as one. Once the state is [`State::Closed`] it returns at once.
    pub fn changed(&mut self) -> impl Future<Output = State> + '_ {
        futures::future::poll_fn(move |cx| {
            let mut inner = self.watch.lock();
            if inner.version != self.seen || inner.state == State::Closed {
                self.seen = inner.version;
                return Poll::Ready(inner.state);
            }
            if !inner.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                inner.wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
    }

    /// Waits until `accept` accepts the state (checked at once, then on every change) or
    /// the state is [`State::Closed`]; returns that state.
    pub async fn wait_for(&mut self, accept: impl Fn(State) -> bool) -> State {
        let mut state = self.state();
        while !accept(state) && state != State::Closed {
            state = self.changed().await;
        }
        state
    }
}

/// What a handle asks of the supervisor.
enum Request {
    Call(Entry),
    Notify {
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        ack: oneshot::Sender<Result<(), CallError>>,
    },
    /// Close; the sender drops once the supervisor has finished.
    Close(oneshot::Sender<()>),
}

/// One call, kept whole until answered so it can be sent again.
struct Entry {
    method: Cow<'static, str>,
    params: Option<Box<RawValue>>,
    options: CallOptions,
    /// `None` for the supervisor's own subscription replays.
    reply: Option<oneshot::Sender<RawResult>>,
}

enum Done {
    Call(Entry, RawResult),
    /// The caller went away (the call was cancelled on the connection), or a notification
    /// was acknowledged.
    Nothing,
}

/// A handle to a reconnecting client: cheap to clone, usable from any task. The same call
/// and notify API as [`Client`] (without batches), plus the lifecycle.
///
/// Dropping a call's future cancels the call. Once every handle is dropped the supervisor
/// closes the connection and finishes.
#[derive(Debug, Clone)]
pub struct Reconnect {
    tx: mpsc::UnboundedSender<Request>,
    watch: Arc<Watch>,
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::Call(e) => write!(f, "Call({})", e.method),
            Request::Notify { method, .. } => write!(f, "Notify({method})"),
            Request::Close(_) => f.write_str("Close"),
        }
    }
}

impl Reconnect {
    /// A reconnecting client: `connector` opens a transport (it is called again for every
    /// attempt, each bounded by the policy's connect timeout), `builder` sets up every
    /// connection (its router serves the peer's requests and notifications on each), and
    /// `timer` sleeps. Spawn (or await) the returned [`Supervisor`]: it does all the work
    /// and completes when the client is closed, or with [`GaveUp`].
    pub fn connect<C, F, T, Tm>(
        builder: Builder,
        policy: ReconnectPolicy,
        connector: C,
        timer: Tm,
    ) -> (Reconnect, Supervisor<C, T, Tm>)
    where
        C: FnMut() -> F + Send + 'static,
        F: Future<Output = io::Result<T>> + Send + 'static,
        T: Transport,
        Tm: Timer,
    {
        let (tx, requests) = mpsc::unbounded();
        let watch = Arc::new(Watch {
            inner: Mutex::new(WatchInner {
                state: State::Connecting,
                version: 0,
                connections: 0,
                wakers: Vec::new(),
            }),
        });
        let supervisor = Supervisor {
            builder,
            connector,
            timer: Arc::new(timer),
            rc: Reconnector::new(
                policy,
                Jitter::from_std_random_state(),
                sansrpc::Instant::ZERO,
            ),
            start: sansrpc_runtime::time::Instant::now(),
            sleep: Sleep::default(),
            requests,
            watch: watch.clone(),
            // The first attempt starts on the first poll, on the runtime that polls it.
            link: Link::Idle,
            inflight: FuturesUnordered::new(),
            parked: BTreeMap::new(),
            next_token: 0,
            last_error: None,
            gave_up: None,
            closers: Vec::new(),
        };
        (Reconnect { tx, watch }, supervisor)
    }

    /// The lifecycle state now.
    pub fn state(&self) -> State {
        self.watch.state()
    }

    /// Connections opened so far (1 after the first, 2 after the first reconnect, ...).
    pub fn connections(&self) -> u64 {
        self.watch.lock().connections
    }

    /// A watch on the lifecycle state, to wait for changes.
    pub fn watch(&self) -> StateWatch {
        let seen = self.watch.lock().version;
        StateWatch {
            watch: self.watch.clone(),
            seen,
        }
    }

    /// Waits until a connection is open; fails with [`SendError::Closed`] once the client
    /// is closing or closed (given up).
    pub async fn wait_open(&self) -> Result<(), CallError> {
        let state = self
            .watch()
            .wait_for(|s| matches!(s, State::Open | State::Closing))
            .await;
        match state {
            State::Open => Ok(()),
            _ => Err(CallError::Send(SendError::Closed)),
        }
    }

    /// Closes the client: stops reconnecting, refuses new calls, closes the connection as
    /// [`Client::close`] does (its handlers in flight get the config's
    /// [`end_grace`](sansrpc::Config::end_grace)); pending calls then fail with
    /// [`CallError::is_closed`]. Asked at once; the future completes when the
    /// [`Supervisor`] has finished (it must run on another task meanwhile).
    pub fn close(&self) -> impl Future<Output = ()> + Send {
        let (done, finished) = oneshot::channel();
        let _ = self.tx.unbounded_send(Request::Close(done));
        async move {
            let _ = finished.await;
        }
    }

    /// Calls `M` with the default deadline; not re-sent after a disconnect.
    pub fn call<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
    ) -> impl Future<Output = Result<M::Result, CallError>> + Send {
        self.call_with::<M>(params, CallOptions::default())
    }

    /// Calls `M`, marked idempotent: under [`PendingPolicy::ResendIdempotent`] it is
    /// re-sent on the next connection if the connection is lost before its answer.
    pub fn call_idempotent<
        M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>,
    >(
        &self,
        params: &M::Params,
    ) -> impl Future<Output = Result<M::Result, CallError>> + Send {
        self.call_with::<M>(params, CallOptions::idempotent())
    }

    /// Calls `M` with its own deadline (a [`Timeout`](sansrpc::Timeout)) or options (a
    /// [`CallOptions`]: idempotent or not).
    pub fn call_with<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
        options: impl Into<CallOptions>,
    ) -> impl Future<Output = Result<M::Result, CallError>> + Send {
        let pending = shared::encode(params)
            .map(|params| self.start(Cow::Borrowed(M::NAME), params, options.into()));
        async move { shared::decode::<M>(&pending?.await?) }
    }

    /// Calls `method` with raw params and the default options.
    pub fn call_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> impl Future<Output = RawResult> + Send {
        self.call_raw_with(method, params, CallOptions::default())
    }

    /// Calls `method` with raw params and its own deadline or options.
    pub fn call_raw_with(
        &self,
        method: &str,
        params: Option<&RawValue>,
        options: impl Into<CallOptions>,
    ) -> impl Future<Output = RawResult> + Send {
        let (method, params) = shared::owned(method, params);
        self.start(method, params, options.into())
    }

    fn start(
        &self,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        options: CallOptions,
    ) -> impl Future<Output = RawResult> + Send {
        let (reply, rx) = oneshot::channel();
        let _ = self.tx.unbounded_send(Request::Call(Entry {
            method,
            params,
            options,
            reply: Some(reply),
        }));
        rx.map(|r| r.unwrap_or(Err(CallError::Ended(EndReason::Closed))))
    }

    /// Sends notification `N`; resolves once it is queued for the wire.
    pub fn notify<N: NotificationMethod<Params: serde::Serialize>>(
        &self,
        params: &N::Params,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        let queued =
            shared::encode(params).map(|params| self.notify_owned(Cow::Borrowed(N::NAME), params));
        async move { queued?.await }
    }

    /// Sends a notification with raw params; resolves once it is queued for the wire.
    pub fn notify_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        let (method, params) = shared::owned(method, params);
        self.notify_owned(method, params)
    }

    fn notify_owned(
        &self,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        let (ack, rx) = oneshot::channel();
        let _ = self.tx.unbounded_send(Request::Notify {
            method,
            params,
            ack,
        });
        rx.map(|r| r.unwrap_or(Err(CallError::Ended(EndReason::Closed))))
    }
}

/// A timer shared by the supervisor and each connection's driver.
struct Shared<Tm>(Arc<Tm>);

impl<Tm: Timer> Timer for Shared<Tm> {
    fn sleep_until(
        &self,
        deadline: sansrpc_runtime::time::Instant,
    ) -> impl Future<Output = ()> + Send + 'static {
        self.0.sleep_until(deadline)
    }
}

enum Link<T> {
    /// No connection and no attempt: waiting for the reconnector.
    Idle,
    /// An attempt in progress.
    Connecting(BoxFuture<io::Result<T>>),
    /// An attempt succeeded; the connection starts on [`Action::Open`].
    Connected(T),
    Open {
        client: Client,
        shutdown: ShutdownHandle,
        driver: BoxFuture<io::Result<()>>,
    },
    Closed,
}

/// The future behind a [`Reconnect`]: connects, runs each connection's driver, and
/// reconnects on the policy's schedule. Spawn it on any executor (it is `Send`), or await
/// it. Completes with `Ok(())` once the client is closed ([`Reconnect::close`], or every
/// handle dropped), or with [`GaveUp`] once the policy's attempts are used up.
///
/// Every decision (when to connect, how long an attempt may take, the backoff and its
/// jitter, what to replay and resend, when to give up, which calls are admitted) is the
/// core's [`Reconnector`]; the supervisor connects, sleeps and runs the drivers.
pub struct Supervisor<C, T, Tm> {
    builder: Builder,
    connector: C,
    timer: Arc<Tm>,
    rc: Reconnector,
    /// The epoch of the reconnector's clock.
    start: sansrpc_runtime::time::Instant,
    sleep: Sleep,
    requests: mpsc::UnboundedReceiver<Request>,
    watch: Arc<Watch>,
    link: Link<T>,
    inflight: FuturesUnordered<BoxFuture<Done>>,
    /// Idempotent calls lost with a connection, by the token the reconnector knows them by.
    parked: BTreeMap<u64, Entry>,
    next_token: u64,
    /// Why the last attempt failed or the last connection ended.
    last_error: Option<io::Error>,
    gave_up: Option<GaveUp>,
    /// The callers of [`Reconnect::close`] waiting: dropped when the supervisor finishes.
    closers: Vec<oneshot::Sender<()>>,
}

impl<C, T, Tm> fmt::Debug for Supervisor<C, T, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supervisor")
            .field("reconnector", &self.rc)
            .field("inflight", &self.inflight.len())
            .field("parked", &self.parked.len())
            .finish()
    }
}

fn is_lost(result: &RawResult) -> bool {
    matches!(result, Err(e) if e.is_closed())
}

impl<C, F, T, Tm> Supervisor<C, T, Tm>
where
    C: FnMut() -> F + Send + 'static,
    F: Future<Output = io::Result<T>> + Send + 'static,
    T: Transport,
    Tm: Timer,
{
    /// Seeds the jitter of the reconnect delays: a fixed seed makes every delay
    /// reproducible (the default seed comes from std's per-process random state).
    pub fn seed(mut self, seed: u64) -> Self {
        let policy = *self.rc.policy();
        self.rc = Reconnector::new(policy, Jitter::new(seed), self.now());
        self
    }

    fn now(&self) -> sansrpc::Instant {
        sansrpc::Instant::from_duration(self.start.elapsed())
    }

    /// Does what the reconnector asks.
    fn act(&mut self) -> bool {
        let mut any = false;
        while let Some(action) = self.rc.poll_action() {
            any = true;
            match action {
                Action::Connect => self.link = Link::Connecting((self.connector)().boxed()),
                Action::Abandon => {
                    let limit = self.rc.policy().connect_timeout;
                    let e = format!("no connection within {limit:?}");
                    self.last_error = Some(io::Error::new(io::ErrorKind::TimedOut, e));
                    self.link = Link::Idle;
                }
                Action::Open => self.open(),
                Action::GiveUp { attempts } => {
                    let error = self.last_error.take().unwrap_or_else(|| {
                        io::Error::new(io::ErrorKind::NotConnected, "never connected")
                    });
                    self.gave_up = Some(GaveUp { attempts, error });
                    self.shut();
                }
                Action::Closed => self.shut(),
                _ => {}
            }
        }
        if self.rc.state() != State::Open {
            self.watch.set(self.rc.state());
        }
        any
    }

    /// The connection is up: subscriptions replayed, lost idempotent calls resent, then
    /// reported open.
    fn open(&mut self) {
        let Link::Connected(transport) = std::mem::replace(&mut self.link, Link::Idle) else {
            return;
        };
        let timer = Shared(self.timer.clone());
        let (client, driver) = self.builder.clone().connect(transport, timer);
        let shutdown = driver.shutdown_handle();
        self.link = Link::Open {
            client,
            shutdown,
            driver: driver.boxed(),
        };
        for (method, params) in self.rc.replay() {
            self.send(Entry {
                method: Cow::Borrowed(method),
                params: Some(params),
                options: CallOptions::default(),
                reply: None,
            });
        }
        let tokens: Vec<u64> = self.rc.take_resend().collect();
        for token in tokens {
            if let Some(entry) = self.parked.remove(&token) {
                self.send(entry);
            }
        }
        self.watch.set(State::Open);
    }

    /// Closed for good: calls waiting to be resent fail.
    fn shut(&mut self) {
        self.link = Link::Closed;
        self.watch.set(State::Closed);
        let _ = self.rc.take_resend().count();
        for (_, entry) in std::mem::take(&mut self.parked) {
            if let Some(reply) = entry.reply {
                let _ = reply.send(Err(CallError::Ended(EndReason::Closed)));
            }
        }
        self.requests.close();
    }

    /// Sends a call on the open connection.
    fn send(&mut self, mut entry: Entry) {
        let Link::Open { client, .. } = &self.link else {
            if let Some(reply) = entry.reply {
                let _ = reply.send(Err(CallError::Send(SendError::Connecting)));
            }
            return;
        };
        if entry.reply.is_some() {
            let params = entry.params.as_deref();
            self.rc.subscriptions().unsubscribing(&entry.method, params);
        }
        let mut call = client.call_raw_with(
            &entry.method,
            entry.params.as_deref(),
            entry.options.timeout,
        );
        let done = futures::future::poll_fn(move |cx| {
            if let Some(reply) = entry.reply.as_mut() {
                if reply.poll_canceled(cx).is_ready() {
                    return Poll::Ready(Done::Nothing); // Dropping `call` cancels it.
                }
            }
            let result = futures::ready!(call.poll_unpin(cx));
            let entry = Entry {
                method: std::mem::take(&mut entry.method),
                params: entry.params.take(),
                options: entry.options,
                reply: entry.reply.take(),
            };
            Poll::Ready(Done::Call(entry, result))
        });
        self.inflight.push(done.boxed());
    }

    fn finished(&mut self, entry: Entry, result: RawResult) {
        if is_lost(&result) && entry.reply.is_some() {
            let token = self.next_token;
            if self.rc.call_lost(token, entry.options.idempotent) {
                self.next_token += 1;
                self.parked.insert(token, entry);
                return;
            }
        }
        let params = entry.params.as_deref();
        match &result {
            Ok(_) => self.rc.subscriptions().subscribed(&entry.method, params),
            Err(CallError::Rpc(_)) if entry.reply.is_none() => {
                self.rc.subscriptions().refused(&entry.method, params)
            }
            Err(_) => {}
        }
        if let Some(reply) = entry.reply {
            let _ = reply.send(result);
        }
    }

    /// Stops reconnecting and shuts the connection down with `grace` for its handlers.
    fn close(&mut self, grace: Duration) {
        self.rc.close();
        if let Link::Open { shutdown, .. } = &self.link {
            shutdown.shutdown(grace);
        }
        self.act();
    }

    fn request(&mut self, request: Request) {
        let refused = self.rc.admit().err();
        match request {
            Request::Close(done) => {
                self.closers.push(done);
                self.close(self.builder.connection_config().end_grace);
            }
            Request::Call(entry) => match refused {
                Some(e) => {
                    if let Some(reply) = entry.reply {
                        let _ = reply.send(Err(CallError::Send(e)));
                    }
                }
                None => self.send(entry),
            },
            Request::Notify {
                method,
                params,
                ack,
            } => match (&self.link, refused) {
                (Link::Open { client, .. }, None) => {
                    let queued = client.notify_raw(&method, params.as_deref());
                    let done = queued.map(move |r| {
                        let _ = ack.send(r);
                        Done::Nothing
                    });
                    self.inflight.push(done.boxed());
                }
                (_, e) => {
                    let _ = ack.send(Err(CallError::Send(e.unwrap_or(SendError::Closed))));
                }
            },
        }
    }

    /// Polls the attempt or the connection, and the reconnector's timer.
    fn poll_link(&mut self, cx: &mut Context<'_>) -> bool {
        let now = self.now();
        match &mut self.link {
            Link::Connecting(attempt) => match attempt.poll_unpin(cx) {
                Poll::Pending => {}
                Poll::Ready(Ok(transport)) => {
                    self.link = Link::Connected(transport);
                    self.rc.handle_connected(now);
                    return true;
                }
                Poll::Ready(Err(e)) => {
                    self.last_error = Some(e);
                    self.link = Link::Idle;
                    self.rc.handle_failed(now);
                    return true;
                }
            },
            Link::Open { driver, .. } => {
                if let Poll::Ready(result) = driver.poll_unpin(cx) {
                    let e = result.err().unwrap_or_else(|| {
                        io::Error::new(io::ErrorKind::UnexpectedEof, "the peer closed")
                    });
                    self.last_error = Some(e);
                    self.link = Link::Idle;
                    self.rc.handle_lost(now);
                    return true;
                }
            }
            Link::Idle | Link::Connected(_) | Link::Closed => {}
        }
        let deadline = self.rc.poll_timeout();
        if deadline.is_some_and(|d| d <= now) {
            self.rc.handle_timeout(now);
            return true;
        }
        let target = deadline.map(|d| self.start + d.since_epoch());
        let fired = self.sleep.poll_until(cx, &*self.timer, target);
        if let (true, Some(deadline)) = (fired, deadline) {
            self.rc.handle_timeout(self.now().max(deadline));
        }
        fired
    }

    fn poll_supervise(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), GaveUp>> {
        loop {
            // The reconnector's actions follow what the link did, before any request is
            // admitted: a connection is open (replays queued) before calls go on it.
            let mut progress = self.poll_link(cx);
            progress |= self.act();
            while let Poll::Ready(Some(done)) = self.inflight.poll_next_unpin(cx) {
                progress = true;
                if let Done::Call(entry, result) = done {
                    self.finished(entry, result);
                }
            }
            loop {
                match self.requests.poll_next_unpin(cx) {
                    Poll::Ready(Some(request)) => self.request(request),
                    // Every handle is gone (or the supervisor shut): close.
                    Poll::Ready(None) if self.rc.state() != State::Closed => {
                        if self.rc.state() == State::Closing {
                            break;
                        }
                        self.close(Duration::ZERO)
                    }
                    Poll::Ready(None) | Poll::Pending => break,
                }
                progress = true;
            }
            if matches!(self.link, Link::Closed) && self.inflight.is_empty() {
                self.watch.set(State::Closed);
                self.closers.clear();
                return Poll::Ready(self.gave_up.take().map_or(Ok(()), Err));
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }
}

impl<C, T, Tm> Drop for Supervisor<C, T, Tm> {
    /// A supervisor dropped unfinished (its task aborted) leaves its handles `Closed`, so
    /// nobody waits for a connection that will never come.
    fn drop(&mut self) {
        self.watch.set(State::Closed);
    }
}

// Nothing is pinned in place: every future the supervisor holds is boxed.
impl<C, T, Tm> Unpin for Supervisor<C, T, Tm> {}

impl<C, F, T, Tm> Future for Supervisor<C, T, Tm>
where
    C: FnMut() -> F + Send + 'static,
    F: Future<Output = io::Result<T>> + Send + 'static,
    T: Transport,
    Tm: Timer,
{
    type Output = Result<(), GaveUp>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().poll_supervise(cx)
    }
}
