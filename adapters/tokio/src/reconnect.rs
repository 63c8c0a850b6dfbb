//! Reconnecting clients on tokio: connectors for TCP, Unix sockets, WebSocket and child
//! processes (respawned), and [`spawn`] to run the [`Supervisor`] on a task.
//!
//! The lifecycle, the reconnect policy and the pending-request policy are those of
//! [`sansrpc_futures::reconnect`] (read it for the rules); the backoff schedule itself is
//! the core's [`sansrpc::ext::reconnect`].
//!
//! ```no_run
//! use std::time::Duration;
//! use sansrpc::method::Method;
//! use sansrpc_tokio::reconnect::{self, Backoff, PendingPolicy, ReconnectPolicy};
//! use sansrpc_tokio::{sansrpc, Builder};
//!
//! enum Add {}
//! impl Method for Add {
//!     const NAME: &'static str = "add";
//!     type Params = (i64, i64);
//!     type Result = i64;
//! }
//!
//! # async fn run() -> Result<(), sansrpc_tokio::CallError> {
//! let policy = ReconnectPolicy {
//!     backoff: Backoff::Exponential {
//!         initial: Duration::from_millis(100),
//!         max: Duration::from_secs(5),
//!         multiplier: 2.0,
//!         max_attempts: 8,
//!     },
//!     pending: PendingPolicy::ResendIdempotent,
//!     ..ReconnectPolicy::default()
//! };
//! let conn = reconnect::spawn(Builder::new(), policy, reconnect::tcp("127.0.0.1:9000"));
//! conn.client.wait_open().await?;
//! // Re-sent on the next connection if this one is lost before the answer.
//! assert_eq!(conn.client.call_idempotent::<Add>(&(1, 2)).await?, 3);
//! conn.client.close().await;
//! # Ok(())
//! # }
//! ```

use std::io;
use std::task::{Context, Poll};

use futures::FutureExt;
use tokio::task::JoinHandle;

pub use sansrpc::ext::reconnect::{Backoff, PendingPolicy, ReconnectPolicy, State};
pub use sansrpc_futures::reconnect::{CallOptions, GaveUp, Reconnect, StateWatch, Supervisor};

#[cfg(feature = "ws")]
use crate::ws::{KeepAlive, WebSocket};
use crate::{BoxFuture, Builder, Received, TokioStream, TokioTimer, Transport};

/// A reconnecting client whose supervisor runs on its own tokio task; from [`spawn`].
#[derive(Debug)]
pub struct ReconnectConnection {
    /// Calls the peer, whichever connection is current.
    pub client: Reconnect,
    /// The supervisor's task: completes once the client is closed, or with [`GaveUp`].
    pub task: JoinHandle<Result<(), GaveUp>>,
}

/// Starts a reconnecting client with `connector` and spawns its supervisor on the current
/// tokio runtime.
pub fn spawn<C, F, T>(
    builder: Builder,
    policy: ReconnectPolicy,
    connector: C,
) -> ReconnectConnection
where
    C: FnMut() -> F + Send + 'static,
    F: std::future::Future<Output = io::Result<T>> + Send + 'static,
    T: Transport,
{
    let (client, supervisor) = Reconnect::connect(builder, policy, connector, TokioTimer);
    ReconnectConnection {
        client,
        task: tokio::spawn(supervisor),
    }
}

/// A TCP transport, as [`crate::tcp`] makes it.
pub type TcpTransport =
    TokioStream<tokio::net::tcp::OwnedReadHalf, tokio::net::tcp::OwnedWriteHalf>;

/// Connects to `addr` over TCP on every attempt.
pub fn tcp<A>(addr: A) -> impl FnMut() -> BoxFuture<io::Result<TcpTransport>> + Send + 'static
where
    A: tokio::net::ToSocketAddrs + Clone + Send + Sync + 'static,
{
    move || {
        let addr = addr.clone();
        async move {
            let stream = tokio::net::TcpStream::connect(addr).await?;
            // With nobody listening on a local port, a connect can meet itself (TCP
            // simultaneous open): that is no server.
            if stream.local_addr()? == stream.peer_addr()? {
                let e = "connected to itself: nobody listens there";
                return Err(io::Error::new(io::ErrorKind::ConnectionRefused, e));
            }
            stream.set_nodelay(true)?;
            Ok(crate::tcp(stream))
        }
        .boxed()
    }
}

/// A Unix socket transport, as [`crate::unix`] makes it.
#[cfg(unix)]
pub type UnixTransport =
    TokioStream<tokio::net::unix::OwnedReadHalf, tokio::net::unix::OwnedWriteHalf>;

/// Connects to the Unix socket at `path` on every attempt.
#[cfg(unix)]
pub fn unix(
    path: impl Into<std::path::PathBuf>,
) -> impl FnMut() -> BoxFuture<io::Result<UnixTransport>> + Send + 'static {
    let path = path.into();
    move || {
        let path = path.clone();
        async move { Ok(crate::unix(tokio::net::UnixStream::connect(path).await?)) }.boxed()
    }
}

/// A client WebSocket transport.
#[cfg(feature = "ws")]
pub type WsTransport = WebSocket<crate::ws::ClientStream>;

/// Opens a WebSocket to `url` (`ws://`, or `wss://` with the `tls` feature) on every
/// attempt, sized by `builder`'s limits, with `keepalive` pings (a dead peer is detected
/// and reconnected to).
#[cfg(feature = "ws")]
pub fn ws(
    url: impl Into<String>,
    builder: &Builder,
    keepalive: Option<KeepAlive>,
) -> impl FnMut() -> BoxFuture<io::Result<WsTransport>> + Send + 'static {
    let url = url.into();
    let limits = builder.connection_config().limits;
    move || {
        let url = url.clone();
        async move {
            #[cfg(feature = "tls")]
            let opened = crate::ws::open(url, &limits, keepalive, None).await;
            #[cfg(not(feature = "tls"))]
            let opened = crate::ws::open(url, &limits, keepalive).await;
            opened.map_err(crate::ws::io_error)
        }
        .boxed()
    }
}

/// A child process spoken to over its stdin and stdout; the child is killed when the
/// transport is dropped (the connection is lost or closed).
#[derive(Debug)]
pub struct ChildTransport {
    child: tokio::process::Child,
    stream: TokioStream<tokio::process::ChildStdout, tokio::process::ChildStdin>,
}

impl ChildTransport {
    /// Spawns `command` with piped stdin and stdout, killed on drop.
    pub fn spawn(command: &mut tokio::process::Command) -> io::Result<Self> {
        command.kill_on_drop(true);
        let (child, stream) = crate::child(command)?;
        Ok(ChildTransport { child, stream })
    }

    /// The child's process id (until it has been waited for).
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }
}

/// Every hook of the child's stream, forwarded: its read budget starts again each turn
/// (`start_turn`), and it wakes the task on input (`wakes_on_input`).
impl Transport for ChildTransport {
    fn is_message_based(&self) -> bool {
        self.stream.is_message_based()
    }

    fn wakes_on_input(&self) -> bool {
        self.stream.wakes_on_input()
    }

    fn can_push(&self) -> bool {
        self.stream.can_push()
    }

    fn start_turn(&mut self) {
        self.stream.start_turn();
    }

    fn woken(&mut self) {
        self.stream.woken();
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut sansrpc::connection::Connection,
        now: sansrpc::Instant,
    ) -> Poll<io::Result<Received>> {
        self.stream.poll_receive(cx, conn, now)
    }

    fn poll_transmit(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut sansrpc::connection::Connection,
    ) -> Poll<io::Result<()>> {
        self.stream.poll_transmit(cx, conn)
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.stream.poll_close(cx)
    }
}

/// Spawns a fresh child from `command` on every attempt: a child that exits or is killed
/// is respawned on the policy's schedule.
pub fn child(
    mut command: impl FnMut() -> tokio::process::Command + Send + 'static,
) -> impl FnMut() -> BoxFuture<io::Result<ChildTransport>> + Send + 'static {
    move || {
        let spawned = ChildTransport::spawn(&mut command());
        std::future::ready(spawned).boxed()
    }
}
