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
use std::collections::VecDeque;
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
use sansrpc::endpoint::{EndReason, SendError, Timeout};
use sansrpc::ext::reconnect::{
    Jitter, PendingPolicy, ReconnectPolicy, Schedule, State, Subscriptions,
};
use sansrpc::method::{encode_params_owned, Method, NotificationMethod};
use sansrpc::RawValue;

use crate::builder::Builder;
use crate::client::{CallError, Client, RawResult};
use crate::driver::ShutdownHandle;
use crate::router::BoxFuture;
use crate::timer::Timer;
use crate::transport::Transport;

/// How one call is made through a [`Reconnect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallOptions {
    /// The call's deadline (restarted when it is re-sent).
    pub timeout: Timeout,
    /// The call may safely be made twice: under [`PendingPolicy::ResendIdempotent`] it is
    /// re-sent on the next connection when the connection is lost before its answer.
    pub idempotent: bool,
}

impl Default for CallOptions {
    /// The endpoint's default deadline, not idempotent.
    fn default() -> Self {
        CallOptions {
            timeout: Timeout::Default,
            idempotent: false,
        }
    }
}

impl CallOptions {
    /// The default deadline, idempotent.
    pub fn idempotent() -> Self {
        CallOptions {
            timeout: Timeout::Default,
            idempotent: true,
        }
    }
}

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
    Close(Duration),
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
            Request::Close(grace) => write!(f, "Close({grace:?})"),
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
            schedule: Schedule::new(policy),
            random: Box::new(default_random()),
            requests,
            watch: watch.clone(),
            // The first attempt starts on the first poll, on the runtime that polls it.
            link: Link::Waiting(futures::future::ready(()).boxed()),
            inflight: FuturesUnordered::new(),
            resend: VecDeque::new(),
            subscriptions: Subscriptions::default(),
            closing: false,
            gave_up: None,
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

    /// Closes the client: stops reconnecting, refuses new calls, lets the connection's
    /// handlers in flight finish for up to `grace` (see
    /// [`ShutdownHandle::shutdown`]); pending calls then fail with
    /// [`CallError::is_closed`].
    pub fn close(&self, grace: Duration) {
        let _ = self.tx.unbounded_send(Request::Close(grace));
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

    /// Calls `M` with its own options.
    pub fn call_with<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
        options: CallOptions,
    ) -> impl Future<Output = Result<M::Result, CallError>> + Send {
        let pending = encode_params_owned(params)
            .map_err(CallError::Send)
            .map(|params| self.start(Cow::Borrowed(M::NAME), params, options));
        async move {
            let raw = pending?.await?;
            serde_json::from_str(raw.get()).map_err(CallError::Decode)
        }
    }

    /// Calls `method` with raw params and the default options.
    pub fn call_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> impl Future<Output = RawResult> + Send {
        self.call_raw_with(method, params, CallOptions::default())
    }

    /// Calls `method` with raw params and its own options.
    pub fn call_raw_with(
        &self,
        method: &str,
        params: Option<&RawValue>,
        options: CallOptions,
    ) -> impl Future<Output = RawResult> + Send {
        let params = params.map(ToOwned::to_owned);
        self.start(Cow::Owned(method.to_owned()), params, options)
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
        let queued = encode_params_owned(params)
            .map_err(CallError::Send)
            .map(|params| self.notify_owned(Cow::Borrowed(N::NAME), params));
        async move { queued?.await }
    }

    /// Sends a notification with raw params; resolves once it is queued for the wire.
    pub fn notify_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        self.notify_owned(Cow::Owned(method.to_owned()), params.map(ToOwned::to_owned))
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
        deadline: std::time::Instant,
    ) -> impl Future<Output = ()> + Send + 'static {
        self.0.sleep_until(deadline)
    }
}

enum Link<T> {
    /// An attempt in progress.
    Connecting(BoxFuture<io::Result<T>>),
    /// Waiting for the next attempt.
    Waiting(BoxFuture<()>),
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
pub struct Supervisor<C, T, Tm> {
    builder: Builder,
    connector: C,
    timer: Arc<Tm>,
    schedule: Schedule,
    random: Box<dyn FnMut() -> u64 + Send>,
    requests: mpsc::UnboundedReceiver<Request>,
    watch: Arc<Watch>,
    link: Link<T>,
    inflight: FuturesUnordered<BoxFuture<Done>>,
    /// Idempotent calls waiting for the next connection.
    resend: VecDeque<Entry>,
    subscriptions: Subscriptions,
    closing: bool,
    gave_up: Option<GaveUp>,
}

impl<C, T, Tm> fmt::Debug for Supervisor<C, T, Tm> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supervisor")
            .field("state", &self.watch.state())
            .field("failures", &self.schedule.failures())
            .field("inflight", &self.inflight.len())
            .field("resend", &self.resend.len())
            .field("subscriptions", &self.subscriptions.len())
            .finish()
    }
}

/// The core's jitter generator, seeded from std's per-process random hasher keys.
fn default_random() -> impl FnMut() -> u64 + Send {
    let mut jitter = Jitter::from_std_random_state();
    move || jitter.next_u64()
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
    /// Draws the jitter of the reconnect delays from `random` (any uniformly distributed
    /// `u64`s) instead of the built-in generator: a seeded one makes delays reproducible.
    pub fn random(mut self, random: impl FnMut() -> u64 + Send + 'static) -> Self {
        self.random = Box::new(random);
        self
    }

    /// Starts one connection attempt, bounded by the connect timeout.
    fn attempt(&mut self) -> BoxFuture<io::Result<T>> {
        let limit = self.schedule.policy().connect_timeout;
        let connect = (self.connector)();
        let expired = self.timer.sleep_until(std::time::Instant::now() + limit);
        async move {
            let connect = std::pin::pin!(connect);
            let expired = std::pin::pin!(expired);
            match futures::future::select(connect, expired).await {
                futures::future::Either::Left((result, _)) => result,
                futures::future::Either::Right(_) => Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no connection within {limit:?}"),
                )),
            }
        }
        .boxed()
    }

    /// The connection was lost or an attempt failed: waits and tries again, or gives up.
    fn lost(&mut self, error: io::Error) {
        if self.closing {
            return self.shut();
        }
        match self.schedule.next_delay((self.random)()) {
            Some(delay) => {
                self.watch.set(State::Connecting);
                let at = std::time::Instant::now() + delay;
                self.link = Link::Waiting(self.timer.sleep_until(at).boxed());
            }
            None => {
                let attempts = self.schedule.failures().saturating_sub(1);
                self.gave_up = Some(GaveUp { attempts, error });
                self.shut();
            }
        }
    }

    /// Closed for good: calls waiting to be re-sent fail.
    fn shut(&mut self) {
        self.link = Link::Closed;
        self.watch.set(State::Closed);
        for entry in self.resend.drain(..) {
            if let Some(reply) = entry.reply {
                let _ = reply.send(Err(CallError::Ended(EndReason::Closed)));
            }
        }
        self.requests.close();
    }

    fn opened(&mut self, transport: T) {
        let timer = Shared(self.timer.clone());
        let (client, driver) = self.builder.clone().connect(transport, timer);
        let shutdown = driver.shutdown_handle();
        self.schedule.connected();
        self.link = Link::Open {
            client,
            shutdown,
            driver: driver.boxed(),
        };
        self.watch.set(State::Open);
        for (method, params) in self.subscriptions.replay() {
            self.send(Entry {
                method: Cow::Borrowed(method),
                params: Some(params),
                options: CallOptions::default(),
                reply: None,
            });
        }
        while let Some(entry) = self.resend.pop_front() {
            self.send(entry);
        }
    }

    /// Sends a call on the open connection.
    fn send(&mut self, mut entry: Entry) {
        let Link::Open { client, .. } = &self.link else {
            self.resend.push_back(entry);
            return;
        };
        if entry.reply.is_some() {
            let params = entry.params.as_deref();
            self.subscriptions.unsubscribing(&entry.method, params);
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
        let resend = self.schedule.policy().pending == PendingPolicy::ResendIdempotent
            && entry.options.idempotent
            && entry.reply.is_some()
            && !self.closing
            && !matches!(self.link, Link::Closed);
        if is_lost(&result) && resend {
            return self.send(entry);
        }
        let params = entry.params.as_deref();
        match &result {
            Ok(_) => self.subscriptions.subscribed(&entry.method, params),
            Err(CallError::Rpc(_)) if entry.reply.is_none() => {
                self.subscriptions.refused(&entry.method, params)
            }
            Err(_) => {}
        }
        if let Some(reply) = entry.reply {
            let _ = reply.send(result);
        }
    }

    fn request(&mut self, request: Request) {
        let state = self.watch.state();
        let refused = match state {
            State::Open => None,
            State::Connecting => Some(SendError::Connecting),
            State::Closing | State::Closed => Some(SendError::Closed),
        };
        match request {
            Request::Close(grace) => {
                self.closing = true;
                self.watch.set(State::Closing);
                match &self.link {
                    Link::Open { shutdown, .. } => shutdown.shutdown(grace),
                    Link::Closed => {}
                    _ => self.shut(),
                }
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

    fn poll_link(&mut self, cx: &mut Context<'_>) -> bool {
        match &mut self.link {
            Link::Waiting(sleep) => {
                if sleep.poll_unpin(cx).is_pending() {
                    return false;
                }
                self.link = Link::Connecting(self.attempt());
            }
            Link::Connecting(attempt) => match attempt.poll_unpin(cx) {
                Poll::Pending => return false,
                Poll::Ready(Ok(transport)) => self.opened(transport),
                Poll::Ready(Err(e)) => self.lost(e),
            },
            Link::Open { driver, .. } => match driver.poll_unpin(cx) {
                Poll::Pending => return false,
                Poll::Ready(result) => {
                    let e = result.err().unwrap_or_else(|| {
                        io::Error::new(io::ErrorKind::UnexpectedEof, "the peer closed")
                    });
                    self.lost(e);
                }
            },
            Link::Closed => return false,
        }
        true
    }

    fn poll_supervise(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), GaveUp>> {
        loop {
            let mut progress = self.poll_link(cx);
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
                    Poll::Ready(None) if !self.closing => {
                        self.request(Request::Close(Duration::ZERO))
                    }
                    Poll::Ready(None) | Poll::Pending => break,
                }
                progress = true;
            }
            if matches!(self.link, Link::Closed) && self.inflight.is_empty() {
                self.watch.set(State::Closed);
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
