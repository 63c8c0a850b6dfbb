//! Per-connection extensions ([`ConnectionExtension`], e.g. pub/sub) on the driver thread.

use std::fmt;
use std::sync::mpsc::Sender;
use std::sync::Arc;

use sansrpc::connection::hook::{ConnectionExtension, ConnectionHook};

use crate::driver::Cmd;

/// A [`ConnectionExtension`] every connection served with this [`Config`](crate::Options)
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

/// Opens the extension for a connection whose driver listens on `driver`: its hook, woken
/// through the driver's channel (the connection machine drains it with its events).
pub(crate) fn open(extension: &Extension, driver: Sender<Cmd>) -> Box<dyn ConnectionHook> {
    let wake = Arc::new(move || {
        // The driver may be gone already; then nobody needs waking.
        let _ = driver.send(Cmd::Wake);
    });
    extension.0.open(wake)
}
