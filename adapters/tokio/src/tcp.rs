//! A TCP connection, plain or under TLS: what the servers accept ([`tls::ServerStream`]) and
//! the HTTP client dials ([`host::HttpStream`]), each read and write passed to whichever it is.
//!
//! [`tls::ServerStream`]: crate::tls::ServerStream
//! [`host::HttpStream`]: crate::host::HttpStream

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A TCP connection, plain or under TLS (`T`, rustls's stream of the side that made it).
#[derive(Debug)]
pub enum PlainOrTls<T> {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP, after the handshake.
    Tls(Box<T>),
}

impl<T: AsyncRead + Unpin> AsyncRead for PlainOrTls<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PlainOrTls::Plain(s) => Pin::new(s).poll_read(cx, buf),
            PlainOrTls::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for PlainOrTls<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            PlainOrTls::Plain(s) => Pin::new(s).poll_write(cx, buf),
            PlainOrTls::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    // Passed on, so that a vectored write stays one (hyper writes a request's head and body
    // in one; it copies the body into its own buffer for a stream that takes none).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            PlainOrTls::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            PlainOrTls::Tls(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            PlainOrTls::Plain(s) => s.is_write_vectored(),
            PlainOrTls::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PlainOrTls::Plain(s) => Pin::new(s).poll_flush(cx),
            PlainOrTls::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            PlainOrTls::Plain(s) => Pin::new(s).poll_shutdown(cx),
            PlainOrTls::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
