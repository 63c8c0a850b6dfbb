//! The one configuration of a connection: [`Config`].

use core::time::Duration;

use crate::codec::Framing;
use crate::connection::keepalive::HeartbeatConfig;
use crate::error::code;
use crate::limits::Limits;
use crate::wire::guard::RateLimit;
use crate::wire::profile::Profile;

/// What to do with an error response whose id is `null`: the peer could not parse something
/// we sent, and could not tell which request it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NullIdPolicy {
    /// Only report it, as [`Event::ErrorWithoutId`](crate::connection::Event::ErrorWithoutId).
    Report,
    /// When exactly one request is pending, fail that request with the error (a
    /// [`Event::Answer`](crate::connection::Event::Answer) carrying it); otherwise report it. The default.
    FailSingle,
    /// Report it and end every pending request with [`EndReason::PeerError`](crate::connection::EndReason::PeerError) (seed 000
    /// §8.3's policy).
    FailAll,
}

/// Network default of [`Config::idle_timeout`]: a peer that sent nothing for 5 minutes with
/// nothing in flight is closed (long enough for any interactive client between calls).
pub const NETWORK_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Network default of [`Config::frame_timeout`]: a message may take 30 s to arrive whole
/// (slowloris protection; a healthy client sends a frame in milliseconds).
pub const NETWORK_FRAME_TIMEOUT: Duration = Duration::from_secs(30);
/// Network default of [`Config::write_stall_timeout`]: answers may wait 30 s for a peer
/// that does not read before it is closed.
pub const NETWORK_WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How a [`Connection`](crate::connection::Connection) behaves: the wire protocol (framing,
/// limits, deadlines, cancellation, the profile) and everything around it (streams, the
/// heartbeat, the close phases, the LSP lifecycle). Every bound the core keeps is here; an
/// adapter embeds this one value and adds only its runtime's own settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// Framing of a byte stream ([`Connection::handle_input`](crate::connection::Connection::handle_input)); `None` for transports that
    /// deliver whole messages (WebSocket, HTTP: [`Connection::handle_message`](crate::connection::Connection::handle_message)), whose output
    /// is then one unframed message per [`Connection::poll_transmit`](crate::connection::Connection::poll_transmit). Default: Content-Length.
    pub framing: Option<Framing>,
    /// Bounds on frames, nesting, batches and ids.
    pub limits: Limits,
    /// Deadline of a request sent without its own (default 30 s, as seed 000 §8.2).
    pub default_timeout: Option<Duration>,
    /// The protocol conventions for cancellation and progress (default
    /// [`Profile::JsonRpc`]): the params shapes and whether a cancelled request is answered.
    /// Set it with [`Config::for_profile`], which also sets the method names and framing.
    pub profile: Profile,
    /// Honour incoming and send outgoing cancellation notifications (default `true`).
    pub cancellation: bool,
    /// The method of cancellation notifications (default `$/cancelRequest`, as LSP); the
    /// params name the request in [`Profile::cancel_id_key`].
    pub cancel_method: &'static str,
    /// Also send a cancellation when a request times out (default `true`), so the peer can
    /// stop working on an answer nobody waits for.
    pub cancel_on_timeout: bool,
    /// The code to answer a cancelled request with (default `-32800`, LSP's
    /// RequestCancelled; seed 000 appendix B uses `-32001`). Unused when the profile does
    /// not answer cancelled requests ([`Profile::answers_cancelled`]).
    pub cancelled_code: i64,
    /// Most cancels remembered for requests that have not arrived yet (default 64).
    pub early_cancel_capacity: usize,
    /// How long such a cancel is remembered (default 30 s).
    pub early_cancel_ttl: Duration,
    /// What an error response with a `null` id does (default [`NullIdPolicy::FailSingle`]).
    pub null_id_policy: NullIdPolicy,
    /// Most of our requests awaiting a response (default 4096); beyond it sending fails
    /// with [`SendError::TooManyPending`](crate::connection::SendError::TooManyPending).
    pub max_pending_outgoing: usize,
    /// Most of the peer's requests awaiting our answer (default 1024). What happens beyond
    /// it depends on [`Config::hold_when_busy`].
    pub max_inflight_incoming: usize,
    /// With [`Config::max_inflight_incoming`] requests handed out and unanswered, hold the
    /// peer's further requests (and the notifications behind them, which keep their order)
    /// until one is answered (default `true`). Every request of a burst is answered, none
    /// with `-32002`.
    ///
    /// Held input is still read, up to [`Config::max_held_bytes`]: responses to our own
    /// calls, cancellations (a held request cancelled is answered at once) and everything
    /// else that is not a request or notification go on. So a server whose handlers all
    /// wait on calls to the same peer (LSP's `workspace/configuration`) gets its answers;
    /// only past the bound does input stop, which a socket turns into back-pressure on the
    /// peer ([`Connection::handle_input`](crate::connection::Connection::handle_input) takes no more bytes, [`Connection::handle_message`](crate::connection::Connection::handle_message)
    /// refuses with [`Backpressure`](crate::connection::Backpressure)). Off: a request beyond the limit is answered at once
    /// with `-32002` Server busy and never surfaces as an event.
    pub hold_when_busy: bool,
    /// Most bytes of input kept while requests or notifications are held back (by
    /// [`Config::hold_when_busy`] or [`Config::ordered_notifications`]; default 1 MiB).
    /// Beyond it no more input is taken until they are handed out. One frame may take it
    /// past the bound.
    pub max_held_bytes: usize,
    /// A notification is a barrier (default `false`; `true` for [`Profile::Lsp`]): a
    /// later request or notification is handed out only once every earlier notification's
    /// handler has finished, which the application reports with
    /// [`Connection::notification_done`](crate::connection::Connection::notification_done). Requests among themselves still run concurrently.
    ///
    /// LSP needs it: a `textDocument/didChange` followed by a `textDocument/hover`
    /// expects the hover to see the change; with an async `didChange` handler that awaits
    /// anything, the hover would otherwise start first and answer from the stale text.
    /// Responses and cancellations are never held by it.
    pub ordered_notifications: bool,
    /// Most bytes of output waiting for [`Connection::poll_transmit`](crate::connection::Connection::poll_transmit) (default 8 MiB). Beyond
    /// it, sending fails with [`SendError::OutputFull`](crate::connection::SendError::OutputFull) and input is left unprocessed until
    /// the output is drained.
    pub max_buffered_output: usize,

    // Protection for connections facing untrusted peers (all off by default).
    /// A per-connection rate limit on the peer's requests and notifications (default
    /// none); see [`RateLimit`].
    pub rate_limit: Option<RateLimit>,
    /// Closes the connection ([`Event::Expired`](crate::connection::Event::Expired) with [`Expiry::Idle`](crate::connection::Expiry::Idle), then
    /// [`Event::Closed`](crate::connection::Event::Closed)) when nothing came from the peer for this long while nothing was
    /// in flight either way (default none). Counts JSON-RPC input only, not a transport's
    /// own pings.
    pub idle_timeout: Option<Duration>,
    /// Closes the connection ([`Event::Expired`](crate::connection::Event::Expired) with [`Expiry::PartialFrame`](crate::connection::Expiry::PartialFrame)) when a
    /// frame stays partly received for this long: a peer sending half a frame, then
    /// nothing or a byte now and then (slowloris). Byte streams only (default none).
    pub frame_timeout: Option<Duration>,
    /// Closes the connection ([`Event::Expired`](crate::connection::Event::Expired) with [`Expiry::WriteStall`](crate::connection::Expiry::WriteStall)) when output
    /// has been waiting to be written for this long with less than 256 KiB of it written
    /// (or less than the most output that waited meanwhile, when that is less): a peer that
    /// sends but never reads (default none; what the kernel still moves into a full
    /// receive window, as it compacts it, does not count as reading). The driver reports its
    /// writes with [`Connection::handle_write`](crate::connection::Connection::handle_write). While writes wait with more than 64 KiB
    /// queued, input is held back too: a peer that does not read gets no more answers
    /// computed for it.
    pub write_stall_timeout: Option<Duration>,
    /// The method of progress notifications (default `$/progress`, as LSP); the params
    /// carry the token in [`Profile::progress_token_key`]. Progress on the token of a request sent with
    /// [`RequestOptions::progress`](crate::connection::RequestOptions) extends its deadline; every progress notification still
    /// surfaces as [`Event::Notification`](crate::connection::Event::Notification).
    pub progress_method: &'static str,

    // Around the wire protocol.
    /// Bounds of the streams this connection serves (open streams, queued pulls, items per
    /// answer, idle timeout); see [`connection::stream`](crate::connection::stream).
    #[cfg(feature = "streams")]
    pub streams: StreamConfig,
    /// The application-level heartbeat (seed 002 §3.3.2; default none): the peer's `ping`
    /// notifications are answered with `pong` and never reach the application; with an
    /// interval set, a `ping` goes out every interval and the connection closes
    /// ([`CloseReason::HeartbeatTimeout`](crate::connection::CloseReason::HeartbeatTimeout))
    /// when its `pong` is later than the timeout. `None` leaves `ping` and `pong` to the
    /// application like any notification.
    pub heartbeat: Option<HeartbeatConfig>,
    /// How long the peer's requests still running may take to answer once the peer's
    /// input ended (default 5 s); then the connection closes. A shutdown takes its own
    /// grace ([`Connection::shutdown`](crate::connection::Connection::shutdown)).
    pub end_grace: Duration,
    /// How long output queued at close may take to reach the peer (default 1 s).
    pub linger: Duration,
    /// Under [`Profile::Lsp`]: how often the editor's process (`initialize`'s `processId`)
    /// is checked ([`Event::CheckProcess`](crate::connection::Event::CheckProcess); default
    /// 3 s).
    pub process_check: Duration,
    /// Under [`Profile::Lsp`], keep a server's lifecycle (default `true`; see
    /// [`connection`](crate::connection#the-lsp-lifecycle)): requests before `initialize`
    /// refused, `exit` ends the connection, the editor's process watched. A connection that
    /// sends `initialize` itself is the client, and keeps none.
    pub lsp_lifecycle: bool,
    /// Most method subscriptions active on one connection (default 1,024); past it a
    /// subscribe is answered `-32002` "Server busy: too many subscriptions".
    #[cfg(feature = "subscriptions")]
    pub max_subscriptions: usize,
    /// The transport carries messages the peer did not ask for, outside answers (default
    /// `true`). Plain HTTP (one answer per POST) does not: its drivers set `false`, and
    /// then a method subscription is refused on both sides (the server answers the
    /// subscribe `-32601` "Subscriptions are not supported over plain HTTP", a client's
    /// subscribe fails with [`SendError::NoPush`](crate::connection::SendError::NoPush)).
    pub push: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            framing: Some(Framing::ContentLength),
            profile: Profile::JsonRpc,
            limits: Limits::default(),
            default_timeout: Some(Duration::from_secs(30)),
            cancellation: true,
            cancel_method: "$/cancelRequest",
            cancel_on_timeout: true,
            cancelled_code: code::LSP_REQUEST_CANCELLED,
            early_cancel_capacity: 64,
            early_cancel_ttl: Duration::from_secs(30),
            null_id_policy: NullIdPolicy::FailSingle,
            max_pending_outgoing: 4096,
            max_inflight_incoming: 1024,
            hold_when_busy: true,
            max_held_bytes: 1024 * 1024,
            ordered_notifications: false,
            max_buffered_output: 8 * 1024 * 1024,
            rate_limit: None,
            idle_timeout: None,
            frame_timeout: None,
            write_stall_timeout: None,
            progress_method: "$/progress",
            #[cfg(feature = "streams")]
            streams: StreamConfig::default(),
            heartbeat: None,
            end_grace: Duration::from_secs(5),
            linger: Duration::from_secs(1),
            process_check: PROCESS_CHECK,
            lsp_lifecycle: true,
            #[cfg(feature = "subscriptions")]
            max_subscriptions: 1024,
            push: true,
        }
    }
}

impl Config {
    /// The default config with `profile`'s conventions: its cancellation and progress
    /// methods and params shapes, whether cancelled requests are answered, and its framing
    /// of byte streams (set [`Config::framing`] to `None` afterwards for WebSocket or HTTP).
    ///
    /// ```
    /// use sansrpc::codec::Framing;
    /// use sansrpc::{Config, Profile};
    ///
    /// let config = Config::for_profile(Profile::Mcp);
    /// assert_eq!(config.cancel_method, "notifications/cancelled");
    /// assert_eq!(config.progress_method, "notifications/progress");
    /// assert_eq!(config.framing, Some(Framing::Newline));
    /// ```
    pub fn for_profile(profile: Profile) -> Self {
        Config {
            framing: Some(profile.default_framing()),
            profile,
            cancel_method: profile.cancel_method(),
            progress_method: profile.progress_method(),
            ordered_notifications: profile == Profile::Lsp,
            ..Config::default()
        }
    }

    /// A preset for a small device (a microcontroller with tens of KiB of RAM): frames of
    /// at most 4 KiB (heads 256 bytes), batches of 8, JSON nested 16 deep, 4 requests in
    /// flight each way (more held up to 4 KiB), 8 KiB of output buffered, 4 early cancels
    /// remembered. Everything past a bound gets the answer it would get anywhere (`-32600`,
    /// `-32002`, back-pressure); nothing grows past it.
    pub fn embedded() -> Self {
        let limits = Limits {
            max_frame_bytes: 4 * 1024,
            max_header_bytes: 256,
            max_depth: 16,
            max_batch_len: 8,
            ..Limits::default()
        };
        Config {
            limits,
            max_pending_outgoing: 4,
            max_inflight_incoming: 4,
            max_held_bytes: 4 * 1024,
            max_buffered_output: 8 * 1024,
            early_cancel_capacity: 4,
            ..Config::default()
        }
    }

    /// Fills the protection timeouts left unset with the defaults for a connection that
    /// comes over a network (TCP, Unix sockets, WebSocket, HTTP), where an unknown peer may
    /// hold a connection open without using it: [`NETWORK_IDLE_TIMEOUT`],
    /// [`NETWORK_FRAME_TIMEOUT`], [`NETWORK_WRITE_STALL_TIMEOUT`]. A healthy client never
    /// meets them; stdio keeps none. The servers of the adapters apply them unless told not
    /// to.
    pub fn with_network_defaults(mut self) -> Self {
        self.idle_timeout.get_or_insert(NETWORK_IDLE_TIMEOUT);
        self.frame_timeout.get_or_insert(NETWORK_FRAME_TIMEOUT);
        self.write_stall_timeout
            .get_or_insert(NETWORK_WRITE_STALL_TIMEOUT);
        self
    }

    /// This config as a transport uses it, decided here for every driver: a transport that
    /// delivers whole messages (WebSocket, HTTP: `whole_messages`) has no framing; a byte
    /// stream keeps the framing set, or takes the profile's when none is (Content-Length;
    /// MCP: newline-delimited JSON).
    ///
    /// ```
    /// use sansrpc::codec::Framing;
    /// use sansrpc::{Config, Profile};
    ///
    /// assert_eq!(Config::for_profile(Profile::Mcp).for_transport(false).framing, Some(Framing::Newline));
    /// assert_eq!(Config::for_profile(Profile::Mcp).for_transport(true).framing, None);
    /// let mut unset = Config::default();
    /// unset.framing = None;
    /// assert_eq!(unset.for_transport(false).framing, Some(Framing::ContentLength));
    /// ```
    pub fn for_transport(mut self, whole_messages: bool) -> Self {
        self.framing = (!whole_messages).then(|| self.stream_framing());
        self
    }

    /// The framing this config gives a byte stream: the one set, or the profile's.
    pub fn stream_framing(&self) -> Framing {
        self.framing.unwrap_or(self.profile.default_framing())
    }
}

/// How often the editor's process (`processId`) is checked by default.
pub const PROCESS_CHECK: Duration = Duration::from_secs(3);

/// Bounds of one connection's streams.
#[cfg(feature = "streams")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamConfig {
    /// Most streams open at once (default 64).
    pub max_open: usize,
    /// Most pulls queued for one stream (default 64).
    pub max_queued_pulls: usize,
    /// Most items in one pull answer, whatever `max` the puller asks for (default 1024).
    pub max_items_per_pull: u32,
    /// A pull answer is sent once it holds this many bytes of items, even short of `max`
    /// (default 256 KiB).
    pub max_answer_bytes: usize,
    /// A stream with no pull waiting is freed after this long (default 60 s).
    pub idle_timeout: Duration,
}

#[cfg(feature = "streams")]
impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            max_open: 64,
            max_queued_pulls: 64,
            max_items_per_pull: 1024,
            max_answer_bytes: 256 * 1024,
            idle_timeout: Duration::from_secs(60),
        }
    }
}
