//! MCP's Streamable HTTP on tokio: the 2025-11-25 session revision (and older clients) and
//! the stateless 2026-07-28 revision on one endpoint. Every decision (statuses, sessions,
//! JSON or Server-Sent Events, which stream a message goes on, resumption, bounds) is the
//! core's [`sansrpc::streamable::Server`]; this module only moves bytes: it reads HTTP
//! requests, runs one connection per session (and one per stateless request) with your
//! [`Builder`]'s router, and writes what the machine says.
//!
//! ```no_run
//! use sansrpc::endpoint::{Config, Profile};
//! use sansrpc::streamable;
//! use sansrpc_tokio::{AsyncRouter, Builder};
//!
//! # async fn run() -> std::io::Result<()> {
//! let router = AsyncRouter::new(); // initialize, tools/list, tools/call ...
//! let builder = Builder::new().config(Config::for_profile(Profile::Mcp)).router(router);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! let config = streamable::Config::default(); // http://127.0.0.1:3000/mcp
//! sansrpc_tokio::mcp::serve(listener, builder, config, std::future::pending()).await
//! # }
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use sansrpc::codec::http::{Head, HttpStep, RequestDecoder};
use sansrpc::connection::Connection as Conn;
use sansrpc::driver::Clock;
use sansrpc::streamable::{self, Authorized, Closed, Step, Verdict};
use sansrpc::Instant;
use sansrpc_futures::{Received, ShutdownHandle, Transport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};

use crate::Builder;

/// Largest request body read (a JSON-RPC message or batch).
const MAX_BODY: usize = 4 << 20;
/// Messages waiting for one session's connection; a POST beyond it waits (back-pressure).
const SESSION_QUEUE: usize = 64;

/// Serves MCP's Streamable HTTP on `listener` with `builder` (configure it with
/// [`Profile::Mcp`](sansrpc::endpoint::Profile::Mcp) and give it your router) until
/// `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    builder: Builder,
    config: streamable::Config,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let state = State::new(streamable::Server::new(config), builder);
    let timers = tokio::spawn(run_timers(state.clone()));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => {
                    crate::tune(&socket);
                    tokio::spawn(serve_socket(socket, state.clone()));
                }
                // Out of descriptors, most likely: give connections time to end.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
    timers.abort();
    let connections: Vec<ShutdownHandle> = {
        let mut shared = state.lock();
        let sessions = std::mem::take(&mut shared.sessions);
        sessions.into_values().map(|s| s.shutdown).collect()
    };
    for handle in connections {
        handle.shutdown(Duration::ZERO);
    }
    Ok(())
}

/// A connection running for a session (or a stateless request): where its input goes and
/// how to stop it.
struct Running {
    input: mpsc::Sender<(Vec<u8>, u64)>,
    shutdown: ShutdownHandle,
}

/// What every task shares; never locked across an await.
struct Shared {
    server: streamable::Server,
    clock: Clock,
    builder: Builder,
    /// Session connections, by the machine's session key.
    sessions: HashMap<u64, Running>,
    /// Stateless requests' connections, by stream.
    stateless: HashMap<u64, Running>,
    /// Writers waiting on a stream.
    waiting: HashMap<u64, Arc<Notify>>,
    /// The timer task: woken when the machine's next deadline may have moved.
    timer: Arc<Notify>,
}

#[derive(Clone)]
struct State(Arc<Mutex<Shared>>);

impl State {
    fn new(server: streamable::Server, builder: Builder) -> Self {
        State(Arc::new(Mutex::new(Shared {
            server,
            clock: Clock::new(),
            builder,
            sessions: HashMap::new(),
            stateless: HashMap::new(),
            waiting: HashMap::new(),
            timer: Arc::new(Notify::new()),
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Shared {
    fn now(&self) -> Instant {
        self.clock.now()
    }

    /// What [`wake`](Self::wake) does, then tells the timer task to look again (the
    /// machine's next deadline may have moved).
    fn settle(&mut self) {
        self.wake();
        self.timer.notify_one();
    }

    /// Wakes the writers of the streams the machine made ready and stops the connections
    /// of sessions it ended. (The timer task itself calls only this: telling itself to
    /// look again would have it spin.)
    fn wake(&mut self) {
        while let Some(stream) = self.server.poll_ready() {
            if let Some(notify) = self.waiting.get(&stream) {
                notify.notify_one();
            }
        }
        while let Some(event) = self.server.poll_event() {
            if let streamable::Event::SessionEnded { session } = event {
                if let Some(running) = self.sessions.remove(&session) {
                    running.shutdown.shutdown(Duration::ZERO);
                }
            }
        }
    }
}

/// Sleeps until the machine's next deadline (or until it may have moved), then runs it.
async fn run_timers(state: State) {
    loop {
        let (wait, timer) = {
            let shared = state.lock();
            let wait = shared
                .server
                .poll_timeout()
                .map(|at| shared.clock.until(at));
            (wait, Arc::clone(&shared.timer))
        };
        match wait {
            Some(wait) => {
                let _ = tokio::time::timeout(wait, timer.notified()).await;
            }
            None => timer.notified().await,
        }
        let mut shared = state.lock();
        let now = shared.now();
        shared.server.handle_timeout(now);
        shared.wake();
    }
}

/// Where a connection's frames go.
#[derive(Clone, Copy)]
enum Target {
    Session(u64),
    Stream(u64),
}

/// The transport of a session's (or a stateless request's) connection: messages in from
/// the HTTP requests, each frame out to the machine with its tag.
struct Messages {
    input: mpsc::Receiver<(Vec<u8>, u64)>,
    held: Option<(Vec<u8>, u64)>,
    state: State,
    target: Target,
    buf: Vec<u8>,
}

impl Transport for Messages {
    fn is_message_based(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Conn,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        if self.held.is_none() {
            match self.input.poll_recv(cx) {
                Poll::Ready(Some(message)) => self.held = Some(message),
                Poll::Ready(None) => {
                    conn.handle_end_of_input(now);
                    return Poll::Ready(Ok(Received::End));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        let (message, tag) = self.held.take().expect("a message");
        if conn.handle_message_tagged(&message, tag, now).is_err() {
            self.held = Some((message, tag));
            return Poll::Ready(Ok(Received::Stalled));
        }
        Poll::Ready(Ok(Received::Data))
    }

    fn poll_transmit(&mut self, _: &mut Context<'_>, conn: &mut Conn) -> Poll<io::Result<()>> {
        let mut frames = Vec::new();
        self.buf.clear();
        while let Some((len, tag)) = conn.poll_transmit_tagged(&mut self.buf) {
            frames.push((len, tag));
        }
        if frames.is_empty() {
            return Poll::Ready(Ok(()));
        }
        let mut shared = self.state.lock();
        let now = shared.now();
        let mut at = 0;
        for (len, tag) in frames {
            let frame = &self.buf[at..at + len];
            at += len;
            match self.target {
                Target::Session(session) => shared.server.handle_outgoing(session, frame, tag, now),
                Target::Stream(stream) => shared.server.handle_stream_output(stream, frame, now),
            }
        }
        shared.settle();
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Starts a connection for `target` with the server's builder; returns where its input goes.
fn start(shared: &Shared, state: &State, target: Target) -> Running {
    let (input, rx) = mpsc::channel(SESSION_QUEUE);
    let transport = Messages {
        input: rx,
        held: None,
        state: state.clone(),
        target,
        buf: Vec::new(),
    };
    let connection = crate::spawn(shared.builder.clone(), transport);
    let ended = state.clone();
    let driver = connection.driver;
    tokio::spawn(async move {
        let _ = driver.await;
        let mut shared = ended.lock();
        match target {
            Target::Session(session) => {
                shared.sessions.remove(&session);
                shared.server.handle_session_closed(session);
            }
            Target::Stream(stream) => {
                shared.stateless.remove(&stream);
            }
        }
        shared.settle();
    });
    Running {
        input,
        shutdown: connection.shutdown,
    }
}

/// Unguessable bytes for session ids: the system's random source.
fn entropy(out: &mut [u8]) {
    use std::io::Read;
    let filled = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(out));
    if filled.is_err() {
        // No /dev/urandom (not a Unix): std's per-process random hash keys, mixed with
        // the time and a counter.
        use std::hash::{BuildHasher, Hasher};
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let keys = std::collections::hash_map::RandomState::new();
        for chunk in out.chunks_mut(8) {
            let mut h = keys.build_hasher();
            h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            let bytes = h.finish().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// One TCP connection: its requests one after another (HTTP/1.1 keep-alive).
async fn serve_socket(mut socket: TcpStream, state: State) {
    let mut decoder = RequestDecoder::keeping_fields(MAX_BODY);
    let mut input = Vec::new();
    loop {
        let Some((head, body)) = read_request(&mut socket, &mut decoder, &mut input).await else {
            return;
        };
        let keep_alive = head.keep_alive;
        if !answer(&mut socket, &state, &head, body, &mut input).await || !keep_alive {
            let _ = socket.shutdown().await;
            return;
        }
    }
}

/// Reads the next request (its head and body); `None` when the connection ended or sent
/// something that is not HTTP (answered 4xx first).
async fn read_request(
    socket: &mut TcpStream,
    decoder: &mut RequestDecoder,
    input: &mut Vec<u8>,
) -> Option<(Head, Vec<u8>)> {
    let mut head = None;
    loop {
        match decoder.decode(input) {
            Err(fault) => {
                let response = format!(
                    "HTTP/1.1 {} Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    fault.status()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                return None;
            }
            Ok(HttpStep::Head(used, h)) => {
                input.drain(..used);
                if h.body == sansrpc::codec::http::BodyKind::None {
                    return Some((h, Vec::new()));
                }
                if let sansrpc::codec::http::BodyKind::Length(n) = h.body {
                    if n > MAX_BODY as u64 {
                        let _ = socket
                            .write_all(b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                            .await;
                        return None;
                    }
                }
                if h.expect_continue {
                    let _ = socket.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await;
                }
                head = Some(h);
                continue;
            }
            Ok(HttpStep::Body(used, body)) => {
                let body = body.to_vec();
                input.drain(..used);
                return head.map(|h| (h, body));
            }
            Ok(HttpStep::Incomplete(_)) => {
                let kept = decoder.reclaim(input);
                input.truncate(kept);
            }
        }
        let mut chunk = [0u8; 16 * 1024];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Answers one request as the machine decides; false when the connection must close.
async fn answer(
    socket: &mut TcpStream,
    state: &State,
    head: &Head,
    body: Vec<u8>,
    input: &mut Vec<u8>,
) -> bool {
    let verdict = {
        let mut shared = state.lock();
        let now = shared.now();
        let verdict =
            shared
                .server
                .handle_request(head, &body, Authorized::NotRequired, now, &mut entropy);
        shared.settle();
        verdict
    };
    match verdict {
        Verdict::Respond(response) => write_response(socket, &response).await,
        Verdict::Deliver { session, response } => {
            let sender = state.lock().sessions.get(&session).map(|r| r.input.clone());
            if let Some(sender) = sender {
                let _ = sender.send((body, 0)).await;
            }
            write_response(socket, &response).await
        }
        Verdict::Open {
            session,
            stream,
            new_session,
        } => {
            let (notify, sender) = {
                let mut shared = state.lock();
                if new_session || !shared.sessions.contains_key(&session) {
                    let running = start(&shared, state, Target::Session(session));
                    shared.sessions.insert(session, running);
                }
                let notify = Arc::new(Notify::new());
                shared.waiting.insert(stream, Arc::clone(&notify));
                let sender = shared.sessions.get(&session).map(|r| r.input.clone());
                (notify, sender)
            };
            if let Some(sender) = sender {
                let _ = sender.send((body, stream)).await;
            }
            write_stream(socket, state, stream, notify, input).await
        }
        Verdict::Stateless { stream } => {
            let (notify, sender) = {
                let mut shared = state.lock();
                let running = start(&shared, state, Target::Stream(stream));
                let sender = running.input.clone();
                shared.stateless.insert(stream, running);
                let notify = Arc::new(Notify::new());
                shared.waiting.insert(stream, Arc::clone(&notify));
                (notify, sender)
            };
            let _ = sender.send((body, stream)).await;
            let keep = write_stream(socket, state, stream, notify, input).await;
            // Its one request answered (or abandoned): the connection ends.
            if let Some(running) = state.lock().stateless.remove(&stream) {
                running.shutdown.shutdown(Duration::ZERO);
            }
            keep
        }
        Verdict::Listen { stream } => {
            let notify = Arc::new(Notify::new());
            state.lock().waiting.insert(stream, Arc::clone(&notify));
            write_stream(socket, state, stream, notify, input).await
        }
        Verdict::Ended { session, response } => {
            if let Some(running) = state.lock().sessions.remove(&session) {
                running.shutdown.shutdown(Duration::ZERO);
            }
            write_response(socket, &response).await
        }
        _ => false,
    }
}

async fn write_response(socket: &mut TcpStream, response: &streamable::Response) -> bool {
    let mut out = Vec::new();
    response.write(&mut out);
    socket.write_all(&out).await.is_ok()
}

/// Writes `stream`'s response as the machine produces it, until it ends; watches the
/// socket meanwhile, so a client that goes away closes the stream (which cancels a
/// stateless request). False when the connection must close.
async fn write_stream(
    socket: &mut TcpStream,
    state: &State,
    stream: u64,
    notify: Arc<Notify>,
    input: &mut Vec<u8>,
) -> bool {
    let keep = loop {
        let mut out = Vec::new();
        let step = state.lock().server.poll_stream(stream, &mut out);
        if !out.is_empty() && socket.write_all(&out).await.is_err() {
            closed(state, stream);
            break false;
        }
        match step {
            Step::Data => continue,
            Step::End => break true,
            Step::Wait => {}
            _ => break false,
        }
        let mut chunk = [0u8; 4096];
        tokio::select! {
            _ = notify.notified() => {}
            read = socket.read(&mut chunk) => match read {
                Ok(0) | Err(_) => {
                    closed(state, stream);
                    break false;
                }
                // A pipelined next request: kept for after this response.
                Ok(n) => input.extend_from_slice(&chunk[..n]),
            },
        }
    };
    state.lock().waiting.remove(&stream);
    keep
}

/// The client closed `stream`'s response before its end.
fn closed(state: &State, stream: u64) {
    let mut shared = state.lock();
    let now = shared.now();
    if shared.server.handle_stream_closed(stream, now) == Closed::Cancel {
        if let Some(running) = shared.stateless.remove(&stream) {
            running.shutdown.shutdown(Duration::ZERO);
        }
    }
    shared.settle();
}
