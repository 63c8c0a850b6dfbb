//! sansrpc-tokio: [`sansrpc`] on tokio, as a thin layer over the [`sansrpc_futures`] driver.
//!
//! tokio's I/O is adapted to futures-io with `tokio_util::compat`, and [`TokioTimer`]
//! sleeps with `tokio::time::sleep_until`; everything else (the driver loop, the
//! [`Client`], the [`AsyncRouter`]) is the futures adapter's, re-exported here. Transports:
//! [`tcp`], [`unix`], [`stdio`], and [`child`] processes spoken to over their stdin/stdout;
//! [`serve_tcp`] and [`serve_unix`] accept connections until a shutdown signal, then shut
//! every connection down gracefully. Message transports: [`ws`] (WebSocket, one message per
//! text frame) and [`http`] (one message per POST), on the same driver. [`reconnect`]: a
//! client that reconnects over TCP, Unix sockets, WebSocket or a respawned child process.
//!
//! Servers facing the internet: [`ServeOptions`] (the `*_with`
//! variants, and `sansrpc_mcp::tokio::Options::serve`) bounds the connections at once, serves TLS, and
//! configures WebSocket `Origin`s and HTTP CORS. Every server accepts on one loop: the
//! same connection cap, busy answer and shutdown. The endpoint's own rules (rate limit,
//! idle and partial-frame timeouts) are set in the [`Builder`]'s config.
//!
//! ```
//! use sansrpc::method::Method;
//! use sansrpc_tokio::{AsyncRouter, Builder};
//!
//! enum Add {}
//! impl Method for Add {
//!     const NAME: &'static str = "add";
//!     type Params = (i64, i64);
//!     type Result = i64;
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let addr = listener.local_addr()?;
//! let mut router = AsyncRouter::new();
//! router.method::<Add, _, _>(|(a, b)| async move { Ok(a + b) }).unwrap();
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let shutdown = async move { let _ = stopped.await; };
//! let grace = std::time::Duration::from_secs(1);
//! let server = tokio::spawn(sansrpc_tokio::serve_tcp(listener, Builder::new().router(router), shutdown, grace));
//!
//! let stream = tokio::net::TcpStream::connect(addr).await?;
//! let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));
//! assert_eq!(conn.client.call::<Add>(&(1, 2)).await.unwrap(), 3);
//! let _ = stop.send(());
//! server.await??;
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod child;
pub mod host;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
pub(crate) mod http_client;
pub mod reconnect;
mod registry;
mod request;
mod served;
#[cfg(feature = "tower")]
pub mod service;
mod streams;
mod tcp;
#[cfg(feature = "tls")]
pub mod tls;
mod wire;
#[cfg(feature = "ws")]
pub mod ws;

pub use child::{spawn_child, ChildProcess};

use registry::Registry;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// Which `Origin`s a server accepts: the WebSocket handshake's
/// ([`ServeOptions::allowed_origins`]), CORS ([`ServeOptions::cors`]) and MCP's
/// (`streamable::Config::origins`) are one rule, the core's. [`Origins::SameAsHosts`] (the
/// default) is judged against [`Hosts::Loopback`](sansrpc::codec::http::Hosts::Loopback)
/// here.
pub use sansrpc::codec::http::Origins;
pub use sansrpc::Timeout;
pub use sansrpc_futures::{
    sansrpc, AsyncRouter, Batch, BatchSlot, BoxFuture, Builder, ByteStream, CallError, Cancelled,
    Client, CloseWithSession, Driver, Ended, Extension, Fanout, HandlerResult, NotAccepted,
    NotificationContext, PendingBatch, PendingCall, PendingSubscription, RawResult, RawStream,
    RawSubscription, Received, RequestContext, ShutdownHandle, StreamOptions, Subscription,
    SubscriptionError, SubscriptionSink, Timer, Transport, TypedStream,
};

/// A typed API from one trait: a server trait (`NameServer`, mounted on an
/// [`AsyncRouter`]) and a client extension (`NameClient`, on every `AsRef<Client>`), as
/// [`sansrpc_futures::rpc`] makes them, for a crate that depends on this one only.
#[cfg(feature = "macros")]
pub use sansrpc_macros::rpc_tokio as rpc;

#[doc(hidden)]
pub use sansrpc_futures::__macros;

/// How a server protects itself from clients it does not trust, for every `serve_*`
/// function of this crate and the MCP server (`sansrpc_mcp::tokio::Options::serve`; each field says
/// which use it). The per-connection rules (rate limit, idle and partial-frame timeouts)
/// are the endpoint's, in the [`Builder`]'s [`Config`](sansrpc::connection::Config).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// Most connections served at once (default 1024). Beyond it a connection is answered
    /// and closed at once, and the connections already served keep working: a byte stream
    /// ([`serve_tcp`], [`serve_unix`]) gets one error response (id `null`, `-32002` "Server
    /// busy: too many connections", in the builder's framing), a WebSocket upgrade or an
    /// HTTP request (JSON-RPC or MCP) gets `503 Service Unavailable`.
    pub max_connections: usize,
    /// WebSocket only: the `Origin`s whose handshake is accepted; another gets `403
    /// Forbidden`. The default, [`Origins::SameAsHosts`], accepts the pages of a loopback
    /// host (`http://localhost:3000`, `http://127.0.0.1:8080`, `http://[::1]`) and no
    /// other site's (DNS rebinding, cross-site WebSocket hijacking): a server whose browser
    /// pages come from elsewhere lists their origins ([`Origins::List`]) or takes
    /// [`Origins::Any`]. A handshake without `Origin` (not from a browser) is judged by
    /// [`allow_missing_origin`](Self::allow_missing_origin) instead.
    pub allowed_origins: Origins,
    /// WebSocket only: accept a handshake without an `Origin` header, as non-browser
    /// clients send (default `true`; `false` answers it `403`).
    pub allow_missing_origin: bool,
    /// WebSocket only: the keep-alive pings (default [`ws::KeepAlive::default`]).
    #[cfg(feature = "ws")]
    pub keepalive: Option<ws::KeepAlive>,
    /// WebSocket only: take binary messages as JSON text too (their UTF-8 checked), as
    /// geth and Hardhat do; web3.py sends binary frames unless told otherwise (default
    /// `false`: a binary frame closes the connection with 1003).
    pub accept_binary: bool,
    /// HTTP only: CORS for these origins (default none: no CORS headers, `OPTIONS` is
    /// `405`; [`Origins::SameAsHosts`] means those of a loopback host). See
    /// [`http::serve_with`].
    pub cors: Option<Origins>,
    /// HTTP only: how long a browser may cache a preflight answer (default 10 minutes).
    pub cors_max_age: Duration,
    /// HTTP only: how long each request's handlers may run (default 60 s).
    pub handler_timeout: Duration,
    /// WebSocket, HTTP and MCP only: serve over TLS with this config (see [`tls`]); each
    /// accepted connection does the TLS handshake within the same limit as the WebSocket
    /// handshake or an HTTP request head (default none: plain TCP).
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<tls::rustls::ServerConfig>>,
    /// Fill the protection timeouts the builder's config leaves unset with the network
    /// defaults ([`Config::with_network_defaults`](sansrpc::connection::Config::with_network_defaults):
    /// idle 5 min, partial frame 30 s, write stall 30 s), so a server on a socket is safe
    /// by default (default `true`; `false` serves with the builder's config as it is).
    pub network_defaults: bool,
}

impl ServeOptions {
    /// The builder a server uses: `builder`, with the network defaults when they are on.
    pub fn builder(&self, builder: Builder) -> Builder {
        if !self.network_defaults {
            return builder;
        }
        let config = builder.connection_config().clone().with_network_defaults();
        builder.config(config)
    }
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_connections: 1024,
            allowed_origins: Origins::SameAsHosts,
            allow_missing_origin: true,
            #[cfg(feature = "ws")]
            keepalive: Some(ws::KeepAlive::default()),
            accept_binary: false,
            cors: None,
            cors_max_age: Duration::from_secs(600),
            handler_timeout: Duration::from_secs(60),
            #[cfg(feature = "tls")]
            tls: None,
            network_defaults: true,
        }
    }
}

/// Refused connections being answered at once; beyond it one is closed without an answer.
const MAX_REFUSING: usize = 64;
/// How long answering a refused connection may take.
const REFUSAL_TIME: Duration = Duration::from_secs(2);

/// Answers a connection beyond the limit with `answer`, then closes it; what the client
/// sent meanwhile is read and dropped so that closing does not reset the connection
/// before the client reads the answer.
async fn refuse<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, answer: Arc<[u8]>) {
    let work = async {
        stream.write_all(&answer).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 1024];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<_, io::Error>(())
    };
    let _ = tokio::time::timeout(REFUSAL_TIME, work).await;
}

/// Refuses `stream` on its own short task, or drops it when too many refusals are under
/// way already.
fn refuse_on<S>(refusing: &mut JoinSet<()>, stream: S, answer: &Arc<[u8]>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    if refusing.len() < MAX_REFUSING {
        refusing.spawn(refuse(stream, answer.clone()));
    }
}

/// tokio's timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioTimer;

impl Timer for TokioTimer {
    fn sleep_until(&self, deadline: Instant) -> impl Future<Output = ()> + Send + 'static {
        tokio::time::sleep_until(tokio::time::Instant::from_std(deadline))
    }
}

/// A byte-stream transport over tokio reader and writer halves.
pub type TokioStream<R, W> = ByteStream<Compat<R>, Compat<W>>;

/// A transport over any tokio reader and writer.
pub fn stream<R, W>(reader: R, writer: W) -> TokioStream<R, W>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    ByteStream::new(reader.compat(), writer.compat_write())
}

/// An accepted TCP connection with Nagle's algorithm off: JSON-RPC writes whole messages,
/// and a small answer held back for the peer's delayed ACK stalls a pipelined client for
/// tens of milliseconds.
pub fn no_delay(
    (stream, _): (tokio::net::TcpStream, std::net::SocketAddr),
) -> tokio::net::TcpStream {
    tune(&stream);
    stream
}

/// Sets up a TCP connection: Nagle's algorithm off, and the kernel's unsent bytes bounded
/// by [`UNSENT_LOW_WATER`](sansrpc::driver::UNSENT_LOW_WATER) where the system has the
/// option, so a peer that stops reading meets the write-stall timeout soon after.
pub fn tune(stream: &tokio::net::TcpStream) {
    let _ = stream.set_nodelay(true);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let _ = socket2::SockRef::from(stream).set_tcp_notsent_lowat(sansrpc::driver::UNSENT_LOW_WATER);
}

/// A TCP connection as a transport, with Nagle's algorithm turned off and the kernel's
/// unsent bytes bounded ([`UNSENT_LOW_WATER`](sansrpc::driver::UNSENT_LOW_WATER)).
pub fn tcp(
    stream: tokio::net::TcpStream,
) -> TokioStream<tokio::net::tcp::OwnedReadHalf, tokio::net::tcp::OwnedWriteHalf> {
    tune(&stream);
    let (reader, writer) = stream.into_split();
    self::stream(reader, writer)
}

/// A Unix socket connection as a transport.
#[cfg(unix)]
pub fn unix(
    stream: tokio::net::UnixStream,
) -> TokioStream<tokio::net::unix::OwnedReadHalf, tokio::net::unix::OwnedWriteHalf> {
    let (reader, writer) = stream.into_split();
    self::stream(reader, writer)
}

/// This process's stdin and stdout as a transport (an LSP or MCP server spawned by its
/// client); pick the framing on the [`Builder`].
pub fn stdio() -> TokioStream<tokio::io::Stdin, tokio::io::Stdout> {
    stream(tokio::io::stdin(), tokio::io::stdout())
}

/// Spawns `command` with piped stdin and stdout and speaks to it over them (the LSP and
/// MCP client case). Keep the [`Child`](tokio::process::Child) to wait for or kill it;
/// closing the transport closes the child's stdin. [`spawn_child`] also runs the connection
/// and shuts it down gracefully (close stdin, wait for the exit, then kill).
pub fn child(
    command: &mut tokio::process::Command,
) -> io::Result<(
    tokio::process::Child,
    TokioStream<tokio::process::ChildStdout, tokio::process::ChildStdin>,
)> {
    let (child, stdout, stdin) = spawn_piped(command)?;
    Ok((child, stream(stdout, stdin)))
}

/// Spawns `command` with piped stdin and stdout, and takes them.
fn spawn_piped(
    command: &mut tokio::process::Command,
) -> io::Result<(
    tokio::process::Child,
    tokio::process::ChildStdout,
    tokio::process::ChildStdin,
)> {
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("child spawned without piped stdio"));
    };
    Ok((child, stdout, stdin))
}

/// A connection whose driver runs on its own tokio task: what [`spawn`] and every
/// connecting function of this crate ([`ws::connect`], [`http::connect`],
/// `sansrpc_mcp::tokio::connect`) return. Its [`client`](Spawned::client) calls the peer, as the
/// `client` of a [`ChildProcess`] and of a [`reconnect::ReconnectConnection`] do. (The
/// connection's state machine is the core's [`sansrpc::Connection`], which this handle
/// runs.)
#[derive(Debug)]
pub struct Spawned {
    /// Calls the peer.
    pub client: Client,
    /// Shuts the connection down gracefully.
    pub shutdown: ShutdownHandle,
    /// The driver's task: completes when the connection ends.
    pub driver: JoinHandle<io::Result<()>>,
}

/// Lends the connection's [`client`](Spawned::client): `sansrpc_mcp`'s
/// `ClientBuilder::initialize(&conn)` takes it from any connection of this crate.
impl AsRef<Client> for Spawned {
    fn as_ref(&self) -> &Client {
        &self.client
    }
}

/// Connects over `transport` and spawns the driver on the current tokio runtime.
pub fn spawn<T: Transport>(builder: Builder, transport: T) -> Spawned {
    let (client, driver) = builder.connect(transport, TokioTimer);
    Spawned {
        client,
        shutdown: driver.shutdown_handle(),
        driver: tokio::spawn(driver),
    }
}

/// Serves every connection `listener` accepts with `builder` (give it a router), one task
/// per connection, until `shutdown` completes; then stops accepting, shuts every
/// connection down with `grace` for its handlers in flight (see
/// [`ShutdownHandle::shutdown`]), and returns once they are all done (connections still
/// running a second after the grace period are aborted).
pub async fn serve_tcp(
    listener: tokio::net::TcpListener,
    builder: Builder,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    serve_tcp_with(listener, builder, ServeOptions::default(), shutdown, grace).await
}

/// [`serve_tcp`] with its [`ServeOptions`] (the connection limit).
pub async fn serve_tcp_with(
    listener: tokio::net::TcpListener,
    builder: Builder,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    let accept = || async { listener.accept().await.map(|(s, _)| s) };
    let setup = |s| std::future::ready(Ok(tcp(s)));
    let builder = options.builder(builder);
    let refusal = stream_refusal(&builder);
    serve(accept, setup, refusal, builder, &options, shutdown, grace).await
}

/// What an HTTP request or WebSocket upgrade beyond the connection limit is answered.
pub const HTTP_BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// What a byte stream beyond the connection limit is sent.
fn stream_refusal(builder: &Builder) -> Arc<[u8]> {
    let mut answer = Vec::new();
    sansrpc::connection::write_refusal(
        builder.connection_config().profile,
        Some(builder.connection_config().stream_framing()),
        &mut answer,
    );
    answer.into()
}

/// [`serve_tcp`] for a Unix socket listener.
#[cfg(unix)]
pub async fn serve_unix(
    listener: tokio::net::UnixListener,
    builder: Builder,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    serve_unix_with(listener, builder, ServeOptions::default(), shutdown, grace).await
}

/// [`serve_unix`] with its [`ServeOptions`] (the connection limit).
#[cfg(unix)]
pub async fn serve_unix_with(
    listener: tokio::net::UnixListener,
    builder: Builder,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    let accept = || async { listener.accept().await.map(|(s, _)| s) };
    let setup = |s| std::future::ready(Ok(unix(s)));
    let builder = options.builder(builder);
    let refusal = stream_refusal(&builder);
    serve(accept, setup, refusal, builder, &options, shutdown, grace).await
}

/// The accept loop of every `serve_*` that runs one driver per connection: `accept` yields
/// connections, `setup` the future that finishes setting one up (a TLS or WebSocket
/// handshake) on the connection's own task. Beyond [`ServeOptions::max_connections`] a
/// connection is sent `refusal` and closed. At shutdown every connection is shut down with
/// `grace` for its handlers in flight.
async fn serve<S, T, A, F, H>(
    accept: A,
    setup: impl Fn(S) -> H,
    refusal: Arc<[u8]>,
    builder: Builder,
    options: &ServeOptions,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: Transport,
    A: FnMut() -> F,
    F: Future<Output = io::Result<S>>,
    H: Future<Output = io::Result<T>> + Send + 'static,
{
    let registry = Arc::new(Registry::default());
    let listener = Listener {
        refusal,
        max_connections: options.max_connections,
        drain: grace + Duration::from_secs(1),
    };
    serve_in(registry, listener, accept, setup, builder, shutdown, grace).await
}

/// [`serve`] with the connections in `registry` (constant time per connection set up and
/// ended, whatever the number open), accepting on `listener`'s terms.
async fn serve_in<S, T, A, F, H>(
    registry: Arc<Registry>,
    listener: Listener,
    accept: A,
    setup: impl Fn(S) -> H,
    builder: Builder,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: Transport,
    A: FnMut() -> F,
    F: Future<Output = io::Result<S>>,
    H: Future<Output = io::Result<T>> + Send + 'static,
{
    let builder = Arc::new(builder);
    // The connection's task holds one pointer ([`served::Served`]): a task's future is
    // moved whole as it is spawned, polled to its end and its output read (tokio copies it
    // five times, each time at its largest state's size), the driver with its machine and
    // transport is 3-4 KiB, a TLS handshake more, and a future past the task's first cache
    // line costs a miss a turn with many connections.
    let connection = |stream| served::Served::new(setup(stream), builder.clone(), registry.clone());
    let stop = || registry.stop(grace);
    listener.run(accept, connection, shutdown, stop).await
}

/// The accept loop every server of this crate shares: the connection cap and the busy
/// answer, one task per connection, and the end at shutdown.
pub struct Listener {
    /// What a connection beyond the cap is sent before it is closed.
    pub refusal: Arc<[u8]>,
    /// Most connections served at once ([`ServeOptions::max_connections`]).
    pub max_connections: usize,
    /// How long the connections may take to end once told to stop; then they are aborted.
    pub drain: Duration,
}

impl Listener {
    /// Serves each connection `accept` yields with `connection`, on a task of its own,
    /// until `shutdown` completes; then stops accepting, calls `stop` (which tells the
    /// connections to end), and returns once they have ended or [`drain`](Self::drain) has
    /// passed.
    pub async fn run<S, A, F, C, Fut>(
        &self,
        mut accept: A,
        connection: C,
        shutdown: impl Future<Output = ()>,
        stop: impl FnOnce(),
    ) -> io::Result<()>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        A: FnMut() -> F,
        F: Future<Output = io::Result<S>>,
        C: Fn(S) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let mut refusing = JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = accept() => match accepted {
                    Ok(stream) if connections.len() >= self.max_connections => {
                        refuse_on(&mut refusing, stream, &self.refusal);
                    }
                    Ok(stream) => {
                        connections.spawn(connection(stream));
                    }
                    // A connection that failed while being accepted concerns only itself;
                    // for anything else (out of file descriptors) wait a moment before
                    // trying again.
                    Err(e) if is_connection_error(&e) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                Some(_) = refusing.join_next(), if !refusing.is_empty() => {}
            }
        }
        refusing.shutdown().await;
        stop();
        let all_done = async { while connections.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(self.drain, all_done).await;
        connections.shutdown().await;
        Ok(())
    }
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sansrpc::connection::{Config, NETWORK_FRAME_TIMEOUT, NETWORK_IDLE_TIMEOUT};

    use super::{Builder, ServeOptions};

    #[test]
    fn servers_fill_unset_timeouts_with_the_network_defaults() {
        let options = ServeOptions::default();
        let mut config = Config::default();
        config.idle_timeout = Some(Duration::from_secs(7));
        let builder = options.builder(Builder::new().config(config));
        let served = builder.connection_config();
        assert_eq!(served.idle_timeout, Some(Duration::from_secs(7)), "kept");
        assert_eq!(served.frame_timeout, Some(NETWORK_FRAME_TIMEOUT));
        assert!(served.write_stall_timeout.is_some());

        let off = ServeOptions {
            network_defaults: false,
            ..ServeOptions::default()
        };
        let builder = off.builder(Builder::new());
        assert_eq!(builder.connection_config().idle_timeout, None);
        assert_ne!(
            Some(NETWORK_IDLE_TIMEOUT),
            builder.connection_config().idle_timeout
        );
    }
}
