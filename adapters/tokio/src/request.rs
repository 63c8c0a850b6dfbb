//! Reading HTTP/1.1 requests from an accepted connection, for the servers that answer them
//! (JSON-RPC over HTTP in [`http`](crate::http), MCP's Streamable HTTP in `sansrpc_mcp::tokio`):
//! the TLS handshake, then each request's head and body through the core's sans-I/O
//! decoder, within the time limits of the builder's config. What a request means, and its
//! answer, is each server's own.

use std::future::Future;
use std::io;
#[cfg(feature = "tls")]
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use sansrpc::codec::http::{BodyKind, Head, HttpFault, HttpStep, RequestDecoder};
use sansrpc::Config;
use tokio::io::AsyncRead;
use tokio::net::TcpStream;

use crate::wire::{Input, SMALL};
use crate::ServeOptions;

/// What a request whose client waits for it (`Expect: 100-continue`) is sent before its
/// body is read.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// An accepted connection once its handshake is done: TLS over TCP, or plain TCP.
#[cfg(feature = "tls")]
pub type Accepted = crate::tls::ServerStream;
/// An accepted connection once its handshake is done.
#[cfg(not(feature = "tls"))]
pub type Accepted = TcpStream;

/// How long a client may take over a request, from the builder's config (with the network
/// defaults when [`ServeOptions::network_defaults`] is on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Times {
    /// A request head is due this long after the last exchange ended (or the connection
    /// opened, its TLS handshake included): the shorter of the config's
    /// [`frame_timeout`](sansrpc::Config::frame_timeout) and
    /// [`idle_timeout`](sansrpc::Config::idle_timeout), so a keep-alive connection waiting
    /// that long for its next request is closed as well.
    pub head: Option<Duration>,
    /// A body is due this long after its head: the config's `frame_timeout`.
    pub body: Option<Duration>,
}

impl Times {
    /// The limits `config` sets.
    pub fn of(config: &Config) -> Self {
        let head = match (config.frame_timeout, config.idle_timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Times {
            head,
            body: config.frame_timeout,
        }
    }
}

/// `work`, failing with [`io::ErrorKind::TimedOut`] (saying `what`) when `limit` passes
/// first.
pub async fn within<T>(
    limit: Option<Duration>,
    what: &'static str,
    work: impl Future<Output = io::Result<T>>,
) -> io::Result<T> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, work)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, what))?,
        None => work.await,
    }
}

/// What every connection an HTTP server accepts goes through before its first request:
/// the TLS handshake when [`ServeOptions::tls`] is set, within the request head's limit.
#[derive(Debug, Clone)]
pub struct Handshake {
    #[cfg(feature = "tls")]
    tls: Option<Arc<crate::tls::rustls::ServerConfig>>,
    #[cfg(feature = "tls")]
    limit: Option<Duration>,
}

impl Handshake {
    /// The handshake `options` ask for, within `times`' head limit.
    pub fn new(options: &ServeOptions, times: Times) -> Self {
        #[cfg(not(feature = "tls"))]
        let _ = (options, times);
        Handshake {
            #[cfg(feature = "tls")]
            tls: options.tls.clone(),
            #[cfg(feature = "tls")]
            limit: times.head,
        }
    }

    /// Runs the handshake on `stream`.
    pub async fn run(&self, stream: TcpStream) -> io::Result<Accepted> {
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            // Boxed with its time limit: rustls's handshake and the timer are about 2.7 KiB
            // of state, which every plain connection's setup (which holds this future) would
            // otherwise be made with, and copied at as it is boxed.
            let handshake = crate::tls::accept(Some(tls), stream);
            return Box::pin(within(self.limit, "TLS handshake", handshake)).await;
        }
        #[cfg(feature = "tls")]
        let stream = crate::tls::ServerStream::Plain(stream);
        Ok(stream)
    }
}

/// One part of a request, read by [`Requests::poll_part`].
// A head keeps its fields' places inline (see `sansrpc::codec::http::HttpStep`).
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Part {
    /// A request head. A body follows unless [`Head::body`] is [`BodyKind::None`].
    Head(Head),
    /// The body of the request whose head came last: `input.data()[..len]`; consume `used`
    /// bytes of the input once it is taken.
    Body {
        /// Input bytes to consume once the body is taken.
        used: usize,
        /// The body's length.
        len: usize,
    },
    /// Not a request this server reads on (malformed, over a bound): answer the fault's
    /// status and close the connection.
    Fault(HttpFault),
    /// The client closed the connection (a request cut short is dropped).
    End,
}

/// The requests of one connection: what was read of them, and the decoder that cuts them
/// out of it (a chunked body is joined in place).
#[derive(Debug)]
pub struct Requests {
    /// What was read and not consumed yet.
    input: Input,
    decoder: RequestDecoder,
    /// The decoder found what was read incomplete and wants this many bytes: it is not
    /// asked again before more come.
    need: Option<usize>,
}

impl Requests {
    /// Requests cut by `decoder`, with nothing read yet.
    pub fn new(decoder: RequestDecoder) -> Self {
        Requests {
            input: Input::new(Vec::new()),
            decoder,
            need: None,
        }
    }

    /// True when `head` declares a body over the decoder's limit: it is answered `413`
    /// without being read, and the connection closes (what follows on it is unknown).
    pub fn too_large(&self, head: &Head) -> bool {
        matches!(head.body, BodyKind::Length(n) if n > self.decoder.max_body() as u64)
    }

    /// The body of a [`Part::Body`] of `len` bytes.
    pub fn body(&mut self, len: usize) -> &[u8] {
        &self.input.data()[..len]
    }

    /// The first `used` bytes read are done with (a body taken).
    pub fn consume(&mut self, used: usize) {
        self.input.consume(used);
    }

    /// How many bytes were read and not consumed.
    pub fn read_ahead(&self) -> usize {
        self.input.len()
    }

    /// Nothing more will be read: the buffer is given back.
    #[cfg(feature = "http")]
    pub fn release(&mut self) {
        self.input = Input::new(Vec::new());
        self.need = None;
    }

    /// The next part of a request when what was read holds it whole; else how many bytes
    /// the input should hold to go on.
    pub fn buffered(&mut self) -> Result<Part, usize> {
        if let Some(need) = self.need {
            return Err(need);
        }
        // Nothing read, and no body under way: where every keep-alive exchange ends, once
        // its body is taken. The decoder would find no line to parse, and the read asked
        // for is the one below for an empty input.
        if self.input.len() == 0 && !self.decoder.in_body() {
            self.need = Some(SMALL);
            return Err(SMALL);
        }
        match self.decoder.decode(self.input.data()) {
            Err(fault) => Ok(Part::Fault(fault)),
            Ok(HttpStep::Head(used, head)) => {
                self.input.consume(used);
                Ok(Part::Head(head))
            }
            Ok(HttpStep::Body(used, body)) => Ok(Part::Body {
                used,
                len: body.len(),
            }),
            Ok(HttpStep::Incomplete(need)) => {
                // A chunked body's framing is dropped as it is decoded (what is still needed
                // is as many bytes more as before).
                let held = self.input.len();
                let kept = self.decoder.reclaim(self.input.data());
                self.input.keep(kept);
                let need = kept + need.saturating_sub(held);
                // A head or chunk line says only that it needs more: read a good deal more,
                // not a byte at a time.
                let need = need.max(self.input.len() + SMALL);
                self.need = Some(need);
                Err(need)
            }
        }
    }

    /// Reads more of `stream` into the input, wanting it to hold `need` bytes: `Ok(0)` at
    /// the end of the stream. (Also for what a client sends ahead while its answer is
    /// written.)
    pub fn poll_read<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
        cx: &mut Context<'_>,
        need: usize,
    ) -> Poll<io::Result<usize>> {
        let n = ready!(self.input.poll_fill(stream, cx, need))?;
        self.need = None;
        Poll::Ready(Ok(n))
    }

    /// Reads `stream` until the next part of a request is whole.
    pub fn poll_part<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<Part>> {
        loop {
            let need = match self.buffered() {
                Ok(part) => return Poll::Ready(Ok(part)),
                Err(need) => need,
            };
            if ready!(self.poll_read(stream, cx, need))? == 0 {
                return Poll::Ready(Ok(Part::End));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Handshake, Times};
    use crate::ServeOptions;

    /// The handshake's future is part of every connection's setup, made and boxed as the
    /// connection is accepted: without TLS it holds no room for rustls's handshake and its
    /// timer (2.8 KiB, the size of the HTTP server's whole setup before).
    #[tokio::test]
    async fn a_plain_connections_handshake_holds_no_room_for_tls() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stream = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let options = ServeOptions::default();
        let handshake = Handshake::new(&options, Times::of(&sansrpc::Config::default()));
        let run = handshake.run(stream);
        let size = std::mem::size_of_val(&run);
        assert!(size <= 256, "the plain handshake's future is {size} bytes");
        let accepted = run.await.expect("a plain connection needs no handshake");
        #[cfg(feature = "tls")]
        assert!(matches!(accepted, crate::tls::ServerStream::Plain(_)));
        drop(accepted);
    }
}
