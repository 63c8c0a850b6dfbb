//! Pull-based streams and `$/progress` over real TCP connections on 127.0.0.1, with
//! threads only.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::eventually;
use sansrpc::connection::EndReason;
use sansrpc::method::CallError;
use sansrpc::router::Router;
use sansrpc::Timeout;
use sansrpc::{ErrorObject, Id, RawValue};
use sansrpc_blocking::{connect_tcp, serve_tcp, Options, RequestContext, StreamOptions};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The tests run one at a time, so the heap measurement sees only its own test.
static HEAP: Mutex<()> = Mutex::new(());

struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[derive(serde::Deserialize)]
struct To {
    to: u64,
}

fn router(flags: Arc<Mutex<Vec<Arc<AtomicBool>>>>) -> Router {
    let mut router = Router::new();
    router
        .stream_method("count", |p: To| Ok((1..=p.to).map(Ok)))
        .unwrap();
    router
        .stream_method("forever", move |(): ()| {
            let flag = Arc::new(AtomicBool::new(false));
            flags.lock().unwrap().push(flag.clone());
            let guard = Dropped(flag);
            Ok((1u64..).map(move |n| {
                let _ = &guard;
                Ok::<u64, ErrorObject<'static>>(n)
            }))
        })
        .unwrap();
    router
        .stream_method("fail_after", |p: To| {
            let fail = std::iter::once(Err(ErrorObject::new(-32099, "disk on fire")));
            Ok((1..=p.to).map(Ok).chain(fail))
        })
        .unwrap();
    router
}

#[test]
fn streams_over_tcp() {
    let _heap = HEAP.lock().unwrap_or_else(|e| e.into_inner());
    let flags = Arc::new(Mutex::new(Vec::new()));
    let server = serve_tcp(
        "127.0.0.1:0",
        Arc::new(router(flags.clone())),
        Options::default(),
    )
    .unwrap();
    let client = connect_tcp(server.local_addr(), Options::default()).unwrap();

    // Warm-up, then 1,000,000 items in order, with the heap bounded.
    let warm = client
        .stream::<_, u64>(
            "count",
            &serde_json::json!({"to": 10_000}),
            StreamOptions::new(16, 256),
        )
        .unwrap();
    assert_eq!(warm.map(Result::unwrap).count(), 10_000);
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    const N: u64 = 1_000_000;
    let items = client
        .stream::<_, u64>(
            "count",
            &serde_json::json!({"to": N}),
            StreamOptions::new(16, 256),
        )
        .unwrap();
    let mut n = 0;
    for item in items {
        n += 1;
        assert_eq!(item.unwrap(), n, "in order");
    }
    assert_eq!(n, N);
    let growth = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    eprintln!("peak heap growth: {growth} bytes");
    assert!(growth < 4 * 1024 * 1024, "peak heap growth {growth} bytes");

    // Dropping the iterator mid-way frees the server's producer.
    let mut forever = client
        .stream::<_, u64>("forever", &(), StreamOptions::new(4, 8))
        .unwrap();
    for expected in 1..=100 {
        assert_eq!(forever.next().unwrap().unwrap(), expected);
    }
    let flag = flags.lock().unwrap()[0].clone();
    assert!(!flag.load(Ordering::SeqCst));
    drop(forever);
    eventually(
        Duration::from_secs(15),
        "the server dropped the producer",
        || flag.load(Ordering::SeqCst),
    );

    // A failure after some items.
    let mut failing = client
        .stream::<_, u64>(
            "fail_after",
            &serde_json::json!({"to": 3}),
            StreamOptions::new(2, 2),
        )
        .unwrap();
    let got: Vec<u64> = (&mut failing).take(3).map(Result::unwrap).collect();
    assert_eq!(got, [1, 2, 3]);
    match failing.next() {
        Some(Err(CallError::Rpc(e))) => assert_eq!(e.code, -32099),
        other => panic!("expected the producer's error, got {other:?}"),
    }
    assert!(failing.next().is_none());

    client.close();
    server.shutdown();
}

#[test]
fn progress_from_a_handler_keeps_the_call_alive_until_the_cap() {
    let _heap = HEAP.lock().unwrap_or_else(|e| e.into_inner());
    let mut router = Router::new();
    router
        .raw_method("work", |params, out| {
            let (token, steps): (i64, u64) = params.unwrap().deserialize().unwrap();
            for step in 0..steps {
                std::thread::sleep(Duration::from_millis(200));
                let value = RawValue::from_string(step.to_string()).unwrap();
                let cx = RequestContext::current().expect("inside a handler");
                if cx.peer().send_progress(&Id::number(token), &value).is_err() || cx.is_cancelled()
                {
                    return Err(ErrorObject::new(-32001, "cancelled"));
                }
            }
            out.extend_from_slice(steps.to_string().as_bytes());
            Ok(())
        })
        .unwrap();
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), Options::default()).unwrap();
    let client = connect_tcp(server.local_addr(), Options::default()).unwrap();

    // Progress every 200 ms against a 2 s limit: ten times the gap, so a loaded machine
    // does not make a step late enough to end the call.
    let base = Duration::from_secs(2);
    let plain = client.call_raw_with(
        "work",
        Some(RawValue::from_json("[1, 20]").unwrap()),
        Timeout::After(base),
    );
    assert!(matches!(plain, Err(CallError::Ended(EndReason::TimedOut))));

    let kept = client.call_raw_with_progress(
        "work",
        Some(RawValue::from_json("[2, 12]").unwrap()),
        base,
        2,
        Duration::from_secs(10),
    );
    assert_eq!(kept.unwrap().get(), "12");

    let start = Instant::now();
    let capped = client.call_raw_with_progress(
        "work",
        Some(RawValue::from_json("[3, 1000]").unwrap()),
        base,
        3,
        Duration::from_secs(3),
    );
    assert!(matches!(capped, Err(CallError::Ended(EndReason::TimedOut))));
    assert!(start.elapsed() >= Duration::from_secs(3));
    client.close();
    server.shutdown();
}

/// A stream whose iterator blocks (here on a gate the test opens) runs on a worker: the
/// connection keeps answering other calls meanwhile.
#[test]
fn a_blocking_iterator_does_not_stall_the_connection() {
    let _heap = HEAP.lock().unwrap_or_else(|e| e.into_inner());
    let (open, gate) = std::sync::mpsc::channel::<u64>();
    let gate = Arc::new(Mutex::new(gate));
    let mut router = Router::new();
    router
        .stream_method("gated", move |(): ()| {
            let gate = gate.clone();
            Ok(std::iter::from_fn(move || {
                gate.lock()
                    .unwrap()
                    .recv()
                    .ok()
                    .map(Ok::<u64, ErrorObject<'static>>)
            }))
        })
        .unwrap();
    router
        .raw_method("ping", |_, out| {
            out.extend_from_slice(b"\"pong\"");
            Ok(())
        })
        .unwrap();
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), Options::default()).unwrap();
    let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
    let reader = client.clone();
    let items = std::thread::spawn(move || {
        let options = StreamOptions::new(1, 1);
        let stream = reader.stream::<_, u64>("gated", &(), options).unwrap();
        stream.take(2).map(Result::unwrap).collect::<Vec<_>>()
    });
    // The iterator is blocked (nothing sent through the gate yet): the connection answers.
    for _ in 0..3 {
        let pong = client
            .call_raw_with("ping", None, Timeout::After(Duration::from_secs(10)))
            .unwrap();
        assert_eq!(pong.get(), "\"pong\"");
    }
    open.send(7).unwrap();
    open.send(8).unwrap();
    assert_eq!(items.join().unwrap(), [7, 8]);
    drop(open);
    client.close();
    server.shutdown();
}
