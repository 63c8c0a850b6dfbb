//! HTTP/1.1 for JSON-RPC (RFC 9112), without I/O, for a server: request heads and bodies
//! cut from the bytes a transport read, and response heads written. (The clients make
//! their requests with hyper's HTTP client.)
//!
//! JSON-RPC over HTTP is one message per POST body. [`RequestDecoder`] yields a request's
//! [`Head`] (what a JSON-RPC server decides on: the method, the media type, the body's
//! framing, keep-alive, `Expect: 100-continue`, the CORS headers), then its whole body: a
//! `Content-Length` body as it lies in the caller's buffer, a chunked one joined in place
//! (no copy out of the buffer, no allocation). Every way a peer can break the framing is a
//! [`HttpFault`] naming the status to answer before closing the connection: 400 for a
//! malformed head or chunk, 413 for a chunked body over the limit, 431 for a head over
//! [`MAX_HEAD`], 501 for a transfer coding other than `chunked`. A request declaring both
//! `Transfer-Encoding` and `Content-Length` is refused (400), never guessed at (request
//! smuggling).
//!
//! ```
//! use sansrpc::codec::http::{write_head, BodyKind, HttpStep, HttpMethod, RequestDecoder};
//!
//! let mut wire = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
//!     Content-Length: 2\r\n\r\n{}".to_vec();
//! let mut decoder = RequestDecoder::new(1 << 20);
//! let HttpStep::Head(used, head) = decoder.decode(&mut wire).unwrap() else { panic!() };
//! assert_eq!((head.method, head.json, head.body), (HttpMethod::Post, true, BodyKind::Length(2)));
//! assert!(head.keep_alive);
//! let HttpStep::Body(_, body) = decoder.decode(&mut wire[used..]).unwrap() else { panic!() };
//! assert_eq!(body, b"{}");
//!
//! let mut answer = Vec::new();
//! write_head(&mut answer, 200, Some(2), &[("content-type", b"application/json")]);
//! assert_eq!(answer, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n");
//! ```

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

mod origin;

pub use origin::{Hosts, Origins};

/// Longest request head accepted (request line and headers), and longest trailer section.
pub const MAX_HEAD: usize = 32 * 1024;

/// Most header fields in a request head.
const MAX_HEADERS: usize = 64;

/// Longest chunk-size line (the size and its extensions).
const MAX_CHUNK_LINE: usize = 1024;

/// The request method, as far as a JSON-RPC server tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// `POST`: a JSON-RPC exchange.
    Post,
    /// `OPTIONS`: a CORS preflight, or a question about the server.
    Options,
    /// `GET` (MCP's Streamable HTTP: a stream of the server's messages).
    Get,
    /// `DELETE` (MCP's Streamable HTTP: the end of a session).
    Delete,
    /// Any other method.
    Other,
}

/// How a request's body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// No body.
    None,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// What a JSON-RPC server needs from a request head.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Head {
    /// The method.
    pub method: HttpMethod,
    /// `Content-Type: application/json`, with no charset or a UTF-8 one.
    pub json: bool,
    /// How the body is framed.
    pub body: BodyKind,
    /// The connection stays open after the answer: HTTP/1.1 without `Connection: close`,
    /// HTTP/1.0 with `Connection: keep-alive`.
    pub keep_alive: bool,
    /// HTTP/1.0: the answer is written as HTTP/1.0 would read it.
    pub http10: bool,
    /// `Expect: 100-continue`: the client waits for `100 Continue` before it sends the body.
    pub expect_continue: bool,
    /// The `Origin` header, when present and text.
    pub origin: Option<String>,
    /// `Access-Control-Request-Method` is present (with `OPTIONS`: a CORS preflight).
    pub cors_request_method: bool,
    /// The `Access-Control-Request-Headers` header, when present and text.
    pub cors_request_headers: Option<String>,
    /// The request target (`/mcp?x=1`) and every header field as received, kept by a
    /// decoder made with [`RequestDecoder::keeping_fields`] (at most 64 fields, within the
    /// 32 KiB head) in one buffer; empty otherwise.
    pub fields: Fields,
}

impl Head {
    /// The value of the first field named `name` (ignoring ASCII case), from
    /// [`Head::fields`].
    pub fn field(&self, name: &str) -> Option<&[u8]> {
        self.fields.get(name)
    }

    /// [`field`](Head::field) for a `name` in lower case: a head whose field names are known
    /// to be lower case (made from `http`'s fields) is then read byte for byte.
    pub fn field_lowercase(&self, name: &str) -> Option<&[u8]> {
        self.fields.get_lowercase(name)
    }

    /// The request target (`/mcp?x=1`), from [`Head::fields`]; empty unless the decoder
    /// kept it.
    pub fn target(&self) -> &str {
        self.fields.target()
    }

    /// The head of a request an HTTP library has read already (hyper's `http::Request`,
    /// an HTTP/2 stream's head), judged by the rules [`RequestDecoder`] applies to a head
    /// it parses: the same fields read the same way (framing, `Content-Type`, `Expect`,
    /// `Origin`, CORS), the same bounds ([`MAX_HEAD`] bytes as an HTTP/1.1 head would
    /// take, at most 64 fields), and the same refusals (a name that is not a token, a
    /// value with a control byte, a target with a space or control byte: `BadRequest`).
    /// `fields` are (name, value) pairs in the order received; the target and fields are
    /// kept in [`Head::fields`] when `keep`. HTTP/1.1 semantics apply (`http10` false).
    pub fn from_parts<'a>(
        method: &str,
        target: &str,
        fields: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        keep: bool,
    ) -> Result<Head, HttpFault> {
        Head::judge_parts(method, target, fields, keep, true)
    }

    /// [`from_parts`](Head::from_parts) for fields whose names are known to be tokens and
    /// whose values are known to be free of control bytes other than tab: an
    /// `http::HeaderMap`'s, whose `HeaderName` and `HeaderValue` check both as they are
    /// made. They are not checked again; every other rule is the same. The names are
    /// taken to be in lower case, as `HeaderName` keeps them (what handlers are shown of
    /// them is not lowered again: [`Headers`]).
    pub fn from_checked_parts<'a>(
        method: &str,
        target: &str,
        fields: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        keep: bool,
    ) -> Result<Head, HttpFault> {
        Head::judge_parts(method, target, fields, keep, false)
    }

    fn judge_parts<'a>(
        method: &str,
        target: &str,
        fields: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        keep: bool,
        check_fields: bool,
    ) -> Result<Head, HttpFault> {
        if !is_token(method.as_bytes())
            || target.is_empty()
            || target.bytes().any(|b| b <= b' ' || b == 0x7f)
        {
            return Err(HttpFault::BadRequest);
        }
        let mut kept = match keep {
            true => Fields::with_capacity(256 + target.len(), 8),
            false => Fields::new(),
        };
        if keep {
            kept.set_target(target);
        }
        // `METHOD target HTTP/1.1\r\n`, each `name: value\r\n`, the empty line.
        let (mut bytes, mut count) = (method.len() + target.len() + 14, 0);
        // Each field judged as the decoder's parser would, then read: the first refusal
        // ends the reading.
        let mut refused = None;
        let mut judged = fields.into_iter().map_while(|(name, value)| {
            if refused.is_some() {
                return None;
            }
            bytes += name.len() + value.len() + 4;
            count += 1;
            let malformed = check_fields && !(is_token(name.as_bytes()) && is_field_value(value));
            refused = if malformed {
                Some(HttpFault::BadRequest)
            } else if bytes > MAX_HEAD || count > MAX_HEADERS {
                Some(HttpFault::HeadTooLarge)
            } else {
                None
            };
            if keep && refused.is_none() {
                match check_fields {
                    true => kept.push(name, value),
                    // `http`'s names: in lower case.
                    false => kept.push_lowercase(name, value),
                }
            }
            refused.is_none().then_some((name, value))
        });
        let mut head = Head::bare(method, false);
        let read = head.read_fields(judged.by_ref());
        // The fields after a field the reading refused are judged too: a refusal of the
        // parser's anywhere in a head comes first, as in the decoder.
        judged.for_each(drop);
        if let Some(fault) = refused {
            return Err(fault);
        }
        read?;
        head.fields = kept;
        Ok(head)
    }

    /// The head of a `method` request before its fields are read.
    fn bare(method: &str, http10: bool) -> Head {
        Head {
            method: match method {
                "POST" => HttpMethod::Post,
                "OPTIONS" => HttpMethod::Options,
                "GET" => HttpMethod::Get,
                "DELETE" => HttpMethod::Delete,
                _ => HttpMethod::Other,
            },
            json: false,
            body: BodyKind::None,
            keep_alive: !http10,
            http10,
            expect_continue: false,
            origin: None,
            cors_request_method: false,
            cors_request_headers: None,
            fields: Fields::new(),
        }
    }

    /// Reads what a server needs from the head's fields, and the body's framing from them.
    fn read_fields<'a>(
        &mut self,
        fields: impl Iterator<Item = (&'a str, &'a [u8])>,
    ) -> Result<(), HttpFault> {
        let http10 = self.http10;
        let head = self;
        let (mut length, mut coded, mut close) = (None::<u64>, false, false);
        for (name, value) in fields {
            // Told by its length first: most names are passed by at once, and each of the
            // others is compared with the one name of its length (two for 6).
            let name = name.as_bytes();
            match name.len() {
                14 if token_is(name, b"content-length") => content_length(&mut length, value)?,
                17 if token_is(name, b"transfer-encoding") => transfer_coding(&mut coded, value)?,
                12 if token_is(name, b"content-type") => head.json = is_json(value),
                10 if token_is(name, b"connection") => {
                    let (closes, keeps) = connection_tokens(value);
                    close |= closes;
                    head.keep_alive |= keeps && http10;
                }
                6 if token_is(name, b"expect") => {
                    head.expect_continue =
                        !http10 && trim(value).eq_ignore_ascii_case(b"100-continue");
                }
                6 if token_is(name, b"origin") => head.origin = text(value),
                29 if token_is(name, b"access-control-request-method") => {
                    head.cors_request_method = true;
                }
                30 if token_is(name, b"access-control-request-headers") => {
                    head.cors_request_headers = text(value);
                }
                _ => {}
            }
        }
        // `close` wins over `keep-alive`, wherever each came (RFC 9112 §9.6).
        head.keep_alive &= !close;
        head.body = match (coded, length) {
            // Both framings: refused rather than guessed at (request smuggling).
            (true, Some(_)) => return Err(HttpFault::BadRequest),
            // Transfer codings came with HTTP/1.1 (RFC 9112 §6.1).
            (true, None) if http10 => return Err(HttpFault::BadRequest),
            (true, None) => BodyKind::Chunked,
            (false, Some(0) | None) => BodyKind::None,
            (false, Some(n)) => BodyKind::Length(n),
        };
        Ok(())
    }
}

/// Whether the field name `name`, a token (RFC 9110 §5.6.2: every name a head's fields are
/// read with is one, checked by the parser or by `http`), is `lower` (lowercase letters and
/// `-`) in any case. Setting a byte's `0x20` bit makes an uppercase letter lowercase and
/// leaves a lowercase one and `-` as they are, and makes no other token byte a lowercase
/// letter or `-` (only `\r`, never in a token, would become `-`): so the names are compared
/// eight bytes at a time, each word with that bit set in every byte, the last word
/// overlapping the one before. One compare of a few words, where a byte-by-byte compare
/// unrolled for each name read was 260 instructions of a request's head.
#[inline]
fn token_is(name: &[u8], lower: &[u8]) -> bool {
    const CASE: u64 = 0x2020_2020_2020_2020;
    let n = lower.len();
    if name.len() != n {
        return false;
    }
    if n < 8 {
        return name.iter().zip(lower).all(|(a, b)| a | 0x20 == *b);
    }
    let word = |s: &[u8], at: usize| {
        let mut w = [0; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let mut at = 0;
    loop {
        let from = at.min(n - 8);
        if word(name, from) | CASE != word(lower, from) {
            return false;
        }
        if from == n - 8 {
            return true;
        }
        at += 8;
    }
}

/// A request the server cannot read on: answer with [`status`](HttpFault::status) and
/// close the connection (the framing of what follows is unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpFault {
    /// A malformed request line, header, `Content-Length` or chunk: 400.
    BadRequest,
    /// A chunked body over the limit: 413.
    BodyTooLarge,
    /// A head (or trailer section) over [`MAX_HEAD`], or too many header fields: 431.
    HeadTooLarge,
    /// A transfer coding other than `chunked`: 501.
    NotImplemented,
}

impl HttpFault {
    /// The status to answer with.
    pub fn status(self) -> u16 {
        match self {
            HttpFault::BadRequest => 400,
            HttpFault::BodyTooLarge => 413,
            HttpFault::HeadTooLarge => 431,
            HttpFault::NotImplemented => 501,
        }
    }
}

impl fmt::Display for HttpFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HttpFault::BadRequest => "malformed HTTP request",
            HttpFault::BodyTooLarge => "request body over the limit",
            HttpFault::HeadTooLarge => "request head over the limit",
            HttpFault::NotImplemented => "unsupported transfer coding",
        })
    }
}

/// What [`RequestDecoder::decode`] found at the start of the buffer.
// A `Head` keeps the places of its fields inline (no allocation for them): it is moved once
// per request, where a box would cost the allocation that saves.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq, Eq)]
pub enum HttpStep<'a> {
    /// More bytes are needed: at least this many from the start of the buffer (a hint;
    /// call again with the same bytes and more behind them).
    Incomplete(usize),
    /// A request head, `usize` bytes long: remove them from the buffer. A body follows
    /// unless [`Head::body`] is [`BodyKind::None`]; decode again for it.
    Head(usize, Head),
    /// The whole body of the request whose head came last; remove the first `usize` bytes
    /// of the buffer. A chunked body was joined in place at the start of the buffer.
    Body(usize, &'a [u8]),
}

/// Where the decoder stands in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for a request head.
    Head,
    /// A body of this length follows.
    Length(usize),
    /// A chunked body: `out` bytes of it joined at the start of the buffer, the input read
    /// up to `pos`.
    Chunked {
        out: usize,
        pos: usize,
        phase: Chunk,
    },
}

/// Where a chunked body's parser stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// A chunk-size line.
    Size,
    /// This many bytes of chunk data.
    Data(usize),
    /// The CRLF after chunk data.
    DataEnd,
    /// Trailer fields, up to an empty line; `usize` bytes of them so far.
    Trailers(usize),
}

/// Cuts requests out of an HTTP/1.1 byte stream, one head and body after another; bodies
/// over `max_body` bytes are refused.
#[derive(Debug, Clone)]
pub struct RequestDecoder {
    max_body: usize,
    /// Heads keep their target and every field.
    keep: bool,
    state: State,
    /// How many bytes of an incomplete head were already looked at (no line ends after the
    /// last parse's): the head is parsed again only once a new line ends, so a peer sending
    /// a byte at a time costs a scan of each byte, not a parse of the whole head so far
    /// (which made that peer's head quadratic).
    head_scanned: usize,
    /// How many times a head was handed to the parser (for the tests).
    #[cfg(test)]
    parses: usize,
}

impl RequestDecoder {
    /// A decoder for bodies of at most `max_body` bytes (a longer `Content-Length` is
    /// reported in the [`Head`]: the server answers it 413 without reading it).
    pub fn new(max_body: usize) -> Self {
        RequestDecoder {
            max_body,
            keep: false,
            state: State::Head,
            head_scanned: 0,
            #[cfg(test)]
            parses: 0,
        }
    }

    /// A decoder whose heads also keep the request target and every header field
    /// ([`Head::target`], [`Head::fields`]), for a server that routes on them (MCP's
    /// Streamable HTTP reads its session, version and method headers).
    pub fn keeping_fields(max_body: usize) -> Self {
        RequestDecoder {
            keep: true,
            ..RequestDecoder::new(max_body)
        }
    }

    /// The longest body accepted.
    pub fn max_body(&self) -> usize {
        self.max_body
    }

    /// True while a request's body is expected (its head was decoded, its body not yet).
    pub fn in_body(&self) -> bool {
        self.state != State::Head
    }

    /// Expects a body framed as `body` next.
    fn expect_body(&mut self, body: BodyKind) {
        self.state = match body {
            BodyKind::None => State::Head,
            BodyKind::Length(n) => State::Length(usize::try_from(n).unwrap_or(usize::MAX)),
            BodyKind::Chunked => State::Chunked {
                out: 0,
                pos: 0,
                phase: Chunk::Size,
            },
        };
    }

    /// While a chunked body is incomplete, moves the bytes of `buf` not decoded yet down
    /// over the chunk framing already decoded (sizes, extensions, line ends), and returns
    /// how many bytes at the start of `buf` are still in use: drop the rest before reading
    /// more. Otherwise returns `buf.len()`. Without it a body of tiny chunks with long
    /// extensions would hold its whole framing until it ends: with it, what a body holds is
    /// its joined data so far, at most the limit, and less than a line of framing.
    pub fn reclaim(&mut self, buf: &mut [u8]) -> usize {
        match &mut self.state {
            State::Chunked { out, pos, .. } if *pos > *out && *pos <= buf.len() => {
                buf.copy_within(*pos.., *out);
                let kept = *out + (buf.len() - *pos);
                *pos = *out;
                kept
            }
            _ => buf.len(),
        }
    }

    /// Decodes the next head or body from `buf`, which starts where the last step's bytes
    /// ended. While a chunked body is incomplete the decoder keeps its place in `buf`: call
    /// again with the same bytes at the start and more behind them (after
    /// [`reclaim`](RequestDecoder::reclaim), with the bytes it kept).
    pub fn decode<'a>(&mut self, buf: &'a mut [u8]) -> Result<HttpStep<'a>, HttpFault> {
        match self.state {
            State::Head => self.decode_head(buf),
            State::Length(len) => {
                if buf.len() < len {
                    return Ok(HttpStep::Incomplete(len));
                }
                self.state = State::Head;
                Ok(HttpStep::Body(len, &buf[..len]))
            }
            State::Chunked { out, pos, phase } => self.decode_chunked(buf, out, pos, phase),
        }
    }

    fn decode_head<'a>(&mut self, buf: &'a mut [u8]) -> Result<HttpStep<'a>, HttpFault> {
        // Only the first MAX_HEAD bytes are read: a fault past them would be found or not
        // depending on how much the transport had read.
        let window = &buf[..buf.len().min(MAX_HEAD)];
        // Short of the limit, only whole lines are parsed: the bytes after the last line end
        // wait for theirs, so a head is judged on the same bytes however they were read.
        let lines = if window.len() == MAX_HEAD {
            window
        } else {
            let unscanned = window.get(self.head_scanned..).unwrap_or_default();
            let Some(last) = memchr::memrchr(b'\n', unscanned) else {
                // No new line has ended: a parse would end where the last one did.
                self.head_scanned = window.len();
                return Ok(HttpStep::Incomplete(buf.len() + 1));
            };
            &window[..self.head_scanned + last + 1]
        };
        #[cfg(test)]
        {
            self.parses += 1;
        }
        // The fields' table is left unwritten until the parser fills it (2 KiB set up for
        // every head cost more than reading its few fields); only the parsed fields are
        // read from it.
        let mut headers =
            [const { core::mem::MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut []);
        let parsed = request.parse_with_uninit_headers(lines, &mut headers);
        // Still partial: the next parse is due at a line end after these bytes.
        self.head_scanned = match parsed {
            Ok(httparse::Status::Partial) => window.len(),
            _ => 0,
        };
        let used = match parsed {
            Ok(httparse::Status::Complete(used)) => used,
            Ok(httparse::Status::Partial) if window.len() == MAX_HEAD => {
                return Err(HttpFault::HeadTooLarge)
            }
            Ok(httparse::Status::Partial) => return Ok(HttpStep::Incomplete(buf.len() + 1)),
            Err(httparse::Error::TooManyHeaders) => return Err(HttpFault::HeadTooLarge),
            Err(_) => return Err(HttpFault::BadRequest),
        };
        let http10 = request.version == Some(0);
        let mut head = Head::bare(request.method.unwrap_or_default(), http10);
        if self.keep {
            // One copy of the head's bytes, the target and fields read in place.
            let target = request.path.unwrap_or_default();
            head.fields = Fields::parsed(&lines[..used], target, request.headers);
        }
        head.read_fields(request.headers.iter().map(|h| (h.name, h.value)))?;
        // Over the limit: the server answers 413 from the head and reads no further.
        self.expect_body(head.body);
        Ok(HttpStep::Head(used, head))
    }

    fn decode_chunked<'a>(
        &mut self,
        buf: &'a mut [u8],
        mut out: usize,
        mut pos: usize,
        mut phase: Chunk,
    ) -> Result<HttpStep<'a>, HttpFault> {
        let step = loop {
            match phase {
                Chunk::Size => {
                    let Some(line) = line_at(buf, pos, MAX_CHUNK_LINE, HttpFault::BadRequest)?
                    else {
                        break HttpStep::Incomplete(buf.len() + 1);
                    };
                    let size = parse_chunk_size(&buf[pos..pos + line])?;
                    pos += line + 2;
                    phase = match size {
                        0 => Chunk::Trailers(0),
                        n if n > self.max_body - out => return Err(HttpFault::BodyTooLarge),
                        n => Chunk::Data(n),
                    };
                }
                Chunk::Data(left) => {
                    let take = left.min(buf.len() - pos);
                    buf.copy_within(pos..pos + take, out);
                    (out, pos) = (out + take, pos + take);
                    if take < left {
                        phase = Chunk::Data(left - take);
                        break HttpStep::Incomplete(pos + left - take + 2);
                    }
                    phase = Chunk::DataEnd;
                }
                Chunk::DataEnd => {
                    if buf.len() < pos + 2 {
                        break HttpStep::Incomplete(pos + 2);
                    }
                    if &buf[pos..pos + 2] != b"\r\n" {
                        return Err(HttpFault::BadRequest);
                    }
                    pos += 2;
                    phase = Chunk::Size;
                }
                Chunk::Trailers(seen) => {
                    let room = MAX_HEAD.checked_sub(seen).ok_or(HttpFault::HeadTooLarge)?;
                    let Some(line) = line_at(buf, pos, room, HttpFault::HeadTooLarge)? else {
                        break HttpStep::Incomplete(buf.len() + 1);
                    };
                    let field = &buf[pos..pos + line];
                    pos += line + 2;
                    if line == 0 {
                        self.state = State::Head;
                        return Ok(HttpStep::Body(pos, &buf[..out]));
                    }
                    // Trailer fields are read past, not used; but a line that is no field
                    // (a folded line, a control byte, no name) is a malformed request, as in
                    // a head.
                    if !is_field_line(field) {
                        return Err(HttpFault::BadRequest);
                    }
                    phase = Chunk::Trailers(seen + line + 2);
                }
            }
        };
        self.state = State::Chunked { out, pos, phase };
        Ok(step)
    }
}

/// The length of the CRLF-ended line at `buf[pos..]` (without its CRLF), `None` when its
/// end has not come; a line longer than `max` is `too_long`, one ended by a bare LF is
/// malformed.
fn line_at(
    buf: &[u8],
    pos: usize,
    max: usize,
    too_long: HttpFault,
) -> Result<Option<usize>, HttpFault> {
    let rest = &buf[pos..];
    let Some(lf) = memchr::memchr(b'\n', &rest[..rest.len().min(max + 2)]) else {
        return if rest.len() >= max + 2 {
            Err(too_long)
        } else {
            Ok(None)
        };
    };
    if lf == 0 || rest[lf - 1] != b'\r' {
        return Err(HttpFault::BadRequest);
    }
    Ok(Some(lf - 1))
}

/// The bytes a token may hold (RFC 9110 §5.6.2), by value.
const TCHAR: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    table
};

/// True for a token (RFC 9110 §5.6.2): a field name, a method.
fn is_token(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(|&b| TCHAR[b as usize])
}

/// True for a field value free of control bytes other than tab (RFC 9110 §5.5). Eight
/// bytes at a time: a word with no byte under 0x20 and none 0x7f passes at once.
fn is_field_value(value: &[u8]) -> bool {
    const ONES: u64 = u64::MAX / 255;
    const HIGHS: u64 = ONES << 7;
    let bytewise = |bytes: &[u8]| {
        bytes
            .iter()
            .all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
    };
    let mut words = value.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // A byte under 0x20 (its high bit clear), or 0x7f: flagged, then judged one by one.
        let low = x.wrapping_sub(ONES * 0x20) & !x & HIGHS;
        let del = {
            let y = x ^ (ONES * 0x7f);
            y.wrapping_sub(ONES) & !y & HIGHS
        };
        if (low | del) != 0 && !bytewise(word) {
            return false;
        }
    }
    bytewise(words.remainder())
}

/// True for `name: value` with `name` a token and `value` free of control bytes other than
/// tab (RFC 9110 §5.1, §5.5); a line starting with whitespace (an obsolete fold) has no
/// name and is not one.
fn is_field_line(line: &[u8]) -> bool {
    let Some(colon) = memchr::memchr(b':', line) else {
        return false;
    };
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    is_token(name) && is_field_value(value)
}

/// A `Content-Length` field into `length`: a second one that differs is refused.
fn content_length(length: &mut Option<u64>, value: &[u8]) -> Result<(), HttpFault> {
    let n = parse_length(value).ok_or(HttpFault::BadRequest)?;
    if length.is_some_and(|l| l != n) {
        return Err(HttpFault::BadRequest);
    }
    *length = Some(n);
    Ok(())
}

/// A `Transfer-Encoding` field: sets `coded` for `chunked`, the only coding known here.
fn transfer_coding(coded: &mut bool, value: &[u8]) -> Result<(), HttpFault> {
    let mut any = false;
    for coding in value
        .split(|&b| b == b',')
        .map(trim)
        .filter(|c| !c.is_empty())
    {
        any = true;
        // Only chunked is known here: gzip and the rest are not implemented.
        if !coding.eq_ignore_ascii_case(b"chunked") {
            return Err(HttpFault::NotImplemented);
        }
        // Chunked twice (in one field or two) would be undone once here and twice
        // elsewhere on the way: refused (RFC 9112 §6.1).
        if *coded {
            return Err(HttpFault::BadRequest);
        }
        *coded = true;
    }
    // A field with no coding at all says nothing about the framing.
    if any {
        Ok(())
    } else {
        Err(HttpFault::BadRequest)
    }
}

/// The items of a comma-separated field value (`Connection`, `Upgrade`), trimmed.
pub(crate) fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(trim)
}

/// A `Connection` field: whether it says `close`, and whether it says `keep-alive`.
fn connection_tokens(value: &[u8]) -> (bool, bool) {
    let (mut close, mut keep) = (false, false);
    for token in tokens(value) {
        close |= token.eq_ignore_ascii_case(b"close");
        keep |= token.eq_ignore_ascii_case(b"keep-alive");
    }
    (close, keep)
}

/// A chunk-size line: hexadecimal digits, then optional extensions (ignored).
fn parse_chunk_size(line: &[u8]) -> Result<usize, HttpFault> {
    let digits = line
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(line.len());
    // Whitespace may come before an extension's ';' (RFC 9112 §7.1.1), nothing else; and no
    // control byte but HTAB in an extension (a bare CR is not a line end here, and a proxy
    // in front that took it for one would frame the body otherwise: §2.2).
    let rest = &line[digits..];
    let ext = rest.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let ext_ok = match ext {
        Some(at) => rest[at] == b';' && rest.iter().all(|&b| b == b'\t' || !b.is_ascii_control()),
        None => true,
    };
    // Leading zeros are digits like any other (`1*HEXDIG`): the size's own are at most 16.
    let zeros = line[..digits].iter().take_while(|&&b| b == b'0').count();
    if digits == 0 || digits - zeros > 16 || !ext_ok {
        return Err(HttpFault::BadRequest);
    }
    let mut size: u64 = 0;
    for &b in &line[zeros..digits] {
        let d = (b as char).to_digit(16).unwrap_or(0);
        size = size
            .checked_mul(16)
            .and_then(|s| s.checked_add(u64::from(d)))
            .ok_or(HttpFault::BadRequest)?;
    }
    usize::try_from(size).map_err(|_| HttpFault::BadRequest)
}

/// A `Content-Length` value: decimal digits only (leading zeros allowed, `1*DIGIT`).
fn parse_length(value: &[u8]) -> Option<u64> {
    let value = trim(value);
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let zeros = value.iter().take_while(|&&b| b == b'0').count();
    let value = &value[zeros..];
    if value.len() > 19 {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

/// `application/json`, with no charset or a UTF-8 one.
fn is_json(value: &[u8]) -> bool {
    // What nearly every client sends, at once.
    if value.eq_ignore_ascii_case(b"application/json") {
        return true;
    }
    let mut parts = value.split(|&b| b == b';').map(trim);
    let media = parts.next().unwrap_or_default();
    media.eq_ignore_ascii_case(b"application/json")
        && parts.all(|param| {
            let Some(eq) = param.iter().position(|&b| b == b'=') else {
                return true;
            };
            let (name, charset) = (trim(&param[..eq]), trim(&param[eq + 1..]));
            if !name.eq_ignore_ascii_case(b"charset") {
                return true;
            }
            let charset = charset
                .strip_prefix(b"\"")
                .and_then(|c| c.strip_suffix(b"\""))
                .unwrap_or(charset);
            charset.eq_ignore_ascii_case(b"utf-8") || charset.eq_ignore_ascii_case(b"utf8")
        })
}

fn trim(value: &[u8]) -> &[u8] {
    let start = value
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &value[start..end]
}

fn text(value: &[u8]) -> Option<String> {
    core::str::from_utf8(value).ok().map(String::from)
}

/// The reason phrase of the statuses this server writes.
fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// Appends a response head to `out`: the status line, `headers` as given, then
/// `Content-Length` when `content_length` is given (not for 1xx and 204, which have no
/// body), and the empty line ending the head.
pub fn write_head(
    out: &mut Vec<u8>,
    status: u16,
    content_length: Option<usize>,
    headers: &[(&str, &[u8])],
) {
    // Room for all of it at once (the status line and a length are under 64 bytes).
    let fields: usize = headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
    out.reserve(64 + fields + content_length.map_or(0, |n| n.min(1 << 16)));
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(itoa::Buffer::new().format(status).as_bytes());
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    if let Some(n) = content_length.filter(|_| status >= 200 && status != 204) {
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

mod body;
mod exchange;
#[cfg(feature = "std")]
mod extensions;
mod fields;
mod request;
#[cfg(test)]
mod tests;
mod unframe;

pub use body::{bearer_token, chunk_line, Authorized, BodyStep, WholeResponse};
pub use exchange::{Exchange, Refusal};
pub use fields::as_text;
pub use fields::Fields;
#[cfg(feature = "std")]
pub use request::Extensions;
pub use request::{Headers, HttpRequest, Principal};
pub use unframe::{Parts, Unframer};
