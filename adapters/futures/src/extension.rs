//! Per-connection extensions ([`ConnectionExtension`](sansrpc::connection::hook::ConnectionExtension),
//! e.g. pub/sub) in the driver task.

use std::sync::Arc;

use futures::task::AtomicWaker;
use sansrpc::connection::hook::ConnectionHook;

use crate::builder::Builder;

pub use sansrpc_runtime::Extension;

impl Builder {
    /// Gives every connection `extension` (pub/sub: see `sansrpc-pubsub`), offered the
    /// peer's requests before the router. A server needs a router too (even an empty one)
    /// to keep serving.
    pub fn extension(mut self, extension: Extension) -> Self {
        self.extension = Some(extension);
        self
    }
}

/// One connection's hook, and the waker it wakes the driver with when it queued
/// notifications (the connection sends them as output has room).
pub(crate) fn open(extension: &Extension) -> (Box<dyn ConnectionHook>, Arc<AtomicWaker>) {
    let waker = Arc::new(AtomicWaker::new());
    let wake = {
        let waker = Arc::clone(&waker);
        Arc::new(move || waker.wake())
    };
    (extension.open(wake), waker)
}
