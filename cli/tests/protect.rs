//! `sansrpc serve`'s protection flags take effect: checked over real sockets against the
//! real binary.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::serve_logging_addr;

fn frame(body: &str) -> String {
    format!("Content-Length: {}\r\n\r\n{body}", body.len())
}

/// Reads until the server closes the connection (a reset counts), failing after 20 s.
fn read_to_close(stream: &mut TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the server did not close the connection: {e}"),
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// Sends one request and reads until its answer (a whole frame) has come.
fn call(stream: &mut TcpStream, body: &str) -> String {
    stream.write_all(frame(body).as_bytes()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&seen).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text["Content-Length: ".len()..end].parse().unwrap();
            if seen.len() >= end + 4 + length {
                return text[end + 4..].to_owned();
            }
        }
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "closed before the answer: {text}");
        seen.extend_from_slice(&buf[..n]);
    }
}

const ADD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#;

#[test]
fn max_connections_refuses_a_second_tcp_connection() {
    let (_server, addr) =
        serve_logging_addr(&["serve", "--tcp", "127.0.0.1:0", "--max-connections", "1"]);
    let mut first = TcpStream::connect(&addr).unwrap();
    assert_eq!(
        call(&mut first, ADD),
        r#"{"jsonrpc":"2.0","result":3,"id":1}"#
    );
    let mut second = TcpStream::connect(&addr).unwrap();
    assert_eq!(
        read_to_close(&mut second),
        frame(
            r#"{"jsonrpc":"2.0","error":{"code":-32002,"message":"Server busy: too many connections"},"id":null}"#
        )
    );
    assert_eq!(
        call(&mut first, ADD),
        r#"{"jsonrpc":"2.0","result":3,"id":1}"#
    );
}

#[test]
fn rate_limit_and_frame_timeout_flags_take_effect() {
    let (_server, addr) = serve_logging_addr(&[
        "serve",
        "--tcp",
        "127.0.0.1:0",
        "--rate-limit",
        "0:2",
        "--frame-timeout",
        "500ms",
    ]);
    let mut client = TcpStream::connect(&addr).unwrap();
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]},{"jsonrpc":"2.0","id":2,"method":"add","params":[1,2]},{"jsonrpc":"2.0","id":3,"method":"add","params":[1,2]}]"#;
    let answer: serde_json::Value = serde_json::from_str(&call(&mut client, batch)).unwrap();
    let busy = answer
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["error"]["code"] == -32002)
        .count();
    assert_eq!(busy, 1, "{answer}");

    let mut slow = TcpStream::connect(&addr).unwrap();
    let half = frame(ADD);
    slow.write_all(&half.as_bytes()[..half.len() / 2]).unwrap();
    let start = Instant::now();
    assert_eq!(read_to_close(&mut slow), "");
    assert!(start.elapsed() >= Duration::from_millis(500));
}

#[test]
fn allow_origin_and_cors_origin_flags_take_effect() {
    let (_ws, ws_addr) = serve_logging_addr(&[
        "serve",
        "--ws",
        "127.0.0.1:0",
        "--allow-origin",
        "https://app.example",
    ]);
    let upgrade = |origin: &str| {
        let mut stream = TcpStream::connect(&ws_addr).unwrap();
        let request = format!(
            "GET / HTTP/1.1\r\nHost: {ws_addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).unwrap();
        String::from_utf8_lossy(&head).into_owned()
    };
    assert_eq!(upgrade("https://evil.example"), "HTTP/1.1 403");
    assert_eq!(upgrade("https://app.example"), "HTTP/1.1 101");

    let (_http, http_addr) =
        serve_logging_addr(&["serve", "--http", "127.0.0.1:0", "--cors-origin", "*"]);
    let mut stream = TcpStream::connect(&http_addr).unwrap();
    stream
        .write_all(
            b"OPTIONS / HTTP/1.1\r\nHost: x\r\nOrigin: https://any.example\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
    let answer = read_to_close(&mut stream).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 204"), "{answer}");
    assert!(
        answer.contains("access-control-allow-origin: *"),
        "{answer}"
    );
}
