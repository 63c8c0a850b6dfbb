//! Serving a machine whose answers are written stream by stream (MCP's Streamable HTTP,
//! A2A's JSON-RPC binding): the HTTP/1.1 request loop of one socket ([`serve_socket`]),
//! the registry of which response writes each stream and how to wake it ([`Writers`]),
//! and the loop that writes one stream's response to its socket while it watches the
//! socket ([`write_stream`]). What a request means, and every byte of its answer, is the
//! protocol machine's; this moves the bytes.

use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::io;
use std::sync::Arc;
use std::time::Duration;

use sansrpc::codec::http::{BodyKind, BodyStep, Head, HttpFault, RequestDecoder};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

use crate::request::{within, Part, Requests, Times, CONTINUE};
use crate::wire::SMALL;

/// Bytes a client may send ahead (a pipelined next request) while one of its responses
/// streams; past it the client is cut off (it is not waiting for that response).
const MAX_AHEAD: usize = 64 * 1024;

/// How long a write may wait on a client that does not read before it is cut off.
pub const WRITE_STALL: Duration = sansrpc::connection::NETWORK_WRITE_STALL_TIMEOUT;

/// The hashing of a machine's own keys (sessions and streams: numbers it counts out, not
/// chosen by clients, so nothing to flood a table with): one multiplication, not SipHash.
#[derive(Debug, Default, Clone, Copy)]
pub struct Keys;

impl std::hash::BuildHasher for Keys {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(0)
    }
}

/// [`Keys`]' hasher.
#[derive(Debug)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // Odd: distinct keys stay distinct in every low bit; the high bits mixed.
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A response writing a stream (from [`Writers::writer`]).
#[derive(Debug)]
pub struct Writer {
    /// The machine's stream.
    pub stream: u64,
    id: u64,
    /// Made when it first waits ([`Writers::listen`]).
    notify: Option<Arc<Notify>>,
}

/// Which response writes each stream now, and how to wake it. A newer response for a
/// stream (a client resuming it with `Last-Event-ID` before this side saw the old one go)
/// takes it over; the old writer then ends. A stream's `Notify` is made when its response
/// first waits (a JSON answer written at once never does).
#[derive(Debug, Default)]
pub struct Writers {
    waiting: HashMap<u64, (u64, Option<Arc<Notify>>), Keys>,
    next: u64,
}

impl Writers {
    /// Makes a new response the writer of `stream`; a writer it replaces is woken to end.
    pub fn writer(&mut self, stream: u64) -> Writer {
        self.next += 1;
        let old = self.waiting.insert(stream, (self.next, None));
        if let Some((_, Some(old))) = old {
            old.notify_one();
        }
        Writer {
            stream,
            id: self.next,
            notify: None,
        }
    }

    /// What `writer` waits on for more of its stream, made now if it has none; call it
    /// under the same lock as the look at the stream that found nothing, so no wake-up
    /// falls between the two.
    pub fn listen(&mut self, writer: &mut Writer) -> Arc<Notify> {
        if let Some(notify) = &writer.notify {
            return Arc::clone(notify);
        }
        let notify = Arc::new(Notify::new());
        if let Some(entry) = self.waiting.get_mut(&writer.stream) {
            if entry.0 == writer.id {
                entry.1 = Some(Arc::clone(&notify));
            }
        }
        writer.notify = Some(Arc::clone(&notify));
        notify
    }

    /// True while `writer` still writes its stream.
    pub fn owns(&self, writer: &Writer) -> bool {
        self.waiting.get(&writer.stream).map(|w| w.0) == Some(writer.id)
    }

    /// Wakes the response writing `stream`, if it waits (the machine made it ready).
    pub fn wake(&self, stream: u64) {
        if let Some((_, Some(notify))) = self.waiting.get(&stream) {
            notify.notify_one();
        }
    }

    /// `writer` is done: its stream has no writer any more (unless a newer one took it).
    pub fn release(&mut self, writer: &Writer) {
        if self.owns(writer) {
            self.waiting.remove(&writer.stream);
        }
    }

    /// The next step of `writer`'s stream from `poll` (the machine's `poll_stream` or
    /// `poll_stream_parts`, given the stream), with what to wait on when it is [`BodyStep::Wait`]; `None`
    /// when a newer response took the stream over.
    pub fn step(
        &mut self,
        writer: &mut Writer,
        poll: impl FnOnce(u64) -> BodyStep,
    ) -> Option<(BodyStep, Option<Arc<Notify>>)> {
        if !self.owns(writer) {
            return None;
        }
        let step = poll(writer.stream);
        let notify = (step == BodyStep::Wait).then(|| self.listen(writer));
        Some((step, notify))
    }
}

/// A server whose responses a machine writes stream by stream, as its drivers (the socket
/// loop here, the tower service's body) see it: everything under the server's one lock.
pub trait Streams: Clone + Send + Sync + 'static {
    /// The head of a stream's response, as the machine gives it to a driver whose HTTP
    /// library writes heads itself (hyper).
    type Head: Send + 'static;

    /// [`Writers::step`] on the machine's `poll_stream`: what the stream has, as HTTP/1.1
    /// (its head first), appended to `out`.
    fn poll(
        &self,
        writer: &mut Writer,
        out: &mut Vec<u8>,
    ) -> Option<(BodyStep, Option<Arc<Notify>>)>;

    /// [`Writers::step`] on the machine's `poll_stream_parts`: the head into `head` the
    /// first time, body bytes appended to `data`.
    fn poll_parts(
        &self,
        writer: &mut Writer,
        head: &mut Option<Self::Head>,
        data: &mut Vec<u8>,
    ) -> Option<(BodyStep, Option<Arc<Notify>>)>;

    /// The client went away before the response of `writer` ended (nothing happens when a
    /// newer response writes the stream now).
    fn closed(&self, writer: &Writer);

    /// The response of `writer` is over: [`Writers::release`].
    fn release(&self, writer: &Writer);
}

/// Writes the response of `writer`'s stream as the machine produces it, until it ends (or
/// a newer response takes the stream over); watches the socket meanwhile, so a client that
/// goes away closes the stream, and one that floods it while it waits for this response is
/// cut off. False when the connection must close.
pub async fn write_stream<S, T>(
    socket: &mut S,
    streams: &T,
    mut writer: Writer,
    reader: &mut Requests,
) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: Streams,
{
    let mut wrote = false;
    let mut out = Vec::new();
    let keep = loop {
        out.clear();
        let Some((step, notify)) = streams.poll(&mut writer, &mut out) else {
            // Resumed elsewhere: this response just ends.
            break false;
        };
        if !out.is_empty() {
            // A client that stops reading is cut off at the network write-stall timeout.
            let write = tokio::time::timeout(WRITE_STALL, socket.write_all(&out));
            if !matches!(write.await, Ok(Ok(()))) {
                streams.closed(&writer);
                break false;
            }
            wrote = true;
        }
        match step {
            BodyStep::Data => continue,
            // Ended with nothing written (what it answered ended first): the connection
            // closes, so the client is not left waiting for a response.
            BodyStep::End => break wrote,
            BodyStep::Wait => {}
            _ => break false,
        }
        // A pipelined next request is read ahead, kept for after this response.
        let need = reader.read_ahead() + SMALL;
        let notify = notify.unwrap_or_default();
        tokio::select! {
            _ = notify.notified() => {}
            read = poll_fn(|cx| reader.poll_read(socket, cx, need)) => match read {
                Ok(n) if n > 0 && reader.read_ahead() <= MAX_AHEAD => {}
                _ => {
                    streams.closed(&writer);
                    break false;
                }
            },
        }
    };
    streams.release(&writer);
    keep
}

/// What a server does with the requests [`serve_socket`] reads.
pub trait Answerer<S>: Sync {
    /// The answer to a request that could not be read (a [`HttpFault`]: malformed, over a
    /// limit), whole: it is written, then the connection closes.
    fn refusal(&self, fault: HttpFault) -> Vec<u8>;

    /// Answers one request on `socket` (`reader` holds what the client sent ahead); false
    /// when the connection must close.
    fn answer<'a>(
        &'a self,
        socket: &'a mut S,
        head: Head,
        body: Vec<u8>,
        reader: &'a mut Requests,
    ) -> impl Future<Output = bool> + Send + 'a;
}

/// One TCP connection of an HTTP/1.1 server: its requests one after another (keep-alive),
/// each read within `times` and a body of at most `max_body` bytes (a decoder keeping the
/// header fields), answered by `server`.
pub async fn serve_socket<S, A>(mut socket: S, server: &A, times: Times, max_body: usize)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
    A: Answerer<S>,
{
    let mut requests = Requests::new(RequestDecoder::keeping_fields(max_body));
    loop {
        let Some((head, body)) = read_request(&mut socket, &mut requests, times, server).await
        else {
            return;
        };
        let keep_alive = head.keep_alive;
        if !server.answer(&mut socket, head, body, &mut requests).await || !keep_alive {
            let _ = socket.shutdown().await;
            return;
        }
    }
}

/// Reads the next request (its head and body, each within its time limit); `None` when
/// the connection ended, was too slow, or sent something that is not HTTP (answered with
/// the server's refusal first).
async fn read_request<S, A>(
    socket: &mut S,
    requests: &mut Requests,
    times: Times,
    server: &A,
) -> Option<(Head, Vec<u8>)>
where
    S: AsyncRead + AsyncWrite + Unpin,
    A: Answerer<S>,
{
    let refuse = |fault| server.refusal(fault);
    let head = match next_part(socket, requests, times.head, "request head").await {
        Ok(Part::Head(head)) => head,
        Ok(Part::Fault(fault)) => {
            let _ = socket.write_all(&refuse(fault)).await;
            return None;
        }
        _ => return None,
    };
    if head.body == BodyKind::None {
        return Some((head, Vec::new()));
    }
    if requests.too_large(&head) {
        let _ = socket.write_all(&refuse(HttpFault::BodyTooLarge)).await;
        return None;
    }
    if head.expect_continue {
        let _ = socket.write_all(CONTINUE).await;
    }
    match next_part(socket, requests, times.body, "request body").await {
        Ok(Part::Body { used, len }) => {
            let body = requests.body(len).to_vec();
            requests.consume(used);
            Some((head, body))
        }
        Ok(Part::Fault(fault)) => {
            let _ = socket.write_all(&refuse(fault)).await;
            None
        }
        _ => None,
    }
}

/// The next part of a request on `socket`, within `limit` (no timer when it was read
/// already: a body that came with its head, a pipelined request).
async fn next_part<S: AsyncRead + Unpin>(
    socket: &mut S,
    requests: &mut Requests,
    limit: Option<Duration>,
    what: &'static str,
) -> io::Result<Part> {
    match requests.buffered() {
        Ok(part) => Ok(part),
        Err(_) => within(limit, what, poll_fn(|cx| requests.poll_part(socket, cx))).await,
    }
}
