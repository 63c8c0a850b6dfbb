//! A connection that reads no socket of its own: its messages come from a channel, each
//! with its tag ([`Connection::handle_message_tagged`]; tag 0 is none), and its frames go
//! to an [`Outbox`] at every turn. The MCP server runs a session (or a stateless request)
//! on one, fed by the HTTP requests that carry its messages.

use std::io;
use std::task::{Context, Poll};

use sansrpc::connection::Connection;
use sansrpc::Instant;
use sansrpc_futures::{Received, Transport};
use tokio::sync::mpsc;

/// A message and its tag.
pub(crate) type Tagged = (Vec<u8>, u64);

/// Where the frames of a [`Channel`] go; it takes them at once, never waiting.
pub(crate) trait Outbox: Send + Unpin + 'static {
    /// Takes every frame `conn` has to send.
    fn take(&mut self, conn: &mut Connection);
}

/// The transport: messages from `input` (one held back while the connection cannot take
/// it), frames to `out`; the end of the channel is the end of the input.
pub(crate) struct Channel<O> {
    input: mpsc::Receiver<Tagged>,
    held: Option<Tagged>,
    out: O,
}

impl<O: Outbox> Channel<O> {
    /// A channel transport reading `input` and sending to `out`.
    pub(crate) fn new(input: mpsc::Receiver<Tagged>, out: O) -> Self {
        Channel {
            input,
            held: None,
            out,
        }
    }
}

impl<O: Outbox> Transport for Channel<O> {
    fn is_message_based(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        let (message, tag) = match self.held.take() {
            Some(held) => held,
            None => match self.input.poll_recv(cx) {
                Poll::Ready(Some(message)) => message,
                Poll::Ready(None) => {
                    conn.handle_end_of_input(now);
                    return Poll::Ready(Ok(Received::End));
                }
                Poll::Pending => return Poll::Pending,
            },
        };
        if conn.handle_message_tagged(&message, tag, now).is_err() {
            self.held = Some((message, tag));
            return Poll::Ready(Ok(Received::Stalled));
        }
        Poll::Ready(Ok(Received::Data))
    }

    fn poll_transmit(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        self.out.take(conn);
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
