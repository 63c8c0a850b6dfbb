//! This adapter's [`Peer`]: what a protocol crate's handlers (`sansrpc-lsp`, `sansrpc-mcp`,
//! `sansrpc-a2a`) reach the other side of the connection through, made from a handler's
//! context ([`RequestContext::into_peer`], [`NotificationContext::into_peer`]).

use std::future::Future;
use std::sync::Arc;

use sansrpc::codec::http::HttpRequest;
use sansrpc::connection::Profile;
use sansrpc::RawValue;
use sansrpc_runtime::{
    call_error, BoxFuture, CallFuture, ConnectionNotifier, DriverPeer, Executor, Locals, Peer,
    PeerConnection, PeerContext,
};

use crate::{CallError, Client, NotificationContext, PendingCall, RequestContext};

/// `call`'s answer, a failure as [`call_error`] words it.
fn answered(call: PendingCall, method: &str) -> CallFuture {
    let method = method.to_owned();
    Box::pin(async move { call.await.map_err(|e| call_error(&method, e)) })
}

/// True once `sent` is queued for the wire; false when the connection is gone.
fn queued(sent: impl Future<Output = Result<(), CallError>> + Send + 'static) -> BoxFuture<bool> {
    Box::pin(async move { sent.await.is_ok() })
}

impl RequestContext {
    /// This request's [`Peer`], for a protocol crate's handler: calls and notifications go
    /// on behalf of the request (on its stream, where the transport has one), progress on
    /// its token, cancellation is its own.
    pub fn into_peer(self) -> Arc<dyn Peer> {
        Arc::new(DriverPeer::request(self.peer().clone(), self))
    }
}

impl NotificationContext {
    /// The connection's [`Peer`], for a protocol crate's notification handler (no request:
    /// no progress token, never cancelled).
    pub fn into_peer(self) -> Arc<dyn Peer> {
        Arc::new(DriverPeer::<_, RequestContext>::connection(
            self.peer().clone(),
        ))
    }
}

/// On behalf of the request: on its stream, where the transport has one.
impl PeerContext for RequestContext {
    fn call_for(&self, method: &str, params: Box<RawValue>) -> CallFuture {
        answered(self.call_raw(method, Some(&params)), method)
    }

    fn notify_for(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool> {
        queued(self.notify_raw(method, Some(&params)))
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
    fn call_outside(&self, method: &str, params: Box<RawValue>) -> CallFuture {
        answered(self.call_raw(method, Some(&params)), method)
    }

    fn notify_outside(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool> {
        queued(self.notify_raw(method, Some(&params)))
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
        drop(self.notify_raw(method, Some(&params)));
        !self.is_closed()
    }

    fn is_closed(&self) -> bool {
        Client::is_closed(self)
    }
}
