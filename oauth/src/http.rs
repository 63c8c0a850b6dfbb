//! HTTP requests and answers as plain data: what the machine asks a driver to send, and
//! what the driver hands back. No I/O here.

use std::fmt;

/// The HTTP method of a request the machine emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `GET`: metadata documents, and the authorization endpoint for a headless user agent.
    Get,
    /// `POST`: registration and the token endpoint.
    Post,
}

impl Method {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An HTTP request for a driver to send: method, absolute URL, headers and body.
///
/// The driver sends it as it is, follows no redirect, and hands the answer back whatever
/// its status. Header names are lowercase.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// The method.
    pub method: Method,
    /// The absolute `http`/`https` URL.
    pub url: String,
    /// Header fields in order, names in lowercase.
    pub headers: Vec<(String, String)>,
    /// The body (empty for `GET`).
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// A `GET` of `url` with no header and no body.
    pub fn get(url: impl Into<String>) -> HttpRequest {
        HttpRequest {
            method: Method::Get,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A `POST` of `body` to `url` with no header.
    pub fn post(url: impl Into<String>, body: Vec<u8>) -> HttpRequest {
        HttpRequest {
            method: Method::Post,
            url: url.into(),
            headers: Vec::new(),
            body,
        }
    }

    /// This request with one more header field (`name` lowercased).
    pub fn header(mut self, name: &str, value: impl Into<String>) -> HttpRequest {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// The value of the first header field called `name` (any case).
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

// Token requests carry client secrets, codes and refresh tokens: their bodies and the
// `authorization` header are not printed.
impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(n, v)| {
                if n == "authorization" {
                    (n.as_str(), "<redacted>")
                } else {
                    (n.as_str(), v.as_str())
                }
            })
            .collect();
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body", &format_args!("<{} bytes>", self.body.len()))
            .finish()
    }
}

/// An HTTP answer as a driver received it: status, headers and the whole body.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Header fields in order, as received (names compared without case).
    pub headers: Vec<(String, String)>,
    /// The body, whole. A driver bounds what it reads; the machine refuses a body longer
    /// than `Config::max_body`.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// An answer with `status`, no header and no body.
    pub fn new(status: u16) -> HttpResponse {
        HttpResponse {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// An answer with `status` and a JSON body (with its `content-type`).
    pub fn json(status: u16, body: &serde_json::Value) -> HttpResponse {
        HttpResponse::new(status)
            .with_header("content-type", "application/json")
            .with_body(body.to_string())
    }

    /// This answer with one more header field.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> HttpResponse {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// This answer with `body`.
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> HttpResponse {
        self.body = body.into();
        self
    }

    /// The value of the first header field called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The values of every header field called `name` (any case), in order.
    pub fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body", &format_args!("<{} bytes>", self.body.len()))
            .finish()
    }
}

/// Up to `max` characters of `body` as text, for an error message (the rest elided).
pub(crate) fn excerpt(body: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let mut out: String = text.chars().take(max).collect();
    if text.chars().count() > max {
        out.push('…');
    }
    out
}

/// `pairs` as an `application/x-www-form-urlencoded` body.
pub(crate) fn form(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut serializer = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        serializer.append_pair(name, value);
    }
    serializer.finish().into_bytes()
}

/// `s` encoded as `application/x-www-form-urlencoded` (RFC 6749 appendix B), as a client
/// id and secret are before they go into HTTP Basic credentials (RFC 6749 §2.3.1).
pub(crate) fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
