//! The client side of MCP's Streamable HTTP as a sans-I/O machine: every rule the client
//! keeps, for a driver that only moves bytes (hyper on tokio, `fetch` in a browser).
//!
//! The connection's frames go in ([`HttpClient::send_frame`]); each becomes a `POST`, the
//! session's `GET` stream opens after `notifications/initialized`, a dropped event stream is
//! resumed with `GET` and `Last-Event-ID`, and [`HttpClient::close`] ends the session with
//! `DELETE`. The machine decides each request's headers ([`HttpClient::poll_request`]),
//! reads each answer ([`HttpClient::handle_head`], [`HttpClient::handle_body`],
//! [`HttpClient::handle_end`], [`HttpClient::handle_failure`]) and gives the connection its
//! messages, and the ends of the calls no answer came for ([`HttpClient::poll_event`]).
//!
//! The calling contract: after any input, send what [`poll_request`](HttpClient::poll_request)
//! gives, drop the exchanges [`poll_abort`](HttpClient::poll_abort) names, hand what
//! [`poll_event`](HttpClient::poll_event) gives to the connection, and sleep until
//! [`poll_timeout`](HttpClient::poll_timeout) (then [`handle_timeout`](HttpClient::handle_timeout)).
//! Read no more of a response body while [`is_backed_up`](HttpClient::is_backed_up) (a
//! server that floods waits on its stream). Every request goes to the endpoint's URL, which
//! the driver holds.
//!
//! Credentials stay with the driver (sansrpc-oauth's [`CredentialProvider`]-shaped drivers
//! are asynchronous): it adds `Authorization` to each request, shows each answer's status
//! and `WWW-Authenticate` to the credentials, and sends the same request again (at most
//! [`AUTH_RESENDS`] times) when they ask; the head it finally gets goes to
//! [`handle_head`](HttpClient::handle_head), an authorization that failed to
//! [`handle_failure`](HttpClient::handle_failure) as [`ExchangeFailure::Unauthorized`].
//!
//! [`CredentialProvider`]: https://docs.rs/sansrpc-oauth

use core::time::Duration;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::string::String;
use std::vec::Vec;

use sansrpc::codec::http::HttpMethod;
use sansrpc::codec::sse;
use sansrpc::Instant;

/// The extra headers of a frame's POST (the `Mcp-Param-*` of a `tools/call`), from its
/// bytes: what a driver gives [`HttpClient::send_queued`].
pub type ExtraHeaders = dyn Fn(&[u8]) -> Vec<(String, String)> + Send + Sync;

pub(crate) mod sorted;
#[cfg(test)]
mod tests;
mod wire;

use sorted::SortedMap;
use wire::{describe, init_version, is_response, request, visible, Frame, Session};

/// The most times a driver sends one request again after its credentials changed (a
/// refresh, an authorization, a step-up); the authorizer has its own, smaller, limits.
pub const AUTH_RESENDS: usize = 8;

/// The header fields the machine sets itself (lower case): a driver refuses them among the
/// user's own ([`ClientConfig::headers`]).
pub const OWN_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
];

/// How an [`HttpClient`] behaves; every bound it keeps is here.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// Headers on every request (the user's own; the machine's, [`OWN_HEADERS`], are refused
    /// by the driver's builder).
    pub headers: Vec<(String, String)>,
    /// The driver has credentials: a 401 or 403 is theirs to handle. Without, a request
    /// answered 401 (or 403 with a challenge) fails with
    /// [`ClientFault::CredentialsNeeded`].
    pub credentials: bool,
    /// Largest JSON answer (default 8 MiB, the connection's largest frame): a larger one is
    /// cut off, with [`ClientFault::BodyTooLarge`].
    pub max_body: usize,
    /// Bounds of the SSE decoder (a line, an event).
    pub sse: sse::SseLimits,
    /// Events ([`poll_event`](HttpClient::poll_event)) waiting before
    /// [`is_backed_up`](HttpClient::is_backed_up) (default 256).
    pub max_events: usize,
    /// Times a dropped event stream is resumed before its messages are given up (default 5).
    pub resumes: u32,
    /// The delay before a resumption when the server gave no `retry` (default 1 s).
    pub retry: Duration,
    /// The longest the POSTs after `notifications/initialized` wait for the session's GET
    /// stream to open (default 10 s).
    pub listen_wait: Duration,
    /// The longest [`close`](HttpClient::close) waits for the answer to `DELETE` (default
    /// 1 s).
    pub close_wait: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            headers: Vec::new(),
            credentials: false,
            max_body: 8 << 20,
            sse: sse::SseLimits::default(),
            max_events: 256,
            resumes: 5,
            retry: Duration::from_secs(1),
            listen_wait: Duration::from_secs(10),
            close_wait: Duration::from_secs(1),
        }
    }
}

/// One HTTP request to send to the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientRequest {
    /// Names the exchange in the inputs that follow.
    pub exchange: u64,
    /// `POST`, `GET` or `DELETE`.
    pub method: HttpMethod,
    /// The header fields, names in lower case (without `Authorization`: the driver's
    /// credentials add it).
    pub headers: Vec<(Cow<'static, str>, String)>,
    /// The body (a POST's frame).
    pub body: Option<Vec<u8>>,
}

impl ClientRequest {
    /// The value of the header `name` (lower case), if the request has it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the machine gives the connection, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// A message from the server (`Connection::handle_message`).
    Message(Vec<u8>),
    /// The exchange of `frame` (a frame the connection sent) is over: its calls still
    /// waiting end (`Connection::end_unanswered` with `EndReason::Unanswered { status }`),
    /// with the HTTP status that came instead of their answers, or `None` when the
    /// exchange failed or was cut off before them.
    Ended {
        /// The frame as it was sent.
        frame: Vec<u8>,
        /// The status of its answer, if one came whole.
        status: Option<u16>,
    },
    /// Why calls are about to end: record it for their error, before the next
    /// [`ClientEvent::Ended`].
    Fault(ClientFault),
}

/// What [`HttpClient::hand_over`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandedOver {
    /// A message went into the connection, or an exchange's calls ended: room was made
    /// (body readers waiting for it may go on).
    Taken,
    /// The connection has no room: the message waits in the slot.
    Stalled,
    /// Nothing to hand over.
    Nothing,
}

/// Why an exchange could not be made, as the driver saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExchangeFailure {
    /// No connection could be made (refused, no route, TLS), or the request could not be
    /// built: nothing reached the server.
    Unsent,
    /// The authorization failed (or the server refused a static token), with the status
    /// the server answered (401 or 403) if it did.
    Unauthorized(Option<u16>),
    /// The exchange failed after the request went out (the answer cut off).
    Cut,
}

/// A cause the machine found itself, for the error of the calls it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientFault {
    /// The server asks for credentials the connection was not given.
    CredentialsNeeded {
        /// 401 or 403.
        status: u16,
        /// Its `WWW-Authenticate`.
        challenge: Option<String>,
    },
    /// A JSON answer over [`ClientConfig::max_body`].
    BodyTooLarge {
        /// The limit.
        limit: usize,
    },
    /// An event stream broke the decoder's bounds (the event was dropped).
    Sse(sse::SseError),
}

impl core::fmt::Display for ClientFault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ClientFault::CredentialsNeeded { status, challenge } => {
                write!(f, "the server answered {status} and asks for authorization")?;
                if let Some(challenge) = challenge {
                    write!(f, " (WWW-Authenticate: {challenge})")?;
                }
                f.write_str(
                    "; the connection has no credentials: give it some (Connect::bearer, Connect::oauth)",
                )
            }
            ClientFault::BodyTooLarge { limit } => {
                write!(f, "the server's answer is over {limit} bytes")
            }
            ClientFault::Sse(e) => write!(f, "the server's event stream: {e}"),
        }
    }
}

impl std::error::Error for ClientFault {}

/// What a task is.
#[derive(Debug)]
enum Role {
    /// The POST of one frame.
    Post {
        frame: Vec<u8>,
        described: Frame,
        /// Extra headers (the `Mcp-Param-*` of a `tools/call`).
        extra: Vec<(String, String)>,
        /// This POST (of `notifications/initialized`) opens the session's GET stream.
        opens: bool,
    },
    /// The session's GET stream.
    Listen,
    /// The session's `DELETE`.
    Delete,
}

/// How a task's answer is being read.
#[derive(Debug)]
enum Phase {
    /// Its request is waiting to be sent (or sent, its head not in yet).
    Unanswered,
    /// Its body is read and ignored; at its end, its calls end with `end`.
    Discard { end: Option<u16> },
    /// A JSON body, gathered whole.
    Json(Vec<u8>),
    /// An event stream.
    Sse(Box<Reader>),
}

/// An event stream being read, across its resumptions.
#[derive(Debug)]
struct Reader {
    decoder: sse::SseDecoder,
    retry: Duration,
    /// The last complete event's id, across resumptions.
    resume_from: String,
    resumes: u32,
    /// The answer to the request it carries came (or it carries none).
    answered: bool,
    /// A resumption waits for this instant.
    resume_at: Option<Instant>,
    /// The head of the current HTTP exchange came: its failure is a dropped stream (else
    /// the resumption could not be made).
    flowing: bool,
}

/// One exchange of the machine, over one HTTP request or more (resumptions).
#[derive(Debug)]
struct Task {
    role: Role,
    /// The session id the first request carried.
    carried: Option<String>,
    /// The answer's status.
    status: u16,
    phase: Phase,
    /// The HTTP exchange under way, if any.
    wire: Option<u64>,
}

impl Task {
    fn initialize(&self) -> bool {
        matches!(&self.role, Role::Post { described, .. } if described.method.as_deref() == Some("initialize"))
    }

    /// The frame whose calls end with this task, if it carries requests.
    fn kept(&self) -> Option<&[u8]> {
        match &self.role {
            Role::Post {
                frame, described, ..
            } if described.request => Some(frame),
            _ => None,
        }
    }
}

/// The sans-I/O Streamable HTTP client: the connection's frames in, HTTP requests out;
/// HTTP answers in, the connection's messages out. See the [module](self) for the calling
/// contract.
#[derive(Debug)]
pub struct HttpClient {
    config: ClientConfig,
    session: Session,
    tasks: SortedMap<u64, Task>,
    /// HTTP exchange → task.
    wires: SortedMap<u64, u64>,
    next_id: u64,
    /// Tasks whose request is due, with the `Last-Event-ID` of a resumption.
    ready: VecDeque<(u64, Option<String>)>,
    /// POSTs waiting for the session's GET stream to open.
    gated: VecDeque<u64>,
    /// The gate opens by itself at this instant (`None`: open).
    gate: Option<Instant>,
    /// The task whose head opens the gate (the GET stream, or the POST that asks for it).
    opener: Option<u64>,
    /// The POSTs of one request each still open, by request id: a `notifications/cancelled`
    /// for one ends it (on 2026-07-28 instead of being POSTed, which is how a client cancels
    /// there; on the session revisions after it is POSTed, as a server need not answer a
    /// cancelled request, nor end its stream).
    open_calls: SortedMap<String, u64>,
    aborts: VecDeque<u64>,
    events: VecDeque<ClientEvent>,
    /// `close` was called: `Some(deadline)` while the `DELETE` is out.
    closing: Option<Option<Instant>>,
    closed: bool,
}

impl HttpClient {
    /// A machine with no session yet.
    pub fn new(config: ClientConfig) -> HttpClient {
        HttpClient {
            config,
            session: Session::default(),
            tasks: SortedMap::new(),
            wires: SortedMap::new(),
            next_id: 0,
            ready: VecDeque::new(),
            gated: VecDeque::new(),
            gate: None,
            opener: None,
            open_calls: SortedMap::new(),
            aborts: VecDeque::new(),
            events: VecDeque::new(),
            closing: None,
            closed: false,
        }
    }

    /// The `Mcp-Session-Id` the requests carry now (set by the answer to the last
    /// `initialize`), or `None` before a session started, on the stateless revision, or
    /// for a server without sessions.
    pub fn session_id(&self) -> Option<&str> {
        self.session.id.as_deref()
    }

    /// The protocol revision the answer to `initialize` settled.
    pub fn protocol_version(&self) -> Option<&str> {
        self.session.version.as_deref()
    }

    /// Tasks under way (POSTs, the GET stream, resumptions waiting, the `DELETE`).
    pub fn exchanges(&self) -> usize {
        self.tasks.len()
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn add(&mut self, role: Role) -> u64 {
        let id = self.id();
        let task = Task {
            role,
            carried: None,
            status: 0,
            phase: Phase::Unanswered,
            wire: None,
        };
        self.tasks.insert(id, task);
        id
    }

    /// Hands `conn` what the machine has for it, a message held back in `held` first: a
    /// server's message (`Connection::handle_message`; one the connection has no room for
    /// is put back in `held`), or the end of an exchange's waiting calls
    /// (`Connection::end_unanswered`); `fault` records why calls are about to end. What a
    /// driver's `Transport::poll_receive` does with the machine.
    pub fn hand_over(
        &mut self,
        conn: &mut sansrpc::Connection,
        held: &mut Option<Vec<u8>>,
        now: Instant,
        mut fault: impl FnMut(ClientFault),
    ) -> HandedOver {
        loop {
            let message = match held.take() {
                Some(message) => message,
                None => match self.poll_event() {
                    Some(ClientEvent::Message(message)) => message,
                    Some(ClientEvent::Ended { frame, status }) => {
                        let reason = sansrpc::connection::EndReason::Unanswered { status };
                        conn.end_unanswered(&frame, reason, now);
                        return HandedOver::Taken;
                    }
                    Some(ClientEvent::Fault(why)) => {
                        fault(why);
                        continue;
                    }
                    None => return HandedOver::Nothing,
                },
            };
            if conn.handle_message(&message, now).is_err() {
                *held = Some(message);
                return HandedOver::Stalled;
            }
            return HandedOver::Taken;
        }
    }

    /// Sends every frame `conn` has queued, each with the extra headers `extra` gives it
    /// ([`send_frame`](Self::send_frame)), taking them through `buf`; true when any was
    /// sent. What a driver's `Transport::poll_transmit` does with the machine.
    pub fn send_queued(
        &mut self,
        conn: &mut sansrpc::Connection,
        buf: &mut Vec<u8>,
        extra: Option<&ExtraHeaders>,
        now: Instant,
    ) -> bool {
        buf.clear();
        let mut sent = false;
        while let Some(len) = conn.poll_transmit(buf) {
            let frame = buf.split_off(buf.len() - len);
            let extra = extra.map(|extra| extra(&frame)).unwrap_or_default();
            self.send_frame(frame, extra, now);
            sent = true;
        }
        sent
    }

    /// A frame the connection sends (`Connection::poll_transmit`), with the extra headers
    /// of its POST (the `Mcp-Param-*` of a `tools/call`; usually none). It is POSTed (after
    /// `notifications/initialized`, once the session's GET stream opened), except a
    /// `notifications/cancelled` for a 2026-07-28 request still open: that request's
    /// exchange is dropped instead ([`poll_abort`](Self::poll_abort)), which on that
    /// revision is how a client cancels.
    pub fn send_frame(&mut self, frame: Vec<u8>, extra: Vec<(String, String)>, now: Instant) {
        let described = describe(&frame);
        let method = described.method.as_deref();
        if method == Some("initialize") {
            // A new session starts (the first, or one after the server lost the last):
            // its `notifications/initialized` opens its own GET stream.
            self.session.listening = false;
        }
        let opens = method == Some("notifications/initialized")
            && !core::mem::replace(&mut self.session.listening, true);
        let mut cancelled = None;
        if let Some(id) = &described.cancels {
            if let Some(task) = self.open_calls.remove(id) {
                let stateless = self.tasks.get(&task).is_some_and(|t| {
                    matches!(&t.role, Role::Post { described, .. } if described.version.is_some())
                });
                if stateless {
                    self.drop_task(task);
                    return;
                }
                // Ended once the cancellation is on its way (a server that honours it
                // sends nothing more on that stream, and may never end it).
                cancelled = Some(task);
            }
        }
        let call = described.id.clone();
        let task = self.add(Role::Post {
            frame,
            described,
            extra,
            opens,
        });
        if let Some(id) = call {
            self.open_calls.insert(id, task);
        }
        if let Some(call) = cancelled {
            self.drop_task(call);
        }
        if opens {
            // Closed before any later frame is posted; it opens by itself after
            // `listen_wait` (a server that never answers holds nothing longer).
            self.gate = Some(now + self.config.listen_wait);
            self.opener = Some(task);
            self.ready.push_back((task, None));
        } else if self.gate.is_some() {
            self.gated.push_back(task);
        } else {
            self.ready.push_back((task, None));
        }
    }

    /// Ends the session: a `DELETE` when there is one, waited for at most
    /// [`ClientConfig::close_wait`]; [`is_closed`](Self::is_closed) says when it is over.
    pub fn close(&mut self, now: Instant) {
        if self.closing.is_some() {
            return;
        }
        if self.session.id.is_none() {
            self.closing = Some(None);
            self.closed = true;
            return;
        }
        let task = self.add(Role::Delete);
        self.ready.push_back((task, None));
        self.closing = Some(Some(now + self.config.close_wait));
    }

    /// True once [`close`](Self::close) is done (the `DELETE` answered, failed or timed
    /// out, or there was no session).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The next request to send, with its headers decided now.
    pub fn poll_request(&mut self) -> Option<ClientRequest> {
        loop {
            let (id, last_event_id) = self.ready.pop_front()?;
            let exchange = self.id();
            let Some(task) = self.tasks.get_mut(&id) else {
                continue;
            };
            task.wire = Some(exchange);
            self.wires.insert(exchange, id);
            return Some(request(
                &self.config,
                &mut self.session,
                task,
                exchange,
                last_event_id,
            ));
        }
    }

    /// The next exchange to drop (its request, or the rest of its answer): nothing more of
    /// it is wanted.
    pub fn poll_abort(&mut self) -> Option<u64> {
        self.aborts.pop_front()
    }

    /// The next message for the connection, or the end of calls no answer came for.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// True while [`ClientConfig::max_events`] events wait: read no more of any body until
    /// the connection took some.
    pub fn is_backed_up(&self) -> bool {
        self.events.len() >= self.config.max_events
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due: a resumption's `retry`
    /// delay, the wait for the GET stream, the wait for the `DELETE`.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let resumes = self.tasks.values().filter_map(|t| match &t.phase {
            Phase::Sse(reader) => reader.resume_at,
            _ => None,
        });
        resumes.chain(self.gate).chain(self.closing.flatten()).min()
    }

    /// Time passed: resumptions due are sent, the GET stream's gate opens after
    /// [`ClientConfig::listen_wait`], a `DELETE` unanswered after
    /// [`ClientConfig::close_wait`] is given up.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.gate.is_some_and(|at| at <= now) {
            self.open_gate();
        }
        if let Some(Some(at)) = self.closing {
            if at <= now {
                self.closing = Some(None);
                self.closed = true;
                let deletes: Vec<u64> = self
                    .tasks
                    .iter()
                    .filter(|(_, t)| matches!(t.role, Role::Delete))
                    .map(|(&id, _)| id)
                    .collect();
                for id in deletes {
                    self.drop_task(id);
                }
            }
        }
        let mut stale = Vec::new();
        for (&id, task) in self.tasks.iter_mut() {
            if let Phase::Sse(reader) = &mut task.phase {
                if reader.resume_at.is_some_and(|at| at <= now) {
                    reader.resume_at = None;
                    if task.carried.is_some() && task.carried != self.session.id {
                        // The connection moved to another session meanwhile: the stream's
                        // event ids are the old one's (as in `dropped`).
                        stale.push(id);
                        continue;
                    }
                    // Without an id (a GET stream that gave none): a new stream.
                    let from = Some(reader.resume_from.clone()).filter(|id| !id.is_empty());
                    self.ready.push_back((id, from));
                }
            }
        }
        for id in stale {
            self.finish_read(id, false, now);
        }
    }

    /// The head of the answer to `exchange` (after the driver's credentials had their say):
    /// its status and header fields (names in any case).
    pub fn handle_head<'a>(
        &mut self,
        exchange: u64,
        status: u16,
        headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        now: Instant,
    ) {
        let Some(&id) = self.wires.get(&exchange) else {
            return;
        };
        let (mut session_id, mut content_type, mut challenge) = (None, None, None);
        for (name, value) in headers {
            let slot = if name.eq_ignore_ascii_case("mcp-session-id") {
                &mut session_id
            } else if name.eq_ignore_ascii_case("content-type") {
                &mut content_type
            } else if name.eq_ignore_ascii_case("www-authenticate") {
                &mut challenge
            } else {
                continue;
            };
            if slot.is_none() {
                *slot = Some(visible(value));
            }
        }
        let (session_id, challenge) = (session_id.flatten(), challenge.flatten());
        // A media type is case-insensitive (RFC 9110 §8.3.1).
        let event_stream = content_type.flatten().is_some_and(|v| {
            v.get(..17)
                .is_some_and(|t| t.eq_ignore_ascii_case("text/event-stream"))
        });
        if self.opener == Some(id) && !(status == 202 && self.is_opening_post(id)) {
            self.open_gate();
        }
        let credentials = self.config.credentials;
        let Some(task) = self.tasks.get_mut(&id) else {
            return;
        };
        let success = (200..300).contains(&status);
        match (&task.role, &mut task.phase) {
            // A resumption of an event stream: a new body for the same reader.
            (_, Phase::Sse(reader)) => {
                reader.flowing = success;
                if success {
                    return;
                }
                // A server that cannot answer now (restarting behind a proxy, busy) is
                // tried again as a dropped stream is; a refusal (the stream or the session
                // is gone) gives it up.
                if status >= 500 || status == 429 {
                    self.dropped(id, now);
                } else {
                    self.finish_read(id, false, now);
                }
                return;
            }
            (Role::Delete, _) => {
                self.closing = Some(None);
                self.closed = true;
                self.drop_task(id);
                return;
            }
            (Role::Listen, _) => {
                if !success {
                    self.drop_task(id);
                    return;
                }
            }
            (Role::Post { .. }, _) => {
                let request = task.kept().is_some();
                let unauthorized = status == 401 || status == 403 && challenge.is_some();
                if request && !credentials && unauthorized {
                    // Without credentials the answer is all there is: the call fails saying
                    // what the server asks for (its body, an error with no id, would say
                    // only "Unauthorized").
                    self.events
                        .push_back(ClientEvent::Fault(ClientFault::CredentialsNeeded {
                            status,
                            challenge: challenge.map(str::to_owned),
                        }));
                    task.phase = Phase::Discard { end: Some(status) };
                    return;
                }
                if status == 404 && task.carried.is_some() {
                    // The server lost the session: it did not run the request (its body,
                    // an error with no id, is not handed on).
                    if let Some(frame) = task.kept() {
                        self.events.push_back(ClientEvent::Ended {
                            frame: frame.to_vec(),
                            status: Some(404),
                        });
                    }
                    self.drop_task(id);
                    return;
                }
                if !request && !success {
                    // A notification (or a response) the server refused: the error its
                    // body may carry has no id and answers no request of ours. Handed on,
                    // the null-id policy would end whichever single request is waiting.
                    task.phase = Phase::Discard { end: None };
                    return;
                }
                // The session is the one the answer to `initialize` names (none when it
                // names none); another answer's header does not move it (an old request's
                // late answer may carry the session before a renewal).
                if task.initialize() {
                    self.session.id = session_id.map(str::to_owned);
                }
            }
        }
        task.status = status;
        task.phase = if event_stream {
            Phase::Sse(Box::new(Reader {
                decoder: sse::SseDecoder::new(self.config.sse),
                retry: self.config.retry,
                resume_from: String::new(),
                resumes: 0,
                answered: task.kept().is_none(),
                resume_at: None,
                flowing: true,
            }))
        } else {
            Phase::Json(Vec::new())
        };
    }

    /// More of the body of `exchange`'s answer.
    pub fn handle_body(&mut self, exchange: u64, bytes: &[u8], now: Instant) {
        let Some(&id) = self.wires.get(&exchange) else {
            return;
        };
        let Some(task) = self.tasks.get_mut(&id) else {
            return;
        };
        let initialize = task.initialize();
        match &mut task.phase {
            Phase::Unanswered | Phase::Discard { .. } => {}
            Phase::Json(body) => {
                if body.len().saturating_add(bytes.len()) > self.config.max_body {
                    let limit = self.config.max_body;
                    self.events
                        .push_back(ClientEvent::Fault(ClientFault::BodyTooLarge { limit }));
                    self.finish_read(id, false, now);
                } else {
                    body.extend_from_slice(bytes);
                }
            }
            Phase::Sse(reader) => {
                let mut messages = Vec::new();
                let mut faults = Vec::new();
                reader.decoder.feed(bytes, |event| match event {
                    Ok(event) if !event.data.is_empty() => messages.push(event.data.into_bytes()),
                    Ok(_) => {}
                    Err(e) => faults.push(e),
                });
                let last = reader.decoder.last_event_id();
                if !last.is_empty() && last != reader.resume_from {
                    reader.resume_from = last.to_owned();
                    // Progress: the resumptions are counted from here (a server that
                    // closes its stream to be polled, SEP-1699, is followed for as long as
                    // its events come; attempts that bring none are bounded).
                    reader.resumes = 0;
                }
                if !messages.is_empty() {
                    // A message is progress too (a GET stream without ids).
                    reader.resumes = 0;
                }
                for message in &messages {
                    reader.answered |= is_response(message);
                }
                for fault in faults {
                    self.events
                        .push_back(ClientEvent::Fault(ClientFault::Sse(fault)));
                }
                for message in messages {
                    self.deliver(message, initialize);
                }
            }
        }
    }

    /// The answer to `exchange` ended, whole.
    pub fn handle_end(&mut self, exchange: u64, now: Instant) {
        if let Some(id) = self.over(exchange) {
            self.end(id, now);
        }
    }

    /// HTTP exchange `exchange` is over (nothing to abort): its task, if it has one.
    fn over(&mut self, exchange: u64) -> Option<u64> {
        let id = self.wires.remove(&exchange)?;
        let task = self.tasks.get_mut(&id)?;
        task.wire = None;
        Some(id)
    }

    /// The answer of task `id` ended whole.
    fn end(&mut self, id: u64, now: Instant) {
        let Some(task) = self.tasks.get_mut(&id) else {
            return;
        };
        let initialize = task.initialize();
        match &mut task.phase {
            Phase::Unanswered => {
                // An end with no head: the answer was cut off before it.
                self.fail(id, ExchangeFailure::Cut, now);
            }
            Phase::Discard { end } => {
                let end = *end;
                if let (Some(frame), Some(status)) = (task.kept(), end) {
                    self.events.push_back(ClientEvent::Ended {
                        frame: frame.to_vec(),
                        status: Some(status),
                    });
                }
                self.drop_task(id);
            }
            Phase::Json(body) => {
                // A 202 (or any answer without a message) has no body: nothing to hand on.
                let body = core::mem::take(body);
                if !body.iter().all(u8::is_ascii_whitespace) {
                    self.deliver(body, initialize);
                }
                self.finish_read(id, true, now);
            }
            Phase::Sse(reader) => {
                // A server may close a stream before its answer on purpose, and let the
                // client poll: resumed as if dropped. The session's GET stream, which
                // answers nothing, is opened again whenever it ends (a server MAY close it
                // at any time, the client reconnecting after `retry`).
                let listen = matches!(task.role, Role::Listen);
                if reader.answered && !listen {
                    self.finish_read(id, true, now);
                } else {
                    self.dropped(id, now);
                }
            }
        }
    }

    /// `exchange` failed: no answer (`kind` says how far it went), or its body cut off.
    /// True when the failure ends calls: the driver records its cause for their error
    /// before it hands on the events.
    pub fn handle_failure(&mut self, exchange: u64, kind: ExchangeFailure, now: Instant) -> bool {
        match self.over(exchange) {
            Some(id) => self.fail(id, kind, now),
            None => false,
        }
    }

    /// Task `id`'s exchange failed: see [`handle_failure`](Self::handle_failure).
    fn fail(&mut self, id: u64, kind: ExchangeFailure, now: Instant) -> bool {
        if self.opener == Some(id) {
            self.open_gate();
        }
        let Some(task) = self.tasks.get_mut(&id) else {
            return false;
        };
        match &task.phase {
            Phase::Unanswered => match task.role {
                Role::Post { .. } => {
                    let Some(frame) = task.kept() else {
                        self.drop_task(id);
                        return false;
                    };
                    let status = match kind {
                        ExchangeFailure::Unsent | ExchangeFailure::Cut => None,
                        // Not a lost answer: the typed client must not send it again (that
                        // would run the failed authorization again).
                        ExchangeFailure::Unauthorized(status) => Some(status.unwrap_or(401)),
                    };
                    self.events.push_back(ClientEvent::Ended {
                        frame: frame.to_vec(),
                        status,
                    });
                    self.drop_task(id);
                    kind != ExchangeFailure::Cut
                }
                Role::Listen => {
                    self.drop_task(id);
                    false
                }
                Role::Delete => {
                    self.closing = Some(None);
                    self.closed = true;
                    self.drop_task(id);
                    false
                }
            },
            Phase::Discard { .. } => {
                // The body is of no interest: its failure ends the task as its end would.
                self.end(id, now);
                false
            }
            Phase::Json(_) => {
                self.finish_read(id, false, now);
                false
            }
            Phase::Sse(reader) if reader.flowing => {
                self.dropped(id, now);
                false
            }
            Phase::Sse(_) => {
                // The resumption could not be made (the server restarting): tried again, as
                // long as the resumptions are not used up.
                self.dropped(id, now);
                false
            }
        }
    }

    /// True when `id` is the POST of `notifications/initialized` that opens the GET stream.
    fn is_opening_post(&self, id: u64) -> bool {
        matches!(
            self.tasks.get(&id).map(|t| &t.role),
            Some(Role::Post { opens: true, .. })
        )
    }

    fn open_gate(&mut self) {
        self.gate = None;
        self.opener = None;
        self.ready
            .extend(self.gated.drain(..).map(|task| (task, None)));
    }

    /// One message for the connection; the answer to `initialize` also sets the session's
    /// protocol version.
    fn deliver(&mut self, message: Vec<u8>, initialize: bool) {
        if initialize {
            if let Some(version) = init_version(&message) {
                self.session.version = Some(version);
            }
        }
        self.events.push_back(ClientEvent::Message(message));
    }

    /// An event stream dropped (cut, or ended before its answer): resumed from the last
    /// complete event after the server's `retry` delay, if the server gave ids, the
    /// resumptions are not used up, and the connection is on the same session. The
    /// session's GET stream is opened again even without ids (a new stream, then), unless
    /// the session is closing.
    fn dropped(&mut self, id: u64, now: Instant) {
        let Some(task) = self.tasks.get_mut(&id) else {
            return;
        };
        let Phase::Sse(reader) = &mut task.phase else {
            return;
        };
        let other_session = task.carried.is_some() && self.session.id != task.carried;
        let listen = matches!(task.role, Role::Listen) && self.closing.is_none();
        let nothing_to_resume = reader.resume_from.is_empty() && !listen;
        if nothing_to_resume || reader.resumes >= self.config.resumes || other_session {
            self.finish_read(id, false, now);
            return;
        }
        reader.resumes += 1;
        if let Some(ms) = reader.decoder.reconnection_time() {
            reader.retry = Duration::from_millis(ms);
        }
        // A new stream starts a new decoder (what was cut mid-event is replayed whole).
        reader.decoder = sse::SseDecoder::new(self.config.sse);
        reader.resume_at = Some(now + reader.retry);
        reader.flowing = false;
        if let Some(wire) = task.wire.take() {
            // Still open (a resumption answered 5xx): what is left of it is not read.
            self.wires.remove(&wire);
            self.aborts.push_back(wire);
        }
    }

    /// The answer of task `id` was read (`whole`), or given up: its calls still waiting
    /// end, and the POST of `notifications/initialized` opens the GET stream.
    fn finish_read(&mut self, id: u64, whole: bool, _now: Instant) {
        let Some(task) = self.tasks.get(&id) else {
            return;
        };
        if let Some(frame) = task.kept() {
            self.events.push_back(ClientEvent::Ended {
                frame: frame.to_vec(),
                status: whole.then_some(task.status),
            });
        }
        let listen = matches!(task.role, Role::Post { opens: true, .. }) && task.status == 202;
        self.drop_task(id);
        if listen {
            let get = self.add(Role::Listen);
            if self.gate.is_some() {
                self.opener = Some(get);
            }
            self.ready.push_back((get, None));
        }
    }

    /// Forgets task `id`; an HTTP exchange of it under way is aborted.
    fn drop_task(&mut self, id: u64) {
        let Some(task) = self.tasks.remove(&id) else {
            return;
        };
        if let Some(wire) = task.wire {
            self.wires.remove(&wire);
            self.aborts.push_back(wire);
        }
        if let Role::Post { described, .. } = &task.role {
            if let Some(key) = &described.id {
                if self.open_calls.get(key) == Some(&id) {
                    self.open_calls.remove(key);
                }
            }
        }
        self.ready.retain(|(t, _)| *t != id);
        self.gated.retain(|t| *t != id);
        if self.opener == Some(id) && !matches!(task.role, Role::Post { opens: true, .. }) {
            self.open_gate();
        }
    }
}
