//! The standalone server: it reads HTTP requests on the listener every sansrpc-tokio
//! server shares (with its [`ServeOptions`](sansrpc_tokio::ServeOptions): the connection cap and its `503`, TLS, the
//! time limits of a request's head and body), runs one connection per session (and one per
//! stateless request) with your [`Builder`]'s router, and writes what the machine says.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::streamable::{self, Closed, Verdict};
use sansrpc::codec::http::{Fields, Head, HttpFault};
use sansrpc::message::Scanned;
use sansrpc::Connection;
use sansrpc::Instant;
use sansrpc_futures::{HttpRequest, HttpRequests, Principal, ShutdownHandle};
use sansrpc_runtime::{remove_and_shrink, Clock};
use smallvec::SmallVec;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use sansrpc_tokio::host::{
    authorize, run_timers, serve_http, write_stream, Answerer, Keys, PollParts, PollStream,
    Request, Requests, Streams, Times, Wakeup, Writer, Writers,
};
pub use sansrpc_tokio::host::{TokenCheck, Validator};
use sansrpc_tokio::Builder;

use super::channel::{Engine, Handed, Outbox};

/// Largest request body read (a JSON-RPC message or batch).
pub(crate) const MAX_BODY: usize = 4 << 20;
/// Messages waiting for one session's connection; a POST beyond it waits (back-pressure).
const SESSION_QUEUE: usize = 64;

/// Serves MCP's Streamable HTTP on `listener` with `builder` (configure it with
/// [`Profile::Mcp`](sansrpc::connection::Profile::Mcp) and give it your router) until
/// `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    builder: Builder,
    config: streamable::Config,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    serve_with(listener, builder, config, Options::default(), shutdown).await
}

/// What [`serve_with`] adds to [`serve`] (and [`McpService::with_options`](super::McpService::with_options)
/// to `new`): the validator that checks every request's bearer token when
/// `streamable::Config::auth` is set (then a request without a token is 401, as the machine
/// decides; without a validator every token is invalid), the event store of resumable
/// streams (a durable one, `sansrpc-store-redb`'s `RedbEventStore`, keeps them across a
/// restart), and the listener's side. The `Origin`s and `Host`s served are the
/// [`streamable::Config`]'s (the CORS fields of [`ServeOptions`](sansrpc_tokio::ServeOptions) do not apply).
pub use sansrpc_tokio::host::ServerOptions as Options;

/// [`serve`] with [`Options`]: a bearer-token validator (OAuth 2.1 resource server), an
/// event store, and the listener's [`ServeOptions`](sansrpc_tokio::ServeOptions) (connection cap, TLS, request time
/// limits). The handlers of each call see the HTTP request it came in (the principal, the
/// header fields) through [`RequestContext::http`](sansrpc_tokio::RequestContext::http).
///
/// When `shutdown` completes, the listener stops accepting, every session's connection is
/// shut down, and the TCP connections get a second to end before they are aborted.
pub async fn serve_with(
    listener: TcpListener,
    builder: Builder,
    config: streamable::Config,
    options: Options,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let Options {
        validator,
        event_store,
        serve,
        ..
    } = options;
    // A request's time limits are the builder config's, as for the other servers; the
    // sessions' connections run on the builder as it is (a session's life is the machine's
    // `session_idle`, not a socket's).
    let times = Times::of(serve.builder(builder.clone()).connection_config());
    let (state, timers) = serving(builder, config, validator, event_store);
    // The machine counts sessions per peer address (`max_sessions_per_peer`).
    let socket = |peer| Socket {
        state: state.clone(),
        peer,
    };
    let result = serve_http(listener, &serve, times, MAX_BODY, socket, shutdown, || {
        state.end_sessions()
    })
    .await;
    timers.abort();
    result
}

/// The machine for `config` (its events in `event_store`, else in memory) and what every
/// task shares, with the task running its timers; tokens checked by `validator` when the
/// config requires them (every token is invalid without one).
pub(crate) fn serving(
    builder: Builder,
    config: streamable::Config,
    validator: Option<Validator>,
    event_store: Option<Box<dyn streamable::EventStore>>,
) -> (State, tokio::task::JoinHandle<()>) {
    let checks_tokens = config.auth.is_some();
    let server = match event_store {
        Some(store) => streamable::Endpoint::with_store(config, store),
        None => streamable::Endpoint::new(config),
    };
    let state = State::new(server, builder);
    state.lock().validator =
        checks_tokens.then(|| validator.unwrap_or_else(|| Arc::new(|_: &str| TokenCheck::Invalid)));
    let timers = tokio::spawn(timers(state.clone()));
    (state, timers)
}

/// A connection running for a session (or a stateless request): where its input goes and
/// how to stop it.
struct Running {
    /// Where its input goes, and what drives it.
    engine: Arc<Engine>,
    shutdown: ShutdownHandle,
    /// The HTTP request of each call in flight, for its handler.
    requests: Arc<HttpRequests>,
}

impl Drop for Running {
    /// Its input ends (the connection ends once it has read what waits).
    fn drop(&mut self) {
        self.engine.close();
    }
}

/// What every task shares; never locked across an await.
pub(crate) struct Shared {
    pub(crate) server: streamable::Endpoint,
    clock: Clock,
    builder: Builder,
    /// Session connections, by the machine's session key.
    sessions: HashMap<u64, Running, Keys>,
    /// Stateless requests' connections, by stream.
    stateless: HashMap<u64, Running, Keys>,
    /// The response writing each stream, and how to wake it.
    pub(crate) writers: Writers,
    /// The timer task, woken when the machine's next deadline moved earlier.
    timer: Wakeup,
    /// Checks bearer tokens, when the configuration requires them.
    validator: Option<Validator>,
}

#[derive(Clone)]
pub(crate) struct State(Arc<Mutex<Shared>>);

impl State {
    fn new(server: streamable::Endpoint, builder: Builder) -> Self {
        State(Arc::new(Mutex::new(Shared {
            server,
            clock: Clock::new(),
            builder,
            sessions: HashMap::default(),
            stateless: HashMap::default(),
            writers: Writers::default(),
            timer: Wakeup::default(),
            validator: None,
        })))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Shared> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shuts every session's connection down (the server stops).
    pub(crate) fn end_sessions(&self) {
        let sessions = std::mem::take(&mut self.lock().sessions);
        for running in sessions.into_values() {
            running.shutdown.shutdown(Duration::ZERO);
        }
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
        let next = self.server.poll_timeout();
        self.timer.moved(next);
    }

    /// Wakes the writers of the streams the machine made ready and stops the connections
    /// of sessions it ended. (The timer task itself calls only this: telling itself to
    /// look again would have it spin.)
    fn wake(&mut self) {
        // Durable before any of it reaches a client.
        self.server.flush_store();
        while let Some(stream) = self.server.poll_ready() {
            self.writers.wake(stream);
        }
        while let Some(event) = self.server.poll_event() {
            let streamable::Event::SessionEnded { session } = event;
            if let Some(running) = remove_and_shrink(&mut self.sessions, &session) {
                running.shutdown.shutdown(Duration::ZERO);
            }
        }
    }
}

/// Sleeps until the machine's next deadline (or until it may have moved), then runs it.
async fn timers(state: State) {
    let sleep = || {
        let shared = &mut *state.lock();
        shared
            .timer
            .sleep(shared.server.poll_timeout(), &shared.clock)
    };
    run_timers(sleep, || {
        let mut shared = state.lock();
        let now = shared.now();
        shared.server.handle_timeout(now);
        shared.wake();
    })
    .await
}

/// Where a connection's frames go.
#[derive(Clone, Copy)]
enum Target {
    Session(u64),
    Stream(u64),
}

/// Where the frames of a session's (or a stateless request's) connection go: to the
/// machine, each with its tag.
struct Frames {
    state: State,
    target: Target,
    /// The frames of one turn, end to end, and each one's length and tag (kept for the
    /// next turn).
    buf: Vec<u8>,
    frames: Vec<(usize, u64)>,
}

impl Outbox for Frames {
    fn take(&mut self, conn: &mut Connection) {
        self.buf.clear();
        self.frames.clear();
        while let Some(frame) = conn.poll_transmit_tagged(&mut self.buf) {
            self.frames.push(frame);
        }
        if self.frames.is_empty() {
            return;
        }
        let mut shared = self.state.lock();
        let now = shared.now();
        let mut at = 0;
        for &(len, tag) in &self.frames {
            let frame = &self.buf[at..at + len];
            at += len;
            match self.target {
                Target::Session(session) => shared.server.handle_outgoing(session, frame, tag, now),
                Target::Stream(stream) => shared.server.handle_stream_output(stream, frame, now),
            }
        }
        shared.settle();
    }
}

/// Starts a connection for `target` with the server's builder; returns where its input goes.
fn start(shared: &Shared, state: &State, target: Target) -> Running {
    let frames = Frames {
        state: state.clone(),
        target,
        buf: Vec::new(),
        frames: Vec::new(),
    };
    let (engine, client, shutdown) = Engine::start(shared.builder.clone(), frames, SESSION_QUEUE);
    let ended = state.clone();
    let run = Arc::clone(&engine).run();
    tokio::spawn(async move {
        run.await;
        let mut shared = ended.lock();
        match target {
            Target::Session(session) => {
                remove_and_shrink(&mut shared.sessions, &session);
                shared.server.handle_session_closed(session);
            }
            Target::Stream(stream) => {
                remove_and_shrink(&mut shared.stateless, &stream);
            }
        }
        shared.settle();
    });
    Running {
        engine,
        shutdown,
        requests: client.local::<HttpRequests>(),
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

/// One socket's side of the server: its requests answered as the machine decides.
struct Socket {
    state: State,
    /// The client's address (the machine counts sessions per address).
    peer: Option<std::net::IpAddr>,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Answerer<S> for Socket {
    fn refusal(&self, fault: HttpFault) -> Vec<u8> {
        streamable::refusal(fault).to_bytes()
    }

    async fn answer(&self, socket: &mut S, request: Request, reader: &mut Requests) -> bool {
        let (head, body) = request;
        let state = &self.state;
        match dispatch(
            state,
            head,
            body,
            streamable::Extensions::default(),
            self.peer,
        )
        .deliver()
        .await
        {
            Dispatched::Whole(response) => write_response(socket, &response).await,
            Dispatched::Stream(writer, after) => {
                let keep = write_stream(socket, state, writer, reader).await;
                after.run();
                keep
            }
            Dispatched::Close => false,
        }
    }
}

/// What a request became: an answer to write whole, or a stream to serve (then `after`
/// runs); for the socket server here and the tower service alike.
pub(crate) enum Dispatched {
    /// Write this answer.
    Whole(streamable::Response),
    /// Serve this writer's stream until it ends, then do what [`After`] says.
    Stream(Writer, After),
    /// Nothing to answer: close the connection.
    Close,
}

/// The calls a request's body carries, as the machine read them: one or two inline.
type Ids = SmallVec<[sansrpc::Id<'static>; 2]>;

/// What is left to do once a stream's response is over (a value, not a boxed closure: no
/// allocation per request).
pub(crate) enum After {
    /// Nothing.
    Nothing,
    /// Forget the HTTP request recorded for these calls of a session.
    Forget(Arc<HttpRequests>, Ids),
    /// End the connection of the stateless request of this stream, if it still runs.
    End(State, u64),
}

impl After {
    /// Does it.
    pub(crate) fn run(self) {
        match self {
            After::Nothing => {}
            After::Forget(requests, calls) => {
                for id in &calls {
                    requests.forget(id);
                }
            }
            After::End(state, stream) => {
                if let Some(running) = remove_and_shrink(&mut state.lock().stateless, &stream) {
                    running.shutdown.shutdown(Duration::ZERO);
                }
            }
        }
    }
}

/// Hands one request to the machine and does what its verdict says (a session started,
/// the body handed to a session's connection or to a stateless request's own, the HTTP
/// request recorded for the calls' handlers, with `extensions`, a session stopped); what
/// is left to write, once the body is handed in ([`Dispatch::deliver`]). `peer` is the
/// client's address where it is known (the machine counts sessions per address,
/// `max_sessions_per_peer`).
///
/// Deciding takes no wait, so it is not part of a request's future: that future holds only
/// the delivery, not the head and body (a few hundred bytes it would move and keep for the
/// whole request).
pub(crate) fn dispatch(
    state: &State,
    mut head: Head,
    body: Vec<u8>,
    extensions: streamable::Extensions,
    peer: Option<std::net::IpAddr>,
) -> Dispatch {
    let (verdict, body, writer, principal, ids) = {
        let mut shared = state.lock();
        let now = shared.now();
        let (authorized, principal) = authorize(shared.validator.as_ref(), &head);
        // The body comes back with what the machine found in it, for the connection to
        // read rather than scan again.
        let (verdict, body) =
            shared
                .server
                .handle_request_owned(&head, body, authorized, peer, now, &mut entropy);
        // A response that writes a stream becomes its writer before anyone is woken: a
        // stream resumed while another response still writes it (a client that reconnects
        // before this side saw it go) is this response's from its first byte (its head).
        let writer = match verdict {
            Verdict::Open { stream, .. }
            | Verdict::Stateless { stream }
            | Verdict::Listen { stream } => Some(shared.writers.writer(stream)),
            _ => None,
        };
        // The calls the body carries, as the machine read them (for their handlers).
        let ids = match verdict {
            Verdict::Open { .. } | Verdict::Stateless { .. } => {
                shared.server.request_ids().iter().cloned().collect()
            }
            _ => Ids::new(),
        };
        shared.settle();
        (verdict, body, writer, principal, ids)
    };
    // What the calls' handlers see of this request; recorded only for calls it carries.
    let fields = std::mem::take(&mut head.fields);
    let request = move || http_request(principal, fields, extensions);
    match (verdict, writer) {
        (Verdict::Respond(response), _) => Dispatched::Whole(response).into(),
        (Verdict::Deliver { session, response }, _) => {
            let engine = state
                .lock()
                .sessions
                .get(&session)
                .map(|r| Arc::clone(&r.engine));
            Dispatch {
                to: engine.and_then(|engine| handing(engine, body, 0)),
                then: Dispatched::Whole(response),
            }
        }
        (
            Verdict::Open {
                session,
                stream,
                new_session,
            },
            Some(writer),
        ) => {
            let sender = {
                let mut shared = state.lock();
                // Only a new session starts a connection: a session missing here ended in
                // the meantime (a DELETE raced this POST), and its stream ends with it.
                if new_session {
                    let running = start(&shared, state, Target::Session(session));
                    shared.sessions.insert(session, running);
                }
                shared
                    .sessions
                    .get(&session)
                    .map(|r| (Arc::clone(&r.engine), Arc::clone(&r.requests)))
            };
            let Some((engine, requests)) = sender else {
                return Dispatched::Stream(writer, After::Nothing).into();
            };
            let calls = record(&requests, ids, request);
            Dispatch {
                to: handing(engine, body, stream),
                then: Dispatched::Stream(writer, After::Forget(requests, calls)),
            }
        }
        (Verdict::Stateless { stream }, Some(writer)) => {
            let sender = {
                let mut shared = state.lock();
                let running = start(&shared, state, Target::Stream(stream));
                let engine = Arc::clone(&running.engine);
                let requests = Arc::clone(&running.requests);
                shared.stateless.insert(stream, running);
                (engine, requests)
            };
            let (engine, requests) = sender;
            // The connection is this request's alone and ends with it: nothing to forget.
            record(&requests, ids, request);
            // Its one request answered (or abandoned): the connection ends.
            Dispatch {
                to: handing(engine, body, stream),
                then: Dispatched::Stream(writer, After::End(state.clone(), stream)),
            }
        }
        (Verdict::Listen { .. }, Some(writer)) => Dispatched::Stream(writer, After::Nothing).into(),
        (Verdict::Ended { session, response }, _) => {
            if let Some(running) = remove_and_shrink(&mut state.lock().sessions, &session) {
                running.shutdown.shutdown(Duration::ZERO);
            }
            Dispatched::Whole(response).into()
        }
        _ => Dispatched::Close.into(),
    }
}

/// What [`dispatch`] decided: the connection handed the body, if any (queued already, or
/// waiting for room), then what to write.
pub(crate) struct Dispatch {
    to: Option<(Arc<Engine>, Handed)>,
    then: Dispatched,
}

/// `body` handed to `engine` tagged `tag`, when the machine gave it back.
fn handing(engine: Arc<Engine>, body: Option<Scanned>, tag: u64) -> Option<(Arc<Engine>, Handed)> {
    let handed = engine.hand((body?, tag));
    Some((engine, handed))
}

impl From<Dispatched> for Dispatch {
    fn from(then: Dispatched) -> Self {
        Dispatch { to: None, then }
    }
}

impl Dispatch {
    /// Hands the message in (driving the connection here: a handler that answers at once
    /// has answered on return); what is left to write.
    pub(crate) async fn deliver(self) -> Dispatched {
        if let Some((engine, handed)) = self.to {
            engine.deliver_handed(handed).await;
        }
        self.then
    }
}

async fn write_response<S: AsyncWrite + Unpin>(
    socket: &mut S,
    response: &streamable::Response,
) -> bool {
    let mut out = Vec::new();
    response.write(&mut out);
    socket.write_all(&out).await.is_ok()
}

/// The client closed the response of `writer` before its end (nothing happens when a
/// newer response writes the stream now).
pub(crate) fn closed(state: &State, writer: &Writer) {
    let mut shared = state.lock();
    if !shared.writers.owns(writer) {
        return;
    }
    let now = shared.now();
    if shared.server.handle_stream_closed(writer.stream, now) == Closed::Cancel {
        if let Some(running) = remove_and_shrink(&mut shared.stateless, &writer.stream) {
            running.shutdown.shutdown(Duration::ZERO);
        }
    }
    shared.settle();
}

/// The machine's streams, as the drivers of their responses see them.
impl Streams for State {
    type Machine = streamable::Endpoint;
    type Head = streamable::StreamHead;
    const POLL: PollStream<streamable::Endpoint> = streamable::Endpoint::poll_stream;
    const POLL_PARTS: PollParts<streamable::Endpoint, streamable::StreamHead> =
        streamable::Endpoint::poll_stream_parts;

    fn locked<R>(&self, f: impl FnOnce(&mut streamable::Endpoint, &mut Writers) -> R) -> R {
        let shared = &mut *self.lock();
        f(&mut shared.server, &mut shared.writers)
    }

    fn closed(&self, writer: &Writer) {
        closed(self, writer);
    }
}

/// What the handlers of a request's calls see of it: the principal, the header `fields`
/// (as [`Headers::from_fields`](streamable::Headers::from_fields) gives them: moved, not
/// copied), and what a layer in front of the server attached to it.
fn http_request(
    principal: Option<Principal>,
    fields: Fields,
    extensions: streamable::Extensions,
) -> Arc<HttpRequest> {
    Arc::new(HttpRequest {
        principal,
        headers: streamable::Headers::from_fields(fields),
        extensions,
    })
}

/// Records the HTTP request for each call the machine read in the request's body
/// (`ids`, from [`streamable::Endpoint::request_ids`]); the ids recorded.
fn record(requests: &HttpRequests, ids: Ids, request: impl FnOnce() -> Arc<HttpRequest>) -> Ids {
    if ids.is_empty() {
        return ids;
    }
    let request = request();
    ids.into_iter()
        .filter(|id| requests.record(id, Arc::clone(&request)))
        .collect()
}
