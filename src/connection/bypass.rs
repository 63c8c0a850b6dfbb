//! Writing a notification past a parked connection's output: the rule
//! ([`Connection::may_bypass`](super::Connection::may_bypass)), the bytes, and what a
//! transport offers for it ([`Bypass`]).
//!
//! A subscriber's connection with nothing queued is parked: its driver waits for the
//! peer, a timer or something to send. A fan-out (a method subscription's sinks, a hook's
//! publish) may then write a notification to the transport itself, from the producer's
//! task, as the connection's output would have written it, instead of queueing it and
//! waking the driver to write it: the driver lets it (opens the bypass) as it parks, and
//! takes it back (closes it) first thing on its next turn. While it is open, every
//! producer writes through it in the order it sends; a write the transport takes only in
//! part, or not at all, closes it, and from then on everything is queued as usual (the
//! rest of a message taken in part is written first by the transport).

use crate::raw::RawValue;
use crate::sync::Arc;
use crate::wire::{NOTIFICATION_CLOSE, NOTIFICATION_OPEN, NOTIFICATION_PARAMS};
use alloc::vec::Vec;

/// How a transport writes one message from the task that produced it, past its
/// connection's output, while the connection's driver is parked with nothing queued.
/// Called with the producer's lock held: it must not wait, and writes at most once.
pub trait Bypass: Send + Sync {
    /// Writes one message, `head`, `item` and `tail` one after the other, framed as the
    /// transport frames a message, without waiting. `shared` is `item` when many
    /// subscribers are sent it (a transport may frame it once for them all).
    fn try_write(
        &self,
        head: &[u8],
        item: &RawValue,
        shared: Option<&Arc<RawValue>>,
        tail: &[u8],
    ) -> Bypassed;
}

/// What a [`Bypass`] made of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bypassed {
    /// Written whole.
    Whole,
    /// Taken in part: the transport keeps the rest, and writes it before anything else on
    /// its driver's next turn (the producer wakes the driver for it, and writes nothing
    /// more past it).
    Part,
    /// Nothing written (the transport has no room, or failed): the message goes through
    /// the connection's output, as it would with no bypass, and so does every later one.
    Not,
}

/// What a notification of `method` with shared params starts with, before its params (it
/// ends with `}`), as the output writes one a hook hands out
/// ([`Item::Shared`](super::hook::Item::Shared)); `None` when the method's name needs
/// escaping (the output writes it another way).
pub fn notification_head(method: &str) -> Option<Vec<u8>> {
    if !crate::json::needs_no_escape(method) {
        return None;
    }
    Some([NOTIFICATION_OPEN, method.as_bytes(), NOTIFICATION_PARAMS].concat())
}

/// What a subscription's notification ends with, after its item
/// ([`Connection::bypass_head`](super::Connection::bypass_head) is what comes before).
#[cfg(feature = "subscriptions")]
pub const ITEM_TAIL: &[u8] = super::subscriptions::ITEM_TAIL;

/// What a notification with shared params ends with, after them.
pub const NOTIFICATION_TAIL: &[u8] = NOTIFICATION_CLOSE;
