//! The hook through which an extension that lives beside the router on every connection
//! (pub/sub) talks to an adapter's driver, whatever the runtime.
//!
//! Per connection the driver:
//! 1. calls [`ConnectionExtension::open`] with a [`Wake`] that makes it run its loop soon;
//! 2. offers every incoming request to [`ConnectionHook::request`] before its router, and
//!    answers it when the hook returns `Some`;
//! 3. calls [`ConnectionHook::drain`] whenever it was woken (and again while it returns
//!    `true`, once its output has room), sending each notification to the endpoint and
//!    stopping when the endpoint's output is full (back-pressure);
//! 4. calls [`ConnectionHook::close`] once when the connection ends.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::endpoint::{Endpoint, IncomingId};
use crate::error::ErrorObject;
use crate::raw::RawValue;
use crate::router::Outcome;

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
    /// A request from the peer, offered before the router: `Some` answers it (a result in
    /// `out`, or an error), `None` leaves it to the router.
    fn request(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        out: &mut Vec<u8>,
    ) -> Option<Outcome>;

    /// Hands queued notifications to `send`, oldest first, until `send` returns `false`
    /// (the endpoint's output is full: that notification is kept and offered first next
    /// time) or none is left. Returns `true` when some remain.
    fn drain(&mut self, send: &mut dyn FnMut(&str, &RawValue) -> bool) -> bool;

    /// The connection ended; called once, after which the hook is dropped.
    fn close(&mut self);
}

/// The hook's answer to a request it took: `Ok` with the result JSON in the scratch
/// buffer, or an error object.
pub type Answer = Outcome;

/// Offers the peer's request `id` to `hook` (driver step 2); when the hook takes it, answers
/// it on `endpoint` and returns `true`. `buf` is scratch space, reused across calls.
pub fn offer_request(
    hook: &mut dyn ConnectionHook,
    endpoint: &mut Endpoint,
    id: IncomingId,
    method: &str,
    params: Option<&RawValue>,
    buf: &mut Vec<u8>,
) -> bool {
    let Some(answer) = ask(hook, method, params, buf) else {
        return false;
    };
    send_answer(endpoint, id, &answer, buf);
    true
}

/// Offers a request to `hook` without answering it: `Some` when the hook took it, with the
/// result JSON left in `buf` (see [`send_answer`]).
pub fn ask(
    hook: &mut dyn ConnectionHook,
    method: &str,
    params: Option<&RawValue>,
    buf: &mut Vec<u8>,
) -> Option<Answer> {
    buf.clear();
    hook.request(method, params, buf)
}

/// Answers request `id` with what [`ask`] got from the hook (the result JSON in `buf`).
pub fn send_answer(endpoint: &mut Endpoint, id: IncomingId, answer: &Answer, buf: &[u8]) {
    // Fails only when the endpoint closed meanwhile: nobody to answer.
    let _ = match answer {
        Ok(()) => match core::str::from_utf8(buf)
            .ok()
            .and_then(|t| RawValue::from_json(t).ok())
        {
            Some(result) => endpoint.respond(id, Ok(result)),
            None => endpoint.respond(id, Err(&ErrorObject::internal_error())),
        },
        Err(e) => endpoint.respond(id, Err(e)),
    };
}

/// Moves `hook`'s notifications into `endpoint` until its output is full (driver step 3);
/// `true` when at least one was sent, so the driver should write and call again.
pub fn drain_into(hook: &mut dyn ConnectionHook, endpoint: &mut Endpoint) -> bool {
    if endpoint.is_closed() {
        return false;
    }
    let mut sent = false;
    hook.drain(&mut |method, params| {
        let ok = endpoint.send_notification(method, Some(params)).is_ok();
        sent |= ok;
        ok
    });
    sent
}
