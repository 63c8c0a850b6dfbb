//! A2A on tokio (feature `tokio`): an agent served standalone ([`serve`], [`serve_with`],
//! on the listener every sansrpc-tokio server shares) or mounted in an axum or hyper app
//! ([`A2aService`], beside MCP's `McpService`), and called ([`Client`]). Every decision is
//! the sans-I/O machine's ([`http::Endpoint`](crate::http::Endpoint)); this module moves
//! bytes, runs the agent, and posts the push notifications, on the request loop, stream
//! writers and tower conversions every sansrpc-tokio server shares
//! (`sansrpc_tokio::host`).
//!
//! ```no_run
//! use sansrpc_a2a::echo::{agent_card, EchoAgent};
//!
//! # async fn run() -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! let card = agent_card("http://127.0.0.1:3000/a2a");
//! let config = sansrpc_a2a::http::Config::default(); // /a2a, the card at its well-known path
//! sansrpc_a2a::tokio::serve(listener, EchoAgent::new(), card, config, std::future::pending()).await
//! # }
//! ```

mod client;
mod serve;
mod service;

pub use client::{Client, ClientError, EventStream};
pub use sansrpc_tokio::host::{TokenCheck, Validator};
pub use serve::{serve, serve_with, Options, Peers};
pub use service::A2aService;
