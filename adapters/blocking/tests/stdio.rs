//! The adapter over the stdio of a real child process: this test binary runs itself as the
//! server (`--serve-stdio=<framing>`), so it has no libtest harness, whose output would mix
//! with the protocol on stdout.

#[path = "../examples/calculator/mod.rs"]
mod calculator;
mod common;
#[path = "../../../tests/support/harness.rs"]
mod harness;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use calculator::*;
use common::within;
use sansrpc::codec::Framing;
use sansrpc::connection::EndReason;
use sansrpc::method::CallError;
use sansrpc::Timeout;
use sansrpc_blocking::{serve_stdio, spawn_child, Client, Options};

const T: Timeout = Timeout::After(Duration::from_secs(5));

fn framing(name: &str) -> Framing {
    match name {
        "newline" => Framing::Newline,
        _ => Framing::ContentLength,
    }
}

/// The child: the calculator, plus `exit`, which ends the process without answering.
fn serve(framing_name: &str) {
    let mut router = calculator::router();
    router
        .raw_method("exit", |_, _| std::process::exit(3))
        .unwrap();
    let mut config = Options::default();
    config.connection.framing = Some(framing(framing_name));
    serve_stdio(Arc::new(router), config).unwrap();
}

fn child(framing_name: &str) -> Client {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.arg(format!("--serve-stdio={framing_name}"));
    let mut config = Options::default();
    config.connection.framing = Some(framing(framing_name));
    spawn_child(&mut command, config).unwrap()
}

fn calculator_over_stdio(framing_name: &'static str) {
    let client = child(framing_name);
    assert_eq!(
        client
            .call_with::<Add>(&Operands { a: 2, b: 3 }, T)
            .unwrap(),
        5
    );
    assert_eq!(
        client.call_with::<SubtractPositional>(&(2, 3), T).unwrap(),
        -1
    );
    match client.call_with::<Divide>(&(1.0, 0.0), T) {
        Err(CallError::Rpc(e)) => assert_eq!(e.code, DIVISION_BY_ZERO),
        other => panic!("{other:?}"),
    }
    client.notify::<Log>(&("over stdio".into(),)).unwrap();
    assert_eq!(client.call_with::<Logged>(&(), T).unwrap(), ["over stdio"]);
    // The child sees its stdin end and exits by itself, well within the 5 s grace after
    // which it would be killed.
    let start = Instant::now();
    client.close();
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

fn a_dying_child_fails_the_pending_call() {
    let client = child("content-length");
    assert_eq!(client.call_with::<AddPositional>(&(1, 2), T).unwrap(), 3);
    let result = client.call_raw_with("exit", None, T);
    assert!(
        matches!(result, Err(CallError::Ended(EndReason::Closed))),
        "{result:?}"
    );
    assert!(client.call_with::<AddPositional>(&(1, 2), T).is_err());
}

fn main() {
    if let Some(name) =
        std::env::args().find_map(|a| a.strip_prefix("--serve-stdio=").map(str::to_owned))
    {
        return serve(&name);
    }
    harness::run(&[
        ("calculator_over_stdio_content_length", || {
            within(Duration::from_secs(30), || {
                calculator_over_stdio("content-length")
            })
        }),
        ("calculator_over_stdio_newline", || {
            within(Duration::from_secs(30), || calculator_over_stdio("newline"))
        }),
        ("a_dying_child_fails_the_pending_call", || {
            within(
                Duration::from_secs(30),
                a_dying_child_fails_the_pending_call,
            )
        }),
    ]);
}
