//! [`Extension`]: a per-connection extension (e.g. pub/sub) every connection a driver
//! serves gets.

use std::fmt;
use std::sync::Arc;

use sansrpc::connection::hook::{ConnectionExtension, ConnectionHook, Wake};

/// A [`ConnectionExtension`] every connection served with it gets: it sees the peer's
/// requests before the router and sends notifications to the peer whenever it wakes the
/// connection (`sansrpc_futures::Builder::extension`, `sansrpc_blocking::Options`).
#[derive(Clone)]
pub struct Extension(Arc<dyn ConnectionExtension>);

impl Extension {
    /// Wraps `extension` (shared by every connection).
    pub fn new(extension: Arc<dyn ConnectionExtension>) -> Self {
        Extension(extension)
    }

    /// One connection's hook: `wake` is how the hook tells the connection's driver that it
    /// queued notifications (the driver then lets the connection send them as output has
    /// room). For drivers.
    pub fn open(&self, wake: Wake) -> Box<dyn ConnectionHook> {
        self.0.open(wake)
    }
}

impl fmt::Debug for Extension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Extension")
    }
}
