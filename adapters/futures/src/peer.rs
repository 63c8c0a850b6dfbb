//! This adapter's [`Peer`]: what a protocol crate's handlers (`sansrpc-lsp`, `sansrpc-mcp`,
//! `sansrpc-a2a`) reach the other side of the connection through, made from a handler's
//! context ([`RequestContext::into_peer`], [`NotificationContext::into_peer`]).

use std::sync::Arc;

use sansrpc::codec::http::HttpRequest;
use sansrpc::connection::Profile;
use sansrpc::{ErrorObject, Id, RawValue};
use sansrpc_runtime::{BoxFuture, ConnectionNotifier, Executor, Locals, Peer};

use crate::{CallError, Client, NotificationContext, RequestContext};

/// The connection, and the request when the handler answers one.
struct FuturesPeer {
    client: Client,
    request: Option<RequestContext>,
}

impl RequestContext {
    /// This request's [`Peer`], for a protocol crate's handler: calls and notifications go
    /// on behalf of the request (on its stream, where the transport has one), progress on
    /// its token, cancellation is its own.
    pub fn into_peer(self) -> Arc<dyn Peer> {
        Arc::new(FuturesPeer {
            client: self.peer().clone(),
            request: Some(self),
        })
    }
}

impl NotificationContext {
    /// The connection's [`Peer`], for a protocol crate's notification handler (no request:
    /// no progress token, never cancelled).
    pub fn into_peer(self) -> Arc<dyn Peer> {
        Arc::new(FuturesPeer {
            client: self.peer().clone(),
            request: None,
        })
    }
}

/// A failed call as the peer's error object, or `-32603` naming the method and why.
pub(crate) fn call_error(method: &str, error: CallError) -> ErrorObject<'static> {
    match error {
        CallError::Rpc(e) => e,
        e => ErrorObject::new(-32603, format!("{method}: {e}")),
    }
}

impl Peer for FuturesPeer {
    fn call(
        &self,
        method: &str,
        params: Box<RawValue>,
    ) -> BoxFuture<Result<Box<RawValue>, ErrorObject<'static>>> {
        let call = match &self.request {
            Some(cx) => cx.call_raw(method, Some(&params)),
            None => self.client.call_raw(method, Some(&params)),
        };
        let method = method.to_owned();
        Box::pin(async move { call.await.map_err(|e| call_error(&method, e)) })
    }

    fn notify(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool> {
        match &self.request {
            Some(cx) => {
                let sent = cx.notify_raw(method, Some(&params));
                Box::pin(async move { sent.await.is_ok() })
            }
            None => {
                let sent = self.client.notify_raw(method, Some(&params));
                Box::pin(async move { sent.await.is_ok() })
            }
        }
    }

    fn progress(&self, value: Box<RawValue>) -> BoxFuture<bool> {
        let Some(cx) = self.request.clone() else {
            return Box::pin(std::future::ready(false));
        };
        Box::pin(async move { cx.report_progress(&value).await.unwrap_or(false) })
    }

    fn progress_token(&self) -> Option<Id<'static>> {
        self.request.as_ref()?.progress_token().cloned()
    }

    fn is_cancelled(&self) -> bool {
        self.request
            .as_ref()
            .is_some_and(RequestContext::is_cancelled)
    }

    fn cancelled(&self) -> BoxFuture<()> {
        match &self.request {
            Some(cx) => Box::pin(cx.cancelled()),
            None => Box::pin(std::future::pending()),
        }
    }

    fn locals(&self) -> Arc<Locals> {
        self.client.locals()
    }

    fn notifier(&self) -> Arc<dyn ConnectionNotifier> {
        Arc::new(self.client.clone())
    }

    fn request_id(&self) -> Option<Id<'static>> {
        Some(self.request.as_ref()?.id().clone())
    }

    fn http(&self) -> Option<Arc<HttpRequest>> {
        self.request.as_ref()?.http()
    }

    fn profile(&self) -> Profile {
        self.client.profile()
    }

    fn executor(&self) -> Option<Arc<dyn Executor>> {
        self.client.executor()
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
