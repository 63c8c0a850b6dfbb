//! [`Client`]: blocking calls, notifications and batches over a connection's driver. The API
//! is the futures adapter's, method for method, with values where it has futures
//! (docs/client.md); what both share (typed params and results, batches, interceptors) is
//! the core's [`sansrpc::client`].

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant as StdInstant};

use sansrpc::client::{self as shared, send_batch, BatchEntry, RawResult, SendBatch};
use sansrpc::connection::{EndReason, RequestOptions, SendError, Timeout};
use sansrpc::ext::interceptors::Interceptors;
use sansrpc::method::{CallError, Method, NotificationMethod};
use sansrpc::{Id, RawValue};
use sansrpc_runtime::{Locals, Observe, ObserveBatch};

use crate::driver::{self, Cmd, Handlers, Op};
use crate::pool::join_by;
use crate::transport::Transport;
use crate::Options;

/// How much longer than a request's own deadline a caller waits for the driver to report
/// it; only a driver blocked in a write to a peer that does not read needs it.
const SLACK: Duration = Duration::from_secs(1);

/// A handle to one connection: call the peer, notify it, close the connection. The futures
/// adapter's `Client` has the same methods, returning futures where these block
/// (docs/client.md).
///
/// Cheap to clone; every clone talks to the same driver thread and may be used from any
/// thread. Calls block the calling thread until the answer arrives, the request's deadline
/// passes, or the connection closes. Dropping the last clone of a connection's client
/// closes the connection as [`Client::close`] does; the client a handler gets from
/// [`RequestContext::peer`](crate::RequestContext::peer) does not keep it open.
#[derive(Clone)]
pub struct Client {
    link: Arc<Link>,
    /// The application's hold on the connection: `None` for a handler's peer.
    owner: Option<Arc<Owner>>,
    /// Hooks around every outgoing call; see [`Client::with_interceptors`].
    interceptors: Option<Arc<Interceptors>>,
}

/// What every handle on one connection shares with its driver.
pub(crate) struct Link {
    pub cmds: Sender<Cmd>,
    pub default_timeout: Option<Duration>,
    /// Set by the driver once the connection is closed.
    pub closed: AtomicBool,
    /// State the application keeps per connection ([`Client::local`]).
    pub locals: Arc<Locals>,
    /// The status the connection ended with for the process; `i64::MIN` until then.
    pub exit: AtomicI64,
    /// The connection's protocol profile.
    pub profile: sansrpc::Profile,
}

/// The application's hold on a connection: the last one dropped closes it.
struct Owner {
    link: Arc<Link>,
    driver: Mutex<Option<JoinHandle<()>>>,
    /// Forces the transport shut when the driver does not end in time.
    abort: Box<dyn Fn() + Send + Sync>,
    grace: Duration,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// A call sent to the driver: its answer to wait for, and what the interceptors are told.
pub(crate) struct Pending {
    rx: Receiver<RawResult>,
    limit: Option<Duration>,
    observe: Option<Observe>,
}

impl Pending {
    /// Waits for the answer, a little longer than the request's own deadline.
    pub(crate) fn wait(self) -> RawResult {
        let result = wait_answer(&self.rx, self.limit);
        if let Some(observe) = &self.observe {
            observe.after(&result);
        }
        result
    }
}

impl Client {
    /// Starts a driver for `transport` and returns its handle.
    pub(crate) fn spawn(
        transport: Transport,
        abort: Box<dyn Fn() + Send + Sync>,
        handlers: Handlers,
        config: &Options,
    ) -> std::io::Result<Client> {
        let (cmds, start) = driver::channel();
        let link = Arc::new(Link {
            cmds,
            default_timeout: config.connection.default_timeout,
            closed: AtomicBool::new(false),
            locals: Arc::default(),
            exit: AtomicI64::new(i64::MIN),
            profile: config.connection.profile,
        });
        let driver = driver::spawn(transport, handlers, config, Arc::clone(&link), start)?;
        let owner = Owner {
            link: Arc::clone(&link),
            driver: Mutex::new(Some(driver)),
            abort,
            grace: config.connection.end_grace,
        };
        Ok(Client {
            link,
            owner: Some(Arc::new(owner)),
            interceptors: None,
        })
    }

    /// A handle for the connection's handlers: it does not keep the connection open.
    pub(crate) fn peer(link: Arc<Link>) -> Client {
        Client {
            link,
            owner: None,
            interceptors: None,
        }
    }

    /// The protocol profile the connection was configured with
    /// (`Options::for_profile`): a protocol layer checks that its conventions are in force.
    pub fn profile(&self) -> sansrpc::Profile {
        self.link.profile
    }

    /// The connection's own value of type `T`, made with `T::default()` the first time it
    /// is asked for: state a protocol keeps per connection (an MCP server's session, an LSP
    /// server's open documents), shared by every handler on it, dropped with the
    /// connection's last handle. One value per type; keep your own types (or a newtype) to
    /// avoid meeting another layer's.
    pub fn local<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.link.locals.get::<T>()
    }

    /// Every value [`local`](Self::local) keeps for this connection.
    pub fn locals(&self) -> Arc<Locals> {
        Arc::clone(&self.link.locals)
    }

    /// The status the process should exit with, once the connection is over: under the
    /// LSP profile, 0 when the client sent `shutdown` before `exit` (or before it closed),
    /// 1 otherwise (also when the editor's process died); `None` while the connection runs
    /// and for other profiles.
    pub fn exit_code(&self) -> Option<i32> {
        match self.link.exit.load(Ordering::SeqCst) {
            i64::MIN => None,
            code => i32::try_from(code).ok(),
        }
    }

    /// Calls `M` with the connection's default deadline
    /// ([`Config::default_timeout`](sansrpc::Config::default_timeout)) and waits for its
    /// result. Params are sent by name or by position as `M::Params` serializes (a struct
    /// by name, a tuple by position).
    pub fn call<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
    ) -> Result<M::Result, CallError> {
        self.call_with::<M>(params, Timeout::Default)
    }

    /// Calls the method `M` given as a value (a [`sansrpc::method!`] struct), so no turbofish
    /// is needed: `client.request(Add, &params)` is `client.call::<Add>(&params)`.
    pub fn request<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        _method: M,
        params: &M::Params,
    ) -> Result<M::Result, CallError> {
        self.call::<M>(params)
    }

    /// Calls `M` with its own deadline; when it passes the call fails with
    /// [`CallError::is_timeout`] and (with cancellation configured) the peer is sent a
    /// cancellation.
    pub fn call_with<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
        timeout: Timeout,
    ) -> Result<M::Result, CallError> {
        let params = shared::encode(params)?;
        let options = RequestOptions::timeout(timeout);
        let raw = self
            .start(Cow::Borrowed(M::NAME), params, options)?
            .wait()?;
        shared::decode::<M>(&raw)
    }

    sansrpc_runtime::raw_calls!(RawResult);

    /// Calls `method` with raw params and `options` ([`raw_calls!`](sansrpc_runtime::raw_calls)).
    fn call_raw_options(
        &self,
        method: &str,
        params: Option<&RawValue>,
        options: RequestOptions,
    ) -> RawResult {
        let (method, params) = shared::owned(method, params);
        self.start(method, params, options)?.wait()
    }

    /// Sends a request through the interceptors without waiting for its answer.
    pub(crate) fn start(
        &self,
        method: Cow<'static, str>,
        mut params: Option<Box<RawValue>>,
        options: RequestOptions,
    ) -> Result<Pending, CallError> {
        let observe = Observe::before(self.interceptors.as_ref(), &method, &mut params, false)?;
        let limit = self.limit(options.timeout);
        // Progress may push the deadline out as far as its cap.
        let limit = match &options.progress {
            Some(progress) => limit.map(|limit| limit.max(progress.cap)),
            None => limit,
        };
        let (tx, rx) = mpsc::channel();
        self.run(Box::new(move |c, now, waiters| {
            let token = waiters.token();
            match c.call(token, &method, params.as_deref(), options, now) {
                Ok(()) => waiters.callers.call(token, tx),
                Err(e) => drop(tx.send(Err(CallError::Send(e)))),
            }
        }))?;
        Ok(Pending { rx, limit, observe })
    }

    /// How long a call with `timeout` may be waited for.
    pub(crate) fn limit(&self, timeout: Timeout) -> Option<Duration> {
        match timeout {
            Timeout::Default => self.link.default_timeout,
            Timeout::Never => None,
            Timeout::After(d) => Some(d),
        }
    }

    /// Reports progress on `token` (the one the peer sent with its request) with `value`,
    /// in the connection's profile: [`Connection::send_progress`](sansrpc::Connection::send_progress)
    /// says what each profile puts on the wire (LSP: `$/progress {token, value}`; MCP:
    /// `notifications/progress {progressToken, …value's members}`). Returns once it is
    /// queued. Interceptors do not see progress notifications.
    pub fn send_progress(&self, token: &Id<'_>, value: &RawValue) -> Result<(), CallError> {
        let (token, value) = (token.to_owned_id(), value.to_owned());
        self.queued(move |c| c.send_progress(&token, &value))
    }

    /// [`send_progress`](Self::send_progress) without waiting for the driver (so also from
    /// the driver thread: a stream method's handler); a refusal is dropped.
    pub(crate) fn queue_progress(&self, token: &Id<'_>, value: &RawValue) -> Result<(), CallError> {
        let (token, value) = (token.to_owned_id(), value.to_owned());
        self.run(Box::new(move |c, _, _| {
            let _ = c.send_progress(&token, &value);
        }))
    }

    /// Sends notification `N`; returns once the connection has queued it for the wire.
    pub fn notify<N: NotificationMethod<Params: serde::Serialize>>(
        &self,
        params: &N::Params,
    ) -> Result<(), CallError> {
        let params = shared::encode(params)?;
        self.notify_owned(Cow::Borrowed(N::NAME), params)
    }

    /// Sends a notification with raw params; returns once it is queued for the wire.
    pub fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> Result<(), CallError> {
        let (method, params) = shared::owned(method, params);
        self.notify_owned(method, params)
    }

    fn notify_owned(
        &self,
        method: Cow<'static, str>,
        mut params: Option<Box<RawValue>>,
    ) -> Result<(), CallError> {
        let observe = Observe::before(self.interceptors.as_ref(), &method, &mut params, true)?;
        let result = self.queued(move |c| c.notify(&method, params.as_deref()));
        if let Some(observe) = observe {
            observe.after(&result);
        }
        result
    }

    /// Queues a notification with raw params without waiting for the connection's driver
    /// (so also from a notification handler, which runs on the driver thread, where
    /// [`notify_raw`](Self::notify_raw) would wait for itself); false when the connection
    /// is gone. A notification the connection refuses is dropped. The futures adapter has
    /// no such method: its `notify_raw` is queued when called, and its future only waits.
    pub fn notify_raw_queued(&self, method: &str, params: Option<&RawValue>) -> bool {
        let (method, params) = (method.to_owned(), params.map(ToOwned::to_owned));
        let op: Op = Box::new(move |conn, _, _| {
            let _ = conn.notify(&method, params.as_deref());
        });
        !self.is_closed() && self.run(op).is_ok()
    }

    /// Starts a batch: calls and notifications sent as one JSON array.
    pub fn batch(&self) -> Batch {
        Batch::new(self.clone())
    }

    /// Closes the connection gracefully and waits for its threads: stops reading, gives
    /// the handlers in flight the connection's [`end_grace`](sansrpc::Config::end_grace)
    /// to answer, fails every pending call with [`EndReason::Closed`], then shuts the
    /// transport down. Idempotent; other clones fail from then on with
    /// [`SendError::Closed`]. From a handler's [`peer`](crate::RequestContext::peer) it
    /// asks for the close without waiting (the handler's own thread is one of those
    /// waited for).
    pub fn close(&self) {
        let _ = self.link.cmds.send(Cmd::Shutdown);
        if let Some(owner) = &self.owner {
            owner.join();
        }
    }

    /// True once the connection is closed (by either side).
    pub fn is_closed(&self) -> bool {
        if self.link.closed.load(Ordering::Relaxed) {
            return true;
        }
        self.owner.as_ref().is_some_and(|owner| {
            let driver = owner.driver.lock().unwrap_or_else(|e| e.into_inner());
            driver.as_ref().map_or(true, JoinHandle::is_finished)
        })
    }

    /// Asks the driver to close without waiting for it.
    pub(crate) fn begin_close(&self) {
        let _ = self.link.cmds.send(Cmd::Shutdown);
    }

    /// Waits until the connection ends by itself (the peer closes it), without asking.
    pub(crate) fn wait(&self) {
        let Some(owner) = &self.owner else { return };
        let driver = owner
            .driver
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(driver) = driver {
            let _ = driver.join();
        }
    }

    pub(crate) fn run(&self, op: Op) -> Result<(), CallError> {
        self.link
            .cmds
            .send(Cmd::With(op))
            .map_err(|_| CallError::Send(SendError::Closed))
    }

    /// Runs a send on the driver and returns the connection's verdict.
    fn queued(
        &self,
        send: impl FnOnce(&mut sansrpc::Connection) -> Result<(), SendError> + Send + 'static,
    ) -> Result<(), CallError> {
        let (tx, rx) = mpsc::channel();
        self.run(Box::new(move |c, _, _| {
            let _ = tx.send(send(c));
        }))?;
        match rx.recv() {
            Ok(result) => result.map_err(CallError::Send),
            Err(_) => Err(CallError::Send(SendError::Closed)),
        }
    }
}

/// Client interceptors ([`sansrpc::ext::interceptors`]).
impl Client {
    /// A handle on the same connection whose calls, notifications and batches go through
    /// `interceptors`: each [`before`](sansrpc::ext::interceptors::Interceptor::before)
    /// hook runs on the calling thread before the call is handed to the driver, each
    /// [`after`](sansrpc::ext::interceptors::Interceptor::after) hook once the answer (or
    /// the failure) is in, with the time elapsed on [`std::time::Instant`]. A refusal fails
    /// the call with [`CallError::Intercepted`] and sends nothing. Other handles on the
    /// connection are not affected.
    pub fn with_interceptors(&self, interceptors: Interceptors) -> Client {
        Client {
            interceptors: (!interceptors.is_empty()).then(|| Arc::new(interceptors)),
            ..self.clone()
        }
    }
}

/// Waits for an answer, a little longer than the request's own deadline.
pub(crate) fn wait_answer<T>(
    rx: &Receiver<Result<T, CallError>>,
    limit: Option<Duration>,
) -> Result<T, CallError> {
    let answer = match limit {
        Some(limit) => rx.recv_timeout(limit + SLACK),
        None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
    };
    match answer {
        Ok(answer) => answer,
        Err(RecvTimeoutError::Timeout) => Err(CallError::Ended(EndReason::TimedOut)),
        // The driver ended before it ran the call.
        Err(RecvTimeoutError::Disconnected) => Err(CallError::Send(SendError::Closed)),
    }
}

impl Owner {
    fn join(&self) {
        let mut driver = self.driver.lock().unwrap_or_else(|e| e.into_inner());
        let Some(thread) = driver.take() else { return };
        if thread.thread().id() == thread::current().id() {
            // The last clone was dropped by a handler the driver itself ran: it is ending.
            return;
        }
        // Handlers get the grace, then the driver's teardown may take as long again.
        let bound = self.grace * 2 + SLACK;
        if let Err(thread) = join_by(thread, StdInstant::now() + bound) {
            // Blocked in a write to a peer that does not read: unblock it.
            (self.abort)();
            let _ = join_by(thread, StdInstant::now() + SLACK);
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        let _ = self.link.cmds.send(Cmd::Shutdown);
        self.join();
    }
}

/// Calls and notifications sent as one JSON array; from [`Client::batch`]. The core's
/// [`Batch`](sansrpc::client::Batch) over this client: the same methods as the futures
/// adapter's, with `send` waiting for the results.
pub type Batch = sansrpc::client::Batch<Client>;

impl SendBatch for Client {
    type Sent = Result<Vec<RawResult>, CallError>;

    fn send_batch(
        &self,
        entries: Result<Vec<BatchEntry>, CallError>,
        timeout: Timeout,
    ) -> Self::Sent {
        // A batch with an entry that did not serialize, or one an interceptor refused,
        // never goes out.
        let mut entries = entries?;
        let observe = ObserveBatch::before(self.interceptors.as_ref(), &mut entries)?;
        let options = RequestOptions::timeout(timeout);
        let (tx, rx) = mpsc::channel();
        self.run(Box::new(move |c, now, waiters| {
            let token = waiters.token();
            match send_batch(c, token, &entries, &options, now) {
                Ok(0) => drop(tx.send(Ok(Vec::new()))),
                Ok(n) => waiters.callers.batch(token, n, tx),
                Err(e) => drop(tx.send(Err(CallError::Send(e)))),
            }
        }))?;
        let result = wait_answer(&rx, self.limit(timeout));
        if let Some(observe) = observe {
            observe.after(&result);
        }
        result
    }
}
