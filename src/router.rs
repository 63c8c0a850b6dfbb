//! The router: handlers per method, typed or raw, middleware layers, and the `rpc.`
//! system extensions (`rpc.discover`). Synchronous handlers need no runtime at all.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;
use core::time::Duration;

#[cfg(any(feature = "discover", feature = "streams", feature = "subscriptions"))]
use serde::de::DeserializeOwned;
#[cfg(feature = "discover")]
use serde_json::{json, Map, Value};

use crate::connection::{Connection, Event, IncomingId};
use crate::error::ErrorObject;
use crate::id::Id;
use crate::message::{Notification, Request};
use crate::method::{
    decode_params, param_shape, write_json, Method, NotificationMethod, ParamShape,
};
use crate::raw::RawValue;

pub use crate::error::Outcome;

type CallFn = dyn Fn(Option<&RawValue>, &mut Vec<u8>) -> Outcome + Send + Sync;
type NotifyFn = dyn Fn(Option<&RawValue>) + Send + Sync;
type StageFn = dyn Fn(Option<&RawValue>) -> Staged + Send + Sync;

/// The rest of a staged handler ([`Router::raw_staged_method`]): it writes the result (one
/// JSON value, checked) where the driver runs handlers, after the first part ran at
/// hand-out.
pub type Staged = Box<dyn FnOnce(&mut Vec<u8>) -> Outcome + Send>;
#[cfg(feature = "streams")]
type OpenFn = dyn Fn(Option<&RawValue>) -> Result<crate::connection::stream::BoxSource, ErrorObject<'static>>
    + Send
    + Sync;

/// A method subscription's handler, given the request's params: its work for the pending
/// subscription (of the driver's type), or the error the subscribe is answered with.
#[cfg(feature = "subscriptions")]
type SubscribeFn = dyn Fn(Option<&RawValue>) -> Result<Opened, ErrorObject<'static>> + Send + Sync;

/// A subscription handler's work for one subscribe request
/// ([`Router::open_subscription`]), as the driver that registered it made it
/// ([`Router::subscription_with`]): the driver downcasts it to its own type and runs it
/// where it runs handlers, with the request's pending subscription.
#[cfg(feature = "subscriptions")]
pub type Opened = Box<dyn core::any::Any + Send>;

#[cfg(feature = "subscriptions")]
use crate::connection::subscriptions::MethodSubscription;

enum Handler {
    Call(Box<CallFn>),
    /// Two parts: one when the request is handed out, the rest where handlers run.
    Stage(Box<StageFn>),
    Notify(Box<NotifyFn>),
}

struct Entry {
    handler: Handler,
    /// True when the handler's output comes from serde_json, so it needs no re-validation.
    trusted: bool,
    #[cfg(feature = "discover")]
    shape: ParamShape,
    #[cfg(feature = "discover")]
    doc: MethodDoc,
}

/// The registered methods, sorted by the length of their name, then by its bytes. Finding
/// one compares lengths (an integer) at each step of a binary search, and bytes only with
/// a name of the same length: a B-tree by name compared every name on its path byte by
/// byte, and an LSP server's names share long prefixes (`textDocument/...`).
#[derive(Default)]
struct Methods(Vec<(String, Entry)>);

impl Methods {
    /// Where `name` is (`Ok`), or where it would go (`Err`). Stops at the first equal name:
    /// a found method costs one comparison of bytes.
    #[inline]
    fn position(&self, name: &str) -> Result<usize, usize> {
        let (mut low, mut high) = (0, self.0.len());
        while low < high {
            let mid = low + (high - low) / 2;
            let key = self.0[mid].0.as_bytes();
            let order = match key.len().cmp(&name.len()) {
                Ordering::Equal => key.cmp(name.as_bytes()),
                order => order,
            };
            match order {
                Ordering::Less => low = mid + 1,
                Ordering::Greater => high = mid,
                Ordering::Equal => return Ok(mid),
            }
        }
        Err(low)
    }

    #[inline]
    fn get(&self, name: &str) -> Option<&Entry> {
        self.position(name).ok().map(|at| &self.0[at].1)
    }

    #[cfg(feature = "discover")]
    fn get_mut(&mut self, name: &str) -> Option<&mut Entry> {
        self.position(name).ok().map(|at| &mut self.0[at].1)
    }

    /// The names in alphabetical order.
    fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.0.iter().map(|(name, _)| name.as_str()).collect();
        names.sort_unstable();
        names
    }
}

/// What `rpc.discover` says about a method beyond its name and param names.
#[cfg(feature = "discover")]
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct MethodDoc {
    /// A one-line summary.
    pub summary: Option<String>,
    /// A JSON Schema of the params object; its `properties` give each param's schema.
    pub params_schema: Option<Value>,
    /// A JSON Schema of the result.
    pub result_schema: Option<Value>,
}

#[cfg(feature = "discover")]
impl MethodDoc {
    /// A doc with a summary.
    pub fn summary(summary: impl Into<String>) -> Self {
        MethodDoc {
            summary: Some(summary.into()),
            ..MethodDoc::default()
        }
    }

    /// Sets the params schema.
    pub fn params_schema(mut self, schema: Value) -> Self {
        self.params_schema = Some(schema);
        self
    }

    /// Sets the result schema.
    pub fn result_schema(mut self, schema: Value) -> Self {
        self.result_schema = Some(schema);
        self
    }
}

/// Registration refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// A handler with this name is already registered (seed 000 §9.2).
    Duplicate(String),
    /// Names starting with `rpc.` are reserved for system extensions.
    Reserved(String),
    /// No method with this name is registered (from [`Router::document`]).
    Unknown(String),
    /// A system extension's name must start with `rpc.` (from [`Router::extension`]).
    NotReserved(String),
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::Duplicate(n) => write!(f, "method {n:?} is already registered"),
            RegisterError::Reserved(n) => {
                write!(f, "method {n:?} uses the reserved prefix \"rpc.\"")
            }
            RegisterError::Unknown(n) => write!(f, "no method {n:?} is registered"),
            RegisterError::NotReserved(n) => write!(f, "extension {n:?} must start with \"rpc.\""),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for RegisterError {}

/// One call as layers see it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The method name.
    pub method: &'a str,
    /// The params, if any.
    pub params: Option<&'a RawValue>,
    /// The request id; `None` for a notification (whose outcome is discarded).
    pub id: Option<&'a Id<'a>>,
}

/// Middleware around every call and notification.
///
/// Layers run in registration order on the way in and in reverse order on the way out
/// (seed 000 §14): the first registered is the outermost. A layer answers early by returning
/// without running [`Next::run`] (an error for a refused caller, or `Ok` after writing a
/// result into `out`); it observes timing by reading its own clock around `next.run`.
pub trait Layer: Send + Sync {
    /// Handles `call`, usually by passing it on with `next.run(call, out)`.
    fn call(&self, call: &Call<'_>, out: &mut Vec<u8>, next: Next<'_>) -> Outcome;

    /// Decides whether a call that the router does not run itself (an adapter's async
    /// handler, through [`Router::admit`]) may go ahead, and with which params. The default
    /// lets every call through unchanged; a layer that refuses calls or rewrites their
    /// params in [`Layer::call`] does the same here, or async handlers escape it.
    fn admit(&self, call: &Call<'_>) -> Result<Admit, ErrorObject<'static>> {
        let _ = call;
        Ok(Admit::Unchanged)
    }

    /// Observes the size of an incoming batch, before its calls run; does nothing unless
    /// overridden. Called by [`Router::observe_batches`] (and so by [`Router::serve`]).
    fn batch(&self, size: usize) {
        let _ = size;
    }

    /// Observes a call the router did not run itself (an adapter's async handler, admitted
    /// by [`Layer::admit`]) once it finished, with its outcome and how long it ran (as the
    /// adapter measured it): what [`Layer::call`] sees around a sync handler, for layers
    /// that record rather than change calls (metrics, logging). Does nothing unless
    /// overridden. Called by [`Router::finished`].
    fn finished(&self, call: &Call<'_>, outcome: &Outcome, elapsed: Duration) {
        let _ = (call, outcome, elapsed);
    }
}

/// What [`Layer::admit`] and [`Router::admit`] let through.
#[derive(Debug)]
pub enum Admit {
    /// The call, as it was.
    Unchanged,
    /// The call with these params instead (a credential removed, for one).
    Params(Option<Box<RawValue>>),
}

/// The rest of the chain, from inside a [`Layer`].
pub struct Next<'r> {
    router: &'r Router,
    layer: usize,
}

impl Next<'_> {
    /// Runs the remaining layers and then the handler.
    pub fn run(self, call: &Call<'_>, out: &mut Vec<u8>) -> Outcome {
        self.router.run_from(self.layer, call, out)
    }
}

impl fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next").field("layer", &self.layer).finish()
    }
}

/// The `rpc.` notifications a peer's extensions send (pub/sub deliveries,
/// `sansrpc-pubsub`): the only `rpc.` names an application registers handlers for
/// ([`Router::raw_notification`], [`Router::notification`]), on the subscribing side.
pub const PEER_NOTIFICATIONS: [&str; 2] = ["rpc.notification", "rpc.notification.persistent"];

/// Handlers registered per method, layers around them, and the system extensions.
///
/// ```
/// use sansrpc::router::{Reply, Router};
/// use sansrpc::method::Method;
/// use sansrpc::{ErrorObject, Id, Request, Version};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Pair { a: f64, b: f64 }
///
/// enum Add {}
/// impl Method for Add { const NAME: &'static str = "add"; type Params = Pair; type Result = f64; }
/// enum Divide {}
/// impl Method for Divide { const NAME: &'static str = "divide"; type Params = Pair; type Result = f64; }
///
/// let mut router = Router::new();
/// let mut math = router.group("math");
/// math.method::<Add, _>(|p| Ok(p.a + p.b)).unwrap();
/// math.method::<Divide, _>(|p| {
///     if p.b == 0.0 { Err(ErrorObject::new(1001, "division by zero")) } else { Ok(p.a / p.b) }
/// }).unwrap();
///
/// let mut reply = Reply::default();
/// let call = |method: &'static str, params: &'static str| Request {
///     id: Id::number(1),
///     method: method.into(),
///     params: Some(sansrpc::RawValue::from_json(params).unwrap().into()),
///     version: Version::V2,
/// };
/// // By position or by name, into the same params type.
/// router.dispatch(&call("math.add", "[1, 2]"), &mut reply);
/// assert_eq!(reply.result_json(), Some("3.0"));
/// router.dispatch(&call("math.add", r#"{"b": 2, "a": 1}"#), &mut reply);
/// assert_eq!(reply.result_json(), Some("3.0"));
/// router.dispatch(&call("math.divide", "[1, 0]"), &mut reply);
/// assert_eq!(reply.error().unwrap().code, 1001);
/// router.dispatch(&call("math.nope", "[]"), &mut reply);
/// assert_eq!(reply.error().unwrap().code, -32601);
/// ```
pub struct Router {
    methods: Methods,
    /// Providers of `rpc.` names, consulted before user methods.
    providers: BTreeMap<String, Box<CallFn>>,
    layers: Vec<Box<dyn Layer>>,
    /// Stream-returning methods (`connection::stream`), by name.
    #[cfg(feature = "streams")]
    streams: BTreeMap<String, Box<OpenFn>>,
    /// Method subscriptions (`connection::subscriptions`), by subscribe method.
    #[cfg(feature = "subscriptions")]
    subscriptions: BTreeMap<String, (MethodSubscription, Box<SubscribeFn>)>,
    /// Methods served elsewhere (an adapter's async handlers, streams), listed by
    /// `rpc.discover`: their params' shape, documentation, and whether they open a stream.
    #[cfg(feature = "discover")]
    listed: BTreeMap<String, (ParamShape, MethodDoc, bool)>,
    extensions: bool,
    #[cfg(feature = "discover")]
    title: String,
    #[cfg(feature = "discover")]
    version: String,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router")
            .field("methods", &self.methods.names())
            .field("layers", &self.layers.len())
            .field("extensions", &self.extensions)
            .finish()
    }
}

impl Default for Router {
    fn default() -> Self {
        Router::new()
    }
}

impl Router {
    /// An empty router with the system extensions on.
    pub fn new() -> Self {
        Router {
            methods: Methods::default(),
            providers: BTreeMap::new(),
            layers: Vec::new(),
            #[cfg(feature = "streams")]
            streams: BTreeMap::new(),
            #[cfg(feature = "subscriptions")]
            subscriptions: BTreeMap::new(),
            #[cfg(feature = "discover")]
            listed: BTreeMap::new(),
            extensions: true,
            #[cfg(feature = "discover")]
            title: "sansrpc service".to_string(),
            #[cfg(feature = "discover")]
            version: "0.0.0".to_string(),
        }
    }

    /// Sets the title and version `rpc.discover` reports.
    #[cfg(feature = "discover")]
    pub fn info(&mut self, title: impl Into<String>, version: impl Into<String>) -> &mut Self {
        self.title = title.into();
        self.version = version.into();
        self
    }

    /// Switches the `rpc.` system extensions on or off; off, every `rpc.` name is
    /// "Method not found".
    pub fn extensions(&mut self, on: bool) -> &mut Self {
        self.extensions = on;
        self
    }

    /// Registers a system extension: a raw handler for a name starting with `rpc.`,
    /// dispatched before user methods and switched off with [`Router::extensions`]. The
    /// built-in `rpc.discover` cannot be replaced.
    pub fn extension<F>(&mut self, name: &str, handler: F) -> Result<(), RegisterError>
    where
        F: Fn(Option<&RawValue>, &mut Vec<u8>) -> Outcome + Send + Sync + 'static,
    {
        if !name.starts_with("rpc.") {
            return Err(RegisterError::NotReserved(name.to_string()));
        }
        if (cfg!(feature = "discover") && name == "rpc.discover")
            || self.providers.contains_key(name)
        {
            return Err(RegisterError::Duplicate(name.to_string()));
        }
        self.providers.insert(name.to_string(), Box::new(handler));
        Ok(())
    }

    /// Adds a layer; the first added is the outermost.
    pub fn layer(&mut self, layer: impl Layer + 'static) -> &mut Self {
        self.layers.push(Box::new(layer));
        self
    }

    /// Registers methods under `prefix.` (`math` gives `math.add`).
    pub fn group(&mut self, prefix: &str) -> Group<'_> {
        Group {
            router: self,
            prefix: alloc::format!("{prefix}."),
        }
    }

    fn insert(
        &mut self,
        name: String,
        handler: Handler,
        trusted: bool,
        shape: ParamShape,
    ) -> Result<(), RegisterError> {
        let peer_notification =
            matches!(handler, Handler::Notify(_)) && PEER_NOTIFICATIONS.contains(&name.as_str());
        if name.starts_with("rpc.") && !peer_notification {
            return Err(RegisterError::Reserved(name));
        }
        let at = match self.methods.position(&name) {
            Ok(_) => return Err(RegisterError::Duplicate(name)),
            Err(at) => at,
        };
        #[cfg(not(feature = "discover"))]
        let _ = shape;
        let entry = Entry {
            handler,
            trusted,
            #[cfg(feature = "discover")]
            shape,
            #[cfg(feature = "discover")]
            doc: MethodDoc::default(),
        };
        self.methods.0.insert(at, (name, entry));
        Ok(())
    }

    /// Registers a typed method handler under `M::NAME`.
    pub fn method<M, F>(&mut self, handler: F) -> Result<(), RegisterError>
    where
        M: Method<Params: serde::de::DeserializeOwned, Result: serde::Serialize> + 'static,
        F: Fn(M::Params) -> Result<M::Result, ErrorObject<'static>> + Send + Sync + 'static,
    {
        self.typed_method::<M, F>(M::NAME.to_string(), handler)
    }

    /// Registers a typed notification handler under `N::NAME`. Params that do not decode
    /// are dropped (a notification has no one to tell).
    pub fn notification<N, F>(&mut self, handler: F) -> Result<(), RegisterError>
    where
        N: NotificationMethod<Params: serde::de::DeserializeOwned> + 'static,
        F: Fn(N::Params) + Send + Sync + 'static,
    {
        self.typed_notification::<N, F>(N::NAME.to_string(), handler)
    }

    /// Registers a raw method handler: params as raw JSON in, one JSON value appended to the
    /// output buffer (checked; anything else is answered `-32603`).
    pub fn raw_method<F>(&mut self, name: &str, handler: F) -> Result<(), RegisterError>
    where
        F: Fn(Option<&RawValue>, &mut Vec<u8>) -> Outcome + Send + Sync + 'static,
    {
        self.insert(
            name.to_string(),
            Handler::Call(Box::new(handler)),
            false,
            ParamShape::default(),
        )
    }

    /// Registers a raw method handler in two parts: `handler` runs when the driver hands
    /// the request out, in arrival order with the notifications around it (on a blocking
    /// driver, on the connection's thread, so keep it short and never wait there), and
    /// returns the rest, which runs where the driver runs handlers (a worker) and writes
    /// the result as [`raw_method`](Self::raw_method)'s handler does. For a handler that
    /// must see the connection's state as of its request's arrival (an LSP server's
    /// documents) on a driver that runs handlers later. Drivers that dispatch at once
    /// ([`dispatch`](Self::dispatch)) run both parts together; with [layers](Self::layer)
    /// registered, so does [`stage`](Self::stage)'s driver.
    pub fn raw_staged_method<F>(&mut self, name: &str, handler: F) -> Result<(), RegisterError>
    where
        F: Fn(Option<&RawValue>) -> Staged + Send + Sync + 'static,
    {
        self.insert(
            name.to_string(),
            Handler::Stage(Box::new(handler)),
            false,
            ParamShape::default(),
        )
    }

    /// Runs the first part of a staged method ([`raw_staged_method`](Self::raw_staged_method))
    /// for `request`, as a driver hands it out; the rest goes to
    /// [`run_staged`](Self::run_staged) where the driver runs handlers. `None` when
    /// `request` is not for a staged method, or when layers are registered (a layer wraps
    /// a whole call): [`dispatch`](Self::dispatch) it then.
    pub fn stage(&self, request: &Request<'_>) -> Option<Staged> {
        if !self.layers.is_empty() {
            return None;
        }
        let Handler::Stage(f) = &self.methods.get(&request.method)?.handler else {
            return None;
        };
        let params = request.params.as_deref();
        #[cfg(feature = "std")]
        let staged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(params)))
            .unwrap_or_else(|_| Box::new(|_: &mut Vec<u8>| Err(ErrorObject::internal_error())));
        #[cfg(not(feature = "std"))]
        let staged = f(params);
        Some(staged)
    }

    /// Runs the rest of a staged method ([`stage`](Self::stage)) into `reply`, as
    /// [`dispatch`](Self::dispatch) would have answered the whole request.
    pub fn run_staged(&self, staged: Staged, reply: &mut Reply) {
        reply.buf.clear();
        let outcome = self.run_checked(staged, &mut reply.buf, false);
        reply.outcome = Some(outcome);
        reply.checked = true;
    }

    /// Registers a raw notification handler.
    pub fn raw_notification<F>(&mut self, name: &str, handler: F) -> Result<(), RegisterError>
    where
        F: Fn(Option<&RawValue>) + Send + Sync + 'static,
    {
        self.insert(
            name.to_string(),
            Handler::Notify(Box::new(handler)),
            false,
            ParamShape::default(),
        )
    }

    fn typed_method<M, F>(&mut self, name: String, handler: F) -> Result<(), RegisterError>
    where
        M: Method<Params: serde::de::DeserializeOwned, Result: serde::Serialize> + 'static,
        F: Fn(M::Params) -> Result<M::Result, ErrorObject<'static>> + Send + Sync + 'static,
    {
        let shape = param_shape::<M::Params>();
        let decode_shape = shape.clone();
        let call = move |params: Option<&RawValue>, out: &mut Vec<u8>| -> Outcome {
            let params = decode_params::<M::Params>(params, &decode_shape)?;
            let result = handler(params)?;
            write_json(out, &result).map_err(|_| ErrorObject::internal_error())
        };
        self.insert(name, Handler::Call(Box::new(call)), true, shape)
    }

    fn typed_notification<N, F>(&mut self, name: String, handler: F) -> Result<(), RegisterError>
    where
        N: NotificationMethod<Params: serde::de::DeserializeOwned> + 'static,
        F: Fn(N::Params) + Send + Sync + 'static,
    {
        let shape = param_shape::<N::Params>();
        let decode_shape = shape.clone();
        let notify = move |params: Option<&RawValue>| {
            if let Ok(params) = decode_params::<N::Params>(params, &decode_shape) {
                handler(params);
            }
        };
        self.insert(name, Handler::Notify(Box::new(notify)), true, shape)
    }

    /// Registers a stream-returning method: the handler turns the params into an iterator
    /// of items, and the caller gets `{"stream": id}` and pulls the items with
    /// `rpc.stream.next` (see [`connection::stream`](crate::connection::stream)). Nothing is taken from
    /// the iterator before the first pull. Layers do not wrap it; `rpc.discover` lists it
    /// with `"x-stream": true`. The adapter keeps the stream table, so this needs one that serves streams
    /// (both sansrpc adapters do): the blocking adapter runs the iterator on its handler
    /// pool, a batch of up to the pull's `max` items at a time; the async drivers run it
    /// inside the driver, so there its `next` must not block.
    #[cfg(feature = "streams")]
    pub fn stream_method<P, T, I, F>(&mut self, name: &str, handler: F) -> Result<(), RegisterError>
    where
        P: DeserializeOwned + 'static,
        T: serde::Serialize + 'static,
        I: Iterator<Item = Result<T, ErrorObject<'static>>> + Send + 'static,
        F: Fn(P) -> Result<I, ErrorObject<'static>> + Send + Sync + 'static,
    {
        if name.starts_with("rpc.") {
            return Err(RegisterError::Reserved(name.to_string()));
        }
        if self.methods.get(name).is_some() || self.streams.contains_key(name) {
            return Err(RegisterError::Duplicate(name.to_string()));
        }
        let shape = param_shape::<P>();
        let open = move |params: Option<&RawValue>| {
            let params = decode_params::<P>(params, &shape)?;
            handler(params).map(crate::connection::stream::from_iter)
        };
        self.streams.insert(name.to_string(), Box::new(open));
        #[cfg(feature = "discover")]
        self.listed.insert(
            name.to_string(),
            (param_shape::<P>(), MethodDoc::default(), true),
        );
        Ok(())
    }

    /// Registers a method subscription ([`connection::subscriptions`](crate::connection::subscriptions))
    /// for a driver that serves them: a request to `declaration`'s subscribe method has
    /// its params decoded as `P` (`-32602` when they do not fit; the layers' gates decide
    /// first, as for every call) and given to `open`, whose value the driver takes back
    /// from [`open_subscription`](Self::open_subscription) and runs where it runs handlers.
    /// The value's type is the driver's own (`sansrpc-runtime`'s `SubscriptionRouter`
    /// registers a handler of its `PendingSubscription` this way); the router only keeps
    /// it. The connection answers the unsubscribe method itself; before any subscription
    /// of the connection the router answers it `false`. A driver that does not serve
    /// subscriptions ([`dispatch`](Self::dispatch)) answers the subscribe method `-32601`.
    #[cfg(feature = "subscriptions")]
    pub fn subscription_with<P, T, F>(
        &mut self,
        declaration: MethodSubscription,
        open: F,
    ) -> Result<(), RegisterError>
    where
        P: DeserializeOwned + 'static,
        T: Send + 'static,
        F: Fn(P) -> T + Send + Sync + 'static,
    {
        let name = declaration.subscribe;
        if name.starts_with("rpc.") {
            return Err(RegisterError::Reserved(name.to_string()));
        }
        #[cfg(feature = "streams")]
        let stream = self.streams.contains_key(name);
        #[cfg(not(feature = "streams"))]
        let stream = false;
        if self.methods.get(name).is_some() || stream || self.subscriptions.contains_key(name) {
            return Err(RegisterError::Duplicate(name.to_string()));
        }
        // Taken by the connection once it has a subscription of this declaration.
        self.raw_method(declaration.unsubscribe, |_, out| {
            out.extend_from_slice(b"false");
            Ok(())
        })?;
        let shape = param_shape::<P>();
        let open = move |params: Option<&RawValue>| -> Result<Opened, ErrorObject<'static>> {
            Ok(Box::new(open(decode_params::<P>(params, &shape)?)))
        };
        #[cfg(feature = "discover")]
        self.listed.insert(
            name.to_string(),
            (param_shape::<P>(), MethodDoc::default(), false),
        );
        self.subscriptions
            .insert(name.to_string(), (declaration, Box::new(open)));
        Ok(())
    }

    /// The declaration of the subscription whose subscribe method is `method`, if one was
    /// registered with [`Router::subscription_with`].
    #[cfg(feature = "subscriptions")]
    pub fn subscription_of(&self, method: &str) -> Option<&MethodSubscription> {
        self.subscriptions
            .get(method)
            .map(|(declaration, _)| declaration)
    }

    /// A subscribe request `call` to a method registered with [`Router::subscription_with`],
    /// past the layers' gates: the handler's work with its declaration, or the error to
    /// answer (refused by a layer, params that do not fit); `None` when `call`'s method is
    /// not a subscribe method.
    #[cfg(feature = "subscriptions")]
    pub fn open_subscription(
        &self,
        call: &Call<'_>,
    ) -> Option<(&MethodSubscription, Result<Opened, ErrorObject<'static>>)> {
        let (declaration, open) = self.subscriptions.get(call.method)?;
        let opened = self.admit(call).and_then(|admitted| match admitted {
            Admit::Unchanged => open(call.params),
            Admit::Params(params) => open(params.as_deref()),
        });
        Some((declaration, opened))
    }

    /// Lists a method served outside this router (an adapter's async handler, with params
    /// `P`) in `rpc.discover`, so the document shows every method the connection answers.
    /// `stream` marks a method that opens a stream (`"x-stream": true`). Adapters call it
    /// when they register a handler; it routes nothing.
    #[cfg(feature = "discover")]
    pub fn list_external<P: DeserializeOwned>(&mut self, name: &str, stream: bool) {
        self.listed.insert(
            name.to_string(),
            (param_shape::<P>(), MethodDoc::default(), stream),
        );
    }

    /// Like [`list_external`](Router::list_external), for a method whose params are raw JSON.
    #[cfg(feature = "discover")]
    pub fn list_external_raw(&mut self, name: &str, stream: bool) {
        self.listed.insert(
            name.to_string(),
            (ParamShape::default(), MethodDoc::default(), stream),
        );
    }

    /// True when `method` was registered with [`Router::stream_method`].
    #[cfg(feature = "streams")]
    pub fn is_stream_method(&self, method: &str) -> bool {
        self.streams.contains_key(method)
    }

    /// Opens a stream of a method registered with [`Router::stream_method`]: the item
    /// source, or the handler's error; `None` when `method` is not a stream method.
    #[cfg(feature = "streams")]
    pub fn open_stream(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Option<Result<crate::connection::stream::BoxSource, ErrorObject<'static>>> {
        self.streams.get(method).map(|open| open(params))
    }

    /// Attaches documentation (summary, schemas) that `rpc.discover` reports.
    #[cfg(feature = "discover")]
    pub fn document(&mut self, name: &str, doc: MethodDoc) -> Result<(), RegisterError> {
        if let Some(entry) = self.methods.get_mut(name) {
            entry.doc = doc;
            return Ok(());
        }
        let listed = self
            .listed
            .get_mut(name)
            .ok_or_else(|| RegisterError::Unknown(name.to_string()))?;
        listed.1 = doc;
        Ok(())
    }

    /// The registered method names, in order.
    pub fn method_names(&self) -> impl Iterator<Item = &str> {
        self.methods.names().into_iter()
    }

    /// Handles a request through the layers and its handler, leaving the outcome in `reply`.
    pub fn dispatch(&self, request: &Request<'_>, reply: &mut Reply) {
        reply.buf.clear();
        let call = Call {
            method: &request.method,
            params: request.params.as_deref(),
            id: Some(&request.id),
        };
        let outcome = self.run_from(0, &call, &mut reply.buf);
        reply.outcome = Some(outcome);
        reply.checked = self.layers.is_empty();
    }

    /// Handles a notification through the layers and its handler; nothing is answered.
    pub fn notify(&self, notification: &Notification<'_>) {
        let call = Call {
            method: &notification.method,
            params: notification.params.as_deref(),
            id: None,
        };
        let mut sink = Vec::new();
        let _ = self.run_from(0, &call, &mut sink);
    }

    /// Asks every layer, in order, whether `call` may go to a handler the router does not
    /// run itself (an adapter's async handler), and with which params: each layer sees the
    /// params the previous one let through. The first refusal is the answer.
    pub fn admit(&self, call: &Call<'_>) -> Result<Admit, ErrorObject<'static>> {
        let mut admitted = Admit::Unchanged;
        for layer in &self.layers {
            let params = match &admitted {
                Admit::Unchanged => call.params,
                Admit::Params(p) => p.as_deref(),
            };
            let current = Call {
                method: call.method,
                params,
                id: call.id,
            };
            if let Admit::Params(p) = layer.admit(&current)? {
                admitted = Admit::Params(p);
            }
        }
        Ok(admitted)
    }

    /// Tells every layer, innermost first, that a call it admitted through
    /// [`admit`](Router::admit) finished ([`Layer::finished`]). Adapters call it when an
    /// async handler completes.
    pub fn finished(&self, call: &Call<'_>, outcome: &Outcome, elapsed: Duration) {
        for layer in self.layers.iter().rev() {
            layer.finished(call, outcome, elapsed);
        }
    }

    /// True when layers are registered (an adapter skips measuring calls otherwise).
    pub fn has_layers(&self) -> bool {
        !self.layers.is_empty()
    }

    /// Hands the sizes of the batches `connection` has received since the last call to
    /// every layer's [`Layer::batch`]. Drivers that
    /// drain events themselves call it after each input; [`Router::serve`] calls it.
    pub fn observe_batches(&self, connection: &mut Connection) {
        while let Some(size) = connection.poll_batch_size() {
            for layer in &self.layers {
                layer.batch(size);
            }
        }
    }

    /// Drains `connection`'s events with the handlers run at once: requests are dispatched
    /// and answered, notifications handled, the batch sizes go to the layers; every other
    /// event (answers to our calls, closing, what is only worth logging) goes to `other`.
    /// True when any event was handled. This is the event step of a driver whose handlers
    /// are all synchronous (see [`driver`](crate::driver)). Stream methods need a driver
    /// that produces items ([`Connection::produce`](crate::connection::Connection::produce));
    /// here they are answered `-32601`.
    pub fn serve(
        &self,
        connection: &mut Connection,
        reply: &mut Reply,
        mut other: impl FnMut(Event<'_>),
    ) -> bool {
        use Event as E;
        self.observe_batches(connection);
        let mut any = false;
        while let Some(event) = connection.poll_event() {
            any = true;
            match event {
                E::Request { handle, request } => {
                    self.dispatch(&request, reply);
                    reply.answer(connection, handle);
                }
                E::Notification(n) => {
                    self.notify(&n);
                    connection.notification_done();
                }
                other_event => other(other_event),
            }
        }
        any
    }

    fn run_from(&self, layer: usize, call: &Call<'_>, out: &mut Vec<u8>) -> Outcome {
        match self.layers.get(layer) {
            Some(l) => l.call(
                call,
                out,
                Next {
                    router: self,
                    layer: layer + 1,
                },
            ),
            None => self.handle(call, out),
        }
    }

    /// The innermost step: system extensions first, then the user's handler.
    fn handle(&self, call: &Call<'_>, out: &mut Vec<u8>) -> Outcome {
        #[cfg(feature = "tracing")]
        let _span = tracing::debug_span!(
            "rpc.handle",
            method = call.method,
            notification = call.id.is_none()
        )
        .entered();
        if call.method.starts_with("rpc.") {
            if !self.extensions {
                return Err(ErrorObject::method_not_found());
            }
            #[cfg(feature = "discover")]
            if call.method == "rpc.discover" {
                return write_json(out, &self.discover())
                    .map_err(|_| ErrorObject::internal_error());
            }
            if let Some(f) = self.providers.get(call.method) {
                return self.run_checked(|out| f(call.params, out), out, false);
            }
            if !PEER_NOTIFICATIONS.contains(&call.method) {
                return Err(ErrorObject::method_not_found());
            }
        }
        let Some(entry) = self.methods.get(call.method) else {
            return Err(ErrorObject::method_not_found());
        };
        match &entry.handler {
            Handler::Call(f) => self.run_checked(|out| f(call.params, out), out, entry.trusted),
            Handler::Stage(f) => self.run_checked(|out| f(call.params)(out), out, false),
            Handler::Notify(f) if call.id.is_none() => guard(|| {
                f(call.params);
                Ok(())
            }),
            // A request to a method that exists only as a notification has no answer to give.
            Handler::Notify(_) => Err(ErrorObject::method_not_found()),
        }
    }

    /// Runs a call handler; unless its output comes from serde_json (`trusted`), checks that
    /// it wrote exactly one JSON value.
    fn run_checked(
        &self,
        f: impl FnOnce(&mut Vec<u8>) -> Outcome,
        out: &mut Vec<u8>,
        trusted: bool,
    ) -> Outcome {
        let start = out.len();
        let outcome = guard(|| f(out));
        if outcome.is_ok()
            && !trusted
            && crate::json::validate(&out[start..], crate::Limits::MAX_DEPTH_CAP).is_err()
        {
            out.truncate(start);
            return Err(ErrorObject::internal_error());
        }
        outcome
    }

    /// The OpenRPC 1.x document of the registered methods.
    #[cfg(feature = "discover")]
    pub fn discover(&self) -> Value {
        let here = self
            .methods
            .0
            .iter()
            .filter(|(_, e)| matches!(e.handler, Handler::Call(_) | Handler::Stage(_)))
            .map(|(name, e)| (name, &e.shape, &e.doc, false));
        let listed = self
            .listed
            .iter()
            .map(|(n, (s, d, stream))| (n, s, d, *stream));
        let mut all: Vec<_> = here.chain(listed).collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        all.dedup_by(|a, b| a.0 == b.0);
        let methods: Vec<Value> = all
            .into_iter()
            .map(|(name, shape, doc, stream)| {
                let props = doc.params_schema.as_ref().and_then(|s| s.get("properties"));
                let params: Vec<Value> = match (shape.names, shape.arity) {
                    (Some(names), _) => names
                        .iter()
                        .map(|n| {
                            let schema = props.and_then(|p| p.get(*n)).cloned().unwrap_or_else(|| json!({}));
                            json!({"name": n, "schema": schema})
                        })
                        .collect(),
                    (None, Some(arity)) => (0..arity).map(|i| json!({"name": alloc::format!("arg{i}"), "schema": {}})).collect(),
                    (None, None) => Vec::new(),
                };
                let mut m = Map::new();
                m.insert("name".into(), json!(name));
                if let Some(s) = &doc.summary {
                    m.insert("summary".into(), json!(s));
                }
                m.insert("params".into(), Value::Array(params));
                m.insert(
                    "result".into(),
                    json!({"name": "result", "schema": doc.result_schema.clone().unwrap_or_else(|| json!({}))}),
                );
                let structure = if shape.names.is_some() { "either" } else { "by-position" };
                m.insert("paramStructure".into(), json!(structure));
                if stream {
                    m.insert("x-stream".into(), json!(true));
                }
                Value::Object(m)
            })
            .collect();
        json!({
            "openrpc": "1.2.6",
            "info": {"title": self.title, "version": self.version},
            "methods": methods,
        })
    }
}

/// Runs a handler; with `std`, a panic becomes `-32603` Internal error and the peer sees
/// neither its message nor a backtrace.
fn guard(f: impl FnOnce() -> Outcome) -> Outcome {
    #[cfg(feature = "std")]
    {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .unwrap_or_else(|_| Err(ErrorObject::internal_error()))
    }
    #[cfg(not(feature = "std"))]
    {
        f()
    }
}

/// Registers methods under a prefix; from [`Router::group`].
pub struct Group<'r> {
    router: &'r mut Router,
    prefix: String,
}

impl fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Group")
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl Group<'_> {
    fn name(&self, name: &str) -> String {
        let mut full = self.prefix.clone();
        full.push_str(name);
        full
    }

    /// Registers a typed method as `prefix.M::NAME`.
    pub fn method<M, F>(&mut self, handler: F) -> Result<(), RegisterError>
    where
        M: Method<Params: serde::de::DeserializeOwned, Result: serde::Serialize> + 'static,
        F: Fn(M::Params) -> Result<M::Result, ErrorObject<'static>> + Send + Sync + 'static,
    {
        let name = self.name(M::NAME);
        self.router.typed_method::<M, F>(name, handler)
    }

    /// Registers a typed notification as `prefix.N::NAME`.
    pub fn notification<N, F>(&mut self, handler: F) -> Result<(), RegisterError>
    where
        N: NotificationMethod<Params: serde::de::DeserializeOwned> + 'static,
        F: Fn(N::Params) + Send + Sync + 'static,
    {
        let name = self.name(N::NAME);
        self.router.typed_notification::<N, F>(name, handler)
    }

    /// Registers a raw method as `prefix.name`.
    pub fn raw_method<F>(&mut self, name: &str, handler: F) -> Result<(), RegisterError>
    where
        F: Fn(Option<&RawValue>, &mut Vec<u8>) -> Outcome + Send + Sync + 'static,
    {
        let name = self.name(name);
        self.router.raw_method(&name, handler)
    }
}

/// The outcome of one [`Router::dispatch`]: reused across calls, so answering allocates
/// nothing once warm.
#[derive(Debug, Default)]
pub struct Reply {
    buf: Vec<u8>,
    outcome: Option<Outcome>,
    /// `buf` is known to be UTF-8: only the router's handlers wrote it (serde_json, or a
    /// raw handler's output validated), no layer. A layer may write a result itself.
    checked: bool,
}

impl Reply {
    /// The result JSON, when the call succeeded.
    pub fn result_json(&self) -> Option<&str> {
        match self.outcome {
            Some(Ok(())) => core::str::from_utf8(&self.buf).ok(),
            _ => None,
        }
    }

    /// The error object, when the call failed.
    pub fn error(&self) -> Option<&ErrorObject<'static>> {
        match &self.outcome {
            Some(Err(e)) => Some(e),
            _ => None,
        }
    }

    /// The result the buffer holds: what serde_json wrote or what the router validated,
    /// or (from a layer) checked here to be text.
    fn result(&self) -> &RawValue {
        let text = if self.checked {
            // SAFETY: `checked` says only the router's handlers wrote `buf`, and every one
            // of them writes UTF-8: serde_json's serializer, or a raw handler whose output
            // `run_checked` validated as JSON (which includes UTF-8).
            unsafe { core::str::from_utf8_unchecked(&self.buf) }
        } else {
            core::str::from_utf8(&self.buf).unwrap_or("null")
        };
        RawValue::from_validated(text)
    }

    /// Answers the request `handle` of `connection` with this outcome.
    pub fn answer(&mut self, connection: &mut Connection, handle: IncomingId) {
        match self.outcome.take() {
            // The buffer holds what serde_json wrote or what `handle` validated.
            Some(Ok(())) => connection.respond(handle, Ok(self.result())),
            Some(Err(e)) => connection.respond(handle, Err(&e)),
            None => connection.respond(handle, Err(&ErrorObject::internal_error())),
        }
    }
}
