//! This adapter's [`Peer`]: what a protocol crate's handlers (`sansrpc-lsp`, `sansrpc-mcp`)
//! reach the other side of the connection through, made from a handler's context
//! ([`RequestContext::into_peer`], [`NotificationContext::into_peer`]). A request's handler
//! runs on a worker thread, so its calls' futures block that worker while the peer answers;
//! a notification's handler runs on the connection's driver thread, so what it sends is
//! queued and it cannot wait for an answer.

use std::sync::Arc;

use sansrpc::codec::http::HttpRequest;
use sansrpc::connection::Profile;
use sansrpc::method::CallError;
use sansrpc::{ErrorObject, Id, RawValue};
use sansrpc_runtime::{BoxFuture, ConnectionNotifier, Locals, Peer};

use crate::{Client, NotificationContext, RequestContext};

/// The connection, and the request when the handler answers one.
struct BlockingPeer {
    client: Client,
    request: Option<RequestContext>,
}

impl RequestContext {
    /// This request's [`Peer`], for a protocol crate's handler run on this worker.
    pub fn into_peer(self) -> Arc<dyn Peer> {
        Arc::new(BlockingPeer {
            client: self.peer().clone(),
            request: Some(self),
        })
    }
}

impl NotificationContext {
    /// The connection's [`Peer`], for a protocol crate's notification handler run on the
    /// driver thread: its notifications are queued, its calls refused (they would wait for
    /// the thread that reads the answer).
    pub fn into_peer(self) -> Arc<dyn Peer> {
        Arc::new(BlockingPeer {
            client: self.peer().clone(),
            request: None,
        })
    }
}

impl Peer for BlockingPeer {
    fn call(
        &self,
        method: &str,
        params: Box<RawValue>,
    ) -> BoxFuture<Result<Box<RawValue>, ErrorObject<'static>>> {
        let (request, method) = (self.request.clone(), method.to_owned());
        Box::pin(async move {
            let Some(cx) = request else {
                return Err(ErrorObject::new(
                    -32603,
                    format!(
                        "{method}: a notification handler on the blocking adapter runs on the \
                         connection's driver thread and cannot wait for the peer's answer \
                         (call from a request handler)"
                    ),
                ));
            };
            // Blocks this worker until the peer answers: the handler runs here alone.
            cx.call_raw(&method, Some(&params)).map_err(|e| match e {
                CallError::Rpc(e) => e,
                e => ErrorObject::new(-32603, format!("{method}: {e}")),
            })
        })
    }

    fn notify(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool> {
        let sent = match &self.request {
            Some(cx) => cx.notify_raw(method, Some(&params)).is_ok(),
            None => self.client.notify_raw_queued(method, Some(&params)),
        };
        Box::pin(std::future::ready(sent))
    }

    fn progress(&self, value: Box<RawValue>) -> BoxFuture<bool> {
        let sent = self
            .request
            .as_ref()
            .is_some_and(|cx| cx.report_progress(&value).unwrap_or(false));
        Box::pin(std::future::ready(sent))
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
        None
    }

    fn profile(&self) -> Profile {
        self.client.profile()
    }
}

/// Notifies from outside any request, without waiting for the driver.
impl ConnectionNotifier for Client {
    fn notify(&self, method: &str, params: Box<RawValue>) -> bool {
        self.notify_raw_queued(method, Some(&params))
    }

    fn is_closed(&self) -> bool {
        Client::is_closed(self)
    }
}
