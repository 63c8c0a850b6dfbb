//! The examples the README and docs/ name, run: each one's output (or what its peer gets)
//! compared with the exact values it computes, so a broken example fails here.

#[path = "../../../tests/support/interop.rs"]
mod interop;

use interop::{run_example, Example};

const PACKAGE: &str = "sansrpc-blocking";

#[test]
fn interceptors_refuse_a_call_without_the_token_and_count_both() {
    assert_eq!(
        run_example(PACKAGE, "interceptors", &[]),
        [
            "without a token: the peer answered with an error: Unauthorized (1000)",
            "with a token: 2 + 3 = 5",
            "server metrics: 2 requests, 1 errors",
        ]
    );
}

#[test]
fn calculator_tcp_client_calls_calculator_tcp_server() {
    let mut server = Example::start(PACKAGE, "calculator_tcp_server", &["127.0.0.1:0"]);
    let listening = server.line();
    let addr = listening
        .strip_prefix("calculator listening on 127.0.0.1:")
        .unwrap_or_else(|| panic!("not an address on 127.0.0.1: {listening:?}"));
    let addr = format!("127.0.0.1:{addr}");
    assert_eq!(
        run_example(PACKAGE, "calculator_tcp_client", &[&addr]),
        [
            "2 + 3 = 5",
            "7 - 4 = 3",
            "1 / 4 = 0.25",
            "1 / 0: the peer answered with an error: division by zero (1)",
            r#"logged: ["hello from the client"]"#,
        ]
    );
}

#[test]
fn calculator_stdio_client_calls_calculator_stdio_server_as_its_child() {
    let server = interop::built_example(PACKAGE, "calculator_stdio_server");
    assert_eq!(
        run_example(
            PACKAGE,
            "calculator_stdio_client",
            &[server.to_str().unwrap()]
        ),
        ["2 + 3 = 5", "4 + 5 = 9", "1 / 8 = 0.125"]
    );
}

#[test]
fn streams_threads_sums_the_streamed_items() {
    assert_eq!(
        run_example(PACKAGE, "streams_threads", &[]),
        ["sum of 1..=1000: 500500"]
    );
}

#[test]
fn new_heads_threads_follows_three_heads_and_unsubscribes() {
    assert_eq!(
        run_example(PACKAGE, "new_heads_threads", &[]),
        [
            r#"head "0x0""#,
            r#"head "0x1""#,
            r#"head "0x2""#,
            "unsubscribed: true",
            "the server saw: the client unsubscribed",
        ]
    );
}
