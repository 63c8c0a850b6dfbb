//! `subscriptions/listen` (2026-07-28): the [`Subscription`] a listen opens and the
//! notifications the client's router hands it.

use super::*;

/// The notifications a `subscriptions/listen` stream carries; the client's router hands
/// them (when tagged with an open subscription's id) to that [`Subscription`].
pub(super) const LISTEN_METHODS: &[&str] = &[
    notifications::TOOLS_LIST_CHANGED,
    notifications::PROMPTS_LIST_CHANGED,
    notifications::RESOURCES_LIST_CHANGED,
    notifications::RESOURCES_UPDATED,
];

/// The most notifications one [`Subscription`] holds that the application has not read
/// with [`Subscription::next`]. When another comes, the oldest held is dropped and counted;
/// `next` then reports the count first ([`ListenNotification::Lagged`]) and goes on with
/// the newest held. The server is not slowed down, nor the connection's other calls.
pub const MAX_QUEUED_NOTIFICATIONS: usize = 256;

/// One notification of a [`Subscription`], from [`Subscription::next`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ListenNotification {
    /// `notifications/tools/list_changed`: list the tools again.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`: list the prompts again.
    PromptsListChanged,
    /// `notifications/resources/list_changed`: list the resources again.
    ResourcesListChanged,
    /// `notifications/resources/updated`: read the resource again.
    ResourceUpdated(ResourceUpdatedNotificationParams),
    /// A notification tagged with this subscription that has no variant above (or whose
    /// params do not decode): its method and params (`{}` when it had none).
    Other {
        /// The method.
        method: String,
        /// The params, `_meta` included.
        params: Value,
    },
    /// The application did not read for a while: this many notifications, the oldest,
    /// were dropped (past [`MAX_QUEUED_NOTIFICATIONS`]) just before the next one `next`
    /// gives. List (or read) again what the subscription watches.
    Lagged(u64),
}

impl ListenNotification {
    /// Its method (`""` for [`Lagged`](Self::Lagged), which the server did not send).
    pub fn method(&self) -> &str {
        match self {
            ListenNotification::ToolsListChanged => notifications::TOOLS_LIST_CHANGED,
            ListenNotification::PromptsListChanged => notifications::PROMPTS_LIST_CHANGED,
            ListenNotification::ResourcesListChanged => notifications::RESOURCES_LIST_CHANGED,
            ListenNotification::ResourceUpdated(_) => notifications::RESOURCES_UPDATED,
            ListenNotification::Other { method, .. } => method,
            ListenNotification::Lagged(_) => "",
        }
    }

    /// The notification `method` with `params` (`text` as JSON).
    fn decode(method: &str, text: &str, params: &Value) -> Self {
        match method {
            notifications::TOOLS_LIST_CHANGED => ListenNotification::ToolsListChanged,
            notifications::PROMPTS_LIST_CHANGED => ListenNotification::PromptsListChanged,
            notifications::RESOURCES_LIST_CHANGED => ListenNotification::ResourcesListChanged,
            notifications::RESOURCES_UPDATED => match serde_json::from_str(text) {
                Ok(updated) => ListenNotification::ResourceUpdated(updated),
                Err(_) => ListenNotification::Other {
                    method: method.to_owned(),
                    params: params.clone(),
                },
            },
            _ => ListenNotification::Other {
                method: method.to_owned(),
                params: params.clone(),
            },
        }
    }
}

/// What one open subscription has received and the application not yet read.
#[derive(Default)]
struct Queue {
    held: VecDeque<ListenNotification>,
    /// Dropped since `next` last reported it.
    lagged: u64,
    waker: Option<Waker>,
}

/// Where the one `subscriptions/listen` being opened is.
#[derive(Default)]
enum Slot {
    /// None is being opened.
    #[default]
    Free,
    /// A `listen` waits for its acknowledgement; then, its id and the filter honoured.
    Waiting {
        waker: Option<Waker>,
        acknowledged: Option<(RequestId, SubscriptionFilter)>,
    },
    /// A `listen` was dropped before its acknowledgement: its request, cancelled (dropped)
    /// when the acknowledgement comes, or forgotten when the request ends first.
    Abandoned(PendingCall),
}

#[derive(Default)]
struct Hub {
    open: HashMap<RequestId, Queue>,
    slot: Slot,
    /// `listen` calls waiting for the slot.
    waiting: Vec<Waker>,
    /// What takes the notifications of the listen streams ([`Listens::take`]), set by the
    /// first `listen` ([`Listens::poll_slot`]): before one, no subscription is open or
    /// being opened and they are dropped; a program that never listens carries none of
    /// their decoding (7 KB of a browser page).
    hear: Option<Hear>,
}

/// [`Listens::hear`], as [`Hub::hear`] holds it.
type Hear = fn(&Listens, &str, &str, Option<&Value>);

impl Hub {
    fn free_slot(&mut self) {
        self.slot = Slot::Free;
        self.waiting.drain(..).for_each(Waker::wake);
    }
}

/// The open subscriptions of the clients of one builder, shared with its router.
#[derive(Clone, Default)]
pub(super) struct Listens(Arc<Mutex<Hub>>);

impl fmt::Debug for Listens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listens")
            .field("open", &self.lock().open.len())
            .finish()
    }
}

/// The subscription id in a notification's `_meta`: a string, or an integer that fits an
/// `i64`, as a [`RequestId`] reads it (taken from the `Value` by hand, so no decoder is
/// instantiated for `Value`).
fn subscription_id(params: &Value) -> Option<RequestId> {
    match params
        .get("_meta")?
        .get("io.modelcontextprotocol/subscriptionId")?
    {
        Value::String(s) => Some(RequestId::String(s.clone())),
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    }
}

impl Listens {
    fn lock(&self) -> MutexGuard<'_, Hub> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A notification of the listen streams (`method`, its params as `text`, and as a
    /// `Value` for a listen method): to [`Listens::hear`] once a `listen` was made.
    pub(super) fn take(&self, method: &str, text: &str, params: Option<&Value>) {
        let hear = self.lock().hear;
        if let Some(hear) = hear {
            hear(self, method, text, params);
        }
    }

    /// What [`take`](Self::take) hands on: `notifications/subscriptions/acknowledged`
    /// (without a `Value`), or a notification a listen stream carries.
    fn hear(&self, method: &str, text: &str, params: Option<&Value>) {
        match params {
            None => self.acknowledged(text),
            Some(params) => self.deliver(method, text, params),
        }
    }

    /// Ready once this caller holds the slot (then [`Slot::Waiting`]).
    pub(super) fn poll_slot(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut hub = self.lock();
        hub.hear = Some(Listens::hear);
        let abandoned_ended = match &mut hub.slot {
            Slot::Free => true,
            // Its request ended (answered, refused, closed) before an acknowledgement came:
            // none comes now.
            Slot::Abandoned(call) => Pin::new(call).poll(cx).is_ready(),
            Slot::Waiting { .. } => false,
        };
        if abandoned_ended {
            hub.slot = Slot::Waiting {
                waker: None,
                acknowledged: None,
            };
            return Poll::Ready(());
        }
        hub.waiting.push(cx.waker().clone());
        Poll::Pending
    }

    /// `notifications/subscriptions/acknowledged` with its params' text: the one being
    /// opened is acknowledged. One nobody waits for is ignored.
    fn acknowledged(&self, params: &str) {
        let Ok(ack) = serde_json::from_str::<SubscriptionsAcknowledgedNotificationParams>(params)
        else {
            return;
        };
        let Some(id) = ack.meta.and_then(|m| m.subscription_id) else {
            return;
        };
        let mut guard = self.lock();
        let hub = &mut *guard;
        let known = hub.open.contains_key(&id);
        let cancelled = match &mut hub.slot {
            Slot::Waiting {
                waker,
                acknowledged: acknowledged @ None,
            } if !known => {
                *acknowledged = Some((id.clone(), ack.notifications));
                if let Some(waker) = waker.take() {
                    waker.wake();
                }
                // Held from now on: what comes next on the stream is kept.
                hub.open.insert(id, Queue::default());
                return;
            }
            Slot::Abandoned(_) => match std::mem::take(&mut hub.slot) {
                Slot::Abandoned(call) => call,
                _ => return,
            },
            _ => return,
        };
        hub.free_slot();
        drop(guard);
        // Cancels the abandoned listen request (`notifications/cancelled`).
        drop(cancelled);
    }

    /// A notification a listen stream carries (its params as `text` and as `params`): held
    /// for its subscription, if it is open.
    fn deliver(&self, method: &str, text: &str, params: &Value) {
        let Some(id) = subscription_id(params) else {
            return;
        };
        let mut hub = self.lock();
        let Some(queue) = hub.open.get_mut(&id) else {
            return;
        };
        if queue.held.len() >= MAX_QUEUED_NOTIFICATIONS {
            queue.held.pop_front();
            queue.lagged += 1;
        }
        queue
            .held
            .push_back(ListenNotification::decode(method, text, params));
        if let Some(waker) = queue.waker.take() {
            waker.wake();
        }
    }

    /// The next notification held for `id`; `cx` is woken when one comes.
    pub(super) fn poll_held(
        &self,
        id: &RequestId,
        cx: &mut Context<'_>,
    ) -> Option<ListenNotification> {
        let mut hub = self.lock();
        let queue = hub.open.get_mut(id)?;
        if queue.lagged > 0 {
            return Some(ListenNotification::Lagged(std::mem::take(
                &mut queue.lagged,
            )));
        }
        let next = queue.held.pop_front();
        if next.is_none() {
            queue.waker = Some(cx.waker().clone());
        }
        next
    }
}

/// A `subscriptions/listen` being opened; dropped before its acknowledgement, it leaves its
/// request to be cancelled once that comes ([`Slot::Abandoned`]).
pub(super) struct Opening {
    pub(super) listens: Listens,
    pub(super) call: Option<PendingCall>,
    /// The slot is still this opening's.
    pub(super) owns: bool,
}

impl Opening {
    pub(super) fn poll_acknowledged(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(RequestId, SubscriptionFilter), ClientError>> {
        let mut hub = self.listens.lock();
        let Slot::Waiting {
            waker,
            acknowledged,
        } = &mut hub.slot
        else {
            self.owns = false;
            // Not reached: the slot stays this opening's until it ends.
            return Poll::Ready(Err(ClientError::Unacknowledged));
        };
        if let Some(acknowledged) = acknowledged.take() {
            hub.free_slot();
            self.owns = false;
            return Poll::Ready(Ok(acknowledged));
        }
        *waker = Some(cx.waker().clone());
        // The router takes an acknowledgement before the answer that follows it reaches
        // the call: an answered call had none.
        let Some(call) = &mut self.call else {
            hub.free_slot();
            self.owns = false;
            return Poll::Ready(Err(ClientError::Unacknowledged));
        };
        let Poll::Ready(answer) = Pin::new(call).poll(cx) else {
            return Poll::Pending;
        };
        self.call = None;
        hub.free_slot();
        self.owns = false;
        Poll::Ready(match answer {
            Ok(_) => Err(ClientError::Unacknowledged),
            Err(e) => Err(ClientError::Call(e)),
        })
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        if !self.owns {
            // Acknowledged (and handed on) or answered: nothing left here.
            return;
        }
        let mut hub = self.listens.lock();
        let Slot::Waiting { acknowledged, .. } = &mut hub.slot else {
            return;
        };
        if let Some((id, _)) = acknowledged.take() {
            // Acknowledged, but the `listen` was dropped before it saw it.
            hub.open.remove(&id);
            hub.free_slot();
            drop(hub);
            drop(self.call.take());
            return;
        }
        match self.call.take() {
            Some(call) => hub.slot = Slot::Abandoned(call),
            None => hub.free_slot(),
        }
    }
}

/// An open `subscriptions/listen` request (2026-07-28), from [`McpClient::listen`]: the
/// notifications the server sends for it, in order, with [`next`](Self::next).
///
/// It holds at most [`MAX_QUEUED_NOTIFICATIONS`] unread notifications (past that the oldest
/// are dropped and reported, see [`ListenNotification::Lagged`]). Dropping it, or
/// [`cancel`](Self::cancel), cancels the listen request (`notifications/cancelled`; over
/// Streamable HTTP the transport closes the request's stream), and the server forgets the
/// subscription.
pub struct Subscription {
    pub(super) id: RequestId,
    pub(super) filter: SubscriptionFilter,
    /// The listen request, until it is answered or the connection ends.
    pub(super) call: Option<PendingCall>,
    pub(super) listens: Listens,
    /// Dropped notifications, in all.
    pub(super) lagged: u64,
    /// Why the subscription ended, when it did otherwise than by the server's `complete`.
    pub(super) error: Option<ClientError>,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("filter", &self.filter)
            .field("open", &self.call.is_some())
            .finish()
    }
}

impl Subscription {
    /// The subscription id: the listen request's id, which tags every notification of it.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// What the server acknowledged it will send: the part of the filter asked for that it
    /// honours (a kind it does not offer is left out).
    pub fn filter(&self) -> &SubscriptionFilter {
        &self.filter
    }

    /// The notifications dropped so far because the application did not read them in time
    /// (each reported once by [`next`](Self::next) as [`ListenNotification::Lagged`]).
    pub fn lagged(&self) -> u64 {
        self.lagged
    }

    /// True once the listen request has ended ([`next`](Self::next) then gives what is
    /// still held, then `None`).
    pub fn is_ended(&self) -> bool {
        self.call.is_none()
    }

    /// Why the subscription ended, once [`next`](Self::next) said `None`: `None` when the
    /// server ended it (a `complete` answer, as
    /// [`Server::end_subscriptions`](crate::server::Server::end_subscriptions) sends);
    /// [`ClientError::Call`] when the connection ended or the server answered with an
    /// error; [`ClientError::Decode`] when its answer was not a listen result.
    pub fn error(&self) -> Option<&ClientError> {
        self.error.as_ref()
    }

    /// The next notification of this subscription, in the order the server sent them;
    /// `None` once the listen request has ended (the server answered it, or the connection
    /// ended: see [`error`](Self::error)) and everything received before was read. Cancel
    /// safe: dropping the future loses nothing.
    pub async fn next(&mut self) -> Option<ListenNotification> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// [`next`](Self::next) as a poll function (for a [`Stream`] of your own: `None` once
    /// ended).
    ///
    /// [`Stream`]: https://docs.rs/futures/latest/futures/stream/trait.Stream.html
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<ListenNotification>> {
        if let Some(next) = self.listens.poll_held(&self.id, cx) {
            if let ListenNotification::Lagged(n) = next {
                self.lagged += n;
            }
            return Poll::Ready(Some(next));
        }
        let Some(call) = &mut self.call else {
            self.listens.lock().open.remove(&self.id);
            return Poll::Ready(None);
        };
        let Poll::Ready(answer) = Pin::new(call).poll(cx) else {
            return Poll::Pending;
        };
        self.call = None;
        self.error = match answer {
            Ok(result) => {
                decode::<SubscriptionsListenResult>(methods::SUBSCRIPTIONS_LISTEN, result.get())
                    .err()
            }
            Err(e) => Some(ClientError::Call(e)),
        };
        // Everything the stream carried came before its answer: read what is still held.
        self.poll_next(cx)
    }

    /// Cancels the subscription: the same as dropping it. The cancellation is queued at
    /// once; the server forgets the subscription when it reads it.
    pub fn cancel(self) {
        drop(self);
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.listens.lock().open.remove(&self.id);
        // Dropping the pending request cancels it (`notifications/cancelled`).
        drop(self.call.take());
    }
}
