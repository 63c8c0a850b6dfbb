//! JSON-RPC over WebSocket (tokio-tungstenite): one message per text frame, on the shared
//! driver.
//!
//! A binary frame closes the connection with code 1003 (unsupported data), a message over
//! the endpoint's [`Limits::max_frame_bytes`] with 1009 (too big; tungstenite refuses it
//! before buffering more than the limit), a protocol violation (unmasked client frame,
//! reserved bits or opcodes, an oversize or fragmented control frame) with 1002, invalid
//! UTF-8 in a text frame or close reason with 1007. The write buffer is bounded ([`config`]). Pings are answered (tungstenite does it); with a
//! [`KeepAlive`], a ping goes out every interval and the connection fails if its pong does
//! not come within the timeout. Calls pending when the socket closes fail with
//! [`CallError::is_closed`](crate::CallError::is_closed).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use sansrpc::connection::Connection as Machine;
use sansrpc::{Instant, Limits};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Sleep;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

use crate::{Builder, Connection, Origins, Received, ServeOptions, Transport};
use std::sync::Arc;
use tokio_tungstenite::tungstenite::handshake::server::{
    ErrorResponse, Request as HsRequest, Response as HsResponse,
};

pub use tokio_tungstenite::tungstenite;

/// Keep-alive: a ping every `interval`, and the connection fails when the pong has not come
/// `timeout` after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepAlive {
    /// Time from a pong (or the start) to the next ping.
    pub interval: Duration,
    /// How long a ping may wait for its pong.
    pub timeout: Duration,
}

impl Default for KeepAlive {
    /// A ping every 30 seconds, 10 seconds for its pong.
    fn default() -> Self {
        KeepAlive {
            interval: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
        }
    }
}

/// The keep-alive's one timer: the next ping, or the pong's deadline while `awaiting`.
#[derive(Debug)]
struct Pinger {
    config: KeepAlive,
    timer: Pin<Box<Sleep>>,
    awaiting: bool,
    due: bool,
}

impl Pinger {
    fn reset(&mut self, after: Duration) {
        let at = tokio::time::Instant::now() + after;
        self.timer.as_mut().reset(at);
    }
}

/// A WebSocket stream as a message [`Transport`].
#[derive(Debug)]
pub struct WebSocket<S> {
    ws: WebSocketStream<S>,
    /// A text message the endpoint refused while backed up, offered again next time.
    held: Option<Utf8Bytes>,
    unflushed: bool,
    /// The close frame to send when the driver closes the transport.
    close: Option<CloseFrame>,
    pinger: Option<Pinger>,
}

impl<S> WebSocket<S>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    /// A transport over an open WebSocket (after the handshake), with an optional
    /// keep-alive. Configure the stream's sizes with [`config`].
    pub fn new(ws: WebSocketStream<S>, keepalive: Option<KeepAlive>) -> Self {
        let pinger = keepalive.map(|config| Pinger {
            config,
            timer: Box::pin(tokio::time::sleep(config.interval)),
            awaiting: false,
            due: false,
        });
        WebSocket {
            ws,
            held: None,
            unflushed: false,
            close: None,
            pinger,
        }
    }

    /// Input ends: the endpoint closes, and `close` (if any) is sent when the driver closes.
    fn end(
        &mut self,
        conn: &mut Machine,
        now: Instant,
        close: Option<(CloseCode, &'static str)>,
    ) -> io::Result<Received> {
        self.close = close.map(|(code, reason)| CloseFrame {
            code,
            reason: reason.into(),
        });
        conn.handle_end_of_input(now);
        Ok(Received::End)
    }

    /// The next text message, or how receiving ends (`Err`: the peer closed or broke the
    /// protocol, the connection told; or an I/O error). Pongs answer the keep-alive; pings
    /// are answered by tungstenite.
    fn poll_text(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Machine,
        now: Instant,
    ) -> Poll<Result<Utf8Bytes, io::Result<Received>>> {
        loop {
            let close = match ready!(self.ws.poll_next_unpin(cx)) {
                Some(Ok(Message::Text(text))) => return Poll::Ready(Ok(text)),
                Some(Ok(Message::Binary(_))) => {
                    (CloseCode::Unsupported, "binary frames are not supported")
                }
                Some(Ok(Message::Pong(_))) => {
                    if let Some(p) = self.pinger.as_mut().filter(|p| p.awaiting) {
                        p.awaiting = false;
                        let interval = p.config.interval;
                        p.reset(interval);
                    }
                    continue;
                }
                // tungstenite queues the pong, written with the next read or write.
                Some(Ok(Message::Ping(_) | Message::Frame(_))) => continue,
                Some(Ok(Message::Close(_))) | None => {
                    return Poll::Ready(Err(self.end(conn, now, None)))
                }
                Some(Err(WsError::Capacity(_))) => (CloseCode::Size, "message too big"),
                // RFC 6455 §7.1.7: fail the connection with the close frame that says why.
                Some(Err(WsError::Protocol(_))) => (CloseCode::Protocol, "protocol error"),
                Some(Err(WsError::Utf8(_))) => (CloseCode::Invalid, "invalid UTF-8"),
                Some(Err(e)) => return Poll::Ready(Err(Err(io_error(e)))),
            };
            return Poll::Ready(Err(self.end(conn, now, Some(close))));
        }
    }
}

pub(crate) fn io_error(e: WsError) -> io::Error {
    match e {
        WsError::Io(e) => e,
        other => io::Error::other(other),
    }
}

impl<S> Transport for WebSocket<S>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    fn is_message_based(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Machine,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        // Every message already received is handed in before the answers are written, so
        // a pipelining peer's answers leave in one flush (the socket has Nagle off).
        let mut taken = 0;
        loop {
            let text = match self.held.take() {
                Some(text) => text,
                None => match self.poll_text(cx, conn, now) {
                    Poll::Ready(Ok(text)) => text,
                    Poll::Ready(Err(done)) => return Poll::Ready(done),
                    Poll::Pending if taken > 0 => return Poll::Ready(Ok(Received::Drained)),
                    Poll::Pending => return Poll::Pending,
                },
            };
            match conn.handle_message(text.as_bytes(), now) {
                Ok(()) => {
                    taken += 1;
                    if taken == MESSAGES_PER_TURN {
                        return Poll::Ready(Ok(Received::Data));
                    }
                }
                Err(_backpressure) => {
                    self.held = Some(text);
                    let received = if taken > 0 {
                        Received::Data
                    } else {
                        Received::Stalled
                    };
                    return Poll::Ready(Ok(received));
                }
            }
        }
    }

    fn poll_transmit(&mut self, cx: &mut Context<'_>, conn: &mut Machine) -> Poll<io::Result<()>> {
        if let Some(p) = &mut self.pinger {
            if p.timer.as_mut().poll(cx).is_ready() {
                if p.awaiting {
                    let e = format!("no pong within {:?}", p.config.timeout);
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, e)));
                }
                p.due = true;
                p.awaiting = true;
                let timeout = p.config.timeout;
                p.reset(timeout);
                // Polled again next turn, which registers the new deadline.
            }
        }
        loop {
            let ping = self.pinger.as_ref().is_some_and(|p| p.due);
            if !ping && conn.buffered_output() == 0 {
                break;
            }
            ready!(self.ws.poll_ready_unpin(cx)).map_err(io_error)?;
            let message = if ping {
                if let Some(p) = &mut self.pinger {
                    p.due = false;
                }
                Message::Ping(Default::default())
            } else {
                let mut frame = Vec::new();
                if conn.poll_transmit(&mut frame).is_none() {
                    break;
                }
                let text = Utf8Bytes::try_from(frame)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                Message::Text(text)
            };
            self.ws.start_send_unpin(message).map_err(io_error)?;
            self.unflushed = true;
        }
        if self.unflushed {
            ready!(self.ws.poll_flush_unpin(cx)).map_err(io_error)?;
            self.unflushed = false;
        }
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.close.is_some() {
            if ready!(self.ws.poll_ready_unpin(cx)).is_ok() {
                let frame = self.close.take();
                let _ = self.ws.start_send_unpin(Message::Close(frame));
            }
            self.close = None;
        }
        self.ws.poll_close_unpin(cx).map_err(io_error)
    }
}

/// Most messages handed in per [`Transport::poll_receive`] before the answers are written.
const MESSAGES_PER_TURN: usize = 64;

/// tungstenite's config with its message and frame size bounds set to `limits`'
/// [`max_frame_bytes`](Limits::max_frame_bytes), and its write buffer bounded.
///
/// The write buffer holds at most one message of that size plus 64 KiB: automatic pongs
/// and close answers beyond it wait (the newest pong replacing the last) instead of
/// growing the buffer for a peer that pings and never reads.
///
/// Reads take at most 8 KiB at a time into a buffer that starts at that size (tungstenite's
/// default is 128 KiB, allocated and zero-filled per connection): a larger message still
/// arrives whole, its buffer grown for it; a thousand quiet connections cost 8 MiB of read
/// buffers instead of 128 MiB.
pub fn config(limits: &Limits) -> WebSocketConfig {
    let write_buffer = 128 * 1024;
    let max_write_buffer = limits
        .max_frame_bytes
        .saturating_add(64 * 1024)
        .max(write_buffer + 1);
    WebSocketConfig::default()
        .read_buffer_size(8 * 1024)
        .max_message_size(Some(limits.max_frame_bytes))
        .max_frame_size(Some(limits.max_frame_bytes))
        .write_buffer_size(write_buffer)
        .max_write_buffer_size(max_write_buffer)
}

/// Opens a WebSocket to `url` (`ws://`, or `wss://` with the `tls` feature, trusting the
/// Mozilla roots) and spawns its driver, with the default [`KeepAlive`].
pub async fn connect(
    url: impl IntoClientRequest + Unpin,
    builder: Builder,
) -> Result<Connection, WsError> {
    connect_with(url, builder, Some(KeepAlive::default())).await
}

/// [`connect`] with its own keep-alive (or none).
pub async fn connect_with(
    url: impl IntoClientRequest + Unpin,
    builder: Builder,
    keepalive: Option<KeepAlive>,
) -> Result<Connection, WsError> {
    let config = config(&builder.endpoint_config().limits);
    let (ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true).await?;
    Ok(crate::spawn(builder, WebSocket::new(ws, keepalive)))
}

/// [`connect`] to a `wss://` URL trusting what `tls` trusts (a private CA, a self-signed
/// certificate: see [`tls::client_config_with_roots`](crate::tls::client_config_with_roots)).
#[cfg(feature = "tls")]
pub async fn connect_tls(
    url: impl IntoClientRequest + Unpin,
    builder: Builder,
    tls: std::sync::Arc<crate::tls::rustls::ClientConfig>,
) -> Result<Connection, WsError> {
    let config = config(&builder.endpoint_config().limits);
    let connector = tokio_tungstenite::Connector::Rustls(tls);
    let (ws, _) =
        tokio_tungstenite::connect_async_tls_with_config(url, Some(config), true, Some(connector))
            .await?;
    Ok(crate::spawn(
        builder,
        WebSocket::new(ws, Some(KeepAlive::default())),
    ))
}

/// Serves WebSocket connections on `listener` like [`serve_tcp`](crate::serve_tcp) (each
/// handshake on the connection's own task), with the default [`KeepAlive`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    builder: Builder,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    serve_with(
        listener,
        builder,
        Some(KeepAlive::default()),
        shutdown,
        grace,
    )
    .await
}

/// [`serve`] with its own keep-alive (or none).
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    builder: Builder,
    keepalive: Option<KeepAlive>,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    let options = ServeOptions {
        keepalive,
        ..ServeOptions::default()
    };
    serve_with_options(listener, builder, options, shutdown, grace).await
}

/// [`serve`] with its [`ServeOptions`]: the connection limit (an upgrade beyond it is
/// answered `503`), the `Origin` allow-list (a handshake from another origin is answered
/// `403`, one without `Origin` as [`ServeOptions::allow_missing_origin`] says) and the
/// keep-alive.
///
/// The endpoint's [`frame_timeout`](sansrpc::endpoint::Config::frame_timeout), when set,
/// also bounds the handshake. A WebSocket frame half received is tungstenite's, not the
/// endpoint's: it counts as silence, which the
/// [`idle_timeout`](sansrpc::endpoint::Config::idle_timeout) ends.
pub async fn serve_with_options(
    listener: tokio::net::TcpListener,
    builder: Builder,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    let builder = options.builder(builder);
    let config = config(&builder.endpoint_config().limits);
    let handshake_timeout = builder.endpoint_config().frame_timeout;
    let accept = || async { listener.accept().await.map(crate::no_delay) };
    let origins = Arc::new(options.allowed_origins.clone());
    let (missing, keepalive) = (options.allow_missing_origin, options.keepalive);
    #[cfg(feature = "tls")]
    let tls = options.tls.clone();
    let setup = move |stream: tokio::net::TcpStream| {
        let origins = origins.clone();
        #[cfg(feature = "tls")]
        let tls = tls.clone();
        async move {
            // The error type is tungstenite's.
            #[allow(clippy::result_large_err)]
            let check = move |request: &HsRequest, response: HsResponse| {
                if origin_allowed(&origins, missing, request) {
                    Ok(response)
                } else {
                    let mut refusal = ErrorResponse::new(Some("origin not allowed".into()));
                    *refusal.status_mut() = tungstenite::http::StatusCode::FORBIDDEN;
                    Err(refusal)
                }
            };
            // The TLS handshake (when configured) and the WebSocket one, in one time limit.
            let handshake = async move {
                #[cfg(feature = "tls")]
                let stream = crate::tls::accept(tls.as_ref(), stream).await?;
                tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config))
                    .await
                    .map_err(io_error)
            };
            let ws = match handshake_timeout {
                Some(limit) => tokio::time::timeout(limit, handshake)
                    .await
                    .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "handshake timed out"))?,
                None => handshake.await,
            };
            Ok(WebSocket::new(ws?, keepalive))
        }
    };
    crate::serve(
        accept,
        setup,
        crate::HTTP_BUSY.into(),
        builder,
        &options,
        shutdown,
        grace,
    )
    .await
}

/// True when the handshake's `Origin` is accepted.
fn origin_allowed(origins: &Origins, allow_missing: bool, request: &HsRequest) -> bool {
    match request.headers().get("origin") {
        None => allow_missing,
        Some(origin) => origin.to_str().is_ok_and(|o| origins.allows(o)),
    }
}
