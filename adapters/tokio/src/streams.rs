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

use sansrpc::codec::http::{
    bearer_token, Authorized, BodyKind, BodyStep, Head, HttpFault, Principal, RequestDecoder,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

use std::net::IpAddr;

use sansrpc::codec::sse::EventStore;
use tokio::net::{TcpListener, TcpStream};

use crate::request::{within, Accepted, Handshake, Part, Requests, Times, CONTINUE};
use crate::wire::SMALL;
use crate::{Listener, ServeOptions};

/// Bytes a client may send ahead (a pipelined next request) while one of its responses
/// streams; past it the client is cut off (it is not waiting for that response).
const MAX_AHEAD: usize = 64 * 1024;

/// How long a write may wait on a client that does not read before it is cut off.
pub const WRITE_STALL: Duration = sansrpc::connection::NETWORK_WRITE_STALL_TIMEOUT;

/// The hashing of a machine's own keys (sessions and streams: numbers it counts out, not
/// chosen by clients, so nothing to flood a table with): one multiplication, not SipHash.
pub use sansrpc_runtime::{KeyHasher, Keys};

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
            sansrpc_runtime::remove_and_shrink(&mut self.waiting, &writer.stream);
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

/// A machine's `poll_stream`: what a stream's response has to write, appended to the buffer
/// as HTTP/1.1.
pub type PollStream<M> = fn(&mut M, u64, &mut Vec<u8>) -> BodyStep;

/// A machine's `poll_stream_parts`: a stream's response head (`H`) the first time, body
/// bytes appended to the buffer, unframed.
pub type PollParts<M, H> = fn(&mut M, u64, &mut Option<H>, &mut Vec<u8>) -> BodyStep;

/// A server whose responses a machine writes stream by stream, as its drivers (the socket
/// loop here, the tower service's body) see it: the machine and its [`Writers`] under the
/// server's one lock.
pub trait Streams: Clone + Send + Sync + 'static {
    /// The protocol machine that writes the answers (MCP's `streamable::Endpoint`, A2A's
    /// `http::Endpoint`).
    type Machine: Send + 'static;
    /// The head of a stream's response, as the machine gives it to a driver whose HTTP
    /// library writes heads itself (hyper).
    type Head: Send + 'static;
    /// The machine's `poll_stream`: what `stream`'s response has to write, appended to the
    /// buffer as HTTP/1.1 (its head first).
    const POLL: PollStream<Self::Machine>;
    /// The machine's `poll_stream_parts`: the head into the option the first time, body
    /// bytes appended to the buffer, unframed.
    const POLL_PARTS: PollParts<Self::Machine, Self::Head>;

    /// Runs `f` on the machine and the writers, under the server's lock.
    fn locked<R>(&self, f: impl FnOnce(&mut Self::Machine, &mut Writers) -> R) -> R;

    /// The client went away before the response of `writer` ended (nothing happens when a
    /// newer response writes the stream now).
    fn closed(&self, writer: &Writer);

    /// [`Writers::step`] on the machine's `poll_stream`: what the stream has, as HTTP/1.1
    /// (its head first), appended to `out`.
    fn poll(
        &self,
        writer: &mut Writer,
        out: &mut Vec<u8>,
    ) -> Option<(BodyStep, Option<Arc<Notify>>)> {
        self.locked(|machine, writers| {
            writers.step(writer, |stream| Self::POLL(machine, stream, out))
        })
    }

    /// [`Writers::step`] on the machine's `poll_stream_parts`: the head into `head` the
    /// first time, body bytes appended to `data`.
    fn poll_parts(
        &self,
        writer: &mut Writer,
        head: &mut Option<Self::Head>,
        data: &mut Vec<u8>,
    ) -> Option<(BodyStep, Option<Arc<Notify>>)> {
        self.locked(|machine, writers| {
            writers.step(writer, |stream| {
                Self::POLL_PARTS(machine, stream, head, data)
            })
        })
    }

    /// The response of `writer` is over: [`Writers::release`].
    fn release(&self, writer: &Writer) {
        self.locked(|_, writers| writers.release(writer));
    }
}

/// The token check of a request with the application's `validator` (none: nothing
/// checked): what the protocol machine decides on, and the principal of a valid token.
pub fn authorize(validator: Option<&Validator>, head: &Head) -> (Authorized, Option<Principal>) {
    let Some(validator) = validator else {
        return (Authorized::NotRequired, None);
    };
    match bearer_token(head) {
        None => (Authorized::Missing, None),
        Some(token) => match validator(token) {
            TokenCheck::Valid(principal) => (Authorized::Valid, Some(principal)),
            TokenCheck::Invalid => (Authorized::Invalid, None),
            TokenCheck::InsufficientScope(scope) => (Authorized::InsufficientScope(scope), None),
        },
    }
}

/// What the application's token validator says of a bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenCheck {
    /// A valid token, for this principal: its calls' handlers see it
    /// ([`RequestContext::http`](crate::RequestContext::http)).
    Valid(Principal),
    /// Expired, revoked, for another audience, unknown: 401 `invalid_token`.
    Invalid,
    /// Valid, without the scope named: 403 `insufficient_scope`.
    InsufficientScope(String),
}

/// Checks a bearer token (the text after `Bearer `).
pub type Validator = Arc<dyn Fn(&str) -> TokenCheck + Send + Sync>;

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

/// How a server's timer task is told that its machine's next deadline moved: the task
/// sleeps until the deadline it took last, or until told; only a deadline earlier than
/// that one tells it (most calls move nothing earlier: no wake-up per call).
#[derive(Debug, Default)]
pub struct Wakeup {
    notify: Arc<Notify>,
    /// The deadline the timer task sleeps until (`None`: none, it waits to be told).
    at: Option<sansrpc::Instant>,
}

impl Wakeup {
    /// The machine's next deadline is now `next`: the timer task is woken when it is
    /// earlier than the one it sleeps until.
    pub fn moved(&mut self, next: Option<sansrpc::Instant>) {
        if next.is_some_and(|at| self.at.map_or(true, |armed| at < armed)) {
            self.at = next;
            self.notify.notify_one();
        }
    }

    /// What the timer task sleeps for when the machine's next deadline is `next` (read
    /// on `clock`): until it, or until told.
    pub fn sleep(
        &mut self,
        next: Option<sansrpc::Instant>,
        clock: &sansrpc_runtime::Clock,
    ) -> (Option<Duration>, Arc<Notify>) {
        self.at = next;
        (next.map(|at| clock.until(at)), Arc::clone(&self.notify))
    }
}

/// A server's timer task: sleeps as `sleep` says ([`Wakeup::sleep`], under the server's
/// lock), then runs `fire` (the machine's `handle_timeout`, and what it made ready), for
/// ever.
pub async fn run_timers(
    mut sleep: impl FnMut() -> (Option<Duration>, Arc<Notify>),
    mut fire: impl FnMut(),
) {
    loop {
        let (wait, told) = sleep();
        match wait {
            Some(wait) => {
                let _ = tokio::time::timeout(wait, told.notified()).await;
            }
            None => told.notified().await,
        }
        fire();
    }
}

/// How long the TCP connections may take to end once a server stops; then they are
/// aborted.
const DRAIN: Duration = Duration::from_secs(1);

/// What a protocol's HTTP server takes besides its own config (MCP's `serve_with` and
/// `McpService::with_options`, A2A's): the application's bearer-token validator, where
/// the SSE events of resumable streams wait for a client that reconnects with
/// `Last-Event-ID` (in memory, bounded by the protocol config's `store_bytes` and
/// `store_age`, when `None`; a durable store is flushed once per turn, before anything it
/// took is written to a client), and the listener's side.
#[derive(Default)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Checks bearer tokens where the protocol asks for them.
    pub validator: Option<Validator>,
    /// Where the SSE events of resumable streams wait.
    pub event_store: Option<Box<dyn EventStore>>,
    /// The listener's side, as for every server of this crate (the standalone server only:
    /// a tower service's is the app's): the connections served at once
    /// ([`ServeOptions::max_connections`]; one beyond it is answered `503`), TLS
    /// ([`ServeOptions::tls`]: `https://`), and the time a client has for a request head
    /// and body (the builder config's `frame_timeout` and `idle_timeout`, with the network
    /// defaults when [`ServeOptions::network_defaults`] is on: 30 s each).
    pub serve: ServeOptions,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("validator", &self.validator.is_some())
            .field("event_store", &self.event_store.is_some())
            .field("serve", &self.serve)
            .finish()
    }
}

impl ServerOptions {
    /// Bearer tokens checked by `validator`.
    pub fn validator(
        mut self,
        validator: impl Fn(&str) -> TokenCheck + Send + Sync + 'static,
    ) -> Self {
        self.validator = Some(Arc::new(validator));
        self
    }

    /// SSE events kept in `store` (see [`ServerOptions::event_store`]).
    pub fn event_store(mut self, store: impl EventStore + 'static) -> Self {
        self.event_store = Some(Box::new(store));
        self
    }

    /// The listener served with `options` (see [`ServerOptions::serve`]).
    pub fn serve_options(mut self, options: ServeOptions) -> Self {
        self.serve = options;
        self
    }
}

/// Serves HTTP/1.1 on `listener` as a protocol's standalone server does, until `shutdown`
/// completes: the listener's `options` (the connection cap and its `503`, TLS), each
/// request read within `times` with a body of at most `max_body` bytes, and answered by
/// the [`Answerer`] `answerer` makes for the connection's peer address. Then it stops
/// accepting, calls `stop` (which ends what the connections wait on), and gives the
/// connections a second to end before they are aborted.
pub async fn serve_http<A>(
    listener: TcpListener,
    options: &ServeOptions,
    times: Times,
    max_body: usize,
    answerer: impl Fn(Option<IpAddr>) -> A,
    shutdown: impl Future<Output = ()>,
    stop: impl FnOnce(),
) -> io::Result<()>
where
    A: Answerer<Accepted> + Send + 'static,
{
    let handshake = Handshake::new(options, times);
    let accept = || async { listener.accept().await.map(crate::no_delay) };
    let connection = |stream: TcpStream| {
        let handshake = handshake.clone();
        let answerer = answerer(stream.peer_addr().ok().map(|a| a.ip()));
        async move {
            if let Ok(stream) = handshake.run(stream).await {
                serve_socket(stream, &answerer, times, max_body).await;
            }
        }
    };
    let listener = Listener {
        refusal: crate::HTTP_BUSY.into(),
        max_connections: options.max_connections,
        drain: DRAIN,
    };
    listener.run(accept, connection, shutdown, stop).await
}

/// A request as [`serve_socket`] reads it: its head and its whole body.
pub type Request = (Head, Vec<u8>);

/// What a server does with the requests [`serve_socket`] reads.
pub trait Answerer<S>: Sync {
    /// The answer to a request that could not be read (a [`HttpFault`]: malformed, over a
    /// limit), whole: it is written, then the connection closes.
    fn refusal(&self, fault: HttpFault) -> Vec<u8>;

    /// Answers one request (its head and body) on `socket` (`reader` holds what the client
    /// sent ahead); false when the connection must close.
    fn answer<'a>(
        &'a self,
        socket: &'a mut S,
        request: Request,
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
        let request = match read_request(&mut socket, &mut requests, times, server).await {
            Read::Request(head, body) => (head, body),
            Read::Refused => return close_lingering(&mut socket).await,
            Read::Over => return,
        };
        // An HTTP/1.0 connection persists only when the response says `keep-alive` too
        // (RFC 9112 §9.3), which these answers never do (and an SSE answer to one ends
        // with the close): it closes after its answer.
        let keep_alive = request.0.keep_alive && !request.0.http10;
        if !server.answer(&mut socket, request, &mut requests).await || !keep_alive {
            return close_lingering(&mut socket).await;
        }
    }
}

/// How long a closing connection reads what its peer still sends ([`close_lingering`]).
const LINGER: Duration = Duration::from_secs(1);

/// Closes `socket` in stages (RFC 9112 §9.6): our side first, then what the peer still
/// sends (a body refused from its head, a request pipelined behind the last answer) is
/// read and dropped until it closes its side, for [`LINGER`] at most. Closing with unread
/// input would reset the connection: a peer writing its body before it reads would have
/// its write fail and never read the answer, and its stack may drop an answer not yet read.
pub(crate) async fn close_lingering<S: AsyncRead + AsyncWrite + Unpin>(socket: &mut S) {
    use tokio::io::AsyncReadExt;
    if socket.shutdown().await.is_err() {
        return;
    }
    // On the heap, made only here: on the stack it would be held in every connection's
    // future (this is awaited in `serve_socket`), 16 KiB of each task from its start.
    let mut sink = vec![0; 16 * 1024];
    let drained = async { while let Ok(1..) = socket.read(&mut sink).await {} };
    let _ = tokio::time::timeout(LINGER, drained).await;
}

/// What [`read_request`] read.
enum Read {
    /// A request, its head and its whole body.
    Request(Head, Vec<u8>),
    /// Something refused, answered with the server's refusal: the connection closes.
    Refused,
    /// The connection ended or was too slow.
    Over,
}

/// Reads the next request (its head and body, each within its time limit), or answers
/// what is not HTTP, or too large, with the server's refusal.
async fn read_request<S, A>(
    socket: &mut S,
    requests: &mut Requests,
    times: Times,
    server: &A,
) -> Read
where
    S: AsyncRead + AsyncWrite + Unpin,
    A: Answerer<S>,
{
    let refuse = |fault| server.refusal(fault);
    let head = match next_part(socket, requests, times.head, "request head").await {
        Ok(Part::Head(head)) => head,
        Ok(Part::Fault(fault)) => {
            let _ = socket.write_all(&refuse(fault)).await;
            return Read::Refused;
        }
        _ => return Read::Over,
    };
    if head.body == BodyKind::None {
        return Read::Request(head, Vec::new());
    }
    if requests.too_large(&head) {
        let _ = socket.write_all(&refuse(HttpFault::BodyTooLarge)).await;
        return Read::Refused;
    }
    if head.expect_continue {
        let _ = socket.write_all(CONTINUE).await;
    }
    match next_part(socket, requests, times.body, "request body").await {
        Ok(Part::Body { used, len }) => {
            let body = requests.body(len).to_vec();
            requests.consume(used);
            Read::Request(head, body)
        }
        Ok(Part::Fault(fault)) => {
            let _ = socket.write_all(&refuse(fault)).await;
            Read::Refused
        }
        _ => Read::Over,
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

#[cfg(test)]
mod tests {
    use std::future::Future;

    use sansrpc::codec::http::HttpFault;

    use super::{serve_socket, Answerer, Request, Requests};
    use crate::request::Times;

    /// Answers every request `200` with no body.
    struct Empty;

    impl<S: Send> Answerer<S> for Empty {
        fn refusal(&self, _: HttpFault) -> Vec<u8> {
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n".to_vec()
        }

        fn answer<'a>(
            &'a self,
            _: &'a mut S,
            _: Request,
            _: &'a mut Requests,
        ) -> impl Future<Output = bool> + Send + 'a {
            std::future::ready(true)
        }
    }

    /// A connection's future is its task's whole size from the start (and moved whole as it
    /// is spawned): it holds no buffer, such as the one a closing connection drains its
    /// peer's input into (16 KiB, which made every connection of an MCP or A2A server 17
    /// KiB before).
    #[tokio::test]
    async fn a_connections_future_holds_no_buffer() {
        let (socket, _peer) = tokio::io::duplex(64);
        let times = Times::of(&sansrpc::Config::default());
        let serving = serve_socket(socket, &Empty, times, 1 << 20);
        let size = std::mem::size_of_val(&serving);
        assert!(size <= 2048, "a connection's future is {size} bytes");
    }
}
