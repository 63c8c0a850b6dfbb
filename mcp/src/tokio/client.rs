//! An MCP client over Streamable HTTP (the 2025-11-25 session revision): each message the
//! connection sends is a POST; the answers come back as one JSON body or as Server-Sent
//! Events (decoded with the core's [`sansrpc::codec::sse`]), messages for no request on
//! the session's GET stream; the session id and protocol version go on every request once
//! `initialize` set them; a dropped event stream is resumed with `Last-Event-ID` after the
//! server's `retry` delay; closing ends the session (DELETE). Requests the server sends
//! (sampling, elicitation, roots) reach your [`Builder`]'s router, and their answers are
//! POSTed back.
//!
//! Every one of those rules is the sans-I/O machine's
//! ([`streamable::client::HttpClient`](crate::streamable::client::HttpClient)); this driver
//! sends the requests it decides over hyper, hands it each answer's head and body, applies
//! the credentials, and sleeps until its deadlines.
//!
//! `https://` URLs are served over rustls: [`connect`] trusts the Mozilla root
//! certificates, [`Connect::tls`](super::Connect::tls) the roots of a config you give (a
//! private CA, a self-signed certificate, or the system's store). The connections are made
//! the way the JSON-RPC HTTP client makes its own (`http::connect`), TCP then TLS. The
//! headers and credentials of [`Connect`](super::Connect) (a static header, a bearer token,
//! OAuth 2.1) go on every request: the POSTs, the GET stream and its resumptions, the
//! `DELETE`; a 401 or 403 goes to the credentials, which may refresh, authorize or step up
//! before the request is sent again.
//!
//! A request that could not reach the server (the connection refused, a TLS failure, an
//! authorization that failed) ends its call with `EndReason::Unanswered`, and its cause is
//! kept for the call's error: the typed client fails it with
//! [`ClientError::Transport`](crate::client::ClientError::Transport) (TLS with rustls'
//! reason and the host, the address refused, the OAuth step and the server's `error`);
//! [`last_failure`] gives it to other callers.
//!
//! On the stateless revision (2026-07-28) the `_meta` of each request gives its
//! `MCP-Protocol-Version`, and every POST carries `Mcp-Method` (and `Mcp-Name` where the
//! request names something). A `tools/call` also carries the `Mcp-Param-*` headers of the
//! tool's `x-mcp-header` arguments (SEP-2243) when the connection was made with
//! [`Connect::headers_for`](super::Connect::headers_for) and the typed client's
//! `ParamHeaders`. Cancelling a 2026-07-28
//! request (`notifications/cancelled`, as when its call is dropped) closes its POST's
//! response stream instead of POSTing the notification: on that revision closing the stream
//! is how a client cancels over HTTP (a `subscriptions/listen` is forgotten by the server).
//!
//! ```no_run
//! use sansrpc::connection::{Config, Profile};
//! use sansrpc_tokio::Builder;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let builder = Builder::new().config(Config::for_profile(Profile::Mcp));
//! let conn = sansrpc_mcp::tokio::connect("http://127.0.0.1:3000/mcp", builder)?;
//! let params = sansrpc::RawValue::from_json(
//!     r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"me","version":"1"}}"#,
//! )?;
//! let init = conn.client.call_raw("initialize", Some(params)).await?;
//! conn.client.notify_raw("notifications/initialized", None).await?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};

use crate::client::TransportFailures;
use crate::streamable::client::{ClientConfig, ClientRequest, ExchangeFailure, HandedOver};
use crate::streamable::client::{HttpClient, AUTH_RESENDS};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Bytes;
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION, WWW_AUTHENTICATE};
use hyper::{Method, Request, Uri};
use hyper_util::rt::TokioExecutor;
use sansrpc::codec::http::HttpMethod;
use sansrpc::Connection;
use sansrpc::Instant;
use sansrpc_oauth::driver::{CredentialProvider, Retry};
use tokio::sync::Notify;
use tokio::time::Sleep;

use sansrpc_tokio::host::{Dial, HttpTarget as Target};
use sansrpc_tokio::{Builder, Received, Transport};

/// A request's body.
type Body = http_body_util::combinators::BoxBody<Bytes, hyper::Error>;

type Http = hyper_util::client::legacy::Client<Dial, Body>;

/// The session of a connection [`connect`] made, as the connection's handles see it
/// ([`session_id`]).
#[derive(Default)]
struct SessionOf(OnceLock<Arc<Shared>>);

/// The `Mcp-Session-Id` the connection's requests carry now (the server's answer to the
/// last `initialize` set it), or `None` before a session started, on the stateless
/// revision, for a server without sessions, or for a connection [`connect`] did not make.
/// It changes when the typed client (`sansrpc_mcp::client::McpClient`) starts a new session
/// after the server lost the old one (HTTP 404).
pub fn session_id(client: &sansrpc_tokio::Client) -> Option<String> {
    let of = client.local::<SessionOf>();
    let shared = of.0.get()?;
    let state = shared.state();
    state.machine.session_id().map(str::to_owned)
}

pub(super) use crate::streamable::client::ExtraHeaders;

/// What the connection's transport and its exchanges share: the machine
/// ([`HttpClient`]) deciding every request and reading every answer, and what moves bytes.
struct Shared {
    http: Http,
    uri: Uri,
    /// Asked for the extra headers of each `tools/call` (see
    /// [`Connect::headers_for`](super::Connect::headers_for)).
    extra: Option<Arc<ExtraHeaders>>,
    /// Each request's `Authorization`, and what to do with a 401 or 403.
    credentials: Option<Arc<dyn CredentialProvider>>,
    /// Where the causes of the exchanges that could not be made are told.
    failures: Arc<OnceLock<Arc<TransportFailures>>>,
    /// The machine's clock: its instants are the time since this.
    start: tokio::time::Instant,
    state: Mutex<State>,
    /// Told when the connection took messages: a body read waits on it while the machine
    /// is backed up (a server that floods waits on its stream).
    room: Notify,
}

struct State {
    machine: HttpClient,
    /// The exchanges under way, to drop one the machine no longer wants.
    exchanges: std::collections::HashMap<u64, tokio::task::AbortHandle>,
    /// The transport's task, woken when the machine has events or a new deadline.
    waker: Option<Waker>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> Instant {
        Instant::from_duration(self.start.elapsed())
    }

    /// After any input: sends the requests the machine gives, drops the exchanges it no
    /// longer wants, and wakes the transport for its events and deadline.
    fn pump(self: &Arc<Self>, state: &mut State) {
        while let Some(request) = state.machine.poll_request() {
            let exchange = request.exchange;
            let task = tokio::spawn(run(Arc::clone(self), request));
            state.exchanges.insert(exchange, task.abort_handle());
        }
        while let Some(exchange) = state.machine.poll_abort() {
            if let Some(task) = state.exchanges.remove(&exchange) {
                task.abort();
            }
        }
        if let Some(waker) = &state.waker {
            waker.wake_by_ref();
        }
    }
}

/// Connects to the Streamable HTTP MCP endpoint at `url` (`http://`, or `https://` trusting
/// the Mozilla root certificates) and spawns the connection's driver on the current tokio
/// runtime; nothing is sent until you call `initialize`. [`Connect`](super::Connect) says
/// more: the certificates to trust, headers and credentials on every request, the per-call
/// headers of SEP-2243.
pub fn connect(url: &str, builder: Builder) -> io::Result<sansrpc_tokio::Spawned> {
    super::Connect::new(url).connect(builder)
}

/// The reason the transport gave for the last exchange it could not make on `client`'s
/// connection (the connection refused, a TLS failure, an authorization that failed), for a
/// call that ended with
/// [`EndReason::Unanswered`](sansrpc::connection::EndReason::Unanswered) on a connection
/// [`connect`] made; the typed client (`sansrpc_mcp::client::McpClient`) gives it in its error by itself
/// ([`ClientError::Transport`](crate::client::ClientError::Transport)).
pub fn last_failure(
    client: &sansrpc_tokio::Client,
) -> Option<Arc<dyn std::error::Error + Send + Sync>> {
    client.local::<TransportFailures>().last()
}

/// What [`Connect`](super::Connect) gives [`open`].
pub(super) struct Settings {
    pub(super) tls: Tls,
    pub(super) headers: Vec<(HeaderName, HeaderValue)>,
    pub(super) credentials: Option<Arc<dyn CredentialProvider>>,
    pub(super) per_frame: Option<Arc<ExtraHeaders>>,
}

type Tls = Option<Arc<sansrpc_tokio::tls::rustls::ClientConfig>>;

pub(super) fn open(
    url: &str,
    builder: Builder,
    settings: Settings,
) -> io::Result<sansrpc_tokio::Spawned> {
    let uri: Uri = url
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let target = Target::of(url, settings.tls)?;
    let http = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build(Dial(Arc::new(target)));
    let config = ClientConfig {
        credentials: settings.credentials.is_some(),
        headers: settings
            .headers
            .iter()
            .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect(),
        ..ClientConfig::default()
    };
    // The connection's record of failures, where its clients read them: set once spawned,
    // before any request can go out.
    let failures: Arc<OnceLock<Arc<TransportFailures>>> = Arc::default();
    let shared = Arc::new(Shared {
        http,
        uri,
        extra: settings.per_frame,
        credentials: settings.credentials,
        failures: Arc::clone(&failures),
        start: tokio::time::Instant::now(),
        state: Mutex::new(State {
            machine: HttpClient::new(config),
            exchanges: Default::default(),
            waker: None,
        }),
        room: Notify::new(),
    });
    let transport = Messages {
        shared: Arc::clone(&shared),
        held: None,
        buf: Vec::new(),
        timer: None,
        closing: false,
    };
    let spawned = sansrpc_tokio::spawn(builder, transport);
    // The typed client's last handle ends the session (DELETE) when it goes.
    spawned
        .client
        .local::<sansrpc_tokio::CloseWithSession>()
        .set();
    let _ = spawned.client.local::<SessionOf>().0.set(shared);
    let _ = failures.set(spawned.client.local::<TransportFailures>());
    Ok(spawned)
}

/// The connection's transport: frames into the machine, its messages out to the
/// connection; it sleeps until the machine's next deadline.
struct Messages {
    shared: Arc<Shared>,
    held: Option<Vec<u8>>,
    buf: Vec<u8>,
    /// Until the machine's next deadline.
    timer: Option<Pin<Box<Sleep>>>,
    closing: bool,
}

/// The connection is over: its exchanges still under way go with it (a GET stream the
/// server keeps open after refusing the session's `DELETE` held its socket, its task and
/// this state for ever).
impl Drop for Messages {
    fn drop(&mut self) {
        let mut state = self.shared.state();
        for (_, exchange) in state.exchanges.drain() {
            exchange.abort();
        }
    }
}

impl Messages {
    /// Runs the machine's timers due, and arms the sleep until its next deadline.
    fn poll_timer(&mut self, cx: &mut Context<'_>, state: &mut State) {
        loop {
            let Some(at) = state.machine.poll_timeout() else {
                self.timer = None;
                return;
            };
            let now = self.shared.now();
            if at <= now {
                state.machine.handle_timeout(now);
                self.shared.pump(state);
                continue;
            }
            let deadline = self.shared.start + at.since_epoch();
            match &mut self.timer {
                Some(timer) if timer.deadline() == deadline => {}
                Some(timer) => timer.as_mut().reset(deadline),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
            if let Some(timer) = &mut self.timer {
                if timer.as_mut().poll(cx).is_pending() {
                    return;
                }
            }
        }
    }
}

impl Transport for Messages {
    fn is_message_based(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        let shared = Arc::clone(&self.shared);
        let mut state = shared.state();
        state.waker = Some(cx.waker().clone());
        self.poll_timer(cx, &mut state);
        let failures = shared.failures.get();
        let record = |fault| {
            if let Some(failures) = failures {
                failures.record(Arc::new(fault));
            }
        };
        match state.machine.hand_over(conn, &mut self.held, now, record) {
            HandedOver::Taken => {
                shared.room.notify_waiters();
                Poll::Ready(Ok(Received::Data))
            }
            HandedOver::Stalled => Poll::Ready(Ok(Received::Stalled)),
            HandedOver::Nothing => Poll::Pending,
        }
    }

    fn poll_transmit(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        let mut state = self.shared.state();
        let now = self.shared.now();
        let extra = self.shared.extra.as_deref();
        if state.machine.send_queued(conn, &mut self.buf, extra, now) {
            self.shared.pump(&mut state);
        }
        Poll::Ready(Ok(()))
    }

    /// Ends the session with `DELETE` (when there is one) and waits for the answer, at
    /// most the machine's `close_wait`.
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let shared = Arc::clone(&self.shared);
        let mut state = shared.state();
        state.waker = Some(cx.waker().clone());
        if !std::mem::replace(&mut self.closing, true) {
            state.machine.close(shared.now());
            shared.pump(&mut state);
        }
        self.poll_timer(cx, &mut state);
        if state.machine.is_closed() {
            return Poll::Ready(Ok(()));
        }
        Poll::Pending
    }
}

/// Why [`send`] gave no response.
enum Failure {
    /// No connection could be made (refused, no route, TLS), or the request could not be
    /// built: nothing reached the server.
    Unsent(Arc<dyn std::error::Error + Send + Sync>),
    /// The authorization failed (or the server refused the static token): the OAuth error,
    /// and the status the server answered the request with (401 or 403) if it did.
    Unauthorized(Arc<sansrpc_oauth::Error>, Option<u16>),
    /// The exchange failed after the request went out.
    Cut,
}

/// One exchange the machine asked for: the request sent, its answer's head, body and end
/// (or failure) handed back to the machine.
async fn run(shared: Arc<Shared>, request: ClientRequest) {
    let exchange = request.exchange;
    let response = match send(&shared, &request).await {
        Ok(response) => response,
        Err(failure) => {
            let (kind, cause): (_, Option<Arc<dyn std::error::Error + Send + Sync>>) = match failure
            {
                Failure::Unsent(cause) => (ExchangeFailure::Unsent, Some(cause)),
                Failure::Unauthorized(error, status) => {
                    (ExchangeFailure::Unauthorized(status), Some(error))
                }
                Failure::Cut => (ExchangeFailure::Cut, None),
            };
            let mut state = shared.state();
            let now = shared.now();
            if state.machine.handle_failure(exchange, kind, now) {
                if let (Some(cause), Some(failures)) = (cause, shared.failures.get()) {
                    failures.record(cause);
                }
            }
            state.exchanges.remove(&exchange);
            shared.pump(&mut state);
            return;
        }
    };
    {
        let mut state = shared.state();
        let fields = response
            .headers()
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_bytes()));
        let status = response.status().as_u16();
        state
            .machine
            .handle_head(exchange, status, fields, shared.now());
        shared.pump(&mut state);
    }
    let mut body = response.into_body();
    loop {
        // A server that floods waits on its stream until the connection took messages.
        loop {
            let room = shared.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            if !shared.state().machine.is_backed_up() {
                break;
            }
            room.await;
        }
        let frame = body.frame().await;
        let mut state = shared.state();
        let now = shared.now();
        match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    state.machine.handle_body(exchange, &data, now);
                }
                shared.pump(&mut state);
                continue;
            }
            Some(Err(_)) => {
                state
                    .machine
                    .handle_failure(exchange, ExchangeFailure::Cut, now);
            }
            None => state.machine.handle_end(exchange, now),
        }
        state.exchanges.remove(&exchange);
        shared.pump(&mut state);
        return;
    }
}

/// Sends one request the machine decided, with the connection's credentials: a 401 or 403
/// goes to them, which may refresh, authorize or step up; the request is then sent again.
async fn send(
    shared: &Shared,
    request: &ClientRequest,
) -> Result<hyper::Response<hyper::body::Incoming>, Failure> {
    let body = request.body.clone().map(Bytes::from);
    let mut resends = 0;
    loop {
        let authorization = match &shared.credentials {
            Some(credentials) => credentials
                .authorization()
                .await
                .map_err(|e| Failure::Unauthorized(Arc::new(e), None))?,
            None => None,
        };
        let built = build(shared, request, body.clone(), authorization.as_deref())
            .map_err(|e| Failure::Unsent(Arc::new(e)))?;
        let response = match shared.http.request(built).await {
            Ok(response) => response,
            Err(e) if e.is_connect() => return Err(Failure::Unsent(Arc::new(e))),
            Err(_) => return Err(Failure::Cut),
        };
        let Some(credentials) = &shared.credentials else {
            return Ok(response);
        };
        let status = response.status().as_u16();
        let challenges: Vec<&str> = match status {
            401 | 403 => response
                .headers()
                .get_all(WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect(),
            _ => Vec::new(),
        };
        let retry = credentials
            .on_response(status, &challenges, authorization.as_deref())
            .await
            .map_err(|e| Failure::Unauthorized(Arc::new(e), Some(status)))?;
        if retry == Retry::No || resends == AUTH_RESENDS {
            return Ok(response);
        }
        resends += 1;
    }
}

/// The hyper request of what the machine decided, with `authorization`.
fn build(
    shared: &Shared,
    request: &ClientRequest,
    body: Option<Bytes>,
    authorization: Option<&str>,
) -> Result<Request<Body>, hyper::http::Error> {
    let method = match request.method {
        HttpMethod::Get => Method::GET,
        HttpMethod::Delete => Method::DELETE,
        _ => Method::POST,
    };
    let mut built = Request::builder().method(method).uri(shared.uri.clone());
    for (name, value) in &request.headers {
        built = built.header(name.as_ref(), value.as_str());
    }
    if let Some(authorization) = authorization {
        built = built.header(AUTHORIZATION, authorization);
    }
    let body = match body {
        Some(b) => Full::new(b).map_err(|e| match e {}).boxed(),
        None => Empty::new().map_err(|e| match e {}).boxed(),
    };
    built.body(body)
}
