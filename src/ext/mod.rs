//! Optional protocol extensions above plain JSON-RPC 2.0, each sans-I/O. What every
//! [`Connection`](crate::connection::Connection) compiles in (the heartbeat, streams, the
//! per-connection hook) lives under [`connection`](crate::connection).
//!
//! - [`interceptors`]: authentication, rate limiting, logging and metrics around calls,
//!   on the server (router layers) and on clients.
//! - [`reconnect`]: the connection lifecycle, the reconnect schedule (backoff with jitter)
//!   and the subscriptions a reconnecting client replays.
//! - [`topic`]: topics and patterns with NATS wildcards, and the token trie that matches
//!   them.
//! - [`pubsub`]: the [`Hub`](pubsub::Hub): pub/sub and persistent subscriptions (WebSocket
//!   seed §10–11) for every connection of a server.
//! - [`store`]: the log behind persistent subscriptions, as a trait with an in-memory
//!   implementation; durable implementations live in their own crates
//!   (`sansrpc-store-redb`, `sansrpc-store-nats`).

pub mod interceptors;
#[cfg(feature = "pubsub")]
pub mod pubsub;
pub mod reconnect;
#[cfg(feature = "pubsub")]
pub mod store;
#[cfg(feature = "pubsub")]
pub mod topic;
