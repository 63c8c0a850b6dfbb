//! Method subscriptions on a driver with threads
//! ([`connection::subscriptions`](crate::connection::subscriptions)): what every `std`
//! driver (the futures adapter's, the blocking adapter's, yours) needs beside the
//! connection machine, whatever runs its handlers.
//!
//! - The serving side: a handler gets a [`PendingSubscription`] and decides
//!   ([`accept`](PendingSubscription::accept) / [`reject`](PendingSubscription::reject));
//!   the sink it then holds ([`SubscriptionSink`]) pushes items into the subscription's
//!   queue from any thread and tells the driver ([`Hub`]), which moves them into the
//!   connection while less than [`OUTPUT_ROOM`] of its output waits ([`Served::poll`]).
//! - The calling side: [`Subscribed`] keeps a client's routes
//!   ([`ClientSubscriptions`]) and each subscription's [`Inbox`], which the caller reads as
//!   a stream ([`Inbox::poll_next`]) or an iterator ([`Inbox::next_blocking`]).
//!
//! How a driver wakes is its own: the hub calls the function it was made with
//! ([`Hub::new`]) when a sink or a decision has something for it, and inboxes and sinks
//! wake both a task's [`Waker`] and a thread waiting on them.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering};
use core::task::{Context, Poll, Waker};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::connection::subscriptions::{
    ClientSubscriptions, MethodSubscription, Notice, Popped, Pushed, SubscriptionQueue, OUTPUT_ROOM,
};
use crate::connection::{Connection, IncomingId, RequestOptions, SendError, Timeout};
use crate::error::ErrorObject;
use crate::method::CallError;
use crate::raw::RawValue;
use crate::time::Instant;

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
    /// [`LagPolicy::Close`](crate::connection::subscriptions::LagPolicy::Close): it was
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

/// Where an accepted subscription's sink goes (`None`: not accepted).
pub type AcceptReply = Box<dyn FnOnce(Option<SubscriptionSink>) + Send>;

/// What a pending subscription's handler decided, for the driver.
enum Decision {
    Accept(AcceptReply),
    Reject(ErrorObject<'static>),
    /// Dropped undecided: answered `-32603`.
    Dropped,
}

/// What the handlers and sinks of one connection share with its driver: the decisions on
/// subscribe requests, and the subscriptions with something for the driver.
pub struct Hub {
    decisions: Mutex<Vec<(IncomingId, MethodSubscription, Decision)>>,
    ready: Mutex<Vec<u64>>,
    /// Set after a push to `decisions` or `ready`: the driver's turn of a connection with
    /// nothing handed over costs one atomic swap instead of two locks.
    pending: AtomicBool,
    wake: Box<dyn Fn() + Send + Sync>,
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hub")
            .field("pending", &self.pending.load(Ordering::Relaxed))
            .finish()
    }
}

impl Hub {
    /// A hub that calls `wake` when it has something for the driver (a decision, items, a
    /// close, the last sink gone). `wake` runs on the thread of whoever handed it over.
    pub fn new(wake: impl Fn() + Send + Sync + 'static) -> Arc<Hub> {
        Arc::new(Hub {
            decisions: Mutex::new(Vec::new()),
            ready: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
            wake: Box::new(wake),
        })
    }

    fn decide(&self, handle: IncomingId, declaration: MethodSubscription, decision: Decision) {
        lock(&self.decisions).push((handle, declaration, decision));
        self.notify();
    }

    fn notify(&self) {
        self.pending.store(true, Ordering::Release);
        (self.wake)();
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
    /// Threads waiting for the end ([`SubscriptionSink::wait_closed`]).
    over: Condvar,
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
    fn over(&self, state: &mut SubState, why: Ended) {
        state.ended.get_or_insert(why);
        for waker in state.wakers.drain(..) {
            waker.wake();
        }
        self.over.notify_all();
    }

    /// Over for the driver too: nothing queued is sent any more.
    fn end(&self, state: &mut SubState, why: Ended) {
        state.queue.close();
        self.over(state, why);
    }
}

/// A subscribe request its handler has not decided on yet: accept it (the client gets its
/// subscription id, and the handler a [`SubscriptionSink`]) or [`reject`](Self::reject)
/// it with an error. Dropped undecided, the request is answered `-32603`.
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
    /// A pending subscription for the subscribe request `handle`, decided through `hub`.
    pub fn new(handle: IncomingId, declaration: MethodSubscription, hub: Arc<Hub>) -> Self {
        PendingSubscription {
            handle,
            declaration,
            hub,
            decided: false,
        }
    }

    /// The declaration the subscribe request came under.
    pub fn declaration(&self) -> &MethodSubscription {
        &self.declaration
    }

    /// Accepts, and hands the sink (or `None`, [`NotAccepted`]) to `reply` once the driver
    /// has answered the request with the id: for a driver whose handlers wait their own way
    /// (a future).
    pub fn accept_with(mut self, reply: AcceptReply) {
        self.decided = true;
        let declaration = self.declaration.clone();
        self.hub
            .decide(self.handle, declaration, Decision::Accept(reply));
    }

    /// Accepts and waits, blocking this thread, for the driver: the connection answers the
    /// request with a new subscription id, and the sink sends the items. [`NotAccepted`]
    /// when the request was answered meanwhile or the connection refused it (its answer
    /// then says why). Not from the connection's driver thread, which would wait for
    /// itself.
    pub fn accept(self) -> Result<SubscriptionSink, NotAccepted> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.accept_with(Box::new(move |sink| drop(tx.send(sink))));
        rx.recv().ok().flatten().ok_or(NotAccepted)
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
/// over. Cheap to clone, and usable from any thread; the subscription ends (without an
/// error) once every clone is dropped and what was sent has gone out.
///
/// Sending never waits: each item goes into the subscription's queue, bounded by the
/// declaration's [`capacity`](MethodSubscription::capacity) and
/// [`max_bytes`](MethodSubscription::max_bytes), and the driver moves items into the
/// connection while its output has room. When a subscriber reads slower than items come,
/// the declaration's [`LagPolicy`](crate::connection::subscriptions::LagPolicy) decides:
/// the oldest are dropped and the subscriber told how many, or the subscription ends with
/// an error (then [`send`](Self::send) fails with [`Ended::Lagged`]). A subscriber that
/// never reads costs the server that bound and no more.
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
    pub fn send<T: serde::Serialize + ?Sized>(&self, item: &T) -> Result<(), Ended> {
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
                self.shared.over(&mut state, Ended::Lagged);
                Err(Ended::Lagged)
            }
            _ => Err(state.ended.unwrap_or(Ended::Closed)),
        }
    }

    /// True once the subscription is over.
    pub fn is_closed(&self) -> bool {
        lock(&self.shared.state).ended.is_some()
    }

    /// Why the subscription is over, once it is: `task`'s waker is woken when it happens.
    pub fn poll_closed(&self, task: &mut Context<'_>) -> Poll<Ended> {
        let mut state = lock(&self.shared.state);
        if let Some(why) = state.ended {
            return Poll::Ready(why);
        }
        if !state.wakers.iter().any(|w| w.will_wake(task.waker())) {
            state.wakers.push(task.waker().clone());
        }
        Poll::Pending
    }

    /// Blocks this thread until the subscription is over (the client unsubscribed or went
    /// away, the server ended it, it overflowed), and says why.
    pub fn wait_closed(&self) -> Ended {
        let mut state = lock(&self.shared.state);
        loop {
            if let Some(why) = state.ended {
                return why;
            }
            state = self
                .shared
                .over
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
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

/// The subscriptions a driver serves on one connection: their queues and the hub they
/// share with the handlers and sinks. The driver runs the handlers its own way; this keeps
/// everything else.
pub struct Served {
    hub: Arc<Hub>,
    /// Accepted subscriptions: number → (shared state, subscribe request).
    active: BTreeMap<u64, (Arc<SubShared>, IncomingId)>,
    /// Subscribe requests accepted, → their subscription.
    accepted: BTreeMap<IncomingId, u64>,
    /// Subscribe requests handed to a handler and not decided on yet.
    undecided: BTreeSet<IncomingId>,
    /// Subscriptions with items left that the output had no room for.
    backlog: Vec<u64>,
}

impl fmt::Debug for Served {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Served")
            .field("active", &self.active.len())
            .finish()
    }
}

impl Served {
    /// Nothing served yet; `hub` is how handlers and sinks reach the driver.
    pub fn new(hub: Arc<Hub>) -> Served {
        Served {
            hub,
            active: BTreeMap::new(),
            accepted: BTreeMap::new(),
            undecided: BTreeSet::new(),
            backlog: Vec::new(),
        }
    }

    /// The hub.
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// A pending subscription for the subscribe request `handle`, for its handler.
    pub fn pending(
        &mut self,
        handle: IncomingId,
        declaration: &MethodSubscription,
    ) -> PendingSubscription {
        self.undecided.insert(handle);
        PendingSubscription::new(handle, declaration.clone(), Arc::clone(&self.hub))
    }

    /// The peer cancelled request `handle`: when it is a subscribe its handler has not
    /// decided on yet, it is answered as cancelled now (true), and the handler's decision,
    /// when it comes, does nothing (an accept fails with [`NotAccepted`]).
    pub fn cancel(&mut self, conn: &mut Connection, handle: IncomingId) -> bool {
        if !self.undecided.remove(&handle) {
            return false;
        }
        conn.respond_cancelled(handle);
        true
    }

    /// True when the subscribe request `handle` was accepted (its handler decided).
    pub fn is_accepted(&self, handle: IncomingId) -> bool {
        self.accepted.contains_key(&handle)
    }

    /// True when nothing is handed over, scheduled or held back: a driver's turn may skip
    /// [`poll`](Self::poll). Clears the hub's flag, so call `poll` when it says false.
    pub fn is_idle(&self) -> bool {
        !self.hub.pending.swap(false, Ordering::AcqRel) && self.backlog.is_empty()
    }

    /// True when some subscription's items are held back for want of room in the
    /// connection's output: [`poll`](Self::poll) again once it has drained.
    pub fn is_held_back(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// The client unsubscribed `sub`: its sinks learn it. The subscribe request it came
    /// with, whose handler is over.
    pub fn unsubscribed(&mut self, sub: u64) -> Option<IncomingId> {
        self.end(sub, Ended::Unsubscribed)
    }

    /// Ends `sub` on our side: its sinks learn why. The subscribe request it came with.
    fn end(&mut self, sub: u64, why: Ended) -> Option<IncomingId> {
        let (shared, handle) = self.active.remove(&sub)?;
        shared.end(&mut lock(&shared.state), why);
        self.accepted.remove(&handle);
        Some(handle)
    }

    /// The connection closed: every subscription is over, and decisions still to take are
    /// dropped (accepts waiting fail with [`NotAccepted`]).
    pub fn clear(&mut self) {
        for sub in self.active.keys().copied().collect::<Vec<_>>() {
            self.end(sub, Ended::Closed);
        }
        self.backlog.clear();
        self.undecided.clear();
        let decisions = core::mem::take(&mut *lock(&self.hub.decisions));
        drop(decisions);
    }

    /// Takes the handlers' decisions and moves queued items into the connection while its
    /// output has room. `over` is told the subscribe request of each subscription that
    /// ends here (its handler, if it still runs, may be dropped). True when anything moved.
    pub fn poll(&mut self, conn: &mut Connection, over: &mut dyn FnMut(IncomingId)) -> bool {
        let mut progress = false;
        let decisions = core::mem::take(&mut *lock(&self.hub.decisions));
        for (handle, declaration, decision) in decisions {
            progress = true;
            self.decide(conn, handle, &declaration, decision);
        }
        let mut todo = core::mem::take(&mut self.backlog);
        todo.extend(core::mem::take(&mut *lock(&self.hub.ready)));
        for sub in todo {
            progress |= self.pump(conn, sub, over);
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
        if !self.undecided.remove(&handle) {
            // Cancelled by the peer (answered then), or the connection closed.
            if let Decision::Accept(reply) = decision {
                reply(None);
            }
            return;
        }
        match decision {
            Decision::Accept(reply) => {
                let Some(sub) = conn.accept_subscription(handle, declaration) else {
                    reply(None);
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
                    over: Condvar::new(),
                    hub: Arc::clone(&self.hub),
                });
                self.active.insert(sub, (Arc::clone(&shared), handle));
                self.accepted.insert(handle, sub);
                // A reply whose handler is gone drops the sink: the subscription ends when
                // the driver sees it (the last sink gone).
                reply(Some(SubscriptionSink { shared }));
            }
            Decision::Reject(error) => {
                conn.respond(handle, Err(&error));
            }
            Decision::Dropped => {
                let error = ErrorObject::fixed(
                    crate::error::code::INTERNAL_ERROR,
                    "Internal error: the subscription was neither accepted nor rejected",
                );
                conn.respond(handle, Err(&error));
            }
        }
    }

    /// Moves `sub`'s queued items into the connection while its output has room; ends it
    /// when the server asked to, or its last sink is gone, once its queue is empty.
    fn pump(&mut self, conn: &mut Connection, sub: u64, over: &mut dyn FnMut(IncomingId)) -> bool {
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
            if let Some(handle) = self.end(sub, why) {
                over(handle);
            }
            progress = true;
        }
        progress
    }
}

impl Drop for Served {
    /// A driver dropped without closing: the sinks learn it too.
    fn drop(&mut self) {
        self.clear();
    }
}

// ----- the calling side -----

/// What a client's subscription yields besides items.
#[derive(Debug)]
#[non_exhaustive]
pub enum SubscriptionError {
    /// This many items were missed: the server dropped them for a slow reader (it said so,
    /// [`LagPolicy::DropOldest`](crate::connection::subscriptions::LagPolicy::DropOldest)),
    /// or the client did, holding at most the declaration's capacity unread. The
    /// subscription goes on.
    Lagged(u64),
    /// An item did not decode as the subscription's type. The subscription goes on.
    Decode(serde_json::Error),
    /// The server ended the subscription with this error (a slow reader under
    /// [`LagPolicy::Close`](crate::connection::subscriptions::LagPolicy::Close), say). The
    /// subscription ends after it.
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

/// What one subscription's reader gets next: an item, a lag, the server's error.
pub type Next = Result<Box<RawValue>, SubscriptionError>;

/// What the driver hands one client subscription's reader: its notices, bounded by the
/// declaration's capacity (past it the oldest are dropped and counted as a lag).
pub struct Inbox {
    state: Mutex<InboxState>,
    /// Threads waiting for a notice ([`Inbox::next_blocking`]).
    arrived: Condvar,
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
    /// An empty inbox holding at most `capacity` notices unread.
    pub fn new(capacity: usize) -> Arc<Inbox> {
        Arc::new(Inbox {
            state: Mutex::new(InboxState {
                notices: VecDeque::new(),
                capacity: capacity.max(1),
                dropped: 0,
                ended: false,
                waker: None,
            }),
            arrived: Condvar::new(),
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
        Inbox::wake(&mut state, &self.arrived);
    }

    /// Nothing more comes: the reader ends once it has read what is here.
    pub fn end(&self) {
        let mut state = lock(&self.state);
        state.ended = true;
        Inbox::wake(&mut state, &self.arrived);
    }

    fn wake(state: &mut InboxState, arrived: &Condvar) {
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
        arrived.notify_all();
    }

    /// The next notice, lags read together; `Some(None)` at the end; `None` when nothing
    /// is here yet.
    fn take(state: &mut InboxState) -> Option<Option<Next>> {
        let mut lagged = core::mem::take(&mut state.dropped);
        while let Some(Notice::Lagged(n)) = state.notices.front() {
            lagged += n;
            state.notices.pop_front();
        }
        if lagged > 0 {
            return Some(Some(Err(SubscriptionError::Lagged(lagged))));
        }
        match state.notices.pop_front() {
            Some(Notice::Item(item)) => Some(Some(Ok(item))),
            Some(Notice::Ended(e)) => Some(Some(Err(SubscriptionError::Ended(e)))),
            Some(Notice::Lagged(n)) => Some(Some(Err(SubscriptionError::Lagged(n)))),
            None if state.ended => Some(None),
            None => None,
        }
    }

    /// The next notice (`Ready(None)` at the end), or `Pending` with `task`'s waker kept.
    pub fn poll_next(&self, task: &mut Context<'_>) -> Poll<Option<Next>> {
        let mut state = lock(&self.state);
        match Inbox::take(&mut state) {
            Some(next) => Poll::Ready(next),
            None => {
                state.waker = Some(task.waker().clone());
                Poll::Pending
            }
        }
    }

    /// The next notice (`None` at the end), blocking this thread until there is one.
    pub fn next_blocking(&self) -> Option<Next> {
        let mut state = lock(&self.state);
        loop {
            if let Some(next) = Inbox::take(&mut state) {
                return next;
            }
            state = self.arrived.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// A client's subscriptions, kept by its driver: the core's routes
/// ([`ClientSubscriptions`]), each one's [`Inbox`], and the subscriptions whose caller
/// left before the answer.
#[derive(Debug, Default)]
pub struct Subscribed {
    routes: ClientSubscriptions,
    inboxes: BTreeMap<u64, Arc<Inbox>>,
    /// Subscribe calls whose caller left before the answer: ended once it comes.
    abandoned: BTreeSet<u64>,
    /// Keys of our own unsubscribe calls for those (nobody waits for their answers).
    next_unsubscribe: u64,
}

impl Subscribed {
    /// Nothing subscribed.
    pub fn new() -> Self {
        Subscribed::default()
    }

    /// Sends a subscribe call under `key`, its notifications for `inbox` (the errors of
    /// [`ClientSubscriptions::subscribe`]).
    #[allow(clippy::too_many_arguments)]
    pub fn subscribe(
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
    /// before any later notification is read. An answer that is not an id becomes a
    /// [`CallError::Decode`]. A subscription whose caller left is unsubscribed at once.
    pub fn answer(
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

    /// The caller of subscribe call `key` left: true when it was one of ours. Still
    /// waiting for its answer, the answer is awaited and what it made ended; answered
    /// already, the subscription is ended now.
    pub fn abandon(&mut self, conn: &mut Connection, key: u64, now: Instant) -> bool {
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

    /// Unsubscribes `key`'s subscription with a call under `token`: `Ok(true)` when it
    /// went out (its answer comes to `token`), `Ok(false)` when there was nothing to
    /// unsubscribe (never bound, or the server ended it: answer the caller `false`).
    /// [`SendError::OutputFull`]: nothing done, try again; other errors: forgotten.
    pub fn unsubscribe(
        &mut self,
        conn: &mut Connection,
        key: u64,
        token: u64,
        now: Instant,
    ) -> Result<bool, SendError> {
        let Some((method, params)) = self.unsubscribe_call(key) else {
            self.forget(key);
            return Ok(false);
        };
        let options = RequestOptions::timeout(Timeout::Default);
        match conn.call(token, method, Some(&params), options, now) {
            Err(SendError::OutputFull) => Err(SendError::OutputFull),
            sent => {
                self.forget(key);
                sent.map(|()| true)
            }
        }
    }

    /// Our subscription `key` is over on this side (its reader dropped, or unsubscribed).
    pub fn forget(&mut self, key: u64) {
        self.routes.forget(key);
        if let Some(inbox) = self.inboxes.remove(&key) {
            inbox.end();
        }
    }

    /// The unsubscribe call of `key`'s subscription: its method and params.
    pub fn unsubscribe_call(&self, key: u64) -> Option<(&'static str, Box<RawValue>)> {
        let id = self.routes.id_of(key)?;
        let method = self.routes.declaration_of(key)?.unsubscribe;
        let params = RawValue::from_string(alloc::format!("[{id}]")).ok()?;
        Some((method, params))
    }

    /// A notification: true when it was one of our subscriptions' (handed to its inbox).
    pub fn notification(&mut self, method: &str, params: Option<&RawValue>) -> bool {
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

    /// The connection is over (or its driver dropped): every reader ends.
    pub fn clear(&mut self) {
        for (_, inbox) in core::mem::take(&mut self.inboxes) {
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

/// The answer `false`, for an unsubscribe with nothing to end.
pub fn answer_false() -> Box<RawValue> {
    RawValue::from_string(String::from("false")).expect("JSON")
}
