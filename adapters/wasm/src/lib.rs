//! sansrpc-wasm: sansrpc in the browser (`wasm32-unknown-unknown`, in a page or a worker).
//!
//! The connection is the same [`Connection`](sansrpc::Connection) and the same driver as on
//! every other runtime, the futures adapter's ([`sansrpc_futures`]): the browser gives it a
//! [`WebSocket`] or a [`PostMessage`] transport (a worker, a `MessagePort`), a
//! [`BrowserTimer`] on `setTimeout` for its deadlines, and `performance.now()` as its clock
//! ([`sansrpc_runtime::time::Instant`]); the driver runs as a task of `wasm-bindgen-futures`
//! ([`spawn`]), and its handlers' work beside it on the [`BrowserExecutor`]. The [`Client`]
//! is the futures one: typed calls with deadlines, notifications, batches, method
//! subscriptions ([`Client::subscribe`], the `eth_subscribe` shape); [`reconnect`] gives a
//! client that reconnects when its WebSocket is lost. A server (a router, `sansrpc-lsp`'s
//! language server) runs in a Web Worker with the page as its client: [`connect_port`],
//! [`serve_this_worker`], [`connect_worker`]. The MCP client over Streamable HTTP with
//! `fetch` is `sansrpc-mcp`'s (`sansrpc_mcp::wasm`, its `wasm` feature), on this crate's
//! [`spawn`], [`Sleep`], [`SingleThread`] and [`js_error`].
//!
//! ```no_run
//! use sansrpc::method::Method;
//!
//! enum Add {}
//! impl Method for Add {
//!     const NAME: &'static str = "add";
//!     type Params = (f64, f64);
//!     type Result = f64;
//! }
//!
//! async fn add() -> Result<f64, Box<dyn std::error::Error>> {
//!     let client = sansrpc_wasm::connect("ws://127.0.0.1:7701").await?;
//!     Ok(client.call::<Add>(&(1.0, 2.0)).await?)
//! }
//! ```
//!
//! `docs/browser.md` has the rest: the `Cargo.toml`, the build with wasm-bindgen's CLI, a
//! page, the server's `Origin` setting, and a language server in a worker.
#![deny(missing_docs)]

/// The Rust snippets of docs/browser.md, compiled as doctests of this crate (on the host,
/// where the browser's APIs are stubs: they are `no_run`). The page's is `ignore`:
/// `examples/calculator_page.rs` is it.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/browser.md")]
mod guide_browser {}

mod executor;
mod inbox;
mod local;
mod message;
pub mod reconnect;
mod timer;
mod websocket;

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::channel::oneshot;
use wasm_bindgen::{JsCast, JsValue};

pub use executor::BrowserExecutor;
pub use local::SingleThread;
pub use message::PostMessage;
pub use sansrpc;
pub use sansrpc_futures;
pub use sansrpc_futures::{
    Batch, BatchSlot, Builder, CallError, Client, PendingBatch, PendingCall, RawResult,
    RawSubscription, ShutdownHandle, Subscription, SubscriptionError, Timeout, Transport,
};
pub use timer::{BrowserTimer, Sleep};
pub use websocket::WebSocket;

/// A typed API from one trait (the `macros` feature): a server trait (`NameServer`, mounted on
/// an [`AsyncRouter`](sansrpc_futures::AsyncRouter), in a worker) and a client extension
/// (`NameClient`, on every `AsRef<Client>`: a [`Client`], a [`Spawned`]), as
/// [`sansrpc_futures::rpc`] makes them, for a crate that depends on this one only:
/// `#[sansrpc_wasm::rpc(client, namespace = "eth")]`. See `docs/browser.md`.
#[cfg(feature = "macros")]
pub use sansrpc_macros::rpc_wasm as rpc;

#[doc(hidden)]
pub use sansrpc_futures::__macros;

/// A connection whose driver runs as a task of the page (or worker): what [`spawn`] and
/// [`connect_with`] give.
#[derive(Debug)]
pub struct Spawned {
    /// Calls the peer.
    pub client: Client,
    /// Shuts the connection down gracefully.
    pub shutdown: ShutdownHandle,
    /// The driver's task: completes when the connection ends.
    pub driver: DriverTask,
}

/// Lends the connection's [`client`](Spawned::client).
impl AsRef<Client> for Spawned {
    fn as_ref(&self) -> &Client {
        &self.client
    }
}

/// The end of a driver spawned on the page: what it finished with (an error when the
/// socket failed, or the heartbeat went unanswered). Dropping it leaves the driver running.
#[derive(Debug)]
pub struct DriverTask(oneshot::Receiver<io::Result<()>>);

impl Future for DriverTask {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll(cx).map(|done| {
            done.unwrap_or_else(|_| Err(io::Error::other("the driver's task was dropped")))
        })
    }
}

/// Builds the connection over `transport` with the [`BrowserTimer`], and runs its driver as
/// a task of the page (`wasm_bindgen_futures::spawn_local`). Its handlers get the
/// [`BrowserExecutor`] for work that outlives them (an LSP server's analysis), unless the
/// builder has an executor already.
pub fn spawn<T: Transport>(builder: Builder, transport: T) -> Spawned {
    run(with_executor(builder).connect(transport, BrowserTimer))
}

/// Like [`spawn`], for a connection that only calls the peer
/// ([`Builder::connect_client`]): the peer's requests are answered `-32601` (a router set
/// on `builder` is not used), and the page carries none of the server's code. What
/// [`connect`] runs.
pub fn spawn_client<T: Transport>(builder: Builder, transport: T) -> Spawned {
    run(with_executor(builder).connect_client(transport, BrowserTimer))
}

/// Like [`spawn_client`], for a client that answers the few requests its peer sends
/// through `answers` ([`Builder::connect_answering`]: an MCP client's `ping`, sampling,
/// elicitation, roots); a router set on `builder` is not used, and the page carries none
/// of the router's serving code.
pub fn spawn_answering<T: Transport>(
    builder: Builder,
    transport: T,
    answers: std::sync::Arc<dyn sansrpc_futures::Answers>,
) -> Spawned {
    run(with_executor(builder).connect_answering(transport, BrowserTimer, answers))
}

/// `builder`, with the [`BrowserExecutor`] unless it has an executor.
fn with_executor(builder: Builder) -> Builder {
    if builder.has_executor() {
        builder
    } else {
        builder.executor(BrowserExecutor)
    }
}

/// Runs `driver` as a task of the page.
fn run<T: Transport, S: sansrpc_futures::Side + 'static>(
    (client, driver): (Client, sansrpc_futures::Driver<T, BrowserTimer, S>),
) -> Spawned {
    let shutdown = driver.shutdown_handle();
    let (tx, rx) = oneshot::channel();
    wasm_bindgen_futures::spawn_local(async move {
        let _ = tx.send(driver.await);
    });
    Spawned {
        client,
        shutdown,
        driver: DriverTask(rx),
    }
}

/// Opens a WebSocket to `url` and runs a connection over it with `builder`'s config (and
/// router: the server may call the page too). Fails as [`WebSocket::connect`] does.
pub async fn connect_with(builder: Builder, url: &str) -> io::Result<Spawned> {
    let socket = WebSocket::connect(url, &builder.connection_config().limits).await?;
    Ok(spawn(builder, socket))
}

/// Inside a dedicated worker: serves the peer that started it (the page) over the worker's
/// `postMessage`, with `builder`'s router and config ([`PostMessage::this_worker`]). The
/// connection runs until it is shut down, or ends (LSP's `exit`); the worker stays.
/// Fails with [`io::ErrorKind::Unsupported`] outside a dedicated worker.
pub fn serve_this_worker(builder: Builder) -> io::Result<Spawned> {
    let transport = PostMessage::this_worker(&builder.connection_config().limits)?;
    Ok(spawn(builder, transport))
}

/// From the page: a connection to the dedicated `worker` over its `postMessage`
/// ([`PostMessage::worker`]), with `builder`'s config (and router: the worker may call the
/// page too).
pub fn connect_worker(worker: &web_sys::Worker, builder: Builder) -> Spawned {
    let transport = PostMessage::worker(worker, &builder.connection_config().limits);
    spawn(builder, transport)
}

/// A connection over `port`, one end of a `MessageChannel` (the other kept by a worker, an
/// iframe or the page), with `builder`'s config and router ([`PostMessage::port`]).
pub fn connect_port(port: web_sys::MessagePort, builder: Builder) -> Spawned {
    let transport = PostMessage::port(port, &builder.connection_config().limits);
    spawn(builder, transport)
}

/// Opens a WebSocket to `url` and gives the [`Client`] of a connection over it with the
/// default config; the connection ends when the last handle on it is dropped. It only
/// calls ([`spawn_client`]: the server's requests are answered `-32601`, and the page
/// carries none of the code that serves them); [`connect_with`] a builder with a router
/// serves them.
pub async fn connect(url: &str) -> io::Result<Client> {
    let builder = Builder::new();
    let socket = WebSocket::connect(url, &builder.connection_config().limits).await?;
    Ok(spawn_client(builder, socket).client)
}

/// A JavaScript exception (what a `Result<_, JsValue>` of `web-sys` fails with) as an I/O
/// error of `kind`, its message prefixed with `what` (`"fetch: Failed to fetch"`).
pub fn js_error(kind: io::ErrorKind, what: &str, error: JsValue) -> io::Error {
    let message = error
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| error.as_string())
        .unwrap_or_else(|| format!("{error:?}"));
    io::Error::new(kind, format!("{what}: {message}"))
}
