//! What the driver does with the connection's events: the peer's requests go to the
//! handler pool (with a cancellation flag and a way to report progress), notifications run
//! here in arrival order, answers go to the callers waiting, stream pulls are fed from
//! iterators running on the pool.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

use sansrpc::client::{PeerRequest, RawResult};
use sansrpc::codec::FrameError;
use sansrpc::connection::stream::Produced;
use sansrpc::connection::Event;
use sansrpc::connection::{IncomingId, Profile};
use sansrpc::method::CallError;
use sansrpc::router::{Call, Reply, Router};
use sansrpc::{ErrorObject, Id, Instant, RawValue, Request};
use sansrpc_runtime::calls::Answer;
use sansrpc_runtime::subscriptions::{PendingSubscription, Subscribe};

use super::{Cmd, Driver};
use crate::client::{Client, Link};
use crate::pool::{Job, Pool};
use crate::worker::{work_stream, Lent};

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
    /// The connection whose driver thread this is (set once, when the thread starts).
    static DRIVING: RefCell<Option<Arc<Link>>> = const { RefCell::new(None) };
}

/// Marks this thread as `link`'s driver, for [`NotificationContext::current`].
pub(crate) fn driving(link: &Arc<Link>) {
    DRIVING.with(|d| *d.borrow_mut() = Some(Arc::clone(link)));
}

/// The connection a notification came on: from [`NotificationContext::current`] inside a
/// notification handler. Notification handlers run on the connection's driver thread (see
/// the crate's docs), so what they send the peer is queued
/// ([`Client::notify_raw_queued`]) rather than waited for, and they cannot wait for an
/// answer from the peer: a call from there would wait for the very thread that reads it.
/// The futures adapter's `NotificationContext` has the same [`peer`](Self::peer).
#[derive(Clone, Debug)]
pub struct NotificationContext {
    peer: Client,
}

impl NotificationContext {
    /// The context of the notifications this thread handles: `Some` on a connection's
    /// driver thread (inside a notification handler, or a stream method's handler while it
    /// makes its iterator), `None` elsewhere (a request handler has
    /// [`RequestContext::current`]).
    pub fn current() -> Option<NotificationContext> {
        DRIVING.with(|d| {
            let link = d.borrow();
            let link = link.as_ref()?;
            Some(NotificationContext {
                peer: Client::peer(Arc::clone(link)),
            })
        })
    }

    /// A client on the connection: per-connection values ([`Client::local`]) and
    /// notifications to the peer with [`Client::notify_raw_queued`] (it does not keep the
    /// connection open).
    pub fn peer(&self) -> &Client {
        &self.peer
    }
}

/// What a request's context knows of its connection, the same for every request of a turn.
struct Conn {
    profile: Profile,
    /// The client handles `window/workDoneProgress/create`.
    creates: bool,
    link: Arc<Link>,
}

/// The context a handler of `request` sees, cancelled through `flag`.
fn context(request: &Request<'_>, flag: Arc<AtomicBool>, conn: &Conn) -> RequestContext {
    let params = request.params.as_deref();
    RequestContext {
        request: PeerRequest::new(&request.id, params, conn.profile, conn.creates),
        cancelled: flag,
        peer: Client::peer(Arc::clone(&conn.link)),
    }
}

/// Runs `f` with `cx` as this thread's [`RequestContext::current`].
fn with_context<R>(cx: RequestContext, f: impl FnOnce() -> R) -> R {
    let before = CURRENT.with(|c| c.borrow_mut().replace(cx));
    let result = f();
    CURRENT.with(|c| *c.borrow_mut() = before);
    result
}

/// The request a handler answers, and the connection it came on: from
/// [`RequestContext::current`] inside a handler run on the pool, and inside a stream
/// method's handler while it makes its iterator (keep a clone in the iterator:
/// [`is_cancelled`](RequestContext::is_cancelled) turns true once the stream ends or the
/// peer cancels it). The futures adapter's `RequestContext` has the same methods, async
/// where these wait (docs/client.md), and `cancelled()`, a future, as here
/// ([`cancelled`](RequestContext::cancelled); a blocking handler rather looks at
/// [`is_cancelled`](RequestContext::is_cancelled) now and then); it also has `http()` (no
/// HTTP server runs on this adapter).
///
/// - [`id`](PeerRequest::id): the request's id as the peer sent it;
/// - [`peer`](RequestContext::peer): a [`Client`] on the same connection, to call and
///   notify the peer from inside the handler (an LSP server asking its client for
///   `workspace/configuration`); a call blocks this worker thread only;
/// - [`is_cancelled`](RequestContext::is_cancelled): the peer cancelled the request (or
///   the connection's shutdown grace ran out). A long handler looks now and then and
///   returns early (typically with an error object); what it returns is still sent if the
///   connection is open;
/// - [`report_progress`](RequestContext::report_progress): progress on the token the peer
///   put in the request (LSP `workDoneToken`, MCP `_meta.progressToken`), in the
///   connection's profile.
///
/// It derefs to the core's [`PeerRequest`]: [`id`](PeerRequest::id),
/// [`progress_token`](PeerRequest::progress_token) and
/// [`partial_result_token`](PeerRequest::partial_result_token).
#[derive(Clone, Debug)]
pub struct RequestContext {
    request: PeerRequest,
    cancelled: Arc<AtomicBool>,
    peer: Client,
}

impl std::ops::Deref for RequestContext {
    type Target = PeerRequest;

    fn deref(&self) -> &PeerRequest {
        &self.request
    }
}

impl RequestContext {
    /// The context of the request this thread's handler answers; `None` outside one.
    pub fn current() -> Option<RequestContext> {
        CURRENT.with(|c| c.borrow().clone())
    }

    /// A client on the connection the request came on: calls and notifications to the
    /// peer (it does not keep the connection open).
    pub fn peer(&self) -> &Client {
        &self.peer
    }

    /// True once the peer cancelled the request (or the shutdown grace ran out).
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// A future ready once [`is_cancelled`](Self::is_cancelled) turns true, for a handler
    /// that runs a future to completion on its worker (`pollster::block_on`, say) and
    /// races its work against the peer's cancellation. The flag has no waker: while the
    /// future waits, a watcher thread looks at it every 10 ms, and ends with the future.
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            flag: Arc::clone(&self.cancelled),
            waker: None,
        }
    }

    /// Reports progress to the peer on the request's token, with the connection's progress
    /// method (LSP `$/progress {token, value}`; MCP `notifications/progress
    /// {progressToken, …value's members}`). `Ok(false)` when the request carried no token.
    /// Queued without waiting for the driver (so also from a stream method's handler,
    /// which runs on the driver thread); a refusal is dropped.
    pub fn report_progress(&self, value: &RawValue) -> Result<bool, CallError> {
        self.queue_on(self.progress_token(), value)
    }

    /// Progress on `token`, when there is one, queued.
    fn queue_on(&self, token: Option<&Id<'_>>, value: &RawValue) -> Result<bool, CallError> {
        let Some(token) = token else { return Ok(false) };
        self.peer.queue_progress(token, value).map(|()| true)
    }

    /// Sends part of the result ahead of the answer (LSP partial results:
    /// `$/progress {token: partialResultToken, value}`); the final answer then carries what
    /// was not sent this way. `Ok(false)` when the request carried no `partialResultToken`.
    pub fn report_partial(&self, value: &RawValue) -> Result<bool, CallError> {
        self.queue_on(self.partial_result_token(), value)
    }

    /// Begins work-done progress titled `title` (LSP `$/progress {token, value: {kind:
    /// "begin", title}}`) and returns its token, for the reports and the end that follow
    /// ([`Client::send_progress`]): the request's own `workDoneToken` when it has one;
    /// otherwise, when the client's `initialize` said it handles
    /// `window/workDoneProgress/create`, a new token the client is asked to create first
    /// (a call: from a handler on the pool, not from the driver thread). `Ok(None)` when
    /// neither: the client cannot show progress for this request.
    pub fn begin_work_done(&self, title: &str) -> Result<Option<Id<'static>>, CallError> {
        let Some(work) = self.work_done(title) else {
            return Ok(None);
        };
        if let Some(create) = &work.create {
            self.call_raw("window/workDoneProgress/create", Some(create))?;
        }
        self.peer.send_progress(&work.token, &work.begin)?;
        Ok(Some(work.token))
    }

    /// Calls the peer on behalf of the request (LSP's `workspace/configuration`, an MCP
    /// server's `sampling/createMessage`): [`Client::call_raw`] on [`peer`](Self::peer), as
    /// this adapter's transports have no stream per request.
    pub fn call_raw(&self, method: &str, params: Option<&RawValue>) -> RawResult {
        self.peer.call_raw(method, params)
    }

    /// Sends a notification on behalf of the request (a log message, say):
    /// [`Client::notify_raw`] on [`peer`](Self::peer).
    pub fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> Result<(), CallError> {
        self.peer.notify_raw(method, params)
    }
}

/// Ready once a request is cancelled: [`RequestContext::cancelled`].
#[derive(Debug)]
pub struct Cancelled {
    flag: Arc<AtomicBool>,
    /// Shared with the watcher thread, which holds it weakly and ends once it is gone.
    waker: Option<Arc<Mutex<Waker>>>,
}

/// How often a waiting [`Cancelled`] looks at its flag.
const CANCEL_POLL: Duration = Duration::from_millis(10);

impl Future for Cancelled {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, task: &mut TaskContext<'_>) -> Poll<()> {
        if self.flag.load(Ordering::Relaxed) {
            return Poll::Ready(());
        }
        if let Some(waker) = &self.waker {
            waker
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone_from(task.waker());
            return Poll::Pending;
        }
        let waker = Arc::new(Mutex::new(task.waker().clone()));
        let (watched, flag) = (Arc::downgrade(&waker), Arc::clone(&self.flag));
        let watch = move || loop {
            std::thread::sleep(CANCEL_POLL);
            let Some(waker) = watched.upgrade() else {
                return;
            };
            if flag.load(Ordering::Relaxed) {
                waker
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .wake_by_ref();
                return;
            }
        };
        // Without a thread to watch with, it never wakes: as if the peer never cancelled
        // (the handler still ends on its own).
        let spawned = std::thread::Builder::new()
            .name("rpc-cancel-watch".into())
            .spawn(watch);
        if spawned.is_ok() {
            self.waker = Some(waker);
        }
        Poll::Pending
    }
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
        let conn = Conn {
            profile: self.conn.config().profile,
            creates: self.conn.client_creates_progress(),
            link: Arc::clone(&self.link),
        };
        while let Some(event) = self.conn.poll_event() {
            any = true;
            match event {
                Event::Request { handle, request } => {
                    let call = Call {
                        method: &request.method,
                        params: request.params.as_deref(),
                        id: Some(&request.id),
                    };
                    if let Some((declaration, opened)) =
                        sansrpc_runtime::subscriptions::open(&self.router, &call)
                    {
                        let cx = context(&request, Arc::new(AtomicBool::new(false)), &conn);
                        match opened {
                            Ok(work) => {
                                let pending = self.served.pending(handle, declaration);
                                self.subscribe(work, pending, cx);
                            }
                            Err(e) => self.conn.respond(handle, Err(&e)),
                        }
                        continue;
                    }
                    if !self.router.is_stream_method(&request.method) {
                        let request = request.into_owned();
                        let cx = (self.jobs.is_some()).then(|| {
                            let flag = Arc::new(AtomicBool::new(false));
                            self.inflight.insert(handle, Arc::clone(&flag));
                            context(&request, flag, &conn)
                        });
                        self.request(handle, request, cx);
                        continue;
                    }
                    if room == 0 {
                        self.conn.refuse_stream(handle);
                        continue;
                    }
                    // Built here: the handler only makes the iterator; a worker runs it. The
                    // handler sees its context; the flag is set when the stream ends.
                    let flag = Arc::new(AtomicBool::new(false));
                    let cx = context(&request, Arc::clone(&flag), &conn);
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
                    // Our own subscriptions' notifications go to their inboxes.
                    let params = n.params.as_deref();
                    if !self.waiters.subs.notification(&n.method, params) {
                        self.router.notify(&n);
                    }
                    self.conn.notification_done();
                }
                // Owned, to whoever waits for it.
                event @ (Event::Answer { .. } | Event::Ended { .. }) => {
                    if let Ok(answer) = Answer::take(event) {
                        self.waiters.hand_over(&mut self.conn, answer, now);
                    }
                }
                Event::Cancel { handle } => {
                    if let Some(flag) = self.inflight.get(&handle) {
                        flag.store(true, Ordering::Relaxed);
                    } else {
                        // A subscribe not decided on yet is answered as cancelled; its
                        // handler's accept then fails.
                        self.served.cancel(&mut self.conn, handle);
                    }
                }
                Event::StreamClosed { stream } => {
                    self.lent.remove(&stream);
                    room += 1;
                }
                Event::Unsubscribed { sub } => {
                    // The handler (or the producer it gave the sink to) learns it there.
                    self.served.unsubscribed(sub);
                }
                Event::Closed { .. } => {
                    self.lent.clear();
                    self.served.clear();
                    self.waiters.subs.clear();
                    self.closed.store(true, Ordering::Relaxed);
                    self.link.closed.store(true, Ordering::Relaxed);
                }
                Event::CheckProcess { pid } if !sansrpc_runtime::process_alive(pid) => {
                    self.conn.handle_client_gone(now);
                }
                // Framing faults, refused frames, stray responses: the connection answered
                // whatever needed an answer; they are worth a log line at most.
                other => {
                    if let Event::FrameError(e @ FrameError::WrongFraming { .. }) = &other {
                        tracing::warn!("sansrpc: {e}");
                    }
                    if let Some(hook) = &self.on_event {
                        hook.call(&crate::Client::peer(Arc::clone(&self.link)), other);
                    }
                }
            }
        }
        any
    }

    /// Runs a subscription handler on the pool with its pending subscription (it accepts
    /// there, waiting for this thread to answer the id). Without a pool, or with the pool
    /// gone, the pending subscription is dropped: answered `-32603`.
    fn subscribe(&mut self, work: Subscribe, pending: PendingSubscription, cx: RequestContext) {
        let closed = Arc::clone(&self.closed);
        let job: Job = Box::new(move || {
            if closed.load(Ordering::Relaxed) {
                return;
            }
            // A panic drops the pending subscription (answered `-32603`) or the sink.
            let run = std::panic::AssertUnwindSafe(|| with_context(cx, || work(pending)));
            let _ = std::panic::catch_unwind(run);
        });
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(job);
        }
    }

    /// Hands a request to the handler pool with its context, or answers it here when there
    /// is no pool (and so no context).
    fn request(
        &mut self,
        handle: IncomingId,
        request: Request<'static>,
        cx: Option<RequestContext>,
    ) {
        let mut reply = Reply::default();
        let (Some(jobs), Some(cx)) = (&self.jobs, cx) else {
            self.router.dispatch(&request, &mut reply);
            reply.answer(&mut self.conn, handle);
            return;
        };
        let (router, closed, me) = (
            Arc::clone(&self.router),
            Arc::clone(&self.closed),
            self.me.clone(),
        );
        // A staged method's first part runs now, on this thread, in arrival order with
        // the notifications around it (they run here too); the rest on the pool.
        let staged = with_context(cx.clone(), || router.stage(&request));
        let job: Job = Box::new(move || {
            if closed.load(Ordering::Relaxed) {
                return;
            }
            with_context(cx, || match staged {
                Some(staged) => router.run_staged(staged, &mut reply),
                None => router.dispatch(&request, &mut reply),
            });
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
