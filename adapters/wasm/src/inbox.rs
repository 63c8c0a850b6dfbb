//! Messages the browser delivered to a callback, held for the driver: what the WebSocket and
//! the `postMessage` transports share, with their bounds.

use std::collections::VecDeque;
use std::io;
use std::task::{Context, Poll, Waker};

use sansrpc::connection::Connection;
use sansrpc::{Instant, Limits};
use sansrpc_futures::Received;

/// Messages handed to the connection per turn of the driver, so that a flooding peer
/// cannot keep the page's one thread.
const MESSAGES_PER_TURN: usize = 64;

/// How many messages' worth of bytes (of the limit on one message) received messages may
/// hold while the connection takes none: the browser delivers messages whatever the page
/// does, so this is the one bound on what a peer that sends faster than the page handles
/// costs it.
const INBOX_MESSAGES: usize = 4;

/// Why a message was not kept: the transport ends then.
pub(crate) enum Over {
    /// The message is over the limit on one message.
    Message(usize),
    /// The messages held would be over [`INBOX_MESSAGES`] times that limit.
    Backlog,
}

/// Received messages the connection has not taken yet, and how the transport ended.
pub(crate) struct Inbox {
    messages: VecDeque<Vec<u8>>,
    bytes: usize,
    pub(crate) max_message: usize,
    max_bytes: usize,
    /// The transport ended itself (a bound was crossed): why.
    refused: Option<String>,
    /// The peer ended (a closed socket).
    ended: bool,
    waker: Option<Waker>,
}

impl Inbox {
    pub(crate) fn new(limits: &Limits) -> Self {
        Inbox {
            messages: VecDeque::new(),
            bytes: 0,
            max_message: limits.max_frame_bytes,
            max_bytes: limits.max_frame_bytes.saturating_mul(INBOX_MESSAGES),
            refused: None,
            ended: false,
            waker: None,
        }
    }

    /// True once the transport refused a message: nothing more is taken.
    pub(crate) fn is_refused(&self) -> bool {
        self.refused.is_some()
    }

    /// Whether a message of `len` bytes may be kept.
    pub(crate) fn check(&self, len: usize) -> Result<(), Over> {
        if len > self.max_message {
            Err(Over::Message(len))
        } else if self.bytes + len > self.max_bytes {
            Err(Over::Backlog)
        } else {
            Ok(())
        }
    }

    /// Keeps a message [`check`](Inbox::check) allowed.
    pub(crate) fn push(&mut self, message: Vec<u8>) {
        self.bytes += message.len();
        self.messages.push_back(message);
        self.wake();
    }

    /// The transport ends itself, for `why`: the driver gets the error once the messages
    /// before it are taken.
    pub(crate) fn refuse(&mut self, why: String) {
        self.refused = Some(why);
        self.wake();
    }

    /// The peer ended: the driver gets the end of input once the messages before it are
    /// taken.
    pub(crate) fn end(&mut self) {
        self.ended = true;
        self.wake();
    }

    /// Wakes the driver, if it waits.
    pub(crate) fn wake(&mut self) {
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }

    /// Waits (with `cx`'s waker) for the next change.
    pub(crate) fn wait(&mut self, cx: &mut Context<'_>) {
        self.waker = Some(cx.waker().clone());
    }

    /// Hands the connection what it takes of the messages held, up to
    /// [`MESSAGES_PER_TURN`]; then the end, or the refusal, once nothing is held before it.
    pub(crate) fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        let mut taken = 0;
        while let Some(message) = self.messages.front() {
            if taken == MESSAGES_PER_TURN {
                return Poll::Ready(Ok(Received::Data));
            }
            if conn.handle_message(message, now).is_err() {
                // Backed up: offered again once the driver has drained the connection.
                return Poll::Ready(Ok(if taken > 0 {
                    Received::Data
                } else {
                    Received::Stalled
                }));
            }
            self.bytes -= message.len();
            self.messages.pop_front();
            taken += 1;
        }
        if let Some(refused) = self.refused.take() {
            conn.handle_end_of_input(now);
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, refused)));
        }
        if self.ended {
            conn.handle_end_of_input(now);
            return Poll::Ready(Ok(Received::End));
        }
        // Woken by the next message or the end.
        self.wait(cx);
        if taken > 0 {
            Poll::Ready(Ok(Received::Drained))
        } else {
            Poll::Pending
        }
    }
}
