//! The Streamable HTTP MCP client's wait for its session's GET stream, against a server
//! written here on a raw loopback socket so that it can misbehave: after
//! `notifications/initialized` the client opens the GET stream and holds its next POSTs
//! until the stream's answer head is in (a server may send its requests there), but a
//! server that never answers the GET holds them 10 s at most, and a server that refuses
//! the GET (405) holds them not at all.
#![cfg(not(target_arch = "wasm32"))]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sansrpc::connection::{Config, Profile};
use sansrpc::RawValue;
use sansrpc_tokio::{AsyncRouter, Builder};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with the session's GET.
#[derive(Clone, Copy)]
enum Get {
    /// Reads it and never answers.
    Hang,
    /// Answers 405 Method Not Allowed.
    Refuse,
    /// Answers 405, refuses every `notifications/cancelled` with 400 and an error without
    /// an id, and answers a `ping` only once it has refused one.
    RefuseCancels,
}

/// What the server saw: each request's method (`GET`, or the JSON-RPC method of a POST)
/// with the time it came in.
type Seen = Arc<Mutex<Vec<(String, Instant)>>>;

/// Reads one HTTP/1.1 request: the request line's method and the body (by Content-Length).
async fn read_request(
    r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> Option<(String, Vec<u8>)> {
    let mut line = String::new();
    if r.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let method = line.split(' ').next()?.to_owned();
    let mut length = 0;
    loop {
        let mut header = String::new();
        r.read_line(&mut header).await.ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).await.ok()?;
    Some((method, body))
}

async fn serve(stream: TcpStream, get: Get, seen: Seen, refused: Arc<tokio::sync::Notify>) {
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    while let Some((method, body)) = read_request(&mut r).await {
        if method == "GET" {
            seen.lock().unwrap().push(("GET".into(), Instant::now()));
            match get {
                Get::Hang => {
                    // Holds the connection, never answers; ends when the client goes.
                    let mut rest = Vec::new();
                    let _ = r.read_to_end(&mut rest).await;
                    return;
                }
                Get::Refuse | Get::RefuseCancels => {
                    let head = "HTTP/1.1 405 Method Not Allowed\r\nallow: POST\r\ncontent-length: 0\r\n\r\n";
                    w.write_all(head.as_bytes()).await.unwrap();
                    continue;
                }
            }
        }
        let message: Value = serde_json::from_slice(&body).unwrap();
        let name = message["method"].as_str().unwrap_or("response").to_owned();
        seen.lock().unwrap().push((name.clone(), Instant::now()));
        if matches!(get, Get::RefuseCancels) {
            if name == "notifications/cancelled" {
                let body = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"refused here"}}"#;
                let head = format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                w.write_all(head.as_bytes()).await.unwrap();
                w.write_all(body.as_bytes()).await.unwrap();
                refused.notify_one();
                continue;
            }
            if name == "ping" {
                refused.notified().await;
            }
        }
        let answer = match name.as_str() {
            "initialize" => Some(json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "gate-test", "version": "1"}}})),
            "ping" => Some(json!({"jsonrpc": "2.0", "id": message["id"], "result": {}})),
            _ => None,
        };
        let response = match answer {
            Some(answer) => {
                let body = answer.to_string();
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                )
            }
            None => "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned(),
        };
        w.write_all(response.as_bytes()).await.unwrap();
    }
}

/// Starts the server; its URL and what it sees.
async fn server(get: Get) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Seen::default();
    let log = seen.clone();
    let refused = Arc::new(tokio::sync::Notify::new());
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(serve(stream, get, log.clone(), refused.clone()));
        }
    });
    (url, seen)
}

fn raw(v: Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string()).unwrap()
}

/// A client of the server at `url`: the MCP profile, no methods of its own.
fn connect(url: &str) -> sansrpc_tokio::Spawned {
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(AsyncRouter::new());
    sansrpc_mcp::tokio::connect(url, builder).unwrap()
}

/// The `initialize` params of a 2025-11-25 session.
fn initialize_params() -> Box<RawValue> {
    raw(json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "gate", "version": "1"}}))
}

/// Initializes a session with the server, then pings it: how long after
/// `notifications/initialized` the ping reached the server, and the methods it saw.
async fn ping_after_initialized(get: Get) -> (Duration, Vec<String>) {
    let (url, seen) = server(get).await;
    let conn = connect(&url);
    let client = conn.client.clone();
    let params = initialize_params();
    let run = async {
        client.call_raw("initialize", Some(&params)).await.unwrap();
        let initialized = Instant::now();
        client
            .notify_raw("notifications/initialized", None)
            .await
            .unwrap();
        let pong = client
            .call_raw("ping", Some(&raw(json!({}))))
            .await
            .unwrap();
        assert_eq!(pong.get(), "{}");
        initialized
    };
    let initialized = tokio::time::timeout(Duration::from_secs(40), run)
        .await
        .expect("the ping is answered within 40 s");
    let seen = seen.lock().unwrap().clone();
    let ping = seen.iter().find(|(m, _)| m == "ping").unwrap().1;
    let methods = seen.into_iter().map(|(m, _)| m).collect();
    (ping.duration_since(initialized), methods)
}

#[tokio::test]
async fn a_get_stream_never_answered_holds_the_posts_ten_seconds_at_most() {
    let (waited, methods) = ping_after_initialized(Get::Hang).await;
    assert_eq!(
        methods,
        ["initialize", "notifications/initialized", "GET", "ping"],
        "the ping is posted after the GET was sent"
    );
    // The gate's 10 s (a lower bound: the machine being slow cannot make it shorter).
    assert!(
        waited >= Duration::from_millis(9_900),
        "posted after {waited:?}"
    );
}

#[tokio::test]
async fn a_get_stream_refused_holds_nothing() {
    let (waited, methods) = ping_after_initialized(Get::Refuse).await;
    assert_eq!(
        methods,
        ["initialize", "notifications/initialized", "GET", "ping"],
        "the ping is posted after the GET's answer"
    );
    // Far under the 10 s the other case waits (generous for a loaded machine).
    assert!(waited < Duration::from_secs(8), "posted after {waited:?}");
}

/// A notification the server refuses (400, with an error that has no id) answers none of
/// the client's requests: the one request waiting meanwhile gets its own answer, not that
/// error (the null-id policy would have given it to the only request waiting).
#[tokio::test]
async fn a_refused_notification_does_not_answer_the_request_waiting() {
    let (url, seen) = server(Get::RefuseCancels).await;
    let conn = connect(&url);
    let client = conn.client.clone();
    let params = initialize_params();
    let run = async {
        client.call_raw("initialize", Some(&params)).await.unwrap();
        client
            .notify_raw("notifications/initialized", None)
            .await
            .unwrap();
        // The ping waits at the server until the notification was refused.
        let ping = client.call_raw("ping", Some(&raw(json!({}))));
        let refuse = async {
            client
                .notify_raw(
                    "notifications/cancelled",
                    Some(&raw(json!({"requestId": 99}))),
                )
                .await
                .unwrap();
        };
        let (pong, ()) = tokio::join!(ping, refuse);
        pong
    };
    let pong = tokio::time::timeout(Duration::from_secs(40), run)
        .await
        .expect("the ping is answered within 40 s")
        .expect("the ping gets its own answer, not the refusal");
    assert_eq!(pong.get(), "{}");
    let methods: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(m, _)| m.clone())
        .collect();
    assert!(
        methods.iter().any(|m| m == "notifications/cancelled"),
        "the server refused the notification: {methods:?}"
    );
}
