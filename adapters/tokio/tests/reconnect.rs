//! Reconnecting clients against real servers on 127.0.0.1 (TCP, Unix, WebSocket) and a
//! real child process: the server is killed and restarted under the client, which
//! recovers on its own within its attempts; it gives up with a typed error when the
//! attempts run out; a pending idempotent call is re-sent and answered while a plain one
//! fails; subscriptions are replayed on the new connection.
// Server starters are async (binding) and yield the server's task handle on purpose.
#![allow(clippy::async_yields_async)]

#[path = "../../../tests/support/common.rs"]
mod common;

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{calculator, within, Add, Pair, LIMIT};
use sansrpc::connection::SendError;
use sansrpc::RawValue;
use sansrpc_tokio::reconnect::{
    self, Backoff, CallOptions, PendingPolicy, Reconnect, ReconnectPolicy, State,
};
use sansrpc_tokio::{sansrpc, AsyncRouter, Builder, CallError, Transport};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Quick retries, many of them: generous for a loaded machine.
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

fn forever() -> impl Future<Output = ()> + Send + 'static {
    std::future::pending()
}

fn serve_tcp(listener: TcpListener, router: AsyncRouter) -> JoinHandle<io::Result<()>> {
    let builder = Builder::new().router(router);
    tokio::spawn(sansrpc_tokio::serve_tcp(
        listener,
        builder,
        forever(),
        Duration::ZERO,
    ))
}

/// Binds `addr` again after its server was killed. Another test running in parallel may
/// hold the freed port for a moment (as the local port of a short connection): retry.
async fn rebind(addr: std::net::SocketAddr) -> TcpListener {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return listener,
            Err(e) if std::time::Instant::now() > deadline => panic!("rebinding {addr}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Kills an in-process server: its task, its listener and every connection go at once.
async fn kill(server: JoinHandle<io::Result<()>>) {
    server.abort();
    let _ = server.await;
}

async fn add(client: &Reconnect) -> Result<f64, CallError> {
    client.call::<Add>(&Pair { a: 1.0, b: 2.0 }).await
}

/// The common scenario: a server, a reconnecting client calling it, the server killed (the
/// client refuses calls with a typed error while reconnecting) and restarted (the client
/// is open again and calls succeed, without the caller doing anything).
async fn killed_and_restarted<C, F, T, S, SF>(connector: C, mut start: S)
where
    C: FnMut() -> F + Send + 'static,
    F: Future<Output = io::Result<T>> + Send + 'static,
    T: Transport,
    S: FnMut() -> SF,
    SF: Future<Output = JoinHandle<io::Result<()>>>,
{
    let server = start().await;
    let policy = patient(PendingPolicy::Fail);
    let conn = reconnect::spawn(Builder::new(), policy, connector);
    let client = conn.client;
    client.wait_open().await.unwrap();
    assert_eq!(add(&client).await.unwrap(), 3.0);

    let mut watch = client.watch();
    kill(server).await;
    assert_eq!(
        watch.wait_for(|s| s == State::Connecting).await,
        State::Connecting
    );
    // Nothing may be sent while connecting: a typed error, at once.
    match add(&client).await {
        Err(CallError::Send(SendError::Connecting)) => {}
        other => panic!("expected SendError::Connecting, got {other:?}"),
    }

    let _server = start().await;
    client.wait_open().await.unwrap();
    assert_eq!(add(&client).await.unwrap(), 3.0);
    assert_eq!(client.connections(), 2);

    client.close().await;
    assert_eq!(watch.wait_for(|s| s == State::Closed).await, State::Closed);
    conn.task.await.unwrap().unwrap();
    match add(&client).await {
        Err(e) => assert!(e.is_closed(), "{e:?}"),
        Ok(_) => panic!("a closed client called"),
    }
}

#[tokio::test]
async fn tcp_server_killed_and_restarted() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut first = Some(listener);
        let start = move || {
            let listener = first.take();
            async move {
                let listener = match listener {
                    Some(l) => l,
                    None => rebind(addr).await,
                };
                serve_tcp(listener, calculator())
            }
        };
        killed_and_restarted(reconnect::tcp(addr), start).await;
    })
    .await;
}

#[cfg(unix)]
#[tokio::test]
async fn unix_server_killed_and_restarted() {
    within(LIMIT, async {
        let dir = std::env::temp_dir().join(format!("sansrpc-reconnect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("calc.sock");
        let socket = path.clone();
        let start = move || {
            let path = socket.clone();
            async move {
                let _ = std::fs::remove_file(&path);
                let listener = tokio::net::UnixListener::bind(&path).unwrap();
                let builder = Builder::new().router(calculator());
                tokio::spawn(sansrpc_tokio::serve_unix(
                    listener,
                    builder,
                    forever(),
                    Duration::ZERO,
                ))
            }
        };
        killed_and_restarted(reconnect::unix(&path), start).await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

#[tokio::test]
async fn websocket_server_killed_and_restarted() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut first = Some(listener);
        let start = move || {
            let listener = first.take();
            async move {
                let listener = match listener {
                    Some(l) => l,
                    None => rebind(addr).await,
                };
                let builder = Builder::new().router(calculator());
                let mut options = sansrpc_tokio::ServeOptions::default();
                options.keepalive = None;
                tokio::spawn(sansrpc_tokio::ws::serve_with(
                    listener,
                    builder,
                    options,
                    forever(),
                    Duration::ZERO,
                ))
            }
        };
        let connector = reconnect::ws(format!("ws://{addr}"), &Builder::new(), None);
        killed_and_restarted(connector, start).await;
    })
    .await;
}

#[tokio::test]
async fn a_killed_child_process_is_respawned() {
    within(LIMIT, async {
        let pid = Arc::new(Mutex::new(None));
        let spawned = pid.clone();
        let connector = move || {
            let mut command =
                tokio::process::Command::new(env!("CARGO_BIN_EXE_sansrpc-tokio-calculator"));
            let child = reconnect::ChildTransport::spawn(&mut command);
            if let Ok(child) = &child {
                *spawned.lock().unwrap() = child.id();
            }
            std::future::ready(child)
        };
        let conn = reconnect::spawn(Builder::new(), patient(PendingPolicy::Fail), connector);
        let client = conn.client;
        client.wait_open().await.unwrap();
        assert_eq!(add(&client).await.unwrap(), 3.0);
        let first = pid.lock().unwrap().expect("a child pid");
        let mut watch = client.watch();
        // The shell's own `kill`: no procps needed.
        let killed = std::process::Command::new("sh")
            .args(["-c", &format!("kill -9 {first}")])
            .status()
            .unwrap();
        assert!(killed.success());
        watch.wait_for(|s| s == State::Connecting).await;
        client.wait_open().await.unwrap();
        assert_eq!(add(&client).await.unwrap(), 3.0);
        let second = pid.lock().unwrap().expect("a child pid");
        assert_ne!(first, second);
        assert_eq!(client.connections(), 2);
        client.close().await;
        conn.task.await.unwrap().unwrap();
    })
    .await;
}

/// A child process's connection reads on past the driver's budget of one turn (256 KiB):
/// each turn starts its count again. (It did not: the transport kept its first turn's
/// count, and after 256 KiB from the child the driver spun without reading.)
#[tokio::test]
async fn a_child_process_connection_reads_past_one_turns_budget() {
    within(LIMIT, async {
        let connector = || {
            let mut command =
                tokio::process::Command::new(env!("CARGO_BIN_EXE_sansrpc-tokio-calculator"));
            std::future::ready(reconnect::ChildTransport::spawn(&mut command))
        };
        let conn = reconnect::spawn(Builder::new(), patient(PendingPolicy::Fail), connector);
        let client = conn.client;
        client.wait_open().await.unwrap();
        // About 60 bytes an answer with its Content-Length head: 600 KiB in all.
        for round in 0..50 {
            let calls = (0..200).map(|i| {
                let pair = Pair {
                    a: f64::from(round * 200 + i),
                    b: 1.0,
                };
                let client = &client;
                async move { client.call::<Add>(&pair).await }
            });
            for (i, sum) in futures::future::join_all(calls)
                .await
                .into_iter()
                .enumerate()
            {
                assert_eq!(sum.unwrap(), f64::from(round * 200 + i as u32) + 1.0);
            }
        }
        client.close().await;
        conn.task.await.unwrap().unwrap();
    })
    .await;
}

#[tokio::test]
async fn gives_up_after_max_attempts_with_a_typed_error() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = serve_tcp(listener, calculator());
        let attempts = Arc::new(AtomicU32::new(0));
        let counted = attempts.clone();
        let mut tcp = reconnect::tcp(addr);
        let connector = move || {
            counted.fetch_add(1, Ordering::SeqCst);
            tcp()
        };
        let policy = ReconnectPolicy {
            backoff: Backoff::Fixed {
                delay: Duration::from_millis(20),
                max_attempts: 3,
            },
            ..patient(PendingPolicy::Fail)
        };
        let conn = reconnect::spawn(Builder::new(), policy, connector);
        conn.client.wait_open().await.unwrap();
        kill(server).await; // Never restarted: every attempt is refused.

        let gave_up = conn.task.await.unwrap().unwrap_err();
        assert_eq!(gave_up.attempts, 3);
        assert_eq!(
            attempts.load(Ordering::SeqCst),
            4,
            "the first connect and 3 retries"
        );
        assert_eq!(conn.client.state(), State::Closed);
        assert!(conn.client.wait_open().await.unwrap_err().is_closed());
        assert!(add(&conn.client).await.unwrap_err().is_closed());
    })
    .await;
}

#[tokio::test]
async fn a_pending_idempotent_call_is_resent_and_a_plain_one_fails() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // The first server takes `slow` calls and never answers them.
        let (arrived_tx, mut arrived) = tokio::sync::mpsc::unbounded_channel();
        let mut router = calculator();
        router
            .raw_method("slow", move |_| {
                let _ = arrived_tx.send(());
                std::future::pending()
            })
            .unwrap();
        let server = serve_tcp(listener, router);

        let conn = reconnect::spawn(
            Builder::new(),
            patient(PendingPolicy::ResendIdempotent),
            reconnect::tcp(addr),
        );
        let client = conn.client.clone();
        client.wait_open().await.unwrap();
        let idempotent = client.call_raw_with("slow", None, CallOptions::idempotent());
        let idempotent = tokio::spawn(idempotent);
        let plain = tokio::spawn(client.call_raw("slow", None));
        arrived.recv().await.unwrap();
        arrived.recv().await.unwrap();

        kill(server).await;
        // The second server answers `slow` at once.
        let mut router = calculator();
        router
            .raw_method("slow", |_| async {
                Ok(RawValue::from_string("\"done\"".to_owned()).unwrap())
            })
            .unwrap();
        let listener = rebind(addr).await;
        let _server = serve_tcp(listener, router);

        let plain = plain.await.unwrap();
        assert!(plain.unwrap_err().is_closed());
        let answer = idempotent.await.unwrap().unwrap();
        assert_eq!(answer.get(), "\"done\"");
        assert_eq!(client.connections(), 2);
    })
    .await;
}

#[tokio::test]
async fn a_pending_idempotent_call_fails_under_the_fail_policy() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (arrived_tx, mut arrived) = tokio::sync::mpsc::unbounded_channel();
        let mut router = calculator();
        router
            .raw_method("slow", move |_| {
                let _ = arrived_tx.send(());
                std::future::pending()
            })
            .unwrap();
        let server = serve_tcp(listener, router);
        let conn = reconnect::spawn(
            Builder::new(),
            patient(PendingPolicy::Fail),
            reconnect::tcp(addr),
        );
        conn.client.wait_open().await.unwrap();
        let call = conn
            .client
            .call_raw_with("slow", None, CallOptions::idempotent());
        let call = tokio::spawn(call);
        arrived.recv().await.unwrap();
        kill(server).await;
        assert!(call.await.unwrap().unwrap_err().is_closed());
    })
    .await;
}

/// A server with the pub/sub methods, recording every (un)subscribe call it gets.
fn pubsub(log: Arc<Mutex<Vec<String>>>) -> AsyncRouter {
    let mut router = calculator();
    for method in [
        "rpc.subscribe",
        "rpc.subscribe.batch",
        "rpc.unsubscribe",
        "rpc.subscribe.persistent",
    ] {
        let log = log.clone();
        router
            .sync()
            .extension(method, move |params, out| {
                let params = params.map_or("", |p| p.get());
                log.lock().unwrap().push(format!("{method} {params}"));
                out.extend_from_slice(br#"{"ok":true}"#);
                Ok(())
            })
            .unwrap();
    }
    router
}

fn raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).unwrap()
}

#[tokio::test]
async fn subscriptions_are_replayed_after_a_reconnect() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let first_log = Arc::new(Mutex::new(Vec::new()));
        let server = serve_tcp(listener, pubsub(first_log.clone()));
        let conn = reconnect::spawn(
            Builder::new(),
            patient(PendingPolicy::Fail),
            reconnect::tcp(addr),
        );
        let client = conn.client;
        client.wait_open().await.unwrap();
        let calls = [
            ("rpc.subscribe", r#"{"topic":"news"}"#),
            ("rpc.subscribe.batch", r#"{"topics":["a","b"]}"#),
            ("rpc.unsubscribe", r#"{"topic":"a"}"#),
            (
                "rpc.subscribe.persistent",
                r#"{"subscription_id":"p1","topic":"orders"}"#,
            ),
        ];
        for (method, params) in calls {
            client.call_raw(method, Some(&raw(params))).await.unwrap();
        }
        assert_eq!(first_log.lock().unwrap().len(), 4);

        let mut watch = client.watch();
        kill(server).await;
        watch.wait_for(|s| s == State::Connecting).await;
        let second_log = Arc::new(Mutex::new(Vec::new()));
        let listener = rebind(addr).await;
        let _server = serve_tcp(listener, pubsub(second_log.clone()));
        client.wait_open().await.unwrap();
        // Replays go out before any other call, and these handlers run in arrival order.
        assert_eq!(add(&client).await.unwrap(), 3.0);
        assert_eq!(
            *second_log.lock().unwrap(),
            [
                r#"rpc.subscribe {"topic":"b"}"#,
                r#"rpc.subscribe {"topic":"news"}"#,
                r#"rpc.subscribe.persistent {"subscription_id":"p1","topic":"orders"}"#,
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn a_silent_peer_caught_by_the_heartbeat_is_reconnected_to() {
    use sansrpc::connection::keepalive::HeartbeatConfig;
    use tokio::io::AsyncReadExt;
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Accepts every connection and reads it, never answering anything.
        let silent = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                held.push(tokio::spawn(async move {
                    let mut sink = Vec::new();
                    let _ = stream.read_to_end(&mut sink).await;
                }));
            }
        });
        let heartbeat =
            HeartbeatConfig::ping(Duration::from_millis(50), Duration::from_millis(200));
        let builder = Builder::new().configure(|c| c.heartbeat = Some(heartbeat));
        let conn = reconnect::spawn(builder, patient(PendingPolicy::Fail), reconnect::tcp(addr));
        let client = conn.client;
        client.wait_open().await.unwrap();
        let mut watch = client.watch();
        // The dead connection is noticed and a new one opened, without any call.
        assert_eq!(
            watch.wait_for(|s| s == State::Connecting).await,
            State::Connecting
        );
        assert_eq!(watch.wait_for(|s| s == State::Open).await, State::Open);
        assert!(client.connections() >= 2);
        client.close().await;
        conn.task.await.unwrap().unwrap();
        silent.abort();
    })
    .await;
}

#[tokio::test]
async fn a_connect_that_hangs_times_out_and_counts_as_an_attempt() {
    within(LIMIT, async {
        let attempts = Arc::new(AtomicU32::new(0));
        let counted = attempts.clone();
        // A peer that never completes a connection (as a black-holed address would).
        let connector = move || {
            counted.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<io::Result<reconnect::TcpTransport>>()
        };
        let policy = ReconnectPolicy {
            backoff: Backoff::Fixed {
                delay: Duration::from_millis(10),
                max_attempts: 2,
            },
            jitter: 0.0,
            connect_timeout: Duration::from_millis(100),
            pending: PendingPolicy::Fail,
        };
        let conn = reconnect::spawn(Builder::new(), policy, connector);
        assert_eq!(conn.client.state(), State::Connecting);
        let gave_up = conn.task.await.unwrap().unwrap_err();
        assert_eq!(gave_up.error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(gave_up.attempts, 2);
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
        assert_eq!(conn.client.connections(), 0);
        assert_eq!(conn.client.state(), State::Closed);
    })
    .await;
}

#[tokio::test]
async fn an_aborted_supervisor_leaves_its_handles_closed() {
    within(LIMIT, async {
        let connector = || std::future::pending::<io::Result<reconnect::TcpTransport>>();
        let conn = reconnect::spawn(Builder::new(), patient(PendingPolicy::Fail), connector);
        let waiting = tokio::spawn({
            let client = conn.client.clone();
            async move { client.wait_open().await }
        });
        conn.task.abort();
        assert!(waiting.await.unwrap().unwrap_err().is_closed());
        assert_eq!(conn.client.state(), State::Closed);
    })
    .await;
}
