//! The client handle: calls, notifications and batches, sent to the driver task.

use std::borrow::Cow;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::channel::{mpsc, oneshot};
use sansrpc::connection::{EndReason, IncomingId, Progress, SendError, Timeout};
use sansrpc::ext::interceptors::{CallOutcome, Interceptors};
use std::time::Duration;

pub use sansrpc::method::CallError;
use sansrpc::method::{encode_params_owned, Method, NotificationMethod};
use sansrpc::{Id, RawValue};

/// What a raw call produces: the result JSON, or why there is none.
pub type RawResult = Result<Box<RawValue>, CallError>;

/// One call or notification of a batch, as it crosses to the driver.
#[derive(Debug)]
pub(crate) struct BatchEntry {
    pub method: Cow<'static, str>,
    pub params: Option<Box<RawValue>>,
    pub call: bool,
}

/// What a handle asks of the driver.
#[derive(Debug)]
pub(crate) enum Command {
    Call {
        key: u64,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        timeout: Timeout,
        progress: Option<Progress>,
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
    /// The caller dropped the call (or batch) with this key before its answer came.
    Cancel(u64),
}

/// A handle to a connection's driver: cheap to clone, usable from any task.
///
/// Every call is one message to the driver task; its future waits for the answer and
/// **dropping the future cancels the request** (the endpoint ends it and, with
/// cancellation configured, sends the peer `$/cancelRequest`). Calls fail with
/// [`CallError::is_closed`] once the connection is gone.
#[derive(Debug, Clone)]
pub struct Client {
    tx: mpsc::UnboundedSender<Command>,
    keys: Arc<AtomicU64>,
    /// The status the connection ended with for the process (LSP `exit`), once it did;
    /// `i64::MIN` until then.
    exit: Arc<AtomicI64>,
    /// Hooks around every outgoing call; see [`Client::with_interceptors`].
    interceptors: Option<Arc<Interceptors>>,
    /// State the application keeps per connection: [`Client::local`].
    locals: Arc<sansrpc::runtime::Locals>,
}

impl Client {
    pub(crate) fn new(tx: mpsc::UnboundedSender<Command>) -> Self {
        Client {
            tx,
            keys: Arc::new(AtomicU64::new(0)),
            exit: Arc::new(AtomicI64::new(i64::MIN)),
            interceptors: None,
            locals: Arc::default(),
        }
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

    /// Where the driver records the status the connection ended with
    /// ([`Client::exit_code`]); held without keeping the connection's commands open.
    pub(crate) fn exit_cell(&self) -> Arc<AtomicI64> {
        Arc::clone(&self.exit)
    }

    /// The status the process should exit with, once the connection is over: under the
    /// LSP profile, 0 when the client sent `shutdown` before `exit` (or before it closed),
    /// 1 otherwise (also when the editor's process died); `None` while the connection runs
    /// and for other profiles. An LSP server's `main` ends with
    /// `std::process::exit(client.exit_code().unwrap_or(0))`.
    pub fn exit_code(&self) -> Option<i32> {
        match self.exit.load(Ordering::SeqCst) {
            i64::MIN => None,
            code => i32::try_from(code).ok(),
        }
    }

    /// Calls `M` with the endpoint's default deadline ([`Config::default_timeout`](sansrpc::connection::Config)).
    pub fn call<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
    ) -> impl Future<Output = Result<M::Result, CallError>> + Send {
        self.call_with::<M>(params, Timeout::Default)
    }

    /// Calls the method `M`, given as a value (a [`sansrpc::method!`] struct), so no
    /// turbofish is needed: `client.request(Add, &params).await`. The same as
    /// [`call`](Client::call).
    pub fn request<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        _method: M,
        params: &M::Params,
    ) -> impl Future<Output = Result<M::Result, CallError>> + Send {
        self.call::<M>(params)
    }

    /// Calls `M` with its own deadline.
    pub fn call_with<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
        timeout: Timeout,
    ) -> impl Future<Output = Result<M::Result, CallError>> + Send {
        let pending = encode_params_owned(params)
            .map_err(CallError::Send)
            .map(|params| self.start(Cow::Borrowed(M::NAME), params, timeout, None, None));
        async move {
            let raw = pending?.await?;
            serde_json::from_str(raw.get()).map_err(CallError::Decode)
        }
    }

    /// Calls `method` with raw params, with the endpoint's default deadline.
    pub fn call_raw(&self, method: &str, params: Option<&RawValue>) -> PendingCall {
        self.call_raw_with(method, params, Timeout::Default)
    }

    /// Calls `method` with raw params and its own deadline.
    pub fn call_raw_with(
        &self,
        method: &str,
        params: Option<&RawValue>,
        timeout: Timeout,
    ) -> PendingCall {
        let params = params.map(ToOwned::to_owned);
        self.start(Cow::Owned(method.to_owned()), params, timeout, None, None)
    }

    /// Calls `method` with raw params, a deadline, and a progress token (an integer or a
    /// string): each progress notification on `token` extends the deadline by `timeout` again, never past `cap` after sending
    /// ([`RequestOptions::with_progress`](sansrpc::connection::RequestOptions::with_progress)).
    /// Put the token in the params where the peer expects it.
    pub fn call_raw_with_progress(
        &self,
        method: &str,
        params: Option<&RawValue>,
        timeout: Duration,
        token: impl Into<Id<'static>>,
        cap: Duration,
    ) -> PendingCall {
        let params = params.map(ToOwned::to_owned);
        let progress = Some(Progress {
            token: token.into(),
            cap,
        });
        let timeout = Timeout::After(timeout);
        self.start(
            Cow::Owned(method.to_owned()),
            params,
            timeout,
            progress,
            None,
        )
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
        let params = params.map(ToOwned::to_owned);
        let method = Cow::Owned(method.to_owned());
        self.start(method, params, Timeout::Default, None, Some(on_behalf))
    }

    fn start(
        &self,
        method: Cow<'static, str>,
        mut params: Option<Box<RawValue>>,
        timeout: Timeout,
        progress: Option<Progress>,
        on_behalf: Option<IncomingId>,
    ) -> PendingCall {
        let observe = match self.intercept_before(&method, &mut params, false) {
            Ok(observe) => observe,
            Err(e) => return PendingCall::failed(e, self.tx.clone()),
        };
        let mut pending = self.send_call(method, params, timeout, progress, on_behalf);
        pending.observe = observe;
        pending
    }

    fn send_call(
        &self,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        timeout: Timeout,
        progress: Option<Progress>,
        on_behalf: Option<IncomingId>,
    ) -> PendingCall {
        let key = self.keys.fetch_add(1, Ordering::Relaxed);
        let (reply, rx) = oneshot::channel();
        let sent = self.tx.unbounded_send(Command::Call {
            key,
            method,
            params,
            timeout,
            progress,
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
            observe: None,
        }
    }

    /// Sends notification `N`; resolves once the endpoint has queued it for the wire.
    pub fn notify<N: NotificationMethod<Params: serde::Serialize>>(
        &self,
        params: &N::Params,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        let queued = encode_params_owned(params)
            .map_err(CallError::Send)
            .map(|params| self.notify_owned(Cow::Borrowed(N::NAME), params, None));
        async move { queued?.await }
    }

    /// Sends a notification with raw params; resolves once it is queued for the wire.
    pub fn notify_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        self.notify_owned(
            Cow::Owned(method.to_owned()),
            params.map(ToOwned::to_owned),
            None,
        )
    }

    pub(crate) fn notify_owned(
        &self,
        method: Cow<'static, str>,
        mut params: Option<Box<RawValue>>,
        on_behalf: Option<IncomingId>,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        let (ack, rx) = oneshot::channel();
        let observe = match self.intercept_before(&method, &mut params, true) {
            Ok(observe) => {
                let _ = self.tx.unbounded_send(Command::Notify {
                    method,
                    params,
                    on_behalf,
                    ack,
                });
                Ok(observe)
            }
            Err(e) => Err(e),
        };
        async move {
            let observe = observe?;
            let result = rx.await.unwrap_or(Err(CallError::Ended(EndReason::Closed)));
            if let Some(observe) = observe {
                observe.after(&result);
            }
            result
        }
    }

    /// Starts a batch: calls and notifications sent as one array.
    pub fn batch(&self) -> Batch {
        Batch {
            client: self.clone(),
            entries: Vec::new(),
            error: None,
        }
    }

    /// True once the driver has stopped: every call fails from now on.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Client interceptors ([`sansrpc::ext::interceptors`]).
impl Client {
    /// A handle on the same connection whose calls, notifications and batches go through
    /// `interceptors`: each [`before`](sansrpc::ext::interceptors::Interceptor::before)
    /// hook runs in the calling task before the call is handed to the driver, each
    /// [`after`](sansrpc::ext::interceptors::Interceptor::after) hook when the call's
    /// future completes, with the time elapsed on [`std::time::Instant`] (not when the
    /// future is dropped first). A refusal fails the call with [`CallError::Intercepted`]
    /// and sends nothing. Other handles on the connection are not affected.
    pub fn with_interceptors(&self, interceptors: Interceptors) -> Client {
        Client {
            tx: self.tx.clone(),
            keys: Arc::clone(&self.keys),
            exit: Arc::clone(&self.exit),
            interceptors: (!interceptors.is_empty()).then(|| Arc::new(interceptors)),
            locals: Arc::clone(&self.locals),
        }
    }

    /// Runs the `before` hooks; what to tell the `after` hooks later, if there are any.
    fn intercept_before(
        &self,
        method: &str,
        params: &mut Option<Box<RawValue>>,
        notification: bool,
    ) -> Result<Option<Observe>, CallError> {
        let Some(chain) = &self.interceptors else {
            return Ok(None);
        };
        chain.before(method, params, notification)?;
        Ok(Some(Observe {
            chain: Arc::clone(chain),
            method: method.to_owned(),
            start: std::time::Instant::now(),
        }))
    }
}

/// A call the interceptors saw go out, to report to their `after` hooks.
#[derive(Debug)]
struct Observe {
    chain: Arc<Interceptors>,
    method: String,
    start: std::time::Instant,
}

impl Observe {
    fn after<T>(&self, result: &Result<T, CallError>) {
        self.chain
            .after(&self.method, CallOutcome::of(result), self.start.elapsed());
    }
}

/// Sends a [`Command::Cancel`] when a call's future is dropped before its answer came.
#[derive(Debug)]
struct CancelGuard {
    key: u64,
    tx: mpsc::UnboundedSender<Command>,
    armed: bool,
}

impl CancelGuard {
    /// The answer came: nothing to cancel.
    fn disarm(&mut self) {
        self.armed = false;
    }
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
}

impl PendingCall {
    /// Drops the call without cancelling its request: the answer, when it comes, is
    /// discarded.
    pub(crate) fn detach(mut self) {
        self.guard.disarm();
    }
}

impl Future for PendingCall {
    type Output = RawResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RawResult> {
        let result = futures::ready!(Pin::new(&mut self.rx).poll(cx));
        self.guard.disarm();
        let result = result.unwrap_or(Err(CallError::Ended(EndReason::Closed)));
        if let Some(observe) = self.observe.take() {
            observe.after(&result);
        }
        Poll::Ready(result)
    }
}

/// Where a call's result lands in the vector [`Batch::send`] returns.
#[derive(Debug)]
pub struct BatchSlot<M> {
    index: usize,
    _method: std::marker::PhantomData<fn() -> M>,
}

impl<M> Clone for BatchSlot<M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for BatchSlot<M> {}

impl<M: Method<Result: serde::de::DeserializeOwned>> BatchSlot<M> {
    /// The index of this call's result among the batch's results.
    pub fn index(self) -> usize {
        self.index
    }

    /// Takes and decodes this call's result from the batch's results.
    pub fn take(self, results: &mut [RawResult]) -> Result<M::Result, CallError> {
        let slot = results
            .get_mut(self.index)
            .map(|r| std::mem::replace(r, Err(CallError::Ended(EndReason::Cancelled))));
        let raw = slot.unwrap_or(Err(CallError::Ended(EndReason::Cancelled)))?;
        serde_json::from_str(raw.get()).map_err(CallError::Decode)
    }
}

/// An outgoing batch: one JSON array on the wire, one result per call, matched by id
/// whatever order the peer answers in. From [`Client::batch`].
#[derive(Debug)]
pub struct Batch {
    client: Client,
    entries: Vec<BatchEntry>,
    error: Option<SendError>,
}

impl Batch {
    fn calls(&self) -> usize {
        self.entries.iter().filter(|e| e.call).count()
    }

    /// Adds a call to `M`; its result is at the returned slot.
    pub fn call<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &mut self,
        params: &M::Params,
    ) -> BatchSlot<M> {
        let index = self.calls();
        match encode_params_owned(params) {
            Ok(params) => self.entries.push(BatchEntry {
                method: Cow::Borrowed(M::NAME),
                params,
                call: true,
            }),
            Err(e) => self.error = Some(e),
        }
        BatchSlot {
            index,
            _method: std::marker::PhantomData,
        }
    }

    /// Adds a raw call; returns the index of its result.
    pub fn call_raw(&mut self, method: &str, params: Option<&RawValue>) -> usize {
        let index = self.calls();
        self.entries.push(BatchEntry {
            method: Cow::Owned(method.to_owned()),
            params: params.map(ToOwned::to_owned),
            call: true,
        });
        index
    }

    /// Adds notification `N`.
    pub fn notify<N: NotificationMethod<Params: serde::Serialize>>(
        &mut self,
        params: &N::Params,
    ) -> &mut Self {
        match encode_params_owned(params) {
            Ok(params) => self.entries.push(BatchEntry {
                method: Cow::Borrowed(N::NAME),
                params,
                call: false,
            }),
            Err(e) => self.error = Some(e),
        }
        self
    }

    /// Adds a raw notification.
    pub fn notify_raw(&mut self, method: &str, params: Option<&RawValue>) -> &mut Self {
        self.entries.push(BatchEntry {
            method: Cow::Owned(method.to_owned()),
            params: params.map(ToOwned::to_owned),
            call: false,
        });
        self
    }

    /// Sends the batch with the default deadline and waits for every call's result, in the
    /// order the calls were added. Dropping the future cancels the calls still pending.
    pub fn send(self) -> impl Future<Output = Result<Vec<RawResult>, CallError>> + Send {
        self.send_with(Timeout::Default)
    }

    /// Sends the batch with its own deadline (for every call in it).
    pub fn send_with(
        self,
        timeout: Timeout,
    ) -> impl Future<Output = Result<Vec<RawResult>, CallError>> + Send {
        let Batch {
            client,
            mut entries,
            error,
        } = self;
        let mut intercepted = None;
        let mut observed = Vec::new();
        if let (Some(chain), None) = (&client.interceptors, &error) {
            for entry in &mut entries {
                if let Err(e) = chain.before(&entry.method, &mut entry.params, !entry.call) {
                    intercepted = Some(e);
                    break;
                }
                if entry.call {
                    observed.push(entry.method.to_string());
                }
            }
        }
        let observe = client
            .interceptors
            .clone()
            .map(|chain| (chain, observed, std::time::Instant::now()));
        let key = client.keys.fetch_add(1, Ordering::Relaxed);
        let (reply, mut rx) = oneshot::channel();
        let mut guard = CancelGuard {
            key,
            tx: client.tx.clone(),
            armed: false,
        };
        // A batch with an entry that did not serialize, or one an interceptor refused,
        // never goes out.
        if error.is_none() && intercepted.is_none() {
            let command = Command::Batch {
                key,
                entries,
                timeout,
                reply,
            };
            guard.armed = client.tx.unbounded_send(command).is_ok();
        }
        async move {
            if let Some(e) = intercepted {
                return Err(e);
            }
            if let Some(e) = error {
                return Err(CallError::Send(e));
            }
            let result = (&mut rx).await;
            guard.disarm();
            let result = result.unwrap_or(Err(CallError::Ended(EndReason::Closed)));
            if let (Some((chain, methods, start)), Ok(results)) = (&observe, &result) {
                for (method, r) in methods.iter().zip(results) {
                    chain.after(method, CallOutcome::of(r), start.elapsed());
                }
            }
            result
        }
    }
}
