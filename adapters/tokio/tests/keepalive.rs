//! Keep-alive against silent peers on real sockets: WebSocket pings from the client and
//! from the server (the peer completes the handshake, then never answers), and the
//! application-level `ping`/`pong` heartbeat over plain TCP; a live peer stays connected.

#[path = "../../../tests/support/common.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{calculator, within, Add, Pair, LIMIT};
use sansrpc::connection::keepalive::HeartbeatConfig;
use sansrpc_tokio::ws::{self, KeepAlive};
use sansrpc_tokio::{sansrpc, Builder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const KEEPALIVE: KeepAlive = KeepAlive {
    interval: Duration::from_millis(100),
    timeout: Duration::from_millis(300),
};

/// Generous room for a loaded machine beyond interval + timeout.
const SLACK: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_websocket_client_drops_a_server_that_never_answers_pings() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}", listener.local_addr().unwrap());
        // Completes the handshake, then holds the socket without ever reading from it.
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let _ws = tokio_tungstenite::accept_async(stream).await.unwrap();
            // Held until the test aborts this task.
            std::future::pending::<()>().await;
        });
        let conn = ws::connect_with(&url, Builder::new(), Some(KEEPALIVE))
            .await
            .unwrap();
        let start = Instant::now();
        let call = tokio::spawn(conn.client.call::<Add>(&Pair { a: 1.0, b: 2.0 }));
        let error = conn.driver.await.unwrap().unwrap_err();
        let elapsed = start.elapsed();
        assert_eq!(error.kind(), std::io::ErrorKind::TimedOut, "{error}");
        assert!(elapsed < KEEPALIVE.interval + KEEPALIVE.timeout + SLACK);
        assert!(call.await.unwrap().unwrap_err().is_closed());
        server.abort();
    })
    .await;
}

#[tokio::test]
async fn a_websocket_server_drops_a_raw_tcp_peer_that_never_answers_pings() {
    pinged_then_dropped(false).await;
}

/// The same through the server of HTTP and WebSocket on one port: its WebSockets ping too.
/// (They did not: the port's transport did not pass the driver's wakes on to the
/// WebSocket, whose keep-alive timer was then never looked at again.)
#[tokio::test]
async fn a_websocket_upgraded_on_the_http_port_drops_a_peer_that_never_answers_pings() {
    pinged_then_dropped(true).await;
}

/// A peer that completes the WebSocket handshake and never answers a ping is pinged and
/// dropped within the keep-alive's interval and timeout, by `ws::serve_with` or (with
/// `upgrading`) `http::serve_upgrading_with`.
async fn pinged_then_dropped(upgrading: bool) {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let builder = Builder::new().router(calculator());
        let shutdown = std::future::pending::<()>();
        let mut options = sansrpc_tokio::ServeOptions::default();
        options.keepalive = Some(KEEPALIVE);
        let grace = Duration::ZERO;
        let server = match upgrading {
            false => tokio::spawn(ws::serve_with(listener, builder, options, shutdown, grace)),
            true => tokio::spawn(sansrpc_tokio::http::serve_upgrading_with(
                listener, builder, options, shutdown, grace,
            )),
        };
        let mut peer = TcpStream::connect(addr).await.unwrap();
        let handshake = format!(
            "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        peer.write_all(handshake.as_bytes()).await.unwrap();
        let start = Instant::now();
        // Read everything until the server hangs up, answering nothing.
        let mut received = Vec::new();
        let mut buf = [0u8; 1024];
        loop {
            match peer.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buf[..n]),
            }
        }
        let elapsed = start.elapsed();
        let text = String::from_utf8_lossy(&received);
        assert!(text.starts_with("HTTP/1.1 101"), "{text}");
        let head = text.find("\r\n\r\n").unwrap() + 4;
        // An unmasked ping frame (FIN + opcode 9) came after the handshake.
        assert!(
            received[head..].contains(&0x89),
            "no ping before the hang-up"
        );
        assert!(elapsed < KEEPALIVE.interval + KEEPALIVE.timeout + SLACK);
        server.abort();
    })
    .await;
}

#[tokio::test]
async fn the_heartbeat_detects_a_silent_tcp_peer() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Accepts and reads everything, writes nothing.
        let peer = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut received = Vec::new();
            let _ = stream.read_to_end(&mut received).await;
            String::from_utf8_lossy(&received).into_owned()
        });
        let heartbeat =
            HeartbeatConfig::ping(Duration::from_millis(100), Duration::from_millis(300));
        let builder = Builder::new().configure(|c| c.heartbeat = Some(heartbeat));
        let stream = TcpStream::connect(addr).await.unwrap();
        let conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::tcp(stream));
        let start = Instant::now();
        let call = tokio::spawn(conn.client.call::<Add>(&Pair { a: 1.0, b: 2.0 }));
        let error = conn.driver.await.unwrap().unwrap_err();
        let elapsed = start.elapsed();
        assert_eq!(error.kind(), std::io::ErrorKind::TimedOut, "{error}");
        assert!(elapsed < Duration::from_millis(400) + SLACK);
        assert!(call.await.unwrap().unwrap_err().is_closed());
        let received = peer.await.unwrap();
        assert!(
            received.contains(r#"{"jsonrpc":"2.0","method":"ping"}"#),
            "{received}"
        );
    })
    .await;
}

#[tokio::test]
async fn the_heartbeat_keeps_a_live_connection() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // The server only answers pings.
        let server_builder = Builder::new()
            .configure(|c| c.heartbeat = Some(HeartbeatConfig::answer_only()))
            .router(calculator());
        let shutdown = std::future::pending::<()>();
        let server = tokio::spawn(sansrpc_tokio::serve_tcp(
            listener,
            server_builder,
            shutdown,
            Duration::ZERO,
        ));
        // Without pongs this client would give up after about a second; it pings far more
        // often than that for three seconds.
        let heartbeat = HeartbeatConfig::ping(Duration::from_millis(50), Duration::from_secs(1));
        let builder = Builder::new().configure(|c| c.heartbeat = Some(heartbeat));
        let stream = TcpStream::connect(addr).await.unwrap();
        let conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::tcp(stream));
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(!conn.driver.is_finished());
        let sum = conn.client.call::<Add>(&Pair { a: 1.0, b: 2.0 }).await;
        assert_eq!(sum.unwrap(), 3.0);
        server.abort();
    })
    .await;
}
