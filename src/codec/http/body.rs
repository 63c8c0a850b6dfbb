//! What a server machine that writes its responses piece by piece (MCP's Streamable HTTP,
//! A2A's JSON-RPC binding: one JSON body, or Server-Sent Events as they come) tells the
//! driver that moves the bytes, and the request rules such servers share.

use alloc::string::String;
use alloc::vec::Vec;

use super::{write_head, Head};

/// What a machine's `poll_stream` did with one response stream: the same contract for
/// every protocol, so one driver loop writes them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyStep {
    /// Nothing to write now: wait until the machine says the stream is ready.
    Wait,
    /// Bytes were appended: write them, then poll again.
    Data,
    /// Bytes may have been appended: write them; the response is complete.
    End,
    /// The response must be cut (the client does not read it, or what it belonged to is
    /// gone): close the connection without writing more.
    Abort,
}

/// The token of an `Authorization: Bearer …` header (RFC 6750 §2.1), trimmed; `None`
/// without one, or with an empty one.
///
/// ```
/// use sansrpc::codec::http::{bearer_token, Head};
///
/// let head = Head::from_checked_parts("POST", "/", [("authorization", &b"Bearer abc "[..])], true).unwrap();
/// assert_eq!(bearer_token(&head), Some("abc"));
/// ```
pub fn bearer_token(head: &Head) -> Option<&str> {
    let value = head.field_lowercase("authorization")?;
    let value = super::as_text(value.trim_ascii())?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Appends the line that starts a chunk of `len` bytes of a chunked body (RFC 9112 §7.1):
/// the size in hexadecimal, then CRLF. The chunk's data and its closing CRLF follow; a
/// body ends with the last chunk, `0\r\n\r\n`.
///
/// ```
/// let mut out = Vec::new();
/// sansrpc::codec::http::chunk_line(&mut out, 300);
/// assert_eq!(out, b"12c\r\n");
/// ```
pub fn chunk_line(out: &mut Vec<u8>, len: usize) {
    let mut digits = [0u8; 16];
    let mut n = len;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b"0123456789abcdef"[n % 16];
        n /= 16;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
    out.extend_from_slice(b"\r\n");
}

/// What a server's driver found of a request's bearer token, with the application's
/// validator, for the protocol machine to decide on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorized {
    /// No validator (the server takes no tokens): nothing was checked.
    NotRequired,
    /// No `Authorization: Bearer` token: 401.
    Missing,
    /// A token the validator refused (expired, another audience): 401 `invalid_token`.
    Invalid,
    /// A valid token without these scopes: 403 `insufficient_scope`.
    InsufficientScope(String),
    /// A valid token.
    Valid,
}

impl Authorized {
    /// The refusal this finding calls for (RFC 6750 §3): its status (401, or 403 for a
    /// missing scope) and its `WWW-Authenticate` value, `Bearer`, then `params` (the
    /// server's own, such as MCP's `resource_metadata="…"`) and the error; `None` when the
    /// request goes on (a valid token, or nothing checked).
    pub fn refusal(&self, params: &str) -> Option<(u16, String)> {
        let (status, error) = match self {
            Authorized::Valid | Authorized::NotRequired => return None,
            Authorized::Missing => (401, None),
            Authorized::Invalid => (401, Some(("invalid_token", None))),
            Authorized::InsufficientScope(scope) => {
                (403, Some(("insufficient_scope", Some(scope.as_str()))))
            }
        };
        let mut challenge = String::from("Bearer");
        let mut sep = " ";
        if !params.is_empty() {
            challenge.push_str(sep);
            challenge.push_str(params);
            sep = ", ";
        }
        if let Some((error, scope)) = error {
            challenge.push_str(sep);
            challenge.push_str("error=\"");
            challenge.push_str(error);
            challenge.push('"');
            if let Some(scope) = scope {
                challenge.push_str(", scope=\"");
                challenge.push_str(scope);
                challenge.push('"');
            }
        }
        Some((status, challenge))
    }
}

/// An HTTP answer to write whole: a status, header fields and a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholeResponse {
    /// The status.
    pub status: u16,
    /// The header fields (besides `content-length`).
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl WholeResponse {
    /// `status`, with no field and no body.
    pub fn new(status: u16) -> Self {
        WholeResponse {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// `status` with a JSON `body`.
    pub fn json(status: u16, body: Vec<u8>) -> Self {
        let mut r = WholeResponse::new(status);
        r.headers
            .push(("content-type", String::from("application/json")));
        r.body = body;
        r
    }

    /// The answer with `status` a JSON-RPC server over HTTP gives without its machine (a
    /// fault of the request's framing, a body over the limit, a server that closes or is
    /// past its bounds): a JSON-RPC error with id `null` that names it, `-32600` for what
    /// the request did and `-32603` for what the server did.
    ///
    /// ```
    /// use sansrpc::codec::http::WholeResponse;
    ///
    /// let refused = WholeResponse::refusal(413);
    /// assert_eq!((refused.status, &refused.headers[0].1[..]), (413, "application/json"));
    /// assert!(refused.body.starts_with(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Payload Too Large"#));
    /// ```
    pub fn refusal(status: u16) -> Self {
        let (code, why) = match status {
            400 => ("-32600", "Bad Request: malformed HTTP request"),
            413 => (
                "-32600",
                "Payload Too Large: the request body is over the limit",
            ),
            431 => (
                "-32600",
                "Request Header Fields Too Large: the request head is over the limit",
            ),
            501 => ("-32600", "Not Implemented: unsupported transfer coding"),
            503 => (
                "-32603",
                "Service Unavailable: the server could not serve it now",
            ),
            _ => ("-32603", "Internal error"),
        };
        let mut body = Vec::from(&br#"{"jsonrpc":"2.0","id":null,"error":{"code":"#[..]);
        body.extend_from_slice(code.as_bytes());
        body.extend_from_slice(br#","message":""#);
        body.extend_from_slice(why.as_bytes());
        body.extend_from_slice(br#""}}"#);
        WholeResponse::json(status, body)
    }

    /// The same with the field `name: value` added.
    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, String::from(value)));
        self
    }

    /// The response on the wire: head (with `content-length`) and body.
    pub fn write(&self, out: &mut Vec<u8>) {
        let headers: Vec<(&str, &[u8])> = self
            .headers
            .iter()
            .map(|(n, v)| (*n, v.as_bytes()))
            .collect();
        write_head(out, self.status, Some(self.body.len()), &headers);
        out.extend_from_slice(&self.body);
    }

    /// [`write`](Self::write) into a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }
}
