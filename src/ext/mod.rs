//! Protocol extensions above plain JSON-RPC 2.0, each optional and each sans-I/O.
//!
//! - [`interceptors`]: authentication, rate limiting, logging and metrics around calls,
//!   on the server (router layers) and on clients.
//! - [`reconnect`]: the connection lifecycle, the reconnect schedule (backoff with jitter)
//!   and the subscriptions a reconnecting client replays.
//! - [`keepalive`]: the application-level `ping`/`pong` heartbeat.
//! - [`connection`]: how a per-connection extension plugs into an adapter's driver.
//! - [`topic`]: topics and patterns with NATS wildcards, and the token trie that matches
//!   them.
//! - [`pubsub`]: the [`Hub`](pubsub::Hub): pub/sub and persistent subscriptions (WebSocket
//!   seed §10–11) for every connection of a server.
//! - [`store`]: the log behind persistent subscriptions, as a trait with an in-memory
//!   implementation; durable implementations live in their own crates
//!   (`sansrpc-store-redb`, `sansrpc-store-nats`).
//! - [`stream`]: pull-based streams over `rpc.stream.next` / `rpc.stream.cancel`: the
//!   server-side table of a connection's streams and the client-side reader.

pub mod connection;
pub mod interceptors;
pub mod keepalive;
#[cfg(feature = "pubsub")]
pub mod pubsub;
pub mod reconnect;
#[cfg(feature = "pubsub")]
pub mod store;
#[cfg(feature = "streams")]
pub mod stream;
#[cfg(feature = "pubsub")]
pub mod topic;
