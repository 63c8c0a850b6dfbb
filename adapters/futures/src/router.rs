//! The async router: async handlers first, then the core [`Router`] (sync handlers, layers,
//! `rpc.discover`).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use futures::FutureExt;
use sansrpc::method::{Method, NotificationMethod, ParamsDecoder};
use sansrpc::router::{Admit, Call, RegisterError, Router, PEER_NOTIFICATIONS};
use sansrpc::{ErrorObject, RawValue};

use crate::client::Client;
use crate::context::{CancelSignal, NotificationContext, RequestContext};
use crate::stream::Producer;
use crate::subscription::{PendingSubscription, Subscribe};
use sansrpc::connection::subscriptions::MethodSubscription;

/// What an async method handler's future resolves to: the result JSON or the error object.
pub type HandlerResult = Result<Box<RawValue>, ErrorObject<'static>>;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Handlers get the params borrowed from the connection's frame: a typed one decodes them
/// before its future is made, and only a raw handler that keeps them gets its own copy.
type CallFn = dyn Fn(Option<&RawValue>) -> BoxFuture<HandlerResult> + Send + Sync;
type ContextCallFn =
    dyn Fn(RequestContext, Option<&RawValue>) -> BoxFuture<HandlerResult> + Send + Sync;

/// An async method handler, with or without a [`RequestContext`].
enum Handler {
    Plain(Box<CallFn>),
    Context(Box<ContextCallFn>),
}
/// A notification handler; it gets the connection's [`NotificationContext`] when it asked
/// for one (a connection that serves always has it).
type NotifyFn =
    dyn Fn(Option<NotificationContext>, Option<Box<RawValue>>) -> BoxFuture<()> + Send + Sync;
type OpenFn = dyn Fn(Option<&RawValue>) -> Result<Producer, ErrorObject<'static>> + Send + Sync;
/// A subscription handler, given the request's params.
type SubscribeFn = dyn Fn(Option<Box<RawValue>>) -> Subscribe + Send + Sync;

/// Async handlers per method, with the core [`Router`] behind them.
///
/// A request goes to its async handler when one is registered under its method, otherwise
/// to the core router, which runs sync handlers inside its layers and answers `rpc.`
/// names (`rpc.discover`) and unknown methods (`-32601`). Layers wrap the core router's
/// handlers only; before an async handler runs, the layers' gates
/// ([`Router::admit`]) decide whether it may and with which params (so the
/// authentication and rate-limit layers of `sansrpc::ext::interceptors` cover async
/// handlers too), and when an async handler finishes they are told
/// ([`Layer::finished`](sansrpc::router::Layer::finished)), so logging and metrics layers
/// record async calls as they record sync ones. `rpc.discover` lists every
/// method, async and stream ones included (streams with `"x-stream": true`).
///
/// The driver runs requests concurrently (up to its limit) and notifications one at a
/// time in arrival order; a request the peer cancels has its future dropped, unless its
/// handler takes a [`RequestContext`] (then it sees the cancellation and answers itself).
#[derive(Default)]
pub struct AsyncRouter {
    /// Looked up on every call: hashed (a method name is hashed faster than a sorted map
    /// compares it with a few dozen others).
    methods: HashMap<String, Handler, foldhash::fast::RandomState>,
    notifications: BTreeMap<String, Box<NotifyFn>>,
    streams: BTreeMap<String, Box<OpenFn>>,
    subscriptions: BTreeMap<String, (MethodSubscription, Box<SubscribeFn>)>,
    sync: Router,
}

impl fmt::Debug for AsyncRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncRouter")
            .field("methods", &{
                let mut names: Vec<_> = self.methods.keys().collect();
                names.sort();
                names
            })
            .field(
                "notifications",
                &self.notifications.keys().collect::<Vec<_>>(),
            )
            .field("sync", &self.sync)
            .finish()
    }
}

/// A handler's work for one request or notification, as the driver runs it.
pub(crate) enum Work {
    /// An async method handler's future, with the cancellation signal of its context (a
    /// handler without one is dropped on cancellation instead).
    Call(BoxFuture<HandlerResult>, Option<CancelSignal>),
    /// An async notification handler's future.
    Notify(BoxFuture<()>),
    /// A stream method's producer (or the handler's error), for the stream table.
    Stream(Result<Producer, ErrorObject<'static>>),
    /// A subscribe request: its handler, for a pending subscription of this declaration.
    Subscribe(MethodSubscription, Subscribe),
    /// No async handler: the core router takes it.
    Sync,
}

impl AsyncRouter {
    /// An empty router (the core router's system extensions on).
    pub fn new() -> Self {
        AsyncRouter::default()
    }

    /// Async handlers in front of an existing core router.
    pub fn from_router(router: Router) -> Self {
        AsyncRouter {
            sync: router,
            ..AsyncRouter::default()
        }
    }

    /// The core router: register sync handlers, layers and extensions on it.
    pub fn sync(&mut self) -> &mut Router {
        &mut self.sync
    }

    pub(crate) fn core(&self) -> &Router {
        &self.sync
    }

    fn check(&self, name: &str) -> Result<(), RegisterError> {
        self.check_as(name, false)
    }

    /// `notification`: the pub/sub deliveries ([`PEER_NOTIFICATIONS`]) may be handled too.
    fn check_as(&self, name: &str, notification: bool) -> Result<(), RegisterError> {
        let peer_notification = notification && PEER_NOTIFICATIONS.contains(&name);
        if name.starts_with("rpc.") && !peer_notification {
            return Err(RegisterError::Reserved(name.to_owned()));
        }
        let taken = self.methods.contains_key(name)
            || self.notifications.contains_key(name)
            || self.streams.contains_key(name)
            || self.subscriptions.contains_key(name)
            || self.sync.method_names().any(|n| n == name);
        if taken {
            return Err(RegisterError::Duplicate(name.to_owned()));
        }
        Ok(())
    }

    /// Registers an async handler for the method `M`, given as a value (a
    /// [`sansrpc::method!`] struct), so no turbofish is needed:
    /// `router.handle(Add, |p| async move { Ok(p.a + p.b) })`. The same as
    /// [`method`](AsyncRouter::method).
    pub fn handle<M, F, Fut>(&mut self, _method: M, handler: F) -> Result<(), RegisterError>
    where
        M: Method<Params: serde::de::DeserializeOwned, Result: serde::Serialize> + 'static,
        M::Result: Send,
        F: Fn(M::Params) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<M::Result, ErrorObject<'static>>> + Send + 'static,
    {
        self.method::<M, F, Fut>(handler)
    }

    /// Registers an async typed method handler under `M::NAME`. Params are decoded as the
    /// core router decodes them (by name or by position; `-32602` when they do not fit).
    pub fn method<M, F, Fut>(&mut self, handler: F) -> Result<(), RegisterError>
    where
        M: Method<Params: serde::de::DeserializeOwned, Result: serde::Serialize> + 'static,
        M::Result: Send,
        F: Fn(M::Params) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<M::Result, ErrorObject<'static>>> + Send + 'static,
    {
        self.check(M::NAME)?;
        let decoder = ParamsDecoder::<M::Params>::new();
        let call = move |params: Option<&RawValue>| -> BoxFuture<HandlerResult> {
            match decoder.decode(params) {
                Ok(params) => handler(params).map(|r| r.and_then(|r| to_raw(&r))).boxed(),
                Err(e) => futures::future::ready(Err(e)).boxed(),
            }
        };
        self.methods
            .insert(M::NAME.to_owned(), Handler::Plain(Box::new(call)));
        self.sync.list_external::<M::Params>(M::NAME, false);
        Ok(())
    }

    /// Registers an async typed method handler that gets the request's [`RequestContext`]
    /// (its id, the peer, the cancellation signal, progress) besides its params. On
    /// cancellation it is not dropped: it sees [`RequestContext::cancelled`] and its return
    /// value is the answer.
    pub fn method_with_context<M, F, Fut>(&mut self, handler: F) -> Result<(), RegisterError>
    where
        M: Method<Params: serde::de::DeserializeOwned, Result: serde::Serialize> + 'static,
        M::Result: Send,
        F: Fn(RequestContext, M::Params) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<M::Result, ErrorObject<'static>>> + Send + 'static,
    {
        self.check(M::NAME)?;
        let decoder = ParamsDecoder::<M::Params>::new();
        let call = move |cx: RequestContext, params: Option<&RawValue>| match decoder.decode(params)
        {
            Ok(params) => handler(cx, params)
                .map(|r| r.and_then(|r| to_raw(&r)))
                .boxed(),
            Err(e) => futures::future::ready(Err(e)).boxed(),
        };
        self.methods
            .insert(M::NAME.to_owned(), Handler::Context(Box::new(call)));
        self.sync.list_external::<M::Params>(M::NAME, false);
        Ok(())
    }

    /// Registers an async raw method handler that gets the request's [`RequestContext`]
    /// (see [`method_with_context`](AsyncRouter::method_with_context)) and its params lent:
    /// borrowed from the connection's frame, read before the future is made, not copied
    /// for it (what the future keeps, the handler copies: `params.map(ToOwned::to_owned)`).
    pub fn raw_method_with_context<F, Fut>(
        &mut self,
        name: &str,
        handler: F,
    ) -> Result<(), RegisterError>
    where
        F: Fn(RequestContext, Option<&RawValue>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult> + Send + 'static,
    {
        self.check(name)?;
        let call = move |cx, params: Option<&RawValue>| -> BoxFuture<HandlerResult> {
            handler(cx, params).boxed()
        };
        self.methods
            .insert(name.to_owned(), Handler::Context(Box::new(call)));
        self.sync.list_external_raw(name, false);
        Ok(())
    }

    /// Registers an async raw method handler: params as raw JSON in, the result JSON out.
    pub fn raw_method<F, Fut>(&mut self, name: &str, handler: F) -> Result<(), RegisterError>
    where
        F: Fn(Option<Box<RawValue>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult> + Send + 'static,
    {
        self.check(name)?;
        let call = move |params: Option<&RawValue>| -> BoxFuture<HandlerResult> {
            handler(params.map(ToOwned::to_owned)).boxed()
        };
        self.methods
            .insert(name.to_owned(), Handler::Plain(Box::new(call)));
        self.sync.list_external_raw(name, false);
        Ok(())
    }

    /// Registers an async typed notification handler under `N::NAME`; params that do not
    /// decode are dropped (a notification has no one to tell).
    pub fn notification<N, F, Fut>(&mut self, handler: F) -> Result<(), RegisterError>
    where
        N: NotificationMethod<Params: serde::de::DeserializeOwned> + 'static,
        F: Fn(N::Params) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.check(N::NAME)?;
        let decoder = ParamsDecoder::<N::Params>::new();
        let notify = move |_, params: Option<Box<RawValue>>| -> BoxFuture<()> {
            match decoder.decode(params.as_deref()) {
                Ok(params) => handler(params).boxed(),
                Err(_) => futures::future::ready(()).boxed(),
            }
        };
        self.notifications
            .insert(N::NAME.to_owned(), Box::new(notify));
        Ok(())
    }

    /// Registers an async raw notification handler.
    pub fn raw_notification<F, Fut>(&mut self, name: &str, handler: F) -> Result<(), RegisterError>
    where
        F: Fn(Option<Box<RawValue>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.check_as(name, true)?;
        let notify = move |_, params| -> BoxFuture<()> { handler(params).boxed() };
        self.notifications.insert(name.to_owned(), Box::new(notify));
        Ok(())
    }

    /// Registers an async raw notification handler that reaches the peer: it gets the
    /// connection's [`NotificationContext`] (to notify or call the peer back, as an LSP
    /// server publishes diagnostics after `textDocument/didChange`). Notifications still
    /// run one at a time, in arrival order.
    pub fn raw_notification_with_context<F, Fut>(
        &mut self,
        name: &str,
        handler: F,
    ) -> Result<(), RegisterError>
    where
        F: Fn(NotificationContext, Option<Box<RawValue>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.check_as(name, true)?;
        let notify = move |cx: Option<NotificationContext>, params| -> BoxFuture<()> {
            match cx {
                Some(cx) => handler(cx, params).boxed(),
                None => futures::future::ready(()).boxed(),
            }
        };
        self.notifications.insert(name.to_owned(), Box::new(notify));
        Ok(())
    }

    /// Registers a stream-returning method: the handler turns the params into a
    /// [`Stream`](futures::Stream) of items (an error item ends the stream with that error),
    /// and the caller gets `{"stream": id}` and pulls with `rpc.stream.next` (see
    /// [`sansrpc::connection::stream`]). The stream is polled only while a pull waits (cold until
    /// the first), by the connection's driver; it is dropped when it ends, when the caller
    /// cancels or stops pulling, and when the connection closes.
    pub fn stream_method<P, T, S, F>(&mut self, name: &str, handler: F) -> Result<(), RegisterError>
    where
        P: serde::de::DeserializeOwned + 'static,
        T: serde::Serialize + 'static,
        S: futures::Stream<Item = Result<T, ErrorObject<'static>>> + Send + 'static,
        F: Fn(P) -> Result<S, ErrorObject<'static>> + Send + Sync + 'static,
    {
        self.check(name)?;
        let decoder = ParamsDecoder::<P>::new();
        let open = move |params: Option<&RawValue>| -> Result<Producer, ErrorObject<'static>> {
            let params = decoder.decode(params)?;
            handler(params).map(crate::stream::typed)
        };
        self.streams.insert(name.to_owned(), Box::new(open));
        self.sync.list_external::<P>(name, true);
        Ok(())
    }

    /// Registers a method subscription ([`sansrpc::connection::subscriptions`]): a request
    /// to `declaration`'s subscribe method runs `handler` with a [`PendingSubscription`]
    /// and the params decoded as `P` (`-32602` when they do not fit). The handler accepts
    /// (the client gets the subscription id, the handler a
    /// [`SubscriptionSink`](crate::SubscriptionSink)) or rejects with an error; its future
    /// runs in the connection's driver until it finishes or the subscription is over (the
    /// client unsubscribed or went away), when it is dropped. The connection answers the
    /// unsubscribe method itself; before any subscription of the connection it is answered
    /// `false`.
    ///
    /// ```
    /// use sansrpc::connection::subscriptions::MethodSubscription;
    /// use sansrpc::ErrorObject;
    /// use sansrpc_futures::AsyncRouter;
    ///
    /// let mut router = AsyncRouter::new();
    /// router
    ///     .subscription(MethodSubscription::ethereum(), |pending, (kind,): (String,)| async move {
    ///         if kind != "newHeads" {
    ///             return pending.reject(ErrorObject::fixed(-32602, "unknown subscription"));
    ///         }
    ///         let Ok(sink) = pending.accept().await else { return };
    ///         for number in 0u64.. {
    ///             if sink.send(&serde_json::json!({ "number": format!("{number:#x}") })).await.is_err() {
    ///                 break; // Unsubscribed, or the client went away.
    ///             }
    ///             # break;
    ///         }
    ///     })
    ///     .unwrap();
    /// ```
    pub fn subscription<P, F, Fut>(
        &mut self,
        declaration: MethodSubscription,
        handler: F,
    ) -> Result<(), RegisterError>
    where
        P: serde::de::DeserializeOwned + Send + 'static,
        F: Fn(PendingSubscription, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.check(declaration.subscribe)?;
        self.check(declaration.unsubscribe)?;
        let decoder = ParamsDecoder::<P>::new();
        let handler = std::sync::Arc::new(handler);
        let open = move |params: Option<Box<RawValue>>| -> Subscribe {
            match decoder.decode(params.as_deref()) {
                Ok(params) => {
                    let handler = std::sync::Arc::clone(&handler);
                    Box::new(move |pending| handler(pending, params).boxed())
                }
                Err(e) => Box::new(move |pending: PendingSubscription| {
                    pending.reject(e);
                    futures::future::ready(()).boxed()
                }),
            }
        };
        // Taken by the connection once it has a subscription of this declaration.
        let unknown = |_: Option<&RawValue>| -> BoxFuture<HandlerResult> {
            let answer = RawValue::from_string("false".to_owned())
                .map_err(|_| ErrorObject::internal_error());
            futures::future::ready(answer).boxed()
        };
        self.methods.insert(
            declaration.unsubscribe.to_owned(),
            Handler::Plain(Box::new(unknown)),
        );
        self.sync.list_external_raw(declaration.unsubscribe, false);
        self.sync.list_external::<P>(declaration.subscribe, false);
        self.subscriptions.insert(
            declaration.subscribe.to_owned(),
            (declaration, Box::new(open)),
        );
        Ok(())
    }

    /// True when `method` is a stream method (async or of the core router).
    pub(crate) fn is_stream(&self, method: &str) -> bool {
        self.streams.contains_key(method) || self.sync.is_stream_method(method)
    }

    /// True when a request to `method` is the core router's to answer at once
    /// ([`Work::Sync`]): no async handler, stream or subscription has the name.
    #[inline]
    pub(crate) fn is_sync(&self, method: &str) -> bool {
        !self.methods.contains_key(method)
            && !self.streams.contains_key(method)
            && !self.subscriptions.contains_key(method)
            && !self.sync.is_stream_method(method)
    }

    /// The work for a request to `method`.
    pub(crate) fn request(
        &self,
        method: &str,
        params: Option<&RawValue>,
        id: &sansrpc::Id<'_>,
        origin: &Origin<'_>,
    ) -> Work {
        if self.is_sync(method) {
            // The core router runs its own layers around its own handlers.
            return Work::Sync;
        }
        let async_call = self.methods.get(method);
        let async_stream = self.streams.get(method);
        let subscription = self.subscriptions.get(method);
        // Handlers the core router does not run still pass its gates (auth, rate limit).
        let admitted = match self.admit(method, params, Some(id)) {
            Ok(admitted) => admitted,
            Err(e) => return Work::Call(futures::future::ready(Err(e)).boxed(), None),
        };
        let params = admitted_params(&admitted, params);
        match async_call {
            Some(Handler::Plain(f)) => return Work::Call(f(params), None),
            Some(Handler::Context(f)) => {
                let signal = CancelSignal::default();
                let Some(cx) = origin.context(signal.clone()) else {
                    let e = ErrorObject::internal_error();
                    return Work::Call(futures::future::ready(Err(e)).boxed(), None);
                };
                return Work::Call(f(cx, params), Some(signal));
            }
            None => {}
        }
        if let Some((declaration, open)) = subscription {
            return Work::Subscribe(declaration.clone(), open(params.map(ToOwned::to_owned)));
        }
        if let Some(open) = async_stream {
            return Work::Stream(open(params));
        }
        match self.sync.open_stream(method, params) {
            Some(opened) => Work::Stream(opened.map(crate::stream::sync)),
            None => Work::Sync,
        }
    }

    /// The work for a notification of `method`.
    pub(crate) fn notification_work(
        &self,
        method: &str,
        params: Option<&RawValue>,
        peer: Option<&Client>,
    ) -> Work {
        match self.notifications.get(method) {
            Some(f) => match self.admit(method, params, None) {
                Ok(admitted) => {
                    let params = admitted_params(&admitted, params).map(ToOwned::to_owned);
                    Work::Notify(f(peer.cloned().map(NotificationContext::new), params))
                }
                // Refused: dropped, as the core router drops a refused notification.
                Err(_) => Work::Notify(futures::future::ready(()).boxed()),
            },
            None => Work::Sync,
        }
    }

    /// What the core router's layers say of a call an async handler runs (auth, rate
    /// limit): refused, or admitted with its params as they were or changed
    /// ([`admitted_params`]).
    fn admit(
        &self,
        method: &str,
        params: Option<&RawValue>,
        id: Option<&sansrpc::Id<'_>>,
    ) -> Result<Admit, ErrorObject<'static>> {
        self.sync.admit(&Call { method, params, id })
    }
}

/// The params an async handler gets once `admitted`: the call's own, or the ones a layer
/// put in their place.
fn admitted_params<'a>(admitted: &'a Admit, params: Option<&'a RawValue>) -> Option<&'a RawValue> {
    match admitted {
        Admit::Unchanged => params,
        Admit::Params(changed) => changed.as_deref(),
    }
}

/// Where a request came from, for the context of handlers that take one: what it is made
/// of, made into a [`RequestContext`] only for a handler that asks for it (most never do,
/// and its tokens are found by scanning the params).
pub(crate) struct Origin<'a> {
    /// A client on the request's connection: some when it serves.
    pub peer: &'a Option<Client>,
    /// The connection serves (`peer` is some), told without reading `peer` (another cache
    /// line of the driver's, for each request).
    pub serving: bool,
    /// The request's handle on its connection.
    pub handle: sansrpc::connection::IncomingId,
    /// The request's id.
    pub id: &'a sansrpc::Id<'a>,
    /// The request's params (its progress tokens are read from them).
    pub params: Option<&'a RawValue>,
    /// The connection's profile (where the tokens are).
    pub profile: sansrpc::Profile,
    /// The connection's client handles `window/workDoneProgress/create`.
    pub creates_progress: bool,
}

impl Origin<'_> {
    /// The request: its id and its tokens.
    pub(crate) fn request(&self) -> sansrpc::client::PeerRequest {
        let (id, params) = (self.id, self.params);
        sansrpc::client::PeerRequest::new(id, params, self.profile, self.creates_progress)
    }

    /// The context of a handler whose cancellation is `signal`; `None` on a connection that
    /// serves nothing (no client to give it).
    pub(crate) fn context(&self, signal: CancelSignal) -> Option<RequestContext> {
        let peer = self.peer.as_ref()?.clone();
        Some(RequestContext::new(
            self.request(),
            self.handle,
            peer,
            signal,
        ))
    }
}

/// A typed result as raw JSON; `-32603` when it does not serialize.
fn to_raw<T: serde::Serialize>(value: &T) -> HandlerResult {
    RawValue::from_serialize(value).map_err(|_| ErrorObject::internal_error())
}
