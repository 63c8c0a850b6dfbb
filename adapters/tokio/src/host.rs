//! What a protocol crate serves and calls HTTP with on tokio, so that each protocol over
//! HTTP (MCP's Streamable HTTP in `sansrpc-mcp`, A2A next) shares this crate's sockets,
//! limits and rules instead of writing its own: the accept loop with its connection cap
//! and busy answer ([`Listener`], [`HTTP_BUSY`]), the TLS handshake and the reading of
//! each request's head and body within the builder config's time limits ([`Handshake`],
//! [`Requests`], [`Times`], [`within`]), the connections a client dials ([`HttpTarget`],
//! [`HttpStream`]), and, for the tower services, the conversions between `http`'s types
//! and the core's ([`service`](crate::service)'s `Body`, `head_of`, `read_body`,
//! `response`). What a request means and how it is answered is the protocol's own.

pub use crate::request::{within, Accepted, Handshake, Part, Requests, Times, CONTINUE};
pub use crate::wire::SMALL;
pub use crate::{no_delay, tune, Listener, HTTP_BUSY};

#[cfg(feature = "http")]
pub use crate::http_client::{Stream as HttpStream, Target as HttpTarget};
