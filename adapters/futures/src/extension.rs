//! Per-connection extensions ([`ConnectionExtension`], e.g. pub/sub) in the driver task.

use std::fmt;
use std::sync::Arc;

use futures::task::AtomicWaker;
use sansrpc::connection::hook::{ConnectionExtension, ConnectionHook};

use crate::builder::Builder;

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

impl Extension {
    /// One connection's hook, and the waker it wakes the driver with when it queued
    /// notifications (the connection sends them as output has room).
    pub(crate) fn open(&self) -> (Box<dyn ConnectionHook>, Arc<AtomicWaker>) {
        let waker = Arc::new(AtomicWaker::new());
        let wake = {
            let waker = Arc::clone(&waker);
            Arc::new(move || waker.wake())
        };
        (self.0.open(wake), waker)
    }
}
