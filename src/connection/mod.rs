//! One connection as one state machine: the wire protocol and everything else that lives
//! as long as the connection, so a driver is only a loop of I/O.
//!
//! [`Connection`] owns the wire protocol (framing, classification, ids, deadlines, limits)
//! and, around it, every rule a
//! connection follows whatever runtime drives it:
//! - **our calls**, keyed by the caller's own *token* (a number the driver picks per call
//!   or batch): answers come back as [`Event::Answer`] and [`Event::Ended`] with that token
//!   and the call's index in its batch, and [`Connection::cancel_call`] forgets a token;
//! - **the peer's requests** handed out as [`Event::Request`] with a handle to answer with
//!   ([`Connection::respond`]); a peer's cancellation of one still running becomes
//!   [`Event::Cancel`];
//! - **streams** served over `rpc.stream.next` / `rpc.stream.cancel` (seed 003): pulls are
//!   answered from items the driver produces in [`Connection::produce`];
//! - the **heartbeat** (`ping` / `pong`, seed 002 §3.3.2): answered and sent here, never
//!   seen by the driver; a peer that stops answering closes the connection with
//!   [`CloseReason::HeartbeatTimeout`];
//! - a **connection hook** ([`ConnectionHook`], pub/sub): offered the peer's requests
//!   before the driver sees them, its notifications sent as output has room;
//! - the **close phases**: a shutdown or the end of the peer's input lets handlers in
//!   flight answer for a grace period, then the wire closes, then queued output gets a
//!   linger period to reach the peer.
//!
//! - under the LSP profile, a **server's lifecycle** ([`Config::lsp_lifecycle`]): requests
//!   before `initialize` answered `-32002`, after `shutdown` `-32600`, notifications
//!   dropped then (`exit` excepted), `exit` closing with status 0 after `shutdown` and 1
//!   without ([`CloseReason::Exit`], [`Connection::exit_code`]), `$/setTrace` and
//!   [`Connection::log_trace`], and the editor's process checked on a timer
//!   ([`Event::CheckProcess`]).
//!
//! # What the connection answers by itself
//! - A frame that is not JSON, an empty batch, a batch or nesting over the limits: one error
//!   response with id `null` ([`Event::Rejected`] tells the driver).
//! - An invalid request object: `-32600` with its id when the id is valid.
//! - A request while [`Config::max_inflight_incoming`] are in flight: `-32002` Server busy.
//! - A request over [`Config::rate_limit`]: its code (`-32002` by default); a notification
//!   over it is dropped and counted ([`Connection::dropped_notifications`]).
//! - A request reusing the id of one of the peer's requests still in flight: `-32600` "id
//!   already in use by a request in flight", with that id; the first request stands.
//! - A request whose cancellation arrived first: [`Config::cancelled_code`].
//! - An oversize frame: `-32004` with id `null`.
//!
//! Responses are never answered, whatever is wrong with them (answering garbage with
//! garbage makes error storms between two peers).
//!
//! # The LSP lifecycle
//! See the list above; `initialize` and `shutdown` still reach the application, which
//! answers them. A connection that sends `initialize` itself is an LSP client and keeps
//! none of it.
//!
//! It never reads a clock, never blocks, never spawns and never locks:
//! time is an argument, and [`poll_timeout`](Connection::poll_timeout) is the one deadline
//! for all of the above.
//!
//! # The run loop
//! ```
//! use sansrpc::connection::{Config, Connection, Event};
//! use sansrpc::{Instant, RawValue};
//!
//! // Two connections wired back to back; `now` is virtual time.
//! let now = Instant::ZERO;
//! let mut client = Connection::new(Config::default(), now);
//! let mut server = Connection::new(Config::default(), now);
//!
//! let params = RawValue::from_json("[2,3]").unwrap();
//! client.call(7, "add", Some(&params), Default::default(), now).unwrap();
//!
//! let mut wire = Vec::new();
//! let mut answer = None;
//! for _ in 0..4 {
//!     // Output of one side is the input of the other.
//!     while client.poll_transmit(&mut wire).is_some() {}
//!     server.handle_input(&wire, now).unwrap();
//!     wire.clear();
//!     while let Some(event) = server.poll_event() {
//!         if let Event::Request { handle, request } = event {
//!             assert_eq!(request.method, "add");
//!             // A driver would hand the request to a handler; this one answers at once.
//!             let five = RawValue::from_json("5").unwrap();
//!             server.respond(handle, Ok(&five));
//!         }
//!     }
//!     while server.poll_transmit(&mut wire).is_some() {}
//!     client.handle_input(&wire, now).unwrap();
//!     wire.clear();
//!     while let Some(event) = client.poll_event() {
//!         if let Event::Answer { token, result, .. } = event {
//!             answer = Some((token, result.unwrap().get().to_owned()));
//!         }
//!     }
//!     // A real driver sleeps until this, then calls `handle_timeout`.
//!     if let Some(deadline) = client.poll_timeout() {
//!         client.handle_timeout(deadline.max(now));
//!     }
//! }
//! assert_eq!(answer, Some((7, "5".to_owned())));
//! ```

use alloc::borrow::{Cow, ToOwned};
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use crate::codec::FrameError;
use crate::error::{ErrorObject, ProtocolError};
use crate::id::Id;
use crate::message::{Incoming, Notification, Rejection, Request, Response};
use crate::raw::RawValue;
use crate::time::Instant;
use crate::wire::{BatchBuilder, Peek, Record, Role, Wire};
use hook::ConnectionHook;
use keepalive::{Beat, Heard, Heartbeat};
#[cfg(feature = "streams")]
use stream::{Demand, Produced, StreamTable};

#[cfg(target_has_atomic = "ptr")]
pub mod bypass;
pub mod hook;
pub mod keepalive;
pub(crate) mod lsp;
#[cfg(feature = "streams")]
pub mod stream;
#[cfg(feature = "subscriptions")]
pub mod subscriptions;

pub use crate::config::{
    Config, NullIdPolicy, NETWORK_FRAME_TIMEOUT, NETWORK_IDLE_TIMEOUT, NETWORK_WRITE_STALL_TIMEOUT,
};
#[cfg(feature = "progress")]
pub use crate::wire::Progress;
pub use crate::wire::{
    write_refusal, Backpressure, EndReason, Expiry, IncomingId, NotAByteStream, Profile, RateLimit,
    RequestId, RequestOptions, SendError, Timeout, UnknownRequest,
};
pub use keepalive::HeartbeatConfig;
pub use lsp::{Trace, PROCESS_CHECK};
#[cfg(feature = "streams")]
pub use stream::StreamConfig;

/// Why a connection closed; carried by [`Event::Closed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The peer ended its output (and our handlers answered, or their grace ran out).
    PeerClosed,
    /// [`Connection::shutdown`] was called.
    Shutdown,
    /// [`Connection::close`] was called.
    Local,
    /// A protection timeout of the wire passed (idle, frame, write stall).
    Expired(Expiry),
    /// The peer did not answer our `ping` within the heartbeat's timeout.
    HeartbeatTimeout,
    /// A method subscription's queue overflowed under
    /// [`LagPolicy::Disconnect`](subscriptions::LagPolicy::Disconnect): the subscriber
    /// read too slowly, and the connection closed as go-ethereum closes it.
    #[cfg(feature = "subscriptions")]
    SubscriberLagged,
    /// LSP: the client sent `exit` (status 0 after `shutdown`, 1 without), or its process
    /// is gone (status 1). The process should exit with `code`.
    Exit {
        /// The status to exit with.
        code: i32,
    },
}

/// Something the driver acts on; from [`Connection::poll_event`]. Borrowed events borrow
/// the connection until the next call.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A request of the peer to run: answer it once with [`Connection::respond`] (or
    /// [`Connection::respond_cancelled`]), from a handler, now or later.
    Request {
        /// The handle to answer with.
        handle: IncomingId,
        /// The request, borrowed from the receive buffer.
        request: Request<'a>,
    },
    /// A notification of the peer, for the driver's handlers (in arrival order).
    Notification(Notification<'a>),
    /// The answer to one of our calls.
    Answer {
        /// The token the call was made with.
        token: u64,
        /// The call's place in its batch (0 for a single call).
        index: usize,
        /// The result, or the peer's error object.
        result: Result<Cow<'a, RawValue>, ErrorObject<'a>>,
        /// True when it is the last call of that token still waiting.
        last: bool,
    },
    /// One of our calls ended without an answer (timed out, connection closed, a
    /// malformed answer).
    Ended {
        /// The token the call was made with.
        token: u64,
        /// The call's place in its batch (0 for a single call).
        index: usize,
        /// Why.
        reason: EndReason,
        /// True when it is the last call of that token still waiting.
        last: bool,
    },
    /// The peer cancelled a request whose handler is running: stop it, and answer with
    /// [`Connection::respond_cancelled`] (or with whatever the handler returned, if it was
    /// already done).
    Cancel {
        /// The request.
        handle: IncomingId,
    },
    /// A stream this connection served was freed (ended, cancelled, idle too long): drop
    /// its producer.
    #[cfg(feature = "streams")]
    StreamClosed {
        /// The stream id given to [`Connection::open_stream`]'s caller.
        stream: u64,
    },
    /// A response whose id matches no call waiting (never sent, or answered already):
    /// only worth logging. (The late answer to a call that timed out or was cancelled is
    /// dropped silently.)
    UnknownResponse(Response<'a>),
    /// An error response with a `null` id that
    /// [`Config::null_id_policy`](crate::Config::null_id_policy) did not attribute to a
    /// call: only worth logging.
    ErrorWithoutId(ErrorObject<'a>),
    /// The peer sent a malformed response that matched no call waiting: only worth
    /// logging.
    ProtocolError {
        /// The response's id, when it had a valid one.
        id: Option<Id<'a>>,
        /// What was wrong.
        error: ProtocolError,
    },
    /// A framing fault in the input; the decoder has already resynchronised. Only worth
    /// logging (a [`FrameError::WrongFraming`] says the peer speaks another framing).
    FrameError(FrameError),
    /// A frame was refused as a whole (not JSON, an empty batch, past a limit); the peer
    /// was already answered with an error whose id is `null`. Only worth logging.
    Rejected(Rejection),
    /// A protection timeout of the config passed (idle, partial frame, write stall) and the
    /// connection closes: [`Event::Closed`] follows.
    Expired(Expiry),
    /// The peer ended a method subscription accepted with
    /// [`Connection::accept_subscription`] (its unsubscribe request was answered `true`):
    /// stop its producer and drop its queue.
    #[cfg(feature = "subscriptions")]
    Unsubscribed {
        /// The subscription.
        sub: u64,
    },
    /// LSP: is the editor's process (`initialize`'s `processId`) still running? A driver
    /// on `std` checks (`sansrpc_runtime::process_alive`) and, when
    /// it is gone, calls [`Connection::handle_client_gone`]. Asked every
    /// [`Config::process_check`].
    CheckProcess {
        /// The process id.
        pid: u32,
    },
    /// The connection is closed: every call has ended, every request handle is void. Write
    /// out what [`poll_transmit`](Connection::poll_transmit) still gives until
    /// [`is_finished`](Connection::is_finished).
    Closed {
        /// Why.
        reason: CloseReason,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Open,
    /// Handlers in flight may answer until the deadline; no new input, no new calls.
    Draining {
        until: Instant,
        reason: CloseReason,
    },
    /// The wire is closed; output may drain until the deadline.
    Closed {
        until: Instant,
    },
}

/// Our calls waiting: request id, token, index in its batch, and whether it came in a
/// batch. Kept sorted by request id (the wire numbers our requests in increasing order, so
/// a new call goes at the end): lookups are binary searches and the steady state allocates
/// nothing. Answers mostly come in that order, so the oldest call is taken by moving `head`
/// past it, and the vector is compacted once half of it is behind `head`. A call answered or
/// forgotten out of order is marked [`GONE`] where it lies (removing it would move every call
/// behind it: with 100,000 waiting, 37 µs an answer) and passed over, and the marked are
/// swept out once they outnumber the calls waiting. A batch's calls are counted by token, so
/// the last of them is known without looking at its neighbours; a token's calls are found by
/// binary search while tokens come in increasing order (drivers number their calls), by a
/// scan otherwise.
#[derive(Debug)]
struct Calls {
    waiting: Vec<(RequestId, u64, usize, bool)>,
    /// Where the calls still waiting start in `waiting`.
    head: usize,
    /// Entries from `head` on marked [`GONE`].
    gone: usize,
    /// The calls of each batch still waiting, by token.
    batches: Vec<(u64, usize)>,
    /// Every token came no smaller than the one before it, and every call at the end.
    tokens_sorted: bool,
}

/// The index of a call answered or forgotten out of order, left in place.
const GONE: usize = usize::MAX;

impl Default for Calls {
    fn default() -> Self {
        Calls {
            waiting: Vec::new(),
            head: 0,
            gone: 0,
            batches: Vec::new(),
            tokens_sorted: true,
        }
    }
}

impl Calls {
    fn insert(&mut self, token: u64, id: RequestId, index: usize, batch: bool) {
        let entry = (id, token, index, batch);
        if batch {
            match self.batches.iter_mut().find(|b| b.0 == token) {
                Some(b) => b.1 += 1,
                None => self.batches.push((token, 1)),
            }
        }
        match self.waiting.last() {
            Some(last) if last.0 > id => {
                self.tokens_sorted = false;
                let at = self.head + self.waiting[self.head..].partition_point(|e| e.0 < id);
                self.waiting.insert(at, entry);
            }
            Some(last) => {
                self.tokens_sorted &= last.1 <= token;
                self.waiting.push(entry);
            }
            None => self.waiting.push(entry),
        }
    }

    /// Where the call `id` is in `waiting`, when it still waits.
    fn position(&self, id: RequestId) -> Option<usize> {
        let at = match self.waiting.get(self.head) {
            Some(first) if first.0 == id => self.head,
            _ => {
                let live = &self.waiting[self.head..];
                self.head + live.binary_search_by_key(&id, |e| e.0).ok()?
            }
        };
        (self.waiting[at].2 != GONE).then_some(at)
    }

    fn contains(&self, id: RequestId) -> bool {
        self.position(id).is_some()
    }

    fn len(&self) -> usize {
        self.waiting.len() - self.head - self.gone
    }

    /// The token, index and whether it was the last of its token, of an answered request.
    fn settle(&mut self, id: RequestId) -> Option<(u64, usize, bool)> {
        let at = self.position(id)?;
        let (_, token, index, batch) = self.waiting[at];
        let last = !batch || {
            let at = self.batches.iter().position(|b| b.0 == token);
            match at {
                Some(at) if self.batches[at].1 > 1 => {
                    self.batches[at].1 -= 1;
                    false
                }
                Some(at) => {
                    self.batches.swap_remove(at);
                    true
                }
                None => true,
            }
        };
        if at == self.head {
            self.head += 1;
        } else {
            self.waiting[at].2 = GONE;
            self.gone += 1;
        }
        self.tidy();
        Some((token, index, last))
    }

    /// Forgets the calls of `token`; their request ids.
    fn forget(&mut self, token: u64) -> Vec<RequestId> {
        let range = if self.tokens_sorted {
            let live = &self.waiting[self.head..];
            let from = live.partition_point(|e| e.1 < token);
            let to = from + live[from..].partition_point(|e| e.1 == token);
            self.head + from..self.head + to
        } else {
            self.head..self.waiting.len()
        };
        let mut ids = Vec::new();
        for entry in &mut self.waiting[range] {
            if entry.1 == token && entry.2 != GONE {
                ids.push(entry.0);
                entry.2 = GONE;
                self.gone += 1;
            }
        }
        self.batches.retain(|b| b.0 != token);
        self.tidy();
        ids
    }

    /// Moves `head` past the calls gone, and compacts: `waiting` from `head` when half of
    /// it is behind, and without the marked when they outnumber the calls waiting.
    fn tidy(&mut self) {
        while self.waiting.get(self.head).is_some_and(|e| e.2 == GONE) {
            self.head += 1;
            self.gone -= 1;
        }
        if self.len() == 0 {
            self.clear();
        } else if self.gone >= 32 && self.gone > self.len() {
            self.waiting.drain(..self.head);
            self.waiting.retain(|e| e.2 != GONE);
            self.head = 0;
            self.gone = 0;
        } else if self.head >= 32 && self.head * 2 >= self.waiting.len() {
            self.waiting.drain(..self.head);
            self.head = 0;
        }
    }

    fn clear(&mut self) {
        self.waiting.clear();
        self.head = 0;
        self.gone = 0;
        self.batches.clear();
        self.tokens_sorted = true;
    }
}

/// The peer's requests handed out and not answered, sorted (the wire numbers them in
/// increasing order).
#[derive(Debug, Default)]
struct Running(VecDeque<IncomingId>);

impl Running {
    fn insert(&mut self, id: IncomingId) {
        match self.0.back() {
            Some(&last) if last > id => {
                let at = self.0.partition_point(|e| *e < id);
                self.0.insert(at, id);
            }
            _ => self.0.push_back(id),
        }
    }

    fn remove(&mut self, id: &IncomingId) -> bool {
        // Answers mostly come in the order requests were handed out.
        if self.0.front() == Some(id) {
            self.0.pop_front();
            return true;
        }
        match self.0.binary_search(id) {
            Ok(at) => {
                self.0.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    fn contains(&self, id: &IncomingId) -> bool {
        self.0.binary_search(id).is_ok()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// What the wire's next event is, told by its method name alone (without a hook).
#[derive(Clone, Copy, PartialEq, Eq)]
enum NextByName {
    /// No event is queued.
    Empty,
    /// A request or notification no part of the machine takes, at this place in the
    /// wire's queue: hand it out.
    Pass(usize),
    /// The response to our request: handed out if a call waits for it, else dropped.
    Response(RequestId),
    /// It takes more than the name to tell: build the event and decide.
    Look,
}

/// What [`Connection::poll_event`] does with the wire's next event, decided while it
/// is borrowed and done after.
enum Take {
    /// Hand it to the driver.
    Pass,
    /// The hook answered the request.
    Hooked(IncomingId, hook::Answer),
    /// The hook took the request and answers it later under this number.
    HookLater(IncomingId, u64),
    /// A stream method (`rpc.stream.next`/`cancel`), owned.
    #[cfg(feature = "streams")]
    Stream(IncomingId, Request<'static>),
    #[cfg(feature = "streams")]
    StreamCancel(Option<u64>),
    Beat(&'static str),
    PeerCancelled(IncomingId),
    Response(RequestId),
    Ended(RequestId, EndReason),
    Closed,
    /// The LSP lifecycle answers a request itself.
    LspRefuse(IncomingId, ErrorObject<'static>),
    /// `initialize`, with its params.
    LspInitialize(IncomingId, Option<Box<RawValue>>),
    LspShutdown(IncomingId),
    /// An unsubscribe request, with the subscription it names (if it is one of ours).
    #[cfg(feature = "subscriptions")]
    Unsubscribe(IncomingId, Option<u64>),
    /// A notification the lifecycle takes: `exit` (its status), `$/setTrace`, or one it
    /// drops.
    LspNotification(lsp::Gate),
}

/// One connection: the wire protocol and everything per connection around it; see the
/// [module documentation](self).
// Laid out in this order (not the compiler's): the wire first (a call on it needs no
// offset), then what every driver turn reads of the connection itself, in one cache line
// (a subscriber's connection woken for each notification: with many connections each line
// read is a miss), then the rest.
#[repr(C)]
pub struct Connection {
    wire: Wire,
    phase: Phase,
    hook: Option<Box<dyn ConnectionHook>>,
    /// Why the wire closed, when we closed it.
    reason: Option<CloseReason>,
    /// The LSP lifecycle, under [`Profile::Lsp`] (boxed: whether a connection has one is
    /// read every turn, and most have none).
    lsp: Option<Box<lsp::Lsp>>,
    /// The peer's input ended; the wire is told once its queued frames are processed.
    input_ended: bool,
    input_finished: bool,
    /// The driver still holds output it has not written.
    driver_pending: bool,
    finished: bool,
    /// A heartbeat, the LSP lifecycle or a stream may hold a deadline: set with the first
    /// of them, never cleared. Most connections have none of them, and their fields are
    /// not read on every driver turn ([`poll_timeout`](Connection::poll_timeout)).
    timed: bool,
    calls: Calls,
    /// The peer's requests handed out as [`Event::Request`] and not answered yet.
    running: Running,
    #[cfg(feature = "streams")]
    streams: StreamTable<()>,
    /// Method subscriptions accepted (the Ethereum shape).
    #[cfg(feature = "subscriptions")]
    subs: subscriptions::Table,
    heartbeat: Option<Heartbeat>,
    /// Scratch space for the hook's answers.
    hook_buf: Vec<u8>,
    /// Requests the hook answers later, by its number.
    hook_later: Vec<(u64, IncomingId)>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Connection");
        d.field("wire", &self.wire)
            .field("phase", &self.phase)
            .field("calls", &self.calls.len())
            .field("running", &self.running.len());
        #[cfg(feature = "streams")]
        d.field("streams", &self.streams.len());
        d.finish()
    }
}

impl Connection {
    /// A new connection at `now` (the heartbeat's clock starts there).
    pub fn new(config: Config, now: Instant) -> Self {
        let lsp = (config.lsp_lifecycle && config.profile == Profile::Lsp)
            .then(|| Box::new(lsp::Lsp::new(config.process_check)));
        let timed = config.heartbeat.is_some() || lsp.is_some();
        Connection {
            #[cfg(feature = "streams")]
            streams: StreamTable::new(config.streams),
            heartbeat: config.heartbeat.map(|h| Heartbeat::new(h, now)),
            #[cfg(feature = "subscriptions")]
            subs: subscriptions::Table::default(),
            wire: Wire::new(config),
            calls: Calls::default(),
            running: Running::default(),
            hook: None,
            hook_buf: Vec::new(),
            hook_later: Vec::new(),
            phase: Phase::Open,
            input_ended: false,
            input_finished: false,
            reason: None,
            driver_pending: false,
            finished: false,
            timed,
            lsp,
        }
    }

    /// Makes this machine new for another connection: afterwards it is as
    /// [`Connection::new`]`(config, now)` made it, and nothing of what it held is left (its
    /// tables, hook, queued input and output, ids and state are dropped), but its output,
    /// event and message buffers keep their capacity, emptied (each up to 4 KiB: one a
    /// large exchange grew past that is let go). A server of many short connections (or a
    /// device that reconnects) reuses one machine after another without allocating it and
    /// growing its buffers again.
    ///
    /// ```
    /// use sansrpc::connection::{Config, Connection};
    /// use sansrpc::Instant;
    ///
    /// let mut conn = Connection::new(Config::default(), Instant::ZERO);
    /// conn.handle_input(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\n", Instant::ZERO).unwrap();
    /// conn.handle_end_of_input(Instant::ZERO);
    /// conn.renew(Config::default(), Instant::ZERO);
    /// assert!(conn.is_blank());
    /// assert!(conn.poll_event().is_none());
    /// ```
    pub fn renew(&mut self, config: Config, now: Instant) {
        let mut fresh = Connection::new(config, now);
        fresh.wire.keep_buffers(&mut self.wire);
        *self = fresh;
    }

    /// Gives the connection a hook (pub/sub): offered the peer's requests before they
    /// become [`Event::Request`], its notifications sent whenever output has room. When
    /// the hook's wake fires, poll events and transmit as usual: the notifications are
    /// queued as output once the events are drained.
    pub fn set_hook(&mut self, hook: Box<dyn ConnectionHook>) {
        self.hook = Some(hook);
    }

    /// True when the connection has a hook ([`set_hook`](Connection::set_hook)).
    pub fn has_hook(&self) -> bool {
        self.hook.is_some()
    }

    /// The config.
    pub fn config(&self) -> &Config {
        self.wire.config()
    }

    /// True when every table is empty, the wire's and the connection's: no call
    /// waiting, no request of the peer running, nothing remembered, queued or buffered
    /// (feature `internals`: this crate's own tests).
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn is_idle(&self) -> bool {
        self.wire.is_idle() && self.tables_idle()
    }

    /// The connection's own tables are empty: no call waiting, no request of the peer
    /// running, no stream or subscription open, no hook answer waiting.
    fn tables_idle(&self) -> bool {
        let idle = self.calls.len() == 0 && self.running.is_empty() && self.hook_later.is_empty();
        #[cfg(feature = "streams")]
        let idle = idle && self.streams.is_empty();
        #[cfg(feature = "subscriptions")]
        let idle = idle && self.subs.active.is_empty();
        idle
    }

    /// Our requests the peer has not answered yet. Unlike
    /// [`waiting_calls`](Connection::waiting_calls), an answer received and not yet handed
    /// out by [`poll_event`](Connection::poll_event) no longer counts.
    pub fn unanswered_requests(&self) -> usize {
        self.wire.pending_requests()
    }

    /// The peer's requests received and not answered yet (held ones included).
    pub fn requests_in_flight(&self) -> usize {
        self.wire.requests_in_flight()
    }

    /// Requests the rate limit ([`Config::rate_limit`]) answered with its error so far.
    pub fn rate_limited_requests(&self) -> u64 {
        self.wire.rate_limited_requests()
    }

    /// Bytes of memory the output buffer holds: at most about twice
    /// [`buffered_output`](Connection::buffered_output) (plus a few KiB), whatever the
    /// driver takes per turn; an emptied buffer keeps at most 64 KiB.
    pub fn output_capacity(&self) -> usize {
        self.wire.output_capacity()
    }

    /// Notifications the rate limit ([`Config::rate_limit`]) dropped so far.
    pub fn dropped_notifications(&self) -> u64 {
        self.wire.dropped_notifications()
    }

    /// True while the peer's requests or notifications are held back: as many requests are
    /// handed out and unanswered as allowed ([`Config::hold_when_busy`]), or a
    /// notification's handler has not finished ([`Config::ordered_notifications`]). The
    /// rest of the input is still read, up to [`Config::max_held_bytes`].
    pub fn is_holding(&self) -> bool {
        self.wire.is_holding()
    }

    /// Bytes of output taken so far (by [`poll_transmit`](Connection::poll_transmit) and
    /// [`consume_transmit`](Connection::consume_transmit)): a driver compares it before and
    /// after writing to know whether a byte went out.
    pub fn transmitted(&self) -> u64 {
        self.wire.transmitted()
    }

    /// True while the connection takes input: open, not shutting down, and with room for
    /// it (held input within its bound, output within its). A
    /// driver stops reading otherwise, and tries again once its output is written or a
    /// handler answered.
    pub fn wants_input(&self) -> bool {
        self.takes_input() && self.wire.wants_input()
    }

    /// The handler of a notification from [`Event::Notification`] has finished. Under
    /// [`ordered_notifications`](Config::ordered_notifications) (the LSP
    /// profile's default) the peer's later requests and notifications wait for it: a
    /// driver calls it once per notification, when its handler (async ones included) is
    /// done; otherwise it does nothing.
    pub fn notification_done(&mut self) {
        self.wire.notification_done();
    }

    /// True once the connection takes no more input, for good: it is shutting down
    /// (handlers in flight may still answer), closed, or the peer's input ended. A transport
    /// holding part of a request it will never hand in can refuse it now (HTTP: `503`)
    /// instead of dropping it unanswered.
    pub fn is_closing(&self) -> bool {
        !self.takes_input()
    }

    /// Open and not shutting down: input is processed (or held back), not dropped.
    fn takes_input(&self) -> bool {
        matches!(self.phase, Phase::Open) && !self.input_ended
    }

    /// True once the wire is closed ([`Event::Closed`] is queued or was polled).
    pub fn is_closed(&self) -> bool {
        self.wire.is_closed()
    }

    /// True once the connection is over and its output written (the driver reported no
    /// output pending through [`handle_write`](Connection::handle_write)) or the linger
    /// period passed: the driver closes the transport and stops.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// True when nothing of any exchange is left in the connection: open, its input not
    /// ended, nothing queued, held, partly decoded or waiting to be written, no request in
    /// flight either way (nor handed out and unanswered), no subscription, stream, batch,
    /// early cancellation or deadline, no hook, LSP lifecycle, heartbeat or rate limit (each
    /// the connection's own state across exchanges).
    ///
    /// A blank connection is one any other blank connection of the same [`Config`] (and
    /// time base) can stand in for: a server whose exchanges are independent of each other
    /// (JSON-RPC over HTTP, one POST at a time on a connection) may keep a few blank
    /// machines and hand each exchange whichever was used last, whose state is still in
    /// the processor's cache, rather than one per network connection, each cold when its
    /// request comes.
    #[inline]
    pub fn is_blank(&self) -> bool {
        self.takes_input()
            && !self.input_finished
            && !self.finished
            && !self.driver_pending
            && self.reason.is_none()
            && self.hook.is_none()
            && self.lsp.is_none()
            && self.heartbeat.is_none()
            && self.hook_buf.is_empty()
            && self.tables_idle()
            && self.wire.is_blank()
    }

    /// The peer's requests handed out and not answered yet.
    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// Our calls waiting for an answer.
    pub fn waiting_calls(&self) -> usize {
        self.calls.len()
    }

    // ----- input -----

    /// Takes bytes from a byte-stream transport (any chunking) and returns how many it took
    /// (fewer when events or output are backed up: drain them and offer the rest again).
    /// While shutting down input is taken and ignored.
    pub fn handle_input(&mut self, bytes: &[u8], now: Instant) -> Result<usize, NotAByteStream> {
        if !self.takes_input() {
            return if self.wire.config().framing.is_none() {
                Err(NotAByteStream)
            } else {
                Ok(bytes.len())
            };
        }
        self.wire.handle_input(bytes, now)
    }

    /// Takes one whole message from a message transport (WebSocket, HTTP); refused with
    /// [`Backpressure`] while events or output are backed up.
    pub fn handle_message(&mut self, message: &[u8], now: Instant) -> Result<(), Backpressure> {
        if !self.takes_input() {
            return Ok(());
        }
        self.wire.handle_message(message, now)
    }

    /// Like [`handle_message`](Connection::handle_message), marking the message with `tag`:
    /// every frame written for its requests carries the tag
    /// ([`poll_transmit_tagged`](Connection::poll_transmit_tagged)), so a transport with a
    /// stream per message sends each answer on its message's stream.
    pub fn handle_message_tagged(
        &mut self,
        message: &[u8],
        tag: u64,
        now: Instant,
    ) -> Result<(), Backpressure> {
        if !self.takes_input() {
            return Ok(());
        }
        self.wire.handle_message_tagged(message, tag, now)
    }

    /// [`handle_message_tagged`](Connection::handle_message_tagged) for a message a
    /// classifier has scanned already ([`Scanned`](crate::message::Scanned), as the
    /// Streamable HTTP machine hands on the body it read:
    /// `sansrpc_mcp::streamable::Endpoint::handle_request_owned`):
    /// what it found is read rather than found a second time, when it was found under this
    /// connection's [`Limits`](crate::Limits). On [`Backpressure`] hand it in again later.
    pub fn handle_scanned_tagged(
        &mut self,
        message: &mut crate::message::Scanned,
        tag: u64,
        now: Instant,
    ) -> Result<(), Backpressure> {
        if !self.takes_input() {
            return Ok(());
        }
        self.wire.handle_scanned_tagged(message, tag, now)
    }

    /// The peer's input ended: everything it sent before still runs, for up to
    /// [`Config::end_grace`]: requests running are answered, a notification still running
    /// under [`Config::ordered_notifications`] finishes, and the requests and notifications
    /// held behind it are handed out and answered in order; then the connection closes
    /// ([`CloseReason::PeerClosed`]). Under the LSP profile the exit status
    /// ([`exit_code`](Connection::exit_code)) is 0 only if `shutdown` was answered.
    pub fn handle_end_of_input(&mut self, now: Instant) {
        if self.input_ended {
            return;
        }
        self.input_ended = true;
        if matches!(self.phase, Phase::Open) {
            self.phase = Phase::Draining {
                until: now.saturating_add(self.wire.config().end_grace),
                reason: CloseReason::PeerClosed,
            };
        }
    }

    /// Tells the connection how writing went: `wrote` when bytes left for the peer,
    /// `pending` when the driver still holds output it could not write. The wire's
    /// write-stall rule runs on it, and [`is_finished`](Connection::is_finished) waits for
    /// the driver's output at close.
    pub fn handle_write(&mut self, wrote: bool, pending: bool, now: Instant) {
        self.driver_pending = pending;
        self.wire.handle_write(wrote, pending, now);
        self.check_finished(now);
    }

    /// Runs everything due at `now`: our calls' deadlines, the protection timeouts, idle
    /// streams, the heartbeat, the grace and linger periods.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.wire.handle_timeout(now);
        #[cfg(feature = "streams")]
        self.streams.handle_timeout(now);
        if let Some(lsp) = self.lsp.as_mut() {
            lsp.handle_timeout(now);
        }
        if matches!(self.phase, Phase::Open) {
            match self.heartbeat.as_mut().and_then(|h| h.handle_timeout(now)) {
                Some(Beat::SendPing) => {
                    // A ping that finds the output full is skipped; the next one goes.
                    let _ = self.wire.send_notification(keepalive::PING, None);
                }
                Some(Beat::Dead) => self.close_with(CloseReason::HeartbeatTimeout, now),
                None => {}
            }
        }
        if let Phase::Draining { until, reason } = self.phase {
            if now >= until {
                self.close_with(reason, now);
            }
        }
        self.check_finished(now);
    }

    /// The next instant [`handle_timeout`](Connection::handle_timeout) has work at (it may
    /// be already past: call it at once then).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut next = self.wire.poll_timeout();
        #[cfg(feature = "streams")]
        if self.timed {
            next = min(next, self.streams.poll_timeout());
        }
        if self.timed && matches!(self.phase, Phase::Open) {
            next = min(
                next,
                self.heartbeat.as_ref().and_then(Heartbeat::poll_timeout),
            );
            next = min(next, self.lsp.as_ref().and_then(|l| l.next_check));
        }
        match self.phase {
            Phase::Draining { until, .. } => min(next, Some(until)),
            Phase::Closed { until } if !self.finished => Some(until),
            Phase::Closed { .. } => None,
            Phase::Open => next,
        }
    }

    // ----- output -----

    /// Appends the next frame to write to `buf` and returns its length; `None` when there is
    /// none. The hook's notifications are taken here, as output has room.
    pub fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> Option<usize> {
        if let Some(n) = self.wire.poll_transmit(buf) {
            return Some(n);
        }
        if self.drain_hook() {
            return self.wire.poll_transmit(buf);
        }
        None
    }

    /// Like [`poll_transmit`](Connection::poll_transmit), with the frame's tag (see
    /// [`handle_message_tagged`](Connection::handle_message_tagged)): the tag of the message whose
    /// request the frame answers or was sent for.
    pub fn poll_transmit_tagged(&mut self, buf: &mut Vec<u8>) -> Option<(usize, u64)> {
        if let Some(frame) = self.wire.poll_transmit_tagged(buf) {
            return Some(frame);
        }
        if self.drain_hook() {
            return self.wire.poll_transmit_tagged(buf);
        }
        None
    }

    /// For a transport that carries only answers (a plain HTTP POST, whose response is the
    /// answer to its body and nothing else): drops the frames queued in front of the next
    /// answer to the peer's requests (a response, or a batch's array), which answer nothing
    /// (notifications and requests of ours, sent by a handler or a client: such a transport
    /// has no way to send them), so that the next [`poll_transmit`](Connection::poll_transmit)
    /// or [`peek_messages`](Connection::peek_messages) gives the answer, if it is queued.
    /// All of them when no answer is. How many frames were dropped.
    pub fn skip_to_answer(&mut self) -> usize {
        self.wire.skip_to_answer()
    }

    /// Every byte of output queued, framed, for a byte-stream driver to write straight
    /// from the connection's buffer (no copy into its own); then it reports how many bytes
    /// went out with [`consume_transmit`](Connection::consume_transmit). The hook's
    /// notifications join the output here too, as it has room. Empty when there is
    /// nothing to send.
    pub fn peek_transmit(&mut self) -> &[u8] {
        if self.wire.buffered_output() == 0 {
            self.drain_hook();
        }
        self.wire.peek_transmit()
    }

    /// The messages of [`peek_transmit`](Connection::peek_transmit) one by one, for a
    /// message transport that frames them itself and writes them straight from the
    /// connection's buffer (a WebSocket server: each frame's header from its own, the
    /// payload from here, in one vectored write) rather than copying each out with
    /// [`poll_transmit`](Connection::poll_transmit); then it reports how many of their
    /// bytes went out with [`consume_transmit`](Connection::consume_transmit). The first
    /// is without what of it was consumed already.
    pub fn peek_messages(&mut self) -> impl Iterator<Item = &[u8]> + '_ {
        if self.wire.buffered_output() == 0 {
            self.drain_hook();
        }
        self.wire.transmit_frames()
    }

    /// The messages of [`peek_messages`](Connection::peek_messages), each as three runs of
    /// bytes in order (some of them empty), for a driver that writes them in one vectored
    /// write: a shared item ([`send_shared_item`](Connection::send_shared_item)) is the
    /// middle run, written from where it was serialized once for all its subscribers. Once
    /// a driver has called it, the connection holds shared items rather than copying them;
    /// [`peek_transmit`](Connection::peek_transmit) and
    /// [`peek_messages`](Connection::peek_messages) copy them in when called.
    pub fn peek_message_parts(&mut self) -> impl Iterator<Item = [&[u8]; 3]> + '_ {
        if self.wire.buffered_output() == 0 {
            self.drain_hook();
        }
        self.wire.transmit_parts()
    }

    /// [`peek_message_parts`](Connection::peek_message_parts), each message with the item
    /// shared by many subscribers ([`send_shared_item`](Connection::send_shared_item)) that
    /// is its middle run, if any: a driver that renders a message into bytes of its own (a
    /// frame's header, the runs gathered into one buffer) can keep what it made of an item
    /// and reuse it for the next connection that sends the same item with the same bytes
    /// around it, rather than render it again for each subscriber.
    #[cfg(all(feature = "subscriptions", target_has_atomic = "ptr"))]
    pub fn peek_message_parts_with_items(
        &mut self,
    ) -> impl Iterator<Item = ([&[u8]; 3], Option<&alloc::sync::Arc<RawValue>>)> + '_ {
        if self.wire.buffered_output() == 0 {
            self.drain_hook();
        }
        self.wire.transmit_parts_with_items()
    }

    /// The first `n` bytes of [`peek_transmit`](Connection::peek_transmit) were written.
    /// Call [`handle_write`](Connection::handle_write) too (the
    /// [`StreamIo`](crate::driver::StreamIo) helper does both).
    pub fn consume_transmit(&mut self, n: usize) {
        self.wire.consume_transmit(n);
    }

    /// Moves the hook's queued notifications into the wire's output while it has
    /// room; true when some moved.
    fn drain_hook(&mut self) -> bool {
        match self.hook.as_deref_mut() {
            Some(hook) => hook::drain_into(hook, &mut self.wire, &mut self.hook_later),
            None => false,
        }
    }

    /// Bytes of output queued and not yet taken by [`poll_transmit`](Connection::poll_transmit).
    pub fn buffered_output(&self) -> usize {
        self.wire.buffered_output()
    }

    /// The size of the next batch received since the last call, for metrics layers.
    pub(crate) fn poll_batch_size(&mut self) -> Option<usize> {
        self.wire.poll_batch_size()
    }

    /// The next event for the driver; `None` when there is none. The connection handles
    /// stream pulls, heartbeats, the hook's requests and peer cancels of streams itself.
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event<'_>> {
        // The two events of nearly every request, told here in a few instructions: the
        // request no part of the machine takes, and the queue found empty with nothing to
        // settle. Everything else takes the whole way, kept out of line, so that the code a
        // plain request runs lies on a few cache lines, not spread through that of every
        // rarer event (it ran on 40 lines of 64 bytes, of 9 KiB).
        if self.lsp.is_none() && self.hook.is_none() {
            match self.by_name_next() {
                NextByName::Pass(at) => return self.pass_call(at),
                NextByName::Empty if self.settled() => return None,
                _ => {}
            }
        }
        self.poll_any_event()
    }

    /// With the wire's queue empty: true when [`poll_event`](Connection::poll_event) has
    /// nothing to do but say so (no stream freed to tell, the input not ended, the
    /// connection open), as its whole way would find.
    #[inline(always)]
    fn settled(&self) -> bool {
        #[cfg(feature = "streams")]
        if self.streams.has_freed() {
            return false;
        }
        !self.input_ended && matches!(self.phase, Phase::Open)
    }

    /// [`poll_event`](Connection::poll_event), every event.
    #[inline(never)]
    fn poll_any_event(&mut self) -> Option<Event<'_>> {
        if let Some(lsp) = self.lsp.as_mut().filter(|l| l.check_due) {
            lsp.check_due = false;
            if let (Some(pid), false) = (lsp.pid, self.wire.is_closed()) {
                return Some(Event::CheckProcess { pid });
            }
        }
        loop {
            let by_name = match self.hook {
                None => self.by_name_next(),
                Some(_) => NextByName::Look,
            };
            match by_name {
                // What no extension takes, known by its method alone: built once, handed out.
                NextByName::Pass(at) => return self.pass_call(at),
                NextByName::Response(id) if self.calls.contains(id) => return self.pass_response(),
                // A call whose token was forgotten: nobody wants the answer.
                NextByName::Response(_) => {
                    self.skip_event();
                    continue;
                }
                NextByName::Empty | NextByName::Look => {}
            }
            let next = match by_name {
                // Nothing queued: looking again would find nothing.
                NextByName::Empty => None,
                _ => self.wire.peek_record(),
            };
            let take = match next {
                Some(event) => decide(
                    event,
                    self.hook.as_mut(),
                    &mut self.hook_buf,
                    self.heartbeat.is_some(),
                    self.lsp.as_deref(),
                    #[cfg(feature = "subscriptions")]
                    &self.subs,
                ),
                None => {
                    #[cfg(feature = "streams")]
                    if let Some(stream) = self.streams.poll_freed() {
                        return Some(Event::StreamClosed { stream });
                    }
                    if self.settle_input() {
                        continue;
                    }
                    // The hook's notifications join the output here too, for drivers whose
                    // transport asks for frames only when `buffered_output` shows some.
                    self.drain_hook();
                    return None;
                }
            };
            match take {
                Take::Pass => return self.pass(),
                Take::Hooked(id, answer) => {
                    self.wire.take_record();
                    let answer = answer.as_ref().map(|()| &self.hook_buf[..]);
                    hook::send_answer(&mut self.wire, id, answer);
                }
                Take::HookLater(id, number) => {
                    self.wire.take_record();
                    self.hook_later.push((number, id));
                }
                #[cfg(feature = "streams")]
                Take::Stream(id, request) => {
                    self.wire.take_record();
                    let now = self.endpoint_now();
                    let streams = &mut self.streams;
                    if !streams.handle_request(&mut self.wire, id, &request, now) {
                        // Not a stream method after all: a request like any other. It was
                        // polled, so it goes out owned.
                        self.running.insert(id);
                        return Some(Event::Request {
                            handle: id,
                            request,
                        });
                    }
                    continue;
                }
                #[cfg(feature = "streams")]
                Take::StreamCancel(stream) => {
                    self.wire.take_record();
                    self.wire.notification_done();
                    if let Some(stream) = stream {
                        self.streams.cancel(&mut self.wire, stream);
                    }
                    continue;
                }
                Take::Beat(method) => {
                    self.take_beat(method);
                    continue;
                }
                Take::PeerCancelled(id) => {
                    self.wire.take_record();
                    #[cfg(feature = "streams")]
                    if self.streams.handle_peer_cancelled(&mut self.wire, id) {
                        continue;
                    }
                    if self.running.contains(&id) {
                        return Some(Event::Cancel { handle: id });
                    }
                    continue;
                }
                Take::Response(id) if self.calls.contains(id) => return self.pass(),
                // A call whose token was forgotten: nobody wants the answer.
                Take::Response(_) => self.skip_event(),
                Take::Ended(id, reason) => {
                    if let Some(ended) = self.take_ended(id, reason) {
                        return Some(ended);
                    }
                    continue;
                }
                Take::Closed => {
                    self.wire.take_record();
                    return Some(self.closed());
                }
                #[cfg(feature = "subscriptions")]
                Take::Unsubscribe(id, sub) => {
                    self.wire.take_record();
                    let ended = sub.is_some_and(|sub| self.subs.active.remove(&sub).is_some());
                    let answer = RawValue::from_validated(if ended { "true" } else { "false" });
                    let _ = self.wire.respond(id, Ok(answer));
                    if let (true, Some(sub)) = (ended, sub) {
                        return Some(Event::Unsubscribed { sub });
                    }
                }
                Take::LspRefuse(id, error) => {
                    self.wire.take_record();
                    let _ = self.wire.respond(id, Err(&error));
                }
                Take::LspInitialize(handle, params) => {
                    let now = self.endpoint_now();
                    if let Some(lsp) = self.lsp.as_mut() {
                        lsp.initialize(handle, params.as_deref(), now);
                    }
                    return self.pass();
                }
                Take::LspShutdown(handle) => {
                    if let Some(lsp) = self.lsp.as_mut() {
                        lsp.state = lsp::State::ShutDown;
                        lsp.shutdown = Some(handle);
                    }
                    return self.pass();
                }
                Take::LspNotification(gate) => {
                    self.wire.take_record();
                    self.wire.notification_done();
                    match gate {
                        lsp::Gate::Exit(code) => {
                            let now = self.endpoint_now();
                            let reason = CloseReason::Exit { code };
                            if self.running.is_empty() {
                                self.close_with(reason, now);
                            } else {
                                // Requests read before `exit` (a client that sent
                                // `shutdown` and `exit` together) still get their answers,
                                // for up to `end_grace`; nothing after `exit` is read.
                                self.input_ended = true;
                                self.phase = Phase::Draining {
                                    until: now.saturating_add(self.wire.config().end_grace),
                                    reason,
                                };
                            }
                        }
                        lsp::Gate::SetTrace(trace) => {
                            if let Some(lsp) = self.lsp.as_mut() {
                                lsp.trace = trace;
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// Like [`poll_event`](Connection::poll_event), for a connection that serves nothing
    /// and only calls the peer: the peer's requests are answered `-32601` (method not
    /// found) here and never handed out, and none of the serving side is consulted (the
    /// hook, the streams served, the method subscriptions accepted, the LSP lifecycle).
    /// Answers, ended calls, notifications, heartbeats, closing and what is only worth
    /// logging come as from `poll_event`. A driver that only calls uses it instead of
    /// `poll_event`, so that its program carries none of the server's paths.
    pub fn poll_client_event(&mut self) -> Option<Event<'_>> {
        self.client_event(false)
    }

    /// Like [`poll_client_event`](Connection::poll_client_event), for a client that answers
    /// the few requests its peer sends it (an MCP client: the server's `ping`, sampling,
    /// elicitation, roots): the peer's requests are handed out as [`Event::Request`] for
    /// the driver to [`respond`](Connection::respond) to, and their cancellations as
    /// [`Event::Cancel`]. Still none of the serving side is consulted (the hook, the
    /// streams served, the method subscriptions accepted, the LSP lifecycle), so a driver
    /// that answers through one function of its own carries none of the server's paths.
    pub fn poll_answering_event(&mut self) -> Option<Event<'_>> {
        self.client_event(true)
    }

    /// The events of a connection that calls (see [`poll_client_event`]), the peer's
    /// requests handed out when it `answers` them. Inlined into each of the two, so that
    /// a program that never answers carries none of that path.
    ///
    /// [`poll_client_event`]: Connection::poll_client_event
    #[inline(always)]
    fn client_event(&mut self, answers: bool) -> Option<Event<'_>> {
        loop {
            let heartbeat = self.heartbeat.is_some();
            let next = match self.wire.peek_next() {
                None => ClientNext::Empty,
                Some(Peek::Call {
                    request: true, at, ..
                }) => ClientNext::Unserved(at),
                Some(Peek::Call {
                    request: false,
                    method,
                    at,
                }) if !matches!(by_name(false, method, heartbeat), ByName::Beat(_)) => {
                    ClientNext::Pass(at)
                }
                Some(Peek::Response(id)) => ClientNext::Response(id),
                Some(_) => ClientNext::Look,
            };
            let take = match next {
                ClientNext::Unserved(at) if answers => return self.pass_call(at),
                ClientNext::Unserved(at) => {
                    let id = self.wire.poll_call(at).and_then(|call| call.request);
                    if let Some(id) = id {
                        self.refuse_unserved(id);
                    }
                    continue;
                }
                ClientNext::Pass(at) => return self.pass_call(at),
                ClientNext::Response(id) if self.calls.contains(id) => return self.pass_response(),
                // A call whose token was forgotten: nobody wants the answer.
                ClientNext::Response(_) => {
                    self.skip_event();
                    continue;
                }
                ClientNext::Look => match self.wire.peek_record() {
                    Some(event) => decide_client(event, heartbeat),
                    None => ClientTake::Settle,
                },
                ClientNext::Empty => ClientTake::Settle,
            };
            match take {
                ClientTake::Settle => {
                    if self.settle_input() {
                        continue;
                    }
                    return None;
                }
                ClientTake::Pass => return self.pass(),
                ClientTake::Unserved(_) if answers => return self.pass(),
                ClientTake::Unserved(id) => {
                    self.wire.take_record();
                    self.refuse_unserved(id);
                }
                ClientTake::Beat(method) => self.take_beat(method),
                ClientTake::PeerCancelled(id) if answers && self.running.contains(&id) => {
                    self.wire.take_record();
                    return Some(Event::Cancel { handle: id });
                }
                // Nothing of the peer's runs here (or no longer): nothing to cancel.
                ClientTake::PeerCancelled(_) => self.skip_event(),
                ClientTake::Response(id) if self.calls.contains(id) => return self.pass(),
                ClientTake::Response(_) => self.skip_event(),
                ClientTake::Ended(id, reason) => {
                    if let Some(ended) = self.take_ended(id, reason) {
                        return Some(ended);
                    }
                }
                ClientTake::Closed => {
                    self.wire.take_record();
                    return Some(self.closed());
                }
            }
        }
    }

    /// Takes the wire's next event and drops it: handled here, or nobody wants it.
    #[inline]
    fn skip_event(&mut self) {
        self.wire.take_record();
    }

    /// Takes the wire's next event, a heartbeat notification (`method`): a ping is
    /// answered with a pong, a pong is noted. Rare beside the other events: kept out of line.
    #[inline(never)]
    fn take_beat(&mut self, method: &str) {
        self.wire.take_record();
        self.wire.notification_done();
        let now = self.endpoint_now();
        let heartbeat = self.heartbeat.as_mut();
        let heard = heartbeat.map(|h| h.handle_notification(method, now));
        if heard == Some(Heard::Ping) {
            // A pong that finds the output full is dropped; the peer pings again.
            let _ = self.wire.send_notification(keepalive::PONG, None);
        }
    }

    /// Takes the wire's next event, the end of our call `id` without an answer: the
    /// [`Event::Ended`] for its caller, none when nobody waits for it (its token forgotten).
    #[inline]
    fn take_ended(&mut self, id: RequestId, reason: EndReason) -> Option<Event<'static>> {
        self.wire.take_record();
        let (token, index, last) = self.calls.settle(id)?;
        Some(Event::Ended {
            token,
            index,
            reason,
            last,
        })
    }

    /// Answers the peer's request `id` to a connection that serves nothing: `-32601`.
    #[inline(never)]
    fn refuse_unserved(&mut self, id: IncomingId) {
        let _ = self.wire.respond(id, Err(&ErrorObject::method_not_found()));
    }

    /// Whether the next event is a request or notification that no part of the machine
    /// takes (no stream method, no stream cancel, no heartbeat), as [`decide`] would find
    /// without a hook, or a response, or there is none, or telling takes more than its
    /// method name.
    #[inline]
    fn by_name_next(&mut self) -> NextByName {
        let heartbeat = self.heartbeat.is_some();
        let lsp = self.lsp.as_ref();
        #[cfg(feature = "subscriptions")]
        let subs = &self.subs;
        #[cfg(not(feature = "subscriptions"))]
        let subs = &();
        match self.wire.peek_next() {
            None => NextByName::Empty,
            Some(Peek::Call {
                request,
                method,
                at,
            }) if by_name(request, method, heartbeat) == ByName::Nothing
                && !lsp.is_some_and(|l| l.takes(request, method))
                && !subs_take(subs, request, method) =>
            {
                NextByName::Pass(at)
            }
            Some(Peek::Response(id)) => NextByName::Response(id),
            Some(_) => NextByName::Look,
        }
    }

    /// Hands the wire's next event, the request or notification at `at` in its queue
    /// ([`NextByName::Pass`]), to the driver: built once, here, from the wire's entry.
    #[inline(always)]
    fn pass_call(&mut self, at: usize) -> Option<Event<'_>> {
        let call = self.wire.poll_call(at)?;
        Some(match call.request {
            Some(handle) => {
                self.running.insert(handle);
                Event::Request {
                    handle,
                    request: call.entry.request(call.frame),
                }
            }
            None => Event::Notification(call.entry.notification(call.frame)),
        })
    }

    /// Hands the wire's next event, the response to one of our calls, to the driver as
    /// its answer: built once, here, from the wire's entry.
    #[inline]
    fn pass_response(&mut self) -> Option<Event<'_>> {
        // Asked first for the reason `pass_call` gives.
        if !self.wire.next_is_response() {
            return self.pass();
        }
        let response = self.wire.poll_response()?;
        let result = response.entry.outcome(response.frame);
        Some(match self.calls.settle(response.id) {
            Some((token, index, last)) => Event::Answer {
                token,
                index,
                result,
                last,
            },
            None => Event::UnknownResponse(orphan(response.id, result)),
        })
    }

    /// Hands the next record of the queue to the driver as its event, noting what it
    /// implies: a request runs, a call is answered, an expiry is why the connection closes.
    #[inline]
    fn pass(&mut self) -> Option<Event<'_>> {
        let (record, frame) = self.wire.take_record()?;
        Some(match record {
            Record::Entry { entry, role, .. } => match (entry.materialize(frame), role) {
                (Incoming::Request(request), Role::Request(handle)) => {
                    self.running.insert(handle);
                    Event::Request { handle, request }
                }
                (Incoming::Notification(n), _) => Event::Notification(n),
                (Incoming::Response(r), Role::Response(id)) => match self.calls.settle(id) {
                    Some((token, index, last)) => Event::Answer {
                        token,
                        index,
                        result: r.result,
                        last,
                    },
                    None => Event::UnknownResponse(orphan(id, r.result)),
                },
                (Incoming::Response(Response { result: Err(e), .. }), Role::NullIdError) => {
                    Event::ErrorWithoutId(e)
                }
                (Incoming::Response(r), _) => Event::UnknownResponse(r),
                (Incoming::BadResponse { id, error }, _) => Event::ProtocolError { id, error },
                // Requests are recorded only with their own role, invalid entries never.
                (Incoming::Request(_) | Incoming::Invalid(_), _) => {
                    unreachable!("request or invalid entry recorded with a foreign role")
                }
            },
            Record::Expired(e) => {
                self.reason.get_or_insert(CloseReason::Expired(e));
                Event::Expired(e)
            }
            Record::Frame(e) => Event::FrameError(e),
            Record::Rejected(r) => Event::Rejected(r),
            // `decide` takes these before they get here.
            Record::Ended(..) | Record::PeerCancelled(_) | Record::Closed => return None,
        })
    }

    /// The wire closed: everything per connection goes.
    fn closed(&mut self) -> Event<'static> {
        let reason = self.reason.take().unwrap_or(match self.phase {
            Phase::Draining { reason, .. } => reason,
            _ if self.input_ended => CloseReason::PeerClosed,
            _ => CloseReason::Local,
        });
        // `exit` after `shutdown` is a clean exit only once `shutdown` was answered (a
        // client that sent both together, and a handler that never answered before the
        // grace ran out, is not).
        let reason = match (reason, self.lsp.as_ref()) {
            (CloseReason::Exit { code: 0 }, Some(lsp)) if !lsp.shutdown_answered => {
                CloseReason::Exit { code: 1 }
            }
            _ => reason,
        };
        self.reason = Some(reason);
        self.running.clear();
        self.hook_later.clear();
        #[cfg(feature = "streams")]
        self.streams.clear();
        #[cfg(feature = "subscriptions")]
        self.subs.active.clear();
        self.calls.clear();
        if let Some(mut hook) = self.hook.take() {
            hook.close();
        }
        let now = self.endpoint_now();
        if !matches!(self.phase, Phase::Closed { .. }) {
            // A peer that stopped reading will not take what is queued: no linger for it.
            let linger = match reason {
                CloseReason::Expired(Expiry::WriteStall) => Duration::ZERO,
                _ => self.wire.config().linger,
            };
            self.phase = Phase::Closed {
                until: now.saturating_add(linger),
            };
        }
        self.check_finished(now);
        Event::Closed { reason }
    }

    /// True when the transport should be closed with a reset rather than gracefully: the
    /// connection was closed because the peer stopped reading ([`Expiry::WriteStall`]).
    /// Nothing queued will reach such a peer, and a graceful close queues its FIN behind
    /// the unsent bytes, so the peer would learn of it only at its next zero-window probe,
    /// seconds later (and a driver that reads what is still buffered first would not even
    /// send a reset at close). On TCP: `SO_LINGER` 0, then close.
    pub fn resets_on_close(&self) -> bool {
        matches!(self.reason, Some(CloseReason::Expired(Expiry::WriteStall)))
    }

    /// Once the queue is empty: tells the wire the input ended, and closes when
    /// draining is done. True when that queued events.
    #[inline(always)]
    fn settle_input(&mut self) -> bool {
        if self.input_ended && !self.input_finished && !self.wire.is_closed() {
            self.input_finished = true;
            let now = self.endpoint_now();
            self.wire.finish_input(now);
            return true;
        }
        if let Phase::Draining { reason, .. } = self.phase {
            let input_done = !self.input_ended || self.input_finished;
            // Handlers still running keep the connection open until the grace ends:
            // requests handed out, and notifications whose order holds the rest back. At
            // the end of the peer's input, what it sent before is handed out and answered
            // too, in order (a `shutdown` behind a `didChange` still runs).
            let handlers_done = self.running.is_empty()
                && self.wire.notifications_running() == 0
                && (reason != CloseReason::PeerClosed || self.wire.calls_queued() == 0);
            if handlers_done && input_done && !self.wire.is_closed() {
                let now = self.endpoint_now();
                self.close_with(reason, now);
                return true;
            }
        }
        false
    }

    fn close_with(&mut self, reason: CloseReason, now: Instant) {
        if self.wire.is_closed() {
            return;
        }
        self.reason = Some(reason);
        self.wire.close(now);
        self.wire.discard_queued_calls();
    }

    fn check_finished(&mut self, now: Instant) {
        if let Phase::Closed { until } = self.phase {
            let flushed = self.wire.buffered_output() == 0 && !self.driver_pending;
            if flushed || now >= until {
                self.finished = true;
            }
        }
    }

    /// The latest time the wire was told.
    fn endpoint_now(&self) -> Instant {
        self.wire.now()
    }

    // ----- calls -----

    /// Sends a request of ours; its answer comes as [`Event::Answer`] (or
    /// [`Event::Ended`]) with `token` and index 0. Refused once the connection shuts down.
    /// A token names one call or batch: do not reuse one while its calls wait.
    pub fn call(
        &mut self,
        token: u64,
        method: &str,
        params: Option<&RawValue>,
        options: RequestOptions,
        now: Instant,
    ) -> Result<(), SendError> {
        if !matches!(self.phase, Phase::Open) {
            return Err(SendError::Closed);
        }
        let id = self.wire.send_request(method, params, options, now)?;
        self.calls.insert(token, id, 0, false);
        if method == "initialize" {
            // This side is an LSP client: the server's lifecycle is not ours to keep.
            self.lsp = None;
        }
        Ok(())
    }

    /// Calls `M` like [`call`](Connection::call), the params serialized straight into a
    /// reused buffer (no `serde_json::Value` between). Decode the answer's result with
    /// [`decode_result::<M>`](crate::method::decode_result).
    pub fn call_typed<M>(
        &mut self,
        token: u64,
        params: &M::Params,
        options: RequestOptions,
        now: Instant,
    ) -> Result<(), SendError>
    where
        M: crate::method::Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>,
    {
        if !matches!(self.phase, Phase::Open) {
            return Err(SendError::Closed);
        }
        let id = self.wire.call::<M>(params, options, now)?;
        self.calls.insert(token, id, 0, false);
        if M::NAME == "initialize" {
            self.lsp = None;
        }
        Ok(())
    }

    /// Sends the notification `N`, its params serialized as
    /// [`call_typed`](Connection::call_typed) does.
    pub fn notify_typed<N>(&mut self, params: &N::Params) -> Result<(), SendError>
    where
        N: crate::method::NotificationMethod<Params: serde::Serialize>,
    {
        if !matches!(self.phase, Phase::Open | Phase::Draining { .. }) {
            return Err(SendError::Closed);
        }
        self.wire.notify::<N>(params)
    }

    /// Sends a notification. Refused once the connection shuts down.
    pub fn notify(&mut self, method: &str, params: Option<&RawValue>) -> Result<(), SendError> {
        if !matches!(self.phase, Phase::Open | Phase::Draining { .. }) {
            return Err(SendError::Closed);
        }
        self.wire.send_notification(method, params)
    }

    /// Reports progress on `token` to the peer: a notification of
    /// [`Config::progress_method`] in the profile's shape. The token is the one the peer gave
    /// with its request (an integer or a string).
    ///
    /// - LSP and plain JSON-RPC: params `{"token": token, "value": value}`.
    /// - MCP: params `{"progressToken": token, …}`, where `…` is the members of `value` when
    ///   it is an object (`{"progress": 3, "total": 10, "message": "…"}`), else
    ///   `"progress": value` (a bare number).
    pub fn send_progress(&mut self, token: &Id<'_>, value: &RawValue) -> Result<(), SendError> {
        self.wire.send_progress(token, value)
    }

    /// Sends a notification on behalf of the peer's request `handle` (progress, a log
    /// message): it carries that request's tag, so a transport with a stream per request
    /// sends it on the request's stream.
    pub fn notify_for(
        &mut self,
        handle: IncomingId,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), SendError> {
        let tag = self.wire.tag_of(handle);
        if tag == 0 {
            return self.notify(method, params);
        }
        self.with_tag(tag, |c| c.notify(method, params))
    }

    /// Makes a call of ours on behalf of the peer's request `handle` (sampling or
    /// elicitation from inside a handler): it carries that request's tag, as
    /// [`notify_for`](Connection::notify_for).
    pub fn call_for(
        &mut self,
        handle: IncomingId,
        token: u64,
        method: &str,
        params: Option<&RawValue>,
        options: RequestOptions,
        now: Instant,
    ) -> Result<(), SendError> {
        let tag = self.wire.tag_of(handle);
        self.with_tag(tag, |c| c.call(token, method, params, options, now))
    }

    /// Reports progress on a token the peer gave, on behalf of its request `handle` (the
    /// frame carries the request's tag).
    pub fn send_progress_for(
        &mut self,
        handle: IncomingId,
        token: &Id<'_>,
        value: &RawValue,
    ) -> Result<(), SendError> {
        let tag = self.wire.tag_of(handle);
        self.with_tag(tag, |c| c.send_progress(token, value))
    }

    /// Runs `send` with the frames it writes tagged `tag`.
    fn with_tag<R>(&mut self, tag: u64, send: impl FnOnce(&mut Self) -> R) -> R {
        let before = self.wire.set_output_tag(tag);
        let result = send(self);
        self.wire.set_output_tag(before);
        result
    }

    /// Starts a batch of ours: its calls' answers come with `token` and their index among
    /// the batch's calls (notifications take no index).
    pub fn batch(&mut self, token: u64, now: Instant) -> CallBatch<'_> {
        let open = matches!(self.phase, Phase::Open);
        CallBatch {
            inner: self.wire.batch(now),
            calls: &mut self.calls,
            token,
            ids: Vec::new(),
            open,
        }
    }

    /// Ends, with `reason`, each of our calls in `frame` (a frame this connection wrote, as
    /// [`poll_transmit`](Connection::poll_transmit) handed it out) still waiting for its
    /// answer: for a transport whose exchanges carry one frame and its answers (an HTTP POST)
    /// when the exchange ended without them (a status with no JSON-RPC body, a connection
    /// refused or reset, a body that did not answer every call). Each ends as
    /// [`Event::Ended`] with `reason` (usually [`EndReason::Unanswered`]); no cancellation is
    /// sent. Returns how many ended.
    pub fn end_unanswered(&mut self, frame: &[u8], reason: EndReason, now: Instant) -> usize {
        let mut ended = 0;
        request_ids(frame, |id| {
            ended += usize::from(self.wire.end(RequestId(id), reason, now));
        });
        ended
    }

    /// How many requests a frame this connection wrote carries (one message or a batch):
    /// `0` for a frame of notifications only. A message transport that sends frames side by
    /// side (HTTP, one POST each) uses it to keep a notification in order with what follows.
    pub fn requests_in(frame: &[u8]) -> usize {
        let mut n = 0;
        request_ids(frame, |_| n += 1);
        n
    }

    /// Forgets the calls of `token`: no event comes for them any more, and (with
    /// [`Config::cancellation`]) the peer is told. False when none was waiting.
    pub fn cancel_call(&mut self, token: u64, now: Instant) -> bool {
        let ids = self.calls.forget(token);
        for id in &ids {
            self.wire.cancel(*id, now);
        }
        !ids.is_empty()
    }

    // ----- the peer's requests -----

    /// Answers a request from [`Event::Request`]. Nothing happens for a handle no longer
    /// valid (answered, or the connection closed).
    pub fn respond(&mut self, handle: IncomingId, result: Result<&RawValue, &ErrorObject<'_>>) {
        if self.running.remove(&handle) {
            let _ = self.wire.respond(handle, result);
            if let Some(lsp) = self.lsp.as_mut() {
                lsp.answered(handle, result.is_ok());
            }
        }
    }

    /// Answers the request `handle` with a typed result (serialized straight into a reused
    /// buffer) or an error object, as [`respond`](Connection::respond) does. A result that
    /// does not serialize is answered `-32603` Internal error: the request is answered
    /// either way.
    ///
    /// ```
    /// use sansrpc::connection::{Config, Connection, Event};
    /// use sansrpc::Instant;
    ///
    /// let mut conn = Connection::new(Config::default(), Instant::ZERO);
    /// let frame = br#"{"jsonrpc":"2.0","id":1,"method":"sum","params":[1,2]}"#;
    /// let mut wire = Vec::new();
    /// sansrpc::codec::encode_frame(sansrpc::codec::Framing::ContentLength, frame, &mut wire);
    /// conn.handle_input(&wire, Instant::ZERO).unwrap();
    /// let Some(Event::Request { handle, .. }) = conn.poll_event() else { panic!() };
    /// conn.respond_typed(handle, Ok(&3));
    /// let mut out = Vec::new();
    /// conn.poll_transmit(&mut out);
    /// assert!(out.ends_with(br#"{"jsonrpc":"2.0","result":3,"id":1}"#));
    /// ```
    pub fn respond_typed<T: serde::Serialize + ?Sized>(
        &mut self,
        handle: IncomingId,
        result: Result<&T, &ErrorObject<'_>>,
    ) {
        if self.running.remove(&handle) {
            let ok = result.is_ok();
            let _ = self.wire.respond_typed(handle, result);
            if let Some(lsp) = self.lsp.as_mut() {
                lsp.answered(handle, ok);
            }
        }
    }

    /// Answers a cancelled request as cancelled ([`Config::cancelled_code`]), or
    /// with nothing when the profile says so (MCP).
    pub fn respond_cancelled(&mut self, handle: IncomingId) {
        if self.running.remove(&handle) {
            let _ = self.wire.respond_cancelled(handle);
            if let Some(lsp) = self.lsp.as_mut() {
                lsp.answered(handle, false);
            }
        }
    }

    // ----- streams -----

    /// How many more streams may open now.
    #[cfg(feature = "streams")]
    pub fn stream_room(&self) -> usize {
        self.streams
            .config()
            .max_open
            .saturating_sub(self.streams.len())
    }

    /// Answers a stream-opening request with the "too many streams" error.
    #[cfg(feature = "streams")]
    pub fn refuse_stream(&mut self, handle: IncomingId) {
        let error = self.wire.own_error(stream::too_many_streams());
        self.respond(handle, Err(&error));
    }

    /// Opens a stream for a stream method's request and answers it `{"stream": id}`; the
    /// driver keeps the producer under the returned id. `None` (the request answered with
    /// an error) when no more streams may open.
    #[cfg(feature = "streams")]
    pub fn open_stream(&mut self, handle: IncomingId, now: Instant) -> Option<u64> {
        if !self.running.remove(&handle) {
            return None;
        }
        self.timed = true;
        self.streams
            .open(&mut self.wire, handle, (), now)
            .ok()
            .flatten()
    }

    /// True when some stream has a pull waiting: call [`produce`](Connection::produce).
    #[cfg(feature = "streams")]
    pub fn wants_items(&self) -> bool {
        !self.wire.is_closed() && self.streams.wants_items()
    }

    /// Asks for stream items through `next` (stream id, the answer buffer to append one
    /// JSON value to, what the pulls want) and answers pulls as they fill: at their `max`
    /// items, at [`StreamConfig::max_answer_bytes`], when the producer has nothing ready
    /// ([`Produced::Pending`]) and the answer holds at least one item, at the end and on
    /// failure. Stops after `budget` items over all streams (so one fast stream cannot
    /// starve the connection) and returns how many it took. `next` must append exactly one
    /// JSON value to the buffer when it returns [`Produced::Item`]; an item that is not
    /// valid JSON fails the stream with `-32603`. A producer run elsewhere (an iterator on
    /// a worker thread) gathers no more than the [`Demand`] it is given.
    #[cfg(feature = "streams")]
    pub fn produce<F>(&mut self, now: Instant, budget: usize, mut next: F) -> usize
    where
        F: FnMut(u64, &mut Vec<u8>, Demand) -> Produced,
    {
        if self.wire.is_closed() {
            return 0;
        }
        self.streams
            .produce(&mut self.wire, now, budget, |id, (), out, demand| {
                next(id, out, demand)
            })
    }

    // ----- method subscriptions -----

    /// Accepts the subscribe request `handle` as a subscription of `declaration`: answers
    /// it with a new subscription id (in the declaration's style) and returns the
    /// subscription's number, for [`send_item`](Connection::send_item) and the rest. From
    /// now on the connection answers the declaration's unsubscribe method itself. `None`
    /// when the request is not running here (answered already, or the connection closed),
    /// or when [`Config::max_subscriptions`] are active: then it is answered `-32002`
    /// "Server busy: too many subscriptions"; or when the transport cannot push
    /// ([`Config::push`] false, plain HTTP): then it is answered `-32601` "Subscriptions are
    /// not supported over plain HTTP".
    #[cfg(feature = "subscriptions")]
    pub fn accept_subscription(
        &mut self,
        handle: IncomingId,
        declaration: &subscriptions::MethodSubscription,
    ) -> Option<u64> {
        if !self.running.contains(&handle) {
            return None;
        }
        if !self.wire.config().push {
            let error = self.wire.own_error(subscriptions::no_push_error());
            self.respond(handle, Err(&error));
            return None;
        }
        if self.subs.active.len() >= self.wire.config().max_subscriptions {
            let error = ErrorObject::fixed(
                crate::error::code::SERVER_BUSY,
                "Server busy: too many subscriptions",
            );
            let error = self.wire.own_error(error);
            self.respond(handle, Err(&error));
            return None;
        }
        let decl = self.subs.declare(declaration);
        self.subs.next += 1;
        let sub = self.subs.next;
        let mut id = core::mem::take(&mut self.subs.buf);
        id.clear();
        self.subs.declarations[decl].write_id(sub, &mut id);
        // Written here, from a number: JSON.
        let text = core::str::from_utf8(&id).unwrap_or("null");
        self.respond(handle, Ok(RawValue::from_validated(text)));
        let active = subscriptions::Active::new(decl, &self.subs.shapes[decl], &id);
        self.subs.active.insert(sub, active);
        self.subs.buf = id;
        Some(sub)
    }

    /// Sends `item` to subscription `sub`: a notification of its declaration
    /// (`{"subscription": id, "result": item}`). [`SendError::Closed`] when the
    /// subscription is over; [`SendError::OutputFull`] while the output is full (keep the
    /// item queued and send it once [`buffered_output`](Connection::buffered_output) went
    /// down).
    #[cfg(feature = "subscriptions")]
    pub fn send_item(&mut self, sub: u64, item: &RawValue) -> Result<(), SendError> {
        let active = self.subs.active.get(&sub).ok_or(SendError::Closed)?;
        // The pieces around the item, the id included, were written once; the whole is
        // framed where the wire keeps its output.
        if let Some(prefix) = active.prefix() {
            let parts: [&[u8]; 3] = [prefix, item.get().as_bytes(), subscriptions::ITEM_TAIL];
            return self.wire.send_parts(&parts);
        }
        let shape = &self.subs.shapes[active.decl];
        let parts: [&[u8]; 5] = [
            &shape.head,
            active.id(),
            &shape.mid,
            item.get().as_bytes(),
            subscriptions::ITEM_TAIL,
        ];
        self.wire.send_parts(&parts)
    }

    /// Sends `item` to subscription `sub`, as [`send_item`](Connection::send_item) does,
    /// for an item shared by many subscribers (a fan-out's, serialized once): a driver
    /// that writes the output's parts ([`peek_message_parts`](Connection::peek_message_parts))
    /// writes it from there, and this connection's output holds only the bytes around it.
    #[cfg(all(feature = "subscriptions", target_has_atomic = "ptr"))]
    pub fn send_shared_item(
        &mut self,
        sub: u64,
        item: &alloc::sync::Arc<RawValue>,
    ) -> Result<(), SendError> {
        if !self.wire.shares_items() {
            return self.send_item(sub, item);
        }
        let active = self.subs.active.get(&sub).ok_or(SendError::Closed)?;
        if let Some(prefix) = active.prefix() {
            return self
                .wire
                .send_shared(&[prefix], item, subscriptions::ITEM_TAIL);
        }
        let shape = &self.subs.shapes[active.decl];
        let head: [&[u8]; 3] = [&shape.head, active.id(), &shape.mid];
        self.wire.send_shared(&head, item, subscriptions::ITEM_TAIL)
    }

    /// True when a notification of an active subscription may bypass this connection's
    /// output until its driver next takes a turn: written whole to the transport by the
    /// task that produced it, as [`send_shared_item`](Connection::send_shared_item) followed
    /// by a write of everything queued would write it. That is so while the connection is
    /// open (not closing, not closed, no LSP lifecycle), nothing waits in its output, and
    /// its messages are framed by a message-based transport that takes the output's parts
    /// (a WebSocket's text frames), not in the output itself.
    ///
    /// A driver that parks with this true may let a fan-out write to its socket
    /// ([`bypass_head`](Connection::bypass_head) gives the bytes before the item,
    /// [`bypass::ITEM_TAIL`] the bytes after it); the driver takes that back before
    /// anything else it does on its next turn, and writes the rest of a notification the
    /// socket took only in part before any other output. The order of what the peer
    /// receives is then the order the notifications were produced in, as it would be
    /// through the output. Such a write is not counted in
    /// [`transmitted`](Connection::transmitted); the idle clock counts input only and is
    /// not moved by it, and a write the socket took whole never stalls.
    #[cfg(target_has_atomic = "ptr")]
    pub fn may_bypass(&self) -> bool {
        self.takes_input()
            && self.lsp.is_none()
            && !self.wire.is_closed()
            && self.wire.buffered_output() == 0
            && self.wire.shares_items()
            && !self.wire.frames_output()
    }

    /// Lets the hook's notifications ([`set_hook`](Connection::set_hook)) be written past
    /// the output through `bypass` (see [`self::bypass`]), as a driver parks: false
    /// (nothing opened) unless [`may_bypass`](Connection::may_bypass) holds, no request the
    /// hook took waits for its answer, and the hook opens it
    /// ([`ConnectionHook::open_bypass`]). Close it with
    /// [`close_hook_bypass`](Connection::close_hook_bypass) first thing on the driver's
    /// next turn.
    #[cfg(target_has_atomic = "ptr")]
    pub fn open_hook_bypass(&mut self, bypass: &alloc::sync::Arc<dyn bypass::Bypass>) -> bool {
        if !self.hook_later.is_empty() || !self.may_bypass() {
            return false;
        }
        self.hook
            .as_mut()
            .is_some_and(|hook| hook.open_bypass(bypass))
    }

    /// Ends what [`open_hook_bypass`](Connection::open_hook_bypass) opened: the hook's
    /// notifications join the output again.
    #[cfg(target_has_atomic = "ptr")]
    pub fn close_hook_bypass(&mut self) {
        if let Some(hook) = &mut self.hook {
            hook.close_bypass();
        }
    }

    /// The bytes a notification of subscription `sub` starts with, before its item (it ends
    /// with `}}`): what a task writing it past the output
    /// ([`may_bypass`](Connection::may_bypass)) writes around the item. `None` when `sub` is
    /// not active or this connection's messages are framed in its output.
    #[cfg(all(feature = "subscriptions", target_has_atomic = "ptr"))]
    pub fn bypass_head(&self, sub: u64) -> Option<Vec<u8>> {
        if !self.wire.shares_items() || self.wire.frames_output() {
            return None;
        }
        let active = self.subs.active.get(&sub)?;
        if let Some(prefix) = active.prefix() {
            return Some(prefix.to_vec());
        }
        let shape = &self.subs.shapes[active.decl];
        Some([&shape.head[..], active.id(), &shape.mid[..]].concat())
    }

    /// Tells subscription `sub` it missed `dropped` items
    /// ([`LagPolicy::DropOldest`](subscriptions::LagPolicy::DropOldest)), when its
    /// declaration's [`notices`](subscriptions::MethodSubscription::notices) are on; sends
    /// nothing otherwise.
    #[cfg(feature = "subscriptions")]
    pub(crate) fn send_lagged(&mut self, sub: u64, dropped: u64) -> Result<(), SendError> {
        let decl = self.subs.active.get(&sub).ok_or(SendError::Closed)?.decl;
        if !self.subs.declarations[decl].notices {
            return Ok(());
        }
        self.send_notice(sub, |d, sub, out| d.write_lagged(sub, dropped, out))
    }

    /// Sends what a [`SubscriptionQueue`](subscriptions::SubscriptionQueue) popped: an item,
    /// a lag notice, or the end of an overflowed subscription, by its declaration's
    /// [`LagPolicy`](subscriptions::LagPolicy): under `Close` it ends
    /// ([`end_subscription`](Connection::end_subscription), with
    /// the lag error); under `Disconnect` the connection
    /// closes ([`CloseReason::SubscriberLagged`]) after what it has written. The errors of
    /// [`send_item`](Connection::send_item).
    #[cfg(feature = "subscriptions")]
    pub fn send_popped<T: AsRef<RawValue>>(
        &mut self,
        sub: u64,
        popped: &subscriptions::Popped<T>,
    ) -> Result<(), SendError> {
        match popped {
            subscriptions::Popped::Item(item) => self.send_item(sub, item.as_ref()),
            subscriptions::Popped::Lagged(n) => self.send_lagged(sub, *n),
            subscriptions::Popped::Overflowed => {
                let decl = self.subs.active.get(&sub).ok_or(SendError::Closed)?.decl;
                if self.subs.declarations[decl].lag == subscriptions::LagPolicy::Disconnect {
                    self.subs.active.remove(&sub);
                    let now = self.endpoint_now();
                    self.close_with(CloseReason::SubscriberLagged, now);
                    return Ok(());
                }
                match self.end_subscription(sub, Some(&subscriptions::lagged_error())) {
                    true => Ok(()),
                    false => Err(SendError::Closed),
                }
            }
        }
    }

    /// The server ends subscription `sub`: with `error`, and a declaration whose
    /// [`notices`](subscriptions::MethodSubscription::notices) are on, a last notification
    /// carrying it (`{"subscription": id, "error": {...}}`) tells the subscriber; otherwise
    /// it just stops (as jsonrpsee's and geth's servers do). False when it was not active.
    #[cfg(feature = "subscriptions")]
    pub fn end_subscription(&mut self, sub: u64, error: Option<&ErrorObject<'_>>) -> bool {
        let Some(decl) = self.subs.active.get(&sub).map(|a| a.decl) else {
            return false;
        };
        if let (Some(error), true) = (error, self.subs.declarations[decl].notices) {
            let _ = self.send_notice(sub, |d, sub, out| d.write_error(sub, error, out));
        }
        self.subs.active.remove(&sub).is_some()
    }

    /// Method subscriptions active on this connection.
    #[cfg(feature = "subscriptions")]
    pub fn subscriptions(&self) -> usize {
        self.subs.active.len()
    }

    #[cfg(feature = "subscriptions")]
    fn send_notice(
        &mut self,
        sub: u64,
        write: impl FnOnce(&subscriptions::MethodSubscription, u64, &mut Vec<u8>),
    ) -> Result<(), SendError> {
        let decl = self.subs.active.get(&sub).ok_or(SendError::Closed)?.decl;
        let declaration = &self.subs.declarations[decl];
        // Written in place: our own writing around a value that is JSON.
        self.wire
            .send_notification_with(declaration.notification, |out| write(declaration, sub, out))
    }

    // ----- LSP -----

    /// The status the process should exit with, once the connection is over: under
    /// [`Profile::Lsp`], 0 when `shutdown` came and was answered before the end (`exit`, or
    /// the input ended) and 1 otherwise (also when the editor's process is gone, or a
    /// `shutdown` was never answered); `None` while open, and for other profiles.
    pub fn exit_code(&self) -> Option<i32> {
        if let Some(CloseReason::Exit { code }) = self.reason {
            return Some(code);
        }
        let lsp = self.lsp.as_ref()?;
        if !self.is_closed() {
            return None;
        }
        Some(if lsp.shutdown_answered { 0 } else { 1 })
    }

    /// LSP: the editor's process is gone ([`Event::CheckProcess`]): the connection closes
    /// ([`CloseReason::Exit`] with status 1).
    pub fn handle_client_gone(&mut self, now: Instant) {
        self.close_with(CloseReason::Exit { code: 1 }, now);
    }

    /// LSP: the trace level the client asked for (`$/setTrace`, `initialize`'s `trace`).
    pub fn trace(&self) -> Trace {
        self.lsp.as_ref().map_or(Trace::Off, |l| l.trace)
    }

    /// LSP: sends `$/logTrace` with `message` (and `verbose`, at the verbose level) when
    /// the client's trace level is not off; false when nothing was sent.
    pub fn log_trace(&mut self, message: &str, verbose: Option<&str>) -> bool {
        let trace = self.trace();
        if trace == Trace::Off {
            return false;
        }
        let mut params = Vec::new();
        params.extend_from_slice(b"{\"message\":");
        crate::json::write_str(&mut params, message);
        if let (Trace::Verbose, Some(v)) = (trace, verbose) {
            params.extend_from_slice(b",\"verbose\":");
            crate::json::write_str(&mut params, v);
        }
        params.push(b'}');
        let params = core::str::from_utf8(&params)
            .ok()
            .map(RawValue::from_validated);
        self.notify("$/logTrace", params).is_ok()
    }

    /// LSP: the client handles `window/workDoneProgress/create` (its `initialize` said
    /// so): progress the server starts on its own needs that request first.
    pub fn client_creates_progress(&self) -> bool {
        self.lsp.as_ref().is_some_and(|l| l.work_done_progress)
    }

    // ----- close -----

    /// Shuts down gracefully: no more input or calls; requests running may answer for up to
    /// `grace`; then the connection closes ([`CloseReason::Shutdown`]).
    pub fn shutdown(&mut self, grace: Duration, now: Instant) {
        if matches!(self.phase, Phase::Open) || self.input_ended && !self.is_closed() {
            let until = now.saturating_add(grace);
            let until = match self.phase {
                Phase::Draining { until: old, .. } => old.min(until),
                _ => until,
            };
            self.phase = Phase::Draining {
                until,
                reason: CloseReason::Shutdown,
            };
        }
    }

    /// Closes at once: requests running are void, our calls end with
    /// [`EndReason::Closed`].
    pub fn close(&mut self, now: Instant) {
        self.close_with(CloseReason::Local, now);
    }
}

/// Decides what to do with the wire's next event while it is borrowed.
/// What the machine itself does with a request (`request`) or notification, by its method
/// name alone: the one place these names are told apart.
#[derive(Debug, PartialEq, Eq)]
enum ByName {
    /// A stream method (`rpc.stream.next`/`cancel`): a request the stream table answers.
    #[cfg(feature = "streams")]
    Stream,
    /// A stream's cancel notification.
    #[cfg(feature = "streams")]
    StreamCancel,
    /// A heartbeat ping or pong, when a heartbeat is configured.
    Beat(&'static str),
    /// Nothing: the driver's (or the hook's).
    Nothing,
}

fn by_name(request: bool, method: &str, heartbeat: bool) -> ByName {
    match method {
        #[cfg(feature = "streams")]
        m if request && m.starts_with(stream::METHOD_PREFIX) => ByName::Stream,
        #[cfg(feature = "streams")]
        stream::CANCEL_METHOD if !request => ByName::StreamCancel,
        keepalive::PING if heartbeat && !request => ByName::Beat(keepalive::PING),
        keepalive::PONG if heartbeat && !request => ByName::Beat(keepalive::PONG),
        _ => ByName::Nothing,
    }
}

fn decide(
    (record, frame): (&Record, &str),
    hook: Option<&mut Box<dyn ConnectionHook>>,
    buf: &mut Vec<u8>,
    heartbeat: bool,
    lsp: Option<&lsp::Lsp>,
    #[cfg(feature = "subscriptions")] subs: &subscriptions::Table,
) -> Take {
    match *record {
        Record::Entry {
            entry,
            role: Role::Request(id),
            ..
        } => {
            let request = entry.request(frame);
            #[cfg(feature = "subscriptions")]
            if let Some(decl) = subs.unsubscribe_method(&request.method) {
                return Take::Unsubscribe(id, subs.named(decl, request.params.as_deref()));
            }
            if let Some(lsp) = lsp.filter(|l| l.takes(true, &request.method)) {
                match lsp.request(&request.method) {
                    lsp::Gate::Refuse(error) => return Take::LspRefuse(id, error),
                    lsp::Gate::Initialize => {
                        let params = request.params.as_deref().map(ToOwned::to_owned);
                        return Take::LspInitialize(id, params);
                    }
                    lsp::Gate::Shutdown => return Take::LspShutdown(id),
                    _ => {}
                }
            }
            #[cfg(feature = "streams")]
            if by_name(true, &request.method, heartbeat) == ByName::Stream {
                return Take::Stream(id, request.into_owned());
            }
            if let Some(hook) = hook {
                let params = request.params.as_deref();
                match hook::ask(&mut **hook, &request.method, params, buf) {
                    Some(hook::Taken::Now(answer)) => return Take::Hooked(id, answer),
                    Some(hook::Taken::Later(number)) => return Take::HookLater(id, number),
                    None => {}
                }
            }
            Take::Pass
        }
        Record::Entry {
            entry,
            role: Role::Notification,
            ..
        } => {
            let n = entry.notification(frame);
            if let Some(lsp) = lsp.filter(|l| l.takes(false, &n.method)) {
                return match lsp.notification(&n.method, n.params.as_deref()) {
                    lsp::Gate::Pass => Take::Pass,
                    gate => Take::LspNotification(gate),
                };
            }
            match by_name(false, &n.method, heartbeat) {
                #[cfg(feature = "streams")]
                ByName::StreamCancel => {
                    Take::StreamCancel(stream::stream_param(n.params.as_deref()))
                }
                ByName::Beat(method) => Take::Beat(method),
                #[cfg(feature = "streams")]
                ByName::Stream => Take::Pass,
                ByName::Nothing => Take::Pass,
            }
        }
        Record::Entry {
            role: Role::Response(id),
            ..
        } => Take::Response(id),
        Record::PeerCancelled(id) => Take::PeerCancelled(id),
        Record::Ended(id, reason) => Take::Ended(id, reason),
        Record::Closed => Take::Closed,
        _ => Take::Pass,
    }
}

/// What [`Connection::poll_client_event`] finds next, told by the method name alone.
enum ClientNext {
    /// No event is queued.
    Empty,
    /// A request, at this place in the wire's queue: answered `-32601` (or handed out
    /// by [`Connection::poll_answering_event`]).
    Unserved(usize),
    /// A notification the heartbeat does not take, at this place in the queue.
    Pass(usize),
    /// The response to our request.
    Response(RequestId),
    /// It takes more than the name to tell.
    Look,
}

/// What [`Connection::poll_client_event`] does with the wire's next event
/// ([`decide_client`]).
enum ClientTake {
    /// Nothing queued: the end of input settled, or nothing.
    Settle,
    Pass,
    Unserved(IncomingId),
    Beat(&'static str),
    PeerCancelled(IncomingId),
    Response(RequestId),
    Ended(RequestId, EndReason),
    Closed,
}

/// [`decide`] for a connection that serves nothing: its requests are answered `-32601`
/// (or handed out, by [`Connection::poll_answering_event`]), and only the heartbeat looks
/// at notifications.
fn decide_client((record, frame): (&Record, &str), heartbeat: bool) -> ClientTake {
    match *record {
        Record::Entry {
            role: Role::Request(id),
            ..
        } => ClientTake::Unserved(id),
        Record::Entry {
            entry,
            role: Role::Notification,
            ..
        } => match by_name(false, &entry.notification(frame).method, heartbeat) {
            ByName::Beat(method) => ClientTake::Beat(method),
            _ => ClientTake::Pass,
        },
        Record::Entry {
            role: Role::Response(id),
            ..
        } => ClientTake::Response(id),
        Record::PeerCancelled(id) => ClientTake::PeerCancelled(id),
        Record::Ended(id, reason) => ClientTake::Ended(id, reason),
        Record::Closed => ClientTake::Closed,
        _ => ClientTake::Pass,
    }
}

/// The response to a request of ours that no call waits for, as the peer sent it.
fn orphan<'a>(id: RequestId, result: Result<Cow<'a, RawValue>, ErrorObject<'a>>) -> Response<'a> {
    Response {
        id: Id::number(i64::try_from(id.get()).unwrap_or(i64::MAX)),
        result,
        version: crate::message::Version::V2,
    }
}

/// True when a request is the unsubscribe method of a subscription accepted here: the
/// connection answers it.
#[cfg(feature = "subscriptions")]
#[inline]
fn subs_take(subs: &subscriptions::Table, request: bool, method: &str) -> bool {
    request && !subs.declarations.is_empty() && subs.unsubscribe_method(method).is_some()
}

#[cfg(not(feature = "subscriptions"))]
#[inline]
fn subs_take(_: &(), _: bool, _: &str) -> bool {
    false
}

/// Calls `f` with the id of each request (a member `method` and an integer `id`) in `frame`:
/// one message or a batch of them, as the wire writes them. What does not scan is
/// passed over.
fn request_ids(frame: &[u8], mut f: impl FnMut(u64)) {
    use crate::json::Scanner;
    let max = crate::Limits::MAX_DEPTH_CAP;
    let text = core::str::from_utf8(frame).unwrap_or_default();
    let mut s = Scanner::new(text.as_bytes());
    // One object: its id, when it is a request.
    let mut object = |s: &mut Scanner<'_>| -> Option<()> {
        s.expect(b'{').ok()?;
        let (mut id, mut method) = (None, false);
        if s.peek_ws() == Some(b'}') {
            s.pos += 1;
            return Some(());
        }
        loop {
            let key = s.key().ok()?;
            let value = s.value(1, max).ok()?;
            match key.span.of(text) {
                "id" => id = value.of(text).parse::<u64>().ok(),
                "method" => method = true,
                _ => {}
            }
            match s.peek_ws()? {
                b',' => s.pos += 1,
                b'}' => {
                    s.pos += 1;
                    break;
                }
                _ => return None,
            }
        }
        if let (Some(id), true) = (id, method) {
            f(id);
        }
        Some(())
    };
    match s.peek_ws() {
        Some(b'{') => {
            object(&mut s);
        }
        Some(b'[') => {
            s.pos += 1;
            while s.peek_ws() == Some(b'{') && object(&mut s).is_some() {
                if s.peek_ws() != Some(b',') {
                    break;
                }
                s.pos += 1;
            }
        }
        _ => {}
    }
}

fn min(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A batch of our calls and notifications; from [`Connection::batch`]. Dropped unsent, it
/// sends nothing and its calls are forgotten.
pub struct CallBatch<'c> {
    inner: BatchBuilder<'c>,
    calls: &'c mut Calls,
    token: u64,
    ids: Vec<RequestId>,
    open: bool,
}

impl fmt::Debug for CallBatch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallBatch")
            .field("token", &self.token)
            .field("calls", &self.ids.len())
            .finish()
    }
}

impl CallBatch<'_> {
    /// Adds a call; its answer comes with the batch's token and this call's index.
    pub fn call(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        options: RequestOptions,
    ) -> Result<(), SendError> {
        let id = self.inner.request(method, params, options)?;
        self.ids.push(id);
        Ok(())
    }

    /// Adds a notification.
    pub fn notify(&mut self, method: &str, params: Option<&RawValue>) -> Result<(), SendError> {
        self.inner.notify(method, params)
    }

    /// Sends the batch as one frame; returns how many calls it holds (when 0, no event
    /// will come for the token).
    pub fn send(self) -> Result<usize, SendError> {
        if !self.open {
            return Err(SendError::Closed);
        }
        self.inner.send()?;
        let n = self.ids.len();
        for (index, id) in self.ids.into_iter().enumerate() {
            self.calls.insert(self.token, id, index, true);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
