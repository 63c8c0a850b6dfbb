//! Allocations of JSON-RPC over HTTP/1.1 on `sansrpc_tokio::http::serve_with`: per request
//! on a keep-alive connection, and per connection that makes one request and closes (a
//! burst's: accepted, its driver and transport set up, the request answered, everything
//! dropped).
//!
//! A test binary of its own: a counting global allocator counts the allocations (and
//! reallocations) made on this thread only. The server and the client run on one
//! current-thread runtime on this thread, so everything the server makes is counted, and
//! nothing another thread does is. The client's requests are formatted before counting and
//! its answers read into a buffer that does not grow; its sockets' own allocations (a
//! connect, a registration with tokio's reactor) are counted with the server's. The count
//! per request does not vary from run to run after warm-up; each revision's figure must
//! stay at or under its ceiling (`CEILING_*` below): lower a ceiling as the path allocates
//! less, and raise one only with the reason in the commit. A keep-alive request allocates
//! nothing.
#![cfg(not(target_arch = "wasm32"))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use sansrpc::method::Method;
use sansrpc_tokio::{AsyncRouter, Builder, ServeOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // `try_with`: a thread being torn down has no counters left; its allocations are
        // not the test's.
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations and reallocations made on this thread so far.
fn counted() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// The most allocations a connection that makes one `add` request and closes may make,
/// the client's connect included, one connection at a time (measured: 20 since the read
/// and write buffers of an ended connection are kept for the thread's next one, 23 since
/// the machine of an ended connection is renewed for the server's next one, 30 since a
/// shutdown is asked for through the driver's wake state, not a channel of its own, 32
/// since a driver's transport and sleep wakers are made when first asked for, 34 since a
/// client's call keys and exit status share one allocation, 35 since the
/// server's set of handlers that wait is made with the first, 37 since it is rebuilt at a
/// connection's end only when it holds some, 41 before).
const CEILING_CONNECTION: u64 = 20;

/// Requests (or connections) warmed up before counting, and counted.
const WARM: u64 = 64;
const COUNTED: u64 = 256;

enum Add {}
impl Method for Add {
    const NAME: &'static str = "add";
    type Params = (i64, i64);
    type Result = i64;
}

/// Serves `add` over HTTP/1.1 on a loopback port, on the current runtime; its address.
async fn serve() -> std::net::SocketAddr {
    let mut router = AsyncRouter::new();
    router
        .sync()
        .method::<Add, _>(|(a, b)| Ok(a.wrapping_add(b)))
        .unwrap();
    let builder = Builder::new().router(router);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = ServeOptions::default();
    let grace = Duration::from_secs(1);
    tokio::spawn(sansrpc_tokio::http::serve_with(
        listener,
        builder,
        options,
        std::future::pending(),
        grace,
    ));
    addr
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Writes `request` on `stream` and reads its answer into `buf` (which does not grow);
/// checks that it is `add`'s for request `i`.
async fn exchange(stream: &mut TcpStream, buf: &mut Vec<u8>, request: &[u8], i: u64) {
    stream.write_all(request).await.unwrap();
    buf.clear();
    let head_end = loop {
        if let Some(at) = find(buf, b"\r\n\r\n") {
            break at + 4;
        }
        assert!(buf.capacity() > buf.len(), "answer too large");
        assert!(stream.read_buf(buf).await.unwrap() > 0, "closed");
    };
    assert!(buf.starts_with(b"HTTP/1.1 200 "));
    let head = std::str::from_utf8(&buf[..head_end]).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap();
    while buf.len() < head_end + len {
        assert!(stream.read_buf(buf).await.unwrap() > 0, "closed");
    }
    let body = &buf[head_end..];
    // `add` of i and 1, with id i: `{"jsonrpc":"2.0","result":<i + 1>,"id":<i>}`.
    let mut expected = [0u8; 64];
    let mut at = &mut expected[..];
    std::io::Write::write_fmt(
        &mut at,
        format_args!(r#"{{"jsonrpc":"2.0","result":{},"id":{i}}}"#, i + 1),
    )
    .unwrap();
    let written = 64 - at.len();
    assert_eq!(body, &expected[..written]);
}

fn request(i: u64) -> Vec<u8> {
    let body = format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"add","params":[{i},1]}}"#);
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_keep_alive_request_allocates_nothing() {
    runtime().block_on(async {
        let addr = serve().await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let mut buf = Vec::with_capacity(4096);
        let requests: Vec<Vec<u8>> = (0..WARM + COUNTED).map(request).collect();
        let (mut total, mut most) = (0, 0);
        for (i, request) in requests.iter().enumerate() {
            if i as u64 == WARM + COUNTED / 2 {
                // Past the next second: the `Date` header is written anew within the count.
                tokio::time::sleep(Duration::from_millis(1_100)).await;
            }
            let before = counted();
            exchange(&mut stream, &mut buf, request, i as u64).await;
            let made = counted() - before;
            if i as u64 >= WARM {
                total += made;
                most = most.max(made);
            }
        }
        println!("keep-alive requests: {total} allocations in {COUNTED} (most {most} in one)");
        // After warm-up, none: the connection's buffers and its machine's tables are grown,
        // and a new second's `Date` is written where the last one was.
        assert_eq!(
            total, 0,
            "{COUNTED} keep-alive requests made {total} allocations (most {most} in one)"
        );
    });
}

#[test]
fn a_connection_with_one_request_allocates_at_most_its_ceiling() {
    runtime().block_on(async {
        let addr = serve().await;
        let mut buf = Vec::with_capacity(4096);
        let requests: Vec<Vec<u8>> = (0..WARM + COUNTED).map(request).collect();
        let mut before = 0;
        for (i, request) in requests.iter().enumerate() {
            if i as u64 == WARM {
                before = counted();
            }
            let mut stream = TcpStream::connect(addr).await.unwrap();
            exchange(&mut stream, &mut buf, request, i as u64).await;
            drop(stream);
        }
        // The last connections' ends are read and their drivers finish: a few turns.
        for _ in 0..16 {
            tokio::task::yield_now().await;
        }
        let per_connection = (counted() - before) / COUNTED;
        println!("connection with one request: {per_connection} allocations per connection");
        assert!(
            per_connection <= CEILING_CONNECTION,
            "a connection with one request made {per_connection} allocations, over its ceiling {CEILING_CONNECTION}"
        );
    });
}
