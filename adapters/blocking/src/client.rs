//! [`Client`]: blocking calls, notifications and batches over a connection's driver.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant as StdInstant};

use sansrpc::connection::Connection;
use sansrpc::connection::{EndReason, RequestOptions, SendError, Timeout};
use sansrpc::ext::interceptors::{CallOutcome, Interceptors};
use sansrpc::method::{decode_result, encode_params_owned, CallError, Method, NotificationMethod};
use sansrpc::{Instant, RawValue};

use crate::driver::{self, Answer, Cmd, Handlers, Op};
use crate::pool::join_by;
use crate::transport::Transport;
use crate::{Error, Options};

/// How much longer than a request's own deadline a caller waits for the driver to report
/// it; only a driver blocked in a write to a peer that does not read needs it.
const SLACK: Duration = Duration::from_secs(1);

/// A handle to one connection: call the peer, notify it, close the connection.
///
/// Cheap to clone; every clone talks to the same driver thread and may be used from any
/// thread. Calls block the calling thread until the answer arrives, the request's deadline
/// passes, or the connection closes. Dropping the last clone closes the connection as
/// [`Client::close`] does.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    /// Hooks around every outgoing call; see [`Client::with_interceptors`].
    interceptors: Option<Arc<Interceptors>>,
}

pub(crate) struct Shared {
    cmds: Sender<Cmd>,
    driver: Mutex<Option<JoinHandle<()>>>,
    /// Forces the transport shut when the driver does not end in time.
    abort: Box<dyn Fn() + Send + Sync>,
    default_timeout: Option<Duration>,
    grace: Duration,
    /// The status the connection ended with for the process; `i64::MIN` until then.
    exit: Arc<AtomicI64>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// Sends a request on the driver thread, under the caller's token.
type SendRequest = dyn FnOnce(&mut Connection, u64, Instant) -> Result<(), SendError> + Send;
/// Sends a notification on the driver thread.
type SendNotification = dyn FnOnce(&mut Connection) -> Result<(), SendError> + Send;

fn options(timeout: Option<Duration>) -> RequestOptions {
    RequestOptions::timeout(timeout.map_or(Timeout::Default, Timeout::After))
}

impl Client {
    /// Starts a driver for `transport` and returns its handle.
    pub(crate) fn spawn(
        transport: Transport,
        abort: Box<dyn Fn() + Send + Sync>,
        handlers: Handlers,
        config: &Options,
    ) -> std::io::Result<Client> {
        let exit = Arc::new(AtomicI64::new(i64::MIN));
        let (cmds, driver) = driver::spawn(transport, handlers, config, Arc::clone(&exit))?;
        Ok(Client {
            shared: Arc::new(Shared {
                cmds,
                driver: Mutex::new(Some(driver)),
                abort,
                default_timeout: config.connection.default_timeout,
                grace: config.connection.end_grace,
                exit,
            }),
            interceptors: None,
        })
    }

    /// Calls the method `M`, given as a value (a [`sansrpc::method!`] struct), so no
    /// turbofish is needed: `client.request(Add, &params, None)`. The same as
    /// [`call`](Client::call).
    pub fn request<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        _method: M,
        params: &M::Params,
        timeout: Option<Duration>,
    ) -> Result<M::Result, Error> {
        self.call::<M>(params, timeout)
    }

    /// Calls `M` and waits for its result.
    ///
    /// `timeout` is the request's deadline (`None`: the endpoint's `default_timeout`); when
    /// it passes the call fails with [`CallError::Ended`]`(`[`EndReason::TimedOut`]`)` and
    /// the peer is sent a cancellation. Params are sent by name or by position as `M::Params`
    /// serializes (a struct by name, a tuple by position).
    pub fn call<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
        timeout: Option<Duration>,
    ) -> Result<M::Result, Error> {
        let params = encode_params_owned(params).map_err(Error::Send)?;
        let options = options(timeout);
        let raw = self.intercept(M::NAME, params, false, |params| {
            self.submit(
                Box::new(move |c, token, now| {
                    c.call(token, M::NAME, params.as_deref(), options, now)
                }),
                timeout,
            )
        })?;
        decode_result::<M>(Ok(Cow::Owned(raw))).map_err(Error::Call)
    }

    /// Calls `method` with raw params and waits for the raw result; `timeout` as for
    /// [`Client::call`].
    pub fn call_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, Error> {
        let params = params.map(ToOwned::to_owned);
        let options = options(timeout);
        self.intercept(method, params, false, |params| {
            let method = method.to_owned();
            self.submit(
                Box::new(move |c, token, now| {
                    c.call(token, &method, params.as_deref(), options, now)
                }),
                timeout,
            )
        })
    }

    /// Calls `method` with raw params, a deadline, and a progress token (an integer or a
    /// string): each progress notification on `token` extends the deadline by `timeout` again, never past `cap` after sending
    /// ([`RequestOptions::with_progress`]). Put the token in the params where the peer
    /// expects it.
    pub fn call_raw_with_progress(
        &self,
        method: &str,
        params: Option<&RawValue>,
        timeout: Duration,
        token: impl Into<sansrpc::Id<'static>>,
        cap: Duration,
    ) -> Result<Box<RawValue>, Error> {
        let (method, params) = (method.to_owned(), params.map(ToOwned::to_owned));
        let options = RequestOptions::timeout(Timeout::After(timeout)).with_progress(token, cap);
        self.submit(
            Box::new(move |c, token, now| c.call(token, &method, params.as_deref(), options, now)),
            Some(cap.max(timeout)),
        )
    }

    /// Reports progress on `token` (the one the peer sent with its request): a `$/progress`
    /// notification `{"token": token, "value": value}`. Inside a request handler,
    /// [`report_progress`](crate::report_progress) needs no client.
    pub fn send_progress(&self, token: &sansrpc::Id<'_>, value: &RawValue) -> Result<(), Error> {
        let (token, value) = (token.to_owned_id(), value.to_owned());
        self.send(Box::new(move |c| c.send_progress(&token, &value)))
    }

    /// Sends a request without waiting: the receiver gets its answer.
    pub(crate) fn start_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
        timeout: Option<Duration>,
    ) -> Result<Receiver<Answer>, Error> {
        let (op, rx) = request_op(method, params, options(timeout));
        self.run(op)?;
        Ok(rx)
    }

    /// How long a call with deadline `timeout` may be waited for.
    pub(crate) fn limit(&self, timeout: Option<Duration>) -> Option<Duration> {
        timeout.or(self.shared.default_timeout)
    }

    /// Sends a notification to `N`. Returns once it is queued for writing.
    pub fn notify<N: NotificationMethod<Params: serde::Serialize>>(
        &self,
        params: &N::Params,
    ) -> Result<(), Error> {
        let params = encode_params_owned(params).map_err(Error::Send)?;
        self.intercept(N::NAME, params, true, |params| {
            self.send(Box::new(move |c| c.notify(N::NAME, params.as_deref())))
        })
    }

    /// Sends a notification with raw params.
    pub fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> Result<(), Error> {
        let params = params.map(ToOwned::to_owned);
        self.intercept(method, params, true, |params| {
            let method = method.to_owned();
            self.send(Box::new(move |c| c.notify(&method, params.as_deref())))
        })
    }

    /// Starts a batch: calls and notifications sent as one JSON array.
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            client: self,
            entries: Vec::new(),
        }
    }

    /// Closes the connection gracefully and waits for its threads: stops reading, gives
    /// the handlers in flight the shutdown grace to answer, fails every pending call with
    /// [`EndReason::Closed`], then shuts the transport down. Idempotent; other clones fail
    /// from then on with [`SendError::Closed`].
    pub fn close(&self) {
        self.shared.begin_close();
        self.shared.join();
    }

    /// True once the connection is closed (by either side) and its driver has ended.
    pub fn is_closed(&self) -> bool {
        let driver = self.shared.driver.lock().unwrap_or_else(|e| e.into_inner());
        driver.as_ref().map_or(true, JoinHandle::is_finished)
    }

    /// The status the process should exit with, once the connection is over: under the
    /// LSP profile, 0 when the client sent `shutdown` before `exit` (or before it closed),
    /// 1 otherwise (also when the editor's process died); `None` while the connection runs
    /// and for other profiles.
    pub fn exit_code(&self) -> Option<i32> {
        match self.shared.exit.load(Ordering::SeqCst) {
            i64::MIN => None,
            code => i32::try_from(code).ok(),
        }
    }

    /// Asks the driver to close without waiting for it.
    pub(crate) fn begin_close(&self) {
        self.shared.begin_close();
    }

    /// Waits until the connection ends by itself (the peer closes it), without asking.
    pub(crate) fn wait(&self) {
        let driver = self
            .shared
            .driver
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(driver) = driver {
            let _ = driver.join();
        }
    }

    fn run(&self, op: Op) -> Result<(), Error> {
        self.shared
            .cmds
            .send(Cmd::With(op))
            .map_err(|_| Error::Send(SendError::Closed))
    }

    /// Runs a notification send on the driver and returns its outcome.
    fn send(&self, send: Box<SendNotification>) -> Result<(), Error> {
        let (tx, rx) = mpsc::channel();
        self.run(Box::new(move |c, _, _| {
            let _ = tx.send(send(c));
        }))?;
        match rx.recv() {
            Ok(result) => result.map_err(Error::Send),
            Err(_) => Err(Error::Send(SendError::Closed)),
        }
    }

    fn submit(
        &self,
        send: Box<SendRequest>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, Error> {
        let (tx, rx) = mpsc::channel();
        self.run(Box::new(move |c, now, waiters| {
            let token = waiters.token();
            match send(c, token, now) {
                Ok(()) => waiters.insert(token, 0, tx),
                Err(e) => {
                    let _ = tx.send(Err(Error::Send(e)));
                }
            }
        }))?;
        wait(&rx, timeout.or(self.shared.default_timeout))
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
            shared: Arc::clone(&self.shared),
            interceptors: (!interceptors.is_empty()).then(|| Arc::new(interceptors)),
        }
    }

    /// Runs `send` with `params` between the interceptors' hooks.
    fn intercept<T>(
        &self,
        method: &str,
        mut params: Option<Box<RawValue>>,
        notification: bool,
        send: impl FnOnce(Option<Box<RawValue>>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let Some(chain) = &self.interceptors else {
            return send(params);
        };
        chain
            .before(method, &mut params, notification)
            .map_err(Error::Call)?;
        let start = StdInstant::now();
        let result = send(params);
        chain.after(method, outcome_of(&result), start.elapsed());
        result
    }
}

/// How a call ended, for the interceptors.
fn outcome_of<T>(result: &Result<T, Error>) -> CallOutcome<'_> {
    match result {
        Ok(_) => CallOutcome::Success,
        Err(Error::Call(CallError::Rpc(e) | CallError::Intercepted(e))) => CallOutcome::Error(e),
        Err(_) => CallOutcome::Failed,
    }
}

/// The driver-side work of sending a request, and where its answer comes.
pub(crate) fn request_op(
    method: &str,
    params: Option<&RawValue>,
    options: RequestOptions,
) -> (Op, Receiver<Answer>) {
    let (method, params) = (method.to_owned(), params.map(ToOwned::to_owned));
    let (tx, rx) = mpsc::channel();
    let op: Op = Box::new(move |c, now, waiters| {
        let token = waiters.token();
        match c.call(token, &method, params.as_deref(), options, now) {
            Ok(()) => waiters.insert(token, 0, tx),
            Err(e) => {
                let _ = tx.send(Err(Error::Send(e)));
            }
        }
    });
    (op, rx)
}

/// Waits for an answer, a little longer than the request's own deadline.
pub(crate) fn wait(rx: &Receiver<Answer>, limit: Option<Duration>) -> Answer {
    let answer = match limit {
        Some(limit) => rx.recv_timeout(limit + SLACK),
        None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
    };
    match answer {
        Ok(answer) => answer,
        Err(RecvTimeoutError::Timeout) => Err(Error::Call(CallError::Ended(EndReason::TimedOut))),
        // The driver ended before it ran the call.
        Err(RecvTimeoutError::Disconnected) => Err(Error::Send(SendError::Closed)),
    }
}

impl Shared {
    fn begin_close(&self) {
        let _ = self.cmds.send(Cmd::Shutdown);
    }

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

impl Drop for Shared {
    fn drop(&mut self) {
        self.begin_close();
        self.join();
    }
}

/// Calls and notifications to send as one batch; from [`Client::batch`].
///
/// Params are raw JSON; decode each result with [`Pending::wait_as`].
pub struct Batch<'c> {
    client: &'c Client,
    entries: Vec<(String, Option<Box<RawValue>>, bool)>,
}

impl fmt::Debug for Batch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl Batch<'_> {
    /// Adds a call; its answer is the [`Pending`] at the same position among the calls in
    /// what [`Batch::send`] returns.
    pub fn call_raw(&mut self, method: &str, params: Option<&RawValue>) -> &mut Self {
        let params = params.map(ToOwned::to_owned);
        self.entries.push((method.to_owned(), params, true));
        self
    }

    /// Adds a notification.
    pub fn notify_raw(&mut self, method: &str, params: Option<&RawValue>) -> &mut Self {
        let params = params.map(ToOwned::to_owned);
        self.entries.push((method.to_owned(), params, false));
        self
    }

    /// Sends the batch as one frame (nothing when it is empty) and returns one [`Pending`]
    /// answer per call, in the order they were added; `timeout` as for [`Client::call`].
    pub fn send(mut self, timeout: Option<Duration>) -> Result<Vec<Pending>, Error> {
        let options = options(timeout);
        let limit = timeout.or(self.client.shared.default_timeout);
        let chain = self.client.interceptors.clone();
        if let Some(chain) = &chain {
            for (method, params, call) in &mut self.entries {
                chain.before(method, params, !*call).map_err(Error::Call)?;
            }
        }
        let start = StdInstant::now();
        let mut pending = Vec::new();
        let entries: Vec<_> = self
            .entries
            .into_iter()
            .map(|(method, params, call)| {
                let tx = call.then(|| {
                    let (tx, rx) = mpsc::channel();
                    let observe = chain.clone().map(|c| (c, method.clone(), start));
                    pending.push(Pending { rx, limit, observe });
                    tx
                });
                (method, params, tx)
            })
            .collect();
        let (ack, acked) = mpsc::channel();
        self.client.run(Box::new(move |c, now, waiters| {
            let token = waiters.token();
            let mut batch = c.batch(token, now);
            let mut sent = Vec::new();
            let result = entries.into_iter().try_for_each(|(method, params, tx)| {
                let params = params.as_deref();
                match tx {
                    Some(tx) => {
                        batch.call(&method, params, options.clone())?;
                        sent.push(tx);
                    }
                    None => batch.notify(&method, params)?,
                }
                Ok(())
            });
            let result = result.and_then(|()| batch.send());
            if result.is_ok() {
                for (index, tx) in sent.into_iter().enumerate() {
                    waiters.insert(token, index, tx);
                }
            }
            let _ = ack.send(result.map(|_| ()));
        }))?;
        match acked.recv() {
            Ok(Ok(())) => Ok(pending),
            Ok(Err(e)) => Err(Error::Send(e)),
            Err(_) => Err(Error::Send(SendError::Closed)),
        }
    }
}

/// The answer to one call of a [`Batch`], to wait for.
#[derive(Debug)]
pub struct Pending {
    rx: Receiver<Answer>,
    limit: Option<Duration>,
    /// The interceptors to tell, the method and when the batch went out.
    observe: Option<(Arc<Interceptors>, String, StdInstant)>,
}

impl Pending {
    /// Waits for the raw result.
    pub fn wait(self) -> Result<Box<RawValue>, Error> {
        let result = wait(&self.rx, self.limit);
        if let Some((chain, method, start)) = &self.observe {
            chain.after(method, outcome_of(&result), start.elapsed());
        }
        result
    }

    /// Waits for the result and decodes it as `M`'s.
    pub fn wait_as<M: Method<Result: serde::de::DeserializeOwned>>(
        self,
    ) -> Result<M::Result, Error> {
        let raw = self.wait()?;
        decode_result::<M>(Ok(Cow::Owned(raw))).map_err(Error::Call)
    }
}
