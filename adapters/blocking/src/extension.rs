//! Per-connection extensions ([`ConnectionExtension`], e.g. pub/sub) on the driver thread.

use std::fmt;
use std::sync::mpsc::Sender;
use std::sync::Arc;

use sansrpc::endpoint::IncomingId;
use sansrpc::ext::connection::{self, ConnectionExtension, ConnectionHook};
use sansrpc::{Endpoint, Request};

use crate::driver::Cmd;

/// A [`ConnectionExtension`] every connection served with this [`Config`](crate::Config)
/// gets: it sees the peer's requests before the router and sends notifications to the
/// peer whenever it wakes the connection.
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

/// One connection's hook, owned by its driver thread.
pub(crate) struct Slot {
    hook: Box<dyn ConnectionHook>,
    buf: Vec<u8>,
}

impl Slot {
    /// Opens the extension for a connection whose driver listens on `driver`.
    pub(crate) fn open(extension: &Extension, driver: Sender<Cmd>) -> Slot {
        let wake = Arc::new(move || {
            // The driver may be gone already; then nobody needs waking.
            let _ = driver.send(Cmd::Wake);
        });
        Slot {
            hook: extension.0.open(wake),
            buf: Vec::new(),
        }
    }

    /// True when the extension answered the request.
    pub(crate) fn offer(&mut self, ep: &mut Endpoint, id: IncomingId, req: &Request<'_>) -> bool {
        let params = req.params.as_deref();
        connection::offer_request(&mut *self.hook, ep, id, &req.method, params, &mut self.buf)
    }

    /// True when notifications were sent.
    pub(crate) fn drain(&mut self, ep: &mut Endpoint) -> bool {
        connection::drain_into(&mut *self.hook, ep)
    }

    pub(crate) fn close(&mut self) {
        self.hook.close();
    }
}
