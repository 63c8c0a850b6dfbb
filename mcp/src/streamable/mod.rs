//! MCP's Streamable HTTP transport as a sans-I/O machine: the 2025-11-25 session protocol
//! (and 2025-06-18, 2025-03-26 clients) and the stateless 2026-07-28 revision on one
//! endpoint, deciding for each HTTP request what the answer is and writing every byte of
//! the answers; an adapter only moves bytes and runs connections.
//!
//! For each request the adapter parsed (a [`Head`] from a decoder made with
//! [`RequestDecoder::keeping_fields`](sansrpc::codec::http::RequestDecoder::keeping_fields),
//! and the body), [`Endpoint::handle_request`] gives a [`Verdict`]:
//!
//! - [`Verdict::Respond`]: write the [`Response`]; nothing else happens (refusals: Host or
//!   Origin not allowed (403), no token (401), a wrong method (405), `Accept` (406),
//!   `Content-Type` (415), an unknown session (404), the 2026 header rules (400), the
//!   protected-resource metadata document (200));
//! - [`Verdict::Deliver`]: a POST carrying only notifications and responses: hand the body
//!   to the session's connection, then write the `202`;
//! - [`Verdict::Open`]: a POST carrying requests, in a session (a new one for
//!   `initialize`): hand the body to the session's connection tagged with the stream
//!   ([`Connection::handle_message_tagged`](sansrpc::connection::Connection::handle_message_tagged);
//!   or, with the body as [`Endpoint::handle_request_owned`] gives it back, scanned already,
//!   [`Connection::handle_scanned_tagged`](sansrpc::connection::Connection::handle_scanned_tagged)),
//!   then write what [`Endpoint::poll_stream`] gives until it ends;
//! - [`Verdict::Stateless`]: a 2026-07-28 request: run it on a connection of its own,
//!   whose every frame goes to [`Endpoint::handle_stream_output`]; serve the stream as above;
//!   if the client closes the response first, drop that connection (that cancels the
//!   request);
//! - [`Verdict::Listen`]: a GET: serve the stream (the session's own messages, or a stream
//!   resumed from `Last-Event-ID`);
//! - [`Verdict::Ended`]: a DELETE: stop the session's connection, write the response.
//!
//! A session's connection hands its frames to [`Endpoint::handle_outgoing`] with their tags
//! ([`Connection::poll_transmit_tagged`](sansrpc::connection::Connection::poll_transmit_tagged)):
//! answers and the messages sent for a request go on that request's stream, others on
//! the session's GET stream (they wait, bounded, until one opens). A stream answers with
//! one JSON body when the answer is the first thing it has to send, else with Server-Sent
//! Events; in the session revisions every event has an id unique in the server, the stream
//! opens with a priming event and a `retry` delay, and the events are kept in an
//! [`EventStore`] so a client that lost its stream gets what it missed with `GET` and
//! `Last-Event-ID`. Idle SSE streams get keep-alive comments.
//!
//! Time is an argument ([`Endpoint::poll_timeout`], [`Endpoint::handle_timeout`]); session ids
//! come from the adapter's entropy (they must be unguessable).

use core::net::IpAddr;
use core::time::Duration;
use std::boxed::Box;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::string::String;
use std::vec::Vec;

use crate::types::error_codes::{
    HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::types::version::{self, STATELESS};
use sansrpc::codec::http::{Head, HttpFault, HttpMethod};
use sansrpc::codec::sse;
use sansrpc::driver::Timers;
use sansrpc::message::{Classified, Classifier, Incoming, Scanned};
use sansrpc::Instant;
use sansrpc::{Id, Limits};
use sansrpc_runtime::remove_and_shrink;

pub mod client;
mod param;
mod rules;
mod stream;

// The `Host` and `Origin` rules are HTTP's, the same for every server (`codec::http`).
pub use param::ParamHeader;
pub use rules::{decode_header_value, encode_header_value};
pub use sansrpc::codec::http::bearer_token;
pub use sansrpc::codec::http::{Extensions, Headers, HttpRequest, Principal};
pub use sansrpc::codec::http::{Hosts, Origins};
pub use sansrpc::codec::sse::{EventStore, MemoryEventStore};

pub use stream::StreamHead;
use stream::{Kind, Mode, Stream};

/// How the MCP endpoint behaves; every bound it keeps is here.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The endpoint's path (default `/mcp`); another path is 404.
    pub path: String,
    /// `Host` names served (default [`Hosts::Loopback`]); another is 403.
    pub hosts: Hosts,
    /// `Origin`s served (default [`Origins::SameAsHosts`]); another is 403.
    pub origins: Origins,
    /// Serve the session revisions (2025-11-25 and older; default `true`).
    pub sessions: bool,
    /// Serve the stateless revision 2026-07-28 (default `true`).
    pub stateless: bool,
    /// Most sessions at once (default 1024). An `initialize` that finds the table full
    /// first evicts the oldest session still in its handshake, else the longest-idle
    /// session idle at least [`evict_idle_floor`](Config::evict_idle_floor); only when
    /// there is neither is it 503.
    pub max_sessions: usize,
    /// How long a new session has to finish its handshake (default 10 s): a session that
    /// sent neither `notifications/initialized` nor a later request (nor opened its GET
    /// stream) within it ends, and until it does it is the first evicted when the table is
    /// full. One client cannot hold the table with `initialize` requests alone.
    pub handshake_timeout: Duration,
    /// How long an initialized session must have been idle (no request, no stream open)
    /// before a new `initialize` may evict it from a full table (default 60 s).
    pub evict_idle_floor: Duration,
    /// Most sessions one peer address holds at once (default `None`: no limit; the adapter
    /// names the peer, [`Endpoint::handle_request_from`]). An `initialize` from a peer at
    /// its limit evicts that peer's oldest session still in its handshake, else is 429.
    pub max_sessions_per_peer: Option<usize>,
    /// Most streams of one session open at once, its GET stream included (default 64); a
    /// POST with requests beyond it is 429.
    pub max_streams_per_session: usize,
    /// Most stateless requests running at once (default 1024); beyond it 503.
    pub max_stateless: usize,
    /// Most events kept for a stream nothing else keeps (no event store: the GET stream
    /// before it opens, a stateless request's stream; default 256); the oldest is dropped
    /// beyond it.
    pub max_queued_events: usize,
    /// Most bytes a stream's HTTP response may have waiting to be written (default 4
    /// MiB): beyond it the response is cut (the stream can be resumed in the session
    /// revisions).
    pub max_stream_buffer: usize,
    /// The `retry` delay sent in the priming event (default 1 s).
    pub retry: Duration,
    /// A comment goes out on an SSE stream idle this long (default 15 s).
    pub keepalive: Duration,
    /// A request not answered within this time gets an SSE stream (with its priming event
    /// and keep-alives) instead of a JSON body (default 1 s). Zero: every request that
    /// carries calls is answered on an SSE stream, whose response starts with the first
    /// message for it (or a keep-alive).
    pub json_window: Duration,
    /// A session that made no request and has no stream open for this long ends (default
    /// 10 min).
    pub session_idle: Duration,
    /// Bytes of events the default event store keeps (default 8 MiB).
    pub store_bytes: usize,
    /// How long the default event store keeps an event (default 5 min).
    pub store_age: Duration,
    /// The OAuth 2.1 resource-server settings; `None` (the default) serves without tokens.
    pub auth: Option<Auth>,
    /// Tool arguments mirrored in `Mcp-Param-` headers, checked on 2026-07-28 `tools/call`
    /// requests (default none). [`ParamHeader::of_tool`] reads them from a tool's input
    /// schema; `sansrpc_mcp::server::Endpoint::streamable_config` fills them from its tools.
    pub param_headers: Vec<ParamHeader>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            path: String::from("/mcp"),
            hosts: Hosts::Loopback,
            origins: Origins::SameAsHosts,
            sessions: true,
            stateless: true,
            max_sessions: 1024,
            handshake_timeout: Duration::from_secs(10),
            evict_idle_floor: Duration::from_secs(60),
            max_sessions_per_peer: None,
            max_streams_per_session: 64,
            max_stateless: 1024,
            max_queued_events: 256,
            max_stream_buffer: 4 << 20,
            retry: Duration::from_secs(1),
            keepalive: Duration::from_secs(15),
            json_window: Duration::from_secs(1),
            session_idle: Duration::from_secs(600),
            store_bytes: 8 << 20,
            store_age: Duration::from_secs(300),
            auth: None,
            param_headers: Vec::new(),
        }
    }
}

/// OAuth 2.1 resource-server settings (MCP's authorization, RFC 9728): the adapter checks
/// the bearer token with the application's validator and tells
/// [`Endpoint::handle_request`] what it found ([`Authorized`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Auth {
    /// This server's canonical URI, the `resource` of its metadata
    /// (`https://mcp.example.com/mcp`).
    pub resource: String,
    /// Where its protected-resource metadata is served
    /// (`https://mcp.example.com/.well-known/oauth-protected-resource/mcp`): named in every
    /// 401 and served at its path.
    pub metadata_url: String,
    /// The authorization servers that issue tokens for it.
    pub authorization_servers: Vec<String>,
    /// The scopes it knows (`scopes_supported`).
    pub scopes: Vec<String>,
}

impl Auth {
    /// Settings for the resource `resource` whose metadata is at `metadata_url`, with
    /// tokens from `authorization_server`.
    pub fn new(resource: &str, metadata_url: &str, authorization_server: &str) -> Self {
        Auth {
            resource: String::from(resource),
            metadata_url: String::from(metadata_url),
            authorization_servers: Vec::from([String::from(authorization_server)]),
            scopes: Vec::new(),
        }
    }
}

// What the adapter's token validator found, and an answer written whole: HTTP's, the same
// for every server (`codec::http`).
pub use sansrpc::codec::http::{Authorized, WholeResponse as Response};

/// The answer to a request the adapter could not read on ([`HttpFault`]: a malformed head
/// 400, a body over the limit 413, a head over the limit 431, a transfer coding it does not
/// know 501): a JSON-RPC error (id `null`) that names the fault, and `connection: close`
/// (what follows on the connection cannot be framed). An adapter writes it and closes.
pub fn refusal(fault: HttpFault) -> Response {
    status_refusal(fault.status()).header("connection", "close")
}

/// The answer with `status` that an adapter gives without the machine (a fault of the
/// request's framing, a body over the limit, a server that closes or is past its bounds): a
/// JSON-RPC error (id `null`) that names it, as every refusal of the machine carries one
/// (HTTP's, the same for every JSON-RPC server: [`Response::refusal`]).
pub fn status_refusal(status: u16) -> Response {
    Response::refusal(status)
}

/// A JSON-RPC error response's bytes: `id` as sent (`null` without one), `data` raw JSON.
pub(crate) fn error_body(
    id: Option<&str>,
    code: i64,
    message: &str,
    data: Option<&[u8]>,
) -> Vec<u8> {
    let mut out = Vec::from(&b"{\"jsonrpc\":\"2.0\",\"id\":"[..]);
    out.extend_from_slice(id.unwrap_or("null").as_bytes());
    out.extend_from_slice(b",\"error\":{\"code\":");
    out.extend_from_slice(itoa::Buffer::new().format(code).as_bytes());
    out.extend_from_slice(b",\"message\":");
    sansrpc::message::write_json_string(&mut out, message);
    if let Some(data) = data {
        out.extend_from_slice(b",\"data\":");
        out.extend_from_slice(data);
    }
    out.extend_from_slice(b"}}");
    out
}

/// What to do with one HTTP request; from [`Endpoint::handle_request`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Write this response; nothing else happens.
    Respond(Response),
    /// Hand the body to session `session`'s connection (untagged), then write the
    /// response (`202`).
    Deliver {
        /// The session.
        session: u64,
        /// The answer.
        response: Response,
    },
    /// Hand the body to session `session`'s connection tagged `stream` (a new session for
    /// `initialize`: start its connection first), then serve `stream`.
    Open {
        /// The session.
        session: u64,
        /// The stream its answers go on.
        stream: u64,
        /// The session is new: start a connection for it.
        new_session: bool,
    },
    /// A 2026-07-28 request: run the body on a connection of its own, each of its frames
    /// to [`Endpoint::handle_stream_output`] with `stream`; serve `stream`.
    Stateless {
        /// Its stream.
        stream: u64,
    },
    /// Serve `stream` (a GET).
    Listen {
        /// The stream.
        stream: u64,
    },
    /// The session ended (DELETE): stop its connection; write the response.
    Ended {
        /// The session.
        session: u64,
        /// The answer.
        response: Response,
    },
}

impl Verdict {
    /// The stream it serves, for those that serve one.
    fn stream(&self) -> Option<u64> {
        match *self {
            Verdict::Open { stream, .. }
            | Verdict::Stateless { stream }
            | Verdict::Listen { stream } => Some(stream),
            _ => None,
        }
    }
}

/// What [`Endpoint::poll_stream`] did: the core's [`BodyStep`](sansrpc::codec::http::BodyStep),
/// the contract every machine that writes its responses piece by piece keeps (wait until
/// the stream is [ready](Endpoint::poll_ready), write and poll again, write and end, cut).
pub use sansrpc::codec::http::BodyStep as Step;

/// What closing a stream's response means; from [`Endpoint::handle_stream_closed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Closed {
    /// Nothing more to do.
    Nothing,
    /// A stateless request whose response went away: drop its connection (cancelling its
    /// handler); nothing more will be sent for it.
    Cancel,
    /// A session stream: its messages are kept for a client that resumes it.
    Detached,
}

/// An event for the adapter; from [`Endpoint::poll_event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// The session ended (idle too long, its handshake not finished in time, or evicted
    /// from a full table): stop its connection.
    SessionEnded {
        /// The session.
        session: u64,
    },
}

/// One session of the session revisions.
#[derive(Debug)]
struct Session {
    id: SessionId,
    /// Its streams still known, oldest first (a few: a list, not a set).
    streams: Vec<u64>,
    /// Its GET stream.
    get: Option<u64>,
    /// Messages for no request, waiting for a GET stream (bounded).
    waiting: VecDeque<Vec<u8>>,
    last_active: Instant,
    /// When its `initialize` came.
    created: Instant,
    /// It finished its handshake (`notifications/initialized`, a later request, or a GET).
    initialized: bool,
    /// The peer address that made it, when the adapter named one.
    peer: Option<IpAddr>,
}

/// What a timer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// A stream's JSON window or keep-alive.
    Stream(u64),
    /// A session's idle timeout.
    Session(u64),
    /// The event store's age bound.
    Store,
}

/// The Streamable HTTP endpoint; see the [module documentation](self).
pub struct Endpoint {
    config: Config,
    /// Sessions by their `Mcp-Session-Id` (held in the map's nodes, not each behind a
    /// pointer of its own: a lookup among many sessions reads a few nodes, not a session
    /// id per comparison), and by key.
    ids: BTreeMap<SessionId, u64>,
    sessions: KeyMap<Session>,
    /// The sessions still in their handshake; keys grow, so the first is the oldest.
    half_open: BTreeSet<u64>,
    /// Sessions per peer address (only when [`Config::max_sessions_per_peer`] is set).
    peers: BTreeMap<IpAddr, usize>,
    streams: KeyMap<Stream>,
    stateless: usize,
    next: u64,
    store: Box<dyn EventStore>,
    timers: Timers<Timer>,
    /// POST streams' JSON windows, earliest first: each is its stream's `now` plus the same
    /// window, so they come in order and are queued at the back, and one answered is only
    /// marked (its stream's `window` cleared), not looked for. A deadline earlier than the
    /// last queued (a driver's clock that went back) goes among the timers instead.
    windows: VecDeque<(Instant, u64)>,
    /// Streams with something for their writers, each once (its `queued_ready`).
    ready: VecDeque<u64>,
    events: VecDeque<Event>,
    classifier: Classifier,
    /// The ids of the requests in the last body read ([`Endpoint::request_ids`]).
    call_ids: Vec<Id<'static>>,
    /// Whether the classifier's entries are a batch's, while they are those of the body of the request
    /// being handled ([`Endpoint::handle_request_owned`] hands them on with it).
    body_scan: Option<bool>,
    /// The event store's age timer runs.
    store_armed: bool,
    /// Where [`Endpoint::poll_stream`] writes the HTTP/1.1 framing in front of what it takes.
    scratch: Vec<u8>,
    /// Responses are taken as parts ([`Endpoint::poll_stream_parts`]): a JSON answer is kept
    /// without room for a head in front of it (its buffer then becomes the body as it is).
    parts: bool,
}

impl core::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Endpoint")
            .field("sessions", &self.sessions.len())
            .field("streams", &self.streams.len())
            .finish()
    }
}

/// Where an outgoing message goes.
enum Route {
    Stream(u64),
    Waiting(u64),
    Nowhere,
}

impl Endpoint {
    /// An endpoint with `config` and the default in-memory event store.
    pub fn new(config: Config) -> Self {
        let store = MemoryEventStore::new(config.store_bytes, config.store_age);
        Endpoint::with_store(config, Box::new(store))
    }

    /// An endpoint keeping its events in `store`.
    pub fn with_store(config: Config, store: Box<dyn EventStore>) -> Self {
        let store_last = store.last_stream();
        Endpoint {
            config,
            ids: BTreeMap::new(),
            sessions: KeyMap::default(),
            half_open: BTreeSet::new(),
            peers: BTreeMap::new(),
            streams: KeyMap::default(),
            stateless: 0,
            // Above every stream a durable store kept from before a restart: an old event id
            // never names a new stream.
            next: store_last.saturating_add(1),
            store,
            timers: Timers::new(),
            windows: VecDeque::new(),
            ready: VecDeque::new(),
            events: VecDeque::new(),
            classifier: Classifier::new(Limits::default()),
            call_ids: Vec::new(),
            body_scan: None,
            store_armed: false,
            scratch: Vec::new(),
            parts: false,
        }
    }

    /// The config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The ids of the requests (calls, not notifications) in the body of the request
    /// [`handle_request`](Endpoint::handle_request) read last, in order: a transport that
    /// keeps per call what its handler should see of the HTTP request (its headers, its
    /// principal) records them without reading the body again. Empty after a request
    /// with no body or one refused before it was read.
    pub fn request_ids(&self) -> &[Id<'static>] {
        &self.call_ids
    }

    /// Makes the events the store took since the last call durable (a durable store
    /// commits them; the in-memory one has nothing to do). A driver calls it once per
    /// turn, after handing the machine its input, so a store commits once per turn rather
    /// than once per event.
    pub fn flush_store(&mut self) {
        self.store.flush();
    }

    /// Sessions open.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Streams known (open, or kept for resumption).
    pub fn streams(&self) -> usize {
        self.streams.len()
    }

    fn fresh(&mut self) -> u64 {
        let n = self.next;
        self.next += 1;
        n
    }

    // ----- requests -----

    /// Decides what to do with one HTTP request: its head, its body (empty for GET and
    /// DELETE), what the token validator found, the time, and a source of unguessable
    /// bytes (for new session ids). The same as
    /// [`handle_request_from`](Endpoint::handle_request_from) with no peer address named.
    pub fn handle_request(
        &mut self,
        head: &Head,
        body: &[u8],
        auth: Authorized,
        now: Instant,
        entropy: &mut dyn FnMut(&mut [u8]),
    ) -> Verdict {
        self.handle_request_from(head, body, auth, None, now, entropy)
    }

    /// [`handle_request`](Endpoint::handle_request) for a request from `peer` (the client's
    /// address, as the adapter saw the connection), which
    /// [`Config::max_sessions_per_peer`] counts sessions by.
    ///
    /// A request from a page of an allowed origin ([`Config::origins`]) gets CORS: its
    /// preflight is answered `204`, and every answer lets that origin read it and the MCP
    /// headers (`Mcp-Session-Id`, `MCP-Protocol-Version`, `WWW-Authenticate`).
    pub fn handle_request_from(
        &mut self,
        head: &Head,
        body: &[u8],
        auth: Authorized,
        peer: Option<IpAddr>,
        now: Instant,
        entropy: &mut dyn FnMut(&mut [u8]),
    ) -> Verdict {
        let verdict = self.decide(head, body, auth, peer, now, entropy);
        // Whichever request a stream's response answers now (a resumption may be another).
        if let Some(s) = verdict
            .stream()
            .and_then(|stream| self.streams.get_mut(&stream))
        {
            s.close_delimited = head.http10;
        }
        match head.origin.as_deref() {
            Some(origin) if self.config.origins.allows(origin, &self.config.hosts) => {
                self.with_cors(verdict, origin)
            }
            _ => verdict,
        }
    }

    /// The verdict as [`handle_request_from`](Endpoint::handle_request_from) gives it, before
    /// CORS.
    fn decide(
        &mut self,
        head: &Head,
        body: &[u8],
        auth: Authorized,
        peer: Option<IpAddr>,
        now: Instant,
        entropy: &mut dyn FnMut(&mut [u8]),
    ) -> Verdict {
        self.body_scan = None;
        self.call_ids.clear();
        if !self.store_armed {
            self.store_armed = true;
            self.timers
                .set(Timer::Store, Some(now + self.config.store_age / 4));
        }
        let path = head.target().split('?').next().unwrap_or_default();
        if let Some(auth) = &self.config.auth {
            if metadata_path(&auth.metadata_url).is_some_and(|p| p == path) {
                return Verdict::Respond(metadata(auth));
            }
        }
        if path != self.config.path {
            let why = "Not Found: no MCP endpoint at this path";
            return Verdict::Respond(Response::json(404, error_body(None, -32000, why, None)));
        }
        if let Err(refused) = self.check_origin(head) {
            return Verdict::Respond(refused);
        }
        // A preflight carries no token: it is answered before the token is asked for.
        if let (HttpMethod::Options, true, Some(_)) = (
            head.method,
            head.cors_request_method,
            head.origin.as_deref(),
        ) {
            let methods = if self.config.sessions {
                "GET, POST, DELETE"
            } else {
                "POST"
            };
            return Verdict::Respond(rules::preflight(head, methods));
        }
        if let Some(refused) = self.check_auth(&auth) {
            return Verdict::Respond(refused);
        }
        match head.method {
            HttpMethod::Post => self.post(head, body, peer, now, entropy),
            HttpMethod::Get if self.config.sessions => self.get(head, now),
            HttpMethod::Delete if self.config.sessions => self.delete(head),
            _ => {
                let allow = if self.config.sessions {
                    "GET, POST, DELETE"
                } else {
                    "POST"
                };
                let why = "Method Not Allowed: the MCP endpoint takes POST (and GET, DELETE with sessions)";
                let body = error_body(None, -32000, why, None);
                Verdict::Respond(Response::json(405, body).header("allow", allow))
            }
        }
    }

    /// [`handle_request_from`](Endpoint::handle_request_from) taking the body: when the
    /// verdict hands it to a connection ([`Verdict::Deliver`], [`Verdict::Open`],
    /// [`Verdict::Stateless`]), the body comes back with what the machine's reading of it
    /// found ([`Scanned`]), which the connection then reads instead of scanning the body a
    /// second time ([`Connection::handle_scanned_tagged`]). `None` for the other verdicts.
    ///
    /// [`Connection::handle_scanned_tagged`]: sansrpc::Connection::handle_scanned_tagged
    pub fn handle_request_owned(
        &mut self,
        head: &Head,
        body: Vec<u8>,
        auth: Authorized,
        peer: Option<IpAddr>,
        now: Instant,
        entropy: &mut dyn FnMut(&mut [u8]),
    ) -> (Verdict, Option<Scanned>) {
        let verdict = self.handle_request_from(head, &body, auth, peer, now, entropy);
        let delivered = matches!(
            verdict,
            Verdict::Deliver { .. } | Verdict::Open { .. } | Verdict::Stateless { .. }
        );
        let scanned = match (delivered, self.body_scan.take()) {
            (false, _) => None,
            // The classifier's entries are still this body's: nothing classified since.
            (true, Some(batch)) => Some(self.classifier.scanned(body, batch)),
            (true, None) => Some(Scanned::new(body)),
        };
        (verdict, scanned)
    }

    /// `verdict` with CORS for allowed page origin `origin`: its response lets the origin
    /// read it, or its stream's will.
    fn with_cors(&mut self, verdict: Verdict, origin: &str) -> Verdict {
        let add = |mut response: Response| {
            for (name, value) in rules::cors_fields(origin) {
                let value = core::str::from_utf8(value).unwrap_or_default();
                response = response.header(name, value);
            }
            response
        };
        match verdict {
            Verdict::Respond(response) => Verdict::Respond(add(response)),
            Verdict::Deliver { session, response } => Verdict::Deliver {
                session,
                response: add(response),
            },
            Verdict::Ended { session, response } => Verdict::Ended {
                session,
                response: add(response),
            },
            Verdict::Open { stream, .. }
            | Verdict::Stateless { stream }
            | Verdict::Listen { stream } => {
                if let Some(s) = self.streams.get_mut(&stream) {
                    s.cors = Some(origin.into());
                    if let Some(head) = &mut s.head {
                        head.allow_origin = Some(origin.into());
                    }
                }
                verdict
            }
        }
    }

    /// Host and Origin (DNS-rebinding protection): 403 for one not allowed, whose message
    /// names the value refused (its first 100 bytes) and the setting that allows it.
    fn check_origin(&self, head: &Head) -> Result<(), Response> {
        let forbidden = |what: &str, value: &str, setting: &str| {
            let value = match value.char_indices().nth(100) {
                Some((end, _)) => &value[..end],
                None => value,
            };
            let why = format!(
                "Forbidden: {what} {value:?} not allowed (the server allows it with {setting})"
            );
            Response::json(403, error_body(None, -32600, &why, None))
        };
        let host = rules::text(head, "host").unwrap_or_default();
        if !self.config.hosts.allows(host) {
            return Err(forbidden(
                "Host",
                host,
                "streamable::Config::hosts: Hosts::List of its names, or Hosts::Any behind a proxy that checks them",
            ));
        }
        if let Some(origin) = rules::text(head, "origin") {
            if !self.config.origins.allows(origin, &self.config.hosts) {
                return Err(forbidden(
                    "Origin",
                    origin,
                    "streamable::Config::origins: Origins::List of its origins, or a Host allowed by streamable::Config::hosts",
                ));
            }
        }
        Ok(())
    }

    /// The answer to a request without a valid token, when tokens are required.
    fn check_auth(&self, found: &Authorized) -> Option<Response> {
        let auth = self.config.auth.as_ref()?;
        let params = format!("resource_metadata=\"{}\"", auth.metadata_url);
        let (status, challenge) = found.refusal(&params)?;
        let why = match found {
            Authorized::Missing => "Unauthorized",
            Authorized::Invalid => "Unauthorized: invalid token",
            _ => "Forbidden: insufficient scope",
        };
        let body = error_body(None, -32600, why, None);
        Some(Response::json(status, body).header("www-authenticate", &challenge))
    }

    fn post(
        &mut self,
        head: &Head,
        body: &[u8],
        peer: Option<IpAddr>,
        now: Instant,
        entropy: &mut dyn FnMut(&mut [u8]),
    ) -> Verdict {
        if !head.json {
            let body = error_body(None, -32600, "Content-Type must be application/json", None);
            return Verdict::Respond(Response::json(415, body));
        }
        if !rules::accepts(head, &["application/json", "text/event-stream"]) {
            let why = "Not Acceptable: Accept must list application/json and text/event-stream";
            return Verdict::Respond(Response::json(406, error_body(None, -32600, why, None)));
        }
        let shape = match self.shape(body) {
            Ok(shape) => shape,
            Err(refused) => return Verdict::Respond(refused),
        };
        let session_header = rules::text(head, "mcp-session-id");
        let version_header = rules::text(head, "mcp-protocol-version");
        let stateless = self.config.stateless
            && session_header.is_none()
            && (rules::has_meta_version(body) || version_header == Some(STATELESS));
        if stateless {
            return self.post_stateless(head, body, shape, now);
        }
        if !self.config.sessions {
            // A modern-only server: what it speaks, in the error any older request gets.
            let data = rules::unsupported_data(None);
            let body = error_body(
                // The id of a lone request, read only for this error.
                (shape.requests == 1)
                    .then(|| rules::stateless(body).and_then(|s| s.id))
                    .flatten(),
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                Some(&data),
            );
            return Verdict::Respond(Response::json(400, body));
        }
        if let Some(version) = version_header {
            if !version::is_handshake(version) {
                let why = "Bad Request: unsupported MCP-Protocol-Version";
                return Verdict::Respond(Response::json(400, error_body(None, -32000, why, None)));
            }
        }
        match session_header {
            None if shape.initialize => self.initialize(peer, now, entropy),
            None => {
                let why = "Bad Request: Mcp-Session-Id header is required";
                Verdict::Respond(Response::json(400, error_body(None, -32000, why, None)))
            }
            Some(id) => {
                let Some(&key) = session_key(&self.ids, id) else {
                    let body = error_body(None, -32001, "Session not found", None);
                    return Verdict::Respond(Response::json(404, body));
                };
                let session = self.sessions.get_mut(&key).expect("indexed");
                session.last_active = now;
                if shape.requests > 0 || shape.initialized {
                    let idle = now + self.config.session_idle;
                    established(session, &mut self.half_open, &mut self.timers, key, idle);
                }
                if shape.requests == 0 {
                    return Verdict::Deliver {
                        session: key,
                        response: Response::new(202),
                    };
                }
                if session.streams.len() >= self.config.max_streams_per_session {
                    let why = "Too many streams open in this session";
                    return Verdict::Respond(Response::json(
                        429,
                        error_body(None, -32000, why, None),
                    ));
                }
                let stream = self.open_stream(Kind::Post, key, shape.requests, true, now);
                Verdict::Open {
                    session: key,
                    stream,
                    new_session: false,
                }
            }
        }
    }

    /// What a POST body holds: its requests, whether it is `initialize`, its id.
    fn shape(&mut self, body: &[u8]) -> Result<Shape, Response> {
        let mut shape = Shape::default();
        match self.classifier.classify(body) {
            Classified::Rejected(rejection) => {
                let error = rejection.error(&Limits::default());
                let body = error_body(None, error.code, &error.message, None);
                return Err(Response::json(400, body));
            }
            Classified::Single(entry) => {
                note(&entry, &mut shape, &mut self.call_ids);
                self.body_scan = Some(false);
            }
            Classified::Batch(batch) => {
                let mut initializes = 0;
                for entry in batch {
                    if matches!(&entry, Incoming::Request(r) if r.method == "initialize") {
                        initializes += 1;
                    }
                    note(&entry, &mut shape, &mut self.call_ids);
                }
                if initializes > 0 {
                    // The revisions that had batches say `initialize` is never in one.
                    self.call_ids.clear();
                    let why = if initializes > 1 {
                        "Invalid Request: more than one initialize in a batch; initialize is sent alone"
                    } else {
                        "Invalid Request: initialize must not be part of a batch; send it alone"
                    };
                    return Err(Response::json(400, error_body(None, -32600, why, None)));
                }
                self.body_scan = Some(true);
            }
        }
        Ok(shape)
    }

    fn initialize(
        &mut self,
        peer: Option<IpAddr>,
        now: Instant,
        entropy: &mut dyn FnMut(&mut [u8]),
    ) -> Verdict {
        if let Some(refused) = self.make_room(peer, now) {
            return Verdict::Respond(refused);
        }
        let mut id = [0u8; SESSION_ID_LEN];
        for _ in 0..8 {
            let mut raw = [0u8; SESSION_ID_LEN / 2];
            entropy(&mut raw);
            for (pair, b) in id.chunks_exact_mut(2).zip(raw) {
                pair[0] = b"0123456789abcdef"[usize::from(b >> 4)];
                pair[1] = b"0123456789abcdef"[usize::from(b & 15)];
            }
            if !self.ids.contains_key(&id) {
                break;
            }
        }
        if self.ids.contains_key(&id) {
            let why = "Internal error: no fresh session id";
            return Verdict::Respond(Response::json(500, error_body(None, -32603, why, None)));
        }
        let key = self.fresh();
        self.ids.insert(id, key);
        self.sessions.insert(
            key,
            Session {
                id,
                streams: Vec::new(),
                get: None,
                waiting: VecDeque::new(),
                last_active: now,
                created: now,
                initialized: false,
                peer: peer.filter(|_| self.config.max_sessions_per_peer.is_some()),
            },
        );
        self.half_open.insert(key);
        if let Some(peer) = self.sessions[&key].peer {
            *self.peers.entry(peer).or_default() += 1;
        }
        self.timers
            .set(Timer::Session(key), Some(now + self.handshake()));
        let stream = self.open_stream(Kind::Post, key, 1, true, now);
        if let Some(s) = self.streams.get_mut(&stream) {
            s.announce = true;
        }
        Verdict::Open {
            session: key,
            stream,
            new_session: true,
        }
    }

    /// The time a new session has to finish its handshake (never more than an idle one).
    fn handshake(&self) -> Duration {
        self.config.handshake_timeout.min(self.config.session_idle)
    }

    /// Makes room for a new session from `peer`: within the peer's limit by evicting its
    /// oldest session in its handshake, within the table by evicting the oldest session in
    /// its handshake or else the longest-idle one past the floor. The refusal when there
    /// is no room.
    fn make_room(&mut self, peer: Option<IpAddr>, now: Instant) -> Option<Response> {
        if let (Some(limit), Some(peer)) = (self.config.max_sessions_per_peer, peer) {
            if self.peers.get(&peer).copied().unwrap_or(0) >= limit {
                let own = self.half_open.iter().copied().find(|&k| {
                    self.sessions.get(&k).is_some_and(|s| s.peer == Some(peer)) && !self.busy(k)
                });
                match own {
                    Some(key) => self.evict(key),
                    None => {
                        let why = "Too Many Requests: too many sessions from this address";
                        return Some(Response::json(429, error_body(None, -32000, why, None)));
                    }
                }
            }
        }
        if self.sessions.len() < self.config.max_sessions {
            return None;
        }
        // Not one whose `initialize` is still being answered.
        if let Some(key) = self.half_open.iter().copied().find(|&k| !self.busy(k)) {
            self.evict(key);
            return None;
        }
        let floor = self.config.evict_idle_floor;
        let idlest = self
            .sessions
            .iter()
            .filter(|&(&key, s)| s.last_active + floor <= now && !self.busy(key))
            // Of those idle as long, the oldest.
            .min_by_key(|&(&key, s)| (s.last_active, key))
            .map(|(&key, _)| key);
        match idlest {
            Some(key) => {
                self.evict(key);
                None
            }
            None => {
                let why = "Service Unavailable: too many sessions";
                Some(Response::json(503, error_body(None, -32000, why, None)))
            }
        }
    }

    /// True while session `key` has a response open (a request being answered, its GET
    /// stream).
    fn busy(&self, key: u64) -> bool {
        self.sessions.get(&key).is_some_and(|s| {
            s.streams
                .iter()
                .any(|id| self.streams.get(id).is_some_and(|st| st.attached))
        })
    }

    /// Ends session `key` to make room; the adapter hears of it ([`Event::SessionEnded`]).
    fn evict(&mut self, key: u64) {
        self.end_session(key);
        self.events.push_back(Event::SessionEnded { session: key });
    }

    fn post_stateless(&mut self, head: &Head, body: &[u8], shape: Shape, now: Instant) -> Verdict {
        let Some(fields) = rules::stateless(body) else {
            let why = "Invalid Request: a 2026-07-28 POST carries one message";
            return Verdict::Respond(Response::json(400, error_body(None, -32600, why, None)));
        };
        if fields.id.is_none() {
            // No notification of the client's is defined over HTTP in this revision.
            return Verdict::Respond(Response::new(202));
        }
        if let Err(refused) = rules::check_stateless(head, &fields, &self.config.param_headers) {
            return Verdict::Respond(refused);
        }
        if self.stateless >= self.config.max_stateless {
            let why = "Service Unavailable: too many requests running";
            let body = error_body(fields.id, -32603, why, None);
            return Verdict::Respond(Response::json(503, body));
        }
        self.stateless += 1;
        let stream = self.open_stream(Kind::Post, 0, shape.requests.max(1), false, now);
        if let Some(s) = self.streams.get_mut(&stream) {
            s.json_status = stateless_status;
        }
        Verdict::Stateless { stream }
    }

    fn get(&mut self, head: &Head, now: Instant) -> Verdict {
        let Some(id) = rules::text(head, "mcp-session-id") else {
            let why = "Bad Request: Mcp-Session-Id header is required";
            return Verdict::Respond(Response::json(400, error_body(None, -32000, why, None)));
        };
        let resumed = rules::text(head, "last-event-id").and_then(sse::parse_event_id);
        let Some(&key) = session_key(&self.ids, id) else {
            if let Some((stream, seq)) = resumed {
                if !self.streams.contains_key(&stream)
                    && self.store.owner(stream).as_deref() == Some(id.as_bytes())
                    && rules::accepts(head, &["text/event-stream"])
                {
                    return self.replay_kept(stream, seq, now);
                }
            }
            return Verdict::Respond(Response::json(
                404,
                error_body(None, -32001, "Session not found", None),
            ));
        };
        if !rules::accepts(head, &["text/event-stream"]) {
            let why = "Not Acceptable: Accept must list text/event-stream";
            return Verdict::Respond(Response::json(406, error_body(None, -32600, why, None)));
        }
        let session = self.sessions.get_mut(&key).expect("indexed");
        session.last_active = now;
        let idle = now + self.config.session_idle;
        established(session, &mut self.half_open, &mut self.timers, key, idle);
        if let Some((stream, seq)) = resumed {
            if self.streams.get(&stream).is_some_and(|s| s.session == key) {
                return self.resume(stream, seq, now);
            }
        }
        if let Some(get) = session.get {
            if self.streams.get(&get).is_some_and(|s| s.attached) {
                let why = "Conflict: this session's GET stream is open";
                return Verdict::Respond(Response::json(409, error_body(None, -32000, why, None)));
            }
            return self.resume(get, self.streams.get(&get).map_or(0, |s| s.seq), now);
        }
        let stream = self.open_stream(Kind::Get, key, 0, true, now);
        let session = self.sessions.get_mut(&key).expect("indexed");
        session.get = Some(stream);
        let waiting = core::mem::take(&mut session.waiting);
        self.sse_now(stream);
        for frame in waiting {
            self.deliver(stream, &frame, now);
        }
        Verdict::Listen { stream }
    }

    /// Attaches a new response to `stream`, replaying its events after `seq`.
    fn resume(&mut self, stream: u64, seq: u64, now: Instant) -> Verdict {
        let retry = retry_ms(&self.config);
        let Some(s) = self.streams.get_mut(&stream) else {
            let body = error_body(None, -32001, "Session not found", None);
            return Verdict::Respond(Response::json(404, body));
        };
        s.attached = true;
        s.ended = false;
        s.clear();
        s.last_write = now;
        let last = s.seq;
        s.seq = seq;
        s.open_sse(stream, retry, None);
        s.seq = last;
        self.store.replay(stream, seq, &mut |_, event| {
            s.chunk(event);
        });
        if s.done {
            s.end();
        }
        self.stream_deadline(stream, Some(now + self.config.keepalive));
        self.wake(stream);
        Verdict::Listen { stream }
    }

    /// A client resumes a stream of a session from before a restart (the durable store
    /// names the session as its owner): what the store kept after `seq` goes out on a
    /// response that then ends. The session itself is gone: its next POST is answered
    /// 404, and the client starts a new one, as for any ended session.
    fn replay_kept(&mut self, stream: u64, seq: u64, now: Instant) -> Verdict {
        let id = self.fresh();
        let mut s = Stream::new(Kind::Replay, 0, 0, false, now);
        s.open_sse(id, retry_ms(&self.config), None);
        self.store.replay(stream, seq, &mut |_, event| {
            s.chunk(event);
        });
        s.done = true;
        s.end();
        self.streams.insert(id, s);
        self.wake(id);
        Verdict::Listen { stream: id }
    }

    fn delete(&mut self, head: &Head) -> Verdict {
        let Some(id) = rules::text(head, "mcp-session-id") else {
            let why = "Bad Request: Mcp-Session-Id header is required";
            return Verdict::Respond(Response::json(400, error_body(None, -32000, why, None)));
        };
        let Some(&key) = session_key(&self.ids, id) else {
            return Verdict::Respond(Response::json(
                404,
                error_body(None, -32001, "Session not found", None),
            ));
        };
        self.end_session(key);
        Verdict::Ended {
            session: key,
            response: Response::new(200),
        }
    }

    /// Forgets session `key`: its streams end, its events go.
    fn end_session(&mut self, key: u64) {
        let Some(session) = remove_and_shrink(&mut self.sessions, &key) else {
            return;
        };
        self.ids.remove(&session.id);
        self.half_open.remove(&key);
        if let Some(peer) = session.peer {
            if let Some(n) = self.peers.get_mut(&peer) {
                *n -= 1;
                if *n == 0 {
                    self.peers.remove(&peer);
                }
            }
        }
        self.timers.set(Timer::Session(key), None);
        for stream in session.streams {
            self.store.remove(stream);
            self.timers.set(Timer::Stream(stream), None);
            if let Some(mut s) = remove_and_shrink(&mut self.streams, &stream) {
                if s.attached {
                    // An attached response ends now: it is cut (nothing more will come).
                    s.done = true;
                    s.end();
                    self.streams.insert(stream, s);
                    self.wake(stream);
                }
            }
        }
    }

    fn open_stream(
        &mut self,
        kind: Kind,
        session: u64,
        pending: usize,
        resumable: bool,
        now: Instant,
    ) -> u64 {
        let id = self.fresh();
        let resumable = resumable && session != 0;
        let mut stream = Stream::new(kind, session, pending, resumable, now);
        if kind == Kind::Post {
            // No window: nothing to decide when it ends; the stream's first keep-alive.
            let window = match self.config.json_window {
                Duration::ZERO => self.config.keepalive,
                window => window,
            };
            let at = now + window;
            match self.windows.back() {
                Some(&(last, _)) if last > at => self.timers.set(Timer::Stream(id), Some(at)),
                _ => {
                    self.windows.push_back((at, id));
                    stream.window = Some(at);
                }
            }
        }
        self.streams.insert(id, stream);
        if let Some(s) = self.sessions.get_mut(&session) {
            s.streams.push(id);
        }
        if resumable {
            if let Some(s) = self.sessions.get(&session) {
                self.store.set_owner(id, &s.id);
            }
        }
        self.tidy_windows();
        id
    }

    /// Sets `stream`'s deadline among the timers (`None`: it has none), its JSON window
    /// forgotten.
    fn stream_deadline(&mut self, stream: u64, at: Option<Instant>) {
        if let Some(s) = self.streams.get_mut(&stream) {
            s.window = None;
        }
        self.timers.set(Timer::Stream(stream), at);
    }

    /// Drops the stale windows at the front of the queue, and rebuilds it without any stale
    /// one when they outnumber the streams (a driver that seldom runs its timeouts): the
    /// queue stays within about twice the streams.
    fn tidy_windows(&mut self) {
        while let Some(front) = self.windows.front() {
            if window_live(&self.streams, front) {
                break;
            }
            self.windows.pop_front();
        }
        if self.windows.len() > 2 * self.streams.len() + 64 {
            let streams = &self.streams;
            self.windows.retain(|w| window_live(streams, w));
        }
    }

    /// Starts the SSE response of `stream` at once (a GET).
    fn sse_now(&mut self, stream: u64) {
        let retry = retry_ms(&self.config);
        if let Some(s) = self.streams.get_mut(&stream) {
            s.open_sse(stream, retry, None);
            self.wake(stream);
        }
    }

    // ----- what the connections send -----

    /// A frame session `session`'s connection wrote, with its tag (the stream of the
    /// request it answers or was sent for; 0 for none).
    pub fn handle_outgoing(&mut self, session: u64, frame: &[u8], tag: u64, now: Instant) {
        let route = match self.streams.get(&tag) {
            Some(s) if tag != 0 && s.session == session => Route::Stream(tag),
            _ => match self.sessions.get(&session) {
                Some(s) => match s.get {
                    Some(get) => Route::Stream(get),
                    None => Route::Waiting(session),
                },
                None => Route::Nowhere,
            },
        };
        match route {
            Route::Stream(stream) => self.deliver(stream, frame, now),
            Route::Waiting(key) => {
                let max = self.config.max_queued_events;
                if let Some(s) = self.sessions.get_mut(&key) {
                    if s.waiting.len() >= max {
                        s.waiting.pop_front();
                    }
                    s.waiting.push_back(frame.to_vec());
                }
            }
            Route::Nowhere => {}
        }
    }

    /// A frame the connection of the stateless request of `stream` wrote.
    pub fn handle_stream_output(&mut self, stream: u64, frame: &[u8], now: Instant) {
        self.deliver(stream, frame, now);
    }

    /// Puts one message on `stream`: the JSON answer, or an SSE event.
    fn deliver(&mut self, stream: u64, frame: &[u8], now: Instant) {
        let (answers, error) = self.answers(frame);
        let retry = retry_ms(&self.config);
        let max_queued = self.config.max_queued_events;
        let max_buffer = self.config.max_stream_buffer;
        let session_id = self.session_id_of(stream);
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        if s.done {
            return;
        }
        s.pending = s.pending.saturating_sub(answers);
        let last = answers > 0 && s.pending == 0 && s.kind == Kind::Post;
        let json = !self.config.json_window.is_zero();
        if s.mode == Mode::Undecided && last && s.attached && json {
            // The answer is the first thing for this request: one JSON body.
            let status = (s.json_status)(error);
            s.answer_json(status, session_id, frame, !self.parts);
            s.done = true;
            s.ended = true;
            s.last_write = now;
            if s.window.take().is_some() {
                // Its deadline was only in the queue of windows.
                self.tidy_windows();
            } else {
                self.timers.set(Timer::Stream(stream), None);
            }
            self.wake(stream);
            return;
        }
        if s.mode == Mode::Undecided && s.attached {
            s.open_sse(stream, retry, session_id.as_deref());
        }
        if s.mode == Mode::Undecided {
            // Detached before anything went out: a client resuming it reads events.
            s.mode = Mode::Sse;
        }
        // The frame, its field names and an id: one allocation.
        let mut event = Vec::with_capacity(frame.len() + 64);
        let text = core::str::from_utf8(frame).unwrap_or_default();
        if s.resumable {
            s.seq += 1;
            let mut eid = Vec::new();
            sse::event_id(stream, s.seq, &mut eid);
            let eid = core::str::from_utf8(&eid).unwrap_or_default();
            sse::encode_event(&mut event, Some(eid), Some("message"), text, None);
            self.store.append(stream, s.seq, &event, now);
        } else {
            sse::encode_event(&mut event, None, Some("message"), text, None);
        }
        if s.attached {
            s.chunk(&event);
            s.last_write = now;
        } else if !s.resumable {
            if s.queued.len() >= max_queued {
                s.queued.pop_front();
            }
            s.queued.push_back(event);
        }
        if last {
            s.done = true;
            if s.attached {
                s.end();
            }
        }
        if s.out.len() > max_buffer {
            // A client that does not read: its response is cut; the events are kept
            // (resumable) or lost with the request (stateless: it is cancelled).
            s.attached = false;
            s.clear();
            s.cut = true;
        }
        let keepalive = self.config.keepalive;
        self.stream_deadline(
            stream,
            (!self.streams.get(&stream).is_some_and(|s| s.done)).then(|| now + keepalive),
        );
        self.wake(stream);
    }

    /// How many responses `frame` holds, and the code of the error when it is one error
    /// response.
    fn answers(&mut self, frame: &[u8]) -> (usize, Option<i64>) {
        if let Some(kind) = peek_single(frame) {
            return kind;
        }
        // The classifier's entries are this frame's from here.
        self.body_scan = None;
        match self.classifier.classify(frame) {
            Classified::Single(Incoming::Response(r)) => {
                (1, r.result.as_ref().err().map(|e| e.code))
            }
            Classified::Single(Incoming::BadResponse { .. }) => (1, None),
            Classified::Batch(batch) => (
                batch
                    .filter(|e| matches!(e, Incoming::Response(_) | Incoming::BadResponse { .. }))
                    .count(),
                None,
            ),
            _ => (0, None),
        }
    }

    /// The session id to name on `stream`'s response, when it is the stream of the
    /// `initialize` that made the session (its first stream).
    fn session_id_of(&self, stream: u64) -> Option<Vec<u8>> {
        let s = self.streams.get(&stream).filter(|s| s.announce)?;
        self.sessions
            .get(&s.session)
            .map(|session| session.id.to_vec())
    }

    /// The connection of session `session` ended (by itself, or it was stopped): its
    /// streams end.
    pub fn handle_session_closed(&mut self, session: u64) {
        self.end_session(session);
    }

    // ----- what the adapter writes -----

    /// Appends what `stream`'s response has to write to `out`; see [`Step`].
    pub fn poll_stream(&mut self, stream: u64, out: &mut Vec<u8>) -> Step {
        let start = out.len();
        let mut head = None;
        let close_delimited = self.streams.get(&stream).is_some_and(|s| s.close_delimited);
        let (step, sse) = self.take_stream(stream, &mut head, out);
        // Events answering HTTP/1.0 are not chunked: their end is the connection's close.
        let chunked = sse && !close_delimited;
        // The HTTP/1.1 framing around what was taken: the head, and for events one chunk
        // of what came since the last turn, then the last chunk at the end.
        let mut prefix = core::mem::take(&mut self.scratch);
        prefix.clear();
        let len = out.len() - start;
        if let Some(head) = head {
            head.write(&mut prefix, len, close_delimited);
        }
        if chunked && len > 0 {
            sansrpc::codec::http::chunk_line(&mut prefix, len);
            out.extend_from_slice(b"\r\n");
        }
        if chunked && step == Step::End {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        if !prefix.is_empty() {
            out.splice(start..start, prefix.drain(..));
        }
        self.scratch = prefix;
        step
    }

    /// What `stream`'s response has to write, for a driver whose HTTP library writes the
    /// head and frames the body itself (hyper, HTTP/2): the head into `head` the first
    /// time (it comes before any body byte), and the body's bytes appended to `body` as
    /// they are, unframed (one JSON answer, or events); see [`Step`]. The same response
    /// [`poll_stream`](Self::poll_stream) writes as HTTP/1.1.
    pub fn poll_stream_parts(
        &mut self,
        stream: u64,
        head: &mut Option<StreamHead>,
        body: &mut Vec<u8>,
    ) -> Step {
        self.parts = true;
        self.take_stream(stream, head, body).0
    }

    /// What `stream` has for its response: the head into `head`, the body's bytes
    /// appended to `body`; the step, and whether they are events of its response (framed
    /// as chunks in HTTP/1.1, and its end the last chunk).
    fn take_stream(
        &mut self,
        stream: u64,
        head: &mut Option<StreamHead>,
        body: &mut Vec<u8>,
    ) -> (Step, bool) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return (Step::Abort, false);
        };
        let sse = s.mode == Mode::Sse;
        if core::mem::take(&mut s.cut) {
            if s.session == 0 && s.kind != Kind::Replay {
                // A stateless request cut is a request cancelled.
                self.handle_stream_closed(stream, Instant::ZERO);
            }
            return (Step::Abort, false);
        }
        if !s.attached && !s.pending() {
            // No response, or its end was taken already: nothing to frame.
            return (if s.ended { Step::End } else { Step::Abort }, false);
        }
        let wrote = s.pending();
        if let Some(h) = s.head.take() {
            *head = Some(h);
        }
        if body.is_empty() {
            // Handed over whole (a JSON answer, with room for its head), not copied.
            core::mem::swap(body, &mut s.out);
        } else {
            body.extend_from_slice(&s.out);
        }
        s.out.clear();
        if s.ended {
            let finished = s.done;
            s.attached = false;
            if finished {
                self.finish(stream);
            }
            return (Step::End, sse);
        }
        if wrote {
            (Step::Data, sse)
        } else {
            (Step::Wait, sse)
        }
    }

    /// Forgets a stream whose every answer was written, and its events in the store: a
    /// finished stream is not resumed (a `Last-Event-ID` naming it gets the session's GET
    /// stream), so they would only fill the store, one entry per request, for as long as
    /// the session lives.
    fn finish(&mut self, stream: u64) {
        let Some(s) = remove_and_shrink(&mut self.streams, &stream) else {
            return;
        };
        self.store.remove(stream);
        if s.kind == Kind::Replay {
            // Counted nowhere.
        } else if s.session == 0 {
            self.stateless = self.stateless.saturating_sub(1);
        } else if let Some(session) = self.sessions.get_mut(&s.session) {
            // In the order they opened, as a set of them kept them.
            if let Some(i) = session.streams.iter().position(|&id| id == stream) {
                session.streams.remove(i);
            }
        }
        self.timers.set(Timer::Stream(stream), None);
    }

    /// The client closed `stream`'s response before its end.
    pub fn handle_stream_closed(&mut self, stream: u64, now: Instant) -> Closed {
        let Some(s) = self.streams.get_mut(&stream) else {
            return Closed::Nothing;
        };
        s.attached = false;
        s.clear();
        if s.kind == Kind::Replay {
            remove_and_shrink(&mut self.streams, &stream);
            return Closed::Nothing;
        }
        if s.session == 0 {
            self.stateless = self.stateless.saturating_sub(1);
            remove_and_shrink(&mut self.streams, &stream);
            self.timers.set(Timer::Stream(stream), None);
            return Closed::Cancel;
        }
        if let Some(session) = self.sessions.get_mut(&s.session) {
            session.last_active = now;
        }
        self.stream_deadline(stream, None);
        Closed::Detached
    }

    /// The next stream with something to write, to wake its response's writer.
    pub fn poll_ready(&mut self) -> Option<u64> {
        let stream = self.ready.pop_front()?;
        if let Some(s) = self.streams.get_mut(&stream) {
            s.queued_ready = false;
        }
        Some(stream)
    }

    fn wake(&mut self, stream: u64) {
        let queued = match self.streams.get_mut(&stream) {
            Some(s) => core::mem::replace(&mut s.queued_ready, true),
            // Gone: its writer learns so as it looks (once).
            None => self.ready.contains(&stream),
        };
        if !queued {
            self.ready.push_back(stream);
        }
    }

    /// The next event for the adapter.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // ----- time -----

    /// The next instant [`handle_timeout`](Endpoint::handle_timeout) has work at.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let window = self.windows.iter().find(|w| window_live(&self.streams, w));
        match (self.timers.next_deadline(), window) {
            (Some(t), Some(&(w, _))) => Some(t.min(w)),
            (t, w) => t.or(w.map(|&(at, _)| at)),
        }
    }

    /// The earliest due window or timer at `now`, taken (a window before a timer due at
    /// the same instant).
    fn pop_due(&mut self, now: Instant) -> Option<Timer> {
        self.tidy_windows();
        let window = self.windows.front().filter(|&&(at, _)| at <= now);
        match (window, self.timers.next_deadline()) {
            (Some(&(at, stream)), next) if next.map_or(true, |t| at <= t) => {
                self.windows.pop_front();
                if let Some(s) = self.streams.get_mut(&stream) {
                    s.window = None;
                }
                Some(Timer::Stream(stream))
            }
            _ => self.timers.pop_due(now),
        }
    }

    /// Runs what is due at `now`: JSON windows that turn into SSE streams, keep-alive
    /// comments, idle sessions ending, events ageing out.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(timer) = self.pop_due(now) {
            match timer {
                Timer::Stream(stream) => self.stream_timer(stream, now),
                Timer::Session(key) => {
                    let Some(session) = self.sessions.get(&key) else {
                        continue;
                    };
                    // A session in its handshake has until its deadline, whatever it has
                    // open; an initialized one lives while a stream is open or it is busy.
                    let (open, due) = if session.initialized {
                        let open = session
                            .streams
                            .iter()
                            .any(|s| self.streams.get(s).is_some_and(|s| s.attached));
                        (open, session.last_active + self.config.session_idle)
                    } else {
                        (false, session.created + self.handshake())
                    };
                    if open || due > now {
                        let at = if open {
                            now + self.config.session_idle
                        } else {
                            due
                        };
                        self.timers.set(Timer::Session(key), Some(at));
                    } else {
                        self.end_session(key);
                        self.events.push_back(Event::SessionEnded { session: key });
                    }
                }
                Timer::Store => {
                    self.store.expire(now);
                    self.timers
                        .set(Timer::Store, Some(now + self.config.store_age / 4));
                }
            }
        }
    }

    fn stream_timer(&mut self, stream: u64, now: Instant) {
        let retry = retry_ms(&self.config);
        let keepalive = self.config.keepalive;
        let session_id = self.session_id_of(stream);
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        if !s.attached || s.done {
            return;
        }
        match s.mode {
            Mode::Undecided => s.open_sse(stream, retry, session_id.as_deref()),
            Mode::Sse => {
                let mut comment = Vec::new();
                sse::encode_comment(&mut comment, "keep-alive");
                s.chunk(&comment);
            }
            Mode::Json => return,
        }
        s.last_write = now;
        self.stream_deadline(stream, Some(now + keepalive));
        self.wake(stream);
    }
}

/// Whether the queued window `(at, stream)` is still its stream's.
fn window_live(streams: &KeyMap<Stream>, &(at, stream): &(Instant, u64)) -> bool {
    streams.get(&stream).is_some_and(|s| s.window == Some(at))
}

/// Sessions and streams by key. Keys are the server's own, handed out in turn (a client
/// never picks one that is stored), so they are hashed by one multiplication: an
/// entry is found, added and removed without a B-tree's search or its nodes' shifts of
/// values of 150 bytes and more.
type KeyMap<V> = sansrpc_runtime::KeyMap<u64, V>;

/// The length of the session ids the server makes: 128 random bits in hex.
const SESSION_ID_LEN: usize = 32;

/// A session id as the server keeps it.
type SessionId = [u8; SESSION_ID_LEN];

/// The key of the session a client named `id` (none when it is not an id this server
/// could have made).
fn session_key<'a>(ids: &'a BTreeMap<SessionId, u64>, id: &str) -> Option<&'a u64> {
    ids.get(&SessionId::try_from(id.as_bytes()).ok()?)
}

/// Session `key` (`session`) finished its handshake: it lives until `idle` (or later, while
/// it is busy), not its handshake deadline.
fn established(
    session: &mut Session,
    half_open: &mut BTreeSet<u64>,
    timers: &mut Timers<Timer>,
    key: u64,
    idle: Instant,
) {
    if half_open.remove(&key) {
        session.initialized = true;
        timers.set(Timer::Session(key), Some(idle));
    }
}

/// What a POST body holds.
#[derive(Debug, Default)]
struct Shape {
    requests: usize,
    initialize: bool,
    /// It holds `notifications/initialized`.
    initialized: bool,
}

fn note(entry: &Incoming<'_>, shape: &mut Shape, ids: &mut Vec<Id<'static>>) {
    match entry {
        Incoming::Request(r) => {
            ids.push(r.id.to_owned_id());
            shape.requests += 1;
            shape.initialize = r.method == "initialize";
        }
        Incoming::Notification(n) if n.method == "notifications/initialized" => {
            shape.initialized = true;
        }
        _ => {}
    }
}

/// The status of a stateless request's JSON answer: an unknown method is 404, MCP's
/// header, capability and version errors are 400.
fn stateless_status(code: Option<i64>) -> u16 {
    match code {
        Some(sansrpc::error::code::METHOD_NOT_FOUND) => 404,
        Some(
            HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION,
        ) => 400,
        _ => 200,
    }
}

fn retry_ms(config: &Config) -> u32 {
    u32::try_from(config.retry.as_millis()).unwrap_or(u32::MAX)
}

/// The path part of a URL (`https://host/a/b` → `/a/b`).
fn metadata_path(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map(|at| &rest[at..])
}

/// The protected-resource metadata document (RFC 9728).
fn metadata(auth: &Auth) -> Response {
    let mut body = Vec::from(&b"{\"resource\":"[..]);
    sansrpc::message::write_json_string(&mut body, &auth.resource);
    body.extend_from_slice(b",\"authorization_servers\":[");
    for (i, server) in auth.authorization_servers.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        sansrpc::message::write_json_string(&mut body, server);
    }
    body.extend_from_slice(b"],\"bearer_methods_supported\":[\"header\"]");
    if !auth.scopes.is_empty() {
        body.extend_from_slice(b",\"scopes_supported\":[");
        for (i, scope) in auth.scopes.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            sansrpc::message::write_json_string(&mut body, scope);
        }
        body.push(b']');
    }
    body.push(b'}');
    Response::json(200, body)
}

#[cfg(test)]
mod tests;

/// What [`Endpoint::answers`] finds in `frame`: one result response, or no response, when
/// its top-level keys tell ([`leading_member`](sansrpc::message::leading_member)); `None`
/// (classify the whole frame) for anything else (an error response: its code is wanted).
/// The frames are the ones this server's connections wrote.
fn peek_single(frame: &[u8]) -> Option<(usize, Option<i64>)> {
    match sansrpc::message::leading_member(frame)? {
        sansrpc::message::Leading::Result => Some((1, None)),
        sansrpc::message::Leading::Method => Some((0, None)),
        sansrpc::message::Leading::Error => None,
    }
}
