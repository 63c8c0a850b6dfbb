//! The application-level `ping`/`pong` heartbeat on threads, over real TCP on 127.0.0.1: a
//! silent peer is detected and the connection closed (pending calls fail as closed); a
//! peer that answers keeps the connection through many pings.

#[path = "../examples/calculator/mod.rs"]
mod calculator;
mod common;

use std::io::Read;
use std::net::TcpListener;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use calculator::*;
use common::{eventually, within};
use sansrpc::connection::keepalive::HeartbeatConfig;
use sansrpc::Timeout;
use sansrpc_blocking::{connect_tcp, serve_tcp, Options};

const LIMIT: Duration = Duration::from_secs(30);

fn with_heartbeat(heartbeat: HeartbeatConfig) -> Options {
    let mut config = Options::default();
    config.connection.heartbeat = Some(heartbeat);
    config
}

#[test]
fn the_heartbeat_detects_a_silent_tcp_peer() {
    within(LIMIT, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Accepts and reads everything, writes nothing.
        let peer = thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut received = Vec::new();
            let _ = stream.read_to_end(&mut received);
            String::from_utf8_lossy(&received).into_owned()
        });
        let heartbeat =
            HeartbeatConfig::ping(Duration::from_millis(100), Duration::from_millis(300));
        let client = connect_tcp(addr, with_heartbeat(heartbeat)).unwrap();
        let start = Instant::now();
        let result = client.call_with::<Add>(
            &Operands { a: 1, b: 2 },
            Timeout::After(Duration::from_secs(20)),
        );
        match result {
            Err(e) => assert!(e.is_closed(), "{e:?}"),
            other => panic!("expected the call to fail as closed, got {other:?}"),
        }
        assert!(start.elapsed() < Duration::from_millis(400) + Duration::from_secs(5));
        eventually(Duration::from_secs(10), "the client closes", || {
            client.is_closed()
        });
        drop(client);
        let received = peer.join().unwrap();
        assert!(
            received.contains(r#"{"jsonrpc":"2.0","method":"ping"}"#),
            "{received}"
        );
    });
}

#[test]
fn the_heartbeat_keeps_a_live_connection() {
    within(LIMIT, || {
        let server_config = with_heartbeat(HeartbeatConfig::answer_only());
        let router = Arc::new(calculator::router());
        let server = serve_tcp("127.0.0.1:0", router, server_config).unwrap();
        // Without pongs this client would close after about a second; it pings far more
        // often than that for three seconds.
        let heartbeat = HeartbeatConfig::ping(Duration::from_millis(50), Duration::from_secs(1));
        let client = connect_tcp(server.local_addr(), with_heartbeat(heartbeat)).unwrap();
        thread::sleep(Duration::from_secs(3));
        assert!(!client.is_closed());
        let sum = client.call_with::<Add>(
            &Operands { a: 1, b: 2 },
            Timeout::After(Duration::from_secs(5)),
        );
        assert_eq!(sum.unwrap(), 3);
        client.close();
        server.shutdown();
    });
}
