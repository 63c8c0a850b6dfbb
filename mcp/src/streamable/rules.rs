//! The header and body rules of MCP's Streamable HTTP, each a function of the request
//! alone: which Host and Origin a server accepts, what `Accept` must say, which protocol
//! revision a POST speaks, and the 2026-07-28 checks of `_meta` and of the `Mcp-*`
//! headers against the body.

use std::string::String;
use std::vec::Vec;

use serde::Deserialize;
use serde_json::{Map, Value};

use sansrpc::codec::http::Head;
use serde_json::value::RawValue as Json;

use super::{error_body, ParamHeader, Response};

use crate::types::error_codes::{HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION};
use crate::types::version::STATELESS;

/// A header's value as text (trimmed of optional whitespace), when it is text; `name` in
/// lower case.
pub(super) fn text<'h>(head: &'h Head, name: &str) -> Option<&'h str> {
    // Trimmed as bytes (a field's optional whitespace is spaces and tabs), then read as
    // text: `str::trim` decoded every character to test it for Unicode whitespace.
    head.field_lowercase(name)
        .and_then(|v| sansrpc::codec::http::as_text(v.trim_ascii()))
}

/// True when the `Accept` header lists every one of `medias` (each itself, `*/*`, or its
/// type's wildcard). Read as bytes, in one pass: a media range is ASCII, and an item that
/// is not one matches nothing.
pub(super) fn accepts(head: &Head, medias: &[&str]) -> bool {
    let Some(accept) = head.field_lowercase("accept") else {
        return false;
    };
    // What the SDKs send, byte for byte: both of MCP's media types, read at once.
    let common = |m: &&str| matches!(*m, "application/json" | "text/event-stream");
    if accept == b"application/json, text/event-stream" && medias.iter().all(common) {
        return true;
    }
    // One bit per media listed so far (at most 8 asked for).
    let all = (1u8 << medias.len().min(8)) - 1;
    let mut listed = 0u8;
    for item in accept.split(|&b| b == b',') {
        let range = match item.iter().position(|&b| b == b';') {
            Some(end) => &item[..end],
            None => item,
        };
        let range = range.trim_ascii();
        for (i, media) in medias.iter().take(8).enumerate() {
            let media = media.as_bytes();
            let kind = media.split(|&b| b == b'/').next().unwrap_or_default();
            let matches = range.eq_ignore_ascii_case(media)
                || range == b"*/*"
                || range
                    .strip_suffix(b"/*")
                    .is_some_and(|t| t.eq_ignore_ascii_case(kind));
            if matches {
                listed |= 1 << i;
            }
        }
        if listed == all {
            return true;
        }
    }
    listed == all
}

/// A header value as MCP sends it: plain ASCII, or `=?base64?…?=` around the base64 of
/// UTF-8 (for values that cannot be plain). `None` for a value that claims the encoding
/// and is not valid base64 or UTF-8.
pub fn decode_header_value(value: &str) -> Option<String> {
    let value = value.trim();
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(base64_decode(encoded)?).ok(),
        None => Some(String::from(value)),
    }
}

/// A header value as an MCP client sends it (the inverse of [`decode_header_value`]):
/// plain when it is visible ASCII with inner spaces only, else `=?base64?…?=` around the
/// base64 of its UTF-8 (a value that itself starts `=?base64?` is encoded too, so that it
/// reads back as sent).
pub fn encode_header_value(value: &str) -> String {
    let plain = value.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.starts_with("=?base64?");
    if plain {
        return String::from(value);
    }
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::from("=?base64?");
    for chunk in value.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out.push_str("?=");
    out
}

/// Standard base64 (with its padding), strictly.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (i, quad) in bytes.chunks(4).enumerate() {
        let last = i == bytes.len() / 4 - 1;
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &quad[..4 - pad] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * pad as u32;
        let [_, a, b, c] = n.to_be_bytes();
        out.extend_from_slice(&[a, b, c][..3 - pad]);
    }
    Some(out)
}

/// What a 2026-07-28 request's body says for the header checks.
#[derive(Debug, Default)]
pub(super) struct Stateless<'a> {
    /// The request's id, as raw JSON.
    pub id: Option<&'a str>,
    pub method: Option<&'a str>,
    /// `_meta` present, and its protocol version and capabilities.
    pub meta: bool,
    pub version: Option<String>,
    pub capabilities: bool,
    /// `params.name` (tools/call, prompts/get) or `params.uri` (resources/read).
    pub name: Option<String>,
    /// `params.arguments` of a `tools/call`, as raw JSON.
    pub arguments: Option<&'a Json>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<&'a Json>,
    #[serde(borrow, default)]
    method: Option<&'a str>,
    #[serde(borrow, default)]
    params: Option<&'a Json>,
}

#[derive(Deserialize, Default)]
struct Params<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a Json>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(borrow, default)]
    arguments: Option<&'a Json>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
    version: Option<String>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", borrow, default)]
    capabilities: Option<&'a Json>,
}

/// `T` read from a message's bytes (`None` when it does not parse): `serde_json::from_slice`,
/// or on wasm32 `serde_json::from_str` once they are known to be UTF-8, so that a program in
/// a browser carries one of serde_json's readers, not two (every other decoder there reads
/// text; the client reads its frames and the server's answers with the core's member
/// reader, `client::wire`). Bytes that are not UTF-8 parse in neither.
pub(super) fn json_of<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Option<T> {
    #[cfg(target_arch = "wasm32")]
    return serde_json::from_str(core::str::from_utf8(bytes).ok()?).ok();
    #[cfg(not(target_arch = "wasm32"))]
    serde_json::from_slice(bytes).ok()
}

/// Reads what the 2026 checks need from a single JSON-RPC message; `None` for a body that
/// is not one object (a batch, or not JSON).
pub(super) fn stateless(body: &[u8]) -> Option<Stateless<'_>> {
    let message: Message<'_> = json_of(body)?;
    let mut out = Stateless {
        id: message.id.map(Json::get),
        method: message.method,
        ..Stateless::default()
    };
    let params: Params<'_> = message
        .params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    if let Some(meta) = params.meta {
        out.meta = true;
        if let Ok(meta) = serde_json::from_str::<Meta<'_>>(meta.get()) {
            out.version = meta.version;
            out.capabilities = meta.capabilities.is_some();
        }
    }
    if message.method == Some("tools/call") {
        out.arguments = params.arguments;
    }
    out.name = match message.method {
        Some("tools/call" | "prompts/get") => params.name,
        Some("resources/read") => params.uri,
        _ => None,
    };
    Some(out)
}

/// True when `_meta` names the stateless revision's protocol version at all (a request of
/// the 2026 era, whatever the version says).
pub(super) fn has_meta_version(body: &[u8]) -> bool {
    stateless(body).is_some_and(|s| s.version.is_some())
}

/// Checks a 2026-07-28 request against its headers, in the order the revision (and its
/// conformance suite) gives: a missing `MCP-Protocol-Version` header, then a `_meta`
/// lacking a required key (`-32602`), then a header that disagrees with the body
/// (`-32020`: version, `Mcp-Method`, `Mcp-Name`), then an unsupported version
/// (`-32022`). Every refusal is HTTP 400 with the request's id.
pub(super) fn check_stateless(
    head: &Head,
    body: &Stateless<'_>,
    param_headers: &[ParamHeader],
) -> Result<(), Response> {
    let id = body.id;
    let refuse = |code: i64, message: &str, data: Option<&[u8]>| {
        Err(Response::json(400, error_body(id, code, message, data)))
    };
    let Some(header_version) = text(head, "mcp-protocol-version") else {
        return refuse(
            HEADER_MISMATCH,
            "Header mismatch: MCP-Protocol-Version header missing",
            None,
        );
    };
    if !body.meta {
        return refuse(-32602, "Invalid params: _meta is required", None);
    }
    let Some(version) = body.version.as_deref() else {
        return refuse(
            -32602,
            "Invalid params: _meta lacks io.modelcontextprotocol/protocolVersion",
            None,
        );
    };
    if !body.capabilities {
        return refuse(
            -32602,
            "Invalid params: _meta lacks io.modelcontextprotocol/clientCapabilities",
            None,
        );
    }
    if header_version != version {
        return refuse(
            HEADER_MISMATCH,
            "Header mismatch: MCP-Protocol-Version differs from _meta's protocol version",
            None,
        );
    }
    let method = body.method.unwrap_or_default();
    match text(head, "mcp-method") {
        Some(m) if m == method => {}
        Some(_) => {
            return refuse(
                HEADER_MISMATCH,
                "Header mismatch: Mcp-Method differs from the body's method",
                None,
            )
        }
        None => {
            return refuse(
                HEADER_MISMATCH,
                "Header mismatch: Mcp-Method header missing",
                None,
            )
        }
    }
    if matches!(method, "tools/call" | "prompts/get" | "resources/read") {
        let header = text(head, "mcp-name").map(decode_header_value);
        match (header, body.name.as_deref()) {
            (None, _) => {
                return refuse(
                    HEADER_MISMATCH,
                    "Header mismatch: Mcp-Name header missing",
                    None,
                )
            }
            (Some(None), _) => {
                return refuse(
                    HEADER_MISMATCH,
                    "Header mismatch: Mcp-Name is not valid base64",
                    None,
                )
            }
            (Some(Some(h)), Some(b)) if h == b => {}
            (Some(Some(_)), _) => {
                return refuse(
                    HEADER_MISMATCH,
                    "Header mismatch: Mcp-Name differs from the body",
                    None,
                )
            }
        }
    }
    if method == "tools/call" {
        let tool = body.name.as_deref().unwrap_or_default();
        let mut mirrored = param_headers.iter().filter(|p| p.tool == tool).peekable();
        if mirrored.peek().is_some() {
            // Read once for all of the tool's headers.
            let arguments = body
                .arguments
                .and_then(|a| serde_json::from_str::<Map<String, Value>>(a.get()).ok());
            for p in mirrored {
                // In lower case, as `text` takes names.
                let mut name = String::from("mcp-param-");
                name.push_str(&p.header.to_ascii_lowercase());
                let header = text(head, &name).map(decode_header_value);
                if let Err(message) = p.check(header, arguments.as_ref()) {
                    return refuse(HEADER_MISMATCH, message, None);
                }
            }
        }
    }
    if version != STATELESS {
        return refuse(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            Some(&unsupported_data(Some(version))),
        );
    }
    Ok(())
}

/// The `data` of an unsupported-protocol-version error: the revision served without a
/// session, and the one `requested`, if known.
pub(super) fn unsupported_data(requested: Option<&str>) -> Vec<u8> {
    let mut data = Vec::from(&b"{\"supported\":[\""[..]);
    data.extend_from_slice(STATELESS.as_bytes());
    data.extend_from_slice(b"\"]");
    if let Some(requested) = requested {
        data.extend_from_slice(b",\"requested\":");
        sansrpc::message::write_json_string(&mut data, requested);
    }
    data.push(b'}');
    data
}

/// The response headers a page may read besides the simple ones: the session, the
/// revision, and the challenge an OAuth client reads its metadata URL from.
const EXPOSED: &[u8] = b"mcp-session-id, mcp-protocol-version, www-authenticate";

/// The CORS header fields of an answer to a request from allowed page origin `origin`:
/// the origin may read it, and the MCP headers with it.
pub(super) fn cors_fields(origin: &str) -> [(&'static str, &[u8]); 3] {
    [
        ("access-control-allow-origin", origin.as_bytes()),
        ("access-control-expose-headers", EXPOSED),
        ("vary", b"Origin"),
    ]
}

/// The request headers a preflight allows when it names none: what MCP's clients send.
const ALLOWED: &str = "content-type, accept, authorization, mcp-session-id, \
    mcp-protocol-version, last-event-id, mcp-method, mcp-name";

/// The answer to a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`):
/// `204` allowing `methods` and the headers the page asked for (else MCP's), cached by the
/// browser for ten minutes. The origin's own fields are every CORS answer's
/// ([`cors_fields`]).
pub(super) fn preflight(head: &Head, methods: &str) -> Response {
    let requested = head.cors_request_headers.as_deref().unwrap_or(ALLOWED);
    Response::new(204)
        .header("access-control-allow-methods", methods)
        .header("access-control-allow-headers", requested)
        .header("access-control-max-age", "600")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_lists_each_media_type_itself_or_by_a_wildcard() {
        let both = ["application/json", "text/event-stream"];
        let accepts_both = |value: &[u8]| {
            let head = Head::from_parts("POST", "/mcp", [("accept", value)], true).unwrap();
            accepts(&head, &both)
        };
        for yes in [
            &b"application/json, text/event-stream"[..],
            b"text/event-stream,application/json",
            b"Application/JSON; q=0.9 , TEXT/EVENT-STREAM",
            b"*/*",
            b"application/*, text/*",
            b"application/json, \xff\xfe, text/event-stream",
        ] {
            assert!(accepts_both(yes), "{:?}", String::from_utf8_lossy(yes));
        }
        for no in [
            &b"application/json"[..],
            b"text/event-stream",
            b"application/jsonx, text/event-stream",
            b"text/*",
            b"",
        ] {
            assert!(!accepts_both(no), "{:?}", String::from_utf8_lossy(no));
        }
        let head = Head::from_parts("GET", "/mcp", [("accept", &b"text/*"[..])], true).unwrap();
        assert!(accepts(&head, &["text/event-stream"]));
        let head = Head::from_parts("GET", "/mcp", [], true).unwrap();
        assert!(!accepts(&head, &["text/event-stream"]));
    }

    #[test]
    fn header_values_encode_to_what_decodes_back() {
        assert_eq!(encode_header_value("get-weather"), "get-weather");
        assert_eq!(encode_header_value("file:///a b.txt"), "file:///a b.txt");
        assert_eq!(encode_header_value("Hello"), "Hello");
        assert_eq!(encode_header_value("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(encode_header_value(" lead"), "=?base64?IGxlYWQ=?=");
        assert_eq!(encode_header_value("a\r\nb"), "=?base64?YQ0KYg==?=");
        for value in [
            "",
            "x",
            "ab",
            "abc",
            "日本語",
            "=?base64?SGVsbG8=?=",
            "tab\there",
            "end ",
        ] {
            let encoded = encode_header_value(value);
            assert!(
                encoded.bytes().all(|b| b == b' ' || b.is_ascii_graphic()),
                "{encoded:?}"
            );
            assert_eq!(
                decode_header_value(&encoded).as_deref(),
                Some(value),
                "{encoded:?}"
            );
        }
    }

    #[test]
    fn base64_header_values_decode_strictly() {
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=?=").as_deref(),
            Some("Hello")
        );
        assert_eq!(decode_header_value("  plain  ").as_deref(), Some("plain"));
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8?="),
            None,
            "bad padding"
        );
        assert_eq!(decode_header_value("=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(decode_header_value("SGVsbG8=").as_deref(), Some("SGVsbG8="));
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=").as_deref(),
            Some("=?base64?SGVsbG8="),
            "no ?= suffix: literal"
        );
    }
}
