//! Pull-based streams and `$/progress` over real TCP connections on 127.0.0.1 (smol).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::{within, LIMIT};
use futures::{AsyncReadExt, AsyncWriteExt, StreamExt};
use sansrpc::connection::stream::{code, StreamConfig};
use sansrpc::connection::{Config, EndReason, Timeout};
use sansrpc::method::CallError;
use sansrpc::{ErrorObject, Id, RawValue};
use sansrpc_futures::{transport, AsyncIoTimer, AsyncRouter, Builder, Client, StreamOptions};

/// Counts live heap bytes, and the peak since the last reset.
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

/// The tests run one at a time, so the heap measurements see only their own test.
static HEAP: Mutex<()> = Mutex::new(());

/// Sets a flag when dropped: carried by a producer, it tells when the producer is freed.
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

/// A router with `count` (1..=to), `forever` (1, 2, 3, … each producer carrying a drop
/// flag from `flags`), and `fail_after` (to items, then an error).
fn router(flags: Arc<Mutex<Vec<Arc<AtomicBool>>>>) -> AsyncRouter {
    let mut router = AsyncRouter::new();
    router
        .stream_method("count", |p: To| {
            Ok(futures::stream::iter(
                (1..=p.to).map(Ok::<u64, ErrorObject<'static>>),
            ))
        })
        .unwrap();
    router
        .stream_method("forever", move |(): ()| {
            let flag = Arc::new(AtomicBool::new(false));
            flags.lock().unwrap().push(flag.clone());
            let guard = Dropped(flag);
            Ok(futures::stream::iter(1u64..).map(move |n| {
                let _ = &guard;
                Ok::<u64, ErrorObject<'static>>(n)
            }))
        })
        .unwrap();
    router
        .stream_method("fail_after", |p: To| {
            let items = (1..=p.to).map(Ok);
            let fail = std::iter::once(Err(ErrorObject::new(-32099, "disk on fire")));
            Ok(futures::stream::iter(items.chain(fail)))
        })
        .unwrap();
    router
}

struct Served {
    addr: std::net::SocketAddr,
    flags: Arc<Mutex<Vec<Arc<AtomicBool>>>>,
    _task: smol::Task<()>,
}

/// Serves connections with the test router, each with `builder`.
async fn serve(builder: Builder) -> Served {
    let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let flags = Arc::new(Mutex::new(Vec::new()));
    let router = Arc::new(router(flags.clone()));
    let task = smol::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (_, driver) = builder
                .clone()
                .shared_router(router.clone())
                .connect(transport::tcp(stream), AsyncIoTimer);
            smol::spawn(driver).detach();
        }
    });
    Served {
        addr,
        flags,
        _task: task,
    }
}

async fn connect(addr: std::net::SocketAddr) -> Client {
    let stream = async_net::TcpStream::connect(addr).await.unwrap();
    let (client, driver) = Builder::new().connect(transport::tcp(stream), AsyncIoTimer);
    smol::spawn(driver).detach();
    client
}

/// Waits (generously) until `cond` holds.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(15), "never: {what}");
        async_io::Timer::after(Duration::from_millis(10)).await;
    }
}

/// 1,000,000 items over TCP; the heap never holds more than a few window's worth of them.
#[test]
fn a_million_items_in_bounded_memory() {
    let _heap = HEAP.lock().unwrap_or_else(|e| e.into_inner());
    smol::block_on(within(Duration::from_secs(120), async {
        let served = serve(Builder::new()).await;
        let client = connect(served.addr).await;
        // Warm up the connection and both drivers' buffers.
        let mut warm = client
            .stream::<_, u64>(
                "count",
                &serde_json::json!({"to": 10_000}),
                StreamOptions::new(16, 256),
            )
            .await
            .unwrap();
        while let Some(item) = warm.next().await {
            item.unwrap();
        }
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);

        const N: u64 = 1_000_000;
        let mut items = client
            .stream::<_, u64>(
                "count",
                &serde_json::json!({"to": N}),
                StreamOptions::new(16, 256),
            )
            .await
            .unwrap();
        let (mut n, mut sum) = (0u64, 0u64);
        while let Some(item) = items.next().await {
            let item = item.unwrap();
            n += 1;
            assert_eq!(item, n, "in order");
            sum += item;
        }
        assert_eq!(n, N);
        assert_eq!(sum, N * (N + 1) / 2);
        let growth = PEAK.load(Ordering::Relaxed).saturating_sub(base);
        eprintln!("peak heap growth: {growth} bytes");
        // Holding every item would take over 16 MB (a boxed value per item); the window
        // holds 16 answers of 256 items (about 40 KB of JSON) on each side.
        assert!(growth < 4 * 1024 * 1024, "peak heap growth {growth} bytes");
    }));
}

#[test]
fn dropping_the_stream_mid_way_cancels_it_on_both_sides() {
    let _heap = HEAP.lock().unwrap_or_else(|e| e.into_inner());
    smol::block_on(within(LIMIT, async {
        let served = serve(Builder::new()).await;
        let client = connect(served.addr).await;
        let mut items = client
            .stream::<_, u64>("forever", &(), StreamOptions::new(4, 8))
            .await
            .unwrap();
        for expected in 1..=100 {
            assert_eq!(items.next().await.unwrap().unwrap(), expected);
        }
        let flag = served.flags.lock().unwrap()[0].clone();
        assert!(!flag.load(Ordering::SeqCst));
        drop(items);
        eventually("the server dropped the producer", || {
            flag.load(Ordering::SeqCst)
        })
        .await;
        // The connection goes on: another stream works.
        let mut again = client
            .stream::<_, u64>(
                "count",
                &serde_json::json!({"to": 3}),
                StreamOptions::default(),
            )
            .await
            .unwrap();
        let mut got = Vec::new();
        while let Some(item) = again.next().await {
            got.push(item.unwrap());
        }
        assert_eq!(got, [1, 2, 3]);
    }));
}

#[test]
fn a_failing_stream_gives_its_items_then_the_error() {
    let _heap = HEAP.lock().unwrap_or_else(|e| e.into_inner());
    smol::block_on(within(LIMIT, async {
        let served = serve(Builder::new()).await;
        let client = connect(served.addr).await;
        let mut items = client
            .stream::<_, u64>(
                "fail_after",
                &serde_json::json!({"to": 5}),
                StreamOptions::new(3, 2),
            )
            .await
            .unwrap();
        let mut got = Vec::new();
        let error = loop {
            match items.next().await.unwrap() {
                Ok(n) => got.push(n),
                Err(e) => break e,
            }
        };
        assert_eq!(got, [1, 2, 3, 4, 5]);
        assert_eq!(error.code(), Some(-32099));
        assert!(items.next().await.is_none());
        // A method that is not a stream: its answer is refused as a stream id.
        let not = client
            .stream_raw("rpc.discover", None, StreamOptions::default())
            .await;
        assert!(matches!(not, Err(CallError::Decode(_))), "{not:?}");
    }));
}

/// Writes one Content-Length frame.
async fn frame(stream: &mut async_net::TcpStream, body: &str) {
    let head = format!("Content-Length: {}\r\n\r\n", body.len());
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
}

/// A raw peer that opens streams and never pulls: the server keeps at most `max_open`, frees
/// them after the idle timeout, and its heap does not grow with the number of attempts.
#[test]
fn a_peer_that_opens_streams_and_never_pulls_cannot_exhaust_memory() {
    let _heap = HEAP.lock().unwrap_or_else(|e| e.into_inner());
    smol::block_on(within(Duration::from_secs(60), async {
        let mut streams = StreamConfig::default();
        streams.max_open = 8;
        streams.idle_timeout = Duration::from_millis(300);
        let served = serve(Builder::new().configure(|c| c.streams = streams)).await;
        let mut raw = async_net::TcpStream::connect(served.addr).await.unwrap();
        let mut reader = raw.clone();
        // Counts the answers as they stream past, holding only a short tail of the bytes.
        let answers = smol::spawn(async move {
            let refused = code::TOO_MANY_STREAMS.to_string();
            let patterns = ["\"id\":", "{\"stream\":", refused.as_str()];
            let mut counts = [0usize; 3];
            let mut window: Vec<u8> = Vec::with_capacity(64 * 1024 + 64);
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = reader.read(&mut buf).await.unwrap();
                if n == 0 {
                    return counts;
                }
                let carried = window.len();
                window.extend_from_slice(&buf[..n]);
                for (count, pattern) in counts.iter_mut().zip(patterns) {
                    let p = pattern.as_bytes();
                    // Only matches ending in the new bytes: the carried tail was counted.
                    *count += window
                        .windows(p.len())
                        .enumerate()
                        .filter(|(i, w)| *w == p && i + p.len() > carried)
                        .count();
                }
                let keep = window.len().min(16);
                window.drain(..window.len() - keep);
                if counts[0] >= 20_000 {
                    return counts;
                }
            }
        });
        let live = |flags: &Mutex<Vec<Arc<AtomicBool>>>| {
            let f = flags.lock().unwrap();
            f.iter().filter(|f| !f.load(Ordering::SeqCst)).count()
        };
        let mut base = 0;
        for round in 0..2 {
            for i in 0..10_000 {
                let id = round * 10_000 + i;
                let call = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"forever"}}"#);
                frame(&mut raw, &call).await;
                if round == 0 && i == 1_000 {
                    base = LIVE.load(Ordering::Relaxed);
                    PEAK.store(base, Ordering::Relaxed);
                }
                if i % 1_000 == 0 {
                    assert!(live(&served.flags) <= 8, "more streams open than the bound");
                }
            }
            // Past the idle timeout every stream is freed.
            let flags = served.flags.clone();
            eventually("the idle streams were freed", || live(&flags) == 0).await;
        }
        let [_, opened, refused] = answers.await;
        assert_eq!(opened + refused, 20_000);
        // The bound was reached in each round; every stream opened had its producer freed.
        assert!(opened >= 16, "opened {opened}");
        assert_eq!(served.flags.lock().unwrap().len(), opened);
        let growth = PEAK.load(Ordering::Relaxed).saturating_sub(base);
        eprintln!("peak heap growth: {growth} bytes");
        assert!(growth < 4 * 1024 * 1024, "peak heap growth {growth} bytes");
    }));
}

/// A server whose handlers report progress through their own connection's client.
async fn serve_progress() -> std::net::SocketAddr {
    let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    smol::spawn(async move {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let me: Arc<OnceLock<Client>> = Arc::new(OnceLock::new());
        let mut router = AsyncRouter::new();
        // `work`: reports progress every 200 ms on the token, `steps` times, then answers.
        let conn = me.clone();
        router
            .method::<Work, _, _>(move |(token, steps)| {
                let conn = conn.clone();
                async move {
                    let client = conn.get().unwrap();
                    for step in 0..steps {
                        async_io::Timer::after(Duration::from_millis(200)).await;
                        let value = RawValue::from_string(step.to_string()).unwrap();
                        client
                            .send_progress(&Id::number(token), &value)
                            .await
                            .unwrap();
                    }
                    Ok(steps)
                }
            })
            .unwrap();
        let (client, driver) = Builder::new()
            .router(router)
            .connect(transport::tcp(stream), AsyncIoTimer);
        let _ = me.set(client);
        let _ = driver.await;
    })
    .detach();
    addr
}

enum Work {}
impl sansrpc::method::Method for Work {
    const NAME: &'static str = "work";
    type Params = (i64, u64);
    type Result = u64;
}

#[test]
fn progress_keeps_a_request_alive_and_the_cap_ends_it() {
    let _heap = HEAP.lock().unwrap_or_else(|e| e.into_inner());
    smol::block_on(within(LIMIT, async {
        let addr = serve_progress().await;
        let stream = async_net::TcpStream::connect(addr).await.unwrap();
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        let mut router = AsyncRouter::new();
        router
            .raw_notification("$/progress", move |_| {
                counter.fetch_add(1, Ordering::SeqCst);
                async {}
            })
            .unwrap();
        let (client, driver) = Builder::new()
            .config(Config::default())
            .router(router)
            .connect(transport::tcp(stream), AsyncIoTimer);
        smol::spawn(driver).detach();

        // Without progress, 8 steps of 200 ms outlast a 700 ms deadline.
        let params = RawValue::from_json("[1, 8]").unwrap();
        let plain = client.call_raw_with(
            "work",
            Some(params),
            Timeout::After(Duration::from_millis(700)),
        );
        assert!(matches!(
            plain.await,
            Err(CallError::Ended(EndReason::TimedOut))
        ));

        // With progress every 200 ms, the same work finishes (1.6 s) well past the base
        // deadline, inside the 10 s cap. The progress values surfaced as notifications.
        let before = seen.load(Ordering::SeqCst);
        let params = RawValue::from_json("[2, 8]").unwrap();
        let kept = client.call_raw_with_progress(
            "work",
            Some(params),
            Duration::from_millis(700),
            2,
            Duration::from_secs(10),
        );
        assert_eq!(kept.await.unwrap().get(), "8");
        assert!(seen.load(Ordering::SeqCst) - before >= 8);

        // Progress that never stops cannot keep a request alive past the cap.
        let params = RawValue::from_json("[3, 1000]").unwrap();
        let start = Instant::now();
        let capped = client.call_raw_with_progress(
            "work",
            Some(params),
            Duration::from_millis(700),
            3,
            Duration::from_millis(1500),
        );
        assert!(matches!(
            capped.await,
            Err(CallError::Ended(EndReason::TimedOut))
        ));
        assert!(start.elapsed() >= Duration::from_millis(1500));
    }));
}
