//! Per-connection extensions ([`ConnectionExtension`](sansrpc::connection::hook::ConnectionExtension),
//! e.g. pub/sub) in the driver task.

use std::sync::Arc;

use sansrpc::connection::hook::ConnectionHook;

use crate::builder::Builder;
use crate::wake::Woken;

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

/// One connection's hook, which wakes the driver's task (`woken`) when it queued
/// notifications (the connection sends them as output has room).
pub(crate) fn open(extension: &Extension, woken: &Arc<Woken>) -> Box<dyn ConnectionHook> {
    let woken = Arc::clone(woken);
    extension.open(Arc::new(move || woken.wake_task()))
}
