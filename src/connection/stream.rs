//! Pull-based streams (seed 003 §4, with an unambiguous end): a method answers with a stream
//! id, and the caller pulls items with requests on reserved `rpc.` names.
//!
//! # Wire protocol
//! A stream-returning method answers `{"stream": 7}` (an integer, opaque to the puller).
//! Nothing is produced until the first pull: streams are cold.
//!
//! - **Pull**: request `rpc.stream.next` with `{"stream": 7, "max": 16}` (`max` optional,
//!   default 1, clamped to the server's [`StreamConfig::max_items_per_pull`]). The answer is
//!   `{"items": [...], "done": false}` with 1 to `max` items, sent as soon as at least one is
//!   ready; `"done": true` marks the end (its `items` may hold the last ones, or none). No
//!   error code means "end".
//! - **Pipelining**: several pulls may be in flight; they are answered in the order they
//!   arrived. Pulls queued behind the end are answered `{"items": [], "done": true}`.
//! - **Failure**: the producer's error is an ordinary JSON-RPC error answer to a pull; the
//!   stream is over after it.
//! - **Cancel**: request or notification `rpc.stream.cancel` with `{"stream": 7}`; a request
//!   is answered `true` when the stream was open, `false` otherwise. Pulls still queued are
//!   answered `{"items": [], "done": true}`.
//! - **Unknown stream** (never opened, over, cancelled, or expired): the pull is answered
//!   with error [`code::UNKNOWN_STREAM`] (-32020).
//! - **Bounds**: opening past [`StreamConfig::max_open`] answers the opening call with
//!   [`code::TOO_MANY_STREAMS`] (-32021); a pull past [`StreamConfig::max_queued_pulls`] for
//!   one stream is answered [`code::TOO_MANY_PULLS`] (-32022). A stream with no pull waiting
//!   for [`StreamConfig::idle_timeout`] is freed. Closing the connection frees every stream.
//!
//! ```text
//! → {"jsonrpc":"2.0","id":1,"method":"count","params":{"to":3}}
//! ← {"jsonrpc":"2.0","id":1,"result":{"stream":1}}
//! → {"jsonrpc":"2.0","id":2,"method":"rpc.stream.next","params":{"stream":1,"max":2}}
//! → {"jsonrpc":"2.0","id":3,"method":"rpc.stream.next","params":{"stream":1,"max":2}}
//! ← {"jsonrpc":"2.0","id":2,"result":{"items":[1,2],"done":false}}
//! ← {"jsonrpc":"2.0","id":3,"result":{"items":[3],"done":true}}
//! ```
//!
//! # The two halves
//! - The server side is the [`Connection`](crate::connection::Connection)'s: it answers the
//!   pulls of the streams it opened ([`Connection::open_stream`](crate::connection::Connection::open_stream))
//!   from the items its driver produces while there is demand
//!   ([`Connection::produce`](crate::connection::Connection::produce)).
//! - [`StreamReader`]: one stream's client side: the pipelining window, in-order delivery
//!   of items, the end, and the params of each pull and of the cancel. It sends nothing
//!   itself: the adapter sends the pulls it asks for and hands back their answers.

use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;

use crate::error::ErrorObject;
use crate::error::{EndReason, UnknownRequest};
use crate::json::Scanner;
use crate::limits::Limits;
use crate::message::Request;
use crate::method::CallError;
use crate::raw::RawValue;
use crate::time::Instant;
use crate::wire::{IncomingId, SortedDeque, Wire};

/// The method that pulls items.
pub const NEXT_METHOD: &str = "rpc.stream.next";
/// The method that cancels a stream.
pub const CANCEL_METHOD: &str = "rpc.stream.cancel";
/// The prefix every stream method's name starts with.
pub const METHOD_PREFIX: &str = "rpc.stream.";

/// Error codes of the stream extension (in the implementation-defined server-error range,
/// clear of seed 000's -32001..-32005 and of pub/sub's -32010..-32011; the README keeps the
/// registry of every code the project uses).
pub mod code {
    /// No such stream: never opened, already over, cancelled, or freed after its idle
    /// timeout.
    pub const UNKNOWN_STREAM: i64 = -32020;
    /// The connection already has the most open streams it may have.
    pub const TOO_MANY_STREAMS: i64 = -32021;
    /// The stream already has the most queued pulls it may have.
    pub const TOO_MANY_PULLS: i64 = -32022;
}

pub use crate::config::StreamConfig;

/// A producer of items written straight into an answer: what a stream method returns
/// when its items come from plain code (an iterator: [`from_iter`]).
pub trait Source: Send {
    /// Appends the next item to `out` and returns [`Produced::Item`], or says why not.
    fn next_item(&mut self, out: &mut Vec<u8>) -> Produced;
}

/// A boxed [`Source`].
pub type BoxSource = Box<dyn Source>;

struct IterSource<I>(I);

impl<I, T> Source for IterSource<I>
where
    I: Iterator<Item = Result<T, ErrorObject<'static>>> + Send,
    T: serde::Serialize,
{
    fn next_item(&mut self, out: &mut Vec<u8>) -> Produced {
        match self.0.next() {
            None => Produced::End,
            Some(Err(e)) => Produced::Error(e),
            Some(Ok(item)) => match crate::json::write_json(out, &item) {
                Ok(()) => Produced::Item,
                Err(_) => Produced::Error(ErrorObject::internal_error()),
            },
        }
    }
}

/// An iterator of items (or errors, which end the stream) as a [`BoxSource`]; each item is
/// serialized into the answer, with no copy between.
pub fn from_iter<I, T>(iter: I) -> BoxSource
where
    I: Iterator<Item = Result<T, ErrorObject<'static>>> + Send + 'static,
    T: serde::Serialize + 'static,
{
    Box::new(IterSource(iter))
}

/// How many items the pulls of a stream still want, as [`Connection::produce`](crate::connection::Connection::produce) asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Demand {
    /// Items the front pull still wants before its answer goes out (at least 1).
    pub front: u32,
    /// Items every queued pull wants together, the front one's included.
    pub total: u64,
}

/// What a producer gave when asked for an item by [`Connection::produce`](crate::connection::Connection::produce).
#[derive(Debug)]
pub enum Produced {
    /// One JSON value was appended to the buffer.
    Item,
    /// No item is ready yet; ask again later (an async stream that returned `Pending`).
    Pending,
    /// The stream is over.
    End,
    /// The stream failed; the error answers a pull and the stream is over.
    Error(ErrorObject<'static>),
}

#[derive(Debug)]
struct Pull {
    id: IncomingId,
    max: u32,
}

#[derive(Debug)]
enum Finish {
    Done,
    Failed(ErrorObject<'static>),
}

#[derive(Debug)]
struct Entry<P> {
    /// `None` once the producer ended or failed.
    producer: Option<P>,
    pulls: VecDeque<Pull>,
    /// The front pull's answer so far: `{"items":[` and its items, comma-separated.
    answer: Vec<u8>,
    count: u32,
    finish: Option<Finish>,
    last_active: Instant,
}

/// One connection's server-side streams: open streams with their producers and queued
/// pulls, answered through the connection's wire protocol. Sans-I/O: time is an argument, and the table
/// never calls a producer except inside [`produce`](StreamTable::produce), through the
/// caller's closure.
///
/// The connection routes stream requests to [`handle_request`](StreamTable::handle_request)
/// and `rpc.stream.cancel` to [`cancel`](StreamTable::cancel) before its driver sees them,
/// opens a stream with [`open`](StreamTable::open) for [`Connection::open_stream`](crate::connection::Connection::open_stream),
/// and answers pulls through [`produce`](StreamTable::produce).
#[derive(Debug)]
pub(crate) struct StreamTable<P> {
    config: StreamConfig,
    next_id: u64,
    /// By id: ids are handed out in order, so a sorted ring (a B-tree of its own cost a
    /// page 5 KB of code).
    streams: SortedDeque<u64, Entry<P>>,
    /// Where the last `produce` stopped, for fairness between streams.
    cursor: u64,
    spare: Vec<Vec<u8>>,
    /// Streams freed since the last [`poll_freed`](StreamTable::poll_freed).
    freed: VecDeque<u64>,
}

impl<P> StreamTable<P> {
    /// An empty table.
    pub(crate) fn new(config: StreamConfig) -> Self {
        StreamTable {
            config,
            next_id: 1,
            streams: SortedDeque::default(),
            cursor: 0,
            spare: Vec::new(),
            freed: VecDeque::new(),
        }
    }

    /// The bounds.
    pub(crate) fn config(&self) -> &StreamConfig {
        &self.config
    }

    /// Streams open now.
    pub(crate) fn len(&self) -> usize {
        self.streams.len()
    }

    /// True when no stream is open.
    pub(crate) fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// True while another stream may open. An adapter checks it before running a stream
    /// method's handler, so a peer that floods opens never gets producers built.
    pub(crate) fn has_room(&self) -> bool {
        self.streams.len() < self.config.max_open
    }

    /// Opens a stream for the request `request` (the call of a stream-returning method) and
    /// answers it `{"stream": id}`; past [`StreamConfig::max_open`] answers it
    /// [`code::TOO_MANY_STREAMS`] instead and drops `producer`. Returns the stream id.
    pub(crate) fn open(
        &mut self,
        wire: &mut Wire,
        request: IncomingId,
        producer: P,
        now: Instant,
    ) -> Result<Option<u64>, UnknownRequest> {
        if !self.has_room() {
            let error = wire.own_error(too_many_streams());
            return wire.respond(request, Err(&error)).map(|()| None);
        }
        let id = self.next_id;
        let mut text = String::from("{\"stream\":");
        push_u64(&mut text, id);
        text.push('}');
        wire.respond(request, Ok(RawValue::from_validated(&text)))?;
        self.next_id += 1;
        let answer = self.spare.pop().unwrap_or_default();
        self.streams.insert(
            id,
            Entry {
                producer: Some(producer),
                pulls: VecDeque::new(),
                answer,
                count: 0,
                finish: None,
                last_active: now,
            },
        );
        Ok(Some(id))
    }

    /// Takes the request if it is one of the stream methods (and answers it, or queues it
    /// as a pull); false, touching nothing, for any other method.
    pub(crate) fn handle_request(
        &mut self,
        wire: &mut Wire,
        id: IncomingId,
        request: &Request<'_>,
        now: Instant,
    ) -> bool {
        let params = request.params.as_deref();
        match &*request.method {
            NEXT_METHOD => {
                match self.pull(id, params, now) {
                    Err(error) => {
                        let error = wire.own_error(error);
                        let _ = wire.respond(id, Err(&error));
                    }
                    // A stream whose producer is over answers from what it kept.
                    Ok(stream) => {
                        let spent = self
                            .streams
                            .get_mut(&stream)
                            .is_some_and(|e| e.producer.is_none() && e.settle(wire, now));
                        if spent {
                            self.free(stream);
                        }
                    }
                }
                true
            }
            CANCEL_METHOD => {
                let answer = match stream_param(params) {
                    Some(stream) => {
                        let open = self.cancel(wire, stream);
                        Ok(RawValue::from_validated(if open {
                            "true"
                        } else {
                            "false"
                        }))
                    }
                    None => Err(invalid_stream_params()),
                };
                let _ = wire.respond(id, answer.as_ref().map(|r| *r));
                true
            }
            _ => false,
        }
    }

    /// The peer cancelled one of its requests: when it is a queued pull, it is answered
    /// cancelled and dropped from its queue (items gathered for it are lost). False when
    /// the request is not a queued pull.
    pub(crate) fn handle_peer_cancelled(&mut self, wire: &mut Wire, id: IncomingId) -> bool {
        for entry in self.streams.values_mut() {
            if let Some(i) = entry.pulls.iter().position(|p| p.id == id) {
                entry.pulls.remove(i);
                if i == 0 {
                    entry.restart_answer();
                }
                let _ = wire.respond_cancelled(id);
                return true;
            }
        }
        false
    }

    fn pull(
        &mut self,
        id: IncomingId,
        params: Option<&RawValue>,
        now: Instant,
    ) -> Result<u64, ErrorObject<'static>> {
        let (stream, max) = pull_params(params).ok_or_else(invalid_stream_params)?;
        let entry = self
            .streams
            .get_mut(&stream)
            .ok_or(ErrorObject::fixed(code::UNKNOWN_STREAM, "Unknown stream"))?;
        if entry.pulls.len() >= self.config.max_queued_pulls {
            return Err(ErrorObject::fixed(
                code::TOO_MANY_PULLS,
                "Too many pulls queued",
            ));
        }
        let max = max.clamp(1, self.config.max_items_per_pull.max(1) as u64) as u32;
        if entry.pulls.is_empty() {
            entry.restart_answer();
        }
        entry.pulls.push_back(Pull { id, max });
        entry.last_active = now;
        Ok(stream)
    }

    /// Frees a stream: its producer is dropped and its queued pulls are answered as the end.
    /// False when it was not open.
    pub(crate) fn cancel(&mut self, wire: &mut Wire, stream: u64) -> bool {
        let Some(mut entry) = self.streams.remove(&stream) else {
            return false;
        };
        for pull in entry.pulls.drain(..) {
            let _ = wire.respond(pull.id, Ok(RawValue::from_validated(EMPTY_END)));
        }
        self.recycle(entry.answer);
        self.freed.push_back(stream);
        true
    }

    /// True when some stream has a pull waiting and a producer to ask.
    pub(crate) fn wants_items(&self) -> bool {
        self.streams
            .iter()
            .any(|(_, e)| !e.pulls.is_empty() && e.producer.is_some())
    }

    /// Asks the producers of streams with pulls waiting for items, through `next`, and
    /// answers pulls as they fill: at `max` items, at [`StreamConfig::max_answer_bytes`],
    /// when the producer has nothing ready ([`Produced::Pending`]) and the answer holds at
    /// least one item, at the end and on failure. Stops after `budget` items over all streams
    /// (so one fast stream cannot starve the connection) and returns how many it took.
    ///
    /// `next` gets the stream id, its producer, the answer buffer, and the [`Demand`] of the
    /// queued pulls (a producer run elsewhere, such as an iterator on a worker thread,
    /// gathers no more than that, and hands over what the front pull wants first). It must
    /// append exactly one JSON value to the buffer when it returns
    /// [`Produced::Item`]; an item that is not valid JSON fails the stream with `-32603`.
    pub(crate) fn produce<F>(
        &mut self,
        wire: &mut Wire,
        now: Instant,
        budget: usize,
        mut next: F,
    ) -> usize
    where
        F: FnMut(u64, &mut P, &mut Vec<u8>, Demand) -> Produced,
    {
        let mut taken = 0;
        // Those after the cursor first, then the others.
        let mut ids: Vec<u64> = self.streams.iter().map(|&(k, _)| k).collect();
        let done = ids.partition_point(|&k| k <= self.cursor);
        ids.rotate_left(done);
        let max_bytes = self.config.max_answer_bytes;
        let mut freed = Vec::new();
        for id in ids {
            if taken >= budget {
                break;
            }
            let Some(entry) = self.streams.get_mut(&id) else {
                continue;
            };
            self.cursor = id;
            while taken < budget && !entry.pulls.is_empty() {
                let Some(producer) = entry.producer.as_mut() else {
                    break;
                };
                let mark = entry.answer.len();
                if entry.count > 0 {
                    entry.answer.push(b',');
                }
                let start = entry.answer.len();
                let front = entry.pulls.front().map_or(1, |p| p.max);
                let front = front.saturating_sub(entry.count).max(1);
                let rest: u64 = entry.pulls.iter().skip(1).map(|p| u64::from(p.max)).sum();
                let demand = Demand {
                    front,
                    total: u64::from(front) + rest,
                };
                match next(id, producer, &mut entry.answer, demand) {
                    Produced::Item => {
                        let item = &entry.answer[start..];
                        if crate::json::validate(item, Limits::MAX_DEPTH_CAP).is_err() {
                            entry.answer.truncate(mark);
                            entry.producer = None;
                            entry.finish = Some(Finish::Failed(ErrorObject::internal_error()));
                            break;
                        }
                        taken += 1;
                        entry.count += 1;
                        let front = entry.pulls.front().map_or(1, |p| p.max);
                        if entry.count >= front || entry.answer.len() >= max_bytes {
                            entry.answer_front(wire, false, now);
                        }
                    }
                    Produced::Pending => {
                        entry.answer.truncate(mark);
                        if entry.count > 0 {
                            entry.answer_front(wire, false, now);
                        }
                        break;
                    }
                    Produced::End => {
                        entry.answer.truncate(mark);
                        entry.producer = None;
                        entry.finish = Some(Finish::Done);
                    }
                    Produced::Error(e) => {
                        entry.answer.truncate(mark);
                        entry.producer = None;
                        entry.finish = Some(Finish::Failed(e));
                    }
                }
            }
            if entry.producer.is_none() && entry.settle(wire, now) {
                freed.push(id);
            }
        }
        for id in freed {
            self.free(id);
        }
        taken
    }

    /// Frees streams that had no pull waiting for [`StreamConfig::idle_timeout`] (a peer
    /// that opened streams and stopped pulling). Returns how many it freed.
    pub(crate) fn handle_timeout(&mut self, now: Instant) -> usize {
        let idle = self.config.idle_timeout;
        let before = self.streams.len();
        let mut spent = Vec::new();
        let freed = &mut self.freed;
        self.streams.retain(|&id, e| {
            let keep = !e.pulls.is_empty() || now < e.last_active + idle;
            if !keep {
                spent.push(core::mem::take(&mut e.answer));
                freed.push_back(id);
            }
            keep
        });
        for buf in spent {
            self.recycle(buf);
        }
        before - self.streams.len()
    }

    /// The next instant [`handle_timeout`](StreamTable::handle_timeout) has work at.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        // Asked on every driver turn; most connections have no stream, and setting up the
        // walk of an empty table costs more than this look (issue 64).
        if self.streams.is_empty() {
            return None;
        }
        let idle = self.config.idle_timeout;
        self.streams
            .iter()
            .filter(|(_, e)| e.pulls.is_empty())
            .map(|(_, e)| e.last_active + idle)
            .min()
    }

    /// Frees every stream and drops every producer (the connection closed; its pulls need
    /// no answer). Not reported as freed.
    pub(crate) fn clear(&mut self) {
        self.streams.clear();
        self.spare.clear();
        self.freed.clear();
    }

    /// True when [`poll_freed`](StreamTable::poll_freed) has a stream to tell.
    #[inline]
    pub(crate) fn has_freed(&self) -> bool {
        !self.freed.is_empty()
    }

    /// A stream the table freed since the last call (ended, cancelled, idle too long), so
    /// a caller that keeps producers outside the table drops the one of that stream.
    pub(crate) fn poll_freed(&mut self) -> Option<u64> {
        self.freed.pop_front()
    }

    fn free(&mut self, stream: u64) {
        if let Some(entry) = self.streams.remove(&stream) {
            self.recycle(entry.answer);
            self.freed.push_back(stream);
        }
    }

    fn recycle(&mut self, mut buf: Vec<u8>) {
        if self.spare.len() < 4 && buf.capacity() <= self.config.max_answer_bytes * 2 {
            buf.clear();
            self.spare.push(buf);
        }
    }
}

const EMPTY_END: &str = "{\"items\":[],\"done\":true}";

impl<P> Entry<P> {
    fn restart_answer(&mut self) {
        self.answer.clear();
        self.answer.extend_from_slice(b"{\"items\":[");
        self.count = 0;
    }

    /// Answers the front pull with the items gathered.
    fn answer_front(&mut self, wire: &mut Wire, done: bool, now: Instant) {
        let Some(pull) = self.pulls.pop_front() else {
            return;
        };
        self.answer.extend_from_slice(if done {
            b"],\"done\":true}"
        } else {
            b"],\"done\":false}"
        });
        // Built from validated items between fixed text.
        let text = core::str::from_utf8(&self.answer).unwrap_or(EMPTY_END);
        let _ = wire.respond(pull.id, Ok(RawValue::from_validated(text)));
        self.last_active = now;
        self.restart_answer();
    }

    /// After the producer ended or failed: answers the queued pulls as far as the end
    /// allows. True once the end has been delivered (the stream can be freed).
    fn settle(&mut self, wire: &mut Wire, now: Instant) -> bool {
        loop {
            if self.pulls.is_empty() {
                return false;
            }
            match &self.finish {
                None => return false,
                Some(Finish::Done) => {
                    self.answer_front(wire, true, now);
                    break;
                }
                Some(Finish::Failed(_)) if self.count > 0 => {
                    self.answer_front(wire, false, now);
                }
                Some(Finish::Failed(e)) => {
                    let e = e.clone();
                    if let Some(pull) = self.pulls.pop_front() {
                        let _ = wire.respond(pull.id, Err(&e));
                    }
                    break;
                }
            }
        }
        for pull in self.pulls.drain(..) {
            let _ = wire.respond(pull.id, Ok(RawValue::from_validated(EMPTY_END)));
        }
        true
    }
}

/// The answer to a stream-opening call past [`StreamConfig::max_open`] (its code as
/// sansrpc has it; a connection under MCP moves it: [`Profile::own_code`]).
///
/// [`Profile::own_code`]: crate::wire::Profile::own_code
pub(crate) fn too_many_streams() -> ErrorObject<'static> {
    ErrorObject::fixed(code::TOO_MANY_STREAMS, "Too many open streams")
}

fn invalid_stream_params() -> ErrorObject<'static> {
    ErrorObject::fixed(
        crate::error::code::INVALID_PARAMS,
        "Invalid params: expected {\"stream\": <integer>, \"max\": <integer, optional>}",
    )
}

fn push_u64(out: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.push_str(core::str::from_utf8(&digits[i..]).unwrap_or("0"));
}

/// Calls `f` with each member (key token, escapes in place; value text) of a JSON object;
/// false when `text` is not an object.
fn members<'t>(text: &'t str, mut f: impl FnMut(&'t str, &'t str)) -> bool {
    let mut s = Scanner::new(text.as_bytes());
    if s.peek_ws() != Some(b'{') {
        return false;
    }
    s.pos += 1;
    if s.peek_ws() == Some(b'}') {
        return true;
    }
    loop {
        let Ok(key) = s.key() else { return false };
        let Ok(value) = s.value(0, Limits::MAX_DEPTH_CAP) else {
            return false;
        };
        f(key.span.of(text), value.of(text));
        match s.peek_ws() {
            Some(b',') => s.pos += 1,
            Some(b'}') => return true,
            _ => return false,
        }
    }
}

/// `{"stream": n, "max": m}` → `(n, m)`, `m` defaulting to 1.
fn pull_params(params: Option<&RawValue>) -> Option<(u64, u64)> {
    let (mut stream, mut max, mut bad) = (None, Some(1), false);
    let ok = members(params?.get(), |key, value| match key {
        "stream" => {
            stream = value.parse::<u64>().ok().or_else(|| {
                bad = true;
                None
            })
        }
        "max" => {
            max = value.parse::<u64>().ok().or_else(|| {
                bad = true;
                None
            })
        }
        _ => {}
    });
    if !ok || bad {
        return None;
    }
    Some((stream?, max?))
}

/// The stream id in a `{"stream": id}` params object.
pub(crate) fn stream_param(params: Option<&RawValue>) -> Option<u64> {
    pull_params(params).map(|(s, _)| s)
}

/// The stream id in a stream-returning method's answer, `{"stream": n}`.
pub fn stream_id(result: &RawValue) -> Option<u64> {
    stream_param(Some(result))
}

/// The stream a stream-returning method's answer opened: its id from `{"stream": n}`, or
/// [`CallError::Decode`] when the answer is not that.
pub fn opened(result: &RawValue) -> Result<u64, CallError> {
    stream_id(result).ok_or_else(|| {
        CallError::Decode(serde::de::Error::custom(
            "the answer is not {\"stream\": id}",
        ))
    })
}

/// Why a stream ended early, as its reader reports it.
pub type StreamError = CallError;

/// What [`StreamReader::poll_item`] has.
#[derive(Debug)]
pub enum ReadItem {
    /// The next item, in order.
    Item(Box<RawValue>),
    /// Nothing yet: send the pulls [`StreamReader::next_pull`] asks for, and wait for their
    /// answers.
    Pending,
    /// The stream ended normally; every item has been read.
    End,
    /// The stream failed (the producer's error, a pull that timed out or was refused, the
    /// connection closed, a malformed answer); every item before the failure has been read.
    Failed(StreamError),
}

#[derive(Debug)]
enum Slot {
    Waiting(u64),
    Items(u64, Vec<Box<RawValue>>, bool),
    Failed(u64, StreamError),
}

impl Slot {
    fn seq(&self) -> u64 {
        match self {
            Slot::Waiting(s) | Slot::Items(s, ..) | Slot::Failed(s, _) => *s,
        }
    }
}

/// How a client reads a stream: the futures and blocking adapters' `Client::stream_raw`
/// take it, and build their [`StreamReader`] from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Pulls in flight at once (default 16): 1 is one round trip per answer.
    pub window: usize,
    /// Most items asked for per pull (default 64; the server may send fewer).
    pub max: u32,
    /// The deadline of the opening call and of each pull (a pull waits for the producer).
    pub timeout: crate::Timeout,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            window: 16,
            max: 64,
            timeout: crate::Timeout::Default,
        }
    }
}

impl StreamOptions {
    /// Options with this pipelining window and items per pull.
    pub fn new(window: usize, max: u32) -> Self {
        StreamOptions {
            window,
            max,
            ..StreamOptions::default()
        }
    }

    /// These options with `timeout` for the opening call and each pull.
    pub fn timeout(self, timeout: crate::Timeout) -> Self {
        StreamOptions { timeout, ..self }
    }

    /// The reader of stream `stream` these options make.
    pub fn reader(&self, stream: u64) -> StreamReader {
        StreamReader::new(stream, self.window, self.max)
    }
}

/// One stream's client side: which pulls to send (a window of them in flight), their
/// answers put back in order, the end and failures. It sends nothing: the adapter sends
/// each pull [`next_pull`](StreamReader::next_pull) asks for as a `rpc.stream.next` request
/// with [`pull_params`](StreamReader::pull_params), hands each answer to
/// [`handle_answer`](StreamReader::handle_answer) with the pull's sequence number, and reads
/// items with [`poll_item`](StreamReader::poll_item). Memory is bounded by the window: at
/// most `window` pull answers (each at most `max` items) are held at once.
#[derive(Debug)]
pub struct StreamReader {
    stream: u64,
    window: usize,
    params: Box<RawValue>,
    next_seq: u64,
    slots: VecDeque<Slot>,
    items: VecDeque<Box<RawValue>>,
    /// No more pulls: an answer said done or failed, or the reader was cancelled.
    stopped: bool,
    /// What follows the last item in `items`.
    tail: Option<Result<(), StreamError>>,
    finished: bool,
}

impl StreamReader {
    /// A reader of stream `stream` keeping up to `window` pulls in flight, each asking for
    /// up to `max` items.
    pub fn new(stream: u64, window: usize, max: u32) -> Self {
        let mut text = String::from("{\"stream\":");
        push_u64(&mut text, stream);
        text.push_str(",\"max\":");
        push_u64(&mut text, u64::from(max.max(1)));
        text.push('}');
        StreamReader {
            stream,
            window: window.max(1),
            params: RawValue::from_validated(&text).to_owned(),
            next_seq: 0,
            slots: VecDeque::new(),
            items: VecDeque::new(),
            stopped: false,
            tail: None,
            finished: false,
        }
    }

    /// The stream id.
    pub fn stream(&self) -> u64 {
        self.stream
    }

    /// The params of every pull: `{"stream": id, "max": max}`.
    pub fn pull_params(&self) -> &RawValue {
        &self.params
    }

    /// The params of the cancel: `{"stream": id}`.
    pub fn cancel_params(&self) -> Box<RawValue> {
        let mut text = String::from("{\"stream\":");
        push_u64(&mut text, self.stream);
        text.push('}');
        RawValue::from_validated(&text).to_owned()
    }

    /// The sequence number of the next pull to send, when the window has room and the
    /// stream is not over; call it until `None` and send one pull per number.
    pub fn next_pull(&mut self) -> Option<u64> {
        if self.stopped || self.slots.len() >= self.window {
            return None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.slots.push_back(Slot::Waiting(seq));
        Some(seq)
    }

    /// Pulls sent and not answered yet.
    pub fn in_flight(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s, Slot::Waiting(_)))
            .count()
    }

    /// Items and answers held, not yet read.
    pub fn buffered_items(&self) -> usize {
        let held: usize = self
            .slots
            .iter()
            .map(|s| match s {
                Slot::Items(_, items, _) => items.len(),
                _ => 0,
            })
            .sum();
        held + self.items.len()
    }

    /// The answer to pull `seq`: its result, or why it ended without one
    /// ([`CallError::Rpc`] for an error answer, [`CallError::Ended`] for a timeout or a
    /// close). Answers to pulls the reader no longer waits for are ignored.
    pub fn handle_answer(&mut self, seq: u64, answer: Result<&RawValue, StreamError>) {
        let Some(slot) = self.slots.iter_mut().find(|s| s.seq() == seq) else {
            return;
        };
        if !matches!(slot, Slot::Waiting(_)) {
            return;
        }
        *slot = match answer.and_then(parse_answer) {
            Ok((items, done)) => {
                self.stopped |= done;
                Slot::Items(seq, items, done)
            }
            Err(e) => {
                self.stopped = true;
                Slot::Failed(seq, e)
            }
        };
    }

    /// The next item in order, or what stands in its way.
    pub fn poll_item(&mut self) -> ReadItem {
        loop {
            if let Some(item) = self.items.pop_front() {
                return ReadItem::Item(item);
            }
            if let Some(tail) = self.tail.take() {
                self.finish();
                return match tail {
                    Ok(()) => ReadItem::End,
                    Err(e) => ReadItem::Failed(e),
                };
            }
            if self.finished {
                return ReadItem::End;
            }
            match self.slots.front() {
                Some(Slot::Waiting(_)) | None => return ReadItem::Pending,
                Some(_) => {}
            }
            match self.slots.pop_front() {
                Some(Slot::Items(_, items, done)) => {
                    self.items.extend(items);
                    if done {
                        self.tail = Some(Ok(()));
                    }
                }
                Some(Slot::Failed(_, e)) => self.tail = Some(Err(e)),
                _ => {}
            }
        }
    }

    fn finish(&mut self) {
        self.finished = true;
        self.stopped = true;
        self.slots.clear();
        self.items.clear();
    }

    /// True once [`poll_item`](StreamReader::poll_item) reported the end or a failure.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Stops the reader: no more pulls, nothing more to read. Returns true when the peer
    /// should be sent `rpc.stream.cancel` (the stream may still be open there).
    pub fn cancel(&mut self) -> bool {
        let open = !self.stopped;
        self.finish();
        self.tail = None;
        open
    }
}

/// `{"items": [...], "done": bool}` → the items and the flag.
fn parse_answer(answer: &RawValue) -> Result<(Vec<Box<RawValue>>, bool), StreamError> {
    let text = answer.get();
    let (mut items, mut done, mut ok) = (None, None, true);
    let object = members(text, |key, value| match key {
        "items" => items = split_array(value),
        "done" => {
            done = match value {
                "true" => Some(true),
                "false" => Some(false),
                _ => {
                    ok = false;
                    None
                }
            }
        }
        _ => {}
    });
    match (object && ok, items, done) {
        (true, Some(items), Some(done)) => Ok((items, done)),
        _ => Err(CallError::Decode(serde::de::Error::custom(
            "malformed stream answer: expected {\"items\": [...], \"done\": true|false}",
        ))),
    }
}

/// The elements of a JSON array (already validated), each owned.
fn split_array(text: &str) -> Option<Vec<Box<RawValue>>> {
    let mut s = Scanner::new(text.as_bytes());
    if s.peek_ws()? != b'[' {
        return None;
    }
    s.pos += 1;
    let mut out = Vec::new();
    if s.peek_ws()? == b']' {
        return Some(out);
    }
    loop {
        let span = s.value(0, Limits::MAX_DEPTH_CAP).ok()?;
        out.push(RawValue::from_validated(span.of(text)).to_owned());
        match s.peek_ws()? {
            b',' => s.pos += 1,
            b']' => return Some(out),
            _ => return None,
        }
    }
}

/// A pull that ended without an answer, as a reader failure.
pub fn ended(reason: EndReason) -> StreamError {
    CallError::Ended(reason)
}
