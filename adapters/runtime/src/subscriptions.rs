//! Method subscriptions on a driver with threads
//! ([`connection::subscriptions`](sansrpc::connection::subscriptions)): what every `std`
//! driver (the futures adapter's, the blocking adapter's, yours) needs beside the
//! connection machine, whatever runs its handlers.
//!
//! - The serving side: a handler gets a [`PendingSubscription`] and decides
//!   ([`accept`](PendingSubscription::accept) / [`reject`](PendingSubscription::reject));
//!   the sink it then holds ([`SubscriptionSink`]) pushes items into the subscription's
//!   queue from any thread and tells the driver ([`Hub`]), which moves them into the
//!   connection while less than [`OUTPUT_ROOM`] of its output waits ([`Served::poll`]).
//!   A [`Fanout`] sends one item to many subscriptions (of any connections): serialized
//!   once, shared by every queue.
//! - The calling side: [`Subscribed`] keeps a client's routes
//!   ([`ClientSubscriptions`]) and each subscription's [`Inbox`], which the caller reads as
//!   a stream ([`Inbox::poll_next`]) or an iterator ([`Inbox::next_blocking`]).
//!
//! The subscriptions of one connection share one lock, in its [`Hub`]: a sink's send
//! takes it once, and the driver takes it once per turn for every subscription with
//! something to send. How a driver wakes is its own: the hub calls the function it was
//! made with ([`Hub::new`]) when a sink or a decision has something for it (once until the
//! driver has looked), and sinks and inboxes wake both a task's [`Waker`] and a thread
//! waiting on them.
//!
//! A driver parked with nothing queued may let sinks write past it
//! ([`Served::open_bypass`], under the core's rule
//! [`Connection::may_bypass`](sansrpc::connection::Connection::may_bypass)): a send then
//! writes the notification to the transport's socket from where it runs, through the
//! transport's [`Bypass`], and no driver wakes for it.

use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering};
use core::task::{Context, Poll, Waker};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::{Condvar, Mutex, MutexGuard};

use sansrpc::connection::subscriptions::{
    charge, ClientSubscriptions, MethodSubscription, Notice, Popped, Pushed, SubscriptionQueue,
    VecMap, ITEM_OVERHEAD, OUTPUT_ROOM,
};
use sansrpc::connection::{Connection, IncomingId, RequestOptions, SendError, Timeout};
use sansrpc::method::CallError;
use sansrpc::router::{Call, RegisterError, Router};
use sansrpc::ErrorObject;
use sansrpc::Instant;
use sansrpc::RawValue;
use serde::de::DeserializeOwned;

use sansrpc::connection::bypass::ITEM_TAIL;
pub use sansrpc::connection::bypass::{Bypass, Bypassed};

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
    /// The connection closed (the client went away, the server shut down, or another
    /// subscription of the connection overflowed under
    /// [`LagPolicy::Disconnect`](sansrpc::connection::subscriptions::LagPolicy::Disconnect)).
    Closed,
    /// The client read too slowly: this subscription's queue overflowed under
    /// [`LagPolicy::Close`](sansrpc::connection::subscriptions::LagPolicy::Close) (it ends) or
    /// [`LagPolicy::Disconnect`](sansrpc::connection::subscriptions::LagPolicy::Disconnect)
    /// (its connection closes).
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

/// An item in a queue: serialized for this subscription alone, or shared by the queues of
/// a fan-out.
#[derive(Debug)]
enum Item {
    Own(Box<RawValue>),
    Shared(Arc<RawValue>),
}

impl AsRef<RawValue> for Item {
    fn as_ref(&self) -> &RawValue {
        match self {
            Item::Own(json) => json,
            Item::Shared(json) => json,
        }
    }
}

/// One accepted subscription, as its sinks and the driver share it (in the hub's lock).
struct SubState {
    queue: SubscriptionQueue<Item>,
    ended: Option<Ended>,
    /// The server asked to end it, with this error (after what is queued). Boxed: asked
    /// for on every item moved, set at most once, and the error is 48 bytes that would
    /// spread each subscription over one more cache line.
    close: Option<Box<Option<ErrorObject<'static>>>>,
    sinks: usize,
    /// In the hub's ready list (or the driver's backlog).
    scheduled: bool,
    /// Active on the connection: the driver sends what is queued (cleared when the driver
    /// ends it).
    live: bool,
    /// Tasks waiting on it: boxed, made for the first (most subscriptions never have one,
    /// and every item moved asks whether one waits for room).
    waiting: Option<Box<Waiting>>,
    /// What its notifications start with, before the item, for a send that writes past
    /// the driver ([`Connection::bypass_head`]); `None` when its connection frames its
    /// messages itself.
    head: Option<Box<[u8]>>,
}

/// Tasks waiting on a subscription.
#[derive(Default)]
struct Waiting {
    /// For the end ([`SubscriptionSink::poll_closed`]).
    closing: Vec<Waker>,
    /// For room ([`SubscriptionSink::poll_send`]).
    room: Vec<Waker>,
}

impl SubState {
    /// Over for the sinks: they learn why (the first reason stays).
    fn over(&mut self, why: Ended) {
        self.ended.get_or_insert(why);
        if let Some(waiting) = &mut self.waiting {
            waiting.closing.drain(..).for_each(Waker::wake);
            waiting.room.drain(..).for_each(Waker::wake);
        }
    }
}

/// What the handlers and sinks of one connection share with its driver, behind one lock:
/// the decisions on subscribe requests, every accepted subscription's queue, and which of
/// them have something for the driver.
pub struct Hub {
    state: Mutex<HubState>,
    /// Set when something was handed over and the driver was woken for it: the driver's
    /// turn of a connection with nothing handed over costs one atomic swap, not a lock,
    /// and a burst of sends wakes it once.
    pending: AtomicBool,
    /// Threads blocked in a sink's [`send`](SubscriptionSink::send) or
    /// [`wait_closed`](SubscriptionSink::wait_closed).
    changed: Condvar,
    /// Kept as a waker, not a boxed closure: the hub reaches what it wakes directly, one
    /// cache line less per item handed over with many connections.
    wake: Waker,
}

/// A list of subscriptions ready for the driver.
type Ready = smallvec::SmallVec<[u64; 2]>;

#[derive(Default)]
struct HubState {
    decisions: Vec<(IncomingId, MethodSubscription, Decision)>,
    subs: VecMap<u64, SubState>,
    /// Subscriptions with something for the driver, in the order they got it: the first two
    /// held here, in the hub's own cache lines (a subscriber's connection has one ready at a
    /// time, and a buffer of its own would be one more line written by the producer's push
    /// and read by the driver, cold with many subscribers).
    ready: Ready,
    /// Threads waiting on `changed`.
    sleepers: usize,
    /// Set while the driver is parked with nothing queued ([`Served::open_bypass`]): a
    /// subscription with nothing queued writes its notification through it, past the
    /// driver.
    bypass: Option<Arc<dyn Bypass>>,
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hub")
            .field("pending", &self.pending.load(Ordering::Relaxed))
            .finish()
    }
}

/// A closure as a waker ([`Hub::new`]).
struct WakeFn<F>(F);

impl<F: Fn() + Send + Sync + 'static> std::task::Wake for WakeFn<F> {
    fn wake(self: Arc<Self>) {
        (self.0)();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        (self.0)();
    }
}

impl Hub {
    /// A hub that calls `wake` when it has something for the driver (a decision, items, a
    /// close, the last sink gone) and has not called it since the driver last looked
    /// ([`Served::is_idle`]). `wake` runs on the thread of whoever handed it over, outside
    /// the hub's lock.
    pub fn new(wake: impl Fn() + Send + Sync + 'static) -> Arc<Hub> {
        Hub::with_waker(Waker::from(Arc::new(WakeFn(wake))))
    }

    /// [`new`](Hub::new) with a waker to wake: a driver whose task already has one for it
    /// (the futures driver's) hands it over as it is.
    pub fn with_waker(wake: Waker) -> Arc<Hub> {
        Arc::new(Hub {
            state: Mutex::new(HubState::default()),
            pending: AtomicBool::new(false),
            changed: Condvar::new(),
            wake,
        })
    }

    fn decide(&self, handle: IncomingId, declaration: MethodSubscription, decision: Decision) {
        lock(&self.state)
            .decisions
            .push((handle, declaration, decision));
        self.notify();
    }

    /// Wakes the driver unless it was woken and has not looked yet.
    fn notify(&self) {
        if !self.pending.swap(true, Ordering::AcqRel) {
            self.wake.wake_by_ref();
        }
    }

    /// Puts `sub` in the ready list; true when the driver must be told (call
    /// [`notify`](Self::notify) once the lock is released).
    fn schedule(state: &mut HubState, sub: u64) -> bool {
        match state.subs.get_mut(&sub) {
            Some(s) if !s.scheduled => {
                s.scheduled = true;
                state.ready.push(sub);
                true
            }
            _ => false,
        }
    }

    /// Wakes the threads blocked on this hub, if any.
    fn changed(&self, state: &HubState) {
        if state.sleepers > 0 {
            self.changed.notify_all();
        }
    }

    /// Blocks this thread until `changed` is notified.
    fn sleep<'a>(&'a self, mut state: MutexGuard<'a, HubState>) -> MutexGuard<'a, HubState> {
        state.sleepers += 1;
        let mut state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        state.sleepers -= 1;
        state
    }
}

/// A subscription handler's work for one subscribe request, as a [`Router`] registered
/// with [`SubscriptionRouter::subscription`] hands it to the driver ([`open`]): run it
/// where handlers run, with the request's [`PendingSubscription`].
pub type Subscribe = Box<dyn FnOnce(PendingSubscription) + Send>;

/// Method subscriptions on the core [`Router`], for a driver with threads (the blocking
/// adapter; the async adapters take theirs on their own router): bring it into scope and
/// call `router.subscription(declaration, handler)`.
pub trait SubscriptionRouter {
    /// Registers a method subscription: a request to `declaration`'s subscribe method runs
    /// `handler` where the driver runs handlers (a worker thread), with the request's
    /// [`PendingSubscription`] and the params decoded as `P` (`-32602` when they do not
    /// fit; the layers' gates decide first, as for every call). The handler accepts,
    /// blocking its thread until the connection has answered the id, and gets a
    /// [`SubscriptionSink`] usable from any thread; or it rejects with an error. It may
    /// send from where it is, or hand the sink to a producer of its own and return (a long
    /// loop holds a worker of the pool). See [`Router::subscription_with`].
    fn subscription<P, F>(
        &mut self,
        declaration: MethodSubscription,
        handler: F,
    ) -> Result<(), RegisterError>
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(PendingSubscription, P) + Send + Sync + 'static;
}

impl SubscriptionRouter for Router {
    fn subscription<P, F>(
        &mut self,
        declaration: MethodSubscription,
        handler: F,
    ) -> Result<(), RegisterError>
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(PendingSubscription, P) + Send + Sync + 'static,
    {
        let handler = Arc::new(handler);
        self.subscription_with(declaration, move |params: P| -> Subscribe {
            let handler = Arc::clone(&handler);
            Box::new(move |pending| handler(pending, params))
        })
    }
}

/// The subscribe request `call` to a method registered with
/// [`SubscriptionRouter::subscription`], past the layers' gates: its work with its
/// declaration, or the error to answer; `None` when `call`'s method is not a subscribe
/// method ([`Router::open_subscription`], its value taken as a [`Subscribe`]).
pub fn open<'r>(
    router: &'r Router,
    call: &Call<'_>,
) -> Option<(
    &'r MethodSubscription,
    Result<Subscribe, ErrorObject<'static>>,
)> {
    let (declaration, opened) = router.open_subscription(call)?;
    let work = opened.and_then(|opened| {
        opened
            .downcast::<Subscribe>()
            .map(|work| *work)
            .map_err(|_| {
                ErrorObject::fixed(
                    sansrpc::error::code::INTERNAL_ERROR,
                    "this subscription was registered for another driver",
                )
            })
    });
    Some((declaration, work))
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
/// Items wait in the subscription's queue, bounded by the declaration's
/// [`max_bytes`](MethodSubscription::max_bytes) (1 MiB by default), and the driver moves
/// them into the connection while its output has room. [`send`](Self::send) (and the
/// async adapters' `send`) waits for room in the queue, so a producer follows a slow
/// reader without losing an item; [`try_send`](Self::try_send) never waits, and a full
/// queue meets the declaration's
/// [`LagPolicy`](sansrpc::connection::subscriptions::LagPolicy): the connection closes (the
/// default, as go-ethereum does), the oldest items are dropped, or the subscription ends
/// (then `try_send` fails with [`Ended::Lagged`]). A subscriber that never reads costs the
/// server that bound and no more; one that never reads while a producer waits on it is
/// closed by the connection's write-stall timeout, and the producer's `send` fails then.
pub struct SubscriptionSink {
    hub: Arc<Hub>,
    sub: u64,
}

impl fmt::Debug for SubscriptionSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubscriptionSink")
            .field("sub", &self.sub)
            .field("ended", &self.ended())
            .finish()
    }
}

impl Clone for SubscriptionSink {
    fn clone(&self) -> Self {
        if let Some(s) = lock(&self.hub.state).subs.get_mut(&self.sub) {
            s.sinks += 1;
        }
        SubscriptionSink {
            hub: Arc::clone(&self.hub),
            sub: self.sub,
        }
    }
}

impl Drop for SubscriptionSink {
    fn drop(&mut self) {
        let mut state = lock(&self.hub.state);
        let Some(s) = state.subs.get_mut(&self.sub) else {
            return;
        };
        s.sinks -= 1;
        if s.sinks > 0 {
            return;
        }
        if s.ended.is_some() && !s.scheduled {
            // Over, and the driver is done with it.
            state.subs.remove(&self.sub);
            return;
        }
        // The driver ends it once what is queued has gone out.
        let notify = Hub::schedule(&mut state, self.sub);
        drop(state);
        if notify {
            self.hub.notify();
        }
    }
}

/// The JSON of `item`, or the server's own bug (a value that does not serialize).
fn serialize<T: serde::Serialize + ?Sized>(item: &T) -> Option<Box<RawValue>> {
    RawValue::from_serialize(item).ok()
}

impl SubscriptionSink {
    /// The subscription's number on its connection (its id, as the declaration writes it).
    pub fn id(&self) -> u64 {
        self.sub
    }

    fn ended(&self) -> Option<Ended> {
        match lock(&self.hub.state).subs.get(&self.sub) {
            Some(s) => s.ended,
            None => Some(Ended::Closed),
        }
    }

    /// A value that does not serialize is the server's own bug: it ends the subscription
    /// rather than sending the client something else.
    fn unserializable(&self) -> Ended {
        self.close(Some(ErrorObject::internal_error()));
        Ended::ByServer
    }

    /// Queues `item` for the subscriber, blocking this thread while the queue has no room
    /// for it (the subscriber reads slower than items come): the producer follows the
    /// reader. The error says why the subscription is over. Not from the connection's
    /// driver thread (or an async task: the adapters' async `send` waits as a future).
    pub fn send<T: serde::Serialize + ?Sized>(&self, item: &T) -> Result<(), Ended> {
        let item = serialize(item).ok_or_else(|| self.unserializable())?;
        self.send_item(Item::Own(item))
    }

    /// [`send`](Self::send) of an item already in JSON.
    pub fn send_raw(&self, item: Box<RawValue>) -> Result<(), Ended> {
        self.send_item(Item::Own(item))
    }

    fn send_item(&self, item: Item) -> Result<(), Ended> {
        let size = item.as_ref().get().len();
        let mut state = lock(&self.hub.state);
        loop {
            let s = state.subs.get_mut(&self.sub).ok_or(Ended::Closed)?;
            if let Some(why) = s.ended {
                return Err(why);
            }
            if s.queue.has_room(size) {
                return self.push(state, item);
            }
            state = self.hub.sleep(state);
        }
    }

    /// Queues `item` for the subscriber without waiting: when the queue is full, the
    /// declaration's lag policy decides (see the type's docs). The error says why the
    /// subscription is over.
    pub fn try_send<T: serde::Serialize + ?Sized>(&self, item: &T) -> Result<(), Ended> {
        let item = serialize(item).ok_or_else(|| self.unserializable())?;
        self.try_send_raw(item)
    }

    /// [`try_send`](Self::try_send) of an item already in JSON.
    pub fn try_send_raw(&self, item: Box<RawValue>) -> Result<(), Ended> {
        self.push(lock(&self.hub.state), Item::Own(item))
    }

    /// [`try_send`](Self::try_send) of an item serialized once and shared by the queues of
    /// many subscribers (what [`Fanout`] sends): no copy of it is made for this one.
    #[inline]
    pub fn try_send_shared(&self, item: Arc<RawValue>) -> Result<(), Ended> {
        self.push(lock(&self.hub.state), Item::Shared(item))
    }

    /// Queues `item` (taken from `slot`) once the queue has room for it, or says why the
    /// subscription is over; `Pending` with `task`'s waker kept while it has no room: the
    /// async adapters' waiting `send`. `slot` keeps the item while pending.
    pub fn poll_send(
        &self,
        task: &mut Context<'_>,
        slot: &mut Option<Box<RawValue>>,
    ) -> Poll<Result<(), Ended>> {
        let Some(item) = slot.as_ref() else {
            return Poll::Ready(Ok(()));
        };
        let size = item.get().len();
        let mut state = lock(&self.hub.state);
        let Some(s) = state.subs.get_mut(&self.sub) else {
            return Poll::Ready(Err(Ended::Closed));
        };
        if let Some(why) = s.ended {
            return Poll::Ready(Err(why));
        }
        if !s.queue.has_room(size) {
            let room = &mut s.waiting.get_or_insert_with(Box::default).room;
            if !room.iter().any(|w| w.will_wake(task.waker())) {
                room.push(task.waker().clone());
            }
            return Poll::Pending;
        }
        let item = slot.take().map(Item::Own).expect("checked above");
        Poll::Ready(self.push(state, item))
    }

    /// Pushes `item` into the queue (the lag policy deciding when it is full), with the hub
    /// locked as `state`.
    fn push(&self, mut state: MutexGuard<'_, HubState>, item: Item) -> Result<(), Ended> {
        let HubState {
            subs,
            ready,
            bypass,
            ..
        } = &mut *state;
        let s = subs.get_mut(&self.sub).ok_or(Ended::Closed)?;
        if let Some(why) = s.ended {
            return Err(why);
        }
        if s.close.is_some() {
            return Err(Ended::ByServer);
        }
        // The driver is parked with nothing queued: the notification may go to the socket
        // from here, in the order it was sent.
        if bypass.is_some() {
            match write_past(bypass, s, &item) {
                Some(Bypassed::Whole) => return Ok(()),
                Some(Bypassed::Part) => {
                    // The rest waits in the transport: the driver is woken to write it.
                    drop(state);
                    self.hub.notify();
                    return Ok(());
                }
                // Through the output, as with no bypass; the driver is woken for it.
                _ => {}
            }
        }
        let pushed = s.queue.push(item);
        let result = match pushed {
            Pushed::Queued | Pushed::Lagged { .. } => Ok(()),
            // Over for the sinks now; the driver still sends what was queued, then ends
            // it (or closes the connection).
            Pushed::Overflowed => {
                s.over(Ended::Lagged);
                Err(Ended::Lagged)
            }
            _ => Err(s.ended.unwrap_or(Ended::Closed)),
        };
        // The overflow, too, is for the driver to act on (after what is queued).
        let notify = !s.scheduled;
        if notify {
            s.scheduled = true;
            ready.push(self.sub);
        }
        if result.is_err() {
            self.hub.changed(&state);
        }
        drop(state);
        if notify {
            self.hub.notify();
        }
        result
    }

    /// True once the subscription is over.
    pub fn is_closed(&self) -> bool {
        self.ended().is_some()
    }

    /// Why the subscription is over, once it is: `task`'s waker is woken when it happens.
    pub fn poll_closed(&self, task: &mut Context<'_>) -> Poll<Ended> {
        let mut state = lock(&self.hub.state);
        let Some(s) = state.subs.get_mut(&self.sub) else {
            return Poll::Ready(Ended::Closed);
        };
        if let Some(why) = s.ended {
            return Poll::Ready(why);
        }
        let closing = &mut s.waiting.get_or_insert_with(Box::default).closing;
        if !closing.iter().any(|w| w.will_wake(task.waker())) {
            closing.push(task.waker().clone());
        }
        Poll::Pending
    }

    /// Blocks this thread until the subscription is over (the client unsubscribed or went
    /// away, the server ended it, it overflowed), and says why.
    pub fn wait_closed(&self) -> Ended {
        let mut state = lock(&self.hub.state);
        loop {
            match state.subs.get(&self.sub) {
                None => return Ended::Closed,
                Some(s) => {
                    if let Some(why) = s.ended {
                        return why;
                    }
                }
            }
            state = self.hub.sleep(state);
        }
    }

    /// Ends the subscription once what is queued has gone out: with `error` (and a
    /// declaration whose [`notices`](MethodSubscription::notices) are on), a last
    /// notification carrying it tells the subscriber why; otherwise it just stops (as geth
    /// and jsonrpsee do).
    pub fn close(&self, error: Option<ErrorObject<'static>>) {
        let mut state = lock(&self.hub.state);
        let Some(s) = state.subs.get_mut(&self.sub) else {
            return;
        };
        if s.ended.is_none() && s.close.is_none() {
            s.close = Some(Box::new(error));
            let notify = Hub::schedule(&mut state, self.sub);
            drop(state);
            if notify {
                self.hub.notify();
            }
        }
    }
}

/// Writes `item` through `bypass` (set) when `s` has nothing queued, as the connection's
/// output would write it: what the bypass made of it, or `None` when it was not tried. One
/// not written whole ends the bypass: nothing more goes past the driver.
#[inline(always)]
fn write_past(bypass: &mut Option<Arc<dyn Bypass>>, s: &SubState, item: &Item) -> Option<Bypassed> {
    let through = bypass.as_ref()?;
    let head = s.head.as_deref()?;
    if !s.live || s.scheduled || !s.queue.is_empty() {
        return None;
    }
    let (json, shared) = match item {
        Item::Shared(item) => (&**item, Some(item)),
        Item::Own(item) => (&**item, None),
    };
    let written = through.try_write(head, json, shared, ITEM_TAIL);
    if written != Bypassed::Whole {
        *bypass = None;
    }
    Some(written)
}

/// One item to many subscriptions, of one connection or of many: serialized once, and
/// shared (reference-counted) by every subscriber's queue, with each subscription's own
/// bound and lag policy. For a node's `newHeads`, a price feed, any event every
/// subscriber of a kind gets.
///
/// A handler adds the sink it accepted ([`add`](Self::add)) and may return: no task per
/// subscriber waits for items. [`send`](Self::send) never waits (a subscriber whose queue
/// is full meets its lag policy, by default its connection closes); subscriptions that
/// are over leave the fan-out as it meets them.
#[derive(Debug, Default)]
pub struct Fanout {
    sinks: Mutex<Vec<SubscriptionSink>>,
}

impl Fanout {
    /// A fan-out with no subscriber.
    pub fn new() -> Fanout {
        Fanout::default()
    }

    /// Adds a subscription: it gets every item sent from now on.
    pub fn add(&self, sink: impl Into<SubscriptionSink>) {
        lock(&self.sinks).push(sink.into());
    }

    /// Subscriptions in the fan-out (some may have ended since the last send).
    pub fn len(&self) -> usize {
        lock(&self.sinks).len()
    }

    /// True when no subscription is in the fan-out.
    pub fn is_empty(&self) -> bool {
        lock(&self.sinks).is_empty()
    }

    /// Serializes `item` once and queues it for every subscription; those that are over
    /// leave. The number it was queued for; a value that does not serialize (the server's
    /// bug) is queued for none, and ends every subscription with an internal error.
    pub fn send<T: serde::Serialize + ?Sized>(&self, item: &T) -> usize {
        match serialize(item) {
            Some(json) => self.send_shared(Arc::from(json)),
            None => {
                for sink in core::mem::take(&mut *lock(&self.sinks)) {
                    sink.close(Some(ErrorObject::internal_error()));
                }
                0
            }
        }
    }

    /// Queues `item`, already in JSON and shared, for every subscription; those that are
    /// over leave. The number it was queued for.
    pub fn send_shared(&self, item: Arc<RawValue>) -> usize {
        let mut sinks = lock(&self.sinks);
        sinks.retain(|sink| sink.try_send_shared(Arc::clone(&item)).is_ok());
        sinks.len()
    }
}

/// The subscriptions a driver serves on one connection: which are active, the subscribe
/// requests they came with, and the hub they share with the handlers and sinks. The
/// driver runs the handlers its own way; this keeps everything else.
pub struct Served {
    hub: Arc<Hub>,
    /// Accepted subscriptions: number → subscribe request.
    active: VecMap<u64, IncomingId>,
    /// Subscribe requests accepted, → their subscription.
    accepted: VecMap<IncomingId, u64>,
    /// Subscribe requests handed to a handler and not decided on yet.
    undecided: VecMap<IncomingId, ()>,
    /// Subscriptions with items left that the output had no room for.
    backlog: Vec<u64>,
    /// The ready list taken from the hub, kept for its allocation when it has one.
    todo: Ready,
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
            active: VecMap::default(),
            accepted: VecMap::default(),
            undecided: VecMap::default(),
            backlog: Vec::new(),
            todo: Ready::new(),
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
        self.undecided.insert(handle, ());
        PendingSubscription::new(handle, declaration.clone(), Arc::clone(&self.hub))
    }

    /// The peer cancelled request `handle`: when it is a subscribe its handler has not
    /// decided on yet, it is answered as cancelled now (true), and the handler's decision,
    /// when it comes, does nothing (an accept fails with [`NotAccepted`]).
    pub fn cancel(&mut self, conn: &mut Connection, handle: IncomingId) -> bool {
        if self.undecided.remove(&handle).is_none() {
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
    /// [`poll`](Self::poll). Clears the hub's flag (the next hand-over wakes the driver
    /// again), so call `poll` when it says false.
    pub fn is_idle(&self) -> bool {
        !self.hub.pending.swap(false, Ordering::AcqRel) && self.backlog.is_empty()
    }

    /// True when some subscription is active on the connection (one a sink may send to).
    pub fn has_active(&self) -> bool {
        !self.active.is_empty()
    }

    /// Lets the sinks write past the driver through `bypass` until
    /// [`close_bypass`](Self::close_bypass): call it as the driver parks, when the core
    /// says so ([`Connection::may_bypass`]) and the transport's own buffer is empty. False
    /// (nothing opened) when something is handed over, scheduled or held back, or no
    /// subscription is active: the driver's next turn comes first.
    pub fn open_bypass(&mut self, bypass: &Arc<dyn Bypass>) -> bool {
        if self.active.is_empty() || !self.backlog.is_empty() {
            return false;
        }
        let mut state = lock(&self.hub.state);
        if !state.decisions.is_empty() || !state.ready.is_empty() {
            return false;
        }
        state.bypass = Some(Arc::clone(bypass));
        true
    }

    /// Ends what [`open_bypass`](Self::open_bypass) opened: from here every send goes
    /// through the connection's output. Call it first thing on the driver's turn, before
    /// the transport writes anything (a message the bypass took in part, whose rest the
    /// transport keeps, comes first).
    pub fn close_bypass(&mut self) {
        lock(&self.hub.state).bypass = None;
    }

    /// True when some subscription's items are held back for want of room in the
    /// connection's output: [`poll`](Self::poll) again once it has drained.
    pub fn is_held_back(&self) -> bool {
        !self.backlog.is_empty()
    }

    /// The client unsubscribed `sub`: its sinks learn it. The subscribe request it came
    /// with, whose handler is over.
    pub fn unsubscribed(&mut self, sub: u64) -> Option<IncomingId> {
        let hub = Arc::clone(&self.hub);
        let mut state = lock(&hub.state);
        self.end(&mut state, sub, Ended::Unsubscribed)
    }

    /// Ends `sub` on our side: its sinks learn why. The subscribe request it came with.
    fn end(&mut self, state: &mut HubState, sub: u64, why: Ended) -> Option<IncomingId> {
        let handle = self.active.remove(&sub)?;
        self.accepted.remove(&handle);
        if let Some(s) = state.subs.get_mut(&sub) {
            s.queue.close();
            s.over(why);
            s.scheduled = false;
            s.live = false;
            if s.sinks == 0 {
                state.subs.remove(&sub);
            }
        }
        self.hub.changed(state);
        Some(handle)
    }

    /// The connection closed: every subscription is over, and decisions still to take are
    /// dropped (accepts waiting fail with [`NotAccepted`]).
    pub fn clear(&mut self) {
        let hub = Arc::clone(&self.hub);
        let mut state = lock(&hub.state);
        while let Some(sub) = self.active.first_key() {
            self.end(&mut state, sub, Ended::Closed);
        }
        self.backlog.clear();
        self.undecided.clear();
        state.ready.clear();
        // The transport goes with the driver: nothing more is written through it.
        let bypass = state.bypass.take();
        let decisions = core::mem::take(&mut state.decisions);
        drop(state);
        drop(decisions);
        drop(bypass);
    }

    /// Takes the handlers' decisions and moves queued items into the connection while its
    /// output has room, in one turn of the hub's lock. `over` is told the subscribe request
    /// of each subscription that ends here (its handler, if it still runs, may be
    /// dropped). True when anything moved.
    pub fn poll(&mut self, conn: &mut Connection, over: &mut dyn FnMut(IncomingId)) -> bool {
        let mut progress = false;
        // Cloned so that the lock's guard does not borrow `self` (the handle is in every
        // sink, so this is one count up and down, no allocation).
        let hub = Arc::clone(&self.hub);
        let mut state = lock(&hub.state);
        let mut replies = Vec::new();
        if !state.decisions.is_empty() {
            for (handle, declaration, decision) in core::mem::take(&mut state.decisions) {
                progress = true;
                if let Some(reply) = self.decide(conn, &mut state, handle, &declaration, decision) {
                    replies.push(reply);
                }
            }
        }
        // The ready list is taken by swapping it with the emptied one of the last turn (both
        // keep their allocations, if they have any), not copied element by element.
        let mut todo = core::mem::take(&mut self.todo);
        if self.backlog.is_empty() {
            core::mem::swap(&mut todo, &mut state.ready);
        } else {
            todo.extend(self.backlog.drain(..));
            todo.append(&mut state.ready);
        }
        let mut ended = Vec::new();
        for &sub in &todo {
            progress |= self.pump(conn, &mut state, sub, &mut ended);
        }
        todo.clear();
        self.todo = todo;
        if !ended.is_empty() {
            for (sub, why) in ended {
                if let Some(handle) = self.end(&mut state, sub, why) {
                    over(handle);
                }
            }
        }
        drop(state);
        // Outside the lock: a reply may run its receiver's code.
        if !replies.is_empty() {
            for (reply, sink) in replies {
                reply(sink);
            }
        }
        progress
    }

    /// Acts on a handler's decision; an accept's reply and what it gets, to hand over once
    /// the lock is released.
    fn decide(
        &mut self,
        conn: &mut Connection,
        state: &mut HubState,
        handle: IncomingId,
        declaration: &MethodSubscription,
        decision: Decision,
    ) -> Option<(AcceptReply, Option<SubscriptionSink>)> {
        if self.undecided.remove(&handle).is_none() {
            // Cancelled by the peer (answered then), or the connection closed.
            return match decision {
                Decision::Accept(reply) => Some((reply, None)),
                _ => None,
            };
        }
        match decision {
            Decision::Accept(reply) => {
                let Some(sub) = conn.accept_subscription(handle, declaration) else {
                    return Some((reply, None));
                };
                state.subs.insert(
                    sub,
                    SubState {
                        queue: SubscriptionQueue::new(declaration),
                        ended: None,
                        close: None,
                        sinks: 1,
                        scheduled: false,
                        live: true,
                        waiting: None,
                        head: conn.bypass_head(sub).map(Vec::into_boxed_slice),
                    },
                );
                self.active.insert(sub, handle);
                self.accepted.insert(handle, sub);
                // A reply whose handler is gone drops the sink: the subscription ends when
                // the driver sees it (the last sink gone).
                let sink = SubscriptionSink {
                    hub: Arc::clone(&self.hub),
                    sub,
                };
                Some((reply, Some(sink)))
            }
            Decision::Reject(error) => {
                conn.respond(handle, Err(&error));
                None
            }
            Decision::Dropped => {
                let error = ErrorObject::fixed(
                    sansrpc::error::code::INTERNAL_ERROR,
                    "Internal error: the subscription was neither accepted nor rejected",
                );
                conn.respond(handle, Err(&error));
                None
            }
        }
    }

    /// Moves `sub`'s queued items into the connection while its output has room; notes it
    /// in `ended` when it overflowed, when the server asked to end it, or its last sink is
    /// gone, once its queue is empty.
    fn pump(
        &mut self,
        conn: &mut Connection,
        state: &mut HubState,
        sub: u64,
        ended: &mut Vec<(u64, Ended)>,
    ) -> bool {
        let Some(s) = state.subs.get_mut(&sub).filter(|s| s.live) else {
            return false;
        };
        let mut progress = false;
        let mut moved = false;
        let mut over = None;
        loop {
            if conn.buffered_output() >= OUTPUT_ROOM {
                // Left scheduled: tried again once the output has drained.
                self.backlog.push(sub);
                break;
            }
            let Some(popped) = s.queue.pop() else {
                s.scheduled = false;
                break;
            };
            moved = true;
            let overflowed = matches!(popped, Popped::Overflowed);
            let sent = match &popped {
                // Held, not copied, where the transport writes the item from here.
                Popped::Item(Item::Shared(item)) => conn.send_shared_item(sub, item),
                popped => conn.send_popped(sub, popped),
            };
            match sent {
                Ok(()) if overflowed => {
                    over = Some(Ended::Lagged);
                    break;
                }
                Ok(()) => progress = true,
                Err(SendError::OutputFull) => {
                    s.queue.restore(popped);
                    self.backlog.push(sub);
                    break;
                }
                Err(_) => {
                    over = Some(Ended::Closed);
                    break;
                }
            }
        }
        if let Some(waiting) = s.waiting.as_mut().filter(|_| moved) {
            // Room for the producers that wait for it.
            waiting.room.drain(..).for_each(Waker::wake);
        }
        if over.is_none() && !s.scheduled && (s.close.is_some() || s.sinks == 0) {
            let error = s.close.take().and_then(|e| *e);
            conn.end_subscription(sub, error.as_ref());
            over = Some(Ended::ByServer);
        }
        if moved && over.is_none() {
            self.hub.changed(state);
        }
        if let Some(why) = over {
            ended.push((sub, why));
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
    /// [`LagPolicy::DropOldest`](sansrpc::connection::subscriptions::LagPolicy::DropOldest)),
    /// or the client did, holding at most the declaration's
    /// [`max_bytes`](MethodSubscription::max_bytes) unread. The subscription goes on.
    Lagged(u64),
    /// An item did not decode as the subscription's type. The subscription goes on.
    Decode(serde_json::Error),
    /// The server ended the subscription with this error (a slow reader under
    /// [`LagPolicy::Close`](sansrpc::connection::subscriptions::LagPolicy::Close), say). The
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
/// declaration's [`max_bytes`](MethodSubscription::max_bytes) (past it the oldest are
/// dropped and counted as a lag).
pub struct Inbox {
    state: Mutex<InboxState>,
    /// Threads waiting for a notice ([`Inbox::next_blocking`]).
    arrived: Condvar,
}

struct InboxState {
    notices: VecDeque<Notice>,
    /// Bytes charged for the notices unread (their JSON plus `ITEM_OVERHEAD` each).
    bytes: usize,
    max_bytes: usize,
    /// Items this side dropped, unread, to keep within `max_bytes`.
    dropped: u64,
    ended: bool,
    waker: Option<Waker>,
}

/// What a notice is charged in an inbox.
fn notice_size(notice: &Notice) -> usize {
    match notice {
        Notice::Item(item) => charge(item.get().len()),
        _ => ITEM_OVERHEAD,
    }
}

impl fmt::Debug for Inbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbox")
            .field("unread", &lock(&self.state).notices.len())
            .finish()
    }
}

impl Inbox {
    /// An empty inbox holding at most `max_bytes` of notices unread (each charged its JSON
    /// plus [`ITEM_OVERHEAD`]; one larger is held alone): a declaration's
    /// [`max_bytes`](MethodSubscription::max_bytes).
    pub fn new(max_bytes: usize) -> Arc<Inbox> {
        Arc::new(Inbox {
            state: Mutex::new(InboxState {
                notices: VecDeque::new(),
                bytes: 0,
                max_bytes,
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
        let size = notice_size(&notice);
        while !ends && !state.notices.is_empty() && state.bytes + size > state.max_bytes {
            let Some(old) = state.notices.pop_front() else {
                break;
            };
            state.bytes -= notice_size(&old);
            match old {
                Notice::Item(_) => state.dropped += 1,
                Notice::Lagged(n) => state.dropped += n,
                Notice::Ended(_) => {}
            }
        }
        state.bytes += size;
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
            state.bytes -= ITEM_OVERHEAD;
        }
        if lagged > 0 {
            return Some(Some(Err(SubscriptionError::Lagged(lagged))));
        }
        let notice = state.notices.pop_front();
        if let Some(notice) = &notice {
            state.bytes -= notice_size(notice);
        }
        match notice {
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
    /// Each subscription's inbox by key: sorted vectors, not B-trees (each cost a browser
    /// page about 3 KB of code). Keys are call tokens, which grow: one goes in at the end,
    /// and one leaving moves those after it (16 bytes each).
    inboxes: VecMap<u64, Arc<Inbox>>,
    /// Subscribe calls whose caller left before the answer: ended once it comes.
    abandoned: VecMap<u64, ()>,
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
        if self.abandoned.remove(&key).is_some() {
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
            self.abandoned.insert(key, ());
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
        let params = RawValue::from_string(format!("[{id}]")).ok()?;
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

/// One of a client's subscriptions as its reader holds it, on every driver: the key its
/// driver knows it by, the id the server gave, its [`Inbox`], and whether it is over
/// (unsubscribed, or read to its end; then nothing is left to end when it is dropped). The
/// futures and the blocking adapters' `RawSubscription` are one of these and their client.
pub struct Reader {
    key: u64,
    id: Box<RawValue>,
    inbox: Arc<Inbox>,
    done: bool,
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // As the drivers' subscriptions show themselves.
        f.debug_struct("RawSubscription")
            .field("id", &self.id.get())
            .finish()
    }
}

impl Reader {
    /// The subscription the driver knows as `key`, whose id the server answered, read from
    /// `inbox`.
    pub fn new(key: u64, id: Box<RawValue>, inbox: Arc<Inbox>) -> Reader {
        Reader {
            key,
            id,
            inbox,
            done: false,
        }
    }

    /// The subscription id the server gave (its JSON: `"0x1"`, `31`).
    pub fn id(&self) -> &RawValue {
        &self.id
    }

    /// The key its driver knows it by (its subscribe call's).
    pub fn key(&self) -> u64 {
        self.key
    }

    /// Over from now on (unsubscribed, or dropped): true when it was not yet, and its
    /// driver still has to end it.
    pub fn finish(&mut self) -> bool {
        !core::mem::replace(&mut self.done, true)
    }

    /// The next item, lag or error (`Ready(None)` once over), or `Pending` with `task`'s
    /// waker kept ([`Inbox::poll_next`]).
    pub fn poll_next(&mut self, task: &mut Context<'_>) -> Poll<Option<Next>> {
        let next = self.inbox.poll_next(task);
        if let Poll::Ready(None) = next {
            self.done = true;
        }
        next
    }

    /// The next item, lag or error (`None` once over), blocking this thread until there is
    /// one ([`Inbox::next_blocking`]).
    pub fn next_blocking(&mut self) -> Option<Next> {
        if self.done {
            return None;
        }
        let next = self.inbox.next_blocking();
        self.done = next.is_none();
        next
    }
}

/// A subscription's item decoded as `T`: what a typed subscription yields for each `next`.
pub fn decode<T: DeserializeOwned>(next: Next) -> Result<T, SubscriptionError> {
    next.and_then(|raw| raw.deserialize().map_err(SubscriptionError::Decode))
}

/// Declares a driver's two subscription types around a [`Reader`]: `RawSubscription` (its
/// client, `$client`, and the reader) and `Subscription<T>` (one whose items decode as `T`),
/// with what they do alike on every driver (`Debug`, `id`, `typed`, `into_raw`). The driver
/// adds how it waits: `unsubscribe`, its `Iterator` or `Stream`, and the `Drop` that
/// unsubscribes. The futures and the blocking adapters declare theirs with it; the doc
/// comments given before each name are the types' own.
#[doc(hidden)]
#[macro_export]
macro_rules! subscription_types {
    (
        $(#[$raw_doc:meta])* RawSubscription($client:ty);
        $(#[$typed_doc:meta])* Subscription<T>;
    ) => {
        $(#[$raw_doc])*
        pub struct RawSubscription {
            client: $client,
            reader: $crate::subscriptions::Reader,
        }

        impl ::core::fmt::Debug for RawSubscription {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                self.reader.fmt(f)
            }
        }

        impl RawSubscription {
            /// The subscription id the server gave (its JSON: `"0x1"`, `31`).
            pub fn id(&self) -> &$crate::__private::RawValue {
                self.reader.id()
            }

            /// Decodes each item as `T`.
            pub fn typed<T: $crate::__private::DeserializeOwned>(self) -> Subscription<T> {
                Subscription {
                    raw: self,
                    _item: ::core::marker::PhantomData,
                }
            }
        }

        $(#[$typed_doc])*
        pub struct Subscription<T> {
            raw: RawSubscription,
            _item: ::core::marker::PhantomData<fn() -> T>,
        }

        impl<T> ::core::fmt::Debug for Subscription<T> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                self.raw.fmt(f)
            }
        }

        impl<T> Subscription<T> {
            /// The subscription id the server gave.
            pub fn id(&self) -> &$crate::__private::RawValue {
                self.raw.id()
            }

            /// The raw subscription, its items undecoded.
            pub fn into_raw(self) -> RawSubscription {
                self.raw
            }
        }
    };
}
