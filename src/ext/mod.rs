//! Protocol extensions above plain JSON-RPC 2.0, each optional and each sans-I/O.
//!
//! - [`store`]: the log behind persistent subscriptions, as a trait with an in-memory
//!   implementation; durable implementations live in their own crates
//!   (`sansrpc-store-redb`, `sansrpc-store-nats`).
//! - [`stream`]: pull-based streams over `rpc.stream.next` / `rpc.stream.cancel`: the
//!   server-side table of a connection's streams and the client-side reader.

pub mod store;
pub mod stream;
