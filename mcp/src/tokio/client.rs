//! An MCP client over Streamable HTTP (the 2025-11-25 session revision): each message the
//! connection sends is a POST; the answers come back as one JSON body or as Server-Sent
//! Events (decoded with the core's [`sansrpc::codec::sse`]), messages for no request on
//! the session's GET stream; the session id and protocol version go on every request once
//! `initialize` set them; a dropped event stream is resumed with `Last-Event-ID` after the
//! server's `retry` delay; closing ends the session (DELETE). Requests the server sends
//! (sampling, elicitation, roots) reach your [`Builder`]'s router, and their answers are
//! POSTed back.
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

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::client::TransportFailures;
use crate::streamable::encode_header_value;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Bytes;
use hyper::header::{
    HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use hyper::{Method, Request, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo};
use sansrpc::codec::sse;
use sansrpc::connection::EndReason;
use sansrpc::Connection;
use sansrpc::Instant;
use sansrpc_oauth::driver::{CredentialProvider, Retry};
use tokio::sync::mpsc;

use sansrpc_tokio::host::{HttpStream as Stream, HttpTarget as Target};
use sansrpc_tokio::{BoxFuture, Builder, Received, Transport};

/// A request's body.
type Body = http_body_util::combinators::BoxBody<Bytes, hyper::Error>;

type Http = hyper_util::client::legacy::Client<Dial, Body>;

/// Makes the HTTP client's connections: TCP to the endpoint's host, and TLS over it for
/// `https://`, as the JSON-RPC HTTP client makes its own ([`Target`]).
#[derive(Clone)]
struct Dial(Arc<Target>);

impl tower_service::Service<Uri> for Dial {
    type Response = TokioIo<Stream>;
    type Error = io::Error;
    type Future = BoxFuture<io::Result<TokioIo<Stream>>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Uri) -> Self::Future {
        let connecting = self.0.connect();
        Box::pin(async move { connecting.await.map(TokioIo::new) })
    }
}

/// Messages received and not yet taken by the connection.
const INCOMING: usize = 256;

/// What the POSTs hand to the connection, in the order it happened.
enum Incoming {
    /// A message from the server.
    Message(Vec<u8>),
    /// A POST of this frame ended: its requests still waiting end
    /// ([`Connection::end_unanswered`]) with the HTTP status that came instead of their
    /// answers, or `None` when the exchange failed or was cut before them.
    Ended(Vec<u8>, Option<u16>),
}

/// The session of a connection [`connect`] made, as the connection's handles see it
/// ([`session_id`]).
#[derive(Default)]
struct SessionOf(std::sync::OnceLock<Arc<Mutex<Session>>>);

/// The `Mcp-Session-Id` the connection's requests carry now (the server's answer to the
/// last `initialize` set it), or `None` before a session started, on the stateless
/// revision, for a server without sessions, or for a connection [`connect`] did not make.
/// It changes when the typed client (`sansrpc_mcp::client::McpClient`) starts a new session
/// after the server lost the old one (HTTP 404).
pub fn session_id(client: &sansrpc_tokio::Client) -> Option<String> {
    let of = client.local::<SessionOf>();
    let session = of.0.get()?;
    let id = session.lock().unwrap_or_else(|e| e.into_inner()).id.clone();
    id
}
/// Times a dropped event stream is resumed before its messages are given up.
const RESUMES: u32 = 5;

/// What every request of the session carries.
#[derive(Default, Debug)]
struct Session {
    id: Option<String>,
    version: Option<String>,
    /// The revision the last request named itself (2026-07-28: `_meta`), for what names
    /// none (`notifications/cancelled`), when no session settled one.
    named: Option<String>,
    /// The GET stream was opened.
    listening: bool,
}

/// The extra headers of a `tools/call` POST, from its frame.
pub(super) type ExtraHeaders = dyn Fn(&[u8]) -> Vec<(String, String)> + Send + Sync;

#[derive(Clone)]
struct Shared {
    http: Http,
    /// Asked for the extra headers of each `tools/call` (see
    /// [`Connect::headers_for`](super::Connect::headers_for)).
    extra: Option<Arc<ExtraHeaders>>,
    /// On every request ([`Connect::header`](super::Connect::header)).
    headers: Arc<Vec<(HeaderName, HeaderValue)>>,
    /// Each request's `Authorization`, and what to do with a 401 or 403.
    credentials: Option<Arc<dyn CredentialProvider>>,
    /// Where the causes of the exchanges that could not be made are told.
    failures: Arc<OnceLock<Arc<TransportFailures>>>,
    uri: Uri,
    session: Arc<Mutex<Session>>,
    /// Messages for the connection: bounded, so a server that floods waits on its stream.
    incoming: mpsc::Sender<Incoming>,
    /// False from the moment `notifications/initialized` is sent until the session's GET
    /// stream has its answer's head (or failed): the POSTs behind wait, so a server that
    /// sends its requests on the GET stream (as the TypeScript SDK does when a handler asks
    /// the client something) finds it open.
    listening: Arc<tokio::sync::watch::Sender<bool>>,
    /// The POSTs of the 2026-07-28 requests still open, by request id (its JSON text): a
    /// `notifications/cancelled` for one aborts it, which closes its stream.
    stateless: Arc<Mutex<HashMap<String, tokio::task::AbortHandle>>>,
}

impl Shared {
    fn open_posts(&self) -> std::sync::MutexGuard<'_, HashMap<String, tokio::task::AbortHandle>> {
        self.stateless.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The longest closing waits for the answer to the session's `DELETE`.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// The longest the POSTs wait for the session's GET stream to open, in all.
const LISTEN_WAIT: Duration = Duration::from_secs(10);

/// Opens the gate of [`Shared::listening`] when dropped: on every way out of opening the
/// GET stream.
struct OpenOnDrop(Arc<tokio::sync::watch::Sender<bool>>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

/// What a frame the connection sends is: its method, whether it waits for an answer, and
/// what its POST's headers say of it.
#[derive(Debug, Default)]
struct Frame {
    method: Option<String>,
    request: bool,
    /// `Mcp-Name`: the tool or prompt name, or the resource URI, of `tools/call`,
    /// `prompts/get` and `resources/read`.
    name: Option<String>,
    /// The revision its `_meta` names (2026-07-28 requests carry it in every request).
    version: Option<String>,
    /// Extra headers (the `Mcp-Param-*` of a `tools/call`): empty, unallocated, for most.
    extra: Vec<(String, String)>,
    /// A request's id (JSON text).
    id: Option<String>,
    /// The `requestId` (JSON text) of a `notifications/cancelled`.
    cancels: Option<String>,
}

fn sent(frame: &[u8]) -> Frame {
    #[derive(serde::Deserialize)]
    struct Sent {
        method: Option<String>,
        id: Option<Box<serde_json::value::RawValue>>,
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        name: Option<String>,
        uri: Option<String>,
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
        #[serde(rename = "requestId")]
        request_id: Option<Box<serde_json::value::RawValue>>,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
        version: Option<String>,
    }
    let Ok(sent) = serde_json::from_slice::<Sent>(frame) else {
        // A batch (or what does not parse) waits for its answers.
        return Frame {
            request: frame.first() == Some(&b'['),
            ..Frame::default()
        };
    };
    let request = sent.method.is_some() && sent.id.is_some();
    let named = matches!(
        sent.method.as_deref(),
        Some("tools/call" | "prompts/get" | "resources/read")
    );
    let cancelled = sent.method.as_deref() == Some("notifications/cancelled");
    let (name, version, cancels) = match sent.params {
        Some(p) => (
            if named { p.name.or(p.uri) } else { None },
            p.meta.and_then(|m| m.version),
            p.request_id
                .filter(|_| cancelled)
                .map(|id| id.get().to_owned()),
        ),
        None => (None, None, None),
    };
    Frame {
        method: sent.method,
        request,
        name,
        version,
        extra: Vec::new(),
        id: sent.id.filter(|_| request).map(|id| id.get().to_owned()),
        cancels,
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
/// call that ended with [`EndReason::Unanswered`] on a connection [`connect`] made; the
/// typed client (`sansrpc_mcp::client::McpClient`) gives it in its error by itself
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
    let (incoming, rx) = mpsc::channel(INCOMING);
    let session: Arc<Mutex<Session>> = Arc::default();
    // The connection's record of failures, where its clients read them: set once spawned,
    // before any request can go out.
    let failures: Arc<OnceLock<Arc<TransportFailures>>> = Arc::default();
    let transport = Messages {
        shared: Shared {
            http,
            extra: settings.per_frame,
            headers: Arc::new(settings.headers),
            credentials: settings.credentials,
            failures: Arc::clone(&failures),
            uri,
            session: Arc::clone(&session),
            incoming,
            listening: Arc::new(tokio::sync::watch::Sender::new(true)),
            stateless: Arc::default(),
        },
        rx,
        held: None,
        buf: Vec::new(),
        closing: None,
    };
    let spawned = sansrpc_tokio::spawn(builder, transport);
    // The typed client's last handle ends the session (DELETE) when it goes.
    spawned
        .client
        .local::<sansrpc_tokio::CloseWithSession>()
        .set();
    let _ = spawned.client.local::<SessionOf>().0.set(session);
    let _ = failures.set(spawned.client.local::<TransportFailures>());
    Ok(spawned)
}

/// The connection's transport: frames out as POSTs, messages in from their answers.
struct Messages {
    shared: Shared,
    rx: mpsc::Receiver<Incoming>,
    held: Option<Vec<u8>>,
    buf: Vec<u8>,
    /// The session's `DELETE`, once the connection closes.
    closing: Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
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
        if self.held.is_none() {
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(Incoming::Message(message))) => self.held = Some(message),
                Poll::Ready(Some(Incoming::Ended(frame, status))) => {
                    conn.end_unanswered(&frame, EndReason::Unanswered { status }, now);
                    return Poll::Ready(Ok(Received::Data));
                }
                Poll::Ready(None) => {
                    conn.handle_end_of_input(now);
                    return Poll::Ready(Ok(Received::End));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        let message = self.held.take().expect("a message");
        if conn.handle_message(&message, now).is_err() {
            self.held = Some(message);
            return Poll::Ready(Ok(Received::Stalled));
        }
        Poll::Ready(Ok(Received::Data))
    }

    fn poll_transmit(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        self.buf.clear();
        while let Some(len) = conn.poll_transmit(&mut self.buf) {
            let frame = self.buf.split_off(self.buf.len() - len);
            let mut described = sent(&frame);
            if let Some(extra) = &self.shared.extra {
                described.extra = extra(&frame);
            }
            if described.method.as_deref() == Some("initialize") {
                // A new session starts (the first, or one after the server lost the last):
                // its `notifications/initialized` opens its own GET stream.
                self.shared
                    .session
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .listening = false;
            }
            let opens = described.method.as_deref() == Some("notifications/initialized") && {
                let mut session = self
                    .shared
                    .session
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                !std::mem::replace(&mut session.listening, true)
            };
            if opens {
                // Closed here, before any later frame is posted; the POST of this
                // notification opens the GET stream and the gate, which opens by itself
                // after LISTEN_WAIT (a server that never answers holds nothing longer).
                self.shared.listening.send_replace(false);
                let gate = OpenOnDrop(Arc::clone(&self.shared.listening));
                tokio::spawn(async move {
                    tokio::time::sleep(LISTEN_WAIT).await;
                    drop(gate);
                });
            }
            if let Some(id) = &described.cancels {
                let open = self.shared.open_posts().remove(id);
                if let Some(post) = open {
                    // A 2026-07-28 request: closing its stream cancels it.
                    post.abort();
                    continue;
                }
            }
            match described.id.clone().filter(|_| described.version.is_some()) {
                Some(id) => {
                    // Held while the POST starts: it takes itself out when done, after this.
                    let mut open = self.shared.open_posts();
                    let shared = self.shared.clone();
                    let key = id.clone();
                    let task = tokio::spawn(async move {
                        post(shared.clone(), frame, described, opens).await;
                        shared.open_posts().remove(&id);
                    });
                    open.insert(key, task.abort_handle());
                }
                None => {
                    tokio::spawn(post(self.shared.clone(), frame, described, opens));
                }
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Ends the session with `DELETE` (when there is one) and waits for the answer, at
    /// most [`CLOSE_WAIT`].
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let closing = self.closing.get_or_insert_with(|| {
            let shared = self.shared.clone();
            let session = shared
                .session
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .id
                .is_some();
            Box::pin(async move {
                if session {
                    let delete = send(&shared, Method::DELETE, None, None, None);
                    let _ = tokio::time::timeout(CLOSE_WAIT, delete).await;
                }
            })
        });
        closing.as_mut().poll(cx).map(Ok)
    }
}

/// What [`send`] gives: the response, and the session id the request carried.
type Sent = (hyper::Response<hyper::body::Incoming>, Option<String>);

/// The most times one request is sent again after its credentials changed (a refresh, an
/// authorization, a step-up); the authorizer has its own, smaller, limits.
const AUTH_RESENDS: usize = 8;

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

impl Failure {
    /// Tells the connection's clients why (for the failures that have a cause to tell);
    /// the status to end the request's calls with.
    fn tell(self, shared: &Shared) -> Option<u16> {
        let (cause, status): (Arc<dyn std::error::Error + Send + Sync>, _) = match self {
            Failure::Unsent(cause) => (cause, None),
            // Not a lost answer: the typed client must not send it again (that would run
            // the failed authorization again).
            Failure::Unauthorized(error, status) => (error, Some(status.unwrap_or(401))),
            Failure::Cut => return None,
        };
        if let Some(failures) = shared.failures.get() {
            failures.record(cause);
        }
        status
    }
}

/// One request to the endpoint with the session's headers (an `initialize` starts a new
/// session: it carries no session id), the connection's own headers and its credentials.
/// A 401 or 403 goes to the credentials, which may refresh, authorize or step up: the
/// request is then sent again.
async fn send(
    shared: &Shared,
    method: Method,
    body: Option<Bytes>,
    frame: Option<&Frame>,
    last_event_id: Option<&str>,
) -> Result<Sent, Failure> {
    let mut resends = 0;
    loop {
        let authorization = match &shared.credentials {
            Some(credentials) => credentials
                .authorization()
                .await
                .map_err(|e| Failure::Unauthorized(Arc::new(e), None))?,
            None => None,
        };
        let (request, carried) = request(
            shared,
            &method,
            body.clone(),
            frame,
            last_event_id,
            authorization.as_deref(),
        )
        .map_err(|e| Failure::Unsent(Arc::new(e)))?;
        let response = match shared.http.request(request).await {
            Ok(response) => response,
            Err(e) if e.is_connect() => return Err(Failure::Unsent(Arc::new(e))),
            Err(_) => return Err(Failure::Cut),
        };
        let Some(credentials) = &shared.credentials else {
            return Ok((response, carried));
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
            return Ok((response, carried));
        }
        resends += 1;
    }
}

/// The request [`send`] sends, and the session id it carries.
fn request(
    shared: &Shared,
    method: &Method,
    body: Option<Bytes>,
    frame: Option<&Frame>,
    last_event_id: Option<&str>,
    authorization: Option<&str>,
) -> Result<(Request<Body>, Option<String>), hyper::http::Error> {
    let mut request = Request::builder()
        .method(method.clone())
        .uri(shared.uri.clone());
    if let Some(headers) = request.headers_mut() {
        for (name, value) in shared.headers.iter() {
            headers.append(name.clone(), value.clone());
        }
    }
    request = match *method {
        Method::GET => request.header(ACCEPT, "text/event-stream"),
        _ => request
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json"),
    };
    if let Some(authorization) = authorization {
        request = request.header(AUTHORIZATION, authorization);
    }
    let initialize = frame.is_some_and(|f| f.method.as_deref() == Some("initialize"));
    let carried = {
        let mut session = shared.session.lock().unwrap_or_else(|e| e.into_inner());
        let carried = session.id.clone().filter(|_| !initialize);
        if let Some(id) = &carried {
            request = request.header("mcp-session-id", id.as_str());
        }
        // A 2026-07-28 request names its revision itself; a session's was settled at
        // initialize; a notification on the stateless revision goes with the revision
        // its requests named (without it, the server refuses it).
        let named = frame.and_then(|f| f.version.clone());
        if named.is_some() {
            session.named.clone_from(&named);
        }
        let version = named
            .or_else(|| session.version.clone())
            .or_else(|| session.named.clone());
        if let Some(version) = version {
            request = request.header("mcp-protocol-version", version.as_str());
        }
        carried
    };
    // The standard headers (SEP-2243): the method, and the name of what it acts on.
    if let Some(frame) = frame {
        if let Some(method) = &frame.method {
            request = request.header("mcp-method", encode_header_value(method));
        }
        if let Some(name) = &frame.name {
            request = request.header("mcp-name", encode_header_value(name));
        }
        for (name, value) in &frame.extra {
            request = request.header(name.as_str(), value.as_str());
        }
    }
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let body = match body {
        Some(b) => Full::new(b).map_err(|e| match e {}).boxed(),
        None => Empty::new().map_err(|e| match e {}).boxed(),
    };
    Ok((request.body(body)?, carried))
}

/// The server asks for credentials the connection was not given: said once, for the call's
/// error.
#[derive(Debug)]
struct CredentialsNeeded {
    status: u16,
    challenge: Option<String>,
}

impl std::fmt::Display for CredentialsNeeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server answered {} and asks for authorization",
            self.status
        )?;
        if let Some(challenge) = &self.challenge {
            write!(f, " (WWW-Authenticate: {challenge})")?;
        }
        f.write_str(
            "; the connection has no credentials: give it some (Connect::bearer, Connect::oauth)",
        )
    }
}

impl std::error::Error for CredentialsNeeded {}

/// Ends the requests of `frame` still waiting, with `status` (see [`Incoming::Ended`]).
async fn ended(shared: &Shared, frame: Bytes, status: Option<u16>) {
    let _ = shared
        .incoming
        .send(Incoming::Ended(frame.to_vec(), status))
        .await;
}

/// POSTs one frame and hands on what comes back. The POST of `notifications/initialized`
/// (`opens`) then opens the session's GET stream; the others wait until it is open.
///
/// A request's POST ends its calls still waiting when it is over ([`Incoming::Ended`]): with
/// `404` when it carried a session id the server does not know (the server did not run it;
/// its body, an error with no id, is not handed on), with `None` when it could not be sent
/// or its answer was cut off (the server may or may not have run it), with the status
/// otherwise.
async fn post(shared: Shared, frame: Vec<u8>, described: Frame, opens: bool) {
    let gate = opens.then(|| OpenOnDrop(shared.listening.clone()));
    if !opens {
        let mut open = shared.listening.subscribe();
        let _ = tokio::time::timeout(LISTEN_WAIT, open.wait_for(|open| *open)).await;
    }
    let frame = Bytes::from(frame);
    let kept = described.request.then(|| frame.clone());
    let sent = send(&shared, Method::POST, Some(frame), Some(&described), None).await;
    let (response, carried) = match sent {
        Ok(sent) => sent,
        Err(failure) => {
            if let Some(frame) = kept {
                let status = failure.tell(&shared);
                ended(&shared, frame, status).await;
            }
            return;
        }
    };
    let status = response.status();
    let challenge = response
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok());
    let unauthorized = status == hyper::StatusCode::UNAUTHORIZED
        || status == hyper::StatusCode::FORBIDDEN && challenge.is_some();
    if let (Some(frame), None, true) = (&kept, &shared.credentials, unauthorized) {
        // Without credentials the answer is all there is: the call fails saying what the
        // server asks for (its body, an error with no id, would say only "Unauthorized").
        let needed = CredentialsNeeded {
            status: status.as_u16(),
            challenge: challenge.map(str::to_owned),
        };
        if let Some(failures) = shared.failures.get() {
            failures.record(Arc::new(needed));
        }
        let frame = frame.clone();
        let _ = response.into_body().collect().await;
        ended(&shared, frame, Some(status.as_u16())).await;
        return;
    }
    if status == hyper::StatusCode::NOT_FOUND && carried.is_some() {
        if let Some(frame) = kept {
            ended(&shared, frame, Some(404)).await;
        }
        return;
    }
    if kept.is_none() && !status.is_success() {
        // A notification (or a response) the server refused: the error its body may carry
        // has no id and answers no request of ours. Handed on, the null-id policy would
        // end whichever single request is waiting with it.
        let _ = response.into_body().collect().await;
        return;
    }
    if let Some(id) = response.headers().get("mcp-session-id") {
        if let Ok(id) = id.to_str() {
            shared.session.lock().unwrap_or_else(|e| e.into_inner()).id = Some(id.to_owned());
        }
    }
    let initialize = described.method.as_deref() == Some("initialize");
    // Anything but 202 for `notifications/initialized`: no GET stream, the gate opens now
    // (not after an answer the server might keep open).
    let gate = gate.filter(|_| status == hyper::StatusCode::ACCEPTED);
    let whole = read(&shared, response, initialize, described.request, carried).await;
    if let Some(frame) = kept {
        ended(&shared, frame, whole.then_some(status.as_u16())).await;
    }
    if let Some(gate) = gate {
        tokio::spawn(listen(shared.clone(), gate));
    }
}

/// The session's GET stream: messages for no request; resumed when it drops. The gate
/// opens once the answer's head is in (or the GET failed).
async fn listen(shared: Shared, gate: OpenOnDrop) {
    let response = send(&shared, Method::GET, None, None, None).await;
    drop(gate);
    if let Ok((response, carried)) = response {
        if response.status().is_success() {
            read(&shared, response, false, false, carried).await;
        }
    }
}

/// Hands on the messages of one answer (a JSON body, or an event stream, resumed with
/// `Last-Event-ID` when it drops, or ends before the answer to a request it carries: a
/// server may close a stream on purpose and let the client poll). A stream of the session
/// `carried` is not resumed once the connection is on another session. False when the
/// answer was cut off (and could not be resumed).
async fn read(
    shared: &Shared,
    response: hyper::Response<hyper::body::Incoming>,
    initialize: bool,
    request: bool,
    carried: Option<String>,
) -> bool {
    let event_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !event_stream {
        // A 202 (or any answer without a message) has no body: nothing to hand on.
        let Ok(body) = response.into_body().collect().await else {
            return false;
        };
        let body = body.to_bytes();
        if !body.iter().all(u8::is_ascii_whitespace) {
            deliver(shared, body.to_vec(), initialize).await;
        }
        return true;
    }
    let mut decoder = sse::Decoder::new(sse::Limits::default());
    let mut retry = Duration::from_secs(1);
    // The last complete event of this answer, across resumptions.
    let mut resume_from = String::new();
    let mut body = response.into_body();
    let mut resumes = 0;
    let mut answered = !request;
    loop {
        let frame = body.frame().await;
        let dropped = match frame {
            Some(Err(_)) => true,
            None => !answered,
            Some(Ok(_)) => false,
        };
        if dropped {
            // Resume from the last complete event, if the server gave ids; a new stream
            // starts a new decoder (what was cut mid-event is replayed whole).
            if resume_from.is_empty() || resumes == RESUMES {
                return false;
            }
            let now = shared
                .session
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .id
                .clone();
            if carried.is_some() && now != carried {
                return false;
            }
            resumes += 1;
            if let Some(ms) = decoder.reconnection_time() {
                retry = Duration::from_millis(ms);
            }
            decoder = sse::Decoder::new(sse::Limits::default());
            tokio::time::sleep(retry).await;
            match send(shared, Method::GET, None, None, Some(&resume_from)).await {
                Ok((r, _)) if r.status().is_success() => body = r.into_body(),
                _ => return false,
            }
            continue;
        }
        match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    let mut messages = Vec::new();
                    decoder.feed(&data, |event| {
                        if let Ok(event) = event {
                            if !event.data.is_empty() {
                                messages.push(event.data.into_bytes());
                            }
                        }
                    });
                    if !decoder.last_event_id().is_empty() {
                        resume_from = decoder.last_event_id().to_owned();
                    }
                    for message in messages {
                        answered |= is_response(&message);
                        deliver(shared, message, initialize).await;
                    }
                }
            }
            // The stream ended with everything it had to say.
            _ => return true,
        }
    }
}

/// True for a response (a result or an error, no method).
fn is_response(message: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Shape<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
        #[serde(borrow)]
        result: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow)]
        error: Option<&'a serde_json::value::RawValue>,
    }
    serde_json::from_slice::<Shape<'_>>(message)
        .is_ok_and(|s| s.method.is_none() && (s.result.is_some() || s.error.is_some()))
}

/// One message in; the answer to `initialize` also sets the session's protocol version.
async fn deliver(shared: &Shared, message: Vec<u8>, initialize: bool) {
    if initialize {
        #[derive(serde::Deserialize)]
        struct Answer {
            result: Option<InitResult>,
        }
        #[derive(serde::Deserialize)]
        struct InitResult {
            #[serde(rename = "protocolVersion")]
            version: Option<String>,
        }
        if let Ok(Answer {
            result: Some(InitResult { version: Some(v) }),
        }) = serde_json::from_slice(&message)
        {
            shared
                .session
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .version = Some(v);
        }
    }
    let _ = shared.incoming.send(Incoming::Message(message)).await;
}
