//! sansrpc-blocking: the [`sansrpc`] JSON-RPC 2.0 connection machine on `std::io` and threads, with
//! no async runtime anywhere in its dependency tree.
//!
//! # Threads
//! Each connection has one **driver** thread, the only one that touches its
//! [`Connection`](sansrpc::Connection), and one **reader** thread that reads the transport and
//! hands byte chunks to the driver over a channel. Everything else talks to the driver over
//! that same channel: [`Client`] handles (calls, notifications, batches), and the handler
//! **workers** that send their answers back. The driver follows the connection's calling
//! contract: input and timeouts in, frames written to the transport, events routed: a
//! response to the caller waiting for it, a request to a handler worker, a notification to
//! its handler right there on the driver thread. Notifications therefore run one at a time
//! in arrival order, each before any request that arrived after it starts (as LSP needs for
//! `didChange`); keep their handlers short, since the connection's I/O waits for them.
//! Inside one, [`NotificationContext::current`] reaches the connection (its per-connection
//! values, notifications to the peer, queued). A method registered as staged
//! ([`Router::raw_staged_method`](sansrpc::router::Router::raw_staged_method)) runs its first
//! part when the request is handed out, on the driver thread in the same order, and the
//! rest on the pool: a handler that must see the connection's state as of its request's
//! arrival (an LSP server's documents) takes it there.
//!
//! Requests run on a bounded pool of [`Options::workers`] threads. Requests beyond the pool
//! wait in a queue bounded by the endpoint's own
//! [`max_inflight_incoming`](sansrpc::connection::Config::max_inflight_incoming): beyond that
//! the connection stops reading until a handler answers, so the peer's socket pushes back
//! ([`hold_when_busy`](sansrpc::connection::Config::hold_when_busy), the default; off, the
//! endpoint answers `-32002` Server busy by itself). A handler learns that its request
//! was cancelled (by the peer, or by a shutdown) from its [`RequestContext::current`]'s
//! [`is_cancelled`](RequestContext::is_cancelled).
//!
//! A stream method ([`Router::stream_method`](sansrpc::router::Router::stream_method))
//! returns an iterator; its items are taken on the handler pool, up to the waiting pull's
//! `max` at a time, so an iterator that blocks never stalls the connection. Clients read
//! streams as iterators ([`Client::stream`]), with pulls pipelined.
//!
//! A method subscription ([`SubscriptionRouter::subscription`],
//! the Ethereum shape) runs its handler on the pool with a [`PendingSubscription`]; once
//! accepted, its [`SubscriptionSink`] sends from any thread into a queue bounded by the
//! declaration, which the driver thread empties into the connection. Clients follow one as
//! an iterator ([`Client::subscribe`]), which unsubscribes when dropped (docs/subscriptions.md).
//!
//! Input is read in at most [`Options::read_buffers`] chunks ahead of the endpoint: when the
//! endpoint pushes back, the reader stops reading.
//!
//! # Shutdown
//! [`Server::shutdown`] and [`Client::close`] stop reading, give handlers in flight
//! the connection's [`end_grace`](sansrpc::Config::end_grace) to answer (then raise their cancellation flag), end every
//! pending call with [`EndReason::Closed`](sansrpc::connection::EndReason), shut the socket
//! down so the reader's blocking `read` returns, and join every thread. A thread that does
//! not end within the grace (a handler that ignores cancellation, a peer that never reads)
//! is left behind rather than waited for: shutdown never hangs.
//!
//! # Example
//! ```
//! use std::sync::Arc;
//! use sansrpc::method::Method;
//! use sansrpc::router::Router;
//! use sansrpc_blocking::{connect_tcp, serve_tcp, Options};
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
//! let server = serve_tcp("127.0.0.1:0", Arc::new(router), Options::default()).unwrap();
//!
//! let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
//! assert_eq!(client.call::<Add>(&(1, 2)).unwrap(), 3);
//! client.close();
//! server.shutdown();
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod client;
mod driver;
mod extension;
mod peer;
mod pool;
pub mod reconnect;
mod stream;
mod subscription;
mod transport;
mod worker;

use std::fmt;
use std::sync::Arc;

use sansrpc::Config;

pub use client::{Batch, Client};
pub use driver::{Cancelled, NotificationContext, RequestContext};
pub use extension::Extension;
pub use reconnect::Reconnect;
pub use sansrpc::client::{BatchSlot, RawResult};
pub use sansrpc::method::CallError;
pub use sansrpc::Timeout;
pub use sansrpc_runtime::{BoxFuture, ConnectionNotifier, Peer, PeerConnection, PeerContext};
pub use stream::{StreamIter, StreamOptions, TypedIter};
pub use subscription::{
    Ended, Fanout, NotAccepted, PendingSubscription, RawSubscription, Subscription,
    SubscriptionError, SubscriptionRouter, SubscriptionSink,
};
pub use transport::{connect_tcp, serve_stdio, serve_stdio_status, serve_tcp, spawn_child, Server};
#[cfg(unix)]
pub use transport::{connect_unix, serve_unix, UnixServer};

/// How connections are driven: the connection's one [`Config`] (framing, limits, deadlines,
/// profile, heartbeat, streams, close phases) and what only this adapter has (threads,
/// reads, servers' bounds).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// The connection's config, as every driver takes it; its framing is the byte stream's
    /// (Content-Length unless set; [`Config::for_profile`] sets the profile's: MCP is
    /// newline-delimited JSON).
    pub connection: Config,
    /// Handler threads: per server for [`serve_tcp`], per connection otherwise (default 4).
    pub workers: usize,
    /// Most connections [`serve_tcp`] and [`serve_unix`] serve at once (default 64). A
    /// connection beyond it is sent one error response (id `null`, `-32002` "Server busy:
    /// too many connections", in the connection's framing) and closed as soon as it is
    /// accepted; the connections already served keep working.
    pub max_connections: usize,
    /// [`serve_tcp`] and [`serve_unix`] fill the protection timeouts the connection config
    /// leaves unset with the network defaults
    /// ([`Config::with_network_defaults`]: idle 5 min, partial frame 30 s, write stall
    /// 30 s), so a server on a socket is safe by default (default `true`).
    pub network_defaults: bool,
    /// Largest read from the transport (default 16 KiB): reads start at 4 KiB and grow
    /// while they fill their buffer, so quiet connections stay small.
    pub read_size: usize,
    /// Most chunks read ahead of the connection (default 4): the back-pressure bound.
    pub read_buffers: usize,
    /// Sees a copy of every byte the connection reads and writes (default none): for
    /// showing the wire, as `sansrpc call --raw` does.
    pub tap: Option<Tap>,
    /// A per-connection extension (pub/sub, see `sansrpc-pubsub`), default none: it
    /// answers the requests it owns before the router and sends its notifications.
    pub extension: Option<Extension>,
    /// Called with every event the driver does not act on itself (framing and protocol
    /// errors, rejected frames, unknown responses), default none: for logging.
    pub on_event: Option<EventHook>,
}

/// A function called on the connection's driver thread with each event the driver does
/// not act on itself, and the connection (to send the peer a notification with
/// [`Client::notify_raw_queued`]). Keep it short: the connection waits for it.
#[derive(Clone)]
pub struct EventHook(Arc<EventFn>);

type EventFn = dyn for<'a> Fn(&Client, sansrpc::connection::Event<'a>) + Send + Sync;

impl EventHook {
    /// A hook calling `f`.
    pub fn new(
        f: impl for<'a> Fn(&Client, sansrpc::connection::Event<'a>) + Send + Sync + 'static,
    ) -> EventHook {
        EventHook(Arc::new(f))
    }

    /// Calls the hook: what the driver does with each event; for a hook that wraps
    /// another (`sansrpc-lsp`'s, which calls the one its caller gave after its own).
    pub fn call(&self, peer: &Client, event: sansrpc::connection::Event<'_>) {
        (self.0)(peer, event);
    }
}

impl fmt::Debug for EventHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventHook")
    }
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

impl Default for Options {
    fn default() -> Self {
        Options::new(Config::default())
    }
}

impl Options {
    /// The adapter's defaults around `connection`.
    pub fn new(connection: Config) -> Self {
        Options {
            connection,
            workers: 4,
            max_connections: 64,
            network_defaults: true,
            read_size: 16 * 1024,
            read_buffers: 4,
            tap: None,
            extension: None,
            on_event: None,
        }
    }

    /// The options for `profile`: [`Config::for_profile`] (its conventions and framing).
    pub fn for_profile(profile: sansrpc::Profile) -> Self {
        Options::new(Config::for_profile(profile))
    }
}
