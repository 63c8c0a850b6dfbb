//! [`Peer`]: the other side of a connection as a handler sees it, on behalf of one request.

use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use sansrpc::client::PeerRequest;
use sansrpc::codec::http::HttpRequest;
use sansrpc::connection::Profile;
use sansrpc::method::CallError;
use sansrpc::{ErrorObject, Id, RawValue};

use crate::Locals;

/// A boxed future that may move between threads, as [`Peer`] returns them.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A call's answer as [`Peer::call`] gives it: the result, or an error object.
pub type CallFuture = BoxFuture<Result<Box<RawValue>, ErrorObject<'static>>>;

/// The peer of a connection as a protocol crate's handler sees it, on behalf of one
/// request (or of the connection, for a notification's handler): what `sansrpc-lsp`,
/// `sansrpc-mcp` and `sansrpc-a2a` need of a driver, so one protocol definition runs on
/// every driver. [`DriverPeer`] implements it over a driver's connection handle and its
/// request context: `sansrpc-futures`'s (tokio, smol, async-std) and `sansrpc-blocking`'s,
/// where a call's future blocks the worker thread the handler runs on. A driver of your own
/// uses it the same way (or implements this trait itself).
///
/// Params and results are raw JSON: the protocol crate writes and reads them.
pub trait Peer: Send + Sync + 'static {
    /// Calls the peer on behalf of the request (on its stream, where the transport has
    /// one): the result, or the peer's error object; a call that could not be made or was
    /// not answered (the connection closed, a deadline) is a `-32603` error naming the
    /// method and why.
    fn call(
        &self,
        method: &str,
        params: Box<RawValue>,
    ) -> BoxFuture<Result<Box<RawValue>, ErrorObject<'static>>>;

    /// Sends a notification on behalf of the request; false when the connection is gone.
    fn notify(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool>;

    /// Reports progress on the request's progress token (the profile's progress
    /// notification, with `value`'s members); false when the request carried no token.
    fn progress(&self, value: Box<RawValue>) -> BoxFuture<bool>;

    /// The request's progress token, if it carried one.
    fn progress_token(&self) -> Option<Id<'static>>;

    /// True once the peer cancelled the request (or the connection closed).
    fn is_cancelled(&self) -> bool;

    /// Resolves when the peer cancels the request; never, for a notification's handler.
    fn cancelled(&self) -> BoxFuture<()>;

    /// The values kept for the connection, one per type ([`Locals::get`]): a protocol's
    /// session state.
    fn locals(&self) -> Arc<Locals>;

    /// A handle that notifies the peer outside this request, for as long as the
    /// connection lasts (list changes, resource updates).
    fn notifier(&self) -> Arc<dyn ConnectionNotifier>;

    /// The request's id, when the handler answers a request and the driver tells it.
    fn request_id(&self) -> Option<Id<'static>>;

    /// The HTTP request the call came in, on an HTTP transport that records it (its
    /// token's principal, its header fields); `None` elsewhere.
    fn http(&self) -> Option<Arc<HttpRequest>>;

    /// The profile the connection runs under (what a protocol crate checks it was given).
    fn profile(&self) -> Profile;

    /// The [`Executor`] the connection's driver was given, for work that outlives a handler
    /// (an LSP server's analysis of a document's version) where a protocol crate cannot
    /// start a thread of its own: in a browser. `None` (the default) when it was given none.
    fn executor(&self) -> Option<Arc<dyn Executor>> {
        None
    }
}

/// How a driver runs work beside its connection, and sleeps, where a protocol crate can
/// neither start a thread nor find a runtime of its own (a browser page or worker, whose
/// one thread runs everything). A driver given one hands it to handlers through
/// [`Peer::executor`]; without one, a protocol crate does as it does on std (tokio's
/// runtime when there is one, else a thread).
pub trait Executor: Send + Sync + 'static {
    /// Runs `work` to its end beside the connection, on the driver's executor.
    fn spawn(&self, work: BoxFuture<()>);

    /// A future done after `wait`, on the driver's timer.
    fn sleep(&self, wait: Duration) -> BoxFuture<()>;
}

/// Notifies the peer of one connection outside any request; see [`Peer::notifier`].
pub trait ConnectionNotifier: Send + Sync {
    /// Queues notification `method` with `params`; false once the connection is gone.
    fn notify(&self, method: &str, params: Box<RawValue>) -> bool;

    /// True once the connection is gone.
    fn is_closed(&self) -> bool;
}

/// The params a [`Peer`]'s call or notification goes with: none for `null` (what a
/// protocol crate's `()` params serialize to: LSP's `workspace/workspaceFolders`,
/// `workspace/codeLens/refresh`), which JSON-RPC does not allow as params and strict peers
/// refuse (-32600); the params themselves otherwise.
pub fn params_of(params: &RawValue) -> Option<&RawValue> {
    (params.get() != "null").then_some(params)
}

/// A failed call as [`Peer::call`] gives it: the peer's error object, or `-32603` naming
/// the method and why (the connection closed, a deadline).
pub fn call_error(method: &str, error: CallError) -> ErrorObject<'static> {
    match error {
        CallError::Rpc(e) => e,
        e => ErrorObject::new(-32603, format!("{method}: {e}")),
    }
}

/// A driver's handle on its connection, as its [`DriverPeer`] uses it: what a notification's
/// handler reaches the peer through, and what every handler shares.
pub trait PeerConnection: ConnectionNotifier + Clone + Sized + 'static {
    /// The driver's context of a request ([`PeerContext`]), on this connection.
    type Request: PeerContext<Connection = Self>;

    /// Calls the peer outside any request, for a notification's handler ([`Peer::call`]).
    fn call_outside(&self, method: &str, params: Box<RawValue>) -> CallFuture;

    /// Sends a notification outside any request, for a notification's handler
    /// ([`Peer::notify`]).
    fn notify_outside(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool>;

    /// The connection's values ([`Peer::locals`]).
    fn locals(&self) -> Arc<Locals>;

    /// The connection's profile ([`Peer::profile`]).
    fn profile(&self) -> Profile;

    /// The driver's executor ([`Peer::executor`]); `None` by default.
    fn executor(&self) -> Option<Arc<dyn Executor>> {
        None
    }

    /// The connection's [`Peer`], for a protocol crate's notification handler: no request,
    /// so no progress token, no id, never cancelled.
    fn into_peer(self) -> Arc<dyn Peer> {
        Arc::new(DriverPeer::<Self, Self::Request>::connection(self))
    }
}

/// A driver's context of one request of the peer's, as its [`DriverPeer`] uses it: it derefs
/// to the request ([`PeerRequest`]: its id, its progress token), and acts on its behalf.
pub trait PeerContext: Deref<Target = PeerRequest> + Send + Sync + Sized + 'static {
    /// The driver's handle on the connection the request came in on.
    type Connection: PeerConnection<Request = Self>;

    /// The connection the request came in on.
    fn connection(&self) -> &Self::Connection;

    /// Calls the peer on behalf of the request ([`Peer::call`]).
    fn call_for(&self, method: &str, params: Box<RawValue>) -> CallFuture;

    /// Sends a notification on behalf of the request ([`Peer::notify`]).
    fn notify_for(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool>;

    /// Reports progress on the request's token ([`Peer::progress`]).
    fn progress_for(&self, value: Box<RawValue>) -> BoxFuture<bool>;

    /// True once the peer cancelled the request ([`Peer::is_cancelled`]).
    fn cancel_seen(&self) -> bool;

    /// Resolves when the peer cancels the request ([`Peer::cancelled`]).
    fn cancel_signal(&self) -> BoxFuture<()>;

    /// The HTTP request the call came in ([`Peer::http`]); `None` by default.
    fn http_request(&self) -> Option<Arc<HttpRequest>> {
        None
    }

    /// This request's [`Peer`], for a protocol crate's handler: calls and notifications go
    /// on behalf of the request (on its stream, where the transport has one), progress on
    /// its token, cancellation is its own.
    fn into_peer(self) -> Arc<dyn Peer> {
        Arc::new(DriverPeer::request(self.connection().clone(), self))
    }
}

/// The [`Peer`] of a driver whose connection handle is `C` and whose request context is
/// `R`, made from a handler's context: on behalf of the request when there is one; for a
/// notification's handler, of the connection (no progress token, no id, never cancelled).
pub struct DriverPeer<C, R> {
    connection: C,
    request: Option<R>,
}

impl<C, R> DriverPeer<C, R> {
    /// The peer of a request's handler.
    pub fn request(connection: C, request: R) -> Self {
        DriverPeer {
            connection,
            request: Some(request),
        }
    }

    /// The peer of a notification's handler.
    pub fn connection(connection: C) -> Self {
        DriverPeer {
            connection,
            request: None,
        }
    }
}

impl<C: PeerConnection, R: PeerContext> Peer for DriverPeer<C, R> {
    fn call(
        &self,
        method: &str,
        params: Box<RawValue>,
    ) -> BoxFuture<Result<Box<RawValue>, ErrorObject<'static>>> {
        match &self.request {
            Some(cx) => cx.call_for(method, params),
            None => self.connection.call_outside(method, params),
        }
    }

    fn notify(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool> {
        match &self.request {
            Some(cx) => cx.notify_for(method, params),
            None => self.connection.notify_outside(method, params),
        }
    }

    fn progress(&self, value: Box<RawValue>) -> BoxFuture<bool> {
        match &self.request {
            Some(cx) => cx.progress_for(value),
            None => Box::pin(std::future::ready(false)),
        }
    }

    fn progress_token(&self) -> Option<Id<'static>> {
        self.request.as_ref()?.progress_token().cloned()
    }

    fn is_cancelled(&self) -> bool {
        self.request.as_ref().is_some_and(R::cancel_seen)
    }

    fn cancelled(&self) -> BoxFuture<()> {
        match &self.request {
            Some(cx) => cx.cancel_signal(),
            None => Box::pin(std::future::pending()),
        }
    }

    fn locals(&self) -> Arc<Locals> {
        self.connection.locals()
    }

    fn notifier(&self) -> Arc<dyn ConnectionNotifier> {
        Arc::new(self.connection.clone())
    }

    fn request_id(&self) -> Option<Id<'static>> {
        Some(self.request.as_ref()?.id().clone())
    }

    fn http(&self) -> Option<Arc<HttpRequest>> {
        self.request.as_ref()?.http_request()
    }

    fn profile(&self) -> Profile {
        self.connection.profile()
    }

    fn executor(&self) -> Option<Arc<dyn Executor>> {
        self.connection.executor()
    }
}
