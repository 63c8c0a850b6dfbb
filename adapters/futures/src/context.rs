//! What an async handler knows about the request it answers: [`RequestContext`].

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use sansrpc::client::PeerRequest;
use sansrpc::connection::IncomingId;
use sansrpc::{Id, RawValue};

use crate::client::{CallError, Client};
use crate::router::Origin;

/// The request an async handler answers, and the connection it came on; given to handlers
/// registered with [`AsyncRouter::method_with_context`](crate::AsyncRouter::method_with_context)
/// and [`raw_method_with_context`](crate::AsyncRouter::raw_method_with_context).
///
/// - [`id`](PeerRequest::id): the request's id as the peer sent it;
/// - [`peer`](RequestContext::peer): a [`Client`] on the same connection, to call or notify
///   the peer from inside the handler (an LSP server asking its client for
///   `workspace/configuration`, an MCP server sending `sampling/createMessage`);
/// - [`cancelled`](RequestContext::cancelled) / [`is_cancelled`](RequestContext::is_cancelled):
///   the peer cancelled the request (a shutdown gives handlers their grace period, then
///   drops what still runs). A handler with a context
///   is **not** dropped on cancellation: it sees the signal, stops, and what it returns is
///   the answer (under the MCP profile a cancelled request gets no answer at all);
/// - [`report_progress`](RequestContext::report_progress): progress on the token the peer
///   put in the request (LSP `workDoneToken`, MCP `_meta.progressToken`), in the
///   connection's profile.
///
/// ```
/// use sansrpc::ErrorObject;
/// use sansrpc_futures::{AsyncRouter, RequestContext};
///
/// sansrpc::method!(Configure = "server/configure", () => String);
/// sansrpc::method!(AskClient = "client/settings", () => String);
///
/// let mut router = AsyncRouter::new();
/// router
///     .method_with_context::<Configure, _, _>(|cx: RequestContext, ()| async move {
///         // Ask the peer, from inside the handler; stop if the peer cancels.
///         let ask = std::pin::pin!(cx.peer().call::<AskClient>(&()));
///         let settings = futures::future::select(ask, cx.cancelled()).await;
///         match settings {
///             futures::future::Either::Left((Ok(s), _)) => Ok(s),
///             futures::future::Either::Left((Err(_), _)) => Err(ErrorObject::fixed(-1, "no settings")),
///             futures::future::Either::Right(_) => Err(ErrorObject::fixed(-32800, "cancelled")),
///         }
///     })
///     .unwrap();
/// ```
///
/// It derefs to the core's [`PeerRequest`]: [`id`](PeerRequest::id),
/// [`progress_token`](PeerRequest::progress_token) and
/// [`partial_result_token`](PeerRequest::partial_result_token), as in the blocking
/// adapter's context, which has the same methods (docs/client.md).
#[derive(Clone)]
pub struct RequestContext {
    request: PeerRequest,
    handle: IncomingId,
    peer: Client,
    cancel: CancelSignal,
}

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext")
            .field("request", &self.request)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl std::ops::Deref for RequestContext {
    type Target = PeerRequest;

    fn deref(&self) -> &PeerRequest {
        &self.request
    }
}

impl RequestContext {
    pub(crate) fn new(
        request: PeerRequest,
        handle: IncomingId,
        peer: Client,
        cancel: CancelSignal,
    ) -> Self {
        RequestContext {
            request,
            handle,
            peer,
            cancel,
        }
    }

    /// The context of the request whose synchronous handler runs on this thread: a core
    /// [`Router`](sansrpc::router::Router) method the driver runs inline, or a stream
    /// method's handler while it makes its stream (keep a clone in the stream:
    /// [`is_cancelled`](Self::is_cancelled) turns true once the stream ends or the peer
    /// cancels it). `None` elsewhere; an async handler registered with a context gets its
    /// own as an argument. A synchronous call handler runs to its end, so it is never
    /// cancelled; it reports progress with [`queue_progress`](Self::queue_progress).
    pub fn current() -> Option<RequestContext> {
        // SAFETY (both): a context or an origin is current only while `with_current` or
        // `with_origin` runs, which holds it (or borrows it) for that long and takes it
        // back (also when its work panics) before it returns; nothing borrowed from it
        // outlives this call (the context returned owns its parts).
        match CURRENT.try_with(Cell::get).ok()? {
            Current::None => None,
            Current::Made(cx) => Some(RequestContext::clone(unsafe { &*cx })),
            Current::Origin(origin) => unsafe { &*origin }.context(CancelSignal::never()),
        }
    }

    /// A client on the connection the request came on: calls and notifications to the
    /// peer.
    pub fn peer(&self) -> &Client {
        &self.peer
    }

    /// The HTTP request this call came in, when an HTTP transport recorded it (the MCP
    /// Streamable HTTP server does): the principal of its bearer token and its header
    /// fields. `None` on other transports.
    pub fn http(&self) -> Option<std::sync::Arc<crate::HttpRequest>> {
        self.peer.local::<crate::HttpRequests>().get(self.id())
    }

    /// True once the peer cancelled the request.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_set()
    }

    /// Completes once the request is cancelled (at once if it already is): race it
    /// against the work, e.g. with `futures::select!` or `tokio::select!`.
    pub fn cancelled(&self) -> Cancelled {
        Cancelled(self.cancel.clone())
    }

    /// Reports progress to the peer on the request's token, with the connection's progress
    /// method (LSP `$/progress {token, value}`; MCP `notifications/progress
    /// {progressToken, …value's members}`). `Ok(false)` when the request carried no token.
    pub async fn report_progress(&self, value: &RawValue) -> Result<bool, CallError> {
        self.report_on(self.progress_token(), value).await
    }

    /// Progress on `token`, when there is one, for the request.
    async fn report_on(&self, token: Option<&Id<'_>>, value: &RawValue) -> Result<bool, CallError> {
        let Some(token) = token else {
            return Ok(false);
        };
        let sent = self.peer.send_progress_for(Some(self.handle), token, value);
        sent.await.map(|()| true)
    }

    /// Like [`report_progress`](Self::report_progress) without waiting, for a synchronous
    /// handler: the notification is queued for the connection (sent after the handler
    /// returns when it runs on the connection's own task). False when the request carried
    /// no token.
    pub fn queue_progress(&self, value: &RawValue) -> bool {
        let Some(token) = self.progress_token() else {
            return false;
        };
        // The command is queued when the future is made; nobody waits for its send.
        drop(self.peer.send_progress_for(Some(self.handle), token, value));
        true
    }

    /// Sends part of the result ahead of the answer (LSP partial results:
    /// `$/progress {token: partialResultToken, value}`); the final answer then carries what
    /// was not sent this way. `Ok(false)` when the request carried no `partialResultToken`.
    pub async fn report_partial(&self, value: &RawValue) -> Result<bool, CallError> {
        self.report_on(self.partial_result_token(), value).await
    }

    /// Begins work-done progress titled `title` (LSP `$/progress {token, value: {kind:
    /// "begin", title}}`) and returns its token, for the reports and the end that follow
    /// ([`Client::send_progress`]): the request's own `workDoneToken` when it has one;
    /// otherwise, when the client's `initialize` said it handles
    /// `window/workDoneProgress/create`, a new token the client is asked to create first
    /// (as the protocol requires before server-initiated progress). `Ok(None)` when neither:
    /// the client cannot show progress for this request.
    pub async fn begin_work_done(&self, title: &str) -> Result<Option<Id<'static>>, CallError> {
        let Some(work) = self.work_done(title) else {
            return Ok(None);
        };
        if let Some(create) = &work.create {
            self.call_raw("window/workDoneProgress/create", Some(create))
                .await?;
        }
        self.peer
            .send_progress_for(Some(self.handle), &work.token, &work.begin)
            .await?;
        Ok(Some(work.token))
    }

    /// Calls the peer on behalf of the request (an MCP server's `sampling/createMessage` or
    /// `elicitation/create` from inside a tool, LSP's `workspace/configuration`): where the
    /// transport has a stream per request (MCP's Streamable HTTP) the call goes on this
    /// request's stream; elsewhere it is [`Client::call_raw`].
    pub fn call_raw(&self, method: &str, params: Option<&RawValue>) -> crate::PendingCall {
        self.peer.call_raw_for(self.handle, method, params)
    }

    /// Sends a notification on behalf of the request (a log message, say): where the
    /// transport has a stream per request (MCP's Streamable HTTP) it goes on this request's
    /// stream, ahead of its answer; elsewhere it is [`Client::notify_raw`]. Resolves once
    /// it is queued for the wire.
    pub fn notify_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        let (method, params) = sansrpc::client::owned(method, params);
        self.peer.notify_owned(method, params, Some(self.handle))
    }
}

/// This thread's [`RequestContext::current`]: a pointer to what lives on the stack of the
/// [`with_current`] or [`with_origin`] that set it, for as long as that call runs. Plain
/// data in a `Cell`, so that setting and taking it back is a store each, twice a request:
/// a `RefCell` of an owning enum cost 80 instructions of every request (the borrow flag,
/// the drop of the value replaced, and the thread-local's destructor check).
#[derive(Clone, Copy)]
enum Current {
    None,
    /// A context made (a stream handler's, with its own cancellation).
    Made(*const RequestContext),
    /// The request a synchronous handler answers: its context is made only if the handler
    /// asks for it (most never do).
    Origin(*const Origin<'static>),
}

thread_local! {
    static CURRENT: Cell<Current> = const { Cell::new(Current::None) };
}

/// Puts the context that was current back, as the work that had another returns (or
/// unwinds).
struct Restore(Current);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.set(self.0));
    }
}

/// Runs `f` with `current` as this thread's [`RequestContext::current`]; what it points to
/// must outlive the call.
fn with<R>(current: Current, f: impl FnOnce() -> R) -> R {
    let Ok(before) = CURRENT.try_with(|c| c.replace(current)) else {
        // The thread is ending: no context to give.
        return f();
    };
    let _restore = Restore(before);
    f()
}

/// Runs `f` with `cx` as this thread's [`RequestContext::current`].
pub(crate) fn with_current<R>(cx: Option<RequestContext>, f: impl FnOnce() -> R) -> R {
    match cx {
        // Kept here, and pointed to, while `f` runs.
        Some(cx) => with(Current::Made(&cx), f),
        None => f(),
    }
}

/// Runs `f` with the context of the request from `origin` as this thread's
/// [`RequestContext::current`], made only if `f` asks for it (a synchronous handler
/// answering the request). On a connection that serves nothing there is none.
pub(crate) fn with_origin<R>(origin: &Origin<'_>, f: impl FnOnce() -> R) -> R {
    if !origin.serving {
        return f();
    }
    // The lifetime is forgotten while `f` runs, which is all the pointer is current for.
    let origin = (origin as *const Origin<'_>).cast::<Origin<'static>>();
    with(Current::Origin(origin), f)
}

/// A request's cancellation flag, set by the driver, awaited by the handler.
#[derive(Clone, Default)]
pub(crate) struct CancelSignal(Arc<Signal>);

#[derive(Default)]
struct Signal {
    set: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

impl CancelSignal {
    /// A signal nobody sets (a synchronous handler runs to its end), shared: no allocation
    /// per request.
    pub(crate) fn never() -> CancelSignal {
        static NEVER: std::sync::OnceLock<CancelSignal> = std::sync::OnceLock::new();
        NEVER.get_or_init(CancelSignal::default).clone()
    }

    pub(crate) fn set(&self) {
        self.0.set.store(true, Ordering::Release);
        let wakers = std::mem::take(&mut *self.0.wakers.lock().unwrap_or_else(|e| e.into_inner()));
        for waker in wakers {
            waker.wake();
        }
    }

    fn is_set(&self) -> bool {
        self.0.set.load(Ordering::Acquire)
    }
}

/// The future of [`RequestContext::cancelled`].
#[must_use = "futures do nothing unless polled"]
pub struct Cancelled(CancelSignal);

impl fmt::Debug for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Cancelled").field(&self.0.is_set()).finish()
    }
}

impl Future for Cancelled {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.is_set() {
            return Poll::Ready(());
        }
        let mut wakers = self.0 .0.wakers.lock().unwrap_or_else(|e| e.into_inner());
        // Checked again under the lock: a `set` in between has taken the list already.
        if self.0.is_set() {
            return Poll::Ready(());
        }
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// What an async notification handler registered with
/// [`AsyncRouter::raw_notification_with_context`](crate::AsyncRouter::raw_notification_with_context)
/// knows: the connection, to notify or call the peer back.
#[derive(Debug, Clone)]
pub struct NotificationContext {
    peer: Client,
}

impl NotificationContext {
    pub(crate) fn new(peer: Client) -> Self {
        NotificationContext { peer }
    }

    /// A handle to the connection the notification came on: notify or call the peer.
    pub fn peer(&self) -> &Client {
        &self.peer
    }
}
