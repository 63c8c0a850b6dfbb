//! Per-connection extensions ([`ConnectionExtension`], e.g. pub/sub) in the driver task.

use std::fmt;
use std::sync::Arc;
use std::task::Context;

use futures::task::AtomicWaker;
use sansrpc::endpoint::IncomingId;
use sansrpc::ext::connection::{self, ConnectionExtension, ConnectionHook};
use sansrpc::{Endpoint, Request};

use crate::driver::Builder;

/// A [`ConnectionExtension`] every connection built by a [`Builder`] gets: it sees the
/// peer's requests before the router and sends notifications to the peer whenever it wakes
/// the connection.
#[derive(Clone)]
pub struct Extension(Arc<dyn ConnectionExtension>);

impl Extension {
    /// Wraps `extension` (shared by every connection).
    pub fn new(extension: Arc<dyn ConnectionExtension>) -> Self {
        Extension(extension)
    }
}

impl fmt::Debug for Extension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Extension")
    }
}

impl Builder {
    /// Gives every connection `extension` (pub/sub: see `sansrpc-pubsub`), offered the
    /// peer's requests before the router. A server needs a router too (even an empty one)
    /// to keep serving.
    pub fn extension(mut self, extension: Extension) -> Self {
        self.extension = Some(extension);
        self
    }
}

/// One connection's hook, owned by its driver.
pub(crate) struct Slot {
    hook: Box<dyn ConnectionHook>,
    /// The driver task, woken when the extension queues something.
    waker: Arc<AtomicWaker>,
    buf: Vec<u8>,
    closed: bool,
}

impl Slot {
    pub(crate) fn open(extension: &Extension) -> Slot {
        let waker = Arc::new(AtomicWaker::new());
        let wake = {
            let waker = Arc::clone(&waker);
            Arc::new(move || waker.wake())
        };
        Slot {
            hook: extension.0.open(wake),
            waker,
            buf: Vec::new(),
            closed: false,
        }
    }

    /// True when the extension answered the request.
    pub(crate) fn offer(&mut self, ep: &mut Endpoint, id: IncomingId, req: &Request<'_>) -> bool {
        let params = req.params.as_deref();
        connection::offer_request(&mut *self.hook, ep, id, &req.method, params, &mut self.buf)
    }

    /// Moves notifications into the endpoint while it takes them; true when some moved.
    /// Registers the task to be woken when more are queued.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>, ep: &mut Endpoint) -> bool {
        if self.closed {
            return false;
        }
        // Registered before draining, so a wake during the drain is not lost.
        self.waker.register(cx.waker());
        // Cheap when nothing is queued: the hook checks its own flag before locking.
        connection::drain_into(&mut *self.hook, ep)
    }

    pub(crate) fn close(&mut self) {
        if !std::mem::replace(&mut self.closed, true) {
            self.hook.close();
        }
    }
}
