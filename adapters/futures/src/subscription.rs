//! Method subscriptions in the Ethereum shape on the async driver
//! ([`sansrpc::connection::subscriptions`]): the serving side's [`PendingSubscription`] and
//! [`SubscriptionSink`], and the calling side's [`Subscription`] stream.
//!
//! Every rule is the core's: the connection answers the subscribe with the id, answers the
//! unsubscribe itself, bounds each subscription's queue with the declared
//! [`LagPolicy`](sansrpc::connection::subscriptions::LagPolicy), and routes a client's
//! notifications ([`ClientSubscriptions`]). This file moves items between the tasks and the
//! driver: a sink pushes into its queue and wakes the driver, which moves items into the
//! connection while less than [`OUTPUT_ROOM`] of output waits.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use futures::channel::oneshot;
use futures::future::{AbortHandle, Abortable};
use futures::stream::FuturesUnordered;
use futures::task::AtomicWaker;
use futures::{FutureExt, Stream, StreamExt};
use sansrpc::connection::subscriptions::{
    ClientSubscriptions, MethodSubscription, Notice, Popped, SubscriptionQueue, OUTPUT_ROOM,
};
use sansrpc::connection::{Connection, IncomingId, RequestOptions, SendError, Timeout};
use sansrpc::method::CallError;
use sansrpc::{ErrorObject, Instant, RawValue};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::{Client, Command};
use crate::router::BoxFuture;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ----- the serving side -----

/// Why a subscription is over, as its [`SubscriptionSink`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Ended {
    /// The client unsubscribed.
    Unsubscribed,
    /// The connection closed (the client went away, or the server shut down).
    Closed,
    /// The client read too slowly under
    /// [`LagPolicy::Close`](sansrpc::connection::subscriptions::LagPolicy::Close): it was
    /// told with a last notification carrying the error.
    Lagged,
    /// The server ended it ([`SubscriptionSink::close`], or every sink was dropped).
    ByServer,
}

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ended::Unsubscribed => "the client unsubscribed",
            Ended::Closed => "the connection closed",
            Ended::Lagged => "the subscriber read too slowly",
            Ended::ByServer => "the server ended the subscription",
        })
    }
}

impl std::error::Error for Ended {}

/// The subscribe request could not be accepted: it was answered already (cancelled by the
/// peer, or the connection closed), or the connection answered it with an error of its
/// own (too many subscriptions, `-32002`; a transport that cannot push, such as plain
/// HTTP, `-32601`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAccepted;

impl fmt::Display for NotAccepted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the subscription was not accepted (answered with an error, or gone)")
    }
}

impl std::error::Error for NotAccepted {}

/// What a pending subscription's handler decided, for the driver.
enum Decision {
    Accept(oneshot::Sender<Option<Arc<SubShared>>>),
    Reject(ErrorObject<'static>),
    /// Dropped undecided: answered `-32603`.
    Dropped,
}

/// What the tasks of one connection share with its driver.
#[derive(Default)]
pub(crate) struct Hub {
    waker: AtomicWaker,
    /// Decisions on subscribe requests, by their handle.
    decisions: Mutex<Vec<(IncomingId, MethodSubscription, Decision)>>,
    /// Subscriptions with something for the driver (items, a close, the last sink gone).
    ready: Mutex<Vec<u64>>,
    /// Set after a push to `decisions` or `ready`: the driver's turn of a connection with
    /// nothing handed over costs one atomic swap instead of two locks.
    pending: AtomicBool,
}

thread_local! {
    /// The hub whose driver is polling its handlers on this thread (its address), if any.
    static POLLING: Cell<usize> = const { Cell::new(0) };
}

impl Hub {
    fn decide(&self, handle: IncomingId, declaration: MethodSubscription, decision: Decision) {
        lock(&self.decisions).push((handle, declaration, decision));
        self.notify();
    }

    /// Tells the driver there is something handed over. A handler that sends from inside
    /// the driver's own poll of it needs no wake: the driver takes what was handed over
    /// right after (a wake there would cost the connection a whole extra turn per item).
    fn notify(&self) {
        self.pending.store(true, Ordering::Release);
        if POLLING.with(Cell::get) != self as *const Hub as usize {
            self.waker.wake();
        }
    }
}

struct SubState {
    queue: SubscriptionQueue,
    ended: Option<Ended>,
    /// The server asked to end it, with this error (after what is queued).
    close: Option<Option<ErrorObject<'static>>>,
    sinks: usize,
    /// In the hub's ready list (or the driver's backlog).
    scheduled: bool,
    wakers: Vec<Waker>,
}

/// One accepted subscription, shared by its sinks and the driver.
struct SubShared {
    sub: u64,
    state: Mutex<SubState>,
    hub: Arc<Hub>,
}

impl SubShared {
    /// Tells the driver there is something to do for this subscription.
    fn schedule(&self, state: &mut SubState) {
        if !state.scheduled {
            state.scheduled = true;
            lock(&self.hub.ready).push(self.sub);
            self.hub.notify();
        }
    }

    /// Over for the sinks: they learn why (the first reason stays).
    fn over(state: &mut SubState, why: Ended) {
        state.ended.get_or_insert(why);
        for waker in state.wakers.drain(..) {
            waker.wake();
        }
    }

    /// Over for the driver too: nothing queued is sent any more.
    fn end(&self, state: &mut SubState, why: Ended) {
        state.queue.close();
        SubShared::over(state, why);
    }
}

/// A subscribe request its handler has not decided on yet: [`accept`](Self::accept) it
/// (the client gets its subscription id, and the handler a [`SubscriptionSink`]) or
/// [`reject`](Self::reject) it with an error. Dropped undecided, the request is answered
/// `-32603`.
pub struct PendingSubscription {
    handle: IncomingId,
    declaration: MethodSubscription,
    hub: Arc<Hub>,
    decided: bool,
}

impl fmt::Debug for PendingSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingSubscription")
            .field("subscribe", &self.declaration.subscribe)
            .finish()
    }
}

impl PendingSubscription {
    /// The declaration the subscribe request came under.
    pub fn declaration(&self) -> &MethodSubscription {
        &self.declaration
    }

    /// Accepts: the connection answers the request with a new subscription id, and the
    /// sink sends the items. [`NotAccepted`] when the request was answered meanwhile or the
    /// connection refused it (its answer then says why).
    pub async fn accept(mut self) -> Result<SubscriptionSink, NotAccepted> {
        self.decided = true;
        let (tx, rx) = oneshot::channel();
        let declaration = self.declaration.clone();
        self.hub
            .decide(self.handle, declaration, Decision::Accept(tx));
        match rx.await {
            Ok(Some(shared)) => Ok(SubscriptionSink { shared }),
            _ => Err(NotAccepted),
        }
    }

    /// Rejects: the request is answered with `error`.
    pub fn reject(mut self, error: ErrorObject<'static>) {
        self.decided = true;
        let declaration = self.declaration.clone();
        self.hub
            .decide(self.handle, declaration, Decision::Reject(error));
    }
}

impl Drop for PendingSubscription {
    fn drop(&mut self) {
        if !self.decided {
            let declaration = self.declaration.clone();
            self.hub.decide(self.handle, declaration, Decision::Dropped);
        }
    }
}

/// The serving side of one accepted subscription: sends its items, and knows when it is
/// over. Cheap to clone; the subscription ends (without an error) once every clone is
/// dropped and what was sent has gone out.
///
/// Sending never waits: each item goes into the subscription's queue, bounded by the
/// declaration's [`capacity`](MethodSubscription::capacity) and
/// [`max_bytes`](MethodSubscription::max_bytes), and the driver moves items into the
/// connection while its output has room. When a subscriber reads slower than items come,
/// the declaration's [`LagPolicy`](sansrpc::connection::subscriptions::LagPolicy) decides:
/// the oldest are dropped and the subscriber told how many, or the subscription ends with
/// an error (then [`send`](Self::send) fails with [`Ended::Lagged`]). A subscriber that
/// never reads costs the server that bound and no more.
///
/// A handler runs in the connection's driver, which moves items out between its polls: a
/// handler that sends more items at once than the queue holds (a backlog after a pause)
/// yields between them (`tokio::task::yield_now().await`), or they are dropped like a slow
/// reader's.
pub struct SubscriptionSink {
    shared: Arc<SubShared>,
}

impl fmt::Debug for SubscriptionSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubscriptionSink")
            .field("sub", &self.shared.sub)
            .field("ended", &lock(&self.shared.state).ended)
            .finish()
    }
}

impl Clone for SubscriptionSink {
    fn clone(&self) -> Self {
        lock(&self.shared.state).sinks += 1;
        SubscriptionSink {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Drop for SubscriptionSink {
    fn drop(&mut self) {
        let mut state = lock(&self.shared.state);
        state.sinks -= 1;
        if state.sinks == 0 && state.ended.is_none() {
            self.shared.schedule(&mut state);
        }
    }
}

impl SubscriptionSink {
    /// The subscription's number on its connection (its id, as the declaration writes it).
    pub fn id(&self) -> u64 {
        self.shared.sub
    }

    /// Queues `item` for the subscriber. The error says why the subscription is over.
    pub fn send<T: Serialize + ?Sized>(&self, item: &T) -> Result<(), Ended> {
        match RawValue::from_serialize(item).ok() {
            Some(item) => self.send_raw(item),
            // A value that does not serialize is the server's own bug: it ends the
            // subscription rather than sending the client something else.
            None => {
                self.close(Some(ErrorObject::internal_error()));
                Err(Ended::ByServer)
            }
        }
    }

    /// Queues an item already in JSON.
    pub fn send_raw(&self, item: Box<RawValue>) -> Result<(), Ended> {
        use sansrpc::connection::subscriptions::Pushed;
        let mut state = lock(&self.shared.state);
        if let Some(why) = state.ended {
            return Err(why);
        }
        if state.close.is_some() {
            return Err(Ended::ByServer);
        }
        let pushed = state.queue.push(item);
        // The overflow, too, is for the driver to send (after what is queued).
        self.shared.schedule(&mut state);
        match pushed {
            Pushed::Queued | Pushed::Lagged { .. } => Ok(()),
            // Over for the sinks now; the driver still sends what was queued, then the
            // error.
            Pushed::Overflowed => {
                SubShared::over(&mut state, Ended::Lagged);
                Err(Ended::Lagged)
            }
            _ => Err(state.ended.unwrap_or(Ended::Closed)),
        }
    }

    /// True once the subscription is over.
    pub fn is_closed(&self) -> bool {
        lock(&self.shared.state).ended.is_some()
    }

    /// Completes when the subscription is over (the client unsubscribed or went away, the
    /// server ended it, it overflowed), with why: race it against the producer.
    pub fn closed(&self) -> impl Future<Output = Ended> + Send + 'static {
        let shared = Arc::clone(&self.shared);
        futures::future::poll_fn(move |cx| {
            let mut state = lock(&shared.state);
            if let Some(why) = state.ended {
                return Poll::Ready(why);
            }
            if !state.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                state.wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
    }

    /// Ends the subscription once what is queued has gone out: with `error`, a last
    /// notification carrying it tells the subscriber why; without, it just stops (as geth
    /// and jsonrpsee do).
    pub fn close(&self, error: Option<ErrorObject<'static>>) {
        let mut state = lock(&self.shared.state);
        if state.ended.is_none() && state.close.is_none() {
            state.close = Some(error);
            self.shared.schedule(&mut state);
        }
    }
}

/// A subscription handler's work, as the router makes it for a pending subscription.
pub(crate) type Subscribe = Box<dyn FnOnce(PendingSubscription) -> BoxFuture<()> + Send>;

/// A running subscription handler: how to stop it, and its subscription once accepted.
struct Task {
    abort: AbortHandle,
    sub: Option<u64>,
}

/// The subscriptions a driver serves: their handlers, their queues, the hub they share.
#[derive(Default)]
pub(crate) struct Served {
    hub: Arc<Hub>,
    tasks: FuturesUnordered<BoxFuture<IncomingId>>,
    by_handle: BTreeMap<IncomingId, Task>,
    active: BTreeMap<u64, (Arc<SubShared>, IncomingId)>,
    /// Subscriptions with items left that the output had no room for.
    backlog: Vec<u64>,
}

impl Served {
    /// Starts the handler of a subscribe request.
    pub(crate) fn start(
        &mut self,
        handle: IncomingId,
        declaration: &MethodSubscription,
        work: Subscribe,
    ) {
        let pending = PendingSubscription {
            handle,
            declaration: declaration.clone(),
            hub: Arc::clone(&self.hub),
            decided: false,
        };
        let work = std::panic::AssertUnwindSafe(work(pending))
            .catch_unwind()
            .map(|_| ());
        let (abort, registration) = AbortHandle::new_pair();
        let task = Abortable::new(work, registration).map(move |_| handle);
        self.tasks.push(task.boxed());
        self.by_handle.insert(handle, Task { abort, sub: None });
    }

    /// The peer cancelled request `handle`: true when it was a subscribe still undecided
    /// (its handler is dropped and the request answered as cancelled).
    pub(crate) fn cancel(&mut self, conn: &mut Connection, handle: IncomingId) -> bool {
        match self.by_handle.get(&handle) {
            Some(task) if task.sub.is_none() => {
                task.abort.abort();
                conn.respond_cancelled(handle);
                true
            }
            _ => false,
        }
    }

    /// The client unsubscribed `sub`.
    pub(crate) fn unsubscribed(&mut self, sub: u64) {
        self.end(sub, Ended::Unsubscribed);
    }

    /// Ends `sub` on our side: its sinks learn why, its handler is dropped.
    fn end(&mut self, sub: u64, why: Ended) {
        let Some((shared, handle)) = self.active.remove(&sub) else {
            return;
        };
        shared.end(&mut lock(&shared.state), why);
        if let Some(task) = self.by_handle.remove(&handle) {
            task.abort.abort();
        }
    }

    /// The connection closed: every subscription is over, every handler dropped.
    pub(crate) fn clear(&mut self) {
        for sub in self.active.keys().copied().collect::<Vec<_>>() {
            self.end(sub, Ended::Closed);
        }
        for (_, task) in std::mem::take(&mut self.by_handle) {
            task.abort.abort();
        }
        self.tasks.clear();
        self.backlog.clear();
        // Accepts waiting for an answer fail (their senders drop).
        lock(&self.hub.decisions).clear();
    }

    /// Runs the handlers, takes their decisions, and moves queued items into the
    /// connection while its output has room. True when anything moved.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>, conn: &mut Connection) -> bool {
        // Registered before anything is looked at, so a wake in between is not lost.
        self.hub.waker.register(cx.waker());
        // Cleared before the lists are taken: a push after this is seen on the next turn.
        let pending = self.hub.pending.swap(false, Ordering::AcqRel);
        if !pending && self.tasks.is_empty() && self.backlog.is_empty() {
            // No handler running, nothing decided or scheduled, nothing held back: what a
            // connection serving no subscription pays on each turn of its driver.
            return false;
        }
        let mut progress = false;
        let hub = Arc::as_ptr(&self.hub) as usize;
        let outer = POLLING.with(|p| p.replace(hub));
        while let Poll::Ready(Some(handle)) = self.tasks.poll_next_unpin(cx) {
            progress = true;
            // Finished: a subscription it accepted goes on with its sinks.
            self.by_handle.remove(&handle);
        }
        POLLING.with(|p| p.set(outer));
        // Taken after the handlers ran: what they handed over while polled is seen now.
        let decisions = std::mem::take(&mut *lock(&self.hub.decisions));
        for (handle, declaration, decision) in decisions {
            progress = true;
            self.decide(conn, handle, &declaration, decision);
        }
        let mut todo = std::mem::take(&mut self.backlog);
        todo.extend(std::mem::take(&mut *lock(&self.hub.ready)));
        for sub in todo {
            progress |= self.pump(conn, sub);
        }
        progress
    }

    fn decide(
        &mut self,
        conn: &mut Connection,
        handle: IncomingId,
        declaration: &MethodSubscription,
        decision: Decision,
    ) {
        match decision {
            Decision::Accept(reply) => {
                let Some(sub) = conn.accept_subscription(handle, declaration) else {
                    let _ = reply.send(None);
                    return;
                };
                let shared = Arc::new(SubShared {
                    sub,
                    state: Mutex::new(SubState {
                        queue: SubscriptionQueue::new(declaration),
                        ended: None,
                        close: None,
                        sinks: 1,
                        scheduled: false,
                        wakers: Vec::new(),
                    }),
                    hub: Arc::clone(&self.hub),
                });
                if let Some(task) = self.by_handle.get_mut(&handle) {
                    task.sub = Some(sub);
                }
                self.active.insert(sub, (Arc::clone(&shared), handle));
                if reply.send(Some(shared)).is_err() {
                    // The handler is gone: nobody will send anything.
                    conn.end_subscription(sub, None);
                    self.end(sub, Ended::ByServer);
                }
            }
            Decision::Reject(error) => conn.respond(handle, Err(&error)),
            Decision::Dropped => {
                let error = ErrorObject::fixed(
                    sansrpc::error::code::INTERNAL_ERROR,
                    "Internal error: the subscription was neither accepted nor rejected",
                );
                conn.respond(handle, Err(&error));
            }
        }
    }

    /// Moves `sub`'s queued items into the connection while its output has room; ends it
    /// when the server asked to, or its last sink is gone, once its queue is empty.
    fn pump(&mut self, conn: &mut Connection, sub: u64) -> bool {
        let Some((shared, _)) = self.active.get(&sub) else {
            return false;
        };
        let shared = Arc::clone(shared);
        let mut state = lock(&shared.state);
        let mut progress = false;
        let mut ended = None;
        loop {
            if conn.buffered_output() >= OUTPUT_ROOM {
                // Left scheduled: tried again once the output has drained.
                self.backlog.push(sub);
                return progress;
            }
            let Some(popped) = state.queue.pop() else {
                break;
            };
            let overflowed = matches!(popped, Popped::Overflowed);
            match conn.send_popped(sub, &popped) {
                Ok(()) if overflowed => {
                    ended = Some(Ended::Lagged);
                    break;
                }
                Ok(()) => progress = true,
                Err(SendError::OutputFull) => {
                    state.queue.restore(popped);
                    self.backlog.push(sub);
                    return progress;
                }
                Err(_) => {
                    ended = Some(Ended::Closed);
                    break;
                }
            }
        }
        state.scheduled = false;
        if ended.is_none() && (state.close.is_some() || state.sinks == 0) {
            let error = state.close.take().flatten();
            conn.end_subscription(sub, error.as_ref());
            ended = Some(Ended::ByServer);
        }
        drop(state);
        if let Some(why) = ended {
            self.end(sub, why);
            progress = true;
        }
        progress
    }
}

impl Drop for Served {
    /// A driver dropped without closing (its task aborted): the sinks learn it too.
    fn drop(&mut self) {
        self.clear();
    }
}

// ----- the calling side -----

/// What a [`Subscription`] yields besides items.
#[derive(Debug)]
#[non_exhaustive]
pub enum SubscriptionError {
    /// This many items were missed: the server dropped them for a slow reader (it said so,
    /// [`LagPolicy::DropOldest`](sansrpc::connection::subscriptions::LagPolicy::DropOldest)),
    /// or this stream did, holding at most the declaration's capacity unread. The stream
    /// goes on.
    Lagged(u64),
    /// An item did not decode as the stream's type. The stream goes on.
    Decode(serde_json::Error),
    /// The server ended the subscription with this error (a slow reader under
    /// [`LagPolicy::Close`](sansrpc::connection::subscriptions::LagPolicy::Close), say).
    /// The stream ends after it.
    Ended(ErrorObject<'static>),
}

impl fmt::Display for SubscriptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubscriptionError::Lagged(n) => write!(f, "{n} items missed (the reader lagged)"),
            SubscriptionError::Decode(e) => write!(f, "an item did not decode: {e}"),
            SubscriptionError::Ended(e) => write!(f, "the server ended the subscription: {e}"),
        }
    }
}

impl std::error::Error for SubscriptionError {}

/// What the driver hands a subscription's stream.
pub(crate) struct Inbox {
    state: Mutex<InboxState>,
}

struct InboxState {
    notices: VecDeque<Notice>,
    capacity: usize,
    /// Items this side dropped, unread, to keep within `capacity`.
    dropped: u64,
    ended: bool,
    waker: Option<Waker>,
}

impl fmt::Debug for Inbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbox")
            .field("unread", &lock(&self.state).notices.len())
            .finish()
    }
}

impl Inbox {
    fn new(capacity: usize) -> Arc<Inbox> {
        Arc::new(Inbox {
            state: Mutex::new(InboxState {
                notices: VecDeque::new(),
                capacity: capacity.max(1),
                dropped: 0,
                ended: false,
                waker: None,
            }),
        })
    }

    fn deliver(&self, notice: Notice) {
        let mut state = lock(&self.state);
        if state.ended {
            return;
        }
        let ends = matches!(notice, Notice::Ended(_));
        if state.notices.len() >= state.capacity && !ends {
            match state.notices.pop_front() {
                Some(Notice::Item(_)) => state.dropped += 1,
                Some(Notice::Lagged(n)) => state.dropped += n,
                _ => {}
            }
        }
        state.notices.push_back(notice);
        state.ended |= ends;
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }

    fn end(&self) {
        let mut state = lock(&self.state);
        state.ended = true;
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }
}

/// A client's subscriptions, kept by its driver: the core's routes, and each one's inbox.
#[derive(Default)]
pub(crate) struct Subscribed {
    routes: ClientSubscriptions,
    inboxes: BTreeMap<u64, Arc<Inbox>>,
    /// Subscribe calls whose caller left before the answer: ended once it comes.
    abandoned: std::collections::BTreeSet<u64>,
    /// Keys of our own unsubscribe calls for those (nobody waits for their answers).
    next_unsubscribe: u64,
}

impl Subscribed {
    /// Sends a subscribe call (the errors of [`ClientSubscriptions::subscribe`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn subscribe(
        &mut self,
        conn: &mut Connection,
        key: u64,
        declaration: &MethodSubscription,
        params: Option<&RawValue>,
        timeout: Timeout,
        inbox: Arc<Inbox>,
        now: Instant,
    ) -> Result<(), SendError> {
        let options = RequestOptions::timeout(timeout);
        self.routes
            .subscribe(conn, key, declaration, params, options, now)?;
        self.inboxes.insert(key, inbox);
        Ok(())
    }

    /// The answer of call `key`, before its caller gets it: a subscribe's id is bound now,
    /// before any later notification is read.
    /// An answer that is not an id becomes a [`CallError::Decode`]. A subscription whose
    /// caller left is unsubscribed at once.
    pub(crate) fn answer(
        &mut self,
        conn: &mut Connection,
        key: u64,
        result: &mut Result<Box<RawValue>, CallError>,
        now: Instant,
    ) {
        if !self.routes.is_pending(key) {
            return;
        }
        let bound = match result {
            Ok(id) => self.routes.answered(key, id),
            Err(_) => false,
        };
        if self.abandoned.remove(&key) {
            self.unsubscribe_now(conn, key, now);
            return;
        }
        if !bound {
            self.forget(key);
            if result.is_ok() {
                let e = <serde_json::Error as serde::de::Error>::custom(
                    "the subscribe answer is not a subscription id",
                );
                *result = Err(CallError::Decode(e));
            }
        }
    }

    /// The caller of subscribe call `key` left before its answer: true when it was one
    /// still waiting (its answer is awaited, and what it made ended).
    /// When the answer came already (the caller left before it took it), the subscription
    /// is ended now.
    pub(crate) fn abandon(&mut self, conn: &mut Connection, key: u64, now: Instant) -> bool {
        if self.routes.is_pending(key) {
            self.abandoned.insert(key);
            if let Some(inbox) = self.inboxes.remove(&key) {
                inbox.end();
            }
            return true;
        }
        if self.routes.id_of(key).is_none() {
            return false;
        }
        self.unsubscribe_now(conn, key, now);
        true
    }

    /// Sends the unsubscribe call of `key`'s subscription, answered to nobody, and forgets it.
    fn unsubscribe_now(&mut self, conn: &mut Connection, key: u64, now: Instant) {
        if let Some((method, params)) = self.unsubscribe_call(key) {
            // Keys from the top down: the clients' count up from 0.
            self.next_unsubscribe += 1;
            let token = u64::MAX - self.next_unsubscribe;
            let options = RequestOptions::timeout(Timeout::Default);
            let _ = conn.call(token, method, Some(&params), options, now);
        }
        self.forget(key);
    }

    /// Our subscription `key` is over on this side (its stream dropped, or unsubscribed).
    pub(crate) fn forget(&mut self, key: u64) {
        self.routes.forget(key);
        if let Some(inbox) = self.inboxes.remove(&key) {
            inbox.end();
        }
    }

    /// The unsubscribe call of `key`'s subscription: its method and params.
    pub(crate) fn unsubscribe_call(&self, key: u64) -> Option<(&'static str, Box<RawValue>)> {
        let id = self.routes.id_of(key)?;
        let method = self.routes.declaration_of(key)?.unsubscribe;
        let params = RawValue::from_string(format!("[{id}]")).ok()?;
        Some((method, params))
    }

    /// A notification: true when it was one of our subscriptions' (handed to its stream).
    pub(crate) fn notification(&mut self, method: &str, params: Option<&RawValue>) -> bool {
        if !self.routes.is_notification(method) {
            return false;
        }
        let Some((key, notice)) = self.routes.read(method, params) else {
            return false;
        };
        let ends = matches!(notice, Notice::Ended(_));
        if let Some(inbox) = self.inboxes.get(&key) {
            inbox.deliver(notice);
        }
        if ends {
            self.inboxes.remove(&key);
        }
        true
    }

    /// The connection is over (or its driver dropped): every stream ends.
    pub(crate) fn clear(&mut self) {
        for (_, inbox) in std::mem::take(&mut self.inboxes) {
            inbox.end();
        }
        self.abandoned.clear();
        self.routes = ClientSubscriptions::new();
    }
}

impl Drop for Subscribed {
    fn drop(&mut self) {
        self.clear();
    }
}

/// A subscription to the peer, read as a [`Stream`] of raw JSON items: from
/// [`Client::subscribe_raw`]. It ends when the server ends the subscription (after
/// [`SubscriptionError::Ended`] when it said why), when the connection ends, and after
/// [`unsubscribe`](Self::unsubscribe); dropping it unsubscribes.
///
/// It holds at most the declaration's [`capacity`](MethodSubscription::capacity) items
/// unread; past that the oldest are dropped and the stream yields
/// [`SubscriptionError::Lagged`], as it does when the server dropped items.
pub struct RawSubscription {
    client: Client,
    key: u64,
    id: Box<RawValue>,
    inbox: Arc<Inbox>,
    /// Unsubscribed, or the stream ended: nothing to do when dropped.
    done: bool,
}

impl fmt::Debug for RawSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawSubscription")
            .field("id", &self.id.get())
            .finish()
    }
}

impl RawSubscription {
    /// The subscription id the server gave (its JSON: `"0x1"`, `31`).
    pub fn id(&self) -> &RawValue {
        &self.id
    }

    /// Decodes each item as `T`.
    pub fn typed<T: DeserializeOwned>(self) -> Subscription<T> {
        Subscription {
            raw: self,
            _item: PhantomData,
        }
    }

    /// Unsubscribes: the server's answer (`true` when it ended the subscription). The
    /// stream is over either way.
    pub async fn unsubscribe(mut self) -> Result<bool, CallError> {
        self.done = true;
        let (reply, rx) = oneshot::channel();
        let call = self.client.next_key();
        self.client.command(Command::Unsubscribe {
            key: self.key,
            call,
            reply: Some(reply),
        });
        let answer = rx.await.unwrap_or(Err(CallError::Ended(
            sansrpc::connection::EndReason::Closed,
        )))?;
        answer.deserialize().map_err(CallError::Decode)
    }
}

impl Stream for RawSubscription {
    type Item = Result<Box<RawValue>, SubscriptionError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut state = lock(&self.inbox.state);
        let mut lagged = std::mem::take(&mut state.dropped);
        while let Some(Notice::Lagged(n)) = state.notices.front() {
            lagged += n;
            state.notices.pop_front();
        }
        if lagged > 0 {
            return Poll::Ready(Some(Err(SubscriptionError::Lagged(lagged))));
        }
        match state.notices.pop_front() {
            Some(Notice::Item(item)) => Poll::Ready(Some(Ok(item))),
            Some(Notice::Ended(e)) => Poll::Ready(Some(Err(SubscriptionError::Ended(e)))),
            Some(Notice::Lagged(_)) => unreachable!("taken above"),
            None if state.ended => {
                drop(state);
                self.done = true;
                Poll::Ready(None)
            }
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Drop for RawSubscription {
    fn drop(&mut self) {
        if !self.done {
            let call = self.client.next_key();
            self.client.command(Command::Unsubscribe {
                key: self.key,
                call,
                reply: None,
            });
        }
    }
}

/// A [`RawSubscription`] whose items decode as `T`: from [`Client::subscribe`].
pub struct Subscription<T> {
    raw: RawSubscription,
    _item: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Subscription<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.raw.fmt(f)
    }
}

impl<T> Subscription<T> {
    /// The subscription id the server gave.
    pub fn id(&self) -> &RawValue {
        self.raw.id()
    }

    /// Unsubscribes ([`RawSubscription::unsubscribe`]).
    pub async fn unsubscribe(self) -> Result<bool, CallError> {
        self.raw.unsubscribe().await
    }

    /// The raw stream.
    pub fn into_raw(self) -> RawSubscription {
        self.raw
    }
}

impl<T: DeserializeOwned> Stream for Subscription<T> {
    type Item = Result<T, SubscriptionError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.raw).poll_next(cx).map(|item| {
            item.map(|r| r.and_then(|raw| raw.deserialize().map_err(SubscriptionError::Decode)))
        })
    }
}

impl Client {
    /// Subscribes with `declaration`'s subscribe method and raw `params` (Ethereum's
    /// `["newHeads"]`): once the server answers the id, its notifications come as a
    /// [`RawSubscription`]. [`CallError::Send`] with
    /// [`SendError::NoPush`](sansrpc::connection::SendError::NoPush) over a transport that
    /// cannot carry them (plain HTTP); [`CallError::Decode`] when the answer is not an id.
    pub async fn subscribe_raw(
        &self,
        declaration: &MethodSubscription,
        params: Option<&RawValue>,
    ) -> Result<RawSubscription, CallError> {
        let key = self.next_key();
        let (reply, rx) = oneshot::channel();
        let inbox = Inbox::new(declaration.capacity);
        self.command(Command::Subscribe {
            key,
            declaration: declaration.clone(),
            params: params.map(ToOwned::to_owned),
            timeout: Timeout::Default,
            inbox: Arc::clone(&inbox),
            reply,
        });
        // Dropped before the answer: the subscribe is cancelled (and, were it answered
        // meanwhile, unsubscribed by the driver when it finds no one waiting).
        let guard = crate::client::CancelOnDrop::new(self, key);
        let answer = rx.await.unwrap_or(Err(CallError::Ended(
            sansrpc::connection::EndReason::Closed,
        )));
        guard.disarm();
        Ok(RawSubscription {
            client: self.clone(),
            key,
            id: answer?,
            inbox,
            done: false,
        })
    }

    /// [`subscribe_raw`](Self::subscribe_raw) with typed params and items:
    /// `client.subscribe::<_, Block>(&MethodSubscription::ethereum(), &("newHeads",))`.
    pub async fn subscribe<P: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        declaration: &MethodSubscription,
        params: &P,
    ) -> Result<Subscription<T>, CallError> {
        let params = sansrpc::client::encode(params)?;
        let raw = self.subscribe_raw(declaration, params.as_deref()).await?;
        Ok(raw.typed())
    }
}
