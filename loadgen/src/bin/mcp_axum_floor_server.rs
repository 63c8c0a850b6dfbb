//! The floor under an MCP server mounted in axum, for the load generator's MCP tables:
//! `axum::serve` (HTTP/1.1 and h2c, Nagle's algorithm off, as `mcp-rmcp-server` and
//! `sansrpc-axum-server`) with one handler at `/mcp` that does the least the load
//! generator checks and nothing of MCP: `initialize` gets a fixed result and a fixed
//! session id, `notifications/initialized` gets `202`, and a call gets `a + b` as text
//! with its id, the three numbers found in the body by their keys. No JSON parsing, no
//! header checks, no sessions, no tool table: what any MCP server in axum pays before its
//! own work (hyper, axum's routing, the request and response bodies, the kernel's loopback).
//!
//! `mcp-axum-floor-server json|sse`: `sse` answers a call as one event of an event stream
//! (the whole stream in one body). The first line on stdout is the bound address
//! (`127.0.0.1:0`); it serves until killed.

#[path = "../axum_serve.rs"]
mod axum_serve;
#[path = "../backlog.rs"]
mod backlog;

use axum::body::Bytes;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use memchr::memmem::Finder;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"floor","version":"0"}}}"#;

/// The searches of a body, each set up once.
struct Finders {
    initialize: Finder<'static>,
    id: Finder<'static>,
    a: Finder<'static>,
    b: Finder<'static>,
}

impl Finders {
    fn new() -> Self {
        Finders {
            initialize: Finder::new(br#""initialize""#),
            id: Finder::new(br#""id":"#),
            a: Finder::new(br#""a":"#),
            b: Finder::new(br#""b":"#),
        }
    }
}

/// The integer `key` (a `"name":` finder) is followed by (after any spaces) in `body`.
fn number(body: &[u8], key: &Finder<'_>) -> Option<i64> {
    let at = key.find(body)? + key.needle().len();
    let rest = body[at..].trim_ascii_start();
    let (negative, rest) = match rest.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, rest),
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 18 {
        return None;
    }
    let n = rest[..digits]
        .iter()
        .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    Some(if negative { -n } else { n })
}

fn mcp(find: &Finders, sse: bool, body: &[u8]) -> Response {
    if find.initialize.find(body).is_some() {
        let headers = [
            (header::CONTENT_TYPE, "application/json"),
            (header::HeaderName::from_static("mcp-session-id"), "floor"),
        ];
        return (headers, INITIALIZE).into_response();
    }
    let (Some(id), Some(a), Some(b)) = (
        number(body, &find.id),
        number(body, &find.a),
        number(body, &find.b),
    ) else {
        // The notification (or anything else): accepted.
        return StatusCode::ACCEPTED.into_response();
    };
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
        a.wrapping_add(b)
    );
    if sse {
        let event = format!("event: message\ndata: {answer}\n\n");
        return ([(header::CONTENT_TYPE, "text/event-stream")], event).into_response();
    }
    ([(header::CONTENT_TYPE, "application/json")], answer).into_response()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let sse = std::env::args().nth(1).as_deref() == Some("sse");
    let find = std::sync::Arc::new(Finders::new());
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |body: Bytes| async move { mcp(&find, sse, &body) }),
    );
    axum_serve::serve(app).await
}
