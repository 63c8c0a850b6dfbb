//! Method subscriptions in the Ethereum shape: a subscribe method answers a subscription
//! id, notifications carry it with each item, an unsubscribe method ends it. Ethereum
//! (`eth_subscribe` / `eth_subscription` / `eth_unsubscribe`), Substrate
//! (`chain_subscribeNewHeads` / `chain_newHead` / `chain_unsubscribeNewHeads`), Solana
//! (`accountSubscribe` / `accountNotification` / `accountUnsubscribe`) and jsonrpsee's
//! `#[subscription]` all speak it.
//!
//! ```text
//! → {"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}
//! ← {"jsonrpc":"2.0","id":1,"result":"0x1"}
//! ← {"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x1","result":{"number":"0x10"}}}
//! → {"jsonrpc":"2.0","id":2,"method":"eth_unsubscribe","params":["0x1"]}
//! ← {"jsonrpc":"2.0","id":2,"result":true}
//! ```
//!
//! # The server side
//! A [`MethodSubscription`] declares the three names, the notification's field names and
//! the id style. The subscribe request reaches the application like any request; it
//! accepts with [`Connection::accept_subscription`](super::Connection::accept_subscription)
//! (which answers the id) or answers an error. From then on the connection answers the
//! unsubscribe method itself (`true`, or `false` for an id it does not know) and tells the
//! driver ([`Event::Unsubscribed`](super::Event::Unsubscribed)); items go out with
//! [`Connection::send_item`](super::Connection::send_item), a lag notice (with notices on)
//! with [`Connection::send_popped`](super::Connection::send_popped), and the server ends one with
//! [`Connection::end_subscription`](super::Connection::end_subscription). Closing the
//! connection ends them all.
//!
//! Items wait in a [`SubscriptionQueue`] between the producer and the connection, one per
//! subscription, bounded by bytes, with the declaration's [`LagPolicy`]: a subscriber that
//! stops reading never grows the server's memory past it. The driver keeps the queue
//! behind its runtime's lock and moves items into the connection while the connection's
//! output has room. Every notification is `{"<id>": id, "<result>": item}` unless the
//! declaration opts in to sansrpc's notices ([`MethodSubscription::notices`]): Ethereum's
//! clients read nothing else.
//!
//! # The client side
//! [`ClientSubscriptions`] routes a client's notifications: a subscribe call registered
//! under the caller's key, its answer's id bound to it, every notification of the
//! declaration then read ([`Notice`]) and handed to that key. The id is bound by the
//! driver when the answer arrives, before any later notification is read, so none is
//! lost to a race with the caller.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::error::ErrorObject;
use crate::id::Id;
use crate::raw::RawValue;
use crate::wire::SortedDeque;

/// How a server writes its subscription ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum IdStyle {
    /// A hex string: `"0x1f"` (Ethereum).
    #[default]
    Hex,
    /// A decimal string: `"31"` (Substrate, jsonrpsee's string ids).
    String,
    /// A number: `31` (Solana).
    Number,
}

/// What happens when a subscriber reads slower than items come and its queue is full
/// ([`MethodSubscription::max_bytes`]). A producer that waits for room (the adapters' async
/// `send`, the blocking one) never meets it: it follows the reader instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum LagPolicy {
    /// Close the subscriber's connection, as go-ethereum does with a client whose
    /// notification queue overflows: the client sees its connection end (every client
    /// library reports that, and most reconnect and subscribe again), never a notification
    /// it cannot read, and never a silent gap. What was written before stays written. The
    /// default: Ethereum, Substrate and Solana clients read every notification's `result`.
    #[default]
    Disconnect,
    /// Drop the oldest queued items to make room. With the declaration's
    /// [`notices`](MethodSubscription::notices) on, the subscriber is told how many it
    /// missed before its next item (a notification whose params carry `"lagged": n` in
    /// place of the result; sansrpc's clients surface it as a lag); without, the items are
    /// dropped silently (a gap in the numbers of blocks, say).
    DropOldest,
    /// End the subscription after the items queued before, as if the client had
    /// unsubscribed: nothing more is sent for it. With the declaration's
    /// [`notices`](MethodSubscription::notices) on, a last notification whose params carry
    /// an `"error"` ([`code::SUBSCRIPTION_LAGGED`](crate::error::code::SUBSCRIPTION_LAGGED))
    /// in place of the result says why; without, it just stops (what an Ethereum client
    /// reads after `eth_unsubscribe`).
    Close,
}

/// Bytes a queued item is charged beyond its JSON (its pointer, counts, the queue's slot):
/// a flood of tiny items meets the byte bound as surely as a few large ones.
pub const ITEM_OVERHEAD: usize = 64;

/// What a subscription's notification ends with, after its item: the params object's and
/// the message's closing braces.
pub(crate) const ITEM_TAIL: &[u8] = b"}}";

/// The default bound of each subscription's queue: 1 MiB of items.
pub const DEFAULT_MAX_BYTES: usize = 1 << 20;

/// The declaration of one kind of method subscription.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct MethodSubscription {
    /// The method that subscribes (`eth_subscribe`).
    pub subscribe: &'static str,
    /// The method of the notifications (`eth_subscription`).
    pub notification: &'static str,
    /// The method that ends a subscription (`eth_unsubscribe`).
    pub unsubscribe: &'static str,
    /// The notification's member naming the subscription (`subscription`).
    pub id_field: &'static str,
    /// The notification's member holding the item (`result`).
    pub result_field: &'static str,
    /// How ids are written.
    pub ids: IdStyle,
    /// Most bytes of items queued per subscription between its producer and the connection
    /// (default [`DEFAULT_MAX_BYTES`], 1 MiB), each item counted as its JSON plus
    /// [`ITEM_OVERHEAD`]; one item larger than it is queued alone. A client's reader holds
    /// as much unread.
    pub max_bytes: usize,
    /// What a full queue does (default [`LagPolicy::Disconnect`]).
    pub lag: LagPolicy,
    /// Whether notifications may carry sansrpc's notices besides items: `"lagged": n`
    /// ([`LagPolicy::DropOldest`]) and the `"error"` that ends a subscription
    /// ([`LagPolicy::Close`], or the server's close with an error). Off by default: every
    /// notification is then `{"<id>": id, "<result>": item}`, the only shape Ethereum,
    /// Substrate and Solana clients know (ethers and viem break on anything else).
    pub notices: bool,
}

impl MethodSubscription {
    /// A declaration with these three methods, the members `subscription` and `result`,
    /// string ids, 1 MiB per queue, the connection closed when it overflows
    /// ([`LagPolicy::Disconnect`]), no notices besides items.
    pub const fn new(
        subscribe: &'static str,
        notification: &'static str,
        unsubscribe: &'static str,
    ) -> Self {
        MethodSubscription {
            subscribe,
            notification,
            unsubscribe,
            id_field: "subscription",
            result_field: "result",
            ids: IdStyle::String,
            max_bytes: DEFAULT_MAX_BYTES,
            lag: LagPolicy::Disconnect,
            notices: false,
        }
    }

    /// Ethereum's: `eth_subscribe` / `eth_subscription` / `eth_unsubscribe`, hex ids, the
    /// defaults of [`new`](Self::new) (as geth: a client that cannot keep up is
    /// disconnected).
    pub const fn ethereum() -> Self {
        MethodSubscription::new("eth_subscribe", "eth_subscription", "eth_unsubscribe")
            .with_ids(IdStyle::Hex)
    }

    /// These ids.
    pub const fn with_ids(mut self, ids: IdStyle) -> Self {
        self.ids = ids;
        self
    }

    /// These notification members for the subscription id and the item.
    pub const fn with_fields(mut self, id_field: &'static str, result_field: &'static str) -> Self {
        self.id_field = id_field;
        self.result_field = result_field;
        self
    }

    /// This bound, in bytes, of each subscription's queue ([`max_bytes`](Self::max_bytes)).
    pub const fn with_capacity(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// This lag policy.
    pub const fn with_lag(mut self, lag: LagPolicy) -> Self {
        self.lag = lag;
        self
    }

    /// Whether sansrpc's notices (`lagged`, `error`) may go out
    /// ([`notices`](Self::notices)): for clients that read them (sansrpc's own), never for
    /// Ethereum's.
    pub const fn with_notices(mut self, notices: bool) -> Self {
        self.notices = notices;
        self
    }

    /// Writes the id of subscription `sub` as JSON, in this declaration's style.
    pub fn write_id(&self, sub: u64, out: &mut Vec<u8>) {
        let mut digits = itoa::Buffer::new();
        match self.ids {
            IdStyle::Hex => {
                out.extend_from_slice(b"\"0x");
                write_hex(sub, out);
                out.push(b'"');
            }
            IdStyle::String => {
                out.push(b'"');
                out.extend_from_slice(digits.format(sub).as_bytes());
                out.push(b'"');
            }
            IdStyle::Number => out.extend_from_slice(digits.format(sub).as_bytes()),
        }
    }

    /// The subscription number an id names in this declaration's style, if it is one.
    pub fn read_id(&self, id: &Id<'_>) -> Option<u64> {
        match self.ids {
            IdStyle::Number => id.as_u64(),
            IdStyle::String => id.as_str()?.parse().ok(),
            IdStyle::Hex => {
                let text = id.as_str()?;
                let hex = text
                    .strip_prefix("0x")
                    .or_else(|| text.strip_prefix("0X"))?;
                if hex.is_empty() || hex.len() > 16 {
                    return None;
                }
                u64::from_str_radix(hex, 16).ok()
            }
        }
    }

    /// The params of a lag notice: `{"<id>": id, "lagged": n}`.
    pub(crate) fn write_lagged(&self, sub: u64, dropped: u64, out: &mut Vec<u8>) {
        self.write_params(sub, out, |out| {
            out.extend_from_slice(b"\"lagged\":");
            out.extend_from_slice(itoa::Buffer::new().format(dropped).as_bytes());
        });
    }

    /// The params of the notification that ends a subscription with an error:
    /// `{"<id>": id, "error": {...}}`.
    pub(crate) fn write_error(&self, sub: u64, error: &ErrorObject<'_>, out: &mut Vec<u8>) {
        self.write_params(sub, out, |out| {
            out.extend_from_slice(b"\"error\":");
            error.write_json(out);
        });
    }

    fn write_params(&self, sub: u64, out: &mut Vec<u8>, rest: impl FnOnce(&mut Vec<u8>)) {
        out.push(b'{');
        write_key(self.id_field, out);
        self.write_id(sub, out);
        out.push(b',');
        rest(out);
        out.push(b'}');
    }
}

/// `"key":`, the key being one of the declaration's `&'static str` names (escaped, in case).
fn write_key(key: &str, out: &mut Vec<u8>) {
    crate::json::write_str(out, key);
    out.push(b':');
}

fn write_hex(mut n: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 16];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b"0123456789abcdef"[(n & 0xf) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The error a subscription ended with under [`LagPolicy::Close`].
pub(crate) fn lagged_error() -> ErrorObject<'static> {
    ErrorObject::fixed(
        crate::error::code::SUBSCRIPTION_LAGGED,
        "Subscription closed: the subscriber read too slowly",
    )
}

/// Drivers move queued items into the connection while less than this much of its output
/// waits to be written (64 KiB): a subscriber that reads slowly meets its queue's bound and
/// lag policy, not the connection's whole output buffer of stale items.
pub const OUTPUT_ROOM: usize = 64 * 1024;

/// The answer to a subscribe request over a transport that cannot push (plain HTTP,
/// [`Config::push`](crate::Config::push) false): `-32601`, as geth answers it.
pub(crate) fn no_push_error() -> ErrorObject<'static> {
    ErrorObject::fixed(
        crate::error::code::METHOD_NOT_FOUND,
        "Subscriptions are not supported over plain HTTP: subscribe over WebSocket, TCP, IPC or stdio",
    )
}

/// What [`SubscriptionQueue::push`] did with an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pushed {
    /// Queued.
    Queued,
    /// Queued after dropping the oldest items (`dropped`, counted since the last lag
    /// notice went out, or since the queue began when notices are off) under
    /// [`LagPolicy::DropOldest`].
    Lagged {
        /// Items dropped and not yet told.
        dropped: u64,
    },
    /// The queue was full under [`LagPolicy::Close`] or [`LagPolicy::Disconnect`]: the
    /// subscription is over (the driver ends it, or closes the connection, once the items
    /// queued before have been handed out). Nothing was queued.
    Overflowed,
    /// The subscription is over (unsubscribed, ended, the connection closed): nothing was
    /// queued.
    Closed,
}

/// What [`SubscriptionQueue::pop`] hands out, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Popped<T = Box<RawValue>> {
    /// Tell the subscriber it missed this many items (before the next item); only when the
    /// declaration's [`notices`](MethodSubscription::notices) are on.
    Lagged(u64),
    /// The next item.
    Item(T),
    /// The subscription overflowed under [`LagPolicy::Close`] or
    /// [`LagPolicy::Disconnect`]: end it, or close the connection
    /// ([`Connection::send_popped`](super::Connection::send_popped) does either), after the
    /// items queued before, which are handed out first.
    Overflowed,
}

/// One subscription's items between its producer and the connection: bounded by bytes
/// ([`MethodSubscription::max_bytes`], each item charged [`ITEM_OVERHEAD`] beyond its
/// JSON), with the declaration's lag policy. No lock inside: a driver keeps it behind its
/// runtime's (the producer pushes, the connection's driver pops while output has room).
///
/// Items are anything that holds JSON (`T: AsRef<RawValue>`): `Box<RawValue>`, or a
/// reference-counted one shared by the queues of many subscribers (fan-out).
#[derive(Debug)]
pub struct SubscriptionQueue<T = Box<RawValue>> {
    items: Fifo<T>,
    /// Bytes charged for the items queued.
    bytes: usize,
    max_bytes: usize,
    lag: LagPolicy,
    notices: bool,
    /// Items dropped since the last lag notice was handed out.
    dropped: u64,
    overflowed: bool,
    closed: bool,
}

/// A first-in first-out queue that holds its oldest item in itself while it is the only
/// one, the others in a deque behind it: what a subscriber's queue needs, for the drivers
/// too. A fan-out's subscriber has one item at a time, and a deque's buffer would be one
/// more cache line written by the producer's push and read again by the driver's pop, cold
/// with many subscribers.
#[derive(Debug)]
pub struct Fifo<T> {
    /// The oldest item, when it is not in `rest`; none while `rest` holds any other.
    first: Option<T>,
    rest: VecDeque<T>,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo::new()
    }
}

impl<T> Fifo<T> {
    /// An empty queue (no allocation).
    pub const fn new() -> Self {
        Fifo {
            first: None,
            rest: VecDeque::new(),
        }
    }

    /// True when it holds no item.
    pub fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }

    /// Items held.
    pub fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    /// Adds `item` last.
    pub fn push_back(&mut self, item: T) {
        if self.is_empty() {
            self.first = Some(item);
        } else {
            self.rest.push_back(item);
        }
    }

    /// Puts `item` first (one taken out and handed back).
    pub fn push_front(&mut self, item: T) {
        if let Some(first) = self.first.replace(item) {
            self.rest.push_front(first);
        }
    }

    /// Takes the oldest item.
    pub fn pop_front(&mut self) -> Option<T> {
        self.first.take().or_else(|| self.rest.pop_front())
    }
}

/// What an item of `size` bytes of JSON is charged in a queue.
pub const fn charge(size: usize) -> usize {
    size.saturating_add(ITEM_OVERHEAD)
}

impl<T: AsRef<RawValue>> SubscriptionQueue<T> {
    /// An empty queue with `declaration`'s bound and policy.
    pub fn new(declaration: &MethodSubscription) -> Self {
        SubscriptionQueue {
            items: Fifo::new(),
            bytes: 0,
            max_bytes: declaration.max_bytes,
            lag: declaration.lag,
            notices: declaration.notices,
            dropped: 0,
            overflowed: false,
            closed: false,
        }
    }

    fn size(item: &T) -> usize {
        charge(item.as_ref().get().len())
    }

    /// True when an item of `size` bytes of JSON would be queued now without meeting the
    /// bound (the queue is empty, or it fits): what a producer that waits for room waits
    /// for. Also true once the subscription is over (a push then says so).
    pub fn has_room(&self, size: usize) -> bool {
        self.closed
            || self.overflowed
            || self.items.is_empty()
            || self.bytes.saturating_add(charge(size)) <= self.max_bytes
    }

    /// Queues `item` (see [`Pushed`]).
    pub fn push(&mut self, item: T) -> Pushed {
        if self.closed || self.overflowed {
            return Pushed::Closed;
        }
        let size = Self::size(&item);
        let full = |q: &Self| !q.items.is_empty() && q.bytes.saturating_add(size) > q.max_bytes;
        if full(self) {
            if self.lag != LagPolicy::DropOldest {
                self.overflowed = true;
                return Pushed::Overflowed;
            }
            while full(self) {
                if let Some(old) = self.items.pop_front() {
                    self.bytes -= Self::size(&old);
                    self.dropped += 1;
                }
            }
        }
        self.bytes += size;
        self.items.push_back(item);
        match self.dropped {
            0 => Pushed::Queued,
            dropped => Pushed::Lagged { dropped },
        }
    }

    /// The next thing to send: a lag notice first when items were dropped (and notices
    /// are on), then the items in order, then the overflow; `None` when there is nothing
    /// (or it is closed).
    pub fn pop(&mut self) -> Option<Popped<T>> {
        if self.closed {
            return None;
        }
        if self.dropped > 0 {
            let dropped = core::mem::take(&mut self.dropped);
            if self.notices {
                return Some(Popped::Lagged(dropped));
            }
        }
        if let Some(item) = self.items.pop_front() {
            self.bytes -= Self::size(&item);
            return Some(Popped::Item(item));
        }
        if self.overflowed {
            self.closed = true;
            return Some(Popped::Overflowed);
        }
        None
    }

    /// Puts back what [`pop`](Self::pop) handed out and the connection could not take
    /// ([`SendError::OutputFull`](crate::connection::SendError::OutputFull)): it is handed
    /// out first next time.
    pub fn restore(&mut self, popped: Popped<T>) {
        match popped {
            Popped::Lagged(n) => self.dropped += n,
            Popped::Item(item) => {
                self.bytes += Self::size(&item);
                self.items.push_front(item);
            }
            Popped::Overflowed => {
                self.overflowed = true;
                self.closed = false;
            }
        }
    }

    /// The subscription is over: nothing more is queued or handed out, and what is queued
    /// is freed.
    pub fn close(&mut self) {
        self.closed = true;
        self.items = Fifo::new();
        self.bytes = 0;
    }

    /// True once the subscription is over ([`close`](Self::close)d, or past its overflow).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Items queued.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when nothing is queued (no item, no lag notice, no overflow).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && (self.dropped == 0 || !self.notices) && !self.overflowed
    }

    /// Bytes charged for the items queued (their JSON plus [`ITEM_OVERHEAD`] each): at
    /// most [`max_bytes`](MethodSubscription::max_bytes), or one item's.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// A declaration's notification around its items, written once: `head` up to the
/// subscription id, `mid` between the id and the item, then the item and `}}`.
#[derive(Debug, Default)]
pub(crate) struct Shape {
    /// `{"jsonrpc":"2.0","method":"<notification>","params":{"<id_field>":`
    pub head: Vec<u8>,
    /// `,"<result_field>":`
    pub mid: Vec<u8>,
}

impl Shape {
    fn of(declaration: &MethodSubscription) -> Shape {
        let mut head = Vec::new();
        crate::message::write_call_with(
            &mut head,
            crate::message::Version::V2,
            None,
            declaration.notification,
            Some(|out: &mut Vec<u8>| {
                out.push(b'{');
                write_key(declaration.id_field, out);
            }),
        );
        // Without the call's closing brace: the params go on after it.
        head.pop();
        let mut mid = Vec::from(&b","[..]);
        write_key(declaration.result_field, &mut mid);
        Shape { head, mid }
    }
}

/// A map kept as a sorted vector, for the drivers too: what a connection's few subscriptions need (a B-tree's
/// node holds eleven entries however many are in it, a cost every connection pays).
/// Lookups are binary searches; keys that grow (subscription numbers, request handles) are
/// inserted at the end.
#[derive(Debug, Clone)]
pub struct VecMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        VecMap(Vec::new())
    }
}

impl<K: Ord + Copy, V> VecMap<K, V> {
    fn find(&self, key: &K) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.cmp(key))
    }

    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.find(key).ok().map(|at| &self.0[at].1)
    }

    /// The value of `key`, to change.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        match self.find(key) {
            Ok(at) => Some(&mut self.0[at].1),
            Err(_) => None,
        }
    }

    /// True when `key` is in.
    pub fn contains_key(&self, key: &K) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key`'s value; the one it replaces.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(at) => Some(core::mem::replace(&mut self.0[at].1, value)),
            Err(at) => {
                // One entry's room at first, then doubling: most connections keep one.
                if self.0.len() == self.0.capacity() {
                    self.0.reserve_exact(self.0.len().max(1));
                }
                self.0.insert(at, (key, value));
                None
            }
        }
    }

    /// Takes `key` out; its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let at = self.find(key).ok()?;
        let (_, value) = self.0.remove(at);
        if self.0.is_empty() {
            // A connection whose subscriptions are over holds nothing for them.
            self.0 = Vec::new();
        }
        Some(value)
    }

    /// The smallest key.
    pub fn first_key(&self) -> Option<K> {
        self.0.first().map(|(k, _)| *k)
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Empties it, and gives its memory back.
    pub fn clear(&mut self) {
        self.0 = Vec::new();
    }
}

impl<K, V> IntoIterator for VecMap<K, V> {
    type Item = (K, V);
    type IntoIter = alloc::vec::IntoIter<(K, V)>;

    /// Its entries, in key order.
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// Longest notification prefix (`head`, id, `mid` of its [`Shape`]) an [`Active`] keeps
/// inline (an [`Active`] is then 128 bytes): Ethereum's `eth_subscription` with the
/// longest id takes 102.
const PREFIX: usize = 117;

/// One active subscription: its declaration's index, and what each of its notifications
/// starts with (its [`Shape`]'s head, its id as JSON, the shape's mid), written once, so
/// that an item is sent in three pieces from one place; a prefix too long for it keeps the
/// id alone, and the pieces come from the shape.
#[derive(Debug, Clone)]
pub(crate) struct Active {
    pub decl: usize,
    bytes: [u8; PREFIX],
    /// Where the id is in `bytes`, and its length.
    id_at: u8,
    id_len: u8,
    /// The prefix's length in `bytes`; 0 when only the id is kept.
    prefix_len: u8,
}

impl Active {
    /// Declaration `decl`'s subscription whose id is the JSON `id` (at most 22 bytes: a
    /// quoted decimal `u64`), its notifications shaped by `shape`.
    pub fn new(decl: usize, shape: &Shape, id: &[u8]) -> Active {
        let mut bytes = [0; PREFIX];
        let id = &id[..id.len().min(24)];
        let whole = shape.head.len() + id.len() + shape.mid.len();
        let (id_at, prefix_len) = if whole <= PREFIX {
            bytes[..shape.head.len()].copy_from_slice(&shape.head);
            let mid_at = shape.head.len() + id.len();
            bytes[mid_at..whole].copy_from_slice(&shape.mid);
            (shape.head.len(), whole)
        } else {
            (0, 0)
        };
        bytes[id_at..id_at + id.len()].copy_from_slice(id);
        Active {
            decl,
            bytes,
            id_at: id_at as u8,
            id_len: id.len() as u8,
            prefix_len: prefix_len as u8,
        }
    }

    /// The id, as JSON.
    pub fn id(&self) -> &[u8] {
        let at = usize::from(self.id_at);
        &self.bytes[at..at + usize::from(self.id_len)]
    }

    /// What its notifications start with, before the item, when kept inline.
    pub fn prefix(&self) -> Option<&[u8]> {
        let len = usize::from(self.prefix_len);
        (len > 0).then(|| &self.bytes[..len])
    }
}

/// The subscriptions a server connection has accepted, and the declarations they came
/// with. Kept by the [`Connection`](super::Connection).
#[derive(Debug, Default)]
pub(crate) struct Table {
    /// Declarations met so far (by their subscribe method), small.
    pub declarations: Vec<MethodSubscription>,
    /// Each declaration's notification around its items, by the same index.
    pub shapes: Vec<Shape>,
    /// Active subscriptions: number → declaration index and id.
    pub active: VecMap<u64, Active>,
    pub next: u64,
    /// Scratch for notification params.
    pub buf: Vec<u8>,
}

impl Table {
    /// The declaration whose unsubscribe method `method` is.
    pub(crate) fn unsubscribe_method(&self, method: &str) -> Option<usize> {
        self.declarations
            .iter()
            .position(|d| d.unsubscribe == method)
    }

    /// The index of `declaration`, registered when new.
    pub fn declare(&mut self, declaration: &MethodSubscription) -> usize {
        match self.declarations.iter().position(|d| d == declaration) {
            Some(at) => at,
            None => {
                // Room for this one only: most connections use one declaration.
                self.declarations.reserve_exact(1);
                self.shapes.reserve_exact(1);
                self.declarations.push(declaration.clone());
                self.shapes.push(Shape::of(declaration));
                self.declarations.len() - 1
            }
        }
    }

    /// The subscription an unsubscribe request of declaration `decl` names (its first
    /// positional param, or its `id_field` member), if it is one of this declaration's.
    pub fn named(&self, decl: usize, params: Option<&RawValue>) -> Option<u64> {
        let declaration = &self.declarations[decl];
        let text = params?.get();
        let id = match crate::de::from_str::<(Id<'static>,)>(text) {
            Ok((id,)) => id,
            Err(_) => {
                let mut members: Members<Id<'static>> = crate::de::from_str(text).ok()?;
                members.take(declaration.id_field)?
            }
        };
        let sub = declaration.read_id(&id)?;
        (self.active.get(&sub).map(|a| a.decl) == Some(decl)).then_some(sub)
    }
}

/// What a subscription notification says, read on the client side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// An item.
    Item(Box<RawValue>),
    /// The server dropped this many items ([`LagPolicy::DropOldest`]).
    Lagged(u64),
    /// The server ended the subscription with this error.
    Ended(ErrorObject<'static>),
}

/// A client's subscriptions: calls in flight by key, then ids bound to keys, and the
/// notifications read for them. One per connection, kept by the client's driver.
///
/// Its tables are sorted rings, as the wire's (a B-tree of their own cost a browser page
/// about 5 KB of code each): keys are the driver's call tokens, which grow, so a key goes in
/// with a push and mostly leaves near an end; ids are the server's (geth's are random), placed
/// by binary search and moved into place, the shorter side of the ring at most (at 10,000
/// subscriptions, 5,000 entries of 40 bytes). A lookup is a binary search.
#[derive(Debug, Default)]
pub struct ClientSubscriptions {
    declarations: Vec<MethodSubscription>,
    /// Subscribe calls waiting for their answer: key → declaration index.
    pending: SortedDeque<u64, usize>,
    /// Bound ids: (declaration index, the id's JSON text) → key.
    bound: SortedDeque<(usize, String), u64>,
    /// The reverse, to unbind a key.
    keys: SortedDeque<u64, (usize, String)>,
}

impl ClientSubscriptions {
    /// An empty table.
    pub fn new() -> Self {
        ClientSubscriptions::default()
    }

    /// A subscribe call of `declaration` went out under `key`.
    pub fn subscribing(&mut self, key: u64, declaration: &MethodSubscription) {
        let decl = match self.declarations.iter().position(|d| d == declaration) {
            Some(at) => at,
            None => {
                self.declarations.push(declaration.clone());
                self.declarations.len() - 1
            }
        };
        self.pending.insert(key, decl);
    }

    /// The answer to the subscribe call `key`: its result, the subscription id, is bound to
    /// the key (true) unless it is not an id (false: the call failed in effect).
    pub fn answered(&mut self, key: u64, result: &RawValue) -> bool {
        let Some(decl) = self.pending.remove(&key) else {
            return false;
        };
        // The id as its JSON text: notifications carry it written the same way.
        match crate::de::from_str::<Id<'_>>(result.get()) {
            Ok(id) if !id.is_null() => {}
            _ => return false,
        }
        let id = String::from(result.get().trim());
        self.keys.insert(key, (decl, id.clone()));
        self.bound.insert((decl, id), key);
        true
    }

    /// Sends the subscribe call of `declaration` with `params` on `conn` under `key` and
    /// registers it ([`subscribing`](Self::subscribing)). [`SendError::NoPush`] when the
    /// transport cannot carry notifications ([`Config::push`](crate::Config::push) false:
    /// plain HTTP); the errors of [`Connection::call`](crate::Connection::call) otherwise.
    ///
    /// [`SendError::NoPush`]: crate::connection::SendError::NoPush
    pub fn subscribe(
        &mut self,
        conn: &mut crate::Connection,
        key: u64,
        declaration: &MethodSubscription,
        params: Option<&RawValue>,
        options: crate::connection::RequestOptions,
        now: crate::Instant,
    ) -> Result<(), crate::connection::SendError> {
        if !conn.config().push {
            return Err(crate::connection::SendError::NoPush);
        }
        conn.call(key, declaration.subscribe, params, options, now)?;
        self.subscribing(key, declaration);
        Ok(())
    }

    /// True while the subscribe call `key` waits for its answer.
    pub fn is_pending(&self, key: u64) -> bool {
        self.pending.get(&key).is_some()
    }

    /// The declaration of the subscription bound to `key`.
    pub fn declaration_of(&self, key: u64) -> Option<&MethodSubscription> {
        let (decl, _) = self.keys.get(&key)?;
        self.declarations.get(*decl)
    }

    /// The subscribe call `key` ended without an answer, or its subscription is over
    /// (unsubscribed, dropped): forget it.
    pub fn forget(&mut self, key: u64) {
        self.pending.remove(&key);
        if let Some(bound) = self.keys.remove(&key) {
            self.bound.remove(&bound);
        }
    }

    /// The id a key's subscription was given (its JSON text), to unsubscribe with.
    pub fn id_of(&self, key: u64) -> Option<&str> {
        self.keys.get(&key).map(|(_, id)| id.as_str())
    }

    /// True when `method` is the notification method of a declaration in use: the driver
    /// then offers the notification to [`read`](Self::read) before anything else.
    pub fn is_notification(&self, method: &str) -> bool {
        !self.keys.is_empty() && self.declarations.iter().any(|d| d.notification == method)
    }

    /// Reads a notification of `method` with `params`: the key of the subscription it is
    /// for, and what it says; `None` when it is for no subscription bound here. A notice
    /// that ends the subscription unbinds it.
    pub fn read(&mut self, method: &str, params: Option<&RawValue>) -> Option<(u64, Notice)> {
        let mut members: Members<Box<RawValue>> = crate::de::from_str(params?.get()).ok()?;
        for (decl, declaration) in self.declarations.iter().enumerate() {
            if declaration.notification != method {
                continue;
            }
            let Some(id) = members.get(declaration.id_field) else {
                continue;
            };
            let Some(&key) = self.bound.get(&(decl, String::from(id.get()))) else {
                continue;
            };
            let notice = if let Some(result) = members.take(declaration.result_field) {
                Notice::Item(result)
            } else if let Some(lagged) = members.get("lagged") {
                Notice::Lagged(lagged.get().parse().unwrap_or(0))
            } else if let Some(error) = members.get("error") {
                #[derive(Deserialize)]
                struct Error<'a> {
                    code: i64,
                    #[serde(borrow)]
                    message: Cow<'a, str>,
                }
                let error = match crate::de::from_str::<Error<'_>>(error.get()) {
                    Ok(e) => ErrorObject::new(e.code, String::from(e.message)),
                    Err(_) => ErrorObject::internal_error(),
                };
                self.forget(key);
                Notice::Ended(error)
            } else {
                continue;
            };
            return Some((key, notice));
        }
        None
    }
}

/// A JSON object's members as read, in order: the few of a subscription's notification or
/// unsubscribe params, looked up by name (a B-tree map of its own cost a page about 3 KB of
/// code). A repeated name means its last value, as a map reads it.
struct Members<V>(Vec<(String, V)>);

impl<V> Members<V> {
    fn find(&self, name: &str) -> Option<usize> {
        self.0.iter().rposition(|(k, _)| k == name)
    }

    /// The value of member `name`.
    fn get(&self, name: &str) -> Option<&V> {
        self.find(name).map(|at| &self.0[at].1)
    }

    /// Takes member `name`'s value out.
    fn take(&mut self, name: &str) -> Option<V> {
        let at = self.find(name)?;
        Some(self.0.swap_remove(at).1)
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Members<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object<V>(PhantomData<V>);

        impl<'de, V: Deserialize<'de>> Visitor<'de> for Object<V> {
            type Value = Members<V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<V>, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }

        deserializer.deserialize_map(Object(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `send_item` writes before an item, from the shape's pieces.
    fn pieces(shape: &Shape, id: &[u8]) -> Vec<u8> {
        [&shape.head[..], id, &shape.mid[..]].concat()
    }

    #[test]
    fn a_queues_items_come_out_in_order_whether_held_inline_or_behind() {
        // Every sequence of 8 steps of push, pop and restore (what the driver puts back),
        // against a deque.
        for steps in 0u32..3u32.pow(8) {
            let (mut items, mut model) = (Fifo::new(), VecDeque::new());
            let (mut next, mut popped) = (0u32, None);
            let mut s = steps;
            for _ in 0..8 {
                match s % 3 {
                    0 => {
                        items.push_back(next);
                        model.push_back(next);
                        next += 1;
                    }
                    1 => {
                        popped = items.pop_front();
                        assert_eq!(popped, model.pop_front(), "steps {steps}");
                    }
                    _ => {
                        if let Some(item) = popped.take() {
                            items.push_front(item);
                            model.push_front(item);
                        }
                    }
                }
                s /= 3;
                assert_eq!(items.len(), model.len(), "steps {steps}");
                assert_eq!(items.is_empty(), model.is_empty(), "steps {steps}");
            }
            while let Some(item) = model.pop_front() {
                assert_eq!(items.pop_front(), Some(item), "steps {steps}");
            }
            assert_eq!(items.pop_front(), None);
        }
    }

    #[test]
    fn the_prefix_is_kept_inline_when_it_fits_and_the_id_always() {
        assert_eq!(core::mem::size_of::<Active>(), 128);
        let ethereum = MethodSubscription::ethereum();
        let shape = Shape::of(&ethereum);
        // The longest id: a quoted u64 in hex.
        let mut id = Vec::new();
        ethereum.write_id(u64::MAX, &mut id);
        let active = Active::new(0, &shape, &id);
        assert_eq!(active.id(), &id[..]);
        assert_eq!(active.prefix(), Some(&pieces(&shape, &id)[..]));
        // A notification method too long for it: the id alone, the pieces from the shape.
        let long = MethodSubscription::new(
            "sub",
            "notifications_of_a_method_whose_name_leaves_no_room_for_the_rest_of_the_prefix",
            "unsub",
        );
        let shape = Shape::of(&long);
        let active = Active::new(0, &shape, b"7");
        assert_eq!((active.id(), active.prefix()), (&b"7"[..], None));
    }

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(String::from(json)).unwrap()
    }

    #[test]
    fn params_are_read_as_a_map_reads_them_a_repeated_member_meaning_its_last_value() {
        let ethereum = MethodSubscription::ethereum();
        let mut routes = ClientSubscriptions::new();
        routes.subscribing(7, &ethereum);
        assert!(routes.answered(7, &raw(r#""0x1""#)));
        let mut read = |params: &str| routes.read("eth_subscription", Some(&raw(params)));
        let item = |json: &str| Some((7, Notice::Item(raw(json))));
        assert_eq!(
            read(r#"{"subscription":"0x1","result":1,"result":2}"#),
            item("2")
        );
        // Names are read unescaped; the last id names the subscription.
        assert_eq!(read(r#"{"subscr\u0069ption":"0x1","result":3}"#), item("3"));
        assert_eq!(
            read(r#"{"subscription":"0x1","subscription":"0x2","result":4}"#),
            None
        );
        assert_eq!(read(r#"["0x1",5]"#), None);

        let mut table = Table::default();
        let decl = table.declare(&ethereum);
        let mut id = Vec::new();
        ethereum.write_id(2, &mut id);
        let active = Active::new(decl, &table.shapes[decl], &id);
        table.active.insert(2, active);
        let named = |params: &str| table.named(decl, Some(&raw(params)));
        assert_eq!(named(r#"["0x2"]"#), Some(2));
        assert_eq!(
            named(r#"{"subscription":"0x1","subscription":"0x2"}"#),
            Some(2)
        );
        assert_eq!(
            named(r#"{"subscription":"0x2","subscription":"0x1"}"#),
            None
        );
        // Every member must read as an id, as it did into a map of ids.
        assert_eq!(named(r#"{"subscription":"0x2","other":{}}"#), None);
    }
}
