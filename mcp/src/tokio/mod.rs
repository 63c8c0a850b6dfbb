//! MCP's Streamable HTTP on tokio (feature `tokio`): the 2025-11-25 session revision (and
//! older clients) and the stateless 2026-07-28 revision, served standalone ([`serve`],
//! [`serve_with`]) or mounted in an axum or hyper app ([`McpService`]), and called
//! ([`connect`], [`Connect`] for TLS roots, headers and credentials on every request). Every
//! decision is a sans-I/O machine's ([`streamable::Endpoint`](crate::streamable::Endpoint), and
//! [`streamable::client::HttpClient`](crate::streamable::client::HttpClient) for the
//! client); this module moves bytes, on the listener, request reader and tower conversions
//! that every sansrpc-tokio server shares (`sansrpc_tokio::host`).
//!
//! ```no_run
//! use sansrpc::connection::{Config, Profile};
//! use sansrpc_mcp::streamable;
//! use sansrpc_tokio::{AsyncRouter, Builder};
//!
//! # async fn run() -> std::io::Result<()> {
//! let router = AsyncRouter::new(); // initialize, tools/list, tools/call ...
//! let builder = Builder::new().config(Config::for_profile(Profile::Mcp)).router(router);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! let config = streamable::Config::default(); // http://127.0.0.1:3000/mcp
//! sansrpc_mcp::tokio::serve(listener, builder, config, std::future::pending()).await
//! # }
//! ```

mod channel;
mod client;
mod connect;
mod serve;
mod service;

pub use client::{connect, last_failure, session_id};
pub use connect::Connect;
/// The OAuth 2.1 client ([`Connect::oauth`]): `sansrpc-oauth`, re-exported so an MCP client
/// needs no other dependency for it.
pub use sansrpc_oauth as oauth;
pub use serve::{serve, serve_with, Options, TokenCheck, Validator};
pub use service::McpService;
