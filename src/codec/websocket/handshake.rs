//! The server side of the WebSocket opening handshake (RFC 6455 §4.2) without I/O: a
//! request head judged, and the answer to write, `101 Switching Protocols` or a refusal.
//!
//! The head comes from [`RequestDecoder::keeping_fields`](crate::codec::http::RequestDecoder::keeping_fields)
//! (a server reading the stream itself) or [`Head::from_checked_parts`] (an HTTP library's
//! request); the frames that follow the head are the WebSocket's, read with
//! [`WsDecoder`](super::WsDecoder). What is judged, in order (§4.2.1):
//! - a `GET` over HTTP/1.1 with no body, `Upgrade: websocket` and an `upgrade` token in
//!   `Connection`, else `400`;
//! - `Sec-WebSocket-Version: 13`, else `426` naming the version this side speaks (§4.4);
//! - a `Sec-WebSocket-Key` of 16 bytes in base64, else `400`;
//! - the `Origin` (§10.2), by [`Origins`] and the hosts it allows, else `403`; a head with
//!   no `Origin` (not a browser) as the caller says.
//!
//! ```
//! use sansrpc::codec::http::{Hosts, HttpStep, Origins, RequestDecoder};
//! use sansrpc::codec::websocket::handshake::{judge, OriginRule};
//!
//! let mut wire = b"GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\n\
//!     Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
//!     Sec-WebSocket-Version: 13\r\n\r\n".to_vec();
//! let HttpStep::Head(_, head) = RequestDecoder::keeping_fields(0).decode(&mut wire).unwrap() else {
//!     panic!()
//! };
//! let rule = OriginRule { origins: &Origins::Any, hosts: &Hosts::Loopback, allow_missing: true };
//! let opening = judge(&head, &rule).unwrap();
//! assert_eq!(opening.accept(), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
//! let mut answer = Vec::new();
//! opening.write(&mut answer);
//! assert!(answer.starts_with(b"HTTP/1.1 101 Switching Protocols\r\n"));
//! ```

use alloc::vec::Vec;
use core::fmt;

use base64::Engine as _;
use sha1::Digest as _;

use crate::codec::http::{tokens, write_head, BodyKind, Head, Hosts, HttpMethod, Origins};

/// The WebSocket version this side speaks (§4.4): the one of RFC 6455.
pub const VERSION: &str = "13";

/// The GUID a key is hashed with (§1.3).
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Which `Origin` an opening handshake may come from (§10.2): a browser names the page's;
/// other clients send none.
#[derive(Debug, Clone, Copy)]
pub struct OriginRule<'a> {
    /// The origins allowed.
    pub origins: &'a Origins,
    /// The hosts [`Origins::SameAsHosts`] allows pages of.
    pub hosts: &'a Hosts,
    /// Whether a head without `Origin` is taken.
    pub allow_missing: bool,
}

impl OriginRule<'_> {
    /// True when a head with this `Origin` (or none) is taken.
    pub fn allows(&self, origin: Option<&str>) -> bool {
        match origin {
            None => self.allow_missing,
            Some(origin) => self.origins.allows(origin, self.hosts),
        }
    }
}

/// An opening handshake taken: the `Sec-WebSocket-Accept` value of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opening {
    accept: [u8; 28],
}

impl Opening {
    /// The `Sec-WebSocket-Accept` value (§4.2.2): base64 of the SHA-1 of the key and the
    /// GUID.
    pub fn accept(&self) -> &str {
        // Base64 is ASCII.
        core::str::from_utf8(&self.accept).unwrap_or_default()
    }

    /// Appends the `101 Switching Protocols` answer to `out`; the WebSocket's frames follow
    /// it.
    pub fn write(&self, out: &mut Vec<u8>) {
        let fields: [(&str, &[u8]); 3] = [
            ("upgrade", b"websocket"),
            ("connection", b"Upgrade"),
            ("sec-websocket-accept", &self.accept),
        ];
        write_head(out, 101, None, &fields);
    }
}

/// An opening handshake refused: answer it with [`write`](Refusal::write) and close the
/// connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// Not a WebSocket opening handshake, or a malformed one (`400`): the reason.
    BadRequest(&'static str),
    /// A `Sec-WebSocket-Version` other than 13 (`426`, naming 13).
    Version,
    /// An `Origin` the server does not allow (`403`), or none where one is required.
    Origin,
}

impl Refusal {
    /// The status to answer with.
    pub fn status(self) -> u16 {
        match self {
            Refusal::BadRequest(_) => 400,
            Refusal::Version => 426,
            Refusal::Origin => 403,
        }
    }

    /// Appends the answer to `out`: the status, the reason as a text body, and
    /// `Connection: close` (with `Sec-WebSocket-Version: 13` for [`Refusal::Version`]).
    pub fn write(self, out: &mut Vec<u8>) {
        let reason = self.reason();
        let fields: [(&str, &[u8]); 3] = [
            ("content-type", b"text/plain; charset=utf-8"),
            ("connection", b"close"),
            ("sec-websocket-version", VERSION.as_bytes()),
        ];
        let named = if self == Refusal::Version { 3 } else { 2 };
        write_head(out, self.status(), Some(reason.len()), &fields[..named]);
        out.extend_from_slice(reason.as_bytes());
    }

    /// Why, in a few words (the body [`write`](Refusal::write) gives the answer).
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::BadRequest(why) => why,
            Refusal::Version => "WebSocket version 13 only",
            Refusal::Origin => "origin not allowed",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.reason(), self.status())
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Refusal {}

/// Judges the head of an opening handshake (the module's rules, in their order); the head
/// must keep its fields ([`Head::fields`]).
pub fn judge(head: &Head, origin: &OriginRule<'_>) -> Result<Opening, Refusal> {
    let bad = |why| Err(Refusal::BadRequest(why));
    if head.method != HttpMethod::Get {
        return bad("a WebSocket opens with GET");
    }
    if head.http10 {
        return bad("a WebSocket opens over HTTP/1.1");
    }
    if head.body != BodyKind::None {
        return bad("a WebSocket's opening request has no body");
    }
    let upgrade = head.field("upgrade").unwrap_or_default();
    if !tokens(upgrade).any(|t| t.eq_ignore_ascii_case(b"websocket")) {
        return bad("no Upgrade: websocket");
    }
    let connection = head.field("connection").unwrap_or_default();
    if !tokens(connection).any(|t| t.eq_ignore_ascii_case(b"upgrade")) {
        return bad("no Connection: Upgrade");
    }
    if head.field("sec-websocket-version") != Some(VERSION.as_bytes()) {
        return Err(Refusal::Version);
    }
    let Some(key) = head.field("sec-websocket-key").filter(|k| is_key(k)) else {
        return bad("no Sec-WebSocket-Key of 16 bytes in base64");
    };
    // An `Origin` that is not text is one no rule allows, not a missing one.
    let origin_text = head.origin.as_deref();
    if !origin.allows(origin_text) || (origin_text.is_none() && head.field("origin").is_some()) {
        return Err(Refusal::Origin);
    }
    Ok(Opening {
        accept: accept_key(key),
    })
}

/// True for a `Sec-WebSocket-Key` of 16 bytes in (canonical) base64 (§4.1).
fn is_key(key: &[u8]) -> bool {
    let mut nonce = [0; 18];
    key.len() == 24 && BASE64.decode_slice(key, &mut nonce) == Ok(16)
}

/// The `Sec-WebSocket-Accept` value for a `Sec-WebSocket-Key` (§4.2.2): base64 of the
/// SHA-1 of the key and the GUID, 28 bytes.
pub fn accept_key(key: &[u8]) -> [u8; 28] {
    let mut sha = sha1::Sha1::new();
    sha.update(key);
    sha.update(GUID);
    let digest = sha.finalize();
    let mut accept = [0; 28];
    // 20 bytes are 28 in base64: always room.
    let _ = BASE64.encode_slice(digest, &mut accept);
    accept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::http::{HttpStep, RequestDecoder};
    use alloc::string::String;

    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    fn head(text: &str) -> Head {
        let mut wire = text.as_bytes().to_vec();
        match RequestDecoder::keeping_fields(0).decode(&mut wire) {
            Ok(HttpStep::Head(_, head)) => head,
            other => panic!("{other:?}"),
        }
    }

    fn opening(fields: &str) -> String {
        alloc::format!("GET / HTTP/1.1\r\nHost: x\r\n{fields}\r\n")
    }

    fn standard() -> String {
        alloc::format!(
            "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {KEY}\r\n\
             Sec-WebSocket-Version: 13\r\n"
        )
    }

    const ANY: OriginRule<'static> = OriginRule {
        origins: &Origins::Any,
        hosts: &Hosts::Loopback,
        allow_missing: true,
    };

    #[test]
    fn the_rfc_example_key_is_accepted_with_the_rfc_answer() {
        // RFC 6455 §1.3.
        assert_eq!(&accept_key(KEY.as_bytes()), b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        let opening = judge(&head(&opening(&standard())), &ANY).unwrap();
        let mut out = Vec::new();
        opening.write(&mut out);
        assert_eq!(
            out,
            b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\
              sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        );
    }

    #[test]
    fn tokens_and_names_are_read_in_any_case_and_in_lists() {
        let fields = alloc::format!(
            "upgrade: WebSocket\r\nconnection: keep-alive, UPGRADE\r\nsec-websocket-key: {KEY}\r\n\
             SEC-WEBSOCKET-VERSION: 13\r\n"
        );
        assert!(judge(&head(&opening(&fields)), &ANY).is_ok());
    }

    #[test]
    fn each_missing_piece_is_refused_with_its_status() {
        let cases = [
            ("Upgrade: websocket\r\n", "Upgrade: h2c\r\n", 400),
            ("Connection: Upgrade\r\n", "Connection: keep-alive\r\n", 400),
            (
                "Sec-WebSocket-Version: 13\r\n",
                "Sec-WebSocket-Version: 8\r\n",
                426,
            ),
            ("Sec-WebSocket-Version: 13\r\n", "", 426),
            (KEY, "dGhlIHNhbXBsZSBub25jZQ", 400),
            (KEY, "dGhlIHNhbXBsZSBub25jZR==", 400),
            (KEY, "dGhlIHNhbXBsZSBub25jZQ==dGhl", 400),
            (KEY, "", 400),
        ];
        for (from, to, status) in cases {
            let fields = standard().replace(from, to);
            let refusal = judge(&head(&opening(&fields)), &ANY).unwrap_err();
            assert_eq!(refusal.status(), status, "{fields}");
        }
        let post = standard() + "Content-Length: 2\r\n";
        let post = alloc::format!("POST / HTTP/1.1\r\nHost: x\r\n{post}\r\n");
        assert_eq!(judge(&head(&post), &ANY).unwrap_err().status(), 400);
        let old = alloc::format!("GET / HTTP/1.0\r\n{}\r\n", standard());
        assert_eq!(judge(&head(&old), &ANY).unwrap_err().status(), 400);
        let body = standard() + "Content-Length: 2\r\n";
        assert_eq!(
            judge(&head(&opening(&body)), &ANY).unwrap_err().status(),
            400
        );
    }

    #[test]
    fn the_origin_is_judged_by_the_rule() {
        let loopback = OriginRule {
            origins: &Origins::SameAsHosts,
            hosts: &Hosts::Loopback,
            allow_missing: false,
        };
        let from = |origin: &str| head(&opening(&(standard() + origin)));
        assert!(judge(&from("Origin: http://localhost:3000\r\n"), &loopback).is_ok());
        let far = judge(&from("Origin: https://evil.example\r\n"), &loopback);
        assert_eq!(far, Err(Refusal::Origin));
        assert_eq!(judge(&from(""), &loopback), Err(Refusal::Origin));
        let missing_ok = OriginRule {
            allow_missing: true,
            ..loopback
        };
        assert!(judge(&from(""), &missing_ok).is_ok());
        // A malformed head is refused for that first, whatever its origin.
        let bad = head(&opening("Origin: https://evil.example\r\n"));
        assert_eq!(judge(&bad, &loopback).unwrap_err().status(), 400);
    }

    #[test]
    fn refusals_are_whole_answers_that_close() {
        let mut out = Vec::new();
        Refusal::Version.write(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 426 Upgrade Required\r\n"),
            "{text}"
        );
        assert!(text.contains("sec-websocket-version: 13\r\n"), "{text}");
        assert!(text.contains("connection: close\r\n"), "{text}");
        assert!(
            text.ends_with("\r\n\r\nWebSocket version 13 only"),
            "{text}"
        );
        let mut out = Vec::new();
        Refusal::Origin.write(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{text}");
        assert!(!text.contains("sec-websocket-version"), "{text}");
        assert!(
            text.ends_with("content-length: 18\r\n\r\norigin not allowed"),
            "{text}"
        );
    }
}
