//! The client handle: calls, notifications and batches, sent to the driver task. The API is
//! the blocking adapter's, method for method, with futures for values (docs/client.md); what
//! both share (typed params and results, batches, interceptors) is the core's
//! [`sansrpc::client`].

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::channel::{mpsc, oneshot};
use sansrpc::client::{self as shared, BatchEntry, SendBatch};
pub use sansrpc::client::{BatchSlot, RawResult};
use sansrpc::connection::{EndReason, IncomingId, RequestOptions, Timeout};
use sansrpc::ext::interceptors::Interceptors;
pub use sansrpc::method::CallError;
use sansrpc::method::{Method, NotificationMethod};
use sansrpc::{Id, RawValue};
use sansrpc_runtime::{Observe, ObserveBatch};

/// What a handle asks of the driver.
#[derive(Debug)]
pub(crate) enum Command {
    Call {
        key: u64,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
        /// Made for this request of the peer's (on its stream, where the transport has one).
        on_behalf: Option<IncomingId>,
        reply: oneshot::Sender<RawResult>,
    },
    Notify {
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        /// Sent for this request of the peer's (on its stream, where the transport has one).
        on_behalf: Option<IncomingId>,
        ack: oneshot::Sender<Result<(), CallError>>,
    },
    Progress {
        token: Id<'static>,
        value: Box<RawValue>,
        on_behalf: Option<IncomingId>,
        ack: oneshot::Sender<Result<(), CallError>>,
    },
    Batch {
        key: u64,
        entries: Vec<BatchEntry>,
        timeout: Timeout,
        reply: oneshot::Sender<Result<Vec<RawResult>, CallError>>,
    },
    /// A method subscription's subscribe call; its notifications go to `inbox`.
    Subscribe {
        key: u64,
        declaration: sansrpc::connection::subscriptions::MethodSubscription,
        params: Option<Box<RawValue>>,
        timeout: Timeout,
        inbox: Arc<crate::subscription::Inbox>,
        reply: oneshot::Sender<RawResult>,
    },
    /// Ends the subscription `key` (its stream was dropped, or unsubscribes): its
    /// unsubscribe call goes out under `call`, its answer to `reply` when one waits.
    Unsubscribe {
        key: u64,
        call: u64,
        reply: Option<oneshot::Sender<RawResult>>,
    },
    /// The caller dropped the call (or batch) with this key before its answer came.
    Cancel(u64),
    /// Close the connection gracefully; the sender drops once the driver has finished.
    Close(oneshot::Sender<()>),
}

/// A handle to a connection's driver: cheap to clone, usable from any task. The blocking
/// adapter's `Client` has the same methods, returning values where these return futures
/// (docs/client.md).
///
/// Every call is one message to the driver task; its future waits for the answer and
/// **dropping the future cancels the request** (the endpoint ends it and, with
/// cancellation configured, sends the peer `$/cancelRequest`). A notification, a batch or a
/// close is handed to the driver when it is made: its future only waits for the outcome.
/// Calls fail with [`CallError::is_closed`] once the connection is gone.
#[derive(Debug, Clone)]
pub struct Client {
    tx: mpsc::UnboundedSender<Command>,
    /// The calls' keys and the connection's exit status, in one allocation.
    counters: Arc<Counters>,
    /// Hooks around every outgoing call; see [`Client::with_interceptors`].
    interceptors: Option<Arc<Interceptors>>,
    /// State the application keeps per connection: [`Client::local`].
    locals: Arc<sansrpc_runtime::Locals>,
    /// The connection's protocol profile: [`Client::profile`].
    profile: sansrpc::Profile,
    /// The builder's executor, for handlers' work beside the connection.
    executor: Executors,
}

/// What every handle of a connection shares but its commands' sender.
#[derive(Debug)]
struct Counters {
    /// The next call's key.
    keys: AtomicU64,
    /// The status the connection ended with for the process (LSP `exit`), once it did;
    /// `i64::MIN` until then.
    exit: AtomicI64,
}

/// Where a driver records the status its connection ended with ([`Client::exit_code`]).
#[derive(Debug)]
pub(crate) struct ExitCell(Arc<Counters>);

impl ExitCell {
    pub(crate) fn store(&self, code: i32) {
        self.0.exit.store(i64::from(code), Ordering::SeqCst);
    }
}

/// The builder's executor, if any (shown only as there or not).
#[derive(Clone)]
struct Executors(Option<Arc<dyn sansrpc_runtime::Executor>>);

impl std::fmt::Debug for Executors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

impl Client {
    pub(crate) fn new(
        tx: mpsc::UnboundedSender<Command>,
        profile: sansrpc::Profile,
        executor: Option<Arc<dyn sansrpc_runtime::Executor>>,
    ) -> Self {
        Client {
            tx,
            profile,
            executor: Executors(executor),
            counters: Arc::new(Counters {
                keys: AtomicU64::new(0),
                exit: AtomicI64::new(i64::MIN),
            }),
            interceptors: None,
            locals: Arc::default(),
        }
    }

    /// The executor the connection's [`Builder`](crate::Builder) was given, if any.
    pub fn executor(&self) -> Option<Arc<dyn sansrpc_runtime::Executor>> {
        self.executor.0.clone()
    }

    /// The protocol profile the connection was configured with (`Config::for_profile`): a
    /// protocol layer checks that its conventions are in force.
    pub fn profile(&self) -> sansrpc::Profile {
        self.profile
    }

    /// The connection's own value of type `T`, made with `T::default()` the first time it
    /// is asked for: state a protocol keeps per connection (an MCP server's negotiated
    /// revision and log level, an LSP server's open documents), shared by every handler
    /// on the connection and dropped with its last handle. One value per type; keep your
    /// own types (or a newtype) to avoid meeting another layer's.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use sansrpc_futures::{AsyncRouter, RequestContext};
    ///
    /// #[derive(Default)]
    /// struct Calls(AtomicU32);
    ///
    /// sansrpc::method!(Count = "count", () => u32);
    /// let mut router = AsyncRouter::new();
    /// router
    ///     .method_with_context::<Count, _, _>(|cx: RequestContext, ()| async move {
    ///         Ok(cx.peer().local::<Calls>().0.fetch_add(1, Ordering::Relaxed) + 1)
    ///     })
    ///     .unwrap();
    /// ```
    pub fn local<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.locals.get::<T>()
    }

    /// Every value [`local`](Self::local) keeps for this connection.
    pub fn locals(&self) -> Arc<sansrpc_runtime::Locals> {
        Arc::clone(&self.locals)
    }

    /// Where the driver records the status the connection ended with
    /// ([`Client::exit_code`]); held without keeping the connection's commands open.
    pub(crate) fn exit_cell(&self) -> ExitCell {
        ExitCell(Arc::clone(&self.counters))
    }

    /// The status the process should exit with, once the connection is over: under the
    /// LSP profile, 0 when the client sent `shutdown` before `exit` (or before it closed),
    /// 1 otherwise (also when the editor's process died); `None` while the connection runs
    /// and for other profiles. An LSP server's `main` ends with
    /// `std::process::exit(client.exit_code().unwrap_or(0))`.
    pub fn exit_code(&self) -> Option<i32> {
        match self.counters.exit.load(Ordering::SeqCst) {
            i64::MIN => None,
            code => i32::try_from(code).ok(),
        }
    }

    /// Calls `M` with the connection's default deadline
    /// ([`Config::default_timeout`](sansrpc::Config::default_timeout)).
    pub fn call<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
    ) -> impl Future<Output = Result<M::Result, CallError>> + Send {
        self.call_with::<M>(params, Timeout::Default)
    }

    /// Calls the method `M` given as a value (a [`sansrpc::method!`] struct), so no turbofish
    /// is needed: `client.request(Add, &params)` is `client.call::<Add>(&params)`.
    pub fn request<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        _method: M,
        params: &M::Params,
    ) -> impl Future<Output = Result<M::Result, CallError>> + Send {
        self.call::<M>(params)
    }

    /// Calls `M` with its own deadline; when it passes the call fails with
    /// [`CallError::is_timeout`].
    pub fn call_with<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
        timeout: Timeout,
    ) -> impl Future<Output = Result<M::Result, CallError>> + Send {
        let pending = shared::encode(params).map(|params| {
            self.start(
                Cow::Borrowed(M::NAME),
                params,
                RequestOptions::timeout(timeout),
                None,
            )
        });
        async move { shared::decode::<M>(&pending?.await?) }
    }

    sansrpc_runtime::raw_calls!(PendingCall);

    /// Calls `method` with raw params and `options` ([`raw_calls!`](sansrpc_runtime::raw_calls)).
    fn call_raw_options(
        &self,
        method: &str,
        params: Option<&RawValue>,
        options: RequestOptions,
    ) -> PendingCall {
        let (method, params) = shared::owned(method, params);
        self.start(method, params, options, None)
    }

    /// Reports progress on `token` (the one the peer sent with its request) with `value`,
    /// in the connection's profile: [`Connection::send_progress`](sansrpc::Connection::send_progress)
    /// says what each profile puts on the wire (LSP: `$/progress {token, value}`; MCP:
    /// `notifications/progress {progressToken, …value's members}`). Interceptors do not see
    /// progress notifications.
    pub fn send_progress(
        &self,
        token: &Id<'_>,
        value: &RawValue,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        self.send_progress_for(None, token, value)
    }

    /// [`send_progress`](Self::send_progress) on behalf of the peer's request `on_behalf`.
    pub(crate) fn send_progress_for(
        &self,
        on_behalf: Option<IncomingId>,
        token: &Id<'_>,
        value: &RawValue,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        let (ack, rx) = oneshot::channel();
        let _ = self.tx.unbounded_send(Command::Progress {
            token: token.to_owned_id(),
            value: value.to_owned(),
            on_behalf,
            ack,
        });
        async move { rx.await.unwrap_or(Err(CallError::Ended(EndReason::Closed))) }
    }

    /// [`call_raw`](Self::call_raw) on behalf of the peer's request `on_behalf`.
    pub(crate) fn call_raw_for(
        &self,
        on_behalf: IncomingId,
        method: &str,
        params: Option<&RawValue>,
    ) -> PendingCall {
        let (method, params) = shared::owned(method, params);
        self.start(method, params, RequestOptions::default(), Some(on_behalf))
    }

    fn start(
        &self,
        method: Cow<'static, str>,
        mut params: Option<Box<RawValue>>,
        options: RequestOptions,
        on_behalf: Option<IncomingId>,
    ) -> PendingCall {
        let observe = match Observe::before(self.interceptors.as_ref(), &method, &mut params, false)
        {
            Ok(observe) => observe,
            Err(e) => return PendingCall::failed(e, self.tx.clone()),
        };
        let key = self.counters.keys.fetch_add(1, Ordering::Relaxed);
        let (reply, rx) = oneshot::channel();
        let sent = self.tx.unbounded_send(Command::Call {
            key,
            method,
            params,
            options,
            on_behalf,
            reply,
        });
        PendingCall {
            rx,
            guard: CancelGuard {
                key,
                tx: self.tx.clone(),
                armed: sent.is_ok(),
            },
            observe,
        }
    }

    /// Sends notification `N`; resolves once the connection has queued it for the wire.
    pub fn notify<N: NotificationMethod<Params: serde::Serialize>>(
        &self,
        params: &N::Params,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        let queued = shared::encode(params)
            .map(|params| self.notify_owned(Cow::Borrowed(N::NAME), params, None));
        async move { queued?.await }
    }

    /// Sends a notification with raw params; resolves once it is queued for the wire.
    pub fn notify_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        let (method, params) = shared::owned(method, params);
        self.notify_owned(method, params, None)
    }

    pub(crate) fn notify_owned(
        &self,
        method: Cow<'static, str>,
        mut params: Option<Box<RawValue>>,
        on_behalf: Option<IncomingId>,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        let (ack, rx) = oneshot::channel();
        let observe = Observe::before(self.interceptors.as_ref(), &method, &mut params, true);
        if observe.is_ok() {
            let _ = self.tx.unbounded_send(Command::Notify {
                method,
                params,
                on_behalf,
                ack,
            });
        }
        async move {
            let observe = observe?;
            let result = rx.await.unwrap_or(Err(CallError::Ended(EndReason::Closed)));
            if let Some(observe) = observe {
                observe.after(&result);
            }
            result
        }
    }

    /// Starts a batch: calls and notifications sent as one JSON array.
    pub fn batch(&self) -> Batch {
        Batch::new(self.clone())
    }

    /// Closes the connection gracefully: stops reading, gives the handlers in flight the
    /// connection's [`end_grace`](sansrpc::Config::end_grace) to answer, fails every
    /// pending call as closed, then closes the transport. Asked at once; the future
    /// completes when the driver has finished (it must run on another task meanwhile, as a
    /// spawned driver does). Other handles fail from then on.
    pub fn close(&self) -> impl Future<Output = ()> + Send {
        let (done, finished) = oneshot::channel();
        let _ = self.tx.unbounded_send(Command::Close(done));
        async move {
            let _ = finished.await;
        }
    }

    /// True once the driver has stopped: every call fails from now on.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// A key for a call of this connection's.
    pub(crate) fn next_key(&self) -> u64 {
        self.counters.keys.fetch_add(1, Ordering::Relaxed)
    }

    /// Hands `command` to the driver (dropped when it has finished).
    pub(crate) fn command(&self, command: Command) {
        let _ = self.tx.unbounded_send(command);
    }
}

/// Cancels the call `key` when dropped, unless disarmed: for a call awaited in an `async
/// fn` of this crate.
#[derive(Debug)]
pub(crate) struct CancelOnDrop(CancelGuard);

impl CancelOnDrop {
    pub(crate) fn new(client: &Client, key: u64) -> Self {
        CancelOnDrop(CancelGuard {
            key,
            tx: client.tx.clone(),
            armed: true,
        })
    }

    /// The call was answered: nothing to cancel.
    pub(crate) fn disarm(mut self) {
        self.0.armed = false;
    }
}

/// Marks a connection that a typed session handle ends when the last of it is dropped
/// (`sansrpc_mcp`'s `McpClient` over Streamable HTTP: the session's `DELETE`, in the
/// background). The transport sets it on the connection it makes
/// ([`Client::local`]`::<CloseWithSession>().set()`); a connection without it (a child
/// process, whose own `shutdown` ends it reading the child's output to its end) is left
/// open when the handle goes.
#[derive(Debug, Default)]
pub struct CloseWithSession(std::sync::atomic::AtomicBool);

impl CloseWithSession {
    /// Marks the connection.
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// True when the connection is marked.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A client is its own handle: what takes `impl AsRef<Client>` (`sansrpc_mcp`'s
/// `initialize`) takes a `Client`, a `&Client`, or a connection that lends one.
impl AsRef<Client> for Client {
    fn as_ref(&self) -> &Client {
        self
    }
}

/// Client interceptors ([`sansrpc::ext::interceptors`]).
impl Client {
    /// A handle on the same connection whose calls, notifications and batches go through
    /// `interceptors`: each [`before`](sansrpc::ext::interceptors::Interceptor::before)
    /// hook runs in the calling task before the call is handed to the driver, each
    /// [`after`](sansrpc::ext::interceptors::Interceptor::after) hook when the call's
    /// future completes (not when it is dropped first), with the time elapsed on the host's
    /// clock ([`sansrpc_runtime::time::Instant`]). A refusal fails the call with [`CallError::Intercepted`]
    /// and sends nothing. Other handles on the connection are not affected.
    pub fn with_interceptors(&self, interceptors: Interceptors) -> Client {
        Client {
            interceptors: (!interceptors.is_empty()).then(|| Arc::new(interceptors)),
            ..self.clone()
        }
    }
}

/// Sends a [`Command::Cancel`] when a call's future is dropped before its answer came.
#[derive(Debug)]
struct CancelGuard {
    key: u64,
    tx: mpsc::UnboundedSender<Command>,
    armed: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.tx.unbounded_send(Command::Cancel(self.key));
        }
    }
}

/// The future of a raw call; dropping it before it completes cancels the request.
#[derive(Debug)]
#[must_use = "a call is cancelled when its future is dropped"]
pub struct PendingCall {
    rx: oneshot::Receiver<RawResult>,
    guard: CancelGuard,
    observe: Option<Observe>,
}

impl PendingCall {
    /// A call refused before it went out: resolves to `error` at once.
    fn failed(error: CallError, tx: mpsc::UnboundedSender<Command>) -> Self {
        let (reply, rx) = oneshot::channel();
        let _ = reply.send(Err(error));
        PendingCall {
            rx,
            guard: CancelGuard {
                key: 0,
                tx,
                armed: false,
            },
            observe: None,
        }
    }

    /// Drops the call without cancelling its request: the answer, when it comes, is
    /// discarded.
    pub(crate) fn detach(mut self) {
        self.guard.armed = false;
    }
}

impl Future for PendingCall {
    type Output = RawResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RawResult> {
        let result = futures::ready!(Pin::new(&mut self.rx).poll(cx));
        self.guard.armed = false;
        let result = result.unwrap_or(Err(CallError::Ended(EndReason::Closed)));
        if let Some(observe) = self.observe.take() {
            observe.after(&result);
        }
        Poll::Ready(result)
    }
}

/// An outgoing batch: one JSON array on the wire, one result per call, matched by id
/// whatever order the peer answers in. From [`Client::batch`]. The core's
/// [`Batch`](sansrpc::client::Batch) over this client: the same methods as the blocking
/// adapter's, with `send` giving a [`PendingBatch`].
pub type Batch = sansrpc::client::Batch<Client>;

impl SendBatch for Client {
    type Sent = PendingBatch;

    fn send_batch(
        &self,
        entries: Result<Vec<BatchEntry>, CallError>,
        timeout: Timeout,
    ) -> PendingBatch {
        // A batch with an entry that did not serialize, or one an interceptor refused,
        // never goes out.
        let sent = entries.and_then(|mut entries| {
            let observe = ObserveBatch::before(self.interceptors.as_ref(), &mut entries)?;
            let key = self.counters.keys.fetch_add(1, Ordering::Relaxed);
            let (reply, rx) = oneshot::channel();
            let command = Command::Batch {
                key,
                entries,
                timeout,
                reply,
            };
            let armed = self.tx.unbounded_send(command).is_ok();
            let guard = CancelGuard {
                key,
                tx: self.tx.clone(),
                armed,
            };
            Ok((rx, guard, observe))
        });
        PendingBatch {
            sent: sent.map_err(Some),
        }
    }
}

/// The future of a batch's results, from [`Batch::send`](sansrpc::client::Batch::send):
/// one per call, in the order the calls were added. Dropping it before it completes cancels
/// the calls still pending.
#[derive(Debug)]
#[must_use = "a batch's calls are cancelled when its future is dropped"]
pub struct PendingBatch {
    sent: Result<BatchSent, Option<CallError>>,
}

/// A batch handed to the driver: where its results come, and what to tell whom.
type BatchSent = (
    oneshot::Receiver<Result<Vec<RawResult>, CallError>>,
    CancelGuard,
    Option<ObserveBatch>,
);

impl Future for PendingBatch {
    type Output = Result<Vec<RawResult>, CallError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (rx, guard, observe) = match &mut self.sent {
            Ok(sent) => sent,
            Err(refused) => {
                let e = refused
                    .take()
                    .unwrap_or(CallError::Ended(EndReason::Closed));
                return Poll::Ready(Err(e));
            }
        };
        let result = futures::ready!(Pin::new(rx).poll(cx));
        guard.armed = false;
        let result = result.unwrap_or(Err(CallError::Ended(EndReason::Closed)));
        if let Some(observe) = observe.take() {
            observe.after(&result);
        }
        Poll::Ready(result)
    }
}
