//! Protocol extensions above plain JSON-RPC 2.0, each optional and each sans-I/O.
//!
//! - [`connection`]: how a per-connection extension plugs into an adapter's driver.
//! - [`topic`]: topics and patterns with NATS wildcards, and the token trie that matches
//!   them.
//! - [`pubsub`]: the [`Hub`](pubsub::Hub): pub/sub and persistent subscriptions (WebSocket
//!   seed §10–11) for every connection of a server.
//! - [`store`]: the log behind persistent subscriptions, as a trait with an in-memory
//!   implementation; durable implementations live in their own crates
//!   (`sansrpc-store-redb`, `sansrpc-store-nats`).

pub mod connection;
pub mod pubsub;
pub mod store;
pub mod topic;
