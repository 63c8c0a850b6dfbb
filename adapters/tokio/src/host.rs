//! What a protocol crate serves and calls HTTP with on tokio, so that each protocol over
//! HTTP (MCP's Streamable HTTP in `sansrpc-mcp`, A2A's JSON-RPC binding in `sansrpc-a2a`)
//! shares this crate's sockets, limits and rules instead of writing its own: the accept
//! loop with its connection cap and busy answer ([`Listener`], [`HTTP_BUSY`]), the TLS
//! handshake and the reading of each request's head and body within the builder config's
//! time limits ([`Handshake`], [`Requests`], [`Times`], [`within`]), the HTTP/1.1 request
//! loop of a socket ([`serve_socket`], with the server's [`Answerer`]), the responses a
//! machine writes stream by stream ([`Streams`], [`Writers`], [`write_stream`]; for the
//! tower services `service::stream_response`), the bearer-token validator an application
//! gives its server ([`Validator`], [`TokenCheck`]), the connections a client dials
//! ([`HttpTarget`], [`HttpStream`], [`Dial`]) and the answers they read whole
//! ([`read_whole`]), and, for the tower services, the conversions
//! between `http`'s types and the core's ([`service`](crate::service)'s `Body`, `head_of`,
//! `read_body`, `response`). What a request means and how it is answered is the
//! protocol's own.

pub use crate::request::{within, Accepted, Handshake, Part, Requests, Times, CONTINUE};
pub use crate::streams::{
    authorize, run_timers, serve_http, serve_socket, write_stream, Answerer, KeyHasher, Keys,
    PollParts, PollStream, Request, ServerOptions, Streams, TokenCheck, Validator, Wakeup, Writer,
    Writers, WRITE_STALL,
};
pub use crate::tcp::PlainOrTls;
pub use crate::wire::SMALL;
pub use crate::{no_delay, tune, Listener, HTTP_BUSY};
pub use sansrpc::codec::http::{Authorized, BodyStep};

#[cfg(feature = "http")]
pub use crate::http_client::{
    read_whole, BodyError, Dial, Stream as HttpStream, Target as HttpTarget,
};
