//! sansrpc-blocking: the [`sansrpc`] JSON-RPC 2.0 endpoint on `std::io` and threads, with
//! no async runtime anywhere in its dependency tree.
//!
//! # Threads
//! Each connection has one **driver** thread, the only one that touches its
//! [`Endpoint`](sansrpc::Endpoint), and one **reader** thread that reads the transport and
//! hands byte chunks to the driver over a channel. Everything else talks to the driver over
//! that same channel: [`Client`] handles (calls, notifications, batches), and the handler
//! **workers** that send their answers back. The driver follows the endpoint's calling
//! contract: input and timeouts in, frames written to the transport, events routed: a
//! response to the caller waiting for it, a request to a handler worker, a notification to
//! its handler right there on the driver thread. Notifications therefore run one at a time
//! in arrival order, each before any request that arrived after it starts (as LSP needs for
//! `didChange`); keep their handlers short, since the connection's I/O waits for them.
//!
//! Requests run on a bounded pool of [`Config::workers`] threads. Requests beyond the pool
//! wait in a queue bounded by the endpoint's own
//! [`max_inflight_incoming`](sansrpc::endpoint::Config::max_inflight_incoming): beyond that
//! the connection stops reading until a handler answers, so the peer's socket pushes back
//! ([`hold_when_busy`](sansrpc::endpoint::Config::hold_when_busy), the default; off, the
//! endpoint answers `-32002` Server busy by itself). A handler learns that its request
//! was cancelled (by the peer, or by a shutdown) from [`is_cancelled`].
//!
//! A stream method ([`Router::stream_method`](sansrpc::router::Router::stream_method))
//! returns an iterator; its items are taken on the handler pool, up to the waiting pull's
//! `max` at a time, so an iterator that blocks never stalls the connection. Clients read
//! streams as iterators ([`Client::stream`]), with pulls pipelined.
//!
//! Input is read in at most [`Config::read_buffers`] chunks ahead of the endpoint: when the
//! endpoint pushes back, the reader stops reading.
//!
//! # Shutdown
//! [`Server::shutdown`] and [`Client::close`] stop reading, give handlers in flight
//! [`Config::shutdown_grace`] to answer (then raise their cancellation flag), end every
//! pending call with [`EndReason::Closed`](sansrpc::endpoint::EndReason), shut the socket
//! down so the reader's blocking `read` returns, and join every thread. A thread that does
//! not end within the grace (a handler that ignores cancellation, a peer that never reads)
//! is left behind rather than waited for: shutdown never hangs.
//!
//! # Example
//! ```
//! use std::sync::Arc;
//! use sansrpc::method::Method;
//! use sansrpc::router::Router;
//! use sansrpc_blocking::{connect_tcp, serve_tcp, Config};
//!
//! enum Add {}
//! impl Method for Add {
//!     const NAME: &'static str = "add";
//!     type Params = (i64, i64);
//!     type Result = i64;
//! }
//!
//! let mut router = Router::new();
//! router.method::<Add, _>(|(a, b)| Ok(a + b)).unwrap();
//! let server = serve_tcp("127.0.0.1:0", Arc::new(router), Config::default()).unwrap();
//!
//! let client = connect_tcp(server.local_addr(), Config::default()).unwrap();
//! assert_eq!(client.call::<Add>(&(1, 2), None).unwrap(), 3);
//! client.close();
//! server.shutdown();
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod client;
mod driver;
mod extension;
mod pool;
pub mod reconnect;
mod stream;
mod transport;
mod worker;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use sansrpc::codec::Framing;
use sansrpc::endpoint::SendError;
use sansrpc::method::CallError;

pub use client::{Batch, Client, Pending};
pub use driver::{is_cancelled, report_progress, Peer, RequestContext};
pub use extension::Extension;
pub use reconnect::Reconnect;
pub use stream::{StreamIter, StreamOptions, TypedIter};
pub use transport::{connect_tcp, serve_stdio, serve_stdio_status, serve_tcp, spawn_child, Server};
#[cfg(unix)]
pub use transport::{connect_unix, serve_unix, UnixServer};

/// How connections are driven; every bound the adapter keeps is here, the endpoint's own
/// in [`Config::endpoint`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The endpoint's configuration. Its `framing` is ignored: [`Config::framing`] decides.
    pub endpoint: sansrpc::endpoint::Config,
    /// How the byte stream is cut into messages (default Content-Length, as LSP; newline
    /// framing is what MCP uses over stdio).
    pub framing: Framing,
    /// Handler threads: per server for [`serve_tcp`], per connection otherwise (default 4).
    pub workers: usize,
    /// Most connections [`serve_tcp`] and [`serve_unix`] serve at once (default 64). A
    /// connection beyond it is sent one error response (id `null`, `-32002` "Server busy:
    /// too many connections", in the connection's framing) and closed as soon as it is
    /// accepted; the connections already served keep working.
    pub max_connections: usize,
    /// [`serve_tcp`] and [`serve_unix`] fill the protection timeouts the endpoint config
    /// leaves unset with the network defaults
    /// ([`Config::with_network_defaults`](sansrpc::endpoint::Config::with_network_defaults):
    /// idle 5 min, partial frame 30 s, write stall 30 s), so a server on a socket is safe by
    /// default (default `true`).
    pub network_defaults: bool,
    /// How long a shutdown, or the end of the peer's input, waits for handlers in flight
    /// to answer before closing (default 5 s).
    pub shutdown_grace: Duration,
    /// Largest read from the transport (default 16 KiB): reads start at 4 KiB and grow
    /// while they fill their buffer, so quiet connections stay small.
    pub read_size: usize,
    /// Most chunks read ahead of the endpoint (default 4): the back-pressure bound.
    pub read_buffers: usize,
    /// Sees a copy of every byte the connection reads and writes (default none): for
    /// showing the wire, as `sansrpc call --raw` does.
    pub tap: Option<Tap>,
    /// The application-level `ping`/`pong` heartbeat (default none): the peer's `ping`
    /// notifications are answered with `pong` and never reach the router; with an interval
    /// set, a `ping` goes out every interval and the connection closes (pending calls fail
    /// as closed) when its `pong` is later than the timeout.
    pub heartbeat: Option<sansrpc::ext::keepalive::HeartbeatConfig>,
    /// Bounds of the streams a connection serves (open streams, queued pulls, items per
    /// answer, idle timeout); see [`sansrpc::ext::stream`].
    pub streams: sansrpc::ext::stream::StreamConfig,
    /// A per-connection extension (pub/sub, see `sansrpc-pubsub`), default none: it
    /// answers the requests it owns before the router and sends its notifications.
    pub extension: Option<Extension>,
    /// Under the LSP profile, keep a server's lifecycle (default `true`; see
    /// [`sansrpc::connection::Config::lsp_lifecycle`]): requests before `initialize`
    /// refused, `exit` ends the connection ([`Client::exit_code`],
    /// [`serve_stdio_status`]), the editor's process watched.
    pub lsp_lifecycle: bool,
}

/// Which way bytes went past a [`Tap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Written to the peer.
    Sent,
    /// Read from the peer.
    Received,
}

/// A function called with every chunk of bytes a connection writes or reads, as the
/// transport hands them over (a chunk may hold part of a frame, or several frames). It runs
/// on the connection's reader and driver threads: keep it short.
#[derive(Clone)]
pub struct Tap(Arc<TapFn>);

type TapFn = dyn Fn(Direction, &[u8]) + Send + Sync;

impl Tap {
    /// A tap calling `f`.
    pub fn new(f: impl Fn(Direction, &[u8]) + Send + Sync + 'static) -> Tap {
        Tap(Arc::new(f))
    }

    pub(crate) fn see(&self, direction: Direction, bytes: &[u8]) {
        if !bytes.is_empty() {
            (self.0)(direction, bytes);
        }
    }
}

impl fmt::Debug for Tap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tap")
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            endpoint: sansrpc::endpoint::Config::default(),
            framing: Framing::ContentLength,
            workers: 4,
            max_connections: 64,
            network_defaults: true,
            shutdown_grace: Duration::from_secs(5),
            read_size: 16 * 1024,
            read_buffers: 4,
            tap: None,
            heartbeat: None,
            streams: sansrpc::ext::stream::StreamConfig::default(),
            extension: None,
            lsp_lifecycle: true,
        }
    }
}

impl Config {
    /// The configuration for `profile`: the endpoint's
    /// ([`sansrpc::endpoint::Config::for_profile`]) and the framing that goes with it (MCP:
    /// newline-delimited JSON, as its stdio transport; LSP: Content-Length). Setting only
    /// [`Config::endpoint`] leaves [`Config::framing`] at Content-Length.
    pub fn for_profile(profile: sansrpc::endpoint::Profile) -> Self {
        let endpoint = sansrpc::endpoint::Config::for_profile(profile);
        let mut config = Config::default();
        config.framing = endpoint.framing.unwrap_or(config.framing);
        config.endpoint = endpoint;
        config
    }
}

/// Why a call or a notification produced no result.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Refused before anything was sent: the connection is closed, too many requests are
    /// pending, output is backed up, or the params do not serialize to an array or object.
    Send(SendError),
    /// Sent, and then: the peer answered with an error, the result did not decode, or the
    /// request ended without an answer (timed out, connection closed).
    Call(CallError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Send(e) => write!(f, "not sent: {e}"),
            Error::Call(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Send(e) => Some(e),
            Error::Call(e) => Some(e),
        }
    }
}
