//! A response the core wrote as HTTP/1.1 bytes (the Streamable HTTP machine's answers),
//! taken apart for a server that frames its responses itself (hyper, HTTP/2): the status,
//! the header fields less the HTTP/1.1 framing ones, and the body's bytes as they come
//! (a chunked body de-chunked), so that every answer is still written by one machine.

use alloc::string::String;
use alloc::vec::Vec;

use super::{HttpFault, MAX_HEAD};

/// The head of a response: its status and header fields, without `Transfer-Encoding` and
/// `Connection` (the framing of HTTP/1.1, which the server writing the response does its
/// own way; `Content-Length` is kept: the body is exactly that long).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Parts {
    /// The status.
    pub status: u16,
    /// The header fields, as written.
    pub headers: Vec<(String, Vec<u8>)>,
}

/// Where the body stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    /// This many body bytes left.
    Length(u64),
    /// A chunk-size line is next.
    Size,
    /// This many bytes of the chunk left, then its line end.
    Data(u64),
    /// The line end after a chunk's data.
    DataEnd,
    /// Trailer lines until an empty one.
    Trailer,
    /// The body ended.
    Done,
}

/// Takes apart one response written as HTTP/1.1 bytes, given in pieces of any size.
///
/// ```
/// use sansrpc::codec::http::Unframer;
///
/// let mut unframer = Unframer::new();
/// let mut body = Vec::new();
/// let wire = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
///     transfer-encoding: chunked\r\n\r\n5\r\nhello\r\n";
/// let parts = unframer.push(wire, &mut body).unwrap().unwrap();
/// assert_eq!(parts.status, 200);
/// assert_eq!(parts.headers, vec![("content-type".into(), b"text/event-stream".to_vec())]);
/// assert_eq!(body, b"hello");
/// assert!(unframer.push(b"0\r\n\r\n", &mut body).unwrap().is_none());
/// assert!(unframer.is_done());
/// ```
#[derive(Debug, Clone)]
pub struct Unframer {
    state: State,
    /// Bytes of an unfinished head or line, kept for the next piece.
    held: Vec<u8>,
}

impl Default for Unframer {
    fn default() -> Self {
        Self::new()
    }
}

impl Unframer {
    /// Nothing taken yet.
    pub fn new() -> Self {
        Unframer {
            state: State::Head,
            held: Vec::new(),
        }
    }

    /// True once the whole body was taken.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Takes the next `bytes` of the response; appends what they hold of the body to
    /// `body`; returns the head when these bytes completed it (once).
    pub fn push(&mut self, bytes: &[u8], body: &mut Vec<u8>) -> Result<Option<Parts>, HttpFault> {
        let mut parts = None;
        let mut input: &[u8] = bytes;
        let joined;
        if !self.held.is_empty() {
            self.held.extend_from_slice(bytes);
            joined = core::mem::take(&mut self.held);
            input = &joined;
        }
        loop {
            match self.state {
                State::Done => return Ok(parts),
                State::Head => {
                    let Some(end) = find(input, b"\r\n\r\n") else {
                        return self.hold(input, parts);
                    };
                    let (head, used) = head(&input[..end + 4])?;
                    parts = Some(head.0);
                    self.state = head.1;
                    input = &input[used..];
                }
                State::Length(left) => {
                    let n = input.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    body.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    let left = left - n as u64;
                    if left == 0 {
                        self.state = State::Done;
                    } else {
                        self.state = State::Length(left);
                        return Ok(parts);
                    }
                }
                State::Size => {
                    let Some(end) = find(input, b"\r\n") else {
                        return self.hold(input, parts);
                    };
                    let line = &input[..end];
                    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
                    let size = hex(digits).ok_or(HttpFault::BadRequest)?;
                    input = &input[end + 2..];
                    self.state = if size == 0 {
                        State::Trailer
                    } else {
                        State::Data(size)
                    };
                }
                State::Data(left) => {
                    if input.is_empty() {
                        return Ok(parts);
                    }
                    let n = input.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    body.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    let left = left - n as u64;
                    self.state = if left == 0 {
                        State::DataEnd
                    } else {
                        State::Data(left)
                    };
                }
                State::DataEnd => {
                    if input.len() < 2 {
                        return self.hold(input, parts);
                    }
                    if &input[..2] != b"\r\n" {
                        return Err(HttpFault::BadRequest);
                    }
                    input = &input[2..];
                    self.state = State::Size;
                }
                State::Trailer => {
                    let Some(end) = find(input, b"\r\n") else {
                        return self.hold(input, parts);
                    };
                    input = &input[end + 2..];
                    if end == 0 {
                        self.state = State::Done;
                    }
                }
            }
        }
    }

    /// Keeps `input` (an unfinished head or line) for the next piece.
    fn hold(&mut self, input: &[u8], parts: Option<Parts>) -> Result<Option<Parts>, HttpFault> {
        if input.len() > MAX_HEAD {
            return Err(HttpFault::HeadTooLarge);
        }
        self.held.clear();
        self.held.extend_from_slice(input);
        Ok(parts)
    }
}

/// The head in `bytes` (which end with its blank line): its parts and the body's state,
/// and its length.
fn head(bytes: &[u8]) -> Result<((Parts, State), usize), HttpFault> {
    let mut fields = [httparse::EMPTY_HEADER; super::MAX_HEADERS];
    let mut response = httparse::Response::new(&mut fields);
    let used = match response.parse(bytes) {
        Ok(httparse::Status::Complete(used)) => used,
        _ => return Err(HttpFault::BadRequest),
    };
    let status = response.code.unwrap_or(0);
    let (mut length, mut chunked) = (None, false);
    let mut headers = Vec::with_capacity(response.headers.len());
    for field in response.headers.iter() {
        if field.name.eq_ignore_ascii_case("transfer-encoding") {
            super::transfer_coding(&mut chunked, field.value)?;
            continue;
        }
        if field.name.eq_ignore_ascii_case("connection") {
            continue;
        }
        if field.name.eq_ignore_ascii_case("content-length") {
            super::content_length(&mut length, field.value)?;
        }
        headers.push((String::from(field.name), field.value.to_vec()));
    }
    let state = match (status, chunked, length) {
        (100..=199 | 204 | 304, ..) => State::Done,
        (_, true, _) => State::Size,
        (_, false, Some(0) | None) => State::Done,
        (_, false, Some(n)) => State::Length(n),
    };
    Ok(((Parts { status, headers }, state), used))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

fn hex(digits: &[u8]) -> Option<u64> {
    let digits = super::trim(digits);
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let d = (b as char).to_digit(16)?;
        Some(n * 16 + u64::from(d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn a_chunked_body_in_pieces_of_one_byte_comes_out_whole() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: b\r\n\r\n\
            3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: t\r\n\r\n";
        let mut unframer = Unframer::new();
        let (mut body, mut heads) = (Vec::new(), Vec::new());
        for b in wire.iter() {
            heads.extend(unframer.push(&[*b], &mut body).unwrap());
        }
        assert_eq!(heads.len(), 1);
        assert_eq!(heads[0].headers, vec![("X-A".into(), b"b".to_vec())]);
        assert_eq!(body, b"abc0123456789abcdef");
        assert!(unframer.is_done());
    }

    #[test]
    fn a_length_body_keeps_its_length_and_ends_with_it() {
        let mut unframer = Unframer::new();
        let mut body = Vec::new();
        let parts = unframer
            .push(
                b"HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\nconnection: close\r\n\r\nab",
                &mut body,
            )
            .unwrap()
            .unwrap();
        assert_eq!(parts.status, 404);
        assert_eq!(
            parts.headers,
            vec![("content-length".into(), b"4".to_vec())]
        );
        assert!(!unframer.is_done());
        assert!(unframer.push(b"cdEXTRA", &mut body).unwrap().is_none());
        assert_eq!(body, b"abcd");
        assert!(unframer.is_done());
    }

    #[test]
    fn bad_chunk_framing_is_a_fault_not_a_panic() {
        let mut unframer = Unframer::new();
        let mut body = Vec::new();
        let head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
        unframer.push(head, &mut body).unwrap();
        assert_eq!(
            unframer.push(b"zz\r\n", &mut body),
            Err(HttpFault::BadRequest)
        );
        let mut unframer = Unframer::new();
        unframer.push(head, &mut body).unwrap();
        assert_eq!(
            unframer.push(b"2\r\nabXY", &mut body),
            Err(HttpFault::BadRequest)
        );
    }
}
