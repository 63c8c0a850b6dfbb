//! Per-connection extensions ([`ConnectionExtension`](sansrpc::connection::hook::ConnectionExtension),
//! e.g. pub/sub) on the driver thread.

use std::sync::mpsc::Sender;
use std::sync::Arc;

use sansrpc::connection::hook::ConnectionHook;
pub use sansrpc_runtime::Extension;

use crate::driver::Cmd;

/// Opens the extension for a connection whose driver listens on `driver`: its hook, woken
/// through the driver's channel (the connection machine drains it with its events).
pub(crate) fn open(extension: &Extension, driver: Sender<Cmd>) -> Box<dyn ConnectionHook> {
    extension.open(Arc::new(move || {
        // The driver may be gone already; then nobody needs waking.
        let _ = driver.send(Cmd::Wake);
    }))
}
