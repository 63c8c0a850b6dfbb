//! The calculator on tokio over real TCP and Unix sockets and a real child process, the
//! accept loops' graceful shutdown, and the tokio timer driving deadlines.

#[path = "../../../tests/support/common.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{calculator, exercise, within, LIMIT};
use sansrpc::codec::Framing;
use sansrpc::connection::Timeout;
use sansrpc::method::Method;
use sansrpc_tokio::{sansrpc, AsyncRouter, Builder};
use tokio::sync::oneshot;

#[tokio::test]
async fn calculator_over_tcp_with_serve_tcp() {
    within(LIMIT, async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let builder = Builder::new().router(calculator());
        let shutdown = async move {
            let _ = stopped.await;
        };
        let server = tokio::spawn(sansrpc_tokio::serve_tcp(listener, builder, shutdown, LIMIT));
        // Two clients at once, each on its own connection.
        let a = sansrpc_tokio::spawn(
            Builder::new(),
            sansrpc_tokio::tcp(tokio::net::TcpStream::connect(addr).await.unwrap()),
        );
        let b = sansrpc_tokio::spawn(
            Builder::new(),
            sansrpc_tokio::tcp(tokio::net::TcpStream::connect(addr).await.unwrap()),
        );
        tokio::join!(exercise(&a.client), exercise(&b.client));
        let _ = stop.send(());
        server.await.unwrap().unwrap();
        // The server closed both connections.
        a.driver.await.unwrap().unwrap();
        b.driver.await.unwrap().unwrap();
        assert!(a
            .client
            .call_raw("add", None)
            .await
            .unwrap_err()
            .is_closed());
    })
    .await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calculator_over_unix_with_serve_unix() {
    within(LIMIT, async {
        let dir = std::env::temp_dir().join(format!("sansrpc-tokio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("calculator.sock");
        let _ = std::fs::remove_file(&path);
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let builder = Builder::new().router(calculator());
        let shutdown = async move {
            let _ = stopped.await;
        };
        let server = tokio::spawn(sansrpc_tokio::serve_unix(
            listener, builder, shutdown, LIMIT,
        ));
        let stream = tokio::net::UnixStream::connect(&path).await.unwrap();
        let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::unix(stream));
        exercise(&conn.client).await;
        let _ = stop.send(());
        server.await.unwrap().unwrap();
        conn.driver.await.unwrap().unwrap();
        let _ = std::fs::remove_file(&path);
    })
    .await;
}

async fn child(args: &[&str], framing: Framing) {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_sansrpc-tokio-calculator"));
    command.args(args).kill_on_drop(true);
    let (mut child, transport) = sansrpc_tokio::child(&mut command).unwrap();
    let conn = sansrpc_tokio::spawn(
        Builder::new().configure(|c| c.framing = Some(framing)),
        transport,
    );
    exercise(&conn.client).await;
    // The last client gone, the driver closes the child's stdin and the child exits.
    drop(conn.client);
    conn.driver.await.unwrap().unwrap();
    assert!(child.wait().await.unwrap().success());
}

#[tokio::test]
async fn calculator_in_a_child_process() {
    within(LIMIT, child(&[], Framing::ContentLength)).await;
}

#[tokio::test]
async fn calculator_in_a_child_process_with_newline_framing() {
    within(LIMIT, child(&["--newline"], Framing::Newline)).await;
}

enum Sleep {}
impl Method for Sleep {
    const NAME: &'static str = "sleep";
    type Params = (u64,);
    type Result = u64;
}

/// A `sleep` handler that reports its start, and its cancellation (future dropped early).
fn sleeper() -> (
    AsyncRouter,
    tokio::sync::mpsc::UnboundedReceiver<&'static str>,
) {
    struct Report(Option<tokio::sync::mpsc::UnboundedSender<&'static str>>);
    impl Report {
        fn disarm(&mut self) {
            self.0 = None;
        }
    }
    impl Drop for Report {
        fn drop(&mut self) {
            if let Some(tx) = self.0.take() {
                let _ = tx.send("cancelled");
            }
        }
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut router = AsyncRouter::new();
    router
        .method::<Sleep, _, _>(move |(ms,)| {
            let _ = tx.send("started");
            let mut report = Report(Some(tx.clone()));
            async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                report.disarm();
                Ok(ms)
            }
        })
        .unwrap();
    (router, rx)
}

#[tokio::test]
async fn deadlines_and_cancel_on_drop_on_tokio() {
    within(LIMIT, async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (router, mut signals) = sleeper();
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let conn =
                sansrpc_tokio::spawn(Builder::new().router(router), sansrpc_tokio::tcp(stream));
            conn.driver.await.unwrap()
        });
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));

        let start = Instant::now();
        let timeout = Timeout::After(Duration::from_millis(100));
        let err = conn
            .client
            .call_with::<Sleep>(&(60_000,), timeout)
            .await
            .unwrap_err();
        assert!(err.is_timeout(), "{err}");
        assert!(start.elapsed() >= Duration::from_millis(100));
        assert_eq!(signals.recv().await, Some("started"));
        assert_eq!(signals.recv().await, Some("cancelled"));

        let call = tokio::spawn({
            let client = conn.client.clone();
            async move { client.call::<Sleep>(&(60_000,)).await }
        });
        assert_eq!(signals.recv().await, Some("started"));
        call.abort(); // Drops the call's future.
        assert_eq!(signals.recv().await, Some("cancelled"));

        assert_eq!(conn.client.call::<Sleep>(&(5,)).await.unwrap(), 5);
        drop(conn.client);
        conn.driver.await.unwrap().unwrap();
        server.await.unwrap().unwrap();
    })
    .await;
}

#[tokio::test]
async fn serve_tcp_shutdown_joins_within_its_grace_period() {
    within(LIMIT, async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (router, mut signals) = sleeper();
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let grace = Duration::from_millis(200);
        let server = tokio::spawn(sansrpc_tokio::serve_tcp(
            listener,
            Builder::new().router(router),
            shutdown,
            grace,
        ));
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));
        let quick = conn.client.call::<Sleep>(&(100,));
        let slow = conn.client.call::<Sleep>(&(60_000,));
        assert_eq!(signals.recv().await, Some("started"));
        assert_eq!(signals.recv().await, Some("started"));
        let start = Instant::now();
        let _ = stop.send(());
        // The quick handler finishes within the grace period and is answered; the slow one
        // is dropped at its end and its caller sees the connection close.
        let (quick, slow) = tokio::join!(quick, slow);
        assert_eq!(quick.unwrap(), 100);
        assert!(slow.unwrap_err().is_closed());
        server.await.unwrap().unwrap();
        let elapsed = start.elapsed();
        assert!(
            elapsed >= grace && elapsed < Duration::from_secs(3),
            "{elapsed:?}"
        );
        assert_eq!(signals.recv().await, Some("cancelled"));
        conn.driver.await.unwrap().unwrap();
    })
    .await;
}
