//! Reconnecting WebSocket clients in the browser: [`connect`] (or [`spawn`] with a
//! connector of your own) runs the futures adapter's [`Supervisor`] as a task of the page.
//!
//! The lifecycle, the reconnect policy and the pending-request policy are those of
//! [`sansrpc_futures::reconnect`] (read it for the rules); the backoff schedule itself is
//! the core's [`sansrpc::ext::reconnect`]. Each attempt opens a new browser `WebSocket`
//! ([`WebSocket::connect`]); one that has not opened by the policy's connect timeout is
//! dropped, which closes it.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::channel::oneshot;
use sansrpc::Limits;
use sansrpc_futures::{Builder, Transport};

use crate::local::SingleThread;
use crate::{BrowserTimer, WebSocket};

pub use sansrpc::ext::reconnect::{Backoff, PendingPolicy, ReconnectPolicy, State};
pub use sansrpc_futures::reconnect::{CallOptions, GaveUp, Reconnect, StateWatch, Supervisor};

/// A reconnecting client whose supervisor runs as a task of the page; from [`spawn`] or
/// [`connect`].
#[derive(Debug)]
pub struct ReconnectConnection {
    /// Calls the peer, whichever connection is current.
    pub client: Reconnect,
    /// The supervisor's task: completes once the client is closed, or with [`GaveUp`].
    pub task: SupervisorTask,
}

/// The end of a supervisor spawned on the page. Dropping it leaves the supervisor running.
#[derive(Debug)]
pub struct SupervisorTask(oneshot::Receiver<Result<(), GaveUp>>);

impl Future for SupervisorTask {
    type Output = Result<(), GaveUp>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The sender goes only with the supervisor's task, which always sends first.
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|done| done.unwrap_or(Ok(())))
    }
}

/// One attempt of [`websocket`]'s connector: opening a browser `WebSocket`.
pub struct Connecting(SingleThread<Pin<Box<dyn Future<Output = io::Result<WebSocket>>>>>);

impl Future for Connecting {
    type Output = io::Result<WebSocket>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

/// A connector that opens a WebSocket to `url` for every attempt, with messages bounded
/// by `limits` (the builder's: `builder.connection_config().limits`).
pub fn websocket(url: &str, limits: Limits) -> impl FnMut() -> Connecting + Send + 'static {
    let url = url.to_owned();
    move || {
        let url = url.clone();
        Connecting(SingleThread(Box::pin(async move {
            WebSocket::connect(&url, &limits).await
        })))
    }
}

/// Starts a reconnecting client with `connector`, sleeping on the [`BrowserTimer`], and
/// runs its supervisor as a task of the page (`wasm_bindgen_futures::spawn_local`).
pub fn spawn<C, F, T>(
    builder: Builder,
    policy: ReconnectPolicy,
    connector: C,
) -> ReconnectConnection
where
    C: FnMut() -> F + Send + 'static,
    F: Future<Output = io::Result<T>> + Send + 'static,
    T: Transport,
{
    let (client, supervisor) = Reconnect::connect(builder, policy, connector, BrowserTimer);
    let (tx, rx) = oneshot::channel();
    wasm_bindgen_futures::spawn_local(async move {
        let _ = tx.send(supervisor.await);
    });
    ReconnectConnection {
        client,
        task: SupervisorTask(rx),
    }
}

/// A client of `url` that reconnects on `policy`'s schedule when its WebSocket is lost:
/// [`spawn`] with the [`websocket`] connector. Wait for the first connection with
/// [`Reconnect::wait_open`].
pub fn connect(url: &str, builder: Builder, policy: ReconnectPolicy) -> ReconnectConnection {
    let connector = websocket(url, builder.connection_config().limits);
    spawn(builder, policy, connector)
}
