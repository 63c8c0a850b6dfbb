//! What the driver does with the connection's events: the peer's requests go to the
//! handler pool (with a cancellation flag and a way to report progress), notifications run
//! here in arrival order, answers go to the callers waiting, stream pulls are fed from
//! iterators running on the pool.

use std::cell::RefCell;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::time::Duration;

use sansrpc::codec::FrameError;
use sansrpc::connection::stream::Produced;
use sansrpc::connection::Event;
use sansrpc::connection::{IncomingId, Profile};
use sansrpc::connection::{RequestOptions, SendError, Timeout};
use sansrpc::method::{decode_result, encode_params_owned, CallError, Method};
use sansrpc::router::{Reply, Router};
use sansrpc::runtime::Locals;
use sansrpc::{ErrorObject, Instant, RawValue, Request};

use super::{Cmd, Driver, Op};
use crate::pool::{Job, Pool};
use crate::worker::{work_stream, Lent};
use crate::Error;

/// Stream items produced per turn of the driver, so a fast stream cannot starve the rest.
const ITEMS_PER_TURN: usize = 4096;

/// What runs the peer's requests and notifications.
pub(crate) struct Handlers {
    pub router: Arc<Router>,
    /// A handler pool's queue; `None` runs the router on the driver thread, which only an
    /// empty router (a client's) may do.
    pub jobs: Option<Sender<Job>>,
    /// A pool of this connection's own, shut down with it.
    pub pool: Option<Pool>,
}

impl Handlers {
    /// For a connection that serves nothing: every request is answered "Method not found".
    pub fn none() -> Handlers {
        let mut router = Router::new();
        router.extensions(false);
        Handlers {
            router: Arc::new(router),
            jobs: None,
            pool: None,
        }
    }

    /// For a connection with a pool of its own.
    pub fn own_pool(router: Arc<Router>, workers: usize) -> io::Result<Handlers> {
        let pool = Pool::new(workers)?;
        Ok(Handlers {
            router,
            jobs: Some(pool.sender()),
            pool: Some(pool),
        })
    }
}

thread_local! {
    static CURRENT: RefCell<Option<RequestContext>> = const { RefCell::new(None) };
}

/// The context a handler of `request` sees on a connection with `config`, cancelled
/// through `flag`.
fn context(
    request: &Request<'_>,
    flag: Arc<AtomicBool>,
    config: &(Profile, Option<Duration>),
    (connection, closed, locals): (&Sender<Cmd>, &Arc<AtomicBool>, &Arc<Locals>),
) -> RequestContext {
    RequestContext {
        id: request.id.to_owned_id(),
        progress: config.0.progress_token(request.params.as_deref()),
        cancelled: flag,
        connection: connection.clone(),
        default_timeout: config.1,
        closed: Arc::clone(closed),
        locals: Arc::clone(locals),
    }
}

/// Runs `f` with `cx` as this thread's [`RequestContext::current`].
fn with_context<R>(cx: RequestContext, f: impl FnOnce() -> R) -> R {
    let before = CURRENT.with(|c| c.borrow_mut().replace(cx));
    let result = f();
    CURRENT.with(|c| *c.borrow_mut() = before);
    result
}

/// The request the current thread's handler answers, and the connection it came on: the
/// blocking adapter's handler context, from [`RequestContext::current`] inside a handler
/// run on the pool, and inside a stream method's handler while it makes its iterator
/// (keep a clone in the iterator: [`is_cancelled`](RequestContext::is_cancelled) turns
/// true once the stream ends or the peer cancels it).
///
/// - [`id`](RequestContext::id): the request's id as the peer sent it;
/// - [`peer`](RequestContext::peer): calls and notifications to the peer, from inside the
///   handler (an LSP server asking its client for `workspace/configuration`); a call blocks
///   this worker thread only;
/// - [`is_cancelled`](RequestContext::is_cancelled): the peer cancelled the request (or
///   the connection's shutdown grace ran out);
/// - [`report_progress`](RequestContext::report_progress): progress on the token the peer
///   put in the request (LSP `workDoneToken`, MCP `_meta.progressToken`), in the
///   connection's profile.
#[derive(Clone, Debug)]
pub struct RequestContext {
    id: sansrpc::Id<'static>,
    progress: Option<sansrpc::Id<'static>>,
    cancelled: Arc<AtomicBool>,
    connection: Sender<Cmd>,
    default_timeout: Option<Duration>,
    closed: Arc<AtomicBool>,
    locals: Arc<Locals>,
}

impl RequestContext {
    /// The context of the request this thread's handler answers; `None` outside one.
    pub fn current() -> Option<RequestContext> {
        CURRENT.with(|c| c.borrow().clone())
    }

    /// The request's id, exactly as the peer sent it.
    pub fn id(&self) -> &sansrpc::Id<'static> {
        &self.id
    }

    /// True once the peer cancelled the request (or the shutdown grace ran out).
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// The progress token the peer put in the request, if any.
    pub fn progress_token(&self) -> Option<&sansrpc::Id<'static>> {
        self.progress.as_ref()
    }

    /// Reports progress on the request's token, with the connection's progress method
    /// (see [`report_progress`]); false when the request carried no token or the
    /// connection is gone.
    pub fn report_progress(&self, value: &RawValue) -> bool {
        match &self.progress {
            Some(token) => send_progress(&self.connection, token, value),
            None => false,
        }
    }

    /// The peer, to call and notify from inside the handler.
    pub fn peer(&self) -> Peer {
        Peer {
            connection: self.connection.clone(),
            default_timeout: self.default_timeout,
            closed: Arc::clone(&self.closed),
            locals: Arc::clone(&self.locals),
        }
    }
}

/// The peer of a connection, from inside one of its handlers ([`RequestContext::peer`]).
#[derive(Clone, Debug)]
pub struct Peer {
    connection: Sender<Cmd>,
    default_timeout: Option<Duration>,
    closed: Arc<AtomicBool>,
    locals: Arc<Locals>,
}

impl Peer {
    /// The connection's own value of type `T`, made with `T::default()` the first time it
    /// is asked for: state a protocol keeps per connection (an MCP server's session, an LSP
    /// server's open documents), shared by every handler on it, dropped with the
    /// connection's last handle.
    pub fn local<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.locals.get::<T>()
    }

    /// True once the connection is closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Queues a notification with raw params without waiting for the connection's driver
    /// (so also from a notification handler, which runs on the driver); false when the
    /// connection is gone. A notification the endpoint refuses is dropped.
    pub fn notify_raw_queued(&self, method: &str, params: Option<&RawValue>) -> bool {
        let (method, params) = (method.to_owned(), params.map(ToOwned::to_owned));
        let op: Op = Box::new(move |conn, _, _| {
            let _ = conn.notify(&method, params.as_deref());
        });
        !self.is_closed() && self.connection.send(Cmd::With(op)).is_ok()
    }

    /// Calls `M` on the peer and waits for its result (`timeout`: the request's deadline,
    /// `None` for the connection's default).
    pub fn call<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
        timeout: Option<Duration>,
    ) -> Result<M::Result, Error> {
        let params = encode_params_owned(params).map_err(Error::Send)?;
        let raw = self.call_raw(M::NAME, params.as_deref(), timeout)?;
        decode_result::<M>(Ok(std::borrow::Cow::Owned(raw))).map_err(Error::Call)
    }

    /// Calls `method` with raw params on the peer and waits for the raw result.
    pub fn call_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, Error> {
        let options = RequestOptions::timeout(timeout.map_or(Timeout::Default, Timeout::After));
        let (op, rx) = crate::client::request_op(method, params, options);
        self.connection
            .send(Cmd::With(op))
            .map_err(|_| Error::Send(SendError::Closed))?;
        crate::client::wait(&rx, timeout.or(self.default_timeout))
    }

    /// Sends a notification with raw params to the peer.
    pub fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> Result<(), Error> {
        let (method, params) = (method.to_owned(), params.map(ToOwned::to_owned));
        let (tx, rx) = mpsc::channel();
        let op: Op = Box::new(move |conn, _, _| {
            let _ = tx.send(conn.notify(&method, params.as_deref()));
        });
        self.connection
            .send(Cmd::With(op))
            .map_err(|_| Error::Send(SendError::Closed))?;
        match rx.recv() {
            Ok(result) => result.map_err(Error::Send),
            Err(_) => Err(Error::Send(SendError::Closed)),
        }
    }
}

fn send_progress(connection: &Sender<Cmd>, token: &sansrpc::Id<'_>, value: &RawValue) -> bool {
    let (token, value) = (token.to_owned_id(), value.to_owned());
    let op: Op = Box::new(move |conn, _, _| {
        let _ = conn.send_progress(&token, &value);
    });
    connection.send(Cmd::With(op)).is_ok()
}

/// Reports progress from inside a request handler, to the peer of the connection the
/// request came on, with the connection's progress method and profile (LSP `$/progress
/// {token, value}`, MCP `notifications/progress {progressToken, …}`; the token is the one
/// the peer put in its request). False outside a handler or once the connection is gone.
/// The peer may extend the request's deadline on it.
pub fn report_progress(token: &sansrpc::Id<'_>, value: &RawValue) -> bool {
    CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|cx| send_progress(&cx.connection, token, value))
    })
}

/// True when the request the current thread's handler is answering was cancelled: by the
/// peer (its cancellation notification arrived), or because the connection is closing. A
/// long handler checks it now and then and returns early (typically with an error object);
/// whatever it returns is still sent if the connection is open. False outside a handler.
pub fn is_cancelled() -> bool {
    CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(RequestContext::is_cancelled)
    })
}

impl Driver {
    /// Takes items from the streams' iterators for the pulls waiting, and writes the
    /// answers. True when some stream still has more to produce right now.
    pub(super) fn produce(&mut self, now: Instant) -> bool {
        if !self.conn.wants_items() {
            return false;
        }
        let (jobs, me, closed, lent) = (&self.jobs, &self.me, &self.closed, &mut self.lent);
        let mut inline = Vec::new();
        let taken = self
            .conn
            .produce(now, ITEMS_PER_TURN, |stream, out, demand| {
                let Some(lent) = lent.get_mut(&stream) else {
                    return Produced::End;
                };
                if let Some(produced) = lent.take(out) {
                    return produced;
                }
                if lent.lent {
                    return Produced::Pending; // A worker has it: its batch will wake us.
                }
                let Some(source) = lent.source.take() else {
                    return Produced::Pending;
                };
                lent.lent = true;
                let (me, closed) = (me.clone(), Arc::clone(closed));
                let job: Job = Box::new(move || {
                    if !closed.load(Ordering::Relaxed) {
                        work_stream(source, demand, |batch| {
                            me.send(Cmd::Produced { stream, batch }).is_ok()
                                && !closed.load(Ordering::Relaxed)
                        });
                    }
                });
                match jobs {
                    Some(jobs) => {
                        if let Err(mpsc::SendError(job)) = jobs.send(job) {
                            inline.push(job); // The pool is gone: run it here.
                        }
                    }
                    None => inline.push(job),
                }
                Produced::Pending
            });
        for job in inline {
            job();
        }
        self.pump(now);
        taken > 0 && self.conn.wants_items()
    }

    /// Routes every queued event; false when there was none.
    pub(super) fn events(&mut self) -> bool {
        let mut any = false;
        // Batch sizes for the router's layers (metrics), before the batch's calls run.
        self.router.observe_batches(&mut self.conn);
        let now = self.now();
        // Checked before a stream method's handler runs, so a flood of opens builds nothing.
        let mut room = self.conn.stream_room();
        let config = self.conn.config();
        let config = (config.profile, config.default_timeout);
        while let Some(event) = self.conn.poll_event() {
            any = true;
            match event {
                Event::Request { handle, request } => {
                    if !self.router.is_stream_method(&request.method) {
                        let request = request.into_owned();
                        self.request(handle, request);
                        continue;
                    }
                    if room == 0 {
                        self.conn.refuse_stream(handle);
                        continue;
                    }
                    // Built here: the handler only makes the iterator; a worker runs it. The
                    // handler sees its context; the flag is set when the stream ends.
                    let flag = Arc::new(AtomicBool::new(false));
                    let cx = context(
                        &request,
                        Arc::clone(&flag),
                        &config,
                        (&self.me, &self.closed, &self.locals),
                    );
                    let params = request.params.as_deref();
                    let open =
                        || with_context(cx, || self.router.open_stream(&request.method, params));
                    let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(open))
                        .unwrap_or_else(|_| Some(Err(ErrorObject::internal_error())));
                    match opened {
                        Some(Ok(source)) => {
                            if let Some(stream) = self.conn.open_stream(handle, now) {
                                self.lent.insert(stream, Lent::new(source, flag));
                                room = room.saturating_sub(1);
                            }
                        }
                        Some(Err(e)) => self.conn.respond(handle, Err(&e)),
                        None => {}
                    }
                }
                // Here, in arrival order: its effects are visible to every request that
                // arrived after it (LSP's didChange before completion).
                Event::Notification(n) => {
                    self.router.notify(&n);
                    self.conn.notification_done();
                }
                Event::Answer {
                    token,
                    index,
                    result,
                    ..
                } => {
                    let answer = match result {
                        Ok(raw) => Ok(raw.into_owned()),
                        Err(e) => Err(Error::Call(CallError::Rpc(e.into_owned()))),
                    };
                    self.waiters.answer(token, index, answer);
                }
                Event::Ended {
                    token,
                    index,
                    reason,
                    ..
                } => {
                    let answer = Err(Error::Call(CallError::Ended(reason)));
                    self.waiters.answer(token, index, answer);
                }
                Event::Cancel { handle } => {
                    if let Some(flag) = self.inflight.get(&handle) {
                        flag.store(true, Ordering::Relaxed);
                    }
                }
                Event::StreamClosed { stream } => {
                    self.lent.remove(&stream);
                    room += 1;
                }
                Event::Closed { .. } => {
                    self.lent.clear();
                    self.closed.store(true, Ordering::Relaxed);
                }
                Event::CheckProcess { pid } if !sansrpc::runtime::process_alive(pid) => {
                    self.conn.handle_client_gone(now);
                }
                Event::FrameError(e @ FrameError::WrongFraming { .. }) => {
                    tracing::warn!("sansrpc: {e}");
                }
                // Other framing faults, refused frames, stray responses: the connection
                // answered whatever needed an answer, and a caller has nothing to do.
                _ => {}
            }
        }
        any
    }

    /// Hands a request to the handler pool, or answers it here when there is none.
    fn request(&mut self, handle: IncomingId, request: Request<'static>) {
        let mut reply = Reply::default();
        let Some(jobs) = &self.jobs else {
            self.router.dispatch(&request, &mut reply);
            reply.answer(&mut self.conn, handle);
            return;
        };
        let flag = Arc::new(AtomicBool::new(false));
        self.inflight.insert(handle, Arc::clone(&flag));
        let config = self.conn.config();
        let config = (config.profile, config.default_timeout);
        let cx = context(
            &request,
            flag,
            &config,
            (&self.me, &self.closed, &self.locals),
        );
        let (router, closed, me) = (
            Arc::clone(&self.router),
            Arc::clone(&self.closed),
            self.me.clone(),
        );
        let job: Job = Box::new(move || {
            if closed.load(Ordering::Relaxed) {
                return;
            }
            with_context(cx, || router.dispatch(&request, &mut reply));
            let _ = me.send(Cmd::Respond { id: handle, reply });
        });
        if jobs.send(job).is_err() {
            // The pool is gone: a server shutting down.
            self.inflight.remove(&handle);
            self.conn
                .respond(handle, Err(&ErrorObject::internal_error()));
        }
    }
}
