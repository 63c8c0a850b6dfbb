//! sansrpc-futures: the async driver of the [`sansrpc`] core, over futures-io, for any
//! runtime (async-std, smol, tokio through `sansrpc-tokio`, or a hand-rolled executor).
//!
//! One [`Driver`] future per connection owns its [`Connection`](sansrpc::Connection) and runs
//! its loop; cloneable [`Client`] handles send it calls, notifications and batches from any
//! task. An [`AsyncRouter`] serves the peer's requests (async handlers run concurrently in
//! the driver, up to a limit; notifications one at a time in arrival order) and falls back
//! to the core [`Router`](sansrpc::router::Router) for sync handlers, layers and
//! `rpc.discover`. A [`Reconnect`] client reconnects on a backoff schedule when its
//! connection is lost ([`reconnect`]); the config's [`heartbeat`](sansrpc::Config::heartbeat) adds the `ping`/`pong`
//! keep-alive to byte streams. The runtime supplies only I/O (a [`Transport`], usually a
//! [`ByteStream`] over futures-io halves) and a [`Timer`].
//!
//! ```
//! use sansrpc::method::Method;
//! use sansrpc_futures::{transport, AsyncIoTimer, AsyncRouter, Builder};
//!
//! enum Add {}
//! impl Method for Add {
//!     const NAME: &'static str = "add";
//!     type Params = (i64, i64);
//!     type Result = i64;
//! }
//!
//! smol::block_on(async {
//!     let listener = async_net::TcpListener::bind("127.0.0.1:0").await?;
//!     let addr = listener.local_addr()?;
//!     let mut router = AsyncRouter::new();
//!     router.method::<Add, _, _>(|(a, b)| async move { Ok(a + b) }).unwrap();
//!     let server = smol::spawn(async move {
//!         let (stream, _) = listener.accept().await?;
//!         let (_, driver) = Builder::new().router(router).connect(transport::tcp(stream), AsyncIoTimer);
//!         driver.await
//!     });
//!
//!     let stream = async_net::TcpStream::connect(addr).await?;
//!     let (client, driver) = Builder::new().connect(transport::tcp(stream), AsyncIoTimer);
//!     let driver = smol::spawn(driver);
//!     assert_eq!(client.call::<Add>(&(1, 2)).await.unwrap(), 3);
//!     drop(client); // A client-only connection stops once its last handle is gone.
//!     driver.await?;
//!     server.await
//! })
//! .unwrap();
//! ```
#![deny(missing_docs)]

mod builder;
mod calls;
mod child;
mod client;
mod context;
mod driver;
mod extension;
mod http_request;
mod machines;
mod peer;
pub mod reconnect;
mod router;
mod server;
mod side;
mod stream;
mod subscription;
mod timer;
pub mod transport;
mod wake;
#[cfg(feature = "async-io")]
pub use child::{child_process, ChildProcess};
pub use child::{ClosableWriter, WriterCloser};

pub use builder::Builder;
pub use client::{
    Batch, BatchSlot, CallError, Client, CloseWithSession, PendingBatch, PendingCall, RawResult,
};
pub use context::{Cancelled, NotificationContext, RequestContext};
pub use driver::{Driver, ShutdownHandle};
pub use extension::Extension;
pub use http_request::{HttpRequest, HttpRequests, Principal, MAX_RECORDED};
pub use machines::Machines;
pub use reconnect::{CallOptions, GaveUp, Reconnect, StateWatch, Supervisor};
pub use router::{AsyncRouter, BoxFuture, HandlerResult};
pub use sansrpc_runtime::subscriptions::{Bypass, Bypassed};
pub use sansrpc_runtime::{ConnectionNotifier, Executor, Peer, PeerConnection, PeerContext};
pub use side::{Answering, Answers, ClientOnly, Serving, Side};
pub use stream::{RawStream, StreamOptions, TypedStream};
pub use subscription::{
    Ended, Fanout, NotAccepted, PendingSubscription, RawSubscription, Subscription,
    SubscriptionError, SubscriptionSink,
};
#[cfg(feature = "async-io")]
pub use timer::AsyncIoTimer;
pub use timer::Timer;
pub use transport::{ByteStream, Received, Transport};

pub use sansrpc;
pub use sansrpc::Timeout;

/// A typed API from one trait: a server trait (`NameServer`, mounted on an
/// [`AsyncRouter`]) and a client extension (`NameClient`, on every `AsRef<Client>`).
/// See the guide's section on it (`docs/methods.md`, "A typed API from one trait").
///
/// ```
/// use sansrpc::ErrorObject;
///
/// #[sansrpc_futures::rpc(server, client, namespace = "math")]
/// pub trait Math {
///     /// `math_add`, params by position: `[1, 2]`.
///     #[method(name = "add")]
///     async fn add(&self, a: i64, b: i64) -> Result<i64, ErrorObject<'static>>;
/// }
///
/// struct Calculator;
/// impl MathServer for Calculator {
///     async fn add(&self, a: i64, b: i64) -> Result<i64, ErrorObject<'static>> {
///         a.checked_add(b).ok_or(ErrorObject::fixed(-32000, "overflow"))
///     }
/// }
/// let router = Calculator.into_router().unwrap();
/// # let _ = router;
/// // And on a client: `let sum = client.add(1, 2).await?;` (`MathClient`).
/// ```
#[cfg(feature = "macros")]
pub use sansrpc_macros::rpc;

/// What the code `#[rpc]` generates refers to; not part of the API.
#[doc(hidden)]
pub mod __macros {
    pub use crate::{AsyncRouter, CallError, Client, PendingSubscription, Subscription};
    pub use sansrpc::connection::subscriptions::{IdStyle, LagPolicy, MethodSubscription};
    pub use sansrpc::method::Method;
    pub use sansrpc::router::{RegisterError, Router};
    pub use sansrpc::ErrorObject;
    pub use sansrpc_runtime::subscriptions::{
        PendingSubscription as SyncPendingSubscription, SubscriptionRouter,
    };
    pub use serde;

    /// What an `#[rpc]` method returns: a `Result`, whatever alias names it
    /// (`RpcResult<T>`), its `T` what the client gets.
    #[diagnostic::on_unimplemented(
        message = "an #[rpc] method returns `Result<T, E>` or an alias of it, not `{Self}`",
        label = "not a `Result<T, E>`",
        note = "write `Result<T, ErrorObject<'static>>` (or any `E: Into<ErrorObject<'static>>`), or an alias of it such as `type RpcResult<T> = Result<T, ErrorObject<'static>>;`"
    )]
    pub trait RpcReturn {
        /// What a call gets.
        type Ok;
        /// The error, turned into the error object.
        type Err;
        /// The `Result` itself.
        fn into_result(self) -> Result<Self::Ok, Self::Err>;
    }

    impl<T, E> RpcReturn for Result<T, E> {
        type Ok = T;
        type Err = E;
        fn into_result(self) -> Result<T, E> {
            self
        }
    }
}
