//! This adapter's [`Peer`](sansrpc_runtime::Peer): what a protocol crate's handlers
//! (`sansrpc-lsp`, `sansrpc-mcp`, `sansrpc-a2a`) reach the other side of the connection
//! through. A request's context becomes one with [`PeerContext::into_peer`]; a
//! notification's handler has the connection ([`NotificationContext::peer`]), which becomes
//! one with [`PeerConnection::into_peer`].
//!
//! [`NotificationContext::peer`]: crate::NotificationContext::peer

use std::future::Future;
use std::sync::Arc;

use sansrpc::codec::http::HttpRequest;
use sansrpc::connection::Profile;
use sansrpc::RawValue;
use sansrpc_runtime::{
    call_error, params_of, BoxFuture, CallFuture, ConnectionNotifier, Executor, Locals,
    PeerConnection, PeerContext,
};

use crate::{CallError, Client, PendingCall, RequestContext};

/// `call`'s answer, a failure as [`call_error`] words it.
fn answered(call: PendingCall, method: &str) -> CallFuture {
    let method = method.to_owned();
    Box::pin(async move { call.await.map_err(|e| call_error(&method, e)) })
}

/// True once `sent` is queued for the wire; false when the connection is gone.
fn queued(sent: impl Future<Output = Result<(), CallError>> + Send + 'static) -> BoxFuture<bool> {
    Box::pin(async move { sent.await.is_ok() })
}

/// On behalf of the request: on its stream, where the transport has one.
impl PeerContext for RequestContext {
    type Connection = Client;

    fn connection(&self) -> &Client {
        self.peer()
    }

    fn call_for(&self, method: &str, params: Box<RawValue>) -> CallFuture {
        answered(self.call_raw(method, params_of(&params)), method)
    }

    fn notify_for(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool> {
        queued(self.notify_raw(method, params_of(&params)))
    }

    fn progress_for(&self, value: Box<RawValue>) -> BoxFuture<bool> {
        let cx = self.clone();
        Box::pin(async move { cx.report_progress(&value).await.unwrap_or(false) })
    }

    fn cancel_seen(&self) -> bool {
        self.is_cancelled()
    }

    fn cancel_signal(&self) -> BoxFuture<()> {
        Box::pin(self.cancelled())
    }

    fn http_request(&self) -> Option<Arc<HttpRequest>> {
        self.http()
    }
}

/// Calls and notifications of the connection, from a notification's handler.
impl PeerConnection for Client {
    type Request = RequestContext;

    fn call_outside(&self, method: &str, params: Box<RawValue>) -> CallFuture {
        answered(self.call_raw(method, params_of(&params)), method)
    }

    fn notify_outside(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool> {
        queued(self.notify_raw(method, params_of(&params)))
    }

    fn locals(&self) -> Arc<Locals> {
        Client::locals(self)
    }

    fn profile(&self) -> Profile {
        Client::profile(self)
    }

    fn executor(&self) -> Option<Arc<dyn Executor>> {
        Client::executor(self)
    }
}

/// Notifies through a handle on the connection; the notification is queued as it is made.
impl ConnectionNotifier for Client {
    fn notify(&self, method: &str, params: Box<RawValue>) -> bool {
        drop(self.notify_raw(method, params_of(&params)));
        !self.is_closed()
    }

    fn is_closed(&self) -> bool {
        Client::is_closed(self)
    }
}
