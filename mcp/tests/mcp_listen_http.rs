//! `subscriptions/listen` over Streamable HTTP (2026-07-28), with a raw client on a
//! loopback socket: the listen request's answer is an event stream that opens with the
//! acknowledgment and carries the changes asked for; closing the stream cancels the
//! subscription (the server forgets it), and `Server::end_subscriptions` ends the stream
//! with a `complete` result.
#![cfg(not(target_arch = "wasm32"))]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::{Context, ListKind, McpError, Server, ServerBuilder};
use sansrpc_mcp::streamable;
use sansrpc_tokio::Builder;

fn server() -> Server {
    ServerBuilder::new("listen-http-test", "1")
        .list_changed(ListKind::Tools)
        .list_changed(ListKind::Resources)
        .list_changed(ListKind::Prompts)
        .resource_subscriptions()
        .tool("noop", "Does nothing", |_: Context, ()| async {
            Ok::<_, McpError>(String::new())
        })
        .build()
}

/// Serves `server` on a free loopback port on a runtime of its own; the port.
fn serve(server: &Server) -> u16 {
    serve_with(server, streamable::Config::default())
}

/// [`serve`] with `config`.
fn serve_with(server: &Server, config: streamable::Config) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let router = server.router();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let builder = Builder::new()
                .config(Config::for_profile(Profile::Mcp))
                .router(router);
            let never = std::future::pending::<()>();
            sansrpc_mcp::tokio::serve(listener, builder, config, never)
                .await
                .unwrap();
        });
    });
    port
}

/// Opens a listen stream for tool-list changes; the socket, after the response head.
fn listen(port: u16, id: u32) -> TcpStream {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"subscriptions/listen","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}},"notifications":{{"toolsListChanged":true}}}}}}"#
    );
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    s
}

/// Reads from `s` until what came in contains `needle` (or fails after 10 s of silence or
/// when the stream ends first); everything read so far.
fn read_until(s: &mut TcpStream, seen: &mut String, needle: &str) {
    let mut buf = [0u8; 4096];
    while !seen.contains(needle) {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "ended before {needle:?}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

/// Waits until `cond` holds, 10 s at most.
fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "not within 10 s: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_listen_stream_carries_its_changes_and_closing_it_ends_the_subscription() {
    let server = server();
    let port = serve(&server);
    let mut s = listen(port, 41);
    let mut seen = String::new();
    read_until(
        &mut s,
        &mut seen,
        "notifications/subscriptions/acknowledged",
    );
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert!(
        seen.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{seen}"
    );
    assert!(
        seen.contains(r#""_meta":{"io.modelcontextprotocol/subscriptionId":41}"#),
        "{seen}"
    );
    assert_eq!(server.open_subscriptions(), 1);
    assert_eq!(server.list_changed(ListKind::Tools), 1);
    read_until(&mut s, &mut seen, "notifications/tools/list_changed");
    // The client closes the stream: the subscription is cancelled and forgotten.
    drop(s);
    until("the closed stream's subscription ends", || {
        server.open_subscriptions() == 0
    });
    assert_eq!(server.list_changed(ListKind::Tools), 0);
}

#[test]
fn ending_the_subscriptions_answers_each_listen_stream_complete() {
    let server = server();
    let port = serve(&server);
    let mut s = listen(port, 42);
    let mut seen = String::new();
    read_until(
        &mut s,
        &mut seen,
        "notifications/subscriptions/acknowledged",
    );
    assert_eq!(server.end_subscriptions(), 1);
    read_until(&mut s, &mut seen, r#""resultType":"complete""#);
    assert!(
        seen.contains(r#""id":42"#),
        "the listen request answered: {seen}"
    );
    until("the ended subscription leaves", || {
        server.open_subscriptions() == 0
    });
}

/// Listen streams are stateless requests that stay open, so `max_stateless` bounds them:
/// past it a listen is refused 503 (and holds nothing), and a closed stream frees its
/// place for the next.
#[test]
fn listen_streams_are_bounded_and_a_closed_one_frees_its_place() {
    let server = server();
    let mut config = streamable::Config::default();
    config.max_stateless = 3;
    let port = serve_with(&server, config);
    let mut open: Vec<TcpStream> = (0..3)
        .map(|n| {
            let mut s = listen(port, 50 + n);
            let mut seen = String::new();
            read_until(
                &mut s,
                &mut seen,
                "notifications/subscriptions/acknowledged",
            );
            s
        })
        .collect();
    assert_eq!(server.open_subscriptions(), 3);
    let mut refused = listen(port, 60);
    let mut seen = String::new();
    read_until(&mut refused, &mut seen, "\r\n\r\n");
    assert!(seen.starts_with("HTTP/1.1 503"), "{seen}");
    assert_eq!(
        server.open_subscriptions(),
        3,
        "the refused one holds nothing"
    );
    drop(open.pop());
    until("the closed stream's subscription ends", || {
        server.open_subscriptions() == 2
    });
    let mut again = listen(port, 61);
    let mut seen = String::new();
    read_until(
        &mut again,
        &mut seen,
        "notifications/subscriptions/acknowledged",
    );
    assert_eq!(server.open_subscriptions(), 3);
}
