//! The reconnecting client on threads, against real servers on 127.0.0.1: a server shut
//! down and started again on the same port under the client, which recovers by itself;
//! giving up after the policy's attempts; a pending idempotent call re-sent and answered
//! while a plain one fails.

#[path = "../examples/calculator/mod.rs"]
mod calculator;
mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use calculator::*;
use common::{eventually, within};
use sansrpc::connection::SendError;
use sansrpc::ext::reconnect::{Backoff, CallOptions, PendingPolicy, ReconnectPolicy, State};
use sansrpc::router::Router;
use sansrpc::Timeout;
use sansrpc_blocking::{serve_tcp, CallError, Options, Reconnect, Server};

const LIMIT: Duration = Duration::from_secs(30);
const T: Timeout = Timeout::After(Duration::from_secs(10));
/// How long to wait for a state.
const W: Option<Duration> = Some(Duration::from_secs(10));

fn patient(pending: PendingPolicy) -> ReconnectPolicy {
    ReconnectPolicy {
        backoff: Backoff::Exponential {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(250),
            multiplier: 2.0,
            max_attempts: 100,
        },
        jitter: 0.5,
        connect_timeout: Duration::from_secs(5),
        pending,
    }
}

fn quick_shutdown() -> Options {
    let mut config = Options::default();
    config.connection.end_grace = Duration::from_millis(100);
    config
}

/// Serves `router` on `addr`, retrying while the port is still held by someone else.
fn serve_on(addr: &str, router: Router) -> Server {
    let router = Arc::new(router);
    let mut served = None;
    eventually(
        Duration::from_secs(10),
        &format!("serving on {addr}"),
        || {
            served = serve_tcp(addr, router.clone(), quick_shutdown()).ok();
            served.is_some()
        },
    );
    served.unwrap()
}

fn add(client: &Reconnect) -> Result<i64, CallError> {
    client.call_with::<Add>(&Operands { a: 1, b: 2 }, T)
}

#[test]
fn a_server_restarted_under_the_client() {
    within(LIMIT, || {
        let server = serve_on("127.0.0.1:0", calculator::router());
        let addr: SocketAddr = server.local_addr();
        let policy = patient(PendingPolicy::Fail);
        let client = Reconnect::tcp(addr, policy, Options::default()).unwrap();
        client.wait_open(W).unwrap();
        assert_eq!(add(&client).unwrap(), 3);

        server.shutdown();
        assert_eq!(
            client.wait_for(W, |s| s == State::Connecting),
            State::Connecting
        );
        match add(&client) {
            Err(CallError::Send(SendError::Connecting)) => {}
            other => panic!("expected SendError::Connecting, got {other:?}"),
        }

        let server = serve_on(&addr.to_string(), calculator::router());
        client.wait_open(W).unwrap();
        assert_eq!(add(&client).unwrap(), 3);
        assert_eq!(client.connections(), 2);

        client.close();
        assert_eq!(client.state(), State::Closed);
        assert!(matches!(
            add(&client),
            Err(CallError::Send(SendError::Closed))
        ));
        server.shutdown();
    });
}

#[test]
fn gives_up_after_max_attempts() {
    within(LIMIT, || {
        let server = serve_on("127.0.0.1:0", calculator::router());
        let policy = ReconnectPolicy {
            backoff: Backoff::Fixed {
                delay: Duration::from_millis(20),
                max_attempts: 3,
            },
            ..patient(PendingPolicy::Fail)
        };
        let client = Reconnect::tcp(server.local_addr(), policy, Options::default()).unwrap();
        client.wait_open(W).unwrap();
        server.shutdown(); // Never started again.
        assert_eq!(client.wait_for(W, |s| s == State::Closed), State::Closed);
        let gave_up = client.gave_up().expect("gave up");
        assert_eq!(gave_up.attempts, 3);
        assert!(matches!(
            add(&client),
            Err(CallError::Send(SendError::Closed))
        ));
        assert!(matches!(
            client.wait_open(W),
            Err(CallError::Send(SendError::Closed))
        ));
    });
}

#[test]
fn a_pending_idempotent_call_is_resent_and_a_plain_one_fails() {
    // Dropped at the end of the test: the held handlers' wait ends.
    let (release, held) = mpsc::channel::<()>();
    let held = Arc::new(Mutex::new(held));
    within(LIMIT, move || {
        // The first server takes `slow` calls and holds them past its shutdown grace.
        let arrived = Arc::new(AtomicUsize::new(0));
        let mut router = calculator::router();
        let seen = arrived.clone();
        router
            .raw_method("slow", move |_, out| {
                seen.fetch_add(1, Ordering::SeqCst);
                // One handler at a time waits on the receiver; each wakes when the sender
                // is dropped (or after 20 s, a bound).
                let _ = held
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .recv_timeout(Duration::from_secs(20));
                out.extend_from_slice(b"\"late\"");
                Ok(())
            })
            .unwrap();
        let server = serve_on("127.0.0.1:0", router);
        let addr = server.local_addr();
        let policy = patient(PendingPolicy::ResendIdempotent);
        let client = Reconnect::tcp(addr, policy, Options::default()).unwrap();
        client.wait_open(W).unwrap();

        let c = client.clone();
        let options = CallOptions {
            timeout: T,
            idempotent: true,
        };
        let idempotent = thread::spawn(move || c.call_raw_with("slow", None, options));
        let c = client.clone();
        let plain = thread::spawn(move || c.call_raw_with("slow", None, T));
        eventually(W.unwrap(), "both calls reach the server", || {
            arrived.load(Ordering::SeqCst) == 2
        });

        server.shutdown();
        // The second server answers `slow` at once.
        let mut router = calculator::router();
        router
            .raw_method("slow", |_, out| {
                out.extend_from_slice(b"\"done\"");
                Ok(())
            })
            .unwrap();
        let server = serve_on(&addr.to_string(), router);

        let plain = plain.join().unwrap();
        match plain {
            Err(e) => assert!(e.is_closed(), "{e:?}"),
            other => panic!("expected the plain call to fail as closed, got {other:?}"),
        }
        let answer = idempotent.join().unwrap().unwrap();
        assert_eq!(answer.get(), "\"done\"");
        assert_eq!(client.connections(), 2);
        client.close();
        server.shutdown();
    });
    drop(release);
}

#[test]
fn close_interrupts_the_wait_for_the_next_attempt() {
    within(LIMIT, || {
        let server = serve_on("127.0.0.1:0", calculator::router());
        let policy = ReconnectPolicy {
            backoff: Backoff::Fixed {
                delay: Duration::from_secs(3600),
                max_attempts: 5,
            },
            ..patient(PendingPolicy::Fail)
        };
        let client = Reconnect::tcp(server.local_addr(), policy, Options::default()).unwrap();
        client.wait_open(W).unwrap();
        server.shutdown();
        assert_eq!(
            client.wait_for(W, |s| s == State::Connecting),
            State::Connecting
        );
        // An hour until the next attempt: close does not wait for it.
        client.close();
        assert_eq!(client.state(), State::Closed);
        assert_eq!(client.gave_up(), None);
    });
}
