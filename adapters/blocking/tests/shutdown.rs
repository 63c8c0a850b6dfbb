//! Shutdown with requests in flight: pending calls fail cleanly, handlers get their grace,
//! and every thread is joined in bounded time. One test in its own binary, so that counting
//! the adapter's threads counts only this test's.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{eventually, within};
use sansrpc::connection::EndReason;
use sansrpc::method::{CallError, Method};
use sansrpc::router::Router;
use sansrpc::Timeout;
use sansrpc_blocking::{connect_tcp, serve_tcp, Options, RequestContext};

enum Sleep {}
impl Method for Sleep {
    const NAME: &'static str = "sleep";
    type Params = (u64, bool);
    type Result = ();
}

/// `sleep(ms, cooperative)`: sleeps, stopping early on cancellation when cooperative.
/// `running` counts the handlers in progress.
fn router(running: Arc<AtomicUsize>) -> Router {
    let mut router = Router::new();
    router
        .method::<Sleep, _>(move |(ms, cooperative)| {
            running.fetch_add(1, Ordering::SeqCst);
            let end = Instant::now() + Duration::from_millis(ms);
            while Instant::now() < end
                && !(cooperative && RequestContext::current().is_some_and(|cx| cx.is_cancelled()))
            {
                thread::sleep(Duration::from_millis(5));
            }
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
    router
}

/// The adapter's threads still alive in this process (Linux only; elsewhere, none known).
fn adapter_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("rpc-"))
        .count()
}

const GRACE: Duration = Duration::from_millis(300);

#[test]
fn shutdown_with_requests_in_flight() {
    within(Duration::from_secs(30), || {
        let running = Arc::new(AtomicUsize::new(0));
        let mut config = Options::default();
        config.connection.end_grace = GRACE;
        let server = serve_tcp(
            "127.0.0.1:0",
            Arc::new(router(Arc::clone(&running))),
            config,
        )
        .unwrap();
        let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
        let timeout = Timeout::After(Duration::from_secs(20));
        let calls: Vec<_> = (0..3)
            .map(|_| {
                let client = client.clone();
                thread::spawn(move || client.call_with::<Sleep>(&(20_000, true), timeout))
            })
            .collect();
        eventually(Duration::from_secs(5), "three handlers running", || {
            running.load(Ordering::SeqCst) == 3
        });

        if cfg!(target_os = "linux") {
            assert!(
                adapter_threads() > 0,
                "the thread count sees the adapter's threads"
            );
        }

        // The server waits the grace for its handlers, then cancels them and closes.
        let start = Instant::now();
        server.shutdown();
        let took = start.elapsed();
        assert!(took >= GRACE, "{took:?}");
        assert!(took < GRACE + Duration::from_secs(2), "{took:?}");
        assert_eq!(running.load(Ordering::SeqCst), 0, "handlers joined");
        for call in calls {
            let result = call.join().unwrap();
            assert!(
                matches!(result, Err(CallError::Ended(EndReason::Closed))),
                "{result:?}"
            );
        }
        // The client saw the connection end; closing it joins its threads.
        client.close();
        assert_eq!(adapter_threads(), 0, "every adapter thread joined");

        // Closing a client with a call pending fails the call at once.
        let server = serve_tcp("127.0.0.1:0", Arc::new(router(Arc::clone(&running))), {
            let mut config = Options::default();
            config.connection.end_grace = GRACE;
            config
        })
        .unwrap();
        let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
        let pending = {
            let client = client.clone();
            thread::spawn(move || client.call_with::<Sleep>(&(20_000, true), timeout))
        };
        eventually(Duration::from_secs(5), "the handler running", || {
            running.load(Ordering::SeqCst) == 1
        });
        let start = Instant::now();
        client.close();
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
        let result = pending.join().unwrap();
        assert!(
            matches!(result, Err(CallError::Ended(EndReason::Closed))),
            "{result:?}"
        );
        // The server saw the end of input; its handler gets the grace, then is cancelled.
        eventually(
            GRACE + Duration::from_secs(2),
            "the handler cancelled",
            || running.load(Ordering::SeqCst) == 0,
        );
        server.shutdown();
        assert_eq!(adapter_threads(), 0, "every adapter thread joined");

        // A handler that ignores cancellation cannot hold a shutdown hostage: its thread
        // is left behind after the grace.
        let mut config = Options::default();
        config.connection.end_grace = GRACE;
        let server = serve_tcp(
            "127.0.0.1:0",
            Arc::new(router(Arc::clone(&running))),
            config,
        )
        .unwrap();
        let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
        let stubborn = {
            let client = client.clone();
            thread::spawn(move || client.call_with::<Sleep>(&(3_000, false), timeout))
        };
        eventually(
            Duration::from_secs(5),
            "the stubborn handler running",
            || running.load(Ordering::SeqCst) == 1,
        );
        let start = Instant::now();
        server.shutdown();
        assert!(
            start.elapsed() < GRACE * 3 + Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
        assert!(stubborn.join().unwrap().is_err());
        client.close();
    });
}
