//! Optional protocol extensions above plain JSON-RPC 2.0, each sans-I/O. What every
//! [`Connection`](crate::connection::Connection) compiles in (the heartbeat, streams, the
//! per-connection hook) lives under [`connection`](crate::connection). Pub/sub and
//! persistent subscriptions (the hub, its store and NATS-style topics) are a crate of their
//! own, `sansrpc-pubsub`.
//!
//! - [`interceptors`]: authentication, rate limiting, logging and metrics around calls,
//!   on the server (router layers) and on clients.
//! - [`reconnect`]: the connection lifecycle, the reconnect schedule (backoff with jitter)
//!   and the subscriptions a reconnecting client replays.

pub mod interceptors;
pub mod reconnect;
