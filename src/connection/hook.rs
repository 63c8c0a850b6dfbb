//! The hook through which an extension that lives beside the router on every connection
//! (pub/sub) talks to an adapter's driver, whatever the runtime.
//!
//! Per connection the driver:
//! 1. calls [`ConnectionExtension::open`] with a [`Wake`] that makes it run its loop soon;
//! 2. offers every incoming request to [`ConnectionHook::request`] before its router, and
//!    answers it when the hook answers now, or when [`ConnectionHook::drain`] hands out its
//!    answer (the hook waits on a store);
//! 3. calls [`ConnectionHook::drain`] whenever it was woken (and again while it returns
//!    `true`, once its output has room), sending each notification to the wire and
//!    stopping when the wire's output is full (back-pressure);
//! 4. calls [`ConnectionHook::close`] once when the connection ends.

use crate::sync::Arc;
use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::error::ErrorObject;
use crate::error::Outcome;
use crate::raw::RawValue;
use crate::wire::{IncomingId, Wire};

/// Asks a connection's driver to call [`ConnectionHook::drain`] soon. Callable from any
/// thread, any number of times; cheap.
pub type Wake = Arc<dyn Fn() + Send + Sync>;

/// Something that adds behaviour to every connection of a server.
pub trait ConnectionExtension: Send + Sync {
    /// A connection opened: its hook. `wake` reaches that connection's driver.
    fn open(&self, wake: Wake) -> Box<dyn ConnectionHook>;
}

/// One connection's side of a [`ConnectionExtension`].
pub trait ConnectionHook: Send {
    /// A request from the peer, offered before the router: `None` leaves it to the router;
    /// [`Taken::Now`] answers it (a result in `out`, or an error); [`Taken::Later`] takes it
    /// and answers it later through [`ConnectionHook::drain`] ([`Item::Answer`]) with the
    /// same number.
    fn request(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        out: &mut Vec<u8>,
    ) -> Option<Taken>;

    /// Hands queued answers and notifications to `send`, answers first and then
    /// notifications oldest first, until `send` returns `false` (the wire's output is
    /// full: that notification is kept and offered first next time) or none is left.
    /// Returns `true` when some remain. An answer is always accepted.
    fn drain(&mut self, send: &mut dyn FnMut(Item<'_>) -> bool) -> bool;

    /// The connection ended; called once, after which the hook is dropped.
    fn close(&mut self);

    /// The connection's driver parks with nothing queued
    /// ([`Connection::open_hook_bypass`](super::Connection::open_hook_bypass)): the hook may
    /// write its notifications through `bypass` itself, from where they are produced,
    /// until [`close_bypass`](ConnectionHook::close_bypass), in the order it would have
    /// handed them out, each as the output writes an [`Item::Shared`]
    /// ([`notification_head`](super::bypass::notification_head), the params,
    /// [`NOTIFICATION_TAIL`](super::bypass::NOTIFICATION_TAIL)). A write taken in part or
    /// not at all ends it (see [`Bypassed`](super::bypass::Bypassed)): the hook wakes the
    /// driver and hands out the rest through [`drain`](ConnectionHook::drain). True when
    /// it took it; false (the default) when it does not write past the driver, or has
    /// something for [`drain`](ConnectionHook::drain) first.
    #[cfg(target_has_atomic = "ptr")]
    fn open_bypass(&mut self, bypass: &Arc<dyn super::bypass::Bypass>) -> bool {
        let _ = bypass;
        false
    }

    /// Ends what [`open_bypass`](ConnectionHook::open_bypass) opened, first thing on the
    /// driver's turn: from here the hook's notifications go through
    /// [`drain`](ConnectionHook::drain). Nothing by default.
    #[cfg(target_has_atomic = "ptr")]
    fn close_bypass(&mut self) {}
}

/// The hook's answer to a request it took now: `Ok` with the result JSON in the scratch
/// buffer, or an error object.
pub type Answer = Outcome;

/// What [`ConnectionHook::request`] did with a request it took.
#[derive(Debug)]
pub enum Taken {
    /// Answered: the result JSON is in the scratch buffer, or the error is here.
    Now(Answer),
    /// Answered later through [`ConnectionHook::drain`] as [`Item::Answer`] with this
    /// number (unique among this hook's requests under way).
    Later(u64),
}

/// What [`ConnectionHook::drain`] hands out.
#[derive(Debug)]
pub enum Item<'a> {
    /// A notification to send.
    Notification(&'a str, &'a RawValue),
    /// A notification to send whose params many connections share (a publish to every
    /// subscriber of a topic): where the driver writes the output's parts
    /// ([`Connection::peek_message_parts`](crate::connection::Connection::peek_message_parts)),
    /// they are written from here, not copied into each connection's output.
    Shared(&'a str, &'a Arc<RawValue>),
    /// The answer to the request taken as [`Taken::Later`] with this number: its result
    /// JSON, or its error.
    Answer(u64, Result<&'a str, &'a ErrorObject<'static>>),
}

/// Offers a request to `hook` without answering it: `Some` when the hook took it, with a
/// result JSON left in `buf` (see [`send_answer`]).
pub(crate) fn ask(
    hook: &mut dyn ConnectionHook,
    method: &str,
    params: Option<&RawValue>,
    buf: &mut Vec<u8>,
) -> Option<Taken> {
    buf.clear();
    hook.request(method, params, buf)
}

/// Answers request `id` with a result JSON (checked) or an error.
pub(crate) fn send_answer(
    wire: &mut Wire,
    id: IncomingId,
    answer: Result<&[u8], &ErrorObject<'_>>,
) {
    // Fails only when the wire closed meanwhile: nobody to answer.
    let _ = match answer {
        Ok(buf) => match core::str::from_utf8(buf)
            .ok()
            .and_then(|t| RawValue::from_json(t).ok())
        {
            Some(result) => wire.respond(id, Ok(result)),
            None => wire.respond(id, Err(&ErrorObject::internal_error())),
        },
        Err(e) => wire.respond(id, Err(e)),
    };
}

/// Moves `hook`'s answers and notifications into `wire` until its output is full
/// (driver step 3); `later` maps the numbers of requests taken with [`Taken::Later`] to
/// their ids (an answered one is removed). `true` when at least one frame was queued, so
/// the driver should write and call again.
pub(crate) fn drain_into(
    hook: &mut dyn ConnectionHook,
    wire: &mut Wire,
    later: &mut Vec<(u64, IncomingId)>,
) -> bool {
    if wire.is_closed() {
        return false;
    }
    let mut sent = false;
    hook.drain(&mut |item| match item {
        Item::Notification(method, params) => {
            let ok = wire.send_notification_framed(method, params).is_ok();
            sent |= ok;
            ok
        }
        Item::Shared(method, params) => {
            let ok = wire.send_notification_shared(method, params).is_ok();
            sent |= ok;
            ok
        }
        Item::Answer(number, answer) => {
            if let Some(at) = later.iter().position(|(n, _)| *n == number) {
                let (_, id) = later.swap_remove(at);
                send_answer(wire, id, answer.map(str::as_bytes));
                sent = true;
            }
            true
        }
    });
    sent
}
