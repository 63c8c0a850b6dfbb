//! The peer's requests and notifications being handled in the driver, and the streams
//! being produced: how handlers are scheduled on an async runtime.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{AbortHandle, Abortable};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use sansrpc::codec::FrameError;
use sansrpc::connection::stream::Produced;
use sansrpc::connection::{self, CloseReason, Connection, Event, IncomingId};
use sansrpc::router::Reply;
use sansrpc::{ErrorObject, Instant, Notification, Request};
use sansrpc_runtime::calls::Answer;

use crate::builder::EventHook;
use crate::calls::Calls;
use crate::client::Client;
use crate::context::{with_current, with_origin, CancelSignal};
use crate::driver::Parts;
use crate::router::{AsyncRouter, BoxFuture, HandlerResult, Origin, Work};
use crate::stream::Producer;
use crate::subscription::Served;

thread_local! {
    /// Where a synchronous handler's answer is written before it goes into its connection,
    /// one a thread, grown to the largest answer made on it: a buffer of each connection's
    /// own was cold when its next request came (with 1,000 keep-alive connections, one
    /// read and three written cache lines a request missed the last level). Taken out for
    /// a dispatch and put back after it (a pointer each way): a dispatch nested in another
    /// on the thread finds none and makes its own.
    static REPLY: Cell<Option<Box<Reply>>> = const { Cell::new(None) };
}

/// Stream items produced per turn of the loop, so a fast stream cannot starve the rest.
const ITEMS_PER_TURN: usize = 4096;

/// What [`Server::route`] did.
pub struct Routed {
    /// Some event was handled.
    pub any: bool,
    /// The connection closed, and why.
    pub closed: Option<CloseReason>,
}

pub(crate) type Running = BoxFuture<(IncomingId, Option<HandlerResult>)>;

/// A handler's work with a panic caught as an internal error: not boxed again (its one box
/// is made when it starts running, around this and its abort registration).
pub(crate) type Guarded = futures::future::Map<
    futures::future::CatchUnwind<AssertUnwindSafe<BoxFuture<HandlerResult>>>,
    fn(std::thread::Result<HandlerResult>) -> HandlerResult,
>;

/// A panic in a handler is answered as an internal error.
fn unpanicked(result: std::thread::Result<HandlerResult>) -> HandlerResult {
    result.unwrap_or_else(|_| Err(ErrorObject::internal_error()))
}

/// `work` with a panic caught as an internal error.
#[inline]
pub(crate) fn guarded(work: BoxFuture<HandlerResult>) -> Guarded {
    let unpanicked: fn(_) -> _ = unpanicked;
    AssertUnwindSafe(work).catch_unwind().map(unpanicked)
}

/// The [`Side`](crate::Side) of a connection that serves the peer (the driver's default):
/// the peer's requests and notifications being handled on its router, and the streams and
/// subscriptions being produced.
// In this order: what the driver reads on every pass first, then what a request reads,
// then the rest (a connection among many is cold when its turn comes: each cache line
// touched is a miss). What a turn reads, up to `served`, is 152 bytes: with the driver's
// own fields before it, the driver's first four lines.
#[repr(C)]
pub struct Server {
    /// Most notifications queued ([`Builder::max_queued_notifications`](crate::Builder::max_queued_notifications),
    /// held to `u32::MAX`): beside `serving` in one word.
    pub(crate) max_queued: u32,
    /// It serves (has a router); then `peer` is some.
    pub(crate) serving: bool,
    pub(crate) notifications: VecDeque<BoxFuture<()>>,
    pub(crate) router: Arc<AsyncRouter>,
    pub(crate) max_concurrent: usize,
    /// The handlers that wait, made with the first (a set costs two allocations to make
    /// and two to drop, and most connections never have one: a synchronous handler, or one
    /// that finishes without waiting, is answered as its request is routed).
    pub(crate) running: Option<FuturesUnordered<Running>>,
    pub(crate) waiting: VecDeque<(IncomingId, Guarded, Option<CancelSignal>)>,
    pub(crate) producers: BTreeMap<u64, Producer>,
    /// The method subscriptions served.
    pub(crate) served: Served,
    pub(crate) peer: Option<Client>,
    /// How to stop each running handler: drop it, or signal its context.
    pub(crate) aborts: BTreeMap<IncomingId, (AbortHandle, Option<CancelSignal>)>,
    /// The contexts of stream handlers, set when their stream goes.
    pub(crate) stream_signals: BTreeMap<u64, CancelSignal>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("serving", &self.serving)
            .field("running", &self.running_len())
            .finish_non_exhaustive()
    }
}

impl crate::side::sealed::Side for Server {
    const SERVES: bool = true;

    fn new(parts: &mut Parts, client: &Client) -> Self {
        let router = parts.router.take();
        let router = router.and_then(|r| r.downcast::<AsyncRouter>().ok());
        let serving = router.is_some();
        Server {
            router: router.unwrap_or_default(),
            serving,
            running: None,
            aborts: BTreeMap::new(),
            waiting: VecDeque::new(),
            notifications: VecDeque::new(),
            max_concurrent: parts.max_concurrent,
            max_queued: u32::try_from(parts.max_queued).unwrap_or(u32::MAX),
            producers: BTreeMap::new(),
            stream_signals: BTreeMap::new(),
            // Handlers' contexts call the peer through it (it keeps the commands open,
            // which only matters for a connection that serves nothing).
            peer: serving.then(|| client.clone()),
            served: crate::subscription::Served::new(parts.woken.clone()),
        }
    }

    fn running(&self) -> usize {
        self.running_len()
    }

    fn is_idle(&self) -> bool {
        self.running_len() == 0
            && self.waiting.is_empty()
            && self.notifications.is_empty()
            && self.producers.is_empty()
    }

    fn serving(&self) -> bool {
        self.serving
    }

    fn takes_input(&self) -> bool {
        self.notifications.len() < self.max_queued as usize
    }

    fn waits_for_room(&self) -> bool {
        self.served.is_held_back() || !self.producers.is_empty()
    }

    fn route(
        &mut self,
        conn: &mut Connection,
        calls: &mut Calls,
        on_event: &Option<EventHook>,
        now: Instant,
    ) -> Routed {
        Server::route(self, conn, calls, on_event, now)
    }

    fn poll(&mut self, cx: &mut Context<'_>, conn: &mut Connection, now: Instant) -> Polled {
        Server::poll(self, cx, conn, now)
    }

    fn may_bypass(&self) -> bool {
        self.served.may_bypass()
    }

    fn open_bypass(&mut self, bypass: &std::sync::Arc<dyn crate::Bypass>) -> bool {
        self.served.open_bypass(bypass)
    }

    fn close_bypass(&mut self) {
        self.served.close_bypass();
    }

    fn clear(&mut self) {
        Server::clear(self);
    }
}

impl Server {
    /// The handlers that wait.
    fn running_len(&self) -> usize {
        self.running.as_ref().map_or(0, FuturesUnordered::len)
    }

    /// Starts a request's handler, or queues it behind the running ones. One with room to
    /// run is polled once at once: a handler that finishes without waiting (most do) is
    /// answered here, and never takes a place among the running ones, an abort handle or a
    /// box of its own. One that waits is polled again where it runs, with the driver's
    /// waker (this first poll's waker wakes nothing: a future polled again reads its state
    /// again, so no wake-up is lost).
    pub(crate) fn enqueue(
        &mut self,
        conn: &mut Connection,
        id: IncomingId,
        work: BoxFuture<HandlerResult>,
        cx: Option<CancelSignal>,
    ) {
        let mut work = guarded(work);
        if self.running_len() < self.max_concurrent {
            let mut first = Context::from_waker(futures::task::noop_waker_ref());
            match work.poll_unpin(&mut first) {
                Poll::Ready(outcome) => respond(conn, id, Some(outcome)),
                Poll::Pending => self.start(id, work, cx),
            }
        } else {
            self.waiting.push_back((id, work, cx));
        }
    }

    pub(crate) fn start(&mut self, id: IncomingId, work: Guarded, cx: Option<CancelSignal>) {
        let (handle, registration) = AbortHandle::new_pair();
        self.aborts.insert(id, (handle, cx));
        let running = Abortable::new(work, registration).map(move |r| (id, r.ok()));
        let set = self.running.get_or_insert_with(FuturesUnordered::new);
        set.push(running.boxed());
    }

    pub(crate) fn notify(&mut self, work: BoxFuture<()>) {
        let work = AssertUnwindSafe(work).catch_unwind().map(|_| ()).boxed();
        self.notifications.push_back(work);
    }

    pub(crate) fn clear(&mut self) {
        // Each cleared only when it holds some: clearing an empty map walks it to its end
        // all the same, at every connection's end.
        if !self.producers.is_empty() {
            self.producers.clear();
        }
        if !self.stream_signals.is_empty() {
            std::mem::take(&mut self.stream_signals)
                .values()
                .for_each(CancelSignal::set);
        }
        // A clear of the set builds it anew (two allocations).
        if let Some(running) = self.running.as_mut().filter(|r| !r.is_empty()) {
            running.clear();
        }
        if !self.aborts.is_empty() {
            self.aborts.clear();
        }
        self.waiting.clear();
        self.notifications.clear();
        self.served.clear();
    }

    /// Acts on the connection's events.
    pub(crate) fn route(
        &mut self,
        conn: &mut Connection,
        calls: &mut Calls,
        on_event: &Option<EventHook>,
        now: Instant,
    ) -> Routed {
        let mut any = false;
        let mut closed = None;
        // Batch sizes for the router's layers (metrics), before the batch's calls run.
        let router = Arc::clone(&self.router);
        router.core().observe_batches(conn);
        // Checked before a stream method's handler runs, so a flood of opens builds nothing.
        let mut room = conn.stream_room();
        let profile = conn.config().profile;
        let creates_progress = conn.client_creates_progress();
        while let Some(event) = conn.poll_event() {
            any = true;
            // Told apart first, not moved into `Answer::take` and back out: an event is
            // copied whole each time it moves (a request's: 58 instructions of `memcpy`).
            if matches!(
                event,
                connection::Event::Answer { .. } | connection::Event::Ended { .. }
            ) {
                if let Ok(answer) = Answer::take(event) {
                    calls.hand_over(conn, answer, now);
                }
                continue;
            }
            match event {
                connection::Event::Request { handle, request } => {
                    let params = request.params.as_deref();
                    let origin = Origin {
                        peer: &self.peer,
                        serving: self.serving,
                        handle,
                        id: &request.id,
                        params,
                        profile,
                        creates_progress,
                    };
                    // Nearly every request: the core router's own method, answered here at
                    // once, without the work that an async handler, a stream or a
                    // subscription needs made (and moved back out of `catch_unwind`).
                    if router.is_sync(&request.method) {
                        let reply = run_sync(router.core(), &request, &origin);
                        answer_sync(conn, handle, reply);
                        continue;
                    }
                    if room == 0 && router.is_stream(&request.method) {
                        conn.refuse_stream(handle);
                        continue;
                    }
                    // What a stream's handler sees as its context while it makes the stream.
                    let stream_signal = router
                        .is_stream(&request.method)
                        .then(CancelSignal::default);
                    let opening = stream_signal.clone().and_then(|s| origin.context(s));
                    let work = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        with_current(opening, || {
                            router.request(&request.method, params, &request.id, &origin)
                        })
                    }));
                    let work = match work {
                        Ok(Work::Sync) => {
                            let reply = run_sync(router.core(), &request, &origin);
                            answer_sync(conn, handle, reply);
                            continue;
                        }
                        Ok(work) => work,
                        Err(_) => Work::Stream(Err(ErrorObject::internal_error())),
                    };
                    match work {
                        Work::Call(work, cx) => {
                            let work = observed(&router, &request, work);
                            self.enqueue(conn, handle, work, cx)
                        }
                        Work::Stream(Ok(producer)) => {
                            if let Some(stream) = conn.open_stream(handle, now) {
                                self.producers.insert(stream, producer);
                                if let Some(signal) = stream_signal {
                                    self.stream_signals.insert(stream, signal);
                                }
                                room = room.saturating_sub(1);
                            }
                        }
                        Work::Stream(Err(e)) => conn.respond(handle, Err(&e)),
                        Work::Subscribe(declaration, work) => {
                            self.served.start(handle, &declaration, work)
                        }
                        Work::Notify(_) | Work::Sync => {}
                    }
                }
                connection::Event::Notification(n) => {
                    let params = n.params.as_deref();
                    // Our own subscriptions' notifications go to their streams.
                    if calls.subs.notification(&n.method, params) {
                        conn.notification_done();
                        continue;
                    }
                    let work = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        router.notification_work(&n.method, params, self.peer.as_ref())
                    }));
                    match work {
                        Ok(Work::Notify(work)) => self.notify(work),
                        // In order behind the async ones still queued; at once otherwise.
                        Ok(_) if self.notifications.is_empty() => {
                            router.core().notify(&n);
                            conn.notification_done();
                        }
                        Ok(_) => {
                            let n = Notification {
                                method: Cow::Owned(n.method.into_owned()),
                                params: n.params.map(|p| Cow::Owned(p.into_owned())),
                                version: n.version,
                            };
                            let router = Arc::clone(&router);
                            self.notify(async move { router.core().notify(&n) }.boxed());
                        }
                        Err(_) => conn.notification_done(),
                    }
                }
                // Taken above.
                connection::Event::Answer { .. } | connection::Event::Ended { .. } => {}
                connection::Event::Cancel { handle } => {
                    if let Some((abort, cx)) = self.aborts.get(&handle) {
                        match cx {
                            // It answers itself, as it sees fit.
                            Some(cx) => cx.set(),
                            None => abort.abort(), // Answered when its future is dropped.
                        }
                    } else if let Some(i) = self.waiting.iter().position(|w| w.0 == handle) {
                        self.waiting.remove(i);
                        conn.respond_cancelled(handle);
                    } else {
                        self.served.cancel(conn, handle);
                    }
                }
                connection::Event::Unsubscribed { sub } => self.served.unsubscribed(sub),
                connection::Event::StreamClosed { stream } => {
                    self.producers.remove(&stream);
                    if let Some(signal) = self.stream_signals.remove(&stream) {
                        signal.set();
                    }
                    room += 1;
                }
                connection::Event::Closed { reason } => {
                    closed = Some(reason);
                    self.clear();
                }
                connection::Event::CheckProcess { pid } if !sansrpc_runtime::process_alive(pid) => {
                    conn.handle_client_gone(now);
                }
                connection::Event::CheckProcess { .. } => {}
                // Only worth logging: unknown responses, errors without id, protocol and
                // framing faults, refused frames, expiries.
                other => unrouted(other, on_event),
            }
        }
        Routed { any, closed }
    }

    /// Polls request handlers (answering the finished ones), stream producers, and the
    /// notification in turn.
    pub(crate) fn poll(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Polled {
        let mut progress = false;
        // None running: nothing to poll (a handler started later is polled as it starts,
        // in the pass its start makes).
        while let Some(running) = self.running.as_mut().filter(|r| !r.is_empty()) {
            let Poll::Ready(Some((id, outcome))) = running.poll_next_unpin(cx) else {
                break;
            };
            progress = true;
            self.aborts.remove(&id);
            respond(conn, id, outcome);
        }
        while self.running_len() < self.max_concurrent {
            let Some((id, work, cx)) = self.waiting.pop_front() else {
                break;
            };
            self.start(id, work, cx);
            progress = true;
        }
        // A stream's producer is kept from its opening to its `StreamClosed`: with none kept,
        // no stream of the connection can want items (a subscriber's connection, woken once
        // per notification, does not ask).
        if !self.producers.is_empty() && conn.wants_items() {
            let producers = &mut self.producers;
            let taken = conn.produce(now, ITEMS_PER_TURN, |stream, out, _| {
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
            self.served.poll(cx, conn);
            return Polled::Again;
        }
        let moved = self.served.poll(cx, conn);
        while let Some(front) = self.notifications.front_mut() {
            match front.poll_unpin(cx) {
                Poll::Ready(()) => {
                    self.notifications.pop_front();
                    // The calls behind it may go now (LSP ordering).
                    conn.notification_done();
                    progress = true;
                }
                Poll::Pending => break,
            }
        }
        match (progress, moved) {
            (true, _) => Polled::Again,
            (false, true) => Polled::Moved,
            (false, false) => Polled::Idle,
        }
    }
}

/// What a poll of the handlers did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polled {
    /// Nothing moved.
    Idle,
    /// Only subscription items (or their decisions) moved into the connection: once they
    /// are written, the driver has nothing more to do for them unless some are held back
    /// for want of room.
    Moved,
    /// Handlers answered, started or produced, or the in-order notification moved: the
    /// driver passes again.
    Again,
}

/// Answers request `id` with its handler's outcome (`None`: it was cancelled).
pub(crate) fn respond(conn: &mut Connection, id: IncomingId, outcome: Option<HandlerResult>) {
    match outcome {
        Some(Ok(raw)) => conn.respond(id, Ok(&raw)),
        Some(Err(e)) => conn.respond(id, Err(&e)),
        None => conn.respond_cancelled(id),
    }
}

/// Runs a request's synchronous handler through the core router, with the request's
/// context made if the handler asks: the outcome in the reply this thread keeps (its buffer
/// reused from request to request), for [`answer_sync`].
#[inline]
fn run_sync(
    core: &sansrpc::router::Router,
    request: &Request<'_>,
    origin: &Origin<'_>,
) -> Box<Reply> {
    let mut reply = REPLY
        .try_with(Cell::take)
        .ok()
        .flatten()
        .unwrap_or_default();
    with_origin(origin, || core.dispatch(request, &mut reply));
    reply
}

/// Answers `handle` with what [`run_sync`] left in `reply`, and keeps the reply for the next.
#[inline]
fn answer_sync(conn: &mut Connection, handle: IncomingId, mut reply: Box<Reply>) {
    reply.answer(conn, handle);
    let _ = REPLY.try_with(|slot| slot.set(Some(reply)));
}

/// An async handler's work, reported to the core router's layers when it finishes
/// ([`Router::finished`](sansrpc::router::Router::finished)): metrics and logging layers
/// see async calls as they see sync ones. Untouched when there is no layer.
fn observed(
    router: &Arc<AsyncRouter>,
    request: &sansrpc::Request<'_>,
    work: BoxFuture<HandlerResult>,
) -> BoxFuture<HandlerResult> {
    if !router.core().has_layers() {
        return work;
    }
    let router = Arc::clone(router);
    let method = request.method.to_string();
    let params = request.params.as_deref().map(ToOwned::to_owned);
    let id = request.id.to_owned_id();
    let start = sansrpc_runtime::time::Instant::now();
    async move {
        let result = work.await;
        let outcome = result.as_ref().map(|_| ()).map_err(Clone::clone);
        let call = sansrpc::router::Call {
            method: &method,
            params: params.as_deref(),
            id: Some(&id),
        };
        router.core().finished(&call, &outcome, start.elapsed());
        result
    }
    .boxed()
}

/// An event no side acts on (an unknown response, an error without id, a protocol or
/// framing fault, a refused frame, an expiry): a framing mistake is logged, and every one
/// goes to the builder's event hook, if any.
pub(crate) fn unrouted(event: Event<'_>, on_event: &Option<EventHook>) {
    if let Event::FrameError(e @ FrameError::WrongFraming { .. }) = &event {
        tracing::warn!("sansrpc: {e}");
    }
    if let Some(hook) = on_event.as_deref() {
        hook(event);
    }
}
