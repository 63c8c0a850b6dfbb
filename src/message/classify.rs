//! Classification of one incoming frame, exactly per JSON-RPC 2.0 sections 4 to 6.
//!
//! One pass over the bytes validates the JSON, finds the envelope members of the message
//! (or of each batch element) and records where they are. Nothing is copied: the entries
//! handed out borrow from the frame. A batch's entries are recorded in a buffer the
//! [`Classifier`] keeps and reuses, so with warm buffers classification allocates nothing.

use alloc::borrow::Cow;
use alloc::vec::Vec;
use core::fmt;

use super::{Incoming, Invalid, InvalidReason, Notification, Request, Response, Version};
use crate::error::{code, ErrorObject, ProtocolError};
use crate::id::{Id, IdKind};
use crate::json::{self, JsonError, Scanner, Span, StrTok};
use crate::limits::Limits;
use crate::raw::RawValue;

/// Turns frames into classified entries; keeps the limits and a reusable entry buffer.
///
/// ```
/// use sansrpc::message::{Classified, Classifier, Incoming};
///
/// let mut classifier = Classifier::default();
/// let frame = br#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#;
/// match classifier.classify(frame) {
///     Classified::Single(Incoming::Request(req)) => {
///         assert_eq!(req.method, "add");
///         assert_eq!(req.params.unwrap().get(), "[1,2]");
///         assert_eq!(req.id.as_u64(), Some(1));
///     }
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(Debug, Default)]
pub struct Classifier {
    limits: Limits,
    entries: Vec<RawEntry>,
}

/// The classification of one frame.
#[derive(Debug)]
pub enum Classified<'a> {
    /// The frame held one message (or one invalid object).
    Single(Incoming<'a>),
    /// The frame held a non-empty batch; iterate over its entries. Answer with one array
    /// holding a response for every entry that [needs one](Incoming::needs_response), or
    /// nothing at all when none does.
    Batch(BatchEntries<'a>),
    /// The frame as a whole is refused: answer with [`Rejection::error`] and id `null`.
    Rejected(Rejection),
}

impl Classified<'_> {
    /// The rejection, when the frame as a whole was refused.
    pub fn rejection(&self) -> Option<Rejection> {
        match self {
            Classified::Rejected(r) => Some(*r),
            _ => None,
        }
    }
}

/// Why a whole frame is refused; the answer is one error response with id `null`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rejection {
    /// Not valid JSON (`-32700`).
    Parse,
    /// Valid JSON, but neither an object nor an array (`-32600`).
    NotObjectOrArray,
    /// An empty array (`-32600`).
    EmptyBatch,
    /// More batch entries than [`Limits::max_batch_len`] (`-32003`, or `-32600` when
    /// [`Limits::batch_too_large_as_invalid_request`] is set).
    BatchTooLarge,
    /// Nesting deeper than [`Limits::max_depth`] (`-32700` "Parse error: nesting too
    /// deep"): the text could not be parsed within the limit, valid JSON or not.
    TooDeep,
    /// A frame longer than [`Limits::max_frame_bytes`] (`-32004`).
    FrameTooLarge,
}

impl Rejection {
    /// The error object to answer with.
    pub fn error(self, limits: &Limits) -> ErrorObject<'static> {
        match self {
            Rejection::Parse => ErrorObject::parse_error(),
            Rejection::NotObjectOrArray => ErrorObject::fixed(
                code::INVALID_REQUEST,
                "Invalid Request: expected an object or an array",
            ),
            Rejection::EmptyBatch => {
                ErrorObject::fixed(code::INVALID_REQUEST, "Invalid Request: empty batch")
            }
            Rejection::BatchTooLarge if limits.batch_too_large_as_invalid_request => {
                ErrorObject::fixed(code::INVALID_REQUEST, "Invalid Request: batch too large")
            }
            Rejection::BatchTooLarge => {
                ErrorObject::fixed(code::BATCH_TOO_LARGE, "Batch too large")
            }
            Rejection::TooDeep => {
                ErrorObject::fixed(code::PARSE_ERROR, "Parse error: nesting too deep")
            }
            Rejection::FrameTooLarge => {
                ErrorObject::fixed(code::REQUEST_TOO_LARGE, "Request too large")
            }
        }
    }

    /// Writes the whole error response (id `null`).
    pub fn write_response(self, limits: &Limits, out: &mut Vec<u8>) {
        super::write_error_response(out, Version::V2, &Id::NULL, &self.error(limits));
    }
}

/// The entries of a batch, in the order the peer sent them.
#[derive(Debug, Clone)]
pub struct BatchEntries<'a> {
    frame: &'a str,
    entries: core::slice::Iter<'a, RawEntry>,
}

impl<'a> Iterator for BatchEntries<'a> {
    type Item = Incoming<'a>;

    #[inline]
    fn next(&mut self) -> Option<Incoming<'a>> {
        self.entries.next().map(|e| e.materialize(self.frame))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl ExactSizeIterator for BatchEntries<'_> {}

impl Classifier {
    /// A classifier enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        Classifier {
            limits,
            entries: Vec::new(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Classifies one frame (a whole JSON text: a message or a batch).
    ///
    /// Never panics and never recurses; the work is linear in the frame's length and stops
    /// at the first byte that decides the outcome (a syntax error, a limit).
    pub fn classify<'a>(&'a mut self, frame: &'a [u8]) -> Classified<'a> {
        match self.scan(frame) {
            // SAFETY (both arms): `scan` returned `Ok` for this frame.
            Ok(Shape::Single) => {
                Classified::Single(self.entries[0].materialize(unsafe { frame_str(frame) }))
            }
            Ok(Shape::Batch) => Classified::Batch(BatchEntries {
                frame: unsafe { frame_str(frame) },
                entries: self.entries.iter(),
            }),
            Err(r) => Classified::Rejected(r),
        }
    }

    /// Classifies `frame` into positions: a single entry or a batch's, then in
    /// [`Classifier::entries`]. On `Ok`, `frame` is known to be valid UTF-8 JSON.
    ///
    /// Each entry is written where it stays, in `entries`: returned by value, it was copied
    /// on as soon as it was written, in wider pieces than its fields were stored in, and
    /// every such copy stalled on store-to-load forwarding.
    pub(crate) fn scan(&mut self, frame: &[u8]) -> Result<Shape, Rejection> {
        self.entries.clear();
        if frame.len() > self.limits.max_frame_bytes {
            return Err(Rejection::FrameTooLarge);
        }
        scan_frame(frame, &self.limits, &mut self.entries)
    }

    /// Takes the entries the last [`Classifier::scan`] found, for a caller that reads them
    /// while changing other state; give them back with [`Classifier::restore_entries`] (it
    /// keeps the allocation).
    pub(crate) fn take_entries(&mut self) -> Vec<RawEntry> {
        core::mem::take(&mut self.entries)
    }

    /// Gives back what [`Classifier::take_entries`] took.
    pub(crate) fn restore_entries(&mut self, entries: Vec<RawEntry>) {
        self.entries = entries;
    }
}

/// One message's bytes, owned, with what a [`Classifier`] found in them when one has
/// scanned them already: a connection handed it
/// ([`Connection::handle_scanned_tagged`](crate::Connection::handle_scanned_tagged)) reads
/// the entries found rather than scanning the bytes a second time, when it scans with the
/// same [`Limits`]. The Streamable HTTP machine makes them, for the body it classified
/// (`sansrpc_mcp::streamable::Endpoint::handle_request_owned`);
/// [`Scanned::new`] makes one not scanned yet.
///
/// The bytes cannot be changed once scanned: what was found stays true of them.
pub struct Scanned {
    frame: Vec<u8>,
    found: Option<Found>,
}

/// What a scan found, under these limits.
struct Found {
    entries: Entries,
    limits: Limits,
}

/// The entries a scan found: a single message's, copied out (the classifier keeps its
/// vector, and no other is allocated), or a batch's.
pub(crate) enum Entries {
    One(RawEntry),
    Batch(Vec<RawEntry>),
}

impl Scanned {
    /// `message`, not scanned: the connection scans it.
    pub fn new(message: Vec<u8>) -> Self {
        Scanned {
            frame: message,
            found: None,
        }
    }

    /// The message's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.frame
    }

    /// Whether what a scan found comes with them.
    pub fn is_scanned(&self) -> bool {
        self.found.is_some()
    }

    /// The bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.frame
    }

    /// What was found, taken out when it was found under `limits` (from then on, the
    /// bytes are as if not scanned).
    pub(crate) fn take_found(&mut self, limits: &Limits) -> Option<Entries> {
        match self.found.take() {
            Some(found) if found.limits == *limits => Some(found.entries),
            _ => None,
        }
    }
}

impl fmt::Debug for Scanned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scanned")
            .field("bytes", &self.frame.len())
            .field("scanned", &self.found.is_some())
            .finish()
    }
}

impl Classifier {
    /// `frame`, with what the last [`classify`](Classifier::classify) found in it, for a
    /// connection to read rather than scan it again
    /// ([`Connection::handle_scanned_tagged`](crate::Connection::handle_scanned_tagged)).
    /// The caller passes the bytes classified, unchanged, and `batch`: whether that
    /// classification was [`Classified::Batch`] (else it was [`Classified::Single`]; a
    /// rejected frame is handed on with [`Scanned::new`]).
    ///
    /// The connection reads the frame as text: bytes that are not (so not the frame
    /// classified), or no classification of the shape named (none left, as after a
    /// rejected frame or once a batch's entries were handed on), go on as if not scanned
    /// ([`Scanned::new`]) and are scanned again. Other bytes than those classified may be
    /// misread, or panic on a position they do not have; never read as text they are not.
    pub fn scanned(&mut self, frame: Vec<u8>, batch: bool) -> Scanned {
        let shaped = match batch {
            false => self.entries.len() == 1,
            true => !self.entries.is_empty(),
        };
        if !shaped || core::str::from_utf8(&frame).is_err() {
            return Scanned::new(frame);
        }
        let entries = match batch {
            false => Entries::One(self.entries[0]),
            true => Entries::Batch(self.take_entries()),
        };
        Scanned {
            frame,
            found: Some(Found {
                entries,
                limits: self.limits,
            }),
        }
    }
}

/// Bytes the scanner has validated, as text, without checking them again.
///
/// # Safety
///
/// `bytes` must be valid UTF-8, which holds for exactly two kinds of input:
/// - a whole frame (or a slice of one on entry boundaries) for which [`Classifier::scan`]
///   returned `Ok`: the scanner visited every byte, matched bytes outside strings against
///   the ASCII grammar and checked every byte inside a string to form valid UTF-8;
/// - the contents of one string token the scanner has returned (`Scanner::string`,
///   `Scanner::key`), which it checked the same way before returning it.
///
/// Debug builds check it; the fuzz targets re-check it.
#[inline]
pub(crate) unsafe fn frame_str(bytes: &[u8]) -> &str {
    debug_assert!(core::str::from_utf8(bytes).is_ok());
    // SAFETY: the caller's contract above.
    unsafe { core::str::from_utf8_unchecked(bytes) }
}

/// What a frame that scanned well is; its entries are in [`Classifier::entries`], one for a
/// single message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Single,
    Batch,
}

fn scan_frame(
    frame: &[u8],
    limits: &Limits,
    entries: &mut Vec<RawEntry>,
) -> Result<Shape, Rejection> {
    let mut s = Scanner::new(frame);
    let reject = |e: JsonError| match e {
        JsonError::Syntax => Rejection::Parse,
        JsonError::TooDeep => Rejection::TooDeep,
    };
    let max_depth = limits.max_depth.min(Limits::MAX_DEPTH_CAP);
    match s.peek_ws() {
        Some(b'{') => {
            if max_depth < 1 {
                return Err(Rejection::TooDeep);
            }
            entries.push(RawEntry::PLACEHOLDER);
            scan_entry(&mut s, 1, limits, &mut entries[0]).map_err(reject)?;
            if !s.at_end() {
                return Err(Rejection::Parse);
            }
            Ok(Shape::Single)
        }
        Some(b'[') => {
            if max_depth < 1 {
                return Err(Rejection::TooDeep);
            }
            s.pos += 1;
            if s.peek_ws() == Some(b']') {
                s.pos += 1;
                return if s.at_end() {
                    Err(Rejection::EmptyBatch)
                } else {
                    Err(Rejection::Parse)
                };
            }
            loop {
                if entries.len() == limits.max_batch_len {
                    // Too many entries, but the whole frame is still checked: text that is
                    // not JSON is a parse error (-32700) whatever its length, as the spec
                    // asks. Scanning costs no more than the entries before did.
                    skip_batch_tail(&mut s, max_depth).map_err(reject)?;
                    return if s.at_end() {
                        Err(Rejection::BatchTooLarge)
                    } else {
                        Err(Rejection::Parse)
                    };
                }
                entries.push(RawEntry::PLACEHOLDER);
                let slot = entries.last_mut().expect("just pushed");
                if s.peek_ws() == Some(b'{') {
                    if max_depth < 2 {
                        return Err(Rejection::TooDeep);
                    }
                    scan_entry(&mut s, 2, limits, slot).map_err(reject)?;
                } else {
                    s.value(1, max_depth).map_err(reject)?;
                    *slot = RawEntry::invalid(IdTok::Absent, InvalidReason::NotAnObject);
                }
                match s.peek_ws() {
                    Some(b',') => s.pos += 1,
                    Some(b']') => {
                        s.pos += 1;
                        break;
                    }
                    _ => return Err(Rejection::Parse),
                }
            }
            if !s.at_end() {
                return Err(Rejection::Parse);
            }
            Ok(Shape::Batch)
        }
        Some(_) => {
            s.value(0, max_depth).map_err(reject)?;
            if s.at_end() {
                Err(Rejection::NotObjectOrArray)
            } else {
                Err(Rejection::Parse)
            }
        }
        None => Err(Rejection::Parse),
    }
}

/// Scans the rest of a batch after the entry limit: values separated by commas up to the
/// closing bracket, with nothing recorded.
fn skip_batch_tail(s: &mut Scanner<'_>, max_depth: u32) -> Result<(), JsonError> {
    loop {
        s.value(1, max_depth)?;
        match s.peek_ws() {
            Some(b',') => s.pos += 1,
            Some(b']') => {
                s.pos += 1;
                return Ok(());
            }
            _ => return Err(JsonError::Syntax),
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
enum IdTok {
    #[default]
    Absent,
    Null,
    Number(Span),
    String(Span),
    Bad,
    TooLong,
}

impl IdTok {
    fn valid(self) -> Option<(IdKind, Span)> {
        match self {
            IdTok::Null => Some((IdKind::Null, Span::default())),
            IdTok::Number(s) => Some((IdKind::Number, s)),
            IdTok::String(s) => Some((IdKind::String, s)),
            IdTok::Absent | IdTok::Bad | IdTok::TooLong => None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Request,
    Notification,
    Success,
    Failure,
    Invalid(InvalidReason),
    BadResponse(ProtocolError),
}

/// One classified entry, as positions in the frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawEntry {
    kind: Kind,
    version: Version,
    id: IdTok,
    method: StrTok,
    /// `params` for calls, `result` for successes, `data` for failures.
    payload: Option<Span>,
    code: i64,
    message: StrTok,
}

impl RawEntry {
    /// What a slot holds before its entry is scanned into it.
    const PLACEHOLDER: RawEntry = RawEntry::invalid(IdTok::Absent, InvalidReason::NotAnObject);

    const fn invalid(id: IdTok, reason: InvalidReason) -> RawEntry {
        RawEntry {
            kind: Kind::Invalid(reason),
            version: Version::V2,
            id,
            method: StrTok::EMPTY,
            payload: None,
            code: 0,
            message: StrTok::EMPTY,
        }
    }

    /// The method of a request (`Some((true, method))`) or notification (`Some((false,
    /// method))`) written without escapes, read without materializing the entry; `None`
    /// for anything else.
    pub(crate) fn plain_method<'a>(&self, frame: &'a str) -> Option<(bool, &'a str)> {
        let request = match self.kind {
            Kind::Request => true,
            Kind::Notification => false,
            _ => return None,
        };
        (!self.method.escaped).then(|| (request, self.method.span.of(frame)))
    }

    /// True for a request (a call with an id).
    #[inline]
    pub(crate) fn is_request(&self) -> bool {
        matches!(self.kind, Kind::Request)
    }

    /// The id and version of a request (see [`RawEntry::is_request`]), read without
    /// materializing the entry.
    #[inline]
    pub(crate) fn request_id<'a>(&self, frame: &'a str) -> (Id<'a>, Version) {
        debug_assert!(self.is_request());
        (self.id_in(frame), self.version)
    }

    /// The id, `null` when absent or invalid.
    #[inline(always)]
    fn id_in<'a>(&self, frame: &'a str) -> Id<'a> {
        match self.id.valid() {
            Some((IdKind::Null, _)) | None => Id::NULL,
            Some((kind, span)) => Id::from_token(kind, span.of(frame)),
        }
    }

    /// `params`, `result` or `data`, as its kind has it.
    #[inline(always)]
    fn payload_in<'a>(&self, frame: &'a str) -> Option<Cow<'a, RawValue>> {
        self.payload
            .map(|p| Cow::Borrowed(RawValue::from_validated(p.of(frame))))
    }

    /// The request this entry is (its kind must be `Request`), built where it goes.
    #[inline(always)]
    pub(crate) fn request<'a>(&self, frame: &'a str) -> Request<'a> {
        debug_assert!(matches!(self.kind, Kind::Request));
        Request {
            id: self.id_in(frame),
            method: text(frame, self.method),
            params: self.payload_in(frame),
            version: self.version,
        }
    }

    /// The notification this entry is (its kind must be `Notification`), built where it goes.
    #[inline(always)]
    pub(crate) fn notification<'a>(&self, frame: &'a str) -> Notification<'a> {
        debug_assert!(matches!(self.kind, Kind::Notification));
        Notification {
            method: text(frame, self.method),
            params: self.payload_in(frame),
            version: self.version,
        }
    }

    /// The outcome of the response this entry is (its kind must be `Success` or
    /// `Failure`), built where it goes.
    #[inline(always)]
    pub(crate) fn outcome<'a>(&self, frame: &'a str) -> Result<Cow<'a, RawValue>, ErrorObject<'a>> {
        debug_assert!(matches!(self.kind, Kind::Success | Kind::Failure));
        match self.kind {
            Kind::Failure => Err(ErrorObject {
                code: self.code,
                message: text(frame, self.message),
                data: self.payload_in(frame),
            }),
            _ => Ok(self
                .payload_in(frame)
                .unwrap_or(Cow::Borrowed(RawValue::NULL))),
        }
    }

    #[inline]
    pub(crate) fn materialize<'a>(&self, frame: &'a str) -> Incoming<'a> {
        let id = || self.id_in(frame);
        match self.kind {
            Kind::Request => Incoming::Request(self.request(frame)),
            Kind::Notification => Incoming::Notification(self.notification(frame)),
            Kind::Success | Kind::Failure => Incoming::Response(Response {
                id: id(),
                result: self.outcome(frame),
                version: self.version,
            }),
            Kind::Invalid(reason) => Incoming::Invalid(Invalid { id: id(), reason }),
            Kind::BadResponse(error) => Incoming::BadResponse {
                id: self.id.valid().map(|_| id()),
                error,
            },
        }
    }
}

/// The characters a string token stands for: borrowed unless it has escapes.
///
/// Small enough to inline, so the `Cow` is built where it goes (built here and returned, it
/// was stored in pieces and read back whole at once: a stalled store-to-load forward).
#[inline(always)]
fn text(frame: &str, tok: StrTok) -> Cow<'_, str> {
    let raw = tok.span.of(frame);
    if tok.escaped {
        Cow::Owned(unescape(raw))
    } else {
        Cow::Borrowed(raw)
    }
}

/// The characters of a string token with escapes.
#[cold]
#[inline(never)]
fn unescape(raw: &str) -> alloc::string::String {
    json::Unescape::new(raw).collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Member {
    Jsonrpc,
    Method,
    Params,
    Id,
    Result,
    Error,
    Other,
}

const MEMBERS: [(&str, Member); 6] = [
    ("jsonrpc", Member::Jsonrpc),
    ("method", Member::Method),
    ("params", Member::Params),
    ("id", Member::Id),
    ("result", Member::Result),
    ("error", Member::Error),
];

#[inline]
fn member(frame: &[u8], key: StrTok) -> Member {
    let raw = &frame[key.span.start..key.span.end];
    if !key.escaped {
        // By length, then as fixed-size arrays: compared inline, without a call to
        // `memcmp` per member of every message.
        return match raw.len() {
            2 if raw == b"id" => Member::Id,
            5 if raw == b"error" => Member::Error,
            6 => match <[u8; 6]>::try_from(raw) {
                Ok(k) if k == *b"method" => Member::Method,
                Ok(k) if k == *b"params" => Member::Params,
                Ok(k) if k == *b"result" => Member::Result,
                _ => Member::Other,
            },
            7 if <[u8; 7]>::try_from(raw).is_ok_and(|k| k == *b"jsonrpc") => Member::Jsonrpc,
            _ => Member::Other,
        };
    }
    // SAFETY: `key` is a string token the scanner returned, so its contents are checked.
    let raw = unsafe { frame_str(raw) };
    MEMBERS
        .iter()
        .find(|(name, _)| json::token_eq(raw, true, name))
        .map_or(Member::Other, |&(_, m)| m)
}

/// What the members of one object said, before deciding what the object is.
#[derive(Default)]
struct Members {
    /// `Some(true)` when `jsonrpc` is exactly "2.0".
    jsonrpc: Option<bool>,
    /// `Some(Ok(..))` for a string method, `Some(Err(()))` for any other type.
    method: Option<Result<StrTok, ()>>,
    params: Option<(Span, u8)>,
    id: IdTok,
    id_seen: bool,
    result: Option<Span>,
    /// `Some(Ok(None))` for `"error": null`, which only JSON-RPC 1.0 allows.
    error: Option<Result<Option<ErrorFields>, ProtocolError>>,
    duplicate: bool,
}

#[derive(Clone, Copy)]
struct ErrorFields {
    code: i64,
    message: StrTok,
    data: Option<Span>,
}

/// Scans the object at `pos` (its `{`), which sits at nesting depth `depth`, into `out`.
fn scan_entry(
    s: &mut Scanner<'_>,
    depth: u32,
    limits: &Limits,
    out: &mut RawEntry,
) -> Result<(), JsonError> {
    let max_depth = limits.max_depth.min(Limits::MAX_DEPTH_CAP);
    let mut m = Members::default();
    s.pos += 1;
    if s.peek_ws() == Some(b'}') {
        s.pos += 1;
    } else {
        loop {
            let key = s.key()?;
            let which = member(s.bytes, key);
            let first = s.peek_ws().ok_or(JsonError::Syntax)?;
            match which {
                Member::Jsonrpc => {
                    m.duplicate |= m.jsonrpc.is_some();
                    m.jsonrpc = Some(if first == b'"' {
                        let tok = s.string()?;
                        let raw = &s.bytes[tok.span.start..tok.span.end];
                        raw == b"2.0"
                            // SAFETY: the contents of a string token the scanner returned.
                            || (tok.escaped
                                && json::token_eq(unsafe { frame_str(raw) }, true, "2.0"))
                    } else {
                        s.value(depth, max_depth)?;
                        false
                    });
                }
                Member::Method => {
                    m.duplicate |= m.method.is_some();
                    m.method = Some(if first == b'"' {
                        Ok(s.string()?)
                    } else {
                        s.value(depth, max_depth)?;
                        Err(())
                    });
                }
                Member::Params => {
                    m.duplicate |= m.params.is_some();
                    m.params = Some((s.value(depth, max_depth)?, first));
                }
                Member::Id => {
                    m.duplicate |= m.id_seen;
                    m.id_seen = true;
                    m.id = match first {
                        b'"' => {
                            let tok = s.string()?;
                            if tok.span.end - tok.span.start > limits.max_id_len {
                                IdTok::TooLong
                            } else {
                                IdTok::String(tok.span)
                            }
                        }
                        b'-' | b'0'..=b'9' => {
                            let span = s.number()?;
                            if span.end - span.start > limits.max_id_len {
                                IdTok::TooLong
                            } else {
                                IdTok::Number(span)
                            }
                        }
                        b'n' => {
                            s.literal(b"null")?;
                            IdTok::Null
                        }
                        _ => {
                            s.value(depth, max_depth)?;
                            IdTok::Bad
                        }
                    };
                }
                Member::Result => {
                    m.duplicate |= m.result.is_some();
                    m.result = Some(s.value(depth, max_depth)?);
                }
                Member::Error => {
                    m.duplicate |= m.error.is_some();
                    m.error = Some(match first {
                        b'{' => {
                            if depth + 1 > max_depth {
                                return Err(JsonError::TooDeep);
                            }
                            scan_error(s, depth + 1, max_depth)?.map(Some)
                        }
                        b'n' => {
                            s.literal(b"null")?;
                            Ok(None)
                        }
                        _ => {
                            s.value(depth, max_depth)?;
                            Err(ProtocolError::ErrorNotObject)
                        }
                    });
                }
                Member::Other => {
                    s.value(depth, max_depth)?;
                }
            }
            if continue_members(s)? {
                continue;
            }
            break;
        }
    }
    decide(s.bytes, m, limits, out);
    Ok(())
}

/// After a member: consumes `,` (returns true) or `}` (returns false).
#[inline]
fn continue_members(s: &mut Scanner<'_>) -> Result<bool, JsonError> {
    match s.peek_ws() {
        Some(b',') => {
            s.pos += 1;
            Ok(true)
        }
        Some(b'}') => {
            s.pos += 1;
            Ok(false)
        }
        _ => Err(JsonError::Syntax),
    }
}

/// Scans an error object at `pos` (its `{`), which sits at depth `depth`.
fn scan_error(
    s: &mut Scanner<'_>,
    depth: u32,
    max_depth: u32,
) -> Result<Result<ErrorFields, ProtocolError>, JsonError> {
    s.pos += 1;
    let mut code: Option<Result<i64, ()>> = None;
    let mut message: Option<Result<StrTok, ()>> = None;
    let mut data = None;
    let mut duplicate = false;
    if s.peek_ws() == Some(b'}') {
        s.pos += 1;
    } else {
        loop {
            let key = s.key()?;
            let raw = &s.bytes[key.span.start..key.span.end];
            let name = |n: &str| {
                raw == n.as_bytes()
                    // SAFETY: the contents of a key token the scanner returned.
                    || (key.escaped && json::token_eq(unsafe { frame_str(raw) }, true, n))
            };
            let first = s.peek_ws().ok_or(JsonError::Syntax)?;
            if name("code") {
                duplicate |= code.is_some();
                code = Some(if matches!(first, b'-' | b'0'..=b'9') {
                    let span = s.number()?;
                    parse_i64(&s.bytes[span.start..span.end]).ok_or(())
                } else {
                    s.value(depth, max_depth)?;
                    Err(())
                });
            } else if name("message") {
                duplicate |= message.is_some();
                message = Some(if first == b'"' {
                    Ok(s.string()?)
                } else {
                    s.value(depth, max_depth)?;
                    Err(())
                });
            } else if name("data") {
                duplicate |= data.is_some();
                data = Some(s.value(depth, max_depth)?);
            } else {
                s.value(depth, max_depth)?;
            }
            if !continue_members(s)? {
                break;
            }
        }
    }
    Ok(match (code, message) {
        _ if duplicate => Err(ProtocolError::DuplicateMember),
        (None, _) => Err(ProtocolError::MissingErrorCode),
        (Some(Err(())), _) => Err(ProtocolError::NonIntegerErrorCode),
        (_, None) => Err(ProtocolError::MissingErrorMessage),
        (_, Some(Err(()))) => Err(ProtocolError::NonStringErrorMessage),
        (Some(Ok(code)), Some(Ok(message))) => Ok(ErrorFields {
            code,
            message,
            data,
        }),
    })
}

/// Parses a JSON number token that is a plain integer fitting an `i64`.
fn parse_i64(raw: &[u8]) -> Option<i64> {
    let (neg, digits) = match raw.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, raw),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        let d = i64::from(d - b'0');
        n = n.checked_mul(10)?;
        n = if neg {
            n.checked_sub(d)?
        } else {
            n.checked_add(d)?
        };
    }
    Some(n)
}

/// Decides what an object is from its members (JSON-RPC 2.0 sections 4 and 5).
fn decide(frame: &[u8], mut m: Members, limits: &Limits, entry: &mut RawEntry) {
    let version = match m.jsonrpc {
        Some(true) => Some(Version::V2),
        None if limits.accept_v1 => Some(Version::V1),
        _ => None,
    };
    *entry = RawEntry::invalid(m.id, InvalidReason::MissingMethod);
    entry.version = version.unwrap_or(Version::V2);
    let bad_id = match m.id {
        IdTok::Bad => Some(InvalidReason::BadId),
        IdTok::TooLong => Some(InvalidReason::IdTooLong),
        _ => None,
    };
    if let Some(method) = m.method {
        // A request or a notification (section 4).
        let reason = if m.duplicate {
            Some(InvalidReason::DuplicateMember)
        } else if let Some(reason) = bad_id {
            Some(reason)
        } else if version.is_none() {
            Some(InvalidReason::BadVersion)
        } else if method.is_err() {
            Some(InvalidReason::MethodNotString)
        } else if matches!(m.params, Some((_, first)) if first != b'[' && first != b'{') {
            // The scanner took the value whole: one starting with `n` is the literal `null`.
            if m.params.is_some_and(|(_, first)| first == b'n') && limits.null_params_as_absent {
                m.params = None;
                None
            } else {
                Some(InvalidReason::BadParams)
            }
        } else {
            None
        };
        if let Some(reason) = reason {
            entry.kind = Kind::Invalid(reason);
            return;
        }
        entry.method = method.unwrap_or_default();
        entry.payload = m.params.map(|(span, _)| span);
        let notification = match m.id {
            IdTok::Absent => true,
            IdTok::Null => version == Some(Version::V1),
            _ => false,
        };
        entry.kind = if notification {
            Kind::Notification
        } else {
            Kind::Request
        };
        return;
    }
    if m.result.is_some() || m.error.is_some() {
        // A response (section 5): never answered, so problems are protocol errors.
        let bad = |e| Kind::BadResponse(e);
        let v1 = version == Some(Version::V1);
        let result_is_null = m.result.is_some_and(|r| &frame[r.start..r.end] == b"null");
        let error = match m.error {
            Some(Ok(None)) if v1 => None,
            Some(Ok(None)) => Some(Err(ProtocolError::ErrorNotObject)),
            Some(Ok(Some(fields))) => Some(Ok(fields)),
            Some(Err(e)) => Some(Err(e)),
            None => None,
        };
        // JSON-RPC 1.0 sends `"result": null` beside a real error.
        let result = if v1 && result_is_null && error.is_some() {
            None
        } else {
            m.result
        };
        entry.kind = if m.duplicate {
            bad(ProtocolError::DuplicateMember)
        } else if version.is_none() {
            bad(ProtocolError::BadVersion)
        } else {
            match (m.id, result, error) {
                (IdTok::Absent, ..) => bad(ProtocolError::MissingId),
                (IdTok::Bad, ..) => bad(ProtocolError::InvalidId),
                (IdTok::TooLong, ..) => bad(ProtocolError::IdTooLong),
                (_, Some(_), Some(_)) => bad(ProtocolError::ResultAndError),
                (_, _, Some(Err(e))) => bad(e),
                (_, _, Some(Ok(fields))) => {
                    entry.code = fields.code;
                    entry.message = fields.message;
                    entry.payload = fields.data;
                    Kind::Failure
                }
                (_, Some(result), None) => {
                    entry.payload = Some(result);
                    Kind::Success
                }
                (_, None, None) => bad(ProtocolError::NoResultOrError),
            }
        };
        return;
    }
    // Neither a call nor a response.
    entry.kind = Kind::Invalid(if m.duplicate {
        InvalidReason::DuplicateMember
    } else if let Some(reason) = bad_id {
        reason
    } else if version.is_none() && m.jsonrpc.is_some() {
        InvalidReason::BadVersion
    } else {
        InvalidReason::MissingMethod
    });
}
