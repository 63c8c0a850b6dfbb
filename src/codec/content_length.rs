//! The Content-Length framing (LSP base protocol).

use super::buffer::InputBuffer;
use super::{is_space, FrameError};
use crate::Limits;

/// The header the decoder searches for when it resynchronises, in lower case.
const NEEDLE: &[u8] = b"content-length";

/// Room beyond `max_frame_bytes + max_header_bytes`, so that a resynchronisation always
/// has space to keep a partial match of [`NEEDLE`].
const SLACK: usize = 16;

/// An incremental decoder for Content-Length framing, as the Language Server Protocol
/// uses it.
///
/// A frame is a header block of `Name: value` lines ended by an empty line, then the body.
/// Lines end in CRLF or a bare LF; names are case-insensitive; whitespace around values is
/// ignored; unknown headers are ignored. `Content-Length` (plain decimal) is required; a
/// `Content-Type` whose charset is not `utf-8` / `utf8` is refused. Whitespace between
/// frames is skipped.
///
/// Recovery: a missing or malformed length, or a header block longer than
/// `max_header_bytes`, is reported once and the decoder skips to the next
/// `Content-Length` header (searched case-insensitively); bytes that cannot start a
/// header are skipped the same way and reported once as [`FrameError::Garbage`]; a length
/// above `max_frame_bytes` or a bad charset is reported and that body skipped exactly.
///
/// The calling contract is the one of [`Decoder`](super::Decoder), which wraps this type.
#[derive(Debug)]
pub struct ContentLengthDecoder {
    buf: InputBuffer,
    state: State,
    max_frame: usize,
    max_header: usize,
}

#[derive(Debug)]
enum State {
    /// Reading a header block that starts at the buffer's first live byte.
    Header(Scan),
    /// The header is consumed; waiting for `len` bytes of body.
    Body { len: usize, header_len: usize },
    /// Dropping the body of a refused frame.
    Skip { remaining: u64 },
    /// Dropping bytes up to the next `Content-Length`; `report` says whether they are
    /// garbage nobody has reported yet.
    Resync { skipped: usize, report: bool },
}

/// Progress through a header block, kept between calls so that no byte is examined twice.
#[derive(Debug, Default)]
struct Scan {
    /// Bytes of the block examined so far.
    pos: usize,
    /// Offset of the current line within the block.
    line_start: usize,
    phase: Phase,
    length: Option<u64>,
    bad_length: bool,
    bad_charset: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// In the header name (or an empty line so far).
    #[default]
    Name,
    /// In whitespace between the name and the colon.
    NameSpace,
    /// After the colon.
    Value,
}

enum ScanOutcome {
    NeedMore,
    End { header_len: usize },
    NotAHeader,
    TooLong,
}

enum Step {
    NeedMore,
    Continue,
    Frame { from: usize, to: usize },
    Error(FrameError),
}

impl ContentLengthDecoder {
    /// Creates a decoder with the frame and header bounds of `limits`.
    ///
    /// Allocates nothing until the first [`ContentLengthDecoder::feed`].
    pub fn new(limits: &Limits) -> Self {
        let bound = limits
            .max_frame_bytes
            .saturating_add(limits.max_header_bytes)
            .saturating_add(SLACK);
        ContentLengthDecoder {
            buf: InputBuffer::new(bound),
            state: State::Header(Scan::default()),
            max_frame: limits.max_frame_bytes,
            max_header: limits.max_header_bytes,
        }
    }

    /// Buffers as much of `input` as the bound allows and returns how many bytes it
    /// consumed; see [`Decoder::feed`](super::Decoder::feed).
    ///
    /// While the body of a refused frame is being skipped and nothing else is buffered,
    /// its bytes are consumed without being stored.
    #[must_use = "bytes not consumed must be fed again after draining next_frame"]
    pub fn feed(&mut self, input: &[u8]) -> usize {
        let mut taken = 0;
        if let State::Skip { remaining } = &mut self.state {
            if self.buf.len() == 0 {
                let n = (*remaining).min(input.len() as u64);
                *remaining -= n;
                taken = n as usize;
                if *remaining == 0 {
                    self.state = State::Header(Scan::default());
                }
            }
        }
        taken + self.buf.append(&input[taken..])
    }

    /// A whole frame taken straight from `input`, without buffering it: when nothing is
    /// buffered and `input` starts (after whitespace) with a well-formed frame within the
    /// limits, how many bytes of `input` it spans and its body. `None` otherwise (a partial
    /// frame, anything to report): [`feed`](ContentLengthDecoder::feed) the bytes instead.
    pub fn frame_in<'a>(&mut self, input: &'a [u8]) -> Option<(usize, &'a [u8])> {
        if self.buf.len() != 0 || !matches!(&self.state, State::Header(s) if s.pos == 0) {
            return None;
        }
        let space = input.iter().take_while(|&&b| is_space(b)).count();
        let block = &input[space..];
        let mut scan = Scan::default();
        let ScanOutcome::End { header_len } = scan_header(&mut scan, block, self.max_header) else {
            return None;
        };
        let len = match scan.length {
            Some(len) if !scan.bad_length && !scan.bad_charset && len <= self.max_frame as u64 => {
                len as usize
            }
            _ => return None,
        };
        let body = block.get(header_len..header_len + len)?;
        Some((space + header_len + len, body))
    }

    /// Returns the next frame body or error event; see
    /// [`Decoder::next_frame`](super::Decoder::next_frame).
    pub fn next_frame(&mut self) -> Option<Result<&[u8], FrameError>> {
        // Asked again after the last frame: nothing buffered, no header begun.
        if self.buf.len() == 0 && matches!(&self.state, State::Header(scan) if scan.pos == 0) {
            return None;
        }
        loop {
            match self.step() {
                Step::NeedMore => return None,
                Step::Continue => {}
                Step::Frame { from, to } => return Some(Ok(self.buf.slice(from, to))),
                Step::Error(e) => return Some(Err(e)),
            }
        }
    }

    /// Signals the end of input; see [`Decoder::finish`](super::Decoder::finish).
    ///
    /// The body of a frame already refused (too large, bad charset, unknown length) that is
    /// cut short is not reported a second time.
    pub fn finish(&mut self) -> Option<FrameError> {
        let rest = self.buf.len();
        let error = match &self.state {
            State::Header(_) if self.buf.bytes().iter().all(|&b| is_space(b)) => None,
            State::Header(_) => Some(FrameError::Truncated { received: rest }),
            State::Body { header_len, .. } => Some(FrameError::Truncated {
                received: header_len + rest,
            }),
            State::Skip { .. } | State::Resync { report: false, .. } => None,
            State::Resync {
                skipped,
                report: true,
            } => Some(FrameError::Garbage {
                skipped: skipped + rest,
            }),
        };
        self.buf.clear();
        self.state = State::Header(Scan::default());
        error
    }

    /// Returns how many input bytes are buffered and not yet handed out.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// True while a frame is partly received; see
    /// [`Decoder::in_frame`](super::Decoder::in_frame).
    pub(crate) fn in_frame(&self) -> bool {
        !matches!(self.state, State::Header(_)) || self.buf.len() > 0
    }

    /// Returns the most bytes the decoder ever buffers:
    /// `max_frame_bytes + max_header_bytes + 16`.
    pub fn max_buffered(&self) -> usize {
        self.buf.bound()
    }

    fn step(&mut self) -> Step {
        match &mut self.state {
            State::Header(scan) => {
                if scan.pos == 0 {
                    let space = self
                        .buf
                        .bytes()
                        .iter()
                        .take_while(|&&b| is_space(b))
                        .count();
                    self.buf.consume(space);
                    if self.buf.len() == 0 {
                        return Step::NeedMore;
                    }
                }
                match scan_header(scan, self.buf.bytes(), self.max_header) {
                    ScanOutcome::NeedMore => Step::NeedMore,
                    ScanOutcome::End { header_len } => {
                        let scan = core::mem::take(scan);
                        self.buf.consume(header_len);
                        self.end_of_header(&scan, header_len)
                    }
                    ScanOutcome::NotAHeader => {
                        self.buf.consume(1);
                        self.state = State::Resync {
                            skipped: 1,
                            report: true,
                        };
                        Step::Continue
                    }
                    ScanOutcome::TooLong => {
                        self.buf.consume(1);
                        self.state = State::Resync {
                            skipped: 0,
                            report: false,
                        };
                        Step::Error(FrameError::HeaderTooLarge {
                            limit: self.max_header,
                        })
                    }
                }
            }
            State::Body { len, .. } => {
                let len = *len;
                if self.buf.len() < len {
                    return Step::NeedMore;
                }
                let from = self.buf.start();
                self.buf.consume(len);
                self.state = State::Header(Scan::default());
                Step::Frame {
                    from,
                    to: from + len,
                }
            }
            State::Skip { remaining } => {
                let n = (*remaining).min(self.buf.len() as u64);
                self.buf.consume(n as usize);
                *remaining -= n;
                if *remaining > 0 {
                    return Step::NeedMore;
                }
                self.state = State::Header(Scan::default());
                Step::Continue
            }
            State::Resync { skipped, report } => {
                let bytes = self.buf.bytes();
                match find_needle(bytes) {
                    Some(at) => {
                        let skipped = *skipped + at;
                        let report = *report;
                        self.buf.consume(at);
                        self.state = State::Header(Scan::default());
                        if report {
                            Step::Error(FrameError::Garbage { skipped })
                        } else {
                            Step::Continue
                        }
                    }
                    None => {
                        // Keep a tail that may be the start of a match split across feeds.
                        let drop = bytes.len().saturating_sub(NEEDLE.len() - 1);
                        *skipped += drop;
                        self.buf.consume(drop);
                        Step::NeedMore
                    }
                }
            }
        }
    }

    fn end_of_header(&mut self, scan: &Scan, header_len: usize) -> Step {
        let silent_resync = State::Resync {
            skipped: 0,
            report: false,
        };
        let len = match scan.length {
            _ if scan.bad_length => {
                self.state = silent_resync;
                return Step::Error(FrameError::InvalidLength);
            }
            None => {
                self.state = silent_resync;
                return Step::Error(FrameError::MissingLength);
            }
            Some(len) => len,
        };
        if len > self.max_frame as u64 {
            self.state = State::Skip { remaining: len };
            return Step::Error(FrameError::TooLarge {
                declared: Some(len),
                limit: self.max_frame,
            });
        }
        if scan.bad_charset {
            self.state = State::Skip { remaining: len };
            return Step::Error(FrameError::UnsupportedCharset);
        }
        self.state = State::Body {
            len: len as usize,
            header_len,
        };
        Step::Continue
    }
}

/// `Content-Length:` as the LSP specification spells it, taken whole without a byte-by-byte
/// scan.
const FAST_NAME: &[u8] = b"Content-Length:";

/// The header block every LSP peer sends, `Content-Length: N` and a blank line, both with
/// CRLF, read whole: its length and the length of the block. `None` for anything else (the
/// byte-by-byte scan then reads it, and gives the same answer for this one).
fn whole_usual_header(block: &[u8], max_header: usize) -> Option<(u64, usize)> {
    let rest = block.strip_prefix(FAST_NAME)?;
    let spaces = rest.iter().take_while(|&&b| b == b' ').count();
    let digits = rest[spaces..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let after = spaces + digits;
    if digits == 0 || !rest[after..].starts_with(b"\r\n\r\n") {
        return None;
    }
    let header_len = FAST_NAME.len() + after + 4;
    let length = parse_length(&rest[spaces..after])?;
    (header_len <= max_header).then_some((length, header_len))
}

/// Advances `scan` over `block`, the bytes from the start of the header block on.
fn scan_header(scan: &mut Scan, block: &[u8], max_header: usize) -> ScanOutcome {
    if scan.pos == 0 {
        if let Some((length, header_len)) = whole_usual_header(block, max_header) {
            scan.length = Some(length);
            scan.pos = header_len;
            return ScanOutcome::End { header_len };
        }
    }
    let limit = block.len().min(max_header);
    while scan.pos < limit {
        if scan.phase == Phase::Value {
            // A value is not checked byte by byte: jump to the end of its line.
            match memchr::memchr(b'\n', &block[scan.pos..limit]) {
                Some(i) => scan.pos += i,
                None => {
                    scan.pos = limit;
                    break;
                }
            }
        } else if scan.pos == scan.line_start && block[scan.pos..limit].starts_with(FAST_NAME) {
            // The header every peer sends, spelled as the LSP specification does.
            scan.pos += FAST_NAME.len();
            scan.phase = Phase::Value;
            continue;
        }
        let at = scan.pos;
        let b = block[at];
        scan.pos += 1;
        if b == b'\n' {
            let line = strip_cr(&block[scan.line_start..at]);
            if line.is_empty() {
                return ScanOutcome::End {
                    header_len: scan.pos,
                };
            }
            if scan.phase != Phase::Value {
                return ScanOutcome::NotAHeader;
            }
            read_header_line(scan, line);
            scan.line_start = scan.pos;
            scan.phase = Phase::Name;
            continue;
        }
        let name_empty = at == scan.line_start;
        scan.phase = match (scan.phase, b) {
            (Phase::Value, _) => Phase::Value,
            (Phase::Name, b':') if !name_empty => Phase::Value,
            (Phase::Name, b' ' | b'\t') if !name_empty => Phase::NameSpace,
            (Phase::Name, b'\r') if name_empty => Phase::Name,
            (Phase::Name, b) if is_tchar(b) => Phase::Name,
            (Phase::NameSpace, b':') => Phase::Value,
            (Phase::NameSpace, b' ' | b'\t') => Phase::NameSpace,
            _ => return ScanOutcome::NotAHeader,
        };
    }
    if scan.pos >= max_header {
        return ScanOutcome::TooLong;
    }
    ScanOutcome::NeedMore
}

/// Records what one complete `Name: value` line (without its line ending) says.
fn read_header_line(scan: &mut Scan, line: &[u8]) {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return;
    };
    let name = trim(&line[..colon]);
    let value = trim(&line[colon + 1..]);
    if name.eq_ignore_ascii_case(b"content-length") {
        match parse_length(value) {
            Some(n) if scan.length.is_none() || scan.length == Some(n) => scan.length = Some(n),
            _ => scan.bad_length = true,
        }
    } else if name.eq_ignore_ascii_case(b"content-type") && !charset_is_utf8(value) {
        scan.bad_charset = true;
    }
}

/// Parses a plain decimal length: digits only, no sign, at most `u64::MAX`.
fn parse_length(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

/// Says whether a `Content-Type` value names no charset or a UTF-8 one.
fn charset_is_utf8(value: &[u8]) -> bool {
    value.split(|&b| b == b';').skip(1).all(|param| {
        let param = trim(param);
        let Some(eq) = param.iter().position(|&b| b == b'=') else {
            return true;
        };
        if !trim(&param[..eq]).eq_ignore_ascii_case(b"charset") {
            return true;
        }
        let mut charset = trim(&param[eq + 1..]);
        if let [b'"', inner @ .., b'"'] = charset {
            charset = inner;
        }
        charset.eq_ignore_ascii_case(b"utf-8") || charset.eq_ignore_ascii_case(b"utf8")
    })
}

/// Returns the offset of the first case-insensitive `Content-Length` in `bytes`.
fn find_needle(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(NEEDLE.len())
        .position(|w| w.eq_ignore_ascii_case(NEEDLE))
}

fn strip_cr(line: &[u8]) -> &[u8] {
    match line {
        [rest @ .., b'\r'] => rest,
        _ => line,
    }
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t' | b'\r', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r'] = s {
        s = rest;
    }
    s
}

/// Says whether `b` may appear in an HTTP header name (RFC 9110 `tchar`).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths() {
        assert_eq!(parse_length(b"0"), Some(0));
        assert_eq!(parse_length(b"0042"), Some(42));
        assert_eq!(parse_length(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_length(b"18446744073709551616"), None);
        assert_eq!(parse_length(b""), None);
        assert_eq!(parse_length(b"+1"), None);
        assert_eq!(parse_length(b"-1"), None);
        assert_eq!(parse_length(b"1 2"), None);
    }

    #[test]
    fn charsets() {
        assert!(charset_is_utf8(
            b"application/vscode-jsonrpc; charset=utf-8"
        ));
        assert!(charset_is_utf8(b"application/vscode-jsonrpc; charset=UTF8"));
        assert!(charset_is_utf8(b"application/json; charset=\"utf-8\""));
        assert!(charset_is_utf8(b"application/vscode-jsonrpc"));
        assert!(charset_is_utf8(b"application/json;"));
        assert!(!charset_is_utf8(b"application/json; charset=latin1"));
        assert!(!charset_is_utf8(b"text/plain; foo=bar; charset = utf-16"));
    }

    #[test]
    fn needle() {
        assert_eq!(find_needle(b"xx CONTENT-length: 1"), Some(3));
        assert_eq!(find_needle(b"content-lengt"), None);
    }
}
