//! The examples the README and docs/ name, run: each one's output (or what its peer gets)
//! compared with the exact values it computes, so a broken example fails here. Each client
//! example is run against its server example, which prints its address first.

#[path = "../../../tests/support/interop.rs"]
mod interop;

use std::time::Duration;

use interop::{run_example, Example, EXAMPLE_TIMEOUT};
use sansrpc::RawValue;
use sansrpc_tokio::{AsyncRouter, Builder};

const PACKAGE: &str = "sansrpc-tokio";

/// Starts the server example `name` on a free port of 127.0.0.1 and returns it with the
/// address in its first line, `calculator on <scheme><address>`.
fn server(name: &str, scheme: &str) -> (Example, String) {
    let mut server = Example::start(PACKAGE, name, &["127.0.0.1:0"]);
    let line = server.line();
    let addr = line
        .strip_prefix("calculator on ")
        .filter(|a| a.starts_with(&format!("{scheme}127.0.0.1:")))
        .unwrap_or_else(|| panic!("not an address on 127.0.0.1: {line:?}"))
        .to_owned();
    (server, addr)
}

#[test]
fn tcp_client_calls_tcp_server() {
    let (_server, addr) = server("tcp_server", "");
    assert_eq!(
        run_example(PACKAGE, "tcp_client", &[&addr]),
        ["1.5 + 2 = 3.5", "1 / 0: error 1001 division by zero"]
    );
}

#[cfg(feature = "ws")]
#[test]
fn ws_client_calls_ws_server() {
    let (_server, url) = server("ws_server", "ws://");
    assert_eq!(
        run_example(PACKAGE, "ws_client", &[&url]),
        [
            "1.5 + 2 = 3.5",
            "1 / 0: error 1001 division by zero",
            "ticks: 1"
        ]
    );
}

#[cfg(feature = "http")]
#[test]
fn http_client_calls_http_server() {
    let (_server, url) = server("http_server", "http://");
    assert_eq!(
        run_example(PACKAGE, "http_client", &[&format!("{url}/")]),
        [
            "1.5 + 2 = 3.5",
            "1 / 0: the peer answered with an error: division by zero (1001)",
            "ticks: 1",
            "6 * 7 = 42",
        ]
    );
}

#[test]
fn client_api_runs_the_same_calls_on_the_async_and_the_blocking_client() {
    let same = "3.5 42 Some(1001) 5.0 (2.0, Ok(\"3.0\"))";
    assert_eq!(
        run_example(PACKAGE, "client_api", &[]),
        [format!("async:    {same}"), format!("blocking: {same}")]
    );
}

#[test]
fn stdio_calls_itself_as_a_child_process() {
    let mut stdio = Example::start(PACKAGE, "stdio", &[]);
    let line = stdio.line();
    // The child's process id is the one thing not fixed: a process other than the example.
    let child = line
        .strip_prefix("6 * 7 = 42 (computed by child process Some(")
        .and_then(|rest| rest.strip_suffix("))"))
        .and_then(|pid| pid.parse::<u32>().ok())
        .unwrap_or_else(|| panic!("unexpected output: {line:?}"));
    assert_ne!(child, stdio.id(), "computed by the example itself");
    assert_eq!(stdio.finish(), ["child exited: exit status: 0"]);
}

#[test]
fn unix_serves_and_calls_over_a_unix_socket() {
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("examples-unix-{}.sock", std::process::id()));
    let path = path.to_str().unwrap();
    assert_eq!(
        run_example(PACKAGE, "unix", &[path]),
        [format!("calculator on {path}"), "20 + 22 = 42".to_owned()]
    );
    assert!(
        !std::path::Path::new(path).exists(),
        "the socket file is left"
    );
}

#[test]
fn reconnect_rides_out_a_server_restart() {
    assert_eq!(
        run_example(PACKAGE, "reconnect", &[]),
        [
            "client: open",
            "1 + 2 = 3",
            "server: killed",
            "client: connecting",
            "2 + 2 while the server is down: the request was not sent: the connection is not open yet",
            "server: restarted",
            "client: open",
            "3 + 4 = 7 (connection 2)",
            "client: closed",
        ]
    );
}

#[test]
fn streams_sums_the_streamed_items() {
    assert_eq!(
        run_example(PACKAGE, "streams", &[]),
        ["sum of 1..=1000: 500500"]
    );
}

/// A pub/sub server's side of `subscriber`, one connection per round: it records the
/// params of each `rpc.subscribe` and answers it, then publishes one message to the
/// subscriber, which prints it; then it drops the connection, and the subscriber must
/// reconnect and subscribe again for the next round.
#[test]
fn subscriber_prints_each_message_and_subscribes_again_after_a_reconnect() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut subscriber = Example::start(PACKAGE, "subscriber", &[&addr]);
    for round in 1..=2 {
        let (subscribed, subscriptions) = std::sync::mpsc::channel();
        let mut router = AsyncRouter::new();
        router
            .sync()
            .extension("rpc.subscribe", move |params, out| {
                let params = params.map_or("", |p| p.get()).to_owned();
                let _ = subscribed.send(params);
                out.extend_from_slice(br#"{"subscribed":true}"#);
                Ok(())
            })
            .unwrap();
        let accepted = runtime
            .block_on(async { tokio::time::timeout(EXAMPLE_TIMEOUT, listener.accept()).await });
        let Ok(Ok((stream, _))) = accepted else {
            subscriber.fail(&format!("did not connect in round {round}"))
        };
        let conn = {
            let _runtime = runtime.enter();
            sansrpc_tokio::spawn(Builder::new().router(router), sansrpc_tokio::tcp(stream))
        };
        let Ok(subscription) = subscriptions.recv_timeout(EXAMPLE_TIMEOUT) else {
            subscriber.fail(&format!("did not subscribe in round {round}"))
        };
        assert_eq!(subscription, r#"{"topic":"chat.*"}"#, "round {round}");
        let message =
            format!(r#"{{"topic":"chat.room","data":{{"text":"hello","round":{round}}}}}"#);
        let params = RawValue::from_string(message.clone()).unwrap();
        runtime
            .block_on(conn.client.notify_raw("rpc.notification", Some(&params)))
            .unwrap();
        assert_eq!(subscriber.line(), message);
        // The server goes away: the subscriber reconnects (after about a second).
        conn.driver.abort();
        let _ = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(5), conn.driver).await });
    }
}
