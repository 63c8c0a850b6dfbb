//! This adapter's [`Peer`](sansrpc_runtime::Peer): what a protocol crate's handlers
//! (`sansrpc-lsp`, `sansrpc-mcp`) reach the other side of the connection through. A
//! request's context becomes one with [`PeerContext::into_peer`]; a notification's handler
//! has the connection ([`NotificationContext::peer`]), which becomes one with
//! [`PeerConnection::into_peer`]. A request's handler runs on a worker thread, so its calls'
//! futures block that worker while the peer answers; a notification's handler runs on the
//! connection's driver thread, so what it sends is queued and it cannot wait for an answer.
//!
//! [`NotificationContext::peer`]: crate::NotificationContext::peer

use std::sync::Arc;

use sansrpc::connection::Profile;
use sansrpc::{ErrorObject, RawValue};
use sansrpc_runtime::{
    call_error, params_of, BoxFuture, CallFuture, ConnectionNotifier, Locals, PeerConnection,
    PeerContext,
};

use crate::{Client, RequestContext};

/// A request's handler runs on a worker thread: what it sends goes at once, and a call's
/// future blocks the worker until the peer answers (the handler runs there alone).
impl PeerContext for RequestContext {
    type Connection = Client;

    fn connection(&self) -> &Client {
        self.peer()
    }

    fn call_for(&self, method: &str, params: Box<RawValue>) -> CallFuture {
        let (cx, method) = (self.clone(), method.to_owned());
        Box::pin(async move {
            cx.call_raw(&method, params_of(&params))
                .map_err(|e| call_error(&method, e))
        })
    }

    fn notify_for(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool> {
        let sent = self.notify_raw(method, params_of(&params)).is_ok();
        Box::pin(std::future::ready(sent))
    }

    fn progress_for(&self, value: Box<RawValue>) -> BoxFuture<bool> {
        let sent = self.report_progress(&value).unwrap_or(false);
        Box::pin(std::future::ready(sent))
    }

    fn cancel_seen(&self) -> bool {
        self.is_cancelled()
    }

    fn cancel_signal(&self) -> BoxFuture<()> {
        Box::pin(self.cancelled())
    }
}

/// A notification's handler runs on the connection's driver thread: its notifications are
/// queued, and it cannot wait for an answer, which that thread reads.
impl PeerConnection for Client {
    type Request = RequestContext;

    fn call_outside(&self, method: &str, _: Box<RawValue>) -> CallFuture {
        let refused = ErrorObject::new(
            -32603,
            format!(
                "{method}: a notification handler on the blocking adapter runs on the \
                 connection's driver thread and cannot wait for the peer's answer \
                 (call from a request handler)"
            ),
        );
        Box::pin(std::future::ready(Err(refused)))
    }

    fn notify_outside(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool> {
        let sent = self.notify_raw_queued(method, params_of(&params));
        Box::pin(std::future::ready(sent))
    }

    fn locals(&self) -> Arc<Locals> {
        Client::locals(self)
    }

    fn profile(&self) -> Profile {
        Client::profile(self)
    }
}

/// Notifies from outside any request, without waiting for the driver.
impl ConnectionNotifier for Client {
    fn notify(&self, method: &str, params: Box<RawValue>) -> bool {
        self.notify_raw_queued(method, params_of(&params))
    }

    fn is_closed(&self) -> bool {
        Client::is_closed(self)
    }
}
