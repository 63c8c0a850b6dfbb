//! The reconnecting client over a real child process that dies: this test binary runs
//! itself as the server (`--serve-stdio`), so it has no libtest harness, whose output would
//! mix with the protocol on stdout. The child's `exit` method ends the process without
//! answering; the client respawns it and goes on.

#[path = "../examples/calculator/mod.rs"]
mod calculator;
mod common;
#[path = "../../../tests/support/harness.rs"]
mod harness;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use calculator::*;
use common::{eventually, within};
use sansrpc::ext::reconnect::{Backoff, PendingPolicy, ReconnectPolicy, State};
use sansrpc::Timeout;
use sansrpc_blocking::{serve_stdio, Options, Reconnect};

const T: Timeout = Timeout::After(Duration::from_secs(10));
/// How long to wait for a state.
const W: Option<Duration> = Some(Duration::from_secs(10));

/// The child: the calculator, plus `exit`, which ends the process without answering.
fn serve() {
    let mut router = calculator::router();
    router
        .raw_method("exit", |_, _| std::process::exit(3))
        .unwrap();
    serve_stdio(Arc::new(router), Options::default()).unwrap();
}

fn a_dead_child_is_respawned() {
    let policy = ReconnectPolicy {
        backoff: Backoff::Exponential {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(250),
            multiplier: 2.0,
            max_attempts: 100,
        },
        pending: PendingPolicy::ResendIdempotent,
        ..ReconnectPolicy::default()
    };
    let command = || {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command.arg("--serve-stdio");
        command
    };
    let client = Reconnect::child(command, policy, Options::default()).unwrap();
    client.wait_open(W).unwrap();
    assert_eq!(client.call_with::<AddPositional>(&(1, 2), T).unwrap(), 3);

    // The child dies with the call pending: not idempotent, so it fails.
    match client.call_raw_with("exit", None, T) {
        Err(e) => assert!(e.is_closed(), "{e:?}"),
        other => panic!("expected the call to fail as closed, got {other:?}"),
    }
    // The supervisor notices and respawns the child.
    eventually(Duration::from_secs(10), "a second connection", || {
        client.connections() == 2 && client.state() == State::Open
    });
    assert_eq!(client.call_with::<AddPositional>(&(2, 3), T).unwrap(), 5);
    assert_eq!(client.connections(), 2);
    client.close();
    assert_eq!(client.state(), State::Closed);
}

fn main() {
    if std::env::args().any(|a| a == "--serve-stdio") {
        return serve();
    }
    harness::run(&[("a_dead_child_is_respawned", || {
        within(Duration::from_secs(30), a_dead_child_is_respawned)
    })]);
}
