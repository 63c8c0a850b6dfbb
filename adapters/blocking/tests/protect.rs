//! Protection over real sockets on 127.0.0.1: a connection flood beyond the limit refused
//! while served connections keep working, a slowloris peer dropped at the frame timeout, an
//! idle connection closed, and the rate limit answering `-32002`.

#[path = "../examples/calculator/mod.rs"]
mod calculator;
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use calculator::*;
use common::{eventually, within};
use sansrpc::connection::RateLimit;
use sansrpc::method::CallError;
use sansrpc::Timeout;
use sansrpc_blocking::{connect_tcp, serve_tcp, Options};

const LIMIT: Duration = Duration::from_secs(60);
const T: Timeout = Timeout::After(Duration::from_secs(10));

fn add(client: &sansrpc_blocking::Client, a: i64, b: i64) -> i64 {
    client.call_with::<Add>(&Operands { a, b }, T).unwrap()
}

/// Reads until the peer closes (or 20 s pass, a failure) and returns what came.
fn read_to_close(stream: &mut TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the server did not close the connection: {e}"),
        }
    }
    String::from_utf8(seen).unwrap()
}

#[test]
fn a_flood_beyond_the_limit_is_refused_while_served_connections_keep_working() {
    within(LIMIT, || {
        let mut config = Options::default();
        config.max_connections = 4;
        let server = serve_tcp("127.0.0.1:0", Arc::new(router()), config).unwrap();
        let clients: Vec<_> = (0..4)
            .map(|_| connect_tcp(server.local_addr(), Options::default()).unwrap())
            .collect();
        for (i, c) in clients.iter().enumerate() {
            assert_eq!(add(c, i as i64, 1), i as i64 + 1);
        }
        let mut flood: Vec<TcpStream> = (0..20)
            .map(|_| TcpStream::connect(server.local_addr()).unwrap())
            .collect();
        for stream in &mut flood {
            let got = read_to_close(stream);
            assert!(
                got.ends_with(r#"{"jsonrpc":"2.0","error":{"code":-32002,"message":"Server busy: too many connections"},"id":null}"#)
                    && got.starts_with("Content-Length: "),
                "{got:?}"
            );
        }
        // The connections served before the flood still answer.
        for (i, c) in clients.iter().enumerate() {
            assert_eq!(add(c, i as i64, 2), i as i64 + 2);
        }
        // Once one closes, a new connection is served (once the server has seen the close).
        clients[0].close();
        eventually(Duration::from_secs(20), "a freed slot is reused", || {
            let c = connect_tcp(server.local_addr(), Options::default()).unwrap();
            match c.call_with::<Add>(&Operands { a: 5, b: 5 }, T) {
                Ok(v) => {
                    assert_eq!(v, 10);
                    true
                }
                Err(_) => false,
            }
        });
        server.shutdown();
    });
}

#[test]
fn a_slowloris_peer_is_dropped_at_the_frame_timeout_and_others_are_not() {
    within(LIMIT, || {
        let mut config = Options::default();
        config.connection.frame_timeout = Some(Duration::from_millis(500));
        let server = serve_tcp("127.0.0.1:0", Arc::new(router()), config).unwrap();
        let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
        assert_eq!(add(&client, 1, 2), 3);

        let mut slow = TcpStream::connect(server.local_addr()).unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1,"b":2}}"#;
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        slow.write_all(&frame.as_bytes()[..frame.len() / 2])
            .unwrap();
        let start = Instant::now();
        let got = read_to_close(&mut slow);
        assert_eq!(got, "", "nothing is answered to half a frame");
        assert!(
            start.elapsed() >= Duration::from_millis(500),
            "dropped before its timeout"
        );
        // The well-behaved client is unaffected: it sends whole frames.
        assert_eq!(add(&client, 3, 4), 7);
        server.shutdown();
    });
}

#[test]
fn an_idle_connection_is_closed_and_a_busy_one_is_not() {
    within(LIMIT, || {
        let mut config = Options::default();
        config.connection.idle_timeout = Some(Duration::from_secs(1));
        let server = serve_tcp("127.0.0.1:0", Arc::new(router()), config).unwrap();
        let mut idle = TcpStream::connect(server.local_addr()).unwrap();
        let start = Instant::now();
        assert_eq!(read_to_close(&mut idle), "");
        assert!(start.elapsed() >= Duration::from_secs(1));

        // A client calling more often than the timeout keeps its connection, for well past
        // the timeout: 2.5 s of calls every 250 ms (each call resets the idle clock).
        let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
        let busy = Instant::now();
        let mut last_call = busy;
        for i in 0..10 {
            std::thread::sleep(Duration::from_millis(250));
            last_call = Instant::now();
            assert_eq!(add(&client, i, 1), i + 1);
        }
        assert!(busy.elapsed() >= Duration::from_millis(2500));
        assert!(!client.is_closed(), "a busy connection was closed");
        // Then, left alone, it is closed too, not before the timeout has passed since its
        // last call; the next call fails as closed.
        eventually(Duration::from_secs(10), "the idle client is closed", || {
            client.is_closed()
        });
        assert!(last_call.elapsed() >= Duration::from_secs(1));
        let result = client.call_with::<Add>(&Operands { a: 1, b: 1 }, T);
        assert!(
            matches!(result, Err(CallError::Send(_)) | Err(CallError::Ended(_))),
            "{result:?}"
        );
        server.shutdown();
    });
}

#[test]
fn requests_over_the_rate_limit_are_answered_server_busy() {
    within(LIMIT, || {
        let mut config = Options::default();
        config.connection.rate_limit = Some(RateLimit::new(1, 3));
        let server = serve_tcp("127.0.0.1:0", Arc::new(router()), config).unwrap();
        let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
        let mut batch = client.batch();
        for i in 0..6 {
            let text = format!("[{i},0]");
            batch.call_raw("add", Some(sansrpc::RawValue::from_json(&text).unwrap()));
        }
        let mut ok = 0;
        let mut busy = 0;
        for result in batch.send_with(T).unwrap() {
            match result {
                Ok(_) => ok += 1,
                Err(CallError::Rpc(e)) if e.code == -32002 => busy += 1,
                Err(e) => panic!("{e:?}"),
            }
        }
        // The burst (3) passes; at one token a second, at most one more can have refilled
        // while the batch was being read.
        assert!((3..=4).contains(&ok), "{ok} answered");
        assert_eq!(ok + busy, 6);
        server.shutdown();
    });
}

#[cfg(unix)]
#[test]
fn a_unix_socket_connection_beyond_the_limit_is_refused() {
    use std::os::unix::net::UnixStream;
    within(LIMIT, || {
        let path = std::env::temp_dir().join(format!(
            "sansrpc-blocking-protect-{}.sock",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        let mut config = Options::default();
        config.max_connections = 1;
        let server = sansrpc_blocking::serve_unix(&path, Arc::new(router()), config).unwrap();
        let served = sansrpc_blocking::connect_unix(&path, Options::default()).unwrap();
        assert_eq!(add(&served, 1, 2), 3);
        let mut refused = UnixStream::connect(&path).unwrap();
        refused
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut got = String::new();
        refused.read_to_string(&mut got).unwrap();
        assert!(got.contains(r#""code":-32002"#), "{got:?}");
        assert_eq!(add(&served, 3, 4), 7);
        server.shutdown();
    });
}
