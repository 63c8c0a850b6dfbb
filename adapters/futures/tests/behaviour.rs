//! The driver's guarantees, over real TCP sockets on smol: cancellation on drop, deadlines,
//! notification order, the concurrency limit, closed connections and graceful shutdown.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{within, LIMIT};
use futures::channel::{mpsc, oneshot};
use futures::{AsyncReadExt, StreamExt};
use sansrpc::connection::Timeout;
use sansrpc::method::{Method, NotificationMethod};
use sansrpc_futures::{
    transport, AsyncIoTimer, AsyncRouter, Builder, CallError, Client, ShutdownHandle,
};

enum Sleep {}
impl Method for Sleep {
    const NAME: &'static str = "sleep";
    /// Milliseconds.
    type Params = (u64,);
    type Result = u64;
}

enum Record {}
impl NotificationMethod for Record {
    const NAME: &'static str = "record";
    type Params = (u64,);
}

async fn sleep_ms(ms: u64) {
    async_io::Timer::after(Duration::from_millis(ms)).await;
}

struct Server {
    addr: std::net::SocketAddr,
    shutdown: oneshot::Receiver<ShutdownHandle>,
    driver: smol::Task<std::io::Result<()>>,
}

/// Serves one connection with `builder` on a fresh port.
async fn serve(builder: Builder) -> Server {
    let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, shutdown) = oneshot::channel();
    let driver = smol::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (_, driver) = builder.connect(transport::tcp(stream), AsyncIoTimer);
        let _ = tx.send(driver.shutdown_handle());
        driver.await
    });
    Server {
        addr,
        shutdown,
        driver,
    }
}

struct Connection {
    client: Client,
    shutdown: ShutdownHandle,
    driver: smol::Task<std::io::Result<()>>,
}

async fn connect(addr: std::net::SocketAddr, builder: Builder) -> Connection {
    let stream = async_net::TcpStream::connect(addr).await.unwrap();
    let (client, driver) = builder.connect(transport::tcp(stream), AsyncIoTimer);
    Connection {
        client,
        shutdown: driver.shutdown_handle(),
        driver: smol::spawn(driver),
    }
}

/// Signals of the `sleep` handler: one message per start, and one when a future is dropped
/// before it finished (cancelled).
struct Signals {
    started: mpsc::UnboundedReceiver<()>,
    cancelled: mpsc::UnboundedReceiver<u64>,
}

/// A router whose `sleep` handler reports when it starts and when it is cancelled.
fn sleeper() -> (AsyncRouter, Signals) {
    let (started_tx, started) = mpsc::unbounded();
    let (cancelled_tx, cancelled) = mpsc::unbounded();
    let mut router = AsyncRouter::new();
    router
        .method::<Sleep, _, _>(move |(ms,)| {
            let _ = started_tx.unbounded_send(());
            let mut guard = OnDrop(Some(cancelled_tx.clone()), ms);
            async move {
                sleep_ms(ms).await;
                guard.disarm(); // Finished: not cancelled.
                Ok(ms)
            }
        })
        .unwrap();
    (router, Signals { started, cancelled })
}

/// Reports `.1` when dropped while armed: a handler's future dropped before it finished.
struct OnDrop(Option<mpsc::UnboundedSender<u64>>, u64);
impl OnDrop {
    fn disarm(&mut self) {
        self.0 = None;
    }
}
impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.unbounded_send(self.1);
        }
    }
}

#[test]
fn dropping_a_call_cancels_the_handler() {
    smol::block_on(within(LIMIT, async {
        let (router, mut signals) = sleeper();
        let server = serve(Builder::new().router(router)).await;
        let conn = connect(server.addr, Builder::new()).await;
        let call = Box::pin(conn.client.call::<Sleep>(&(60_000,)));
        // Poll the call until the server's handler runs, then drop it.
        let call = match futures::future::select(call, signals.started.next()).await {
            futures::future::Either::Right((_, call)) => call,
            futures::future::Either::Left(_) => panic!("the call finished"),
        };
        drop(call);
        assert_eq!(signals.cancelled.next().await, Some(60_000));
        // The connection still works.
        assert_eq!(conn.client.call::<Sleep>(&(1,)).await.unwrap(), 1);
        drop(conn.client);
        conn.driver.await.unwrap();
        server.driver.await.unwrap();
    }));
}

#[test]
fn dropping_a_call_sends_cancel_request() {
    smol::block_on(within(LIMIT, async {
        let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let conn = connect(listener.local_addr().unwrap(), Builder::new()).await;
        let (mut peer, _) = listener.accept().await.unwrap();
        let call = conn.client.call::<Sleep>(&(60_000,));
        // The request goes out when the call is made, before the future is polled.
        let mut seen = Vec::new();
        let mut buf = [0; 1024];
        let request = br#"{"jsonrpc":"2.0","method":"sleep","params":[60000],"id":1}"#;
        while !seen.windows(request.len()).any(|w| w == request) {
            let n = peer.read(&mut buf).await.unwrap();
            assert!(n > 0, "connection closed early");
            seen.extend_from_slice(&buf[..n]);
        }
        drop(call);
        let cancel = br#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#;
        while !seen.windows(cancel.len()).any(|w| w == cancel) {
            let n = peer.read(&mut buf).await.unwrap();
            assert!(n > 0, "connection closed before the cancel");
            seen.extend_from_slice(&buf[..n]);
        }
        conn.shutdown.shutdown(Duration::ZERO);
        conn.driver.await.unwrap();
    }));
}

#[test]
fn a_call_past_its_deadline_times_out() {
    smol::block_on(within(LIMIT, async {
        let (router, mut signals) = sleeper();
        let server = serve(Builder::new().router(router)).await;
        let mut config = sansrpc::connection::Config::default();
        config.default_timeout = Some(Duration::from_millis(300));
        let conn = connect(server.addr, Builder::new().config(config)).await;

        let start = Instant::now();
        let timeout = Timeout::After(Duration::from_millis(100));
        let err = conn
            .client
            .call_with::<Sleep>(&(60_000,), timeout)
            .await
            .unwrap_err();
        assert!(err.is_timeout(), "{err}");
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(100) && elapsed < Duration::from_secs(5));
        // The timeout also cancelled the work on the server.
        assert_eq!(signals.cancelled.next().await, Some(60_000));

        // The configured default deadline.
        let start = Instant::now();
        let err = conn.client.call::<Sleep>(&(60_000,)).await.unwrap_err();
        assert!(err.is_timeout());
        assert!(start.elapsed() >= Duration::from_millis(300));
        // A call within its deadline still answers.
        let ok = conn
            .client
            .call_with::<Sleep>(&(10,), Timeout::After(Duration::from_secs(10)));
        assert_eq!(ok.await.unwrap(), 10);
        drop(conn.client);
        conn.driver.await.unwrap();
        server.driver.await.unwrap();
    }));
}

#[test]
fn notifications_run_in_arrival_order_beside_a_slow_request() {
    smol::block_on(within(LIMIT, async {
        let (mut router, mut signals) = sleeper();
        let (done_tx, done) = mpsc::unbounded();
        router
            .notification::<Record, _, _>(move |(n,)| {
                let done = done_tx.clone();
                async move {
                    // Uneven work: run concurrently, these would finish out of order.
                    sleep_ms((n * 7) % 5).await;
                    let _ = done.unbounded_send(n);
                }
            })
            .unwrap();
        let server = serve(Builder::new().router(router)).await;
        let conn = connect(server.addr, Builder::new()).await;
        let start = Instant::now();
        let slow = conn.client.call::<Sleep>(&(60_000,));
        signals.started.next().await;
        for n in 0..100 {
            conn.client.notify::<Record>(&(n,)).await.unwrap();
        }
        let order: Vec<u64> = done.take(100).collect().await;
        assert_eq!(order, (0..100).collect::<Vec<_>>());
        // The slow request was running all along and is still running.
        assert!(start.elapsed() < Duration::from_secs(30));
        drop(slow);
        assert_eq!(signals.cancelled.next().await, Some(60_000));
        drop(conn.client);
        conn.driver.await.unwrap();
        server.driver.await.unwrap();
    }));
}

#[test]
fn at_most_the_limit_of_handlers_run_at_once() {
    smol::block_on(within(LIMIT, async {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let mut router = AsyncRouter::new();
        let (r, m) = (running.clone(), most.clone());
        router
            .method::<Sleep, _, _>(move |(ms,)| {
                let (running, most) = (r.clone(), m.clone());
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    sleep_ms(ms).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok(ms)
                }
            })
            .unwrap();
        let server = serve(Builder::new().router(router).max_concurrent_requests(3)).await;
        let conn = connect(server.addr, Builder::new()).await;
        let calls = (0..12).map(|_| conn.client.call::<Sleep>(&(30,)));
        let results = futures::future::join_all(calls).await;
        assert!(results.iter().all(|r| r.as_ref().is_ok_and(|ms| *ms == 30)));
        assert_eq!(most.load(Ordering::SeqCst), 3);
        drop(conn.client);
        conn.driver.await.unwrap();
        server.driver.await.unwrap();
    }));
}

#[test]
fn a_closed_connection_fails_pending_calls() {
    smol::block_on(within(LIMIT, async {
        let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let conn = connect(listener.local_addr().unwrap(), Builder::new()).await;
        let (mut peer, _) = listener.accept().await.unwrap();
        let calls: Vec<_> = (0..3)
            .map(|_| conn.client.call::<Sleep>(&(60_000,)))
            .collect();
        let notified = conn.client.notify::<Record>(&(1,));
        // The peer reads the calls, then hangs up without answering.
        let mut buf = [0; 4096];
        let mut seen = Vec::new();
        while !seen.windows(6).any(|w| w == b"\"id\":3") {
            let n = peer.read(&mut buf).await.unwrap();
            assert!(n > 0);
            seen.extend_from_slice(&buf[..n]);
        }
        drop(peer);
        for call in calls {
            let err = call.await.unwrap_err();
            assert!(err.is_closed(), "{err}");
        }
        notified.await.unwrap();
        conn.driver.await.unwrap();
        // Later calls fail at once.
        let err = conn.client.call::<Sleep>(&(1,)).await.unwrap_err();
        assert!(err.is_closed());
        assert!(conn.client.is_closed());
    }));
}

#[test]
fn a_shutdown_asked_before_the_first_poll_ends_the_driver_and_a_dropped_driver_is_finished() {
    smol::block_on(within(LIMIT, async {
        let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut peer = async_net::TcpStream::connect(addr).await.unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let (client, driver) = Builder::new().connect(transport::tcp(stream), AsyncIoTimer);
        let handle = driver.shutdown_handle();
        assert!(!handle.is_finished());
        // Asked for before the driver ever ran, with its client and its peer still there.
        handle.clone().shutdown(Duration::ZERO);
        driver.await.unwrap();
        assert!(handle.is_finished());
        let mut byte = [0u8; 1];
        assert_eq!(
            peer.read(&mut byte).await.unwrap(),
            0,
            "the peer sees the end"
        );
        assert!(client.call::<Sleep>(&(1,)).await.unwrap_err().is_closed());

        // A driver dropped without finishing (its task aborted) is finished too, and a
        // shutdown asked of it does nothing.
        let _peer = async_net::TcpStream::connect(addr).await.unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let (_client, driver) = Builder::new().connect(transport::tcp(stream), AsyncIoTimer);
        let handle = driver.shutdown_handle();
        assert!(!handle.is_finished());
        drop(driver);
        assert!(handle.is_finished());
        handle.shutdown(Duration::ZERO);
    }));
}

#[test]
fn shutdown_lets_handlers_finish_within_the_grace_period() {
    smol::block_on(within(LIMIT, async {
        let (router, mut signals) = sleeper();
        let mut server = serve(Builder::new().router(router)).await;
        let conn = connect(server.addr, Builder::new()).await;
        let call = conn.client.call::<Sleep>(&(200,));
        signals.started.next().await;
        let shutdown = (&mut server.shutdown).await.unwrap();
        let start = Instant::now();
        shutdown.shutdown(Duration::from_secs(10));
        // The handler in flight finishes and is answered; then the server closes.
        assert_eq!(call.await.unwrap(), 200);
        server.driver.await.unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(shutdown.is_finished());
        conn.driver.await.unwrap();
        assert!(conn
            .client
            .call::<Sleep>(&(1,))
            .await
            .unwrap_err()
            .is_closed());
    }));
}

#[test]
fn shutdown_joins_within_its_deadline() {
    smol::block_on(within(LIMIT, async {
        let (router, mut signals) = sleeper();
        let mut server = serve(Builder::new().router(router)).await;
        let conn = connect(server.addr, Builder::new()).await;
        let call = conn.client.call::<Sleep>(&(60_000,));
        signals.started.next().await;
        let start = Instant::now();
        (&mut server.shutdown)
            .await
            .unwrap()
            .shutdown(Duration::from_millis(200));
        server.driver.await.unwrap();
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_millis(200) && elapsed < Duration::from_secs(3),
            "{elapsed:?}"
        );
        // The unfinished handler was dropped; the caller sees the connection close.
        assert_eq!(signals.cancelled.next().await, Some(60_000));
        assert!(call.await.unwrap_err().is_closed());
        conn.driver.await.unwrap();
    }));
}

#[test]
fn client_shutdown_fails_its_pending_calls() {
    smol::block_on(within(LIMIT, async {
        let (router, mut signals) = sleeper();
        let server = serve(Builder::new().router(router)).await;
        let conn = connect(server.addr, Builder::new()).await;
        let call = conn.client.call::<Sleep>(&(60_000,));
        signals.started.next().await;
        let start = Instant::now();
        conn.shutdown.shutdown(Duration::from_millis(100));
        assert!(call.await.unwrap_err().is_closed());
        conn.driver.await.unwrap();
        assert!(start.elapsed() < Duration::from_secs(3));
        // The server sees the connection end and drops the handler.
        server.driver.await.unwrap();
        assert_eq!(signals.cancelled.next().await, Some(60_000));
    }));
}

/// The server of the two tests below, on `sleeper`'s router: its first connection's client
/// runs `then` (its driver spawned); the task gives what `then` gave, and the driver.
async fn serve_then<R, Fut>(
    then: impl FnOnce(Client) -> Fut + Send + 'static,
) -> (
    std::net::SocketAddr,
    smol::Task<(R, smol::Task<std::io::Result<()>>)>,
)
where
    R: Send + 'static,
    Fut: std::future::Future<Output = R> + Send + 'static,
{
    let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (router, _signals) = sleeper();
    let server = smol::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let builder = Builder::new().router(router);
        let (client, driver) = builder.connect(transport::tcp(stream), AsyncIoTimer);
        let driver = smol::spawn(driver);
        (then(client).await, driver)
    });
    (addr, server)
}

/// A connection that only calls (`Builder::connect_client`): its calls are answered; the
/// peer's notifications to it are taken (the calls behind them are not held up) and its
/// requests answered -32601; once its last client is gone, it closes, and the serving peer
/// ends too.
#[test]
fn a_client_only_connection_calls_and_answers_the_peers_requests_method_not_found() {
    smol::block_on(within(LIMIT, async {
        let (addr, server) = serve_then(|client| async move {
            client.notify::<Record>(&(7,)).await.unwrap();
            client.call::<Sleep>(&(1,)).await
        })
        .await;
        let stream = async_net::TcpStream::connect(addr).await.unwrap();
        let (client, driver) = Builder::new().connect_client(transport::tcp(stream), AsyncIoTimer);
        let driver = smol::spawn(driver);
        assert_eq!(client.call::<Sleep>(&(5,)).await.unwrap(), 5);
        let (refused, server_driver) = server.await;
        match refused {
            Err(CallError::Rpc(e)) => assert_eq!(e.code, -32601, "{e:?}"),
            other => panic!("the client-only side answered {other:?}"),
        }
        assert_eq!(client.call::<Sleep>(&(1,)).await.unwrap(), 1);
        drop(client);
        driver.await.unwrap();
        server_driver.await.unwrap();
    }));
}

/// What the answering client of the test below answers: `ping` at once, `slow` never (until
/// the peer gives up on it), `boom` with a panic; it records the notifications it hears.
struct Replies {
    heard: mpsc::UnboundedSender<String>,
    dropped: mpsc::UnboundedSender<&'static str>,
}

/// Tells when the work it is part of is dropped.
struct DropSignal(mpsc::UnboundedSender<&'static str>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.unbounded_send("slow dropped");
    }
}

impl sansrpc_futures::Answers for Replies {
    fn request(
        &self,
        method: &str,
        _params: Option<Box<sansrpc::RawValue>>,
    ) -> Option<sansrpc_futures::BoxFuture<sansrpc_futures::HandlerResult>> {
        use futures::FutureExt;
        match method {
            "ping" => {
                Some(async { Ok(sansrpc::RawValue::from_json("{}").unwrap().to_owned()) }.boxed())
            }
            "slow" => {
                let signal = DropSignal(self.dropped.clone());
                Some(
                    async move {
                        let _signal = signal;
                        futures::future::pending::<()>().await;
                        unreachable!()
                    }
                    .boxed(),
                )
            }
            "boom" => Some(async { panic!("a handler's bug") }.boxed()),
            _ => None,
        }
    }

    fn notification(&self, method: &str, params: Option<&sansrpc::RawValue>) {
        let params = params.map_or("", |p| p.get());
        let _ = self.heard.unbounded_send(format!("{method} {params}"));
    }
}

/// A client that answers its peer through one `Answers` (`Builder::connect_answering`, as
/// an MCP client answers its server): its own calls are answered; the peer's requests get
/// what it answers (at once, or a panic as an internal error, or -32601 for a method it does
/// not take), its notifications reach it, and a request the peer gives up on has its work
/// dropped.
#[test]
fn an_answering_client_answers_its_peers_requests_and_drops_what_the_peer_cancels() {
    smol::block_on(within(LIMIT, async {
        let (addr, server) = serve_then(|client| async move {
            client.notify::<Record>(&(7,)).await.unwrap();
            let ping = client.call_raw("ping", None).await;
            let boom = client.call_raw("boom", None).await;
            let unknown = client.call_raw("nope", None).await;
            let slow = client
                .call_raw_with("slow", None, Timeout::After(Duration::from_millis(200)))
                .await;
            (ping, boom, unknown, slow)
        })
        .await;
        let (heard, mut heard_rx) = mpsc::unbounded();
        let (dropped, mut dropped_rx) = mpsc::unbounded();
        let answers: Arc<dyn sansrpc_futures::Answers> = Arc::new(Replies { heard, dropped });
        let stream = async_net::TcpStream::connect(addr).await.unwrap();
        let (client, driver) =
            Builder::new().connect_answering(transport::tcp(stream), AsyncIoTimer, answers);
        let driver = smol::spawn(driver);
        assert_eq!(client.call::<Sleep>(&(5,)).await.unwrap(), 5);
        let ((ping, boom, unknown, slow), server_driver) = server.await;
        assert_eq!(ping.unwrap().get(), "{}");
        let code = |r: sansrpc_futures::RawResult| match r {
            Err(CallError::Rpc(e)) => e.code,
            other => panic!("{other:?}"),
        };
        assert_eq!(code(boom), -32603);
        assert_eq!(code(unknown), -32601);
        assert!(slow.unwrap_err().is_timeout());
        assert_eq!(heard_rx.next().await.as_deref(), Some("record [7]"));
        // The server's connection sent the cancellation with its deadline: the work went.
        assert_eq!(dropped_rx.next().await, Some("slow dropped"));
        assert_eq!(client.call::<Sleep>(&(1,)).await.unwrap(), 1);
        drop(client);
        driver.await.unwrap();
        server_driver.await.unwrap();
    }));
}
