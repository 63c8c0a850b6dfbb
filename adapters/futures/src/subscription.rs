//! Method subscriptions in the Ethereum shape on the async driver
//! ([`sansrpc::connection::subscriptions`]): the serving side's [`PendingSubscription`] and
//! [`SubscriptionSink`], and the calling side's [`Subscription`] stream.
//!
//! Every rule is the core's: the connection answers the subscribe with the id, answers the
//! unsubscribe itself, bounds each subscription's queue with the declared
//! [`LagPolicy`](sansrpc::connection::subscriptions::LagPolicy), and routes a client's
//! notifications ([`ClientSubscriptions`](sansrpc::connection::subscriptions::ClientSubscriptions)).
//! The sinks, the hub they share with the driver and the client's inboxes are the core's
//! too ([`sansrpc_runtime::subscriptions`], shared with the blocking adapter); this file
//! runs the handlers' futures and wakes the driver's task.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures::channel::oneshot;
use futures::future::{AbortHandle, Abortable};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, Stream, StreamExt};
use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::connection::{Connection, IncomingId, Timeout};
use sansrpc::method::CallError;
use sansrpc::{ErrorObject, RawValue};
use sansrpc_runtime::subscriptions as shared;
use serde::de::DeserializeOwned;
use serde::Serialize;

pub use sansrpc_runtime::subscriptions::{Ended, Fanout, NotAccepted, SubscriptionError};
pub(crate) use sansrpc_runtime::subscriptions::{Inbox, Subscribed};

use crate::client::{Client, Command};
use crate::router::BoxFuture;
use crate::wake::Woken;

// ----- the serving side -----

thread_local! {
    /// The waker of the driver polling its handlers on this thread (its address), if any.
    static POLLING: Cell<usize> = const { Cell::new(0) };
}

/// The subscription hub's wake of a driver's task. A handler that sends from inside the
/// driver's own poll of it needs no wake: the driver takes what was handed over right
/// after (a wake there would cost the connection a whole extra turn per item).
impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if POLLING.with(Cell::get) != Arc::as_ptr(self) as usize {
            self.wake_task();
        }
    }
}

/// A subscribe request its handler has not decided on yet: [`accept`](Self::accept) it
/// (the client gets its subscription id, and the handler a [`SubscriptionSink`]) or
/// [`reject`](Self::reject) it with an error. Dropped undecided, the request is answered
/// `-32603`.
#[derive(Debug)]
pub struct PendingSubscription(shared::PendingSubscription);

impl PendingSubscription {
    /// The declaration the subscribe request came under.
    pub fn declaration(&self) -> &MethodSubscription {
        self.0.declaration()
    }

    /// Accepts: the connection answers the request with a new subscription id, and the
    /// sink sends the items. [`NotAccepted`] when the request was answered meanwhile or the
    /// connection refused it (its answer then says why).
    pub async fn accept(self) -> Result<SubscriptionSink, NotAccepted> {
        let (tx, rx) = oneshot::channel();
        self.0
            .accept_with(Box::new(move |sink| drop(tx.send(sink))));
        match rx.await {
            Ok(Some(sink)) => Ok(SubscriptionSink(sink)),
            _ => Err(NotAccepted),
        }
    }

    /// Rejects: the request is answered with `error`.
    pub fn reject(self, error: ErrorObject<'static>) {
        self.0.reject(error);
    }
}

/// The serving side of one accepted subscription: sends its items, and knows when it is
/// over. Cheap to clone; the subscription ends (without an error) once every clone is
/// dropped and what was sent has gone out.
///
/// Items wait in the subscription's queue, bounded by the declaration's
/// [`max_bytes`](MethodSubscription::max_bytes) (1 MiB by default), and the driver moves
/// them into the connection while its output has room. [`send`](Self::send) waits for
/// room in the queue, so a producer follows a slow reader (a node catching up, a block
/// with a thousand logs) without losing an item; [`try_send`](Self::try_send) never waits,
/// and a full queue meets the declaration's
/// [`LagPolicy`](sansrpc::connection::subscriptions::LagPolicy): by default the connection
/// closes, as go-ethereum closes a client that cannot keep up (the others: drop the
/// oldest, or end the subscription; then `try_send` fails with [`Ended::Lagged`]). A
/// subscriber that never reads costs the server that bound and no more; while a producer
/// waits on one, the connection's write-stall timeout closes it and `send` fails.
///
/// To send one item to many subscribers, add their sinks to a
/// [`Fanout`](crate::Fanout): it is serialized once.
#[derive(Debug, Clone)]
pub struct SubscriptionSink(shared::SubscriptionSink);

impl From<SubscriptionSink> for shared::SubscriptionSink {
    fn from(sink: SubscriptionSink) -> Self {
        sink.0
    }
}

impl SubscriptionSink {
    /// The subscription's number on its connection (its id, as the declaration writes it).
    pub fn id(&self) -> u64 {
        self.0.id()
    }

    /// Queues `item` for the subscriber once its queue has room for it (at once when it
    /// has). The error says why the subscription is over.
    pub async fn send<T: Serialize + ?Sized>(&self, item: &T) -> Result<(), Ended> {
        match RawValue::from_serialize(item) {
            Ok(json) => self.send_raw(json).await,
            // The server's own bug: the core's sink ends the subscription for it.
            Err(_) => self.0.try_send(item),
        }
    }

    /// [`send`](Self::send) of an item already in JSON.
    pub async fn send_raw(&self, item: Box<RawValue>) -> Result<(), Ended> {
        let mut slot = Some(item);
        futures::future::poll_fn(|cx| self.0.poll_send(cx, &mut slot)).await
    }

    /// Queues `item` for the subscriber without waiting: a full queue meets the lag
    /// policy. The error says why the subscription is over.
    pub fn try_send<T: Serialize + ?Sized>(&self, item: &T) -> Result<(), Ended> {
        self.0.try_send(item)
    }

    /// [`try_send`](Self::try_send) of an item already in JSON.
    pub fn try_send_raw(&self, item: Box<RawValue>) -> Result<(), Ended> {
        self.0.try_send_raw(item)
    }

    /// True once the subscription is over.
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }

    /// Completes when the subscription is over (the client unsubscribed or went away, the
    /// server ended it, it overflowed), with why: race it against the producer.
    pub fn closed(&self) -> impl Future<Output = Ended> + Send + 'static {
        let sink = self.0.clone();
        futures::future::poll_fn(move |cx| sink.poll_closed(cx))
    }

    /// Ends the subscription once what is queued has gone out: with `error` (and a
    /// declaration whose [`notices`](MethodSubscription::notices) are on), a last
    /// notification carrying it tells the subscriber why; otherwise it just stops (as geth
    /// and jsonrpsee do).
    pub fn close(&self, error: Option<ErrorObject<'static>>) {
        self.0.close(error)
    }
}

/// A subscription handler's work, as the router makes it for a pending subscription.
pub(crate) type Subscribe = Box<dyn FnOnce(PendingSubscription) -> BoxFuture<()> + Send>;

/// A running subscription handler: how to stop it.
struct Task {
    abort: AbortHandle,
}

/// The subscriptions a driver serves: the core's table, and the handlers' futures. Made
/// at the first subscribe request: a connection that serves none pays nothing for it.
pub(crate) struct Served {
    /// Boxed: a connection that serves none (every plain request's) reads only whether
    /// there is one, in the driver's line it reads anyway.
    serving: Option<Box<Hosted>>,
    /// What wakes the driver's task.
    woken: Arc<Woken>,
}

struct Hosted {
    core: shared::Served,
    /// What wakes the driver's task (the hub's wake; its address tells the driver polling).
    woken: Arc<Woken>,
    /// The handlers still running (none kept once all have returned, as with a `Fanout`:
    /// a connection then holds nothing for them).
    tasks: Option<FuturesUnordered<BoxFuture<IncomingId>>>,
    by_handle: BTreeMap<IncomingId, Task>,
}

impl Hosted {
    fn new(woken: &Arc<Woken>) -> Hosted {
        let hub = shared::Hub::with_waker(Waker::from(Arc::clone(woken)));
        Hosted {
            core: shared::Served::new(hub),
            woken: Arc::clone(woken),
            tasks: None,
            by_handle: BTreeMap::new(),
        }
    }

    fn stop(&mut self, handle: IncomingId) {
        if let Some(task) = self.by_handle.remove(&handle) {
            task.abort.abort();
        }
    }
}

impl Served {
    /// Nothing served yet; the hub, made at the first subscribe request, wakes the task
    /// through `woken`.
    pub(crate) fn new(woken: Arc<Woken>) -> Served {
        Served {
            serving: None,
            woken,
        }
    }

    /// Starts the handler of a subscribe request.
    pub(crate) fn start(
        &mut self,
        handle: IncomingId,
        declaration: &MethodSubscription,
        work: Subscribe,
    ) {
        let woken = &self.woken;
        let serving = self
            .serving
            .get_or_insert_with(|| Box::new(Hosted::new(woken)));
        let pending = PendingSubscription(serving.core.pending(handle, declaration));
        let work = std::panic::AssertUnwindSafe(work(pending))
            .catch_unwind()
            .map(|_| ());
        let (abort, registration) = AbortHandle::new_pair();
        let task = Abortable::new(work, registration).map(move |_| handle);
        serving
            .tasks
            .get_or_insert_with(FuturesUnordered::new)
            .push(task.boxed());
        serving.by_handle.insert(handle, Task { abort });
    }

    /// The peer cancelled request `handle`: true when it was a subscribe still undecided
    /// (its handler is dropped and the request answered as cancelled).
    pub(crate) fn cancel(&mut self, conn: &mut Connection, handle: IncomingId) -> bool {
        let Some(serving) = &mut self.serving else {
            return false;
        };
        let Some(task) = serving.by_handle.get(&handle) else {
            return false;
        };
        if !serving.core.cancel(conn, handle) {
            return false;
        }
        task.abort.abort();
        true
    }

    /// The client unsubscribed `sub`: its sinks learn it, its handler is dropped.
    pub(crate) fn unsubscribed(&mut self, sub: u64) {
        if let Some(serving) = &mut self.serving {
            if let Some(handle) = serving.core.unsubscribed(sub) {
                serving.stop(handle);
            }
        }
    }

    /// The connection closed: every subscription is over, every handler dropped.
    pub(crate) fn clear(&mut self) {
        let Some(serving) = &mut self.serving else {
            return;
        };
        serving.core.clear();
        for (_, task) in std::mem::take(&mut serving.by_handle) {
            task.abort.abort();
        }
        serving.tasks = None;
    }

    /// True when some subscription is active: a parked driver may let its sinks write past
    /// it.
    pub(crate) fn may_bypass(&self) -> bool {
        self.serving.as_ref().is_some_and(|s| s.core.has_active())
    }

    /// See [`shared::Served::open_bypass`].
    pub(crate) fn open_bypass(&mut self, bypass: &Arc<dyn shared::Bypass>) -> bool {
        self.serving
            .as_mut()
            .is_some_and(|s| s.core.open_bypass(bypass))
    }

    /// See [`shared::Served::close_bypass`].
    pub(crate) fn close_bypass(&mut self) {
        if let Some(serving) = &mut self.serving {
            serving.core.close_bypass();
        }
    }

    /// True when some subscription's items wait for room in the connection's output.
    pub(crate) fn is_held_back(&self) -> bool {
        self.serving.as_ref().is_some_and(|s| s.core.is_held_back())
    }

    /// Runs the handlers, takes their decisions, and moves queued items into the
    /// connection while its output has room. True when anything moved.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>, conn: &mut Connection) -> bool {
        // Nothing served yet: nothing can have been handed over.
        let Some(serving) = &mut self.serving else {
            return false;
        };
        // The hub wakes the task through the driver's `Woken`, which holds the task's waker
        // since the poll began.
        if serving.core.is_idle() && serving.tasks.is_none() {
            // No handler running, nothing decided or scheduled, nothing held back: what a
            // connection serving no subscription pays on each turn of its driver.
            return false;
        }
        let mut progress = false;
        // The handlers, when some run (a connection whose handlers have all returned, as
        // with a `Fanout`, pays nothing for them).
        if let Some(tasks) = &mut serving.tasks {
            let me = Arc::as_ptr(&serving.woken) as usize;
            let outer = POLLING.with(|p| p.replace(me));
            while let Poll::Ready(Some(handle)) = tasks.poll_next_unpin(cx) {
                progress = true;
                // Finished: a subscription it accepted goes on with its sinks.
                serving.by_handle.remove(&handle);
            }
            POLLING.with(|p| p.set(outer));
            if tasks.is_empty() {
                // Given back, with the emptied node of the handles: every connection pays
                // for what it keeps.
                serving.tasks = None;
                serving.by_handle = BTreeMap::new();
            }
        }
        // Taken after the handlers ran: what they handed over while polled is seen now.
        let mut over = Vec::new();
        progress |= serving.core.poll(conn, &mut |handle| over.push(handle));
        for handle in over {
            serving.stop(handle);
        }
        progress
    }
}

// ----- the calling side -----

sansrpc_runtime::subscription_types! {
    /// A subscription to the peer, read as a [`Stream`] of raw JSON items: from
    /// [`Client::subscribe_raw`]. It ends when the server ends the subscription (after
    /// [`SubscriptionError::Ended`] when it said why), when the connection ends, and after
    /// [`unsubscribe`](Self::unsubscribe); dropping it unsubscribes.
    ///
    /// It holds at most the declaration's [`max_bytes`](MethodSubscription::max_bytes) of items
    /// unread; past that the oldest are dropped and the stream yields
    /// [`SubscriptionError::Lagged`], as it does when the server said it dropped items.
    RawSubscription(Client);

    /// A [`RawSubscription`] whose items decode as `T`: from [`Client::subscribe`].
    Subscription<T>;
}

impl RawSubscription {
    /// Unsubscribes: the server's answer (`true` when it ended the subscription). The
    /// stream is over either way.
    pub async fn unsubscribe(mut self) -> Result<bool, CallError> {
        self.reader.finish();
        let (reply, rx) = oneshot::channel();
        let call = self.client.next_key();
        self.client.command(Command::Unsubscribe {
            key: self.reader.key(),
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
        self.reader.poll_next(cx)
    }
}

impl Drop for RawSubscription {
    fn drop(&mut self) {
        if self.reader.finish() {
            let call = self.client.next_key();
            self.client.command(Command::Unsubscribe {
                key: self.reader.key(),
                call,
                reply: None,
            });
        }
    }
}

impl<T> Subscription<T> {
    /// Unsubscribes ([`RawSubscription::unsubscribe`]).
    pub async fn unsubscribe(self) -> Result<bool, CallError> {
        self.raw.unsubscribe().await
    }
}

impl<T: DeserializeOwned> Stream for Subscription<T> {
    type Item = Result<T, SubscriptionError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = Pin::new(&mut self.raw).poll_next(cx);
        next.map(|item| item.map(shared::decode))
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
        let inbox = Inbox::new(declaration.max_bytes);
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
            reader: shared::Reader::new(key, answer?, inbox),
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
