//! The examples the README and docs/ name, run: each one's output compared with the exact
//! values it computes, so a broken example fails here.
#![cfg(feature = "async-io")]

#[path = "../../../tests/support/interop.rs"]
mod interop;

use interop::{run_example, Example};

const PACKAGE: &str = "sansrpc-futures";

#[test]
fn one_line_methods_serves_and_calls_without_a_turbofish() {
    assert_eq!(
        run_example(PACKAGE, "one_line_methods", &[]),
        ["initialized", "1 + 2 = 3"]
    );
}

#[test]
fn smol_tcp_client_calls_smol_tcp_server() {
    let mut server = Example::start(PACKAGE, "smol_tcp_server", &["127.0.0.1:0"]);
    let listening = server.line();
    let port = listening
        .strip_prefix("calculator on 127.0.0.1:")
        .unwrap_or_else(|| panic!("not an address on 127.0.0.1: {listening:?}"));
    let addr = format!("127.0.0.1:{port}");
    assert_eq!(
        run_example(PACKAGE, "smol_tcp_client", &[&addr]),
        [
            "2 + 3 = 5",
            "batch: 10 - 4 = 6",
            "batch: 1 / 0 -> the peer answered with an error: division by zero (1001)",
        ]
    );
}
