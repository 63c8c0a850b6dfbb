//! Protocol extensions above plain JSON-RPC 2.0, each optional and each sans-I/O.
//!
//! - [`store`]: the log behind persistent subscriptions, as a trait with an in-memory
//!   implementation; durable implementations live in their own crates
//!   (`sansrpc-store-redb`, `sansrpc-store-nats`).

pub mod store;
