//! JSON-RPC over WebSocket: one message per text frame, on the shared driver.
//!
//! The server side of the opening handshake is the core's
//! ([`sansrpc::codec::websocket::handshake`]: `101`, or `400`, `403`, `426` and `431`
//! answered before the connection closes); a client's is tokio-tungstenite's. After it the
//! transport reads and writes the raw stream and frames it with the core's sans-I/O
//! [`sansrpc::codec::websocket`] codec: a message is unmasked in place in the
//! read buffer and handed to the connection without a copy, and an answer is framed where
//! the connection wrote it in the write buffer.
//!
//! A binary frame closes the connection with code 1003 (unsupported data), a message over
//! the endpoint's [`Limits::max_frame_bytes`] with 1009 (too big; refused from its frame
//! header, before its payload is buffered), a protocol violation (unmasked client frame,
//! reserved bits or opcodes, an oversize or fragmented control frame) with 1002, invalid
//! UTF-8 in a text message or close reason with 1007. A close frame from the peer is
//! answered with its own code. A close this side starts lingers (RFC 6455 §7.1.1): what
//! the peer still sends is read and dropped until its close frame (a server, which then
//! closes the TCP connection) or the end of its stream (a client, waiting for the server to
//! close first), for the driver's linger period at most. Pings are answered (a peer that
//! pings and never reads holds one pending pong, the newest); with a [`KeepAlive`], a ping
//! goes out every interval and the connection fails if its pong does not come within the
//! timeout. Calls pending when the socket closes fail with
//! [`CallError::is_closed`](crate::CallError::is_closed).

use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use sansrpc::codec::http::{Hosts, HttpStep, RequestDecoder};
use sansrpc::codec::websocket::{
    self, encode_close, encode_frame, frame_in_place, handshake, Opcode, Role, Step, WsDecoder,
    WsEvent,
};
use sansrpc::Connection;
use sansrpc::{Instant, Limits};
use smallvec::SmallVec;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::UrlError;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::MaybeTlsStream;

use crate::wire::{Input, Output, CHUNK, SMALL};
use crate::{Builder, Origins, Received, ServeOptions, Spawned, Transport};
use std::sync::Arc;

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
    /// The timer was polled pending, with the driver's waker, and that waker has not fired
    /// since ([`Transport::woken`]): it is not polled again until then or until it is
    /// reset (a subscriber's connection, woken for each notification, does not look at it
    /// each time).
    polled: bool,
}

impl Pinger {
    fn reset(&mut self, after: Duration) {
        let at = tokio::time::Instant::now() + after;
        self.timer.as_mut().reset(at);
        self.polled = false;
    }
}

/// Longest HTTP head accepted in the opening handshake.
const MAX_HEAD: usize = 16 * 1024;

/// The field of a refusal's answer.
const CLOSE: &[(&str, &[u8])] = &[("connection", b"close")];

/// A WebSocket connection (after the opening handshake) as a message [`Transport`].
#[derive(Debug)]
// Laid out in this order (not the compiler's): what each write reads (the socket, the
// write buffer, the keep-alive's and the control frames' state, the flags) first, in as
// few cache lines as it fits (a subscriber's connection is woken to write each
// notification; with many connections each line is a miss), the reading side after.
#[repr(C)]
pub struct WebSocket<S> {
    stream: S,
    output: Output,
    pinger: Option<Pinger>,
    /// The payload of the newest ping not answered yet.
    pong: Option<Vec<u8>>,
    /// For a client, whose frames are masked: the source of masking keys.
    masks: Option<Masks>,
    close_sent: bool,
    /// The connection may have an extension's hook, whose notifications join its output
    /// as the output is looked at: after writing all of it, it is looked at again (true
    /// until the driver says otherwise).
    extended: bool,
    /// How the peer's side stands, for the lingering close.
    peer: Peer,
    decoder: WsDecoder,
    input: Input,
    /// A text message the connection refused while backed up, offered again next time.
    held: Option<Vec<u8>>,
    /// The close frame to send when the driver closes the transport: a code (or none) and
    /// a reason.
    close: (Option<u16>, &'static str),
    /// The largest message the decoder takes (for the decoder of the lingering close).
    max_message: usize,
    /// A server's plain TCP socket as a fan-out writes to it past the parked driver (see
    /// [`Transport::bypass`]): made the first time the driver asks.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    bypass: Option<Arc<WsBypass>>,
}

/// A WebSocket server's socket written past the driver: a notification as one unmasked
/// text frame.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[derive(Debug)]
struct WsBypass(crate::wire::Bypassing);

#[cfg(any(target_os = "linux", target_os = "android"))]
impl sansrpc_futures::Bypass for WsBypass {
    fn try_write(
        &self,
        head: &[u8],
        item: &sansrpc::RawValue,
        shared: Option<&Arc<sansrpc::RawValue>>,
        tail: &[u8],
    ) -> sansrpc_futures::Bypassed {
        let item = item.get().as_bytes();
        let frame = Head::text(head.len() + item.len() + tail.len());
        self.0.write(&[frame.bytes(), head, item, tail], shared)
    }
}

impl<S> Drop for WebSocket<S> {
    fn drop(&mut self) {
        // Before the socket goes: a fan-out's send never writes to a closed descriptor.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(bypass) = &self.bypass {
            bypass.0.forget();
        }
    }
}

/// What the transport saw of the peer's side of the close.
#[derive(Debug, Default)]
struct Peer {
    /// Its close frame came.
    closed: bool,
    /// Its end of the stream was read (or reading it failed): nothing more can come.
    ended: bool,
    /// The decoder refused its input (the lingering close reads on from there).
    faulted: bool,
    /// The lingering close's decoder is in place.
    lingering: bool,
}

/// Masking keys for a client's frames (RFC 6455 §5.3: unpredictable to the page a browser
/// runs; here, SipHash with a random key over a counter).
#[derive(Debug)]
struct Masks {
    hasher: RandomState,
    next: u64,
}

impl Masks {
    fn key(&mut self) -> [u8; 4] {
        self.next += 1;
        let [a, b, c, d, ..] = self.hasher.hash_one(self.next).to_le_bytes();
        [a, b, c, d]
    }
}

impl<S> WebSocket<S>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    /// A transport over `stream`, whose opening handshake is done, as the `role` side,
    /// messages bounded by `limits`' [`max_frame_bytes`](Limits::max_frame_bytes), with an
    /// optional keep-alive. `read` holds bytes already read past the handshake (frames the
    /// peer sent right after it), decoded first.
    pub fn new(
        stream: S,
        role: Role,
        read: Vec<u8>,
        limits: &Limits,
        keepalive: Option<KeepAlive>,
    ) -> Self {
        let pinger = keepalive.map(|config| Pinger {
            config,
            timer: Box::pin(tokio::time::sleep(config.interval)),
            awaiting: false,
            due: false,
            polled: false,
        });
        let masks = (role == Role::Client).then(|| Masks {
            hasher: RandomState::new(),
            next: 0,
        });
        WebSocket {
            stream,
            decoder: WsDecoder::new(role, limits.max_frame_bytes),
            masks,
            input: Input::new(read),
            held: None,
            output: Output::default(),
            pong: None,
            close: (None, ""),
            close_sent: false,
            peer: Peer::default(),
            max_message: limits.max_frame_bytes,
            pinger,
            extended: true,
            #[cfg(any(target_os = "linux", target_os = "android"))]
            bypass: None,
        }
    }

    /// Input ends: the connection is told, and the close frame to send is set.
    fn end(
        &mut self,
        conn: &mut Connection,
        now: Instant,
        close: (Option<u16>, &'static str),
    ) -> Received {
        self.close = close;
        conn.handle_end_of_input(now);
        Received::End
    }

    /// The masking key for the next frame (clients only).
    fn mask(&mut self) -> Option<[u8; 4]> {
        self.masks.as_mut().map(Masks::key)
    }
}

impl<S> Transport for WebSocket<S>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    fn is_message_based(&self) -> bool {
        true
    }

    fn wakes_on_input(&self) -> bool {
        true
    }

    fn woken(&mut self) {
        if let Some(p) = &mut self.pinger {
            p.polled = false;
        }
    }

    fn without_extension(&mut self) {
        self.extended = false;
    }

    fn takes_hook_output(&self) -> bool {
        true
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn bypass(&mut self) -> Option<Arc<dyn sansrpc_futures::Bypass>> {
        // A server's frames only (a client's are masked), with nothing of its own waiting.
        if self.masks.is_some() || self.close_sent || self.output.pending() {
            return None;
        }
        if self.bypass.is_none() {
            let fd = crate::wire::plain_tcp_fd(&mut self.stream)?;
            self.bypass = Some(Arc::new(WsBypass(crate::wire::Bypassing::new(fd))));
        }
        let bypass: Arc<dyn sansrpc_futures::Bypass> = self.bypass.clone()?;
        Some(bypass)
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn bypass_closed(&mut self) {
        if let Some(bypass) = &self.bypass {
            let rest = bypass.0.take_rest();
            if !rest.is_empty() {
                // Written before anything else: nothing of the buffer waits while a bypass
                // is open.
                self.output.buf.extend_from_slice(&rest);
            }
        }
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        // Every message already received is handed in before the answers are written, so
        // a pipelining peer's answers leave in one flush (the socket has Nagle off).
        let mut taken = 0;
        // Control frames and fragments count too: a ping flood yields like a message flood.
        let mut frames = 0;
        let backed_up = |taken| {
            Poll::Ready(Ok(if taken > 0 {
                Received::Data
            } else {
                Received::Stalled
            }))
        };
        loop {
            if let Some(text) = self.held.take() {
                if conn.handle_message(&text, now).is_err() {
                    self.held = Some(text);
                    return backed_up(taken);
                }
                taken += 1;
            }
            if taken >= MESSAGES_PER_TURN || frames >= 4 * MESSAGES_PER_TURN {
                return Poll::Ready(Ok(Received::Data));
            }
            let step = self.decoder.decode(self.input.data());
            let used = match step {
                Err(fault) => {
                    self.peer.faulted = true;
                    let close = (Some(fault.code), fault.reason);
                    return Poll::Ready(Ok(self.end(conn, now, close)));
                }
                Ok(Step::Fragment(used)) => used,
                Ok(Step::Event(used, WsEvent::Text(text))) => {
                    if conn.handle_message(text, now).is_err() {
                        self.held = Some(text.to_vec());
                        self.input.consume(used);
                        return backed_up(taken);
                    }
                    taken += 1;
                    used
                }
                Ok(Step::Event(used, WsEvent::Ping(payload))) => {
                    // Answered with the next write; a newer ping replaces it.
                    let pong = self.pong.get_or_insert_with(Vec::new);
                    pong.clear();
                    pong.extend_from_slice(payload);
                    used
                }
                Ok(Step::Event(used, WsEvent::Pong(_))) => {
                    if let Some(p) = self.pinger.as_mut().filter(|p| p.awaiting) {
                        p.awaiting = false;
                        let interval = p.config.interval;
                        p.reset(interval);
                    }
                    used
                }
                Ok(Step::Event(used, WsEvent::Close { code, .. })) => {
                    self.input.consume(used);
                    self.peer.closed = true;
                    // Answered with the peer's own code (RFC 6455 §5.5.1).
                    return Poll::Ready(Ok(self.end(conn, now, (code, ""))));
                }
                Ok(Step::Incomplete(need)) => {
                    match self.input.poll_fill(&mut self.stream, cx, need) {
                        Poll::Ready(Ok(0)) => {
                            self.peer.ended = true;
                            return Poll::Ready(Ok(self.end(conn, now, (None, ""))));
                        }
                        Poll::Ready(Ok(_)) => continue,
                        Poll::Ready(Err(e)) => {
                            self.peer.ended = true;
                            return Poll::Ready(Err(e));
                        }
                        Poll::Pending if taken > 0 => return Poll::Ready(Ok(Received::Drained)),
                        Poll::Pending => return Poll::Pending,
                    }
                }
            };
            self.input.consume(used);
            frames += 1;
        }
    }

    fn poll_transmit(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        if self.close_sent {
            // Closing: no ping nor pong after our close frame (the close writes it out).
            return Poll::Ready(Ok(()));
        }
        if let Some(p) = self.pinger.as_mut().filter(|p| !p.polled) {
            p.polled = true;
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
            if !self.output.pending() {
                self.output.reset();
                self.take_control();
                // A server's frames are not masked: their payloads go out from where the
                // connection wrote them, with no copy into the write buffer.
                if self.output.buf.is_empty()
                    && self.masks.is_none()
                    && self.stream.is_write_vectored()
                {
                    let wrote = ready!(self.poll_write_direct(cx, conn))?;
                    // Written whole, and nothing left to look at (a subscriber's
                    // notification): flushed now, not after a second look that would find
                    // the connection's output empty.
                    let more = self.output.pending() || self.extended || conn.buffered_output() > 0;
                    if wrote && more {
                        continue;
                    }
                    return self.output.poll_flushed(&mut self.stream, cx);
                }
                self.take_output(conn);
                if self.output.buf.is_empty() {
                    return self.output.poll_flushed(&mut self.stream, cx);
                }
            }
            ready!(self.output.poll_write_out(&mut self.stream, cx))?;
        }
    }

    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.close_sent {
            self.close_sent = true;
            let (code, reason) = self.close;
            let mask = self.mask();
            encode_close(code, reason, mask, &mut self.output.buf);
        }
        ready!(self.output.poll_write_out(&mut self.stream, cx))?;
        ready!(self.output.poll_flushed(&mut self.stream, cx))?;
        // The closing handshake (RFC 6455 §5.5.1, §7.1.1): what the peer still sends is read
        // and dropped until its close frame comes, for a server, which then closes the TCP
        // connection; until the server closes it, for a client. Closing with input unread
        // would reset the connection, and what was not sent yet (our close frame, behind
        // output the peer had not read) would be lost: the peer would see 1006. The driver
        // bounds the wait (its linger period, a second).
        let client = self.masks.is_some();
        if !self.peer.ended && (client || !self.peer.closed) {
            ready!(self.poll_linger(cx));
        }
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl<S> WebSocket<S>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    /// Reads and drops what the peer sends after our close frame, until its close frame
    /// (a server; a client reads on, to the end) or the end of its stream.
    fn poll_linger(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let client = self.masks.is_some();
        if !self.peer.lingering {
            self.peer.lingering = true;
            if self.peer.faulted {
                // A decoder of its own from the refused frame on, binary frames taken too:
                // after a binary frame refused (1003, web3.py's) the frames behind it are
                // read, to the peer's close. After any other fault it refuses the same
                // frame again, and the input is read as bytes to the peer's end.
                self.peer.faulted = false;
                let role = if client { Role::Client } else { Role::Server };
                self.decoder = WsDecoder::new(role, self.max_message).accept_binary(true);
            }
        }
        // Bounded per turn: a peer that floods lets the driver's deadline come.
        for _ in 0..64 {
            let need = if self.peer.faulted || self.peer.closed {
                // Only its end is awaited now: the bytes are dropped unread.
                let all = self.input.len();
                self.input.consume(all);
                1
            } else {
                match self.decoder.decode(self.input.data()) {
                    Err(_) => {
                        self.peer.faulted = true;
                        continue;
                    }
                    Ok(Step::Event(used, WsEvent::Close { .. })) => {
                        self.input.consume(used);
                        self.peer.closed = true;
                        if !client {
                            return Poll::Ready(());
                        }
                        continue;
                    }
                    Ok(Step::Event(used, _) | Step::Fragment(used)) => {
                        self.input.consume(used);
                        continue;
                    }
                    Ok(Step::Incomplete(need)) => need,
                }
            };
            match self.input.poll_fill(&mut self.stream, cx, need) {
                Poll::Ready(Ok(0) | Err(_)) => {
                    self.peer.ended = true;
                    return Poll::Ready(());
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Pending => return Poll::Pending,
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Puts the keep-alive's ping and the pong owed in the empty write buffer.
    fn take_control(&mut self) {
        if let Some(p) = self.pinger.as_mut().filter(|p| p.due) {
            p.due = false;
            let mask = self.mask();
            encode_frame(Opcode::Ping, &[], mask, &mut self.output.buf);
        }
        if let Some(payload) = self.pong.take() {
            let mask = self.mask();
            encode_frame(Opcode::Pong, &payload, mask, &mut self.output.buf);
        }
    }

    /// Writes the connection's queued messages as unmasked text frames in one vectored
    /// write, each header from here and each payload from where the connection keeps it
    /// (its buffer, and a fan-out's shared item where it was serialized), up to
    /// [`DIRECT_FRAMES`] frames or [`CHUNK`] bytes. What the socket took of a frame only in
    /// part goes, with the rest of that frame, to the write buffer (written before
    /// anything else); the connection is told of every message written or moved so.
    /// `Ready(Ok(false))`: nothing was queued.
    fn poll_write_direct(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<bool>> {
        // Filled as far as used, not zeroed whole each turn.
        let mut heads = SmallVec::<[Head; DIRECT_FRAMES]>::new();
        let written = {
            // One look at the connection's frames: headers here, payloads where they are.
            let mut frames = conn.peek_message_parts_with_items();
            let Some((first, shared)) = frames.next() else {
                return Poll::Ready(Ok(false));
            };
            let mut frames = frames.map(|(message, _)| message);
            let head = Head::text(first.iter().map(|p| p.len()).sum());
            match frames.next() {
                // One frame (a subscriber's notification, most answers): slices from the
                // stack, none of the lists below.
                None => {
                    let [a, b, c] = first;
                    let slices = [
                        IoSlice::new(head.bytes()),
                        IoSlice::new(a),
                        IoSlice::new(b),
                        IoSlice::new(c),
                    ];
                    // Empty runs at the end are left out.
                    let used = if !c.is_empty() {
                        4
                    } else if !b.is_empty() {
                        3
                    } else {
                        2
                    };
                    // The item shared with other subscribers, if any: a thread that wrote
                    // the same frame of it to another connection writes that again.
                    let (stream, slices) = (&mut self.stream, &slices[..used]);
                    let written = crate::wire::poll_write_vectored(stream, cx, slices, shared);
                    let written = ready!(written)?;
                    heads.push(head);
                    written
                }
                Some(second) => {
                    let mut bytes = head.frame_len();
                    heads.push(head);
                    let mut messages = SmallVec::<[[&[u8]; 3]; DIRECT_FRAMES]>::new();
                    messages.push(first);
                    for message in std::iter::once(second).chain(frames) {
                        if messages.len() == DIRECT_FRAMES || bytes >= CHUNK {
                            break;
                        }
                        let head = Head::text(message.iter().map(|p| p.len()).sum());
                        bytes += head.frame_len();
                        heads.push(head);
                        messages.push(message);
                    }
                    let mut slices = SmallVec::<[IoSlice<'_>; 4 * DIRECT_FRAMES]>::new();
                    for (head, message) in heads.iter().zip(&messages) {
                        slices.push(IoSlice::new(head.bytes()));
                        let parts = message.iter().filter(|p| !p.is_empty());
                        slices.extend(parts.map(|p| IoSlice::new(p)));
                    }
                    ready!(crate::wire::poll_write_vectored(
                        &mut self.stream,
                        cx,
                        &slices,
                        None
                    ))?
                }
            }
        };
        if written == 0 {
            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
        }
        self.output.wrote();
        let mut left = written;
        let mut whole = 0;
        for head in &heads {
            if left >= head.frame_len() {
                left -= head.frame_len();
                whole += head.payload;
                continue;
            }
            // Taken in part: the rest of this frame is written from the buffer.
            conn.consume_transmit(whole);
            let message = conn.peek_message_parts().next().unwrap_or_default();
            let buf = &mut self.output.buf;
            let n = head.len;
            buf.extend_from_slice(&head.head[left.min(n)..n]);
            let mut skip = left.saturating_sub(n);
            for part in message {
                buf.extend_from_slice(part.get(skip..).unwrap_or_default());
                skip = skip.saturating_sub(part.len());
            }
            conn.consume_transmit(head.payload);
            return Poll::Ready(Ok(true));
        }
        conn.consume_transmit(whole);
        Poll::Ready(Ok(true))
    }

    /// Fills the write buffer (after [`take_control`](Self::take_control)) with the
    /// connection's messages, each framed where the connection wrote it, up to [`CHUNK`].
    fn take_output(&mut self, conn: &mut Connection) {
        let reserve = websocket::header_len(usize::MAX, self.masks.is_some());
        while self.output.buf.len() < CHUNK {
            let start = self.output.buf.len();
            self.output.buf.resize(start + reserve, 0);
            if conn.poll_transmit(&mut self.output.buf).is_none() {
                self.output.buf.truncate(start);
                break;
            }
            let mask = self.mask();
            frame_in_place(&mut self.output.buf, start, reserve, mask);
        }
    }
}

/// Most messages handed in per [`Transport::poll_receive`] before the answers are written.
const MESSAGES_PER_TURN: usize = 64;

/// Most frames of one vectored write straight from the connection's buffer (two slices
/// each, far below any system's limit on them).
const DIRECT_FRAMES: usize = 16;

/// An unmasked text frame's header, written here, for a payload written from the
/// connection's buffer.
struct Head {
    head: [u8; websocket::MAX_HEADER],
    /// Bytes of `head` used.
    len: usize,
    /// The payload's length.
    payload: usize,
}

impl Head {
    fn text(payload: usize) -> Head {
        let mut head = [0u8; websocket::MAX_HEADER];
        let len = websocket::write_header(Opcode::Text, payload, None, &mut head);
        Head { head, len, payload }
    }

    fn bytes(&self) -> &[u8] {
        &self.head[..self.len]
    }

    /// The whole frame's length: header and payload.
    fn frame_len(&self) -> usize {
        self.len + self.payload
    }
}

/// tungstenite's config for the opening handshake, with its message and frame size bounds
/// set to `limits`' [`max_frame_bytes`](Limits::max_frame_bytes) (after the handshake the
/// transport frames the stream itself, with the same bound).
pub fn config(limits: &Limits) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(SMALL)
        .max_message_size(Some(limits.max_frame_bytes))
        .max_frame_size(Some(limits.max_frame_bytes))
}

pub(crate) fn io_error(e: WsError) -> io::Error {
    match e {
        WsError::Io(e) => e,
        other => io::Error::other(other),
    }
}

/// A stream during the opening handshake: it hands tungstenite the bytes up to the end of
/// the HTTP head and no further, so the frames a peer sends right behind its head stay
/// here for the transport ([`HeadOnly::into_parts`]).
#[derive(Debug)]
pub(crate) struct HeadOnly<S> {
    stream: S,
    buf: Vec<u8>,
    /// `buf[..pos]` was handed out.
    pos: usize,
    /// Where the head ends in `buf`, once its blank line was read.
    head_end: Option<usize>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> HeadOnly<S> {
    pub(crate) fn new(stream: S) -> Self {
        HeadOnly {
            stream,
            // One the thread keeps, when it does ([`crate::wire::spare`]): it becomes the
            // connection's read buffer.
            buf: crate::wire::spare::take(),
            pos: 0,
            head_end: None,
        }
    }

    /// The stream, and what was read past the head.
    pub(crate) fn into_parts(mut self) -> (S, Vec<u8>) {
        self.buf.drain(..self.pos);
        (self.stream, self.buf)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for HeadOnly<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            // Past the head (never asked for during a handshake): what is left, then the
            // stream itself.
            let limit = match this.head_end {
                Some(end) if this.pos >= end => this.buf.len(),
                Some(end) => end,
                None => this.buf.len(),
            };
            if this.pos < limit {
                let n = (limit - this.pos).min(out.remaining());
                out.put_slice(&this.buf[this.pos..this.pos + n]);
                this.pos += n;
                return Poll::Ready(Ok(()));
            }
            if this.head_end.is_some() {
                return Pin::new(&mut this.stream).poll_read(cx, out);
            }
            match ready!(poll_head(Pin::new(&mut this.stream), &mut this.buf, cx))? {
                Some(end) => this.head_end = Some(end),
                // The end of the stream: tungstenite sees it as such.
                None if this.pos >= this.buf.len() => return Poll::Ready(Ok(())),
                None => {}
            }
        }
    }
}

/// Reads from `stream` into `buf` until `buf` holds a whole HTTP head (up to its empty
/// line, [`MAX_HEAD`] at most): where the head ends, or `None` when the stream ended first.
/// A read takes at most 4 KiB past what is buffered.
pub(crate) fn poll_head<S: AsyncRead + Unpin>(
    mut stream: Pin<&mut S>,
    buf: &mut Vec<u8>,
    cx: &mut Context<'_>,
) -> Poll<io::Result<Option<usize>>> {
    loop {
        if buf.len() >= MAX_HEAD {
            let e = "handshake head over 16 KiB";
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, e)));
        }
        let old = buf.len();
        // Into the spare capacity, uninitialized. Exactly 4 KiB more when it grows: a read
        // takes at most that past the head bound checked above.
        buf.reserve_exact(4096);
        let n = ready!(tokio_util::io::poll_read_buf(stream.as_mut(), cx, buf))?;
        if n == 0 {
            return Poll::Ready(Ok(None));
        }
        let from = old.saturating_sub(3);
        if let Some(at) = memchr::memmem::find(&buf[from..], b"\r\n\r\n") {
            return Poll::Ready(Ok(Some(from + at + 4)));
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for HeadOnly<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// A client WebSocket stream: plain TCP, or TLS over it.
pub type ClientStream = MaybeTlsStream<tokio::net::TcpStream>;

/// Connects to `url` (TLS for `wss://` with `tls`, else refused), does the client side of
/// the handshake, and returns the transport.
pub(crate) async fn open(
    url: impl IntoClientRequest + Unpin,
    limits: &Limits,
    keepalive: Option<KeepAlive>,
    #[cfg(feature = "tls")] tls: Option<Arc<crate::tls::rustls::ClientConfig>>,
) -> Result<WebSocket<ClientStream>, WsError> {
    let request = url.into_client_request()?;
    let uri = request.uri();
    let host = uri
        .host()
        .ok_or(WsError::Url(UrlError::NoHostName))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let secure = match uri.scheme_str() {
        Some("ws") => false,
        Some("wss") => true,
        _ => return Err(WsError::Url(UrlError::UnsupportedUrlScheme)),
    };
    let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
    crate::tune(&tcp);
    let stream = if secure {
        #[cfg(feature = "tls")]
        {
            use tokio_rustls::rustls::pki_types::ServerName;
            let config = tls.unwrap_or_else(crate::tls::client_config);
            let name =
                ServerName::try_from(host).map_err(|_| WsError::Url(UrlError::NoHostName))?;
            let connector = tokio_rustls::TlsConnector::from(config);
            MaybeTlsStream::Rustls(connector.connect(name, tcp).await?)
        }
        #[cfg(not(feature = "tls"))]
        return Err(WsError::Url(UrlError::TlsFeatureNotEnabled));
    } else {
        MaybeTlsStream::Plain(tcp)
    };
    let config = config(limits);
    let (ws, _) =
        tokio_tungstenite::client_async_with_config(request, HeadOnly::new(stream), Some(config))
            .await?;
    let (stream, read) = ws.into_inner().into_parts();
    Ok(WebSocket::new(
        stream,
        Role::Client,
        read,
        limits,
        keepalive,
    ))
}

/// Opens a WebSocket to `url` (`ws://`, or `wss://` with the `tls` feature, trusting the
/// Mozilla roots) and spawns its driver, with the default [`KeepAlive`].
pub async fn connect(
    url: impl IntoClientRequest + Unpin,
    builder: Builder,
) -> Result<Spawned, WsError> {
    connect_with(url, builder, Some(KeepAlive::default())).await
}

/// [`connect`] with its own keep-alive (or none).
pub async fn connect_with(
    url: impl IntoClientRequest + Unpin,
    builder: Builder,
    keepalive: Option<KeepAlive>,
) -> Result<Spawned, WsError> {
    let limits = builder.connection_config().limits;
    #[cfg(feature = "tls")]
    let ws = open(url, &limits, keepalive, None).await?;
    #[cfg(not(feature = "tls"))]
    let ws = open(url, &limits, keepalive).await?;
    Ok(crate::spawn(builder, ws))
}

/// [`connect`] to a `wss://` URL trusting what `tls` trusts (a private CA, a self-signed
/// certificate: see [`tls::client_config_with_roots`](crate::tls::client_config_with_roots)).
#[cfg(feature = "tls")]
pub async fn connect_tls(
    url: impl IntoClientRequest + Unpin,
    builder: Builder,
    tls: std::sync::Arc<crate::tls::rustls::ClientConfig>,
) -> Result<Spawned, WsError> {
    let limits = builder.connection_config().limits;
    let ws = open(url, &limits, Some(KeepAlive::default()), Some(tls)).await?;
    Ok(crate::spawn(builder, ws))
}

/// Serves WebSocket connections on `listener` like [`serve_tcp`](crate::serve_tcp) (each
/// handshake on the connection's own task), with the default [`ServeOptions`] (the default
/// [`KeepAlive`] among them).
pub async fn serve(
    listener: tokio::net::TcpListener,
    builder: Builder,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    serve_with(listener, builder, ServeOptions::default(), shutdown, grace).await
}

/// [`serve`] with its [`ServeOptions`]: the connection limit (an upgrade beyond it is
/// answered `503`), the `Origin` allow-list (a handshake from another origin is answered
/// `403`, one without `Origin` as [`ServeOptions::allow_missing_origin`] says) and the
/// keep-alive ([`ServeOptions::keepalive`]).
///
/// The endpoint's [`frame_timeout`](sansrpc::connection::Config::frame_timeout), when set,
/// also bounds the handshake. A WebSocket frame half received counts as silence, which the
/// [`idle_timeout`](sansrpc::connection::Config::idle_timeout) ends.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    builder: Builder,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    let builder = options.builder(builder);
    let handshake_timeout = builder.connection_config().frame_timeout;
    let accept = || async { listener.accept().await.map(crate::no_delay) };
    let upgrade = Arc::new(Upgrade::new(&options, &builder));
    #[cfg(feature = "tls")]
    let tls = options.tls.clone();
    let setup = move |stream: tokio::net::TcpStream| {
        let upgrade = upgrade.clone();
        #[cfg(feature = "tls")]
        let tls = tls.clone();
        async move {
            // The TLS handshake (when configured) and the WebSocket one, in one time limit.
            let handshake = async move {
                #[cfg(feature = "tls")]
                let stream = crate::tls::accept(tls.as_ref(), stream).await?;
                upgrade.accept(stream).await
            };
            crate::request::within(handshake_timeout, "handshake timed out", handshake).await
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

/// The server side of the opening handshake, as a server's options and builder set it:
/// the `Origin` rule, the message bound, the keep-alive.
#[derive(Debug)]
pub(crate) struct Upgrade {
    origins: Origins,
    allow_missing_origin: bool,
    keepalive: Option<KeepAlive>,
    limits: Limits,
    accept_binary: bool,
}

impl Upgrade {
    pub(crate) fn new(options: &ServeOptions, builder: &Builder) -> Self {
        let limits = builder.connection_config().limits;
        Upgrade {
            origins: options.allowed_origins.clone(),
            allow_missing_origin: options.allow_missing_origin,
            keepalive: options.keepalive,
            limits,
            accept_binary: options.accept_binary,
        }
    }

    /// Does the server side of the opening handshake on `stream` by the core's rules
    /// ([`handshake`]): reads the head, answers `101` and returns the transport, or answers
    /// the refusal (`400`, `403`, `426`; `431` for a head over 16 KiB) and fails.
    pub(crate) async fn accept<S>(&self, mut stream: S) -> io::Result<WebSocket<S>>
    where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        use tokio::io::AsyncWriteExt as _;
        // One the thread keeps, when it does ([`crate::wire::spare`]): it becomes the
        // connection's read buffer.
        let mut buf = crate::wire::spare::take();
        let read = std::future::poll_fn(|cx| poll_head(Pin::new(&mut stream), &mut buf, cx));
        let mut answer = Vec::new();
        let refused = match read.await {
            Ok(Some(end)) => {
                let mut decoder = RequestDecoder::keeping_fields(0);
                let judged = match decoder.decode(&mut buf[..end]) {
                    Ok(HttpStep::Head(_, head)) => handshake::judge(&head, &self.origin_rule()),
                    Ok(_) => Err(handshake::Refusal::BadRequest("a malformed head")),
                    Err(fault) => {
                        let status = fault.status();
                        sansrpc::codec::http::write_head(&mut answer, status, Some(0), CLOSE);
                        Err(handshake::Refusal::BadRequest("a malformed head"))
                    }
                };
                match judged {
                    Ok(opening) => {
                        opening.write(&mut answer);
                        stream.write_all(&answer).await?;
                        stream.flush().await?;
                        buf.drain(..end);
                        return Ok(self.transport(stream, buf));
                    }
                    Err(refusal) => {
                        if answer.is_empty() {
                            refusal.write(&mut answer);
                        }
                        io::Error::new(io::ErrorKind::InvalidData, refusal.to_string())
                    }
                }
            }
            Ok(None) => return Err(io::ErrorKind::UnexpectedEof.into()),
            // A head over the bound.
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                sansrpc::codec::http::write_head(&mut answer, 431, Some(0), CLOSE);
                e
            }
            Err(e) => return Err(e),
        };
        // Answered, then closed with what the peer still sends read first: closing with
        // unread input would reset the connection, and the peer could lose the answer.
        if stream.write_all(&answer).await.is_ok() {
            crate::streams::close_lingering(&mut stream).await;
        }
        Err(refused)
    }

    /// The `Origin` rule of the server's options.
    pub(crate) fn origin_rule(&self) -> handshake::OriginRule<'_> {
        handshake::OriginRule {
            origins: &self.origins,
            hosts: &Hosts::Loopback,
            allow_missing: self.allow_missing_origin,
        }
    }

    /// The server's transport over `stream`, whose opening handshake is done (`read`: the
    /// bytes read past it), with the message bound, the keep-alive and the binary frame
    /// rule ([`ServeOptions::accept_binary`]) of the server's options. The standalone
    /// server and the tower service both open their connections here.
    pub(crate) fn transport<S>(&self, stream: S, read: Vec<u8>) -> WebSocket<S>
    where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let mut ws = WebSocket::new(stream, Role::Server, read, &self.limits, self.keepalive);
        ws.decoder = WsDecoder::new(Role::Server, self.limits.max_frame_bytes)
            .accept_binary(self.accept_binary);
        ws
    }
}
