//! The client's half: request heads written, response heads and bodies cut from the bytes a
//! transport read.

use alloc::vec::Vec;

use super::{
    connection_tokens, content_length, is_json, transfer_coding, BodyKind, HttpFault,
    RequestDecoder, MAX_HEAD,
};

/// What a JSON-RPC client needs from a response head.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResponseHead {
    /// The status; `1xx` heads are interim (`100 Continue`): pass them over and decode on.
    pub status: u16,
    /// `Content-Type: application/json`, with no charset or a UTF-8 one.
    pub json: bool,
    /// How the body is framed ([`BodyKind::UntilClose`] for a response with neither
    /// `Content-Length` nor `Transfer-Encoding`).
    pub body: BodyKind,
    /// The server keeps the connection open after this response: HTTP/1.1 without
    /// `Connection: close`, HTTP/1.0 with `Connection: keep-alive`, and never for a body
    /// that ends with the connection.
    pub keep_alive: bool,
}

/// What [`ResponseDecoder::decode`] found at the start of the buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum ResponseStep<'a> {
    /// More bytes are needed: at least this many from the start of the buffer (a hint;
    /// call again with the same bytes and more behind them). At the end of the input, see
    /// [`ResponseDecoder::finish`].
    Incomplete(usize),
    /// A response head, `usize` bytes long: remove them from the buffer. A body follows
    /// unless [`ResponseHead::body`] is [`BodyKind::None`]; decode again for it.
    Head(usize, ResponseHead),
    /// The whole body of the response whose head came last; remove the first `usize` bytes
    /// of the buffer. A chunked body was joined in place at the start of the buffer.
    Body(usize, &'a [u8]),
}

/// Cuts responses out of an HTTP/1.1 byte stream, one head and body after another, for a
/// client that sends one request at a time and reads its answer; bodies over `max_body`
/// bytes are refused ([`HttpFault::BodyTooLarge`]: the connection cannot be read on). The
/// faults name what was wrong; a client drops the connection on any of them.
///
/// ```
/// use sansrpc::codec::http::{write_request_head, BodyKind, ResponseDecoder, ResponseStep};
///
/// let mut request = Vec::new();
/// write_request_head(&mut request, "/rpc", "example.com", 2, &[("accept", b"application/json")]);
/// assert!(request.starts_with(b"POST /rpc HTTP/1.1\r\nhost: example.com\r\n"));
///
/// let mut wire = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
///     Content-Length: 2\r\n\r\n{}".to_vec();
/// let mut decoder = ResponseDecoder::new(1 << 20);
/// let ResponseStep::Head(used, head) = decoder.decode(&mut wire).unwrap() else { panic!() };
/// assert_eq!((head.status, head.json, head.body), (200, true, BodyKind::Length(2)));
/// let ResponseStep::Body(_, body) = decoder.decode(&mut wire[used..]).unwrap() else { panic!() };
/// assert_eq!(body, b"{}");
/// ```
#[derive(Debug, Clone)]
pub struct ResponseDecoder {
    /// The body's framing (its `Content-Length` and chunked states).
    body: RequestDecoder,
    /// The body runs until the connection closes.
    until_close: bool,
    /// How many bytes of an incomplete head were already looked at (see
    /// [`RequestDecoder`]'s).
    head_scanned: usize,
}

impl ResponseDecoder {
    /// A decoder for bodies of at most `max_body` bytes.
    pub fn new(max_body: usize) -> Self {
        ResponseDecoder {
            body: RequestDecoder::new(max_body),
            until_close: false,
            head_scanned: 0,
        }
    }

    /// The longest body accepted.
    pub fn max_body(&self) -> usize {
        self.body.max_body()
    }

    /// True while a response's body is expected (its head was decoded, its body not yet).
    pub fn in_body(&self) -> bool {
        self.until_close || self.body.in_body()
    }

    /// As [`RequestDecoder::reclaim`], for a chunked body.
    pub fn reclaim(&mut self, buf: &mut [u8]) -> usize {
        self.body.reclaim(buf)
    }

    /// Decodes the next head or body from `buf`, which starts where the last step's bytes
    /// ended (as [`RequestDecoder::decode`]).
    pub fn decode<'a>(&mut self, buf: &'a mut [u8]) -> Result<ResponseStep<'a>, HttpFault> {
        if self.until_close {
            if buf.len() > self.body.max_body() {
                return Err(HttpFault::BodyTooLarge);
            }
            return Ok(ResponseStep::Incomplete(buf.len() + 1));
        }
        if self.body.in_body() {
            return Ok(match self.body.decode(buf)? {
                super::HttpStep::Incomplete(n) => ResponseStep::Incomplete(n),
                super::HttpStep::Body(used, body) => ResponseStep::Body(used, body),
                // The body's decoder never sees a head.
                super::HttpStep::Head(..) => return Err(HttpFault::BadRequest),
            });
        }
        self.decode_head(buf)
    }

    /// At the end of the input: the body that ends with the connection, when one was being
    /// read (all of `buf`); `None` when the input ended anywhere else (mid-head, or short of
    /// a framed body: the response is cut off).
    pub fn finish<'a>(&mut self, buf: &'a [u8]) -> Option<&'a [u8]> {
        if !core::mem::take(&mut self.until_close) {
            return None;
        }
        Some(buf)
    }

    fn decode_head<'a>(&mut self, buf: &'a mut [u8]) -> Result<ResponseStep<'a>, HttpFault> {
        let window = &buf[..buf.len().min(MAX_HEAD)];
        if window.len() < MAX_HEAD {
            let unscanned = window.get(self.head_scanned..).unwrap_or_default();
            if memchr::memchr(b'\n', unscanned).is_none() {
                self.head_scanned = window.len();
                return Ok(ResponseStep::Incomplete(buf.len() + 1));
            }
        }
        let mut headers = [httparse::EMPTY_HEADER; super::MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let used = match response.parse(window) {
            Ok(httparse::Status::Complete(used)) => used,
            Ok(httparse::Status::Partial) if window.len() == MAX_HEAD => {
                return Err(HttpFault::HeadTooLarge)
            }
            Ok(httparse::Status::Partial) => {
                self.head_scanned = window.len();
                return Ok(ResponseStep::Incomplete(buf.len() + 1));
            }
            Err(httparse::Error::TooManyHeaders) => return Err(HttpFault::HeadTooLarge),
            Err(_) => return Err(HttpFault::BadRequest),
        };
        self.head_scanned = 0;
        let status = response.code.unwrap_or(0);
        let http10 = response.version == Some(0);
        let (mut length, mut chunked, mut close, mut keep) = (None::<u64>, false, false, false);
        let mut json = false;
        for header in response.headers.iter() {
            let (name, value) = (header.name, header.value);
            if name.eq_ignore_ascii_case("content-length") {
                content_length(&mut length, value)?;
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                transfer_coding(&mut chunked, value)?;
            } else if name.eq_ignore_ascii_case("content-type") {
                json = is_json(value);
            } else if name.eq_ignore_ascii_case("connection") {
                let (closes, keeps) = connection_tokens(value);
                (close, keep) = (close | closes, keep | keeps);
            }
        }
        // RFC 9112 §6.3: no body for 1xx, 204 and 304; chunked wins over a length; neither
        // is a body that ends with the connection.
        let body = match (status, chunked, length) {
            (100..=199 | 204 | 304, ..) => BodyKind::None,
            (_, true, _) => BodyKind::Chunked,
            (_, false, Some(0)) => BodyKind::None,
            (_, false, Some(n)) => BodyKind::Length(n),
            (_, false, None) => BodyKind::UntilClose,
        };
        if let BodyKind::Length(n) = body {
            if n > self.body.max_body() as u64 {
                return Err(HttpFault::BodyTooLarge);
            }
        }
        self.body.expect_body(body);
        self.until_close = body == BodyKind::UntilClose;
        let keep_alive = !close && (!http10 || keep) && !self.until_close;
        let head = ResponseHead {
            status,
            json,
            body,
            keep_alive,
        };
        Ok(ResponseStep::Head(used, head))
    }
}

/// Appends the head of a JSON-RPC request to `out`: `POST target HTTP/1.1`, `Host`, the JSON
/// content type, `headers` as given, `Content-Length`, and the empty line ending the head.
pub fn write_request_head(
    out: &mut Vec<u8>,
    target: &str,
    host: &str,
    content_length: usize,
    headers: &[(&str, &[u8])],
) {
    let fields: usize = headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
    out.reserve(96 + target.len() + host.len() + fields);
    out.extend_from_slice(b"POST ");
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\ncontent-type: application/json\r\n");
    for (name, value) in headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"content-length: ");
    out.extend_from_slice(itoa::Buffer::new().format(content_length).as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
}
