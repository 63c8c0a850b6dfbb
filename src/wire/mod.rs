//! The [`Wire`]: the wire protocol a [`Connection`](crate::connection::Connection) owns.

pub(crate) mod guard;
mod output;
pub(crate) mod profile;
mod progress;
mod tables;
mod typed;

pub use crate::error::{Backpressure, EndReason, NotAByteStream, SendError, UnknownRequest};
pub use profile::Profile;
#[cfg(feature = "progress")]
pub use progress::Progress;

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use crate::codec::{self, Decoder, FrameError};
use crate::error::{code, ErrorObject, ProtocolError};
use crate::id::Id;
use crate::message::{
    frame_str, write_error_response, write_result_response, Entries, Incoming, RawEntry, Rejection,
    Scanned, Shape, Version,
};
use crate::raw::RawValue;
use crate::time::Instant;
use crate::Classifier;

pub(crate) use tables::SortedDeque;
use tables::{EarlyCancels, Outgoing};

pub use guard::{write_refusal, Expiry, RateLimit};

/// The id of a request we sent: the number written as its `id` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub(crate) u64);

impl RequestId {
    /// The number on the wire.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A handle to a request the peer sent, to answer it with [`Connection::respond`](crate::connection::Connection::respond).
///
/// Handles are never reused within one connection, so a stale handle can never answer a
/// newer request that happens to carry the same wire id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IncomingId(u64);

/// Tags by key (a request's handle or a batch's key), in a vector sorted by key: keys are
/// handed out in increasing order, so an insert is a push, and the few in flight make a
/// removal's shift cheap (no B-tree's code in a firmware).
#[derive(Debug, Default)]
struct Tags(Vec<(u64, u64)>);

impl Tags {
    fn insert(&mut self, key: u64, tag: u64) {
        match self.0.binary_search_by_key(&key, |&(k, _)| k) {
            Ok(i) => self.0[i].1 = tag,
            Err(i) => self.0.insert(i, (key, tag)),
        }
    }

    fn get(&self, key: u64) -> Option<u64> {
        let i = self.0.binary_search_by_key(&key, |&(k, _)| k).ok()?;
        Some(self.0[i].1)
    }

    fn remove(&mut self, key: u64) -> Option<u64> {
        let i = self.0.binary_search_by_key(&key, |&(k, _)| k).ok()?;
        let (_, tag) = self.0.remove(i);
        if self.0.is_empty() && self.0.capacity() > 64 {
            // A burst is over: give its memory back.
            self.0 = Vec::new();
        }
        Some(tag)
    }

    fn clear(&mut self) {
        self.0 = Vec::new();
    }
}

pub(crate) use crate::config::{Config, NullIdPolicy};

/// When a request should time out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Timeout {
    /// After [`Config::default_timeout`].
    #[default]
    Default,
    /// Never.
    Never,
    /// After this long.
    After(Duration),
}

/// Options for one outgoing request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RequestOptions {
    /// When the request times out.
    pub timeout: Timeout,
    /// A progress token and a hard cap: each progress notification on the token pushes the
    /// deadline to the base timeout from then, never past the cap from when it was sent
    /// (rmcp's lesson: progress keeps a slow request alive, a cap stops a runaway one).
    /// Without a base timeout the request never times out and progress changes nothing.
    #[cfg(feature = "progress")]
    pub progress: Option<Progress>,
}

impl RequestOptions {
    /// Options with the given timeout.
    pub fn timeout(timeout: Timeout) -> Self {
        RequestOptions {
            timeout,
            #[cfg(feature = "progress")]
            progress: None,
        }
    }

    /// These options, with the deadline extended by progress on `token` (an integer or a
    /// string) up to `cap` after sending.
    #[cfg(feature = "progress")]
    pub fn with_progress(mut self, token: impl Into<Id<'static>>, cap: Duration) -> Self {
        self.progress = Some(Progress {
            token: token.into(),
            cap,
        });
        self
    }
}

/// What an event record in the queue is about, for entries that borrow from the arena.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Role {
    Request(IncomingId),
    Notification,
    Response(RequestId),
    Unknown,
    NullIdError,
    Protocol,
}

impl Role {
    /// A request or notification for the application.
    fn is_call(&self) -> bool {
        matches!(self, Role::Request(_) | Role::Notification)
    }

    /// The response to one of our requests.
    fn is_response(&self) -> bool {
        matches!(self, Role::Response(_))
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Record {
    Entry {
        start: usize,
        end: usize,
        entry: RawEntry,
        role: Role,
    },
    Ended(RequestId, EndReason),
    PeerCancelled(IncomingId),
    Frame(FrameError),
    Rejected(Rejection),
    Expired(Expiry),
    Closed,
}

/// True for the event of a request or notification.
fn is_call(record: &Record) -> bool {
    matches!(record, Record::Entry { role, .. } if role.is_call())
}

/// What to do about a request the peer sent, decided by [`decide_request`].
enum Verdict {
    /// Register it at this place in the in-flight table.
    Register(tables::Place),
    /// Answer it at once with this error (rate limit, busy, an id already in flight, a
    /// cancel that came first).
    Refuse(ErrorObject<'static>),
    /// Drop it unanswered (cancelled before it came, where the profile does not answer that).
    Drop,
}

/// Decides about a request the peer sent: refuse it (rate limit, busy, an id already in
/// flight), drop it (cancelled before it came, where the profile does not answer that), or
/// register it. Takes the wire's parts it needs, so that the caller can keep the id
/// borrowed from the arena; the caller makes the owned id only where it is kept (the
/// in-flight table's entry), not in a value moved on from here.
fn decide_request(
    guard: &mut guard::Guard,
    config: &Config,
    incoming: &tables::Incoming,
    early: &mut EarlyCancels,
    now: Instant,
    id: &Id<'_>,
) -> Verdict {
    let error = |message: &'static str, code: i64| ErrorObject::fixed(code, message);
    if let guard::Admission::Refuse(code) = guard.admit_call(config.rate_limit.as_ref(), now, true)
    {
        // The default code is sansrpc's own; one the application chose stays as chosen.
        let code = match code {
            code::SERVER_BUSY => config.profile.own_code(code),
            code => code,
        };
        return Verdict::Refuse(error("Server busy: rate limit exceeded", code));
    }
    if !config.hold_when_busy && incoming.len() >= config.max_inflight_incoming {
        let code = config.profile.own_code(code::SERVER_BUSY);
        return Verdict::Refuse(error("Server busy", code));
    }
    match incoming.place(id) {
        Err(_in_flight) => Verdict::Refuse(error(
            "Invalid Request: id already in use by a request in flight",
            code::INVALID_REQUEST,
        )),
        Ok(_) if early.take(id, now) => {
            if !config.profile.answers_cancelled() {
                return Verdict::Drop;
            }
            Verdict::Refuse(error("Request cancelled", config.cancelled_code))
        }
        Ok(place) => Verdict::Register(place),
    }
}

/// A request (`request` is its handle) or notification taken by [`Wire::poll_call`]:
/// build it with [`RawEntry::request`] or [`RawEntry::notification`] from `frame`.
pub(crate) struct PolledCall<'a> {
    pub request: Option<IncomingId>,
    pub entry: RawEntry,
    pub frame: &'a str,
}

/// The response to our request `id`, taken by [`Wire::poll_response`]: build its
/// outcome with [`RawEntry::outcome`] from `frame`.
pub(crate) struct PolledResponse<'a> {
    pub id: RequestId,
    pub entry: RawEntry,
    pub frame: &'a str,
}

/// The next event as [`Wire::peek_next`] tells it.
pub(crate) enum Peek<'a> {
    /// A request (`request`) or notification whose method has no escapes, at `at` in the
    /// queue ([`Wire::poll_call`] takes it there).
    Call {
        request: bool,
        method: &'a str,
        at: usize,
    },
    /// The response to our request `RequestId`.
    Response(RequestId),
    /// Anything else.
    Other,
}

/// Registers a request the peer sent at the place [`decide_request`] found, and queues its
/// event: the entry at `start..end` of the arena. Takes the wire's parts it changes, so
/// that the caller can keep the id borrowed from the arena.
#[inline]
fn register(
    (incoming, events): (&mut tables::Incoming, &mut VecDeque<Record>),
    id: &Id<'_>,
    version: Version,
    batch: Option<u64>,
    place: tables::Place,
    (start, end, entry): (usize, usize, &RawEntry),
) -> IncomingId {
    let handle = incoming.insert(id, version, batch, place);
    if let Some(b) = batch.and_then(|b| incoming.batch(b)) {
        b.remaining += 1;
    }
    events.push_back(Record::Entry {
        start,
        end,
        entry: *entry,
        role: Role::Request(handle),
    });
    handle
}

/// What to do about one incoming entry, decided while it is borrowed, done after.
enum Action {
    Nothing,
    Record(Role),
    Answer(Id<'static>, Version, ErrorObject<'static>),
    PeerCancel(Id<'static>),
    #[cfg(feature = "progress")]
    Progress(Id<'static>),
    Matched(u64),
    NullIdError,
    Malformed(u64, ProtocolError),
}

/// A notification whose method needs no escape, written around its method and params (a
/// hook's, a fan-out's): before the method, between it and the params, after them.
pub(crate) const NOTIFICATION_OPEN: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"";
pub(crate) const NOTIFICATION_PARAMS: &[u8] = b"\",\"params\":";
pub(crate) const NOTIFICATION_CLOSE: &[u8] = b"}";

/// The most bytes of capacity a renewed machine keeps of each buffer
/// ([`Connection::renew`](crate::connection::Connection::renew)): one a large exchange grew
/// past it is let go.
pub(crate) const RENEW_KEEP: usize = 4 * 1024;

/// `old`, emptied, in the place of `fresh` (new: it holds nothing and no memory), when its
/// capacity is within [`RENEW_KEEP`] bytes.
fn keep_vec<T>(fresh: &mut Vec<T>, old: &mut Vec<T>) {
    if old.capacity().saturating_mul(core::mem::size_of::<T>()) <= RENEW_KEEP {
        old.clear();
        core::mem::swap(fresh, old);
    }
}

/// [`keep_vec`] for a queue.
fn keep_deque<T>(fresh: &mut VecDeque<T>, old: &mut VecDeque<T>) {
    if old.capacity().saturating_mul(core::mem::size_of::<T>()) <= RENEW_KEEP {
        old.clear();
        core::mem::swap(fresh, old);
    }
}

/// The wire protocol of one [`Connection`](crate::connection::Connection), which owns it:
/// the framing decoder and the classifier, the queue of records (entries of the frames in
/// its arena, and what happened: an answer ended, a cancel, a refused frame, an expiry) that
/// the connection builds its [`Event`](crate::connection::Event)s from, our requests' ids
/// and deadlines, the peer's requests in flight and its batches, the rate limit and
/// protection timeouts, and the framed output. It has no API of its own: the connection
/// reads its queue ([`peek_next`](Wire::peek_next), [`take_record`](Wire::take_record)) and
/// calls its parts. Like the connection it never reads a clock, never blocks and never does
/// I/O: time is an argument.
#[derive(Debug)]
// Laid out in this order (not the compiler's): what every driver turn reads first, in as
// few cache lines as they fit (a subscriber's connection woken for each notification, a
// keep-alive connection for each request: with many connections each line read is a miss),
// then what a request reads, then the rest. Aligned to a cache line so the first fields
// share as few as they can.
#[repr(C, align(64))]
pub(crate) struct Wire {
    closed: bool,
    /// The driver takes its output as parts: shared items are held, not copied
    /// ([`send_shared`](Wire::send_shared)).
    share_items: bool,
    /// A request of ours with a deadline was sent, or a cancel remembered: the tables may
    /// hold deadlines ([`poll_timeout`](Wire::poll_timeout) looks at them). Never cleared; a
    /// server's connection, nearly always without either, is not asked for them on every
    /// driver turn (their fields are other cache lines, cold with many connections).
    timed: bool,
    now: Instant,
    /// The tag frames written now get.
    output_tag: u64,
    /// The tag of the message being processed ([`Wire::handle_message_tagged`]): its
    /// requests keep it, and every answer to them carries it.
    input_tag: u64,
    /// Framed output, bounded by what is pending however the driver takes it.
    out: output::Output,
    events: VecDeque<Record>,
    /// Rate limit and protection timeouts.
    guard: guard::Guard,
    /// Frames whose events are queued; events borrow from it. Cleared when the queue empties.
    arena: Vec<u8>,
    incoming: tables::Incoming,
    outgoing: Outgoing,
    decoder: Option<Decoder>,
    /// What decodes the frames the decoder holds; set once [`handle_input`](Wire::handle_input)
    /// has fed it.
    fed: Fed,
    classifier: Classifier,
    next_id: u64,
    /// Requests registered whose events are still queued (not handed out).
    queued_requests: usize,
    /// Requests and notifications queued (not handed out).
    queued_calls: usize,
    /// Notifications handed out under [`Config::ordered_notifications`] whose handlers
    /// have not finished ([`Wire::notification_done`]).
    notifying: usize,
    /// The batch whose entries are being processed (0: none): an answer given meanwhile
    /// (a request the batch itself cancels) does not send its array, which goes out once
    /// every entry is processed.
    processing: u64,
    early: EarlyCancels,
    #[cfg(feature = "progress")]
    watched: progress::Watched,
    /// Tags of the requests in flight that have one (only tagged transports use them),
    /// by handle.
    tags: Tags,
    /// Tags of incoming batches still open that came tagged, by batch key.
    batch_tags: Tags,
    /// Scratch space for one message body before it is framed.
    body: Vec<u8>,
    /// Scratch space for serializing typed params.
    params: Vec<u8>,
    /// Sizes of incoming batches not yet taken by [`Wire::poll_batch_size`]; bounded.
    batch_sizes: VecDeque<usize>,
    config: Config,
}

/// How many incoming batch sizes [`Wire::poll_batch_size`] keeps when nobody drains them.
const MAX_BATCH_SIZES: usize = 64;

/// How the wire reaches the frames its decoder holds: through this pointer, set once
/// [`Wire::handle_input`] has fed the decoder, so that a program that only hands in
/// whole messages ([`Wire::handle_message`]) carries none of the byte-stream framings'
/// decoding (6 KB of a browser page's code).
#[derive(Clone, Copy)]
struct Fed(Option<fn(&mut Wire, bool)>);

impl fmt::Debug for Fed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Fed" } else { "Unfed" })
    }
}

impl Wire {
    /// A new, open wire.
    pub(crate) fn new(mut config: Config) -> Self {
        // The LSP ecosystem reads `"params": null` as absent; the profile says so, not the
        // limits a caller may have replaced whole.
        config.limits.null_params_as_absent |= config.profile == Profile::Lsp;
        Wire {
            decoder: config.framing.map(|f| Decoder::new(f, &config.limits)),
            fed: Fed(None),
            classifier: Classifier::new(config.limits),
            config,
            now: Instant::ZERO,
            closed: false,
            next_id: 1,
            outgoing: Outgoing::default(),
            incoming: tables::Incoming::default(),
            early: EarlyCancels::default(),
            #[cfg(feature = "progress")]
            watched: progress::Watched::default(),
            arena: Vec::new(),
            events: VecDeque::new(),
            out: output::Output::default(),
            share_items: false,
            timed: false,
            input_tag: 0,
            output_tag: 0,
            tags: Tags::default(),
            batch_tags: Tags::default(),
            body: Vec::new(),
            params: Vec::new(),
            guard: guard::Guard::default(),
            batch_sizes: VecDeque::new(),
            queued_requests: 0,
            queued_calls: 0,
            notifying: 0,
            processing: 0,
        }
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// True once [`close`](Wire::close) or [`finish_input`](Wire::finish_input) ran.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// Our requests awaiting a response.
    pub(crate) fn pending_requests(&self) -> usize {
        self.outgoing.len()
    }

    /// The peer's requests awaiting our answer.
    pub(crate) fn requests_in_flight(&self) -> usize {
        self.incoming.len()
    }

    /// Nothing of any exchange is left: no event, output, input held or partly decoded,
    /// request either way, batch, early cancellation, tag or deadline, and no rate limit
    /// (whose bucket is the connection's own). See
    /// [`Connection::is_blank`](crate::connection::Connection::is_blank).
    #[inline]
    pub(crate) fn is_blank(&self) -> bool {
        #[cfg(feature = "progress")]
        let watched = self.watched.len() == 0;
        #[cfg(not(feature = "progress"))]
        let watched = true;
        !self.closed
            && self.is_idle()
            && self.decoder.as_ref().map_or(true, |d| d.buffered() == 0)
            && self.queued_requests == 0
            && self.queued_calls == 0
            && self.notifying == 0
            && watched
            && self.tags.0.is_empty()
            && self.batch_tags.0.is_empty()
            && self.config.rate_limit.is_none()
            && self.guard_at_rest()
    }

    /// Takes `old`'s buffers (output, events, input), emptied, where each is within
    /// [`RENEW_KEEP`] bytes; this wire is new. Nothing else of `old` is taken.
    pub(crate) fn keep_buffers(&mut self, old: &mut Wire) {
        self.out.keep_buffers(&mut old.out);
        keep_deque(&mut self.events, &mut old.events);
        keep_vec(&mut self.arena, &mut old.arena);
        keep_vec(&mut self.body, &mut old.body);
        keep_vec(&mut self.params, &mut old.params);
        keep_deque(&mut self.batch_sizes, &mut old.batch_sizes);
    }

    /// Bytes of output waiting for [`poll_transmit`](Wire::poll_transmit).
    pub(crate) fn buffered_output(&self) -> usize {
        self.out.len()
    }

    /// The latest time the wire was told (by any call taking `now`).
    pub(crate) fn now(&self) -> Instant {
        self.now
    }

    /// True when every table is empty: nothing pending, in flight, remembered or queued.
    pub(crate) fn is_idle(&self) -> bool {
        self.outgoing.is_empty()
            && self.incoming.is_empty()
            && self.early.is_empty()
            && self.events.is_empty()
            && self.out.is_empty()
    }

    // ----- input -----

    /// Takes bytes from a byte-stream transport, in any chunking, and returns how many it
    /// took.
    ///
    /// It takes them all unless events or output are backed up (more than a frame's worth
    /// of unpolled events, or more than [`Config::max_buffered_output`] of output): then drain
    /// the connection's events and [`poll_transmit`](Wire::poll_transmit) and
    /// offer the rest again. After close, input is taken and ignored.
    ///
    /// Fails with [`NotAByteStream`], taking nothing, if the wire was configured for a
    /// message transport (`framing: None`): use [`handle_message`](Wire::handle_message).
    pub(crate) fn handle_input(
        &mut self,
        mut bytes: &[u8],
        now: Instant,
    ) -> Result<usize, NotAByteStream> {
        if self.decoder.is_none() {
            return Err(NotAByteStream);
        }
        self.fed = Fed(Some(Wire::decoded));
        self.now = now;
        if self.closed {
            return Ok(bytes.len());
        }
        if self.events.is_empty() {
            self.arena.clear();
        }
        let offered = bytes.len();
        let mut idle_feeds = 0;
        loop {
            self.process_decoded();
            if bytes.is_empty() || !self.has_room() || idle_feeds == 2 {
                break;
            }
            if self.has_event_room() {
                // A whole frame at the front of the input goes straight to the arena,
                // without a stop in the decoder's buffer.
                let whole = self.decoder.as_mut().and_then(|d| d.frame_in(bytes));
                if let Some((used, frame)) = whole {
                    self.guard.frame_done();
                    self.reclaim_arena();
                    let start = self.arena.len();
                    self.arena.extend_from_slice(frame);
                    let end = self.arena.len();
                    self.process_frame(start, end);
                    bytes = &bytes[used..];
                    idle_feeds = 0;
                    continue;
                }
            }
            let used = self.decoder.as_mut().map_or(0, |d| d.feed(bytes));
            bytes = &bytes[used..];
            // The decoder takes nothing only while it holds complete frames; draining them
            // (at the top of the loop) makes room, so a second idle feed means no room.
            idle_feeds = if used == 0 { idle_feeds + 1 } else { 0 };
        }
        self.guard_input(offered > bytes.len(), now);
        Ok(offered - bytes.len())
    }

    /// Takes one whole message from a message transport (a WebSocket text frame, an HTTP
    /// body).
    ///
    /// Refused with [`Backpressure`] while events or output are backed up; drain them and
    /// hand it in again. An oversize message is answered with `-32004` and reported as
    /// a [`Record::Frame`]. After close, messages are ignored.
    pub(crate) fn handle_message(
        &mut self,
        message: &[u8],
        now: Instant,
    ) -> Result<(), Backpressure> {
        self.handle_message_tagged(message, 0, now)
    }

    /// Like [`handle_message`](Wire::handle_message), marking the message with `tag`
    /// (not 0): the requests in it keep the tag, and every frame written for them (their
    /// answers, what is sent on their behalf, an error answering the message itself)
    /// carries it ([`poll_transmit_tagged`](Wire::poll_transmit_tagged)).
    pub(crate) fn handle_message_tagged(
        &mut self,
        message: &[u8],
        tag: u64,
        now: Instant,
    ) -> Result<(), Backpressure> {
        self.tagged(tag, |wire| wire.take_scanned(message, None, now))
    }

    /// Runs `take` with `tag` as the input's and the output's tag, then none.
    fn tagged<R>(&mut self, tag: u64, take: impl FnOnce(&mut Self) -> R) -> R {
        self.input_tag = tag;
        self.output_tag = tag;
        let result = take(self);
        self.input_tag = 0;
        self.output_tag = 0;
        result
    }

    /// [`handle_message_tagged`](Wire::handle_message_tagged) for a message a
    /// classifier has scanned already ([`Scanned`]): what it found is read, not found
    /// again, when it was found under this connection's limits. On [`Backpressure`] hand it
    /// in again later (it is scanned then).
    pub(crate) fn handle_scanned_tagged(
        &mut self,
        message: &mut Scanned,
        tag: u64,
        now: Instant,
    ) -> Result<(), Backpressure> {
        // Refused for now (backpressure), it is scanned when handed in again.
        let found = message.take_found(&self.config.limits);
        self.tagged(tag, |wire| wire.take_scanned(message.bytes(), found, now))
    }

    /// Takes `message`, classified as `found` says when something is found, else scanned
    /// here.
    fn take_scanned(
        &mut self,
        message: &[u8],
        found: Option<Entries>,
        now: Instant,
    ) -> Result<(), Backpressure> {
        self.now = now;
        if self.closed {
            return Ok(());
        }
        if self.events.is_empty() {
            self.arena.clear();
        }
        if !self.has_room() {
            return Err(Backpressure);
        }
        match codec::check_message(message, &self.config.limits) {
            Ok(()) => {
                let start = self.arena.len();
                self.arena.extend_from_slice(message);
                let end = self.arena.len();
                match found {
                    // The bytes copied are the ones scanned (`Scanned` keeps them as they
                    // were), so the entries' places hold in the arena at `start`.
                    Some(Entries::One(entry)) => self.process_entry(start, end, &entry, None),
                    Some(Entries::Batch(entries)) => {
                        self.process_entries(start, end, Shape::Batch, entries)
                    }
                    None => self.process_frame(start, end),
                }
            }
            Err(e) => self.frame_error(e),
        }
        self.guard_input(true, now);
        Ok(())
    }

    /// Signals the end of input but keeps the wire open: frames already received are
    /// still processed and a partial one is reported, while answers to requests already
    /// received can still be sent. Close it later with [`close`](Wire::close) (the
    /// connection machine does, once its handlers have answered). Further input is ignored.
    pub(crate) fn finish_input(&mut self, now: Instant) {
        self.now = now;
        if self.closed {
            return;
        }
        self.process_decoded();
        // A decoder never fed has nothing to finish.
        if let Fed(Some(decoded)) = self.fed {
            decoded(self, true);
        }
        // Requests the frames brought are in flight now (noted as after any input).
        self.note_busy();
    }

    /// Ends requests whose deadline is at or before `now` (each with
    /// [`EndReason::TimedOut`], and a cancellation sent when configured) and forgets early
    /// cancels that expired. Before any deadline it changes nothing.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        while let Some(id) = self.outgoing.pop_expired(now) {
            self.events
                .push_back(Record::Ended(RequestId(id), EndReason::TimedOut));
            if self.config.cancellation && self.config.cancel_on_timeout {
                self.write_cancel(id, "Request timed out");
            }
        }
        self.early.expire(now);
        self.guard_timeout(now);
    }

    /// Room to take more input: for its events, and for the answers it may need (the
    /// output within its bound, and not more than 64 KiB of it while writes are blocked).
    fn has_room(&self) -> bool {
        self.has_event_room()
            && self.buffered_output() <= self.config.max_buffered_output
            && !self.write_blocked()
    }

    /// Room in the arena for one more frame. With no event queued the arena holds nothing
    /// live, whatever its length: frames that leave no event (a cancellation of a request
    /// not seen yet, a request answered at once) must not fill it, or the wire would
    /// take no more input with nothing to hand out. [`reclaim_arena`](Self::reclaim_arena)
    /// empties it before the next frame goes in.
    fn has_event_room(&self) -> bool {
        if self.events.is_empty() {
            return true;
        }
        let bound = if self.is_holding() {
            self.config.max_held_bytes
        } else {
            self.config.limits.max_frame_bytes
        };
        self.arena.len() < bound.max(1)
    }

    /// Empties the arena when no queued event points into it.
    #[inline]
    fn reclaim_arena(&mut self) {
        if self.events.is_empty() {
            self.arena.clear();
        }
    }

    /// True while the peer's requests or notifications are held back: as many requests
    /// are handed out and unanswered as allowed ([`Config::hold_when_busy`]), or a
    /// notification's handler has not finished ([`Config::ordered_notifications`]). The
    /// rest of the input is still read, up to [`Config::max_held_bytes`].
    pub(crate) fn is_holding(&self) -> bool {
        let over =
            self.config.hold_when_busy && self.incoming.len() > self.config.max_inflight_incoming;
        over || (self.queued_calls > 0 && (self.barrier() || self.busy_full()))
    }

    /// True while the wire takes input: open, with room for its events (within
    /// [`Config::max_held_bytes`] while holding) and for its answers (output within
    /// [`Config::max_buffered_output`], and within 64 KiB while writes are blocked). A
    /// driver reads only then; [`handle_input`](Wire::handle_input) takes nothing
    /// otherwise.
    pub(crate) fn wants_input(&self) -> bool {
        !self.closed && self.has_room()
    }

    /// A notification handed out under [`Config::ordered_notifications`] is still being
    /// handled: no request or notification is handed out.
    fn barrier(&self) -> bool {
        self.notifying > 0
    }

    /// Notifications handed out under [`Config::ordered_notifications`] whose handlers have
    /// not finished.
    pub(crate) fn notifications_running(&self) -> usize {
        self.notifying
    }

    /// Requests and notifications received and not handed out yet (held, or not polled).
    pub(crate) fn calls_queued(&self) -> usize {
        self.queued_calls
    }

    /// As many requests are handed out and unanswered as allowed, with holding on.
    fn busy_full(&self) -> bool {
        let handed_out = self.incoming.len().saturating_sub(self.queued_requests);
        self.config.hold_when_busy && handed_out >= self.config.max_inflight_incoming
    }

    /// The handler of a notification handed out has finished: under
    /// [`Config::ordered_notifications`], the requests and notifications behind it may be
    /// handed out. Call it once per notification (drivers do; extra calls do nothing).
    pub(crate) fn notification_done(&mut self) {
        self.notifying = self.notifying.saturating_sub(1);
    }

    /// Processes frames the decoder has complete, while there is room for their events.
    ///
    /// The output bound is not checked here: these bytes were already reported as taken, and
    /// once the events are drained nothing would bring the caller back for them. Output
    /// overshoots the bound by at most the answers to one decoder's worth of frames, since
    /// `handle_input` feeds the decoder only while the output is within it.
    #[inline(always)]
    fn process_decoded(&mut self) {
        // Asked after every input and every drained queue, and nearly always with nothing
        // there once frames come whole: answered here, without the call.
        if self.decoder.as_ref().is_some_and(|d| !d.is_idle()) {
            if let Fed(Some(decoded)) = self.fed {
                decoded(self, false);
            }
        }
    }

    /// What [`Fed`] points to: the frames the decoder holds processed, or (`finish`) the
    /// end of its input told.
    fn decoded(&mut self, finish: bool) {
        if !finish {
            self.process_buffered();
        } else if let Some(e) = self.decoder.as_mut().and_then(Decoder::finish) {
            self.events.push_back(Record::Frame(e));
        }
    }

    /// [`process_decoded`](Wire::process_decoded) when the decoder holds something.
    // Kept out of line so that the question before it is answered without its stack frame.
    #[inline(never)]
    fn process_buffered(&mut self) {
        while self.has_event_room() {
            let Some(decoder) = self.decoder.as_mut() else {
                return;
            };
            let next = decoder.next_frame();
            if next.is_some() {
                // A frame came out whole: a partial one after it has a clock of its own.
                self.guard.frame_done();
            }
            match next {
                None => return,
                Some(Ok(frame)) => {
                    if self.events.is_empty() {
                        self.arena.clear();
                    }
                    let start = self.arena.len();
                    self.arena.extend_from_slice(frame);
                    let end = self.arena.len();
                    self.process_frame(start, end);
                }
                Some(Err(e)) => self.frame_error(e),
            }
        }
    }

    /// One of sansrpc's own errors with its code as the profile has it
    /// ([`Profile::own_code`]).
    pub(crate) fn own_error(&self, mut error: ErrorObject<'static>) -> ErrorObject<'static> {
        error.code = self.config.profile.own_code(error.code);
        error
    }

    fn frame_error(&mut self, e: FrameError) {
        if matches!(e, FrameError::TooLarge { .. }) {
            // The peer sent a message we will not read: tell it, once, with id null.
            self.answer(
                None,
                &Id::NULL,
                Version::V2,
                Err(&self.own_error(Rejection::FrameTooLarge.error(&self.config.limits))),
            );
        }
        self.events.push_back(Record::Frame(e));
    }

    /// Classifies the frame at `arena[start..end]` and acts on each entry.
    fn process_frame(&mut self, start: usize, end: usize) {
        match self.classifier.scan(&self.arena[start..end]) {
            Err(rejection) => {
                let error = self.own_error(rejection.error(&self.config.limits));
                self.answer(None, &Id::NULL, Version::V2, Err(&error));
                self.events.push_back(Record::Rejected(rejection));
            }
            Ok(shape) => {
                // Read in place, each entry where the classifier wrote it (see
                // `Classifier::scan`).
                let entries = self.classifier.take_entries();
                self.process_entries(start, end, shape, entries);
            }
        }
    }

    /// Acts on each of `entries`, which a classifier found in the frame at
    /// `arena[start..end]` (scanned `Ok` as `shape`); the classifier keeps their vector.
    fn process_entries(&mut self, start: usize, end: usize, shape: Shape, entries: Vec<RawEntry>) {
        match shape {
            Shape::Single => self.process_entry(start, end, &entries[0], None),
            Shape::Batch => {
                let batch = self.incoming.open_batch();
                if self.input_tag != 0 {
                    self.batch_tags.insert(batch, self.input_tag);
                }
                if self.batch_sizes.len() < MAX_BATCH_SIZES {
                    self.batch_sizes.push_back(entries.len());
                }
                self.processing = batch;
                for entry in &entries {
                    self.process_entry(start, end, entry, Some(batch));
                }
                self.processing = 0;
                self.settle_batch(batch);
            }
        }
        self.classifier.restore_entries(entries);
    }

    fn process_entry(&mut self, start: usize, end: usize, entry: &RawEntry, batch: Option<u64>) {
        // SAFETY: `start..end` is an entry of a frame the classifier scanned with `Ok`, kept
        // unchanged in the arena since.
        let frame = unsafe { frame_str(&self.arena[start..end]) };
        // A request needs only its id and version: read without building the entry, and
        // the id made owned once, where the in-flight table keeps it. (Made owned earlier and
        // moved on, its bytes, just written, were read back in other widths: a stalled
        // store-to-load forward on every request.)
        if entry.is_request() {
            let (id, version) = entry.request_id(frame);
            let verdict = decide_request(
                &mut self.guard,
                &self.config,
                &self.incoming,
                &mut self.early,
                self.now,
                &id,
            );
            match verdict {
                Verdict::Register(place) => {
                    let queue = (&mut self.incoming, &mut self.events);
                    let handle = register(queue, &id, version, batch, place, (start, end, entry));
                    self.queued_requests += 1;
                    self.queued_calls += 1;
                    if self.input_tag != 0 {
                        self.tags.insert(handle.0, self.input_tag);
                    }
                }
                Verdict::Refuse(error) => {
                    let id = id.into_owned();
                    self.answer(batch, &id, version, Err(&error));
                }
                Verdict::Drop => {}
            }
            return;
        }
        let action = self.decide(start, end, entry);
        match action {
            Action::Nothing => {}
            Action::Record(role) => {
                self.queued_calls += usize::from(role.is_call());
                self.events.push_back(Record::Entry {
                    start,
                    end,
                    entry: *entry,
                    role,
                })
            }
            Action::Answer(id, version, error) => self.answer(batch, &id, version, Err(&error)),
            Action::PeerCancel(id) => match self.incoming.handle_of(&id) {
                Some(handle) => {
                    if let Some(entry) = self.incoming.get_mut(handle) {
                        entry.cancelled = true;
                    }
                    match self.queued_request(handle) {
                        // Never handed out (held, or not polled yet): answered as cancelled
                        // at once, and never seen by the application.
                        Some(at) => {
                            self.events.remove(at);
                            self.queued_requests -= 1;
                            self.queued_calls -= 1;
                            let _ = self.respond_cancelled(handle);
                        }
                        None => self.events.push_back(Record::PeerCancelled(handle)),
                    }
                }
                None => {
                    let expiry = self.now + self.config.early_cancel_ttl;
                    self.timed = true;
                    self.early
                        .remember(id, expiry, self.config.early_cancel_capacity);
                }
            },
            #[cfg(feature = "progress")]
            Action::Progress(token) => {
                if let Some((id, deadline)) = self.watched.extend(&token, self.now) {
                    self.outgoing.extend_deadline(id, deadline);
                }
                self.queued_calls += 1;
                self.events.push_back(Record::Entry {
                    start,
                    end,
                    entry: *entry,
                    role: Role::Notification,
                });
            }
            Action::Matched(id) => self.events.push_back(Record::Entry {
                start,
                end,
                entry: *entry,
                role: Role::Response(RequestId(id)),
            }),
            Action::NullIdError => match (self.config.null_id_policy, self.outgoing.single()) {
                (NullIdPolicy::FailSingle, Some(id)) => {
                    self.outgoing.remove(id);
                    self.events.push_back(Record::Entry {
                        start,
                        end,
                        entry: *entry,
                        role: Role::Response(RequestId(id)),
                    });
                }
                (policy, _) => {
                    self.events.push_back(Record::Entry {
                        start,
                        end,
                        entry: *entry,
                        role: Role::NullIdError,
                    });
                    if policy == NullIdPolicy::FailAll {
                        for id in self.outgoing.drain() {
                            self.events
                                .push_back(Record::Ended(RequestId(id), EndReason::PeerError));
                        }
                    }
                }
            },
            Action::Malformed(id, error) => {
                self.outgoing.remove(id);
                self.events.push_back(Record::Ended(
                    RequestId(id),
                    EndReason::MalformedResponse(error),
                ));
            }
        }
    }

    /// Looks at one entry (borrowed from the arena) and decides what to do with it: any
    /// entry but a request, which `process_entry` takes first.
    fn decide(&mut self, start: usize, end: usize, entry: &RawEntry) -> Action {
        // SAFETY: `start..end` is an entry of a frame the classifier scanned with `Ok`, kept
        // unchanged in the arena since.
        let frame = unsafe { frame_str(&self.arena[start..end]) };
        // A notification that is neither a cancellation nor progress needs only its name.
        if let Some((false, method)) = entry.plain_method(frame) {
            let special = (self.config.cancellation && method == self.config.cancel_method)
                || (cfg!(feature = "progress") && method == self.config.progress_method);
            if !special {
                let rate = self.config.rate_limit.as_ref();
                return match self.guard.admit_call(rate, self.now, false) {
                    guard::Admission::Drop => Action::Nothing,
                    _ => Action::Record(Role::Notification),
                };
            }
        }
        match entry.materialize(frame) {
            // Never: `process_entry` takes every entry that `is_request` before asking here.
            Incoming::Request(_) => Action::Nothing,
            Incoming::Notification(n) => {
                if self.config.cancellation && n.method == self.config.cancel_method {
                    let key = self.config.profile.cancel_id_key();
                    match n
                        .params
                        .as_deref()
                        .and_then(|p| progress::member_id(p, key))
                    {
                        Some(id) => Action::PeerCancel(id.into_owned()),
                        None => Action::Nothing,
                    }
                } else if let guard::Admission::Drop =
                    self.guard
                        .admit_call(self.config.rate_limit.as_ref(), self.now, false)
                {
                    Action::Nothing
                } else if cfg!(feature = "progress") && n.method == self.config.progress_method {
                    let key = self.config.profile.progress_token_key();
                    match n
                        .params
                        .as_deref()
                        .and_then(|p| progress::member_id(p, key))
                    {
                        #[cfg(feature = "progress")]
                        Some(token) => Action::Progress(token.into_owned()),
                        #[cfg(not(feature = "progress"))]
                        Some(_) => Action::Record(Role::Notification),
                        None => Action::Record(Role::Notification),
                    }
                } else {
                    Action::Record(Role::Notification)
                }
            }
            Incoming::Response(resp) => {
                if resp.id.is_null() {
                    return if resp.result.is_err() {
                        Action::NullIdError
                    } else {
                        Action::Record(Role::Unknown)
                    };
                }
                match resp.id.as_u64() {
                    Some(n) if self.outgoing.remove(n) => Action::Matched(n),
                    // A late answer to a request that timed out or was cancelled.
                    Some(n) if n < self.next_id => Action::Nothing,
                    _ => Action::Record(Role::Unknown),
                }
            }
            Incoming::Invalid(inv) => {
                let error = inv.error();
                Action::Answer(inv.id.into_owned(), Version::V2, error)
            }
            Incoming::BadResponse { id, error } => match id.and_then(|id| id.as_u64()) {
                Some(n) if self.outgoing.contains(n) => Action::Malformed(n, error),
                _ => Action::Record(Role::Protocol),
            },
        }
    }

    /// Writes an answer: into its batch's array, or as a frame of its own.
    fn answer(
        &mut self,
        batch: Option<u64>,
        id: &Id<'_>,
        version: Version,
        result: Result<&RawValue, &ErrorObject<'_>>,
    ) {
        let write = |out: &mut Vec<u8>| write_response(out, version, id, result);
        match batch.and_then(|b| self.incoming.batch(b)) {
            Some(b) => write(b.entry()),
            None => {
                let mut body = core::mem::take(&mut self.body);
                body.clear();
                write(&mut body);
                self.push_answer(&body);
                self.body = body;
            }
        }
    }

    /// Sends a batch's array once every request in it is answered (at once when none of
    /// its entries is a request in flight).
    fn settle_batch(&mut self, key: u64) {
        if self.incoming.batch(key).is_some_and(|b| b.remaining == 0) {
            self.send_batch(key);
        }
    }

    /// Sends the array of a batch whose requests are all answered, and forgets the batch.
    fn send_batch(&mut self, key: u64) {
        let tag = self.batch_tags.remove(key);
        if let Some(mut b) = self.incoming.close_batch(key) {
            if b.answers > 0 {
                b.body.push(b']');
                let before = core::mem::replace(&mut self.output_tag, tag.unwrap_or(0));
                self.push_answer(&b.body);
                self.output_tag = before;
            }
            self.incoming.recycle(b.body);
        }
    }

    /// The framing of what is written: the decoder's (with `Framing::Auto`, the one the
    /// peer's first bytes chose), else the config's (`None` on a message transport).
    #[inline]
    fn framing(&self) -> Option<codec::Framing> {
        self.decoder
            .as_ref()
            .map(Decoder::framing)
            .or(self.config.framing)
    }

    fn push_frame(&mut self, body: &[u8]) {
        self.push_frame_as(body, false);
    }

    /// Sends an answer to the peer's request (a response, or a batch's array).
    fn push_answer(&mut self, body: &[u8]) {
        self.push_frame_as(body, true);
    }

    #[inline]
    fn push_frame_as(&mut self, body: &[u8], answer: bool) {
        let framing = self.framing();
        self.out
            .push_as(self.output_tag, answer, |out| match framing {
                Some(f) => codec::encode_frame(f, body, out),
                None => out.extend_from_slice(body),
            });
    }

    /// Writes a cancellation of our request `id` in the profile's shape; `reason` goes into
    /// MCP's `reason` member.
    fn write_cancel(&mut self, id: u64, reason: &str) {
        let profile = self.config.profile;
        let mut body = core::mem::take(&mut self.body);
        body.clear();
        body.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
        crate::json::write_str(&mut body, self.config.cancel_method);
        body.extend_from_slice(b",\"params\":{");
        crate::json::write_str(&mut body, profile.cancel_id_key());
        body.push(b':');
        Id::number(id as i64).write_json(&mut body);
        if profile == Profile::Mcp {
            body.extend_from_slice(b",\"reason\":");
            crate::json::write_str(&mut body, reason);
        }
        body.extend_from_slice(b"}}");
        self.push_frame(&body);
        self.body = body;
    }

    // ----- application calls -----

    fn check_send(&self) -> Result<(), SendError> {
        if self.closed {
            Err(SendError::Closed)
        } else if self.buffered_output() > self.config.max_buffered_output {
            Err(SendError::OutputFull)
        } else {
            Ok(())
        }
    }

    fn register(&mut self, options: RequestOptions, now: Instant) -> Result<u64, SendError> {
        self.check_send()?;
        if self.outgoing.len() >= self.config.max_pending_outgoing {
            return Err(SendError::TooManyPending);
        }
        self.now = now;
        let id = self.next_id;
        self.next_id += 1;
        let base = match options.timeout {
            Timeout::Default => self.config.default_timeout,
            Timeout::Never => None,
            Timeout::After(d) => Some(d),
        };
        #[cfg_attr(not(feature = "progress"), allow(unused_mut))]
        let mut deadline = base.map(|d| now + d);
        #[cfg(feature = "progress")]
        if let (Some(p), Some(base)) = (options.progress, base) {
            let cap = now + p.cap;
            deadline = deadline.map(|d| d.min(cap));
            if self.watched.len() >= self.config.max_pending_outgoing {
                let outgoing = &self.outgoing;
                self.watched.retain(|id| outgoing.contains(id));
            }
            self.watched.insert(p.token, id, base, cap);
        }
        self.timed |= deadline.is_some();
        self.outgoing.insert(id, deadline);
        self.guard_busy();
        Ok(id)
    }

    /// Sends a request and returns its id, which the matching response record (or
    /// [`Record::Ended`]) carries. Ids are sequential integers from 1, never reused.
    pub(crate) fn send_request(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        options: RequestOptions,
        now: Instant,
    ) -> Result<RequestId, SendError> {
        let id = self.register(options, now)?;
        let mut body = core::mem::take(&mut self.body);
        body.clear();
        write_call(&mut body, Some(&Id::number(id as i64)), method, params);
        self.push_frame(&body);
        self.body = body;
        Ok(RequestId(id))
    }

    /// Reports progress on `token` to the peer: a notification of
    /// [`Config::progress_method`] in the profile's shape. The token is the one the peer gave
    /// with its request (an integer or a string).
    ///
    /// - LSP and plain JSON-RPC: params `{"token": token, "value": value}`.
    /// - MCP: params `{"progressToken": token, …}`, where `…` is the members of `value` when
    ///   it is an object (`{"progress": 3, "total": 10, "message": "…"}`), else
    ///   `"progress": value` (a bare number).
    pub(crate) fn send_progress(
        &mut self,
        token: &Id<'_>,
        value: &RawValue,
    ) -> Result<(), SendError> {
        self.check_send()?;
        let profile = self.config.profile;
        let mut params = core::mem::take(&mut self.params);
        params.clear();
        params.push(b'{');
        crate::json::write_str(&mut params, profile.progress_token_key());
        params.push(b':');
        token.write_json(&mut params);
        let value_text = value.get().trim();
        match profile {
            Profile::Mcp => match value_text.strip_prefix('{') {
                Some(members) => {
                    let members = members.trim_start();
                    if members != "}" {
                        params.push(b',');
                    }
                    params.extend_from_slice(members.as_bytes());
                }
                None => {
                    params.extend_from_slice(b",\"progress\":");
                    params.extend_from_slice(value_text.as_bytes());
                    params.push(b'}');
                }
            },
            Profile::JsonRpc | Profile::Lsp => {
                params.extend_from_slice(b",\"value\":");
                params.extend_from_slice(value_text.as_bytes());
                params.push(b'}');
            }
        }
        let method = self.config.progress_method;
        // Built from a valid id and a valid value.
        let text = core::str::from_utf8(&params).unwrap_or("{}");
        let result = self.send_notification(method, Some(RawValue::from_validated(text)));
        self.params = params;
        result
    }

    /// Sends a notification.
    pub(crate) fn send_notification(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), SendError> {
        self.check_send()?;
        let mut body = core::mem::take(&mut self.body);
        body.clear();
        write_call(&mut body, None, method, params);
        self.push_frame(&body);
        self.body = body;
        Ok(())
    }

    /// [`send_notification`](Wire::send_notification) written where it is framed, the
    /// params copied once (no body buffer between), when the method name needs no escape:
    /// what a hook's notifications (the pub/sub hub's fan-out) take per subscriber.
    pub(crate) fn send_notification_framed(
        &mut self,
        method: &str,
        params: &RawValue,
    ) -> Result<(), SendError> {
        if !crate::json::needs_no_escape(method) {
            return self.send_notification(method, Some(params));
        }
        let parts: [&[u8]; 5] = [
            NOTIFICATION_OPEN,
            method.as_bytes(),
            NOTIFICATION_PARAMS,
            params.get().as_bytes(),
            NOTIFICATION_CLOSE,
        ];
        self.send_parts(&parts)
    }

    /// [`send_notification_framed`](Wire::send_notification_framed) with params that
    /// many connections share: held, not copied, as [`send_shared`](Wire::send_shared)
    /// holds an item.
    pub(crate) fn send_notification_shared(
        &mut self,
        method: &str,
        params: &output::Shared,
    ) -> Result<(), SendError> {
        if !self.share_items {
            return self.send_notification_framed(method, params);
        }
        if !crate::json::needs_no_escape(method) {
            return self.send_notification(method, Some(params));
        }
        let head: [&[u8]; 3] = [NOTIFICATION_OPEN, method.as_bytes(), NOTIFICATION_PARAMS];
        self.send_shared(&head, params, NOTIFICATION_CLOSE)
    }

    /// [`send_notification`](Wire::send_notification) with params that `params`
    /// appends in place (one JSON value): a subscription's notice written around its item
    /// with no buffer between.
    #[cfg(feature = "subscriptions")]
    pub(crate) fn send_notification_with(
        &mut self,
        method: &str,
        params: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), SendError> {
        self.check_send()?;
        let mut body = core::mem::take(&mut self.body);
        body.clear();
        crate::message::write_call_with(&mut body, Version::V2, None, method, Some(params));
        self.push_frame(&body);
        self.body = body;
        Ok(())
    }

    /// Sends a message whose body is `parts` one after the other (a notification put
    /// together from pieces written once, around an item), framed where it is written: no
    /// body buffer between, the parts copied once. Newline framing (which must look at
    /// every byte) goes through the body buffer as [`push_frame`](Self::push_frame) does.
    pub(crate) fn send_parts(&mut self, parts: &[&[u8]]) -> Result<(), SendError> {
        self.check_send()?;
        let framing = self.framing();
        let len: usize = parts.iter().map(|p| p.len()).sum();
        match framing {
            Some(codec::Framing::Newline) => {
                let mut body = core::mem::take(&mut self.body);
                body.clear();
                parts.iter().for_each(|p| body.extend_from_slice(p));
                self.push_frame(&body);
                self.body = body;
            }
            framed => self.out.push(self.output_tag, |out| {
                out.reserve(len + 32);
                if framed.is_some() {
                    content_length(out, len);
                }
                parts.iter().for_each(|p| out.extend_from_slice(p));
            }),
        }
        Ok(())
    }

    /// Sends a message made of `head`'s parts, the shared `item` and `tail`, as
    /// [`send_parts`](Wire::send_parts) would; once the driver takes its output as parts
    /// ([`transmit_parts`](Wire::transmit_parts)) and the frames are not lines, the item
    /// is held, not copied: each of a fan-out's subscribers writes it from where it was
    /// serialized once.
    #[inline(never)]
    pub(crate) fn send_shared(
        &mut self,
        head: &[&[u8]],
        item: &output::Shared,
        tail: &[u8],
    ) -> Result<(), SendError> {
        let framing = self.framing();
        if !self.share_items || framing == Some(codec::Framing::Newline) || head.len() > 4 {
            // Copied, as every other message is.
            let mut parts: [&[u8]; 6] = [&[]; 6];
            parts[..head.len()].copy_from_slice(head);
            parts[head.len()] = item.get().as_bytes();
            parts[head.len() + 1] = tail;
            return self.send_parts(&parts[..head.len() + 2]);
        }
        self.check_send()?;
        let len = head.iter().map(|p| p.len()).sum::<usize>() + item.get().len() + tail.len();
        let write_head = |out: &mut Vec<u8>| {
            out.reserve(len - item.get().len() + 32);
            if framing.is_some() {
                content_length(out, len);
            }
            head.iter().for_each(|p| out.extend_from_slice(p));
        };
        self.out
            .push_shared(self.output_tag, write_head, item, tail);
        Ok(())
    }

    /// True once the driver takes its output as parts
    /// ([`transmit_parts`](Wire::transmit_parts)): shared items are held, not copied.
    #[cfg(target_has_atomic = "ptr")]
    pub(crate) fn shares_items(&self) -> bool {
        self.share_items
    }

    /// True when the output itself frames messages (Content-Length headers, newlines): a
    /// byte stream's decoder, or a configured framing. A message-based transport (a
    /// WebSocket) frames them itself.
    #[cfg(target_has_atomic = "ptr")]
    pub(crate) fn frames_output(&self) -> bool {
        self.framing().is_some()
    }

    /// Starts an outgoing batch: add calls to the builder, then [`BatchBuilder::send`] it
    /// as one array. Responses arrive as ordinary response records, matched by id,
    /// whatever order the peer answers in.
    pub(crate) fn batch(&mut self, now: Instant) -> BatchBuilder<'_> {
        BatchBuilder {
            wire: self,
            now,
            ids: Vec::new(),
            body: Vec::new(),
            sent: false,
        }
    }

    /// Answers a request the peer sent (the handle of its request record), with a result or
    /// an error object. A request in a batch is held until the whole batch is answered, then
    /// the batch's array goes out as one frame.
    pub(crate) fn respond(
        &mut self,
        id: IncomingId,
        result: Result<&RawValue, &ErrorObject<'_>>,
    ) -> Result<(), UnknownRequest> {
        let answer_cancelled = self.config.profile.answers_cancelled();
        let mut body = core::mem::take(&mut self.body);
        body.clear();
        let answered =
            self.incoming
                .answer(id, &mut body, answer_cancelled, |peer_id, version, out| {
                    write_response(out, version, peer_id, result)
                });
        let tag = self.tags.remove(id.0);
        // An answer outside a batch (or whose batch is gone) is in `body`.
        if !body.is_empty() {
            let current = self.output_tag;
            let before = core::mem::replace(&mut self.output_tag, tag.unwrap_or(current));
            self.push_answer(&body);
            self.output_tag = before;
        }
        let done = match answered {
            None => Err(UnknownRequest),
            Some(batch) => {
                match batch {
                    Some((key, true)) if key != self.processing => self.send_batch(key),
                    _ => {}
                }
                Ok(())
            }
        };
        self.body = body;
        done
    }

    /// Answers a request the peer cancelled (after [`Record::PeerCancelled`]) with
    /// [`Config::cancelled_code`] and the message "Request cancelled", or, when the profile
    /// does not answer cancelled requests (MCP), forgets it and writes nothing.
    pub(crate) fn respond_cancelled(&mut self, id: IncomingId) -> Result<(), UnknownRequest> {
        let error = ErrorObject::fixed(self.config.cancelled_code, "Request cancelled");
        self.respond(id, Err(&error))
    }

    /// The tag of a request the peer sent and we have not answered yet (0 when its message
    /// came untagged).
    pub(crate) fn tag_of(&self, id: IncomingId) -> u64 {
        self.tags.get(id.0).unwrap_or(0)
    }

    /// Tags the frames written from now on with `tag` (the tag of the request they are sent
    /// on behalf of); the tag before.
    pub(crate) fn set_output_tag(&mut self, tag: u64) -> u64 {
        core::mem::replace(&mut self.output_tag, tag)
    }

    /// Cancels one of our requests: it ends with [`EndReason::Cancelled`] at once, a late
    /// response is ignored, and (with [`Config::cancellation`]) the peer is sent a
    /// cancellation. Returns false when the request was not pending.
    pub(crate) fn cancel(&mut self, id: RequestId, now: Instant) -> bool {
        self.now = now;
        if !self.outgoing.remove(id.0) {
            return false;
        }
        self.events
            .push_back(Record::Ended(id, EndReason::Cancelled));
        if self.config.cancellation && !self.closed {
            self.write_cancel(id.0, "Request cancelled");
        }
        true
    }

    /// Ends one of our requests with `reason`, as if its deadline had passed but without a
    /// cancellation to the peer (the transport knows it will not be answered); a late
    /// response is ignored. False when it was not pending.
    pub(crate) fn end(&mut self, id: RequestId, reason: EndReason, now: Instant) -> bool {
        self.now = now;
        if !self.outgoing.remove(id.0) {
            return false;
        }
        self.events.push_back(Record::Ended(id, reason));
        true
    }

    /// Closes the wire: every pending request ends with [`EndReason::Closed`], requests
    /// in flight are dropped without an answer, then [`Record::Closed`]. Output already
    /// queued can still be drained. Idempotent.
    pub(crate) fn close(&mut self, now: Instant) {
        self.now = now;
        if self.closed {
            return;
        }
        self.closed = true;
        for id in self.outgoing.drain() {
            self.events
                .push_back(Record::Ended(RequestId(id), EndReason::Closed));
        }
        self.incoming.clear();
        self.early.clear();
        #[cfg(feature = "progress")]
        self.watched.clear();
        self.tags.clear();
        self.batch_tags.clear();
        self.notifying = 0;
        self.events.push_back(Record::Closed);
    }

    /// Drops the peer's requests and notifications received and not handed out yet: once
    /// closed, nothing can answer them. The connection calls it when it closes.
    pub(crate) fn discard_queued_calls(&mut self) {
        if self.queued_calls > 0 {
            self.events.retain(|r| !is_call(r));
            self.queued_calls = 0;
            self.queued_requests = 0;
        }
    }

    // ----- output -----

    /// Appends the next frame to transmit to `buf` and returns its length; `None` when
    /// there is nothing to send.
    ///
    /// A frame partly consumed through [`consume_transmit`](Wire::consume_transmit)
    /// gives its rest. Memory is reclaimed as frames are taken, so the buffer holds at most
    /// about twice [`buffered_output`](Wire::buffered_output) however many frames a
    /// driver takes per turn.
    pub(crate) fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> Option<usize> {
        self.poll_transmit_tagged(buf).map(|(len, _)| len)
    }

    /// Drops the frames queued in front of the next answer to the peer's request (all of
    /// them when none is queued): how many. For a transport that carries only answers.
    pub(crate) fn skip_to_answer(&mut self) -> usize {
        self.out.skip_to_answer()
    }

    /// Like [`poll_transmit`](Wire::poll_transmit), with the frame's tag: the tag of
    /// the message ([`handle_message_tagged`](Wire::handle_message_tagged)) whose
    /// request it answers or on whose behalf it was sent
    /// ([`Connection::notify_for`](crate::connection::Connection::notify_for)), 0 for
    /// the rest. A transport with a stream per message (MCP's Streamable HTTP) sends each
    /// frame on its tag's stream.
    pub(crate) fn poll_transmit_tagged(&mut self, buf: &mut Vec<u8>) -> Option<(usize, u64)> {
        self.out.take_front(buf)
    }

    /// Every byte of output queued, framed, to write as it is (a byte-stream driver writes
    /// straight from here and then calls [`consume_transmit`](Wire::consume_transmit)
    /// with how many bytes went out). Empty when there is nothing to send.
    pub(crate) fn peek_transmit(&mut self) -> &[u8] {
        self.out.materialize();
        self.out.bytes()
    }

    /// The frames of [`peek_transmit`](Wire::peek_transmit), one by one.
    pub(crate) fn transmit_frames(&mut self) -> impl Iterator<Item = &[u8]> + '_ {
        self.out.materialize();
        self.out.frames()
    }

    /// The frames of [`peek_transmit`](Wire::peek_transmit), one by one, each as three
    /// runs of bytes (some empty): a shared item ([`send_shared`](Wire::send_shared)) is
    /// the middle one, where it was serialized. From the first call on, shared items are
    /// held rather than copied.
    pub(crate) fn transmit_parts(&mut self) -> impl Iterator<Item = [&[u8]; 3]> + '_ {
        self.share_items = true;
        self.out.parts()
    }

    /// [`transmit_parts`](Wire::transmit_parts), each frame with the shared item that is its
    /// middle run, if any.
    #[cfg(all(feature = "subscriptions", target_has_atomic = "ptr"))]
    pub(crate) fn transmit_parts_with_items(
        &mut self,
    ) -> impl Iterator<Item = ([&[u8]; 3], Option<&output::Shared>)> + '_ {
        self.share_items = true;
        self.out.parts().with_items()
    }

    /// The first `n` bytes of [`peek_transmit`](Wire::peek_transmit) were written:
    /// they are dropped from the output (a frame may be left partly written; the rest of
    /// it comes first).
    pub(crate) fn consume_transmit(&mut self, n: usize) {
        self.out.consume(n);
    }

    /// Bytes of output taken so far (by [`poll_transmit`](Wire::poll_transmit) and
    /// [`consume_transmit`](Wire::consume_transmit)): a driver compares it before and
    /// after writing to know whether a byte went out.
    pub(crate) fn transmitted(&self) -> u64 {
        self.out.total()
    }

    /// Bytes of memory the output buffer holds: at most about twice
    /// [`buffered_output`](Wire::buffered_output) (plus a few KiB), whatever the
    /// driver takes per turn; an emptied buffer keeps at most 64 KiB.
    pub(crate) fn output_capacity(&self) -> usize {
        self.out.capacity()
    }

    /// The size of the next incoming batch seen since the last call (for metrics); `None`
    /// when there is none. Only the first 64 undrained sizes are kept.
    pub(crate) fn poll_batch_size(&mut self) -> Option<usize> {
        self.batch_sizes.pop_front()
    }

    /// Takes the next record of the queue for the connection to act on, with the text of
    /// the frame its entry lies in (empty for a record that is not an entry); `None` when
    /// there is none.
    #[inline]
    pub(crate) fn take_record(&mut self) -> Option<(Record, &str)> {
        self.refill_events();
        let at = self.next_index()?;
        let record = self.take(at)?;
        let frame = self.entry_text(&record);
        Some((record, frame))
    }

    /// The record [`take_record`](Wire::take_record) would take next, left in the queue:
    /// the connection decides by its content whether to take it itself.
    #[inline]
    pub(crate) fn peek_record(&mut self) -> Option<(&Record, &str)> {
        self.refill_events();
        let at = self.next_index()?;
        let record = self.events.get(at)?;
        Some((record, self.entry_text(record)))
    }

    /// The text of the frame an entry record lies in; empty for any other record.
    #[inline(always)]
    fn entry_text(&self, record: &Record) -> &str {
        match *record {
            // SAFETY: as in `process_entry`: a scanned entry, unchanged in the arena since.
            Record::Entry { start, end, .. } => unsafe { frame_str(&self.arena[start..end]) },
            _ => "",
        }
    }

    /// Where the next event to hand out is in the queue: the first, unless it is a request
    /// or notification held back ([`Wire::is_holding`]); then the first event behind
    /// the held calls that is not a call (calls keep their order among themselves).
    #[inline]
    fn next_index(&self) -> Option<usize> {
        let first = self.events.front()?;
        if self.queued_calls == 0 || self.closed || !self.held(first) {
            return Some(0);
        }
        self.events.iter().position(|r| !is_call(r))
    }

    /// True when `record` is a call that may not be handed out now.
    fn held(&self, record: &Record) -> bool {
        match record {
            Record::Entry {
                role: Role::Request(_),
                ..
            } => self.barrier() || self.busy_full(),
            Record::Entry {
                role: Role::Notification,
                ..
            } => self.barrier(),
            _ => false,
        }
    }

    /// Removes the event at `at` from the queue, counting what is handed out.
    #[inline]
    fn take(&mut self, at: usize) -> Option<Record> {
        let record = if at == 0 {
            self.events.pop_front()
        } else {
            self.events.remove(at)
        }?;
        if let Record::Entry { role, .. } = &record {
            self.count_handed_out(role);
        }
        Some(record)
    }

    /// Counts an entry of `role` taken from the queue: a request or notification handed
    /// out.
    #[inline]
    fn count_handed_out(&mut self, role: &Role) {
        match role {
            Role::Request(_) => {
                self.queued_requests -= 1;
                self.queued_calls -= 1;
            }
            Role::Notification => {
                self.queued_calls -= 1;
                if self.config.ordered_notifications && !self.closed {
                    self.notifying += 1;
                }
            }
            _ => {}
        }
    }

    /// Where the event of the request `handle`, not handed out yet, is in the queue.
    fn queued_request(&self, handle: IncomingId) -> Option<usize> {
        self.events
            .iter()
            .position(|r| matches!(r, Record::Entry { role: Role::Request(h), .. } if *h == handle))
    }

    /// Whether the next event is an entry whose role `wanted` accepts.
    #[inline(always)]
    fn next_entry_is(&mut self, wanted: fn(&Role) -> bool) -> bool {
        self.refill_events();
        let next = self.next_index().and_then(|at| self.events.get(at));
        matches!(next, Some(Record::Entry { role, .. }) if wanted(role))
    }

    /// Takes the next event when it is an entry whose role `wanted` accepts: its role, the
    /// entry and the text it lies in.
    #[inline(always)]
    fn poll_entry(&mut self, wanted: fn(&Role) -> bool) -> Option<(Role, RawEntry, &str)> {
        if !self.next_entry_is(wanted) {
            return None;
        }
        let at = self.next_index()?;
        self.take_entry(at)
    }

    /// Takes the event at `at` when it is an entry: its role, the entry and the text it
    /// lies in.
    #[inline(always)]
    fn take_entry(&mut self, at: usize) -> Option<(Role, RawEntry, &str)> {
        // Read where it lies, then dropped from the queue, as `take` would: moved out whole
        // first, the record was copied by a call to `memcpy` on every event.
        let Some(&Record::Entry {
            start,
            end,
            entry,
            role,
        }) = self.events.get(at)
        else {
            return None;
        };
        if at == 0 {
            self.events.pop_front();
        } else {
            self.events.remove(at);
        }
        self.count_handed_out(&role);
        // SAFETY: as in `process_entry`: a scanned entry, unchanged in the arena since.
        let frame = unsafe { frame_str(&self.arena[start..end]) };
        Some((role, entry, frame))
    }

    /// Takes the request or notification [`peek_next`](Wire::peek_next) told of as
    /// [`Peek::Call`] at `at`, nothing having changed the wire since, as its entry and
    /// the text it lies in, without building it: the connection machine builds its own
    /// event from them, once (built here and moved into that event, its fields were stored
    /// in pieces and read back whole right away, a stalled store-to-load forward, twice).
    /// The queue is not asked again what comes next (asking cost two more looks per call).
    #[inline]
    pub(crate) fn poll_call(&mut self, at: usize) -> Option<PolledCall<'_>> {
        let (role, entry, frame) = self.take_entry(at)?;
        debug_assert!(role.is_call(), "poll_call at an event that is not a call");
        let request = match role {
            Role::Request(id) => Some(id),
            _ => None,
        };
        Some(PolledCall {
            request,
            entry,
            frame,
        })
    }

    /// Whether the next event is the response to one of our requests
    /// ([`poll_response`](Wire::poll_response) takes it).
    #[inline]
    pub(crate) fn next_is_response(&mut self) -> bool {
        self.next_entry_is(Role::is_response)
    }

    /// Takes the next event when it is the response to one of our requests, as its entry
    /// and the text it lies in, without building it (as [`poll_call`](Wire::poll_call)
    /// does for calls). `None`, taking nothing, for any other event or none.
    pub(crate) fn poll_response(&mut self) -> Option<PolledResponse<'_>> {
        let (Role::Response(id), entry, frame) = self.poll_entry(Role::is_response)? else {
            return None;
        };
        Some(PolledResponse { id, entry, frame })
    }

    /// What the next event is, told without building it: for the connection machine's
    /// routing, which needs only a call's method name or a response's request. `None` when
    /// there is none (then [`peek_record`](Wire::peek_record) would find none either).
    #[inline(always)]
    pub(crate) fn peek_next(&mut self) -> Option<Peek<'_>> {
        self.refill_events();
        let at = self.next_index()?;
        Some(match self.events.get(at)? {
            Record::Entry {
                start,
                end,
                entry,
                role,
            } => {
                if let Role::Response(id) = role {
                    return Some(Peek::Response(*id));
                }
                // SAFETY: as in `process_entry`: a scanned entry, unchanged in the arena since.
                let frame = unsafe { frame_str(&self.arena[*start..*end]) };
                match entry.plain_method(frame) {
                    Some((request, method)) => Peek::Call {
                        request,
                        method,
                        at,
                    },
                    None => Peek::Other,
                }
            }
            _ => Peek::Other,
        })
    }

    /// Asked before every event handed out: answered here while events are queued.
    #[inline(always)]
    fn refill_events(&mut self) {
        if self.events.is_empty() {
            self.events_drained();
        }
    }

    /// [`refill_events`](Wire::refill_events) once the queue is empty.
    #[inline(never)]
    fn events_drained(&mut self) {
        // Every event handed out so far is dead: reuse the arena for frames the decoder
        // holds but had no room to process.
        self.arena.clear();
        if !self.closed {
            self.process_decoded();
            self.guard_note(None);
        }
    }

    /// The next instant [`handle_timeout`](Wire::handle_timeout) has work at; `None`
    /// when no deadline is set. It may be an instant already past (with
    /// [`Config::idle_timeout`] or [`Config::frame_timeout`] set, the wire asks this way
    /// to be told the time after a change it saw without one): call `handle_timeout` at
    /// once then.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let table = match self.timed {
            false => None,
            true => match (self.outgoing.next_deadline(), self.early.next_expiry()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        };
        guard::min(table, self.guard_deadline())
    }
}

/// Writes the head of a Content-Length frame (the framing `Auto` writes too) of `len`
/// bytes.
fn content_length(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(b"Content-Length: ");
    out.extend_from_slice(itoa::Buffer::new().format(len).as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
}

/// Writes a response with `result` or an error.
fn write_response(
    out: &mut Vec<u8>,
    version: Version,
    id: &Id<'_>,
    result: Result<&RawValue, &ErrorObject<'_>>,
) {
    match result {
        Ok(r) => write_result_response(out, version, id, r),
        Err(e) => write_error_response(out, version, id, e),
    }
}

/// Writes a JSON-RPC 2.0 call: a request when `id` is given, else a notification.
fn write_call(out: &mut Vec<u8>, id: Option<&Id<'_>>, method: &str, params: Option<&RawValue>) {
    crate::message::write_call(out, Version::V2, id, method, params);
}

/// Builds an outgoing batch; from [`Wire::batch`].
///
/// Dropping it without [`send`](BatchBuilder::send) sends nothing and forgets the requests
/// it registered.
#[derive(Debug)]
pub(crate) struct BatchBuilder<'e> {
    wire: &'e mut Wire,
    now: Instant,
    ids: Vec<u64>,
    body: Vec<u8>,
    sent: bool,
}

impl BatchBuilder<'_> {
    fn entry(&mut self) {
        self.body
            .push(if self.body.is_empty() { b'[' } else { b',' });
    }

    /// Adds a request and returns the id its response will carry.
    pub(crate) fn request(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        options: RequestOptions,
    ) -> Result<RequestId, SendError> {
        let id = self.wire.register(options, self.now)?;
        self.ids.push(id);
        self.entry();
        write_call(&mut self.body, Some(&Id::number(id as i64)), method, params);
        Ok(RequestId(id))
    }

    /// Adds a notification.
    pub(crate) fn notify(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), SendError> {
        self.wire.check_send()?;
        self.entry();
        write_call(&mut self.body, None, method, params);
        Ok(())
    }

    /// Sends the batch as one frame (nothing when it is empty).
    pub(crate) fn send(mut self) -> Result<(), SendError> {
        self.wire.check_send()?;
        self.sent = true;
        if !self.body.is_empty() {
            self.body.push(b']');
            let body = core::mem::take(&mut self.body);
            self.wire.push_frame(&body);
        }
        Ok(())
    }
}

impl Drop for BatchBuilder<'_> {
    fn drop(&mut self) {
        if !self.sent {
            for &id in &self.ids {
                self.wire.outgoing.remove(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A notification written where it is framed is the notification `send_notification`
    /// writes, byte for byte, in every framing and whether or not its method needs an
    /// escape (params with a line break, which newline framing turns into a space).
    #[test]
    fn a_framed_notification_is_the_notification() {
        let params = RawValue::from_json("{\"a\":\"x\\ny\",\"b\":\n[1]}").unwrap();
        for framing in [
            None,
            Some(codec::Framing::ContentLength),
            Some(codec::Framing::Newline),
            Some(codec::Framing::Auto),
        ] {
            for method in ["rpc.notification", "say \"hi\"\n", ""] {
                let written = |framed: bool| {
                    let mut wire = Wire::new(Config {
                        framing,
                        ..Config::default()
                    });
                    let sent = match framed {
                        true => wire.send_notification_framed(method, params),
                        false => wire.send_notification(method, Some(params)),
                    };
                    assert!(sent.is_ok());
                    let mut out = Vec::new();
                    while wire.poll_transmit(&mut out).is_some() {}
                    out
                };
                let expected = written(false);
                assert!(!expected.is_empty());
                assert_eq!(written(true), expected, "{framing:?} {method:?}");
            }
        }
    }
}
