//! The adapter over real TCP sockets on 127.0.0.1: the calculator, concurrency, batches,
//! timeouts with cancellation, the handler pool's bound and the endpoint's busy answer.

#[path = "../examples/calculator/mod.rs"]
mod calculator;
mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use calculator::*;
use common::{eventually, within};
use sansrpc::connection::{EndReason, SendError, Timeout};
use sansrpc::method::{CallError, Method};
use sansrpc::router::Router;
use sansrpc::RawValue;
use sansrpc_blocking::{connect_tcp, serve_tcp, Client, Options, RequestContext, Server};

const LIMIT: Duration = Duration::from_secs(20);
const T: Timeout = Timeout::After(Duration::from_secs(5));

fn serve(router: Router, config: Options) -> (Server, Client) {
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), config).unwrap();
    let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
    (server, client)
}

fn rpc_code<T: std::fmt::Debug>(result: Result<T, CallError>) -> i64 {
    match result {
        Err(CallError::Rpc(e)) => e.code,
        other => panic!("expected an error object, got {other:?}"),
    }
}

#[test]
fn calculator_over_tcp() {
    within(LIMIT, || {
        let (server, client) = serve(calculator::router(), Options::default());
        let (two_three, ten_four) = (Operands { a: 2, b: 3 }, Operands { a: 10, b: 4 });
        assert_eq!(client.call_with::<Add>(&two_three, T).unwrap(), 5);
        assert_eq!(client.call_with::<AddPositional>(&(2, 3), T).unwrap(), 5);
        assert_eq!(client.call_with::<Subtract>(&ten_four, T).unwrap(), 6);
        assert_eq!(
            client.call_with::<SubtractPositional>(&(10, 4), T).unwrap(),
            6
        );
        assert_eq!(client.call_with::<Divide>(&(1.0, 4.0), T).unwrap(), 0.25);

        let by_zero = client.call_with::<Divide>(&(1.0, 0.0), T);
        assert_eq!(rpc_code(by_zero), DIVISION_BY_ZERO);
        let params = RawValue::from_json("[2, 3]").unwrap();
        assert_eq!(
            rpc_code(client.call_raw_with("multiply", Some(params), T)),
            -32601
        );
        let short = RawValue::from_json("[1]").unwrap();
        assert_eq!(
            rpc_code(client.call_raw_with("add", Some(short), T)),
            -32602
        );
        let raw = client.call_raw_with(
            "add",
            Some(RawValue::from_json(r#"{"b":1,"a":41}"#).unwrap()),
            T,
        );
        assert_eq!(raw.unwrap().get(), "42");

        // Notifications run in arrival order, each before any request sent after it.
        for line in ["one", "two", "three"] {
            client.notify::<Log>(&(line.to_owned(),)).unwrap();
        }
        assert_eq!(
            client.call_with::<Logged>(&(), T).unwrap(),
            ["one", "two", "three"]
        );

        client.close();
        assert!(client.is_closed());
        assert!(matches!(
            client.call_with::<Add>(&two_three, T),
            Err(CallError::Send(SendError::Closed))
        ));
        server.shutdown();
    });
}

#[test]
fn concurrent_calls_from_several_threads() {
    within(LIMIT, || {
        let (server, client) = serve(calculator::router(), Options::default());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let client = client.clone();
                thread::spawn(move || {
                    for i in 0..50 {
                        let sum = client.call_with::<AddPositional>(&(t, i), T).unwrap();
                        assert_eq!(sum, t + i);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        drop(client);
        server.shutdown();
    });
}

#[test]
fn batch_over_tcp() {
    within(LIMIT, || {
        let (server, client) = serve(calculator::router(), Options::default());
        let json = |s| Some(RawValue::from_json(s).unwrap());
        let mut batch = client.batch();
        let add = batch.call::<AddPositional>(&(1, 2));
        batch.notify_raw("log", json(r#"["batched"]"#));
        batch.call_raw("divide", json("[1, 0]"));
        batch.call_raw("nope", None);
        let mut answers = batch.send_with(T).unwrap();
        assert_eq!(answers.len(), 3);
        assert_eq!(add.take(&mut answers).unwrap(), 3);
        let mut answers = answers.into_iter().skip(1);
        assert_eq!(rpc_code(answers.next().unwrap()), DIVISION_BY_ZERO);
        assert_eq!(rpc_code(answers.next().unwrap()), -32601);
        assert_eq!(client.call_with::<Logged>(&(), T).unwrap(), ["batched"]);
        server.shutdown();
    });
}

enum Sleep {}
impl Method for Sleep {
    const NAME: &'static str = "sleep";
    type Params = (u64,);
    type Result = bool;
}

/// A handler that sleeps up to `ms`, stopping early when its request is cancelled; it
/// returns whether it was cancelled, and records that in `cancelled`.
fn sleeper(cancelled: Arc<AtomicBool>) -> Router {
    let mut router = Router::new();
    router
        .method::<Sleep, _>(move |(ms,)| {
            let end = Instant::now() + Duration::from_millis(ms);
            while Instant::now() < end {
                if RequestContext::current().is_some_and(|cx| cx.is_cancelled()) {
                    cancelled.store(true, Ordering::SeqCst);
                    return Ok(true);
                }
                thread::sleep(Duration::from_millis(5));
            }
            Ok(false)
        })
        .unwrap();
    router
        .method::<AddPositional, _>(|(a, b)| Ok(a + b))
        .unwrap();
    router
}

#[test]
fn a_timed_out_call_fails_and_cancels_the_handler() {
    within(LIMIT, || {
        let cancelled = Arc::new(AtomicBool::new(false));
        let (server, client) = serve(sleeper(Arc::clone(&cancelled)), Options::default());
        let start = Instant::now();
        let result =
            client.call_with::<Sleep>(&(10_000,), Timeout::After(Duration::from_millis(200)));
        let took = start.elapsed();
        assert!(
            matches!(result, Err(CallError::Ended(EndReason::TimedOut))),
            "{result:?}"
        );
        assert!(took >= Duration::from_millis(200), "{took:?}");
        assert!(took < Duration::from_millis(1500), "{took:?}");
        // The endpoint sent `$/cancelRequest`; the handler saw it and stopped early.
        eventually(
            Duration::from_secs(5),
            "the handler sees the cancellation",
            || cancelled.load(Ordering::SeqCst),
        );
        // The late answer is dropped and the connection goes on.
        assert_eq!(client.call_with::<AddPositional>(&(1, 1), T).unwrap(), 2);
        server.shutdown();
    });
}

#[test]
fn the_pool_bounds_concurrent_handlers() {
    within(LIMIT, || {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (now, max) = (Arc::clone(&running), Arc::clone(&most));
        let mut router = Router::new();
        router
            .method::<Sleep, _>(move |(ms,)| {
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                max.fetch_max(n, Ordering::SeqCst);
                thread::sleep(Duration::from_millis(ms));
                now.fetch_sub(1, Ordering::SeqCst);
                Ok(false)
            })
            .unwrap();
        let mut config = Options::default();
        config.workers = 2;
        let (server, client) = serve(router, config);
        let start = Instant::now();
        let calls: Vec<_> = (0..4)
            .map(|_| {
                let client = client.clone();
                thread::spawn(move || client.call_with::<Sleep>(&(300,), T).unwrap())
            })
            .collect();
        calls.into_iter().for_each(|c| assert!(!c.join().unwrap()));
        assert_eq!(most.load(Ordering::SeqCst), 2);
        // Two waves of two.
        assert!(start.elapsed() >= Duration::from_millis(600));
        server.shutdown();
    });
}

#[test]
fn beyond_the_queue_the_endpoint_answers_busy() {
    within(LIMIT, || {
        let mut config = Options::default();
        config.workers = 1;
        config.connection.max_inflight_incoming = 2;
        config.connection.hold_when_busy = false;
        let (server, client) = serve(sleeper(Arc::default()), config);
        let calls: Vec<_> = (0..3)
            .map(|_| {
                let client = client.clone();
                thread::spawn(move || client.call_with::<Sleep>(&(500,), T))
            })
            .collect();
        let results: Vec<_> = calls.into_iter().map(|c| c.join().unwrap()).collect();
        let ok = results.iter().filter(|r| r.is_ok()).count();
        let busy: Vec<_> = results
            .into_iter()
            .filter(Result::is_err)
            .map(rpc_code)
            .collect();
        assert_eq!((ok, busy), (2, vec![-32002]));
        server.shutdown();
    });
}

#[test]
fn connections_beyond_the_bound_are_closed() {
    within(LIMIT, || {
        let mut config = Options::default();
        config.max_connections = 1;
        let (server, first) = serve(calculator::router(), config);
        assert_eq!(first.call_with::<AddPositional>(&(1, 2), T).unwrap(), 3);
        let second = connect_tcp(server.local_addr(), Options::default()).unwrap();
        let refused = second.call_with::<AddPositional>(&(1, 2), T);
        // The refusal (-32002, id null) reaches the call when it was already pending (the
        // endpoint attributes a null-id error to the single pending request); otherwise the
        // call finds the connection closed.
        assert!(
            match &refused {
                Err(CallError::Rpc(e)) => e.code == -32002,
                other => matches!(
                    other,
                    Err(CallError::Ended(EndReason::Closed))
                        | Err(CallError::Send(SendError::Closed))
                ),
            },
            "{refused:?}"
        );
        assert_eq!(first.call_with::<AddPositional>(&(3, 4), T).unwrap(), 7);
        server.shutdown();
    });
}

#[test]
fn large_messages_pushed_back() {
    within(LIMIT, || {
        let mut router = Router::new();
        router
            .raw_method("echo", |params, out| {
                out.extend_from_slice(params.map_or("null", |p| p.get()).as_bytes());
                Ok(())
            })
            .unwrap();
        let mut config = Options::default();
        // Reads of several frames, with room for one frame's events at a time: the
        // endpoint pushes back the rest of a read until its events are drained.
        config.read_size = 1 << 20;
        config.read_buffers = 2;
        config.connection.limits.max_frame_bytes = 400_000;
        let server = serve_tcp("127.0.0.1:0", Arc::new(router), config.clone()).unwrap();
        let client = connect_tcp(server.local_addr(), config).unwrap();
        let calls: Vec<_> = (0..4)
            .map(|t| {
                let client = client.clone();
                thread::spawn(move || {
                    for i in 0..5 {
                        let text = format!("[\"{}\"]", "x".repeat(300_000 + t * 1000 + i));
                        let params = RawValue::from_json(&text).unwrap();
                        let echoed = client.call_raw_with("echo", Some(params), T).unwrap();
                        assert_eq!(echoed.get(), text);
                    }
                })
            })
            .collect();
        calls.into_iter().for_each(|c| c.join().unwrap());
        server.shutdown();
    });
}
