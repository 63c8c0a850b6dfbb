//! sansrpc on a Cortex-M3 (QEMU's `lm3s6965evb`, semihosting): a `Connection` and a
//! `Router` served through the core's byte-stream helper `StreamIo`, fed its input 7 bytes
//! at a time and writing its output 16 bytes at a time, as a UART would. Every answer is
//! checked byte for byte; any difference prints both and exits with failure, which QEMU
//! passes on as its exit status.
//!
//! At the end it prints the heap figures (counted by a wrapping allocator: the bytes asked
//! for, at their peak, so a `realloc` that moves counts both blocks while both live) and the
//! deepest stack (the stack is painted at start and scanned at the end).
//!
//! The harness itself allocates nothing: the bytes written and the events seen go to
//! fixed buffers, so the heap figures are the connection's and the router's alone.
#![no_std]
#![no_main]

extern crate alloc;

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use core::time::Duration;

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprint, hprintln};
use embedded_alloc::LlffHeap;
use sansrpc::connection::{CloseReason, Config, Connection, Event};
use sansrpc::driver::StreamIo;
use sansrpc::connection::{self, EndReason, RequestOptions, Timeout};
use sansrpc::router::{Reply, Router};
use sansrpc::{ErrorObject, Instant};

// ----- the heap, counted -----

/// The heap: 24 KiB of the 64 KiB of RAM.
const HEAP_SIZE: usize = 24 * 1024;

/// A global allocator that counts the bytes live and their peak around the real one.
struct Counting {
    heap: LlffHeap,
    current: AtomicUsize,
    peak: AtomicUsize,
    /// The peak of what the linked-list heap itself counts as used (sizes rounded up to
    /// its block granularity).
    peak_used: AtomicUsize,
    allocations: AtomicUsize,
}

impl Counting {
    fn current(&self) -> usize {
        self.current.load(Relaxed)
    }

    fn peak(&self) -> usize {
        self.peak.load(Relaxed)
    }

    /// Starts a new peak from what is live now.
    fn reset_peak(&self) {
        self.peak.store(self.current(), Relaxed);
        self.peak_used.store(self.heap.used(), Relaxed);
    }

    /// Gives the heap its memory (through `embedded_alloc::init!`).
    ///
    /// # Safety
    /// Once, before any allocation, with memory nothing else uses.
    unsafe fn init(&self, start: usize, size: usize) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.heap.init(start, size) }
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let ptr = unsafe { self.heap.alloc(layout) };
        if !ptr.is_null() {
            let now = self.current.fetch_add(layout.size(), Relaxed) + layout.size();
            self.peak.fetch_max(now, Relaxed);
            self.peak_used.fetch_max(self.heap.used(), Relaxed);
            self.allocations.fetch_add(1, Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.heap.dealloc(ptr, layout) };
        self.current.fetch_sub(layout.size(), Relaxed);
    }
    // `realloc` is the trait's own: alloc, copy, dealloc, through the two above (which is
    // also what the linked-list heap does), so both blocks count while both live.
}

#[global_allocator]
static HEAP: Counting = Counting {
    heap: LlffHeap::empty(),
    current: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
    peak_used: AtomicUsize::new(0),
    allocations: AtomicUsize::new(0),
};

// ----- the stack, painted -----

const PAINT: u32 = 0x5A5A_A5A5;

extern "C" {
    /// The top of the stack (cortex-m-rt's link.x: the end of RAM).
    static _stack_start: u32;
    /// The start of the heap region, above every static: the stack may grow down to it.
    static __sheap: u32;
}

/// Paints the free stack, from the lowest address it may reach up to a little below the
/// current stack pointer; returns the stack pointer (just below `main`'s frame).
#[inline(never)]
fn paint_stack() -> usize {
    let bottom = (&raw const __sheap) as usize;
    let sp = cortex_m::register::msp::read() as usize;
    let mut at = (bottom + 3) & !3;
    // This function's own frame is above `sp`; leave a margin for what it calls.
    while at < sp - 128 {
        // SAFETY: between the end of the statics and below the live stack: unused RAM.
        unsafe { core::ptr::write_volatile(at as *mut u32, PAINT) };
        at += 4;
    }
    sp
}

/// The deepest the stack reached: from its top down to the lowest word painted over.
fn stack_depth() -> usize {
    let top = (&raw const _stack_start) as usize;
    let mut at = ((&raw const __sheap) as usize + 3) & !3;
    // SAFETY: the same region `paint_stack` wrote.
    while at < top && unsafe { core::ptr::read_volatile(at as *const u32) } == PAINT {
        at += 4;
    }
    top - at
}

// ----- the router -----

sansrpc::method!(Subtract = "subtract", (i64, i64) => i64);
sansrpc::method!(Sum = "sum", alloc::vec::Vec<i64> => i64);

/// Notifications handled (`update`).
static UPDATES: AtomicU32 = AtomicU32::new(0);

fn router() -> Router {
    let mut router = Router::new();
    router
        .method::<Subtract, _>(|(a, b)| {
            a.checked_sub(b)
                .ok_or_else(|| ErrorObject::new(-32000, "overflow"))
        })
        .unwrap();
    router.method::<Sum, _>(|n| Ok(n.iter().sum())).unwrap();
    router
        .raw_notification("update", |_| {
            UPDATES.fetch_add(1, Relaxed);
        })
        .unwrap();
    router
}

// ----- the harness -----

/// Bytes per read, as a UART's FIFO hands them over.
const READ_CHUNK: usize = 7;
/// Bytes the "transport" takes per write.
const WRITE_CHUNK: usize = 16;

/// What a device saw besides the requests its router answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Answer {
        token: u64,
        result: [u8; 16],
        len: usize,
    },
    Ended {
        token: u64,
        timed_out: bool,
    },
    Closed {
        shutdown: bool,
    },
    /// A frame the decoder refused (logged, not answered).
    FrameError,
    /// A message that was not JSON-RPC (the endpoint answered it itself).
    Rejected,
    Other,
}

struct Device<'r> {
    router: &'r Router,
    conn: Connection,
    io: StreamIo,
    reply: Reply,
    now: Instant,
    /// What was written since the last check; fixed, so the harness needs no heap.
    wire: [u8; 512],
    written: usize,
    seen: [Option<Seen>; 4],
    /// Heap bytes live before the connection (the router's).
    base: usize,
}

impl Device<'_> {
    /// One exchange: `input` is read 7 bytes at a time while the connection wants it, the
    /// router answers, timers run, and the output is written 16 bytes at a time into
    /// `wire`, until nothing is left to do.
    fn exchange(&mut self, mut input: &[u8]) {
        let Device {
            router,
            conn,
            io,
            reply,
            now,
            wire,
            written,
            seen,
            ..
        } = self;
        let now = *now;
        let mut serve = |conn: &mut Connection, io: &mut StreamIo| {
            let mut record = |event: Event<'_>| {
                let event = match event {
                    Event::Answer { token, result, .. } => {
                        let text = match &result {
                            Ok(raw) => raw.get().as_bytes(),
                            Err(_) => b"error",
                        };
                        let mut result = [0; 16];
                        let len = text.len().min(16);
                        result[..len].copy_from_slice(&text[..len]);
                        Seen::Answer { token, result, len }
                    }
                    Event::Ended { token, reason, .. } => Seen::Ended {
                        token,
                        timed_out: reason == EndReason::TimedOut,
                    },
                    Event::Closed { reason } => Seen::Closed {
                        shutdown: reason == CloseReason::Shutdown,
                    },
                    Event::FrameError(_) => Seen::FrameError,
                    Event::Rejected(_) => Seen::Rejected,
                    _ => Seen::Other,
                };
                if let Some(slot) = seen.iter_mut().find(|s| s.is_none()) {
                    *slot = Some(event);
                }
            };
            while router.serve(conn, reply, &mut record) || io.feed(conn, now) {}
        };
        for _turn in 0..1000 {
            // Read.
            while let Some(buf) = io.read_buf(conn) {
                if input.is_empty() {
                    io.handle_read_idle();
                    break;
                }
                let n = buf.len().min(input.len()).min(READ_CHUNK);
                buf[..n].copy_from_slice(&input[..n]);
                input = &input[n..];
                io.handle_read(conn, n, now);
                serve(conn, io);
            }
            // Timers.
            if conn.poll_timeout().is_some_and(|at| at <= now) {
                conn.handle_timeout(now);
            }
            serve(conn, io);
            // Write.
            loop {
                let out = io.transmit(conn);
                if out.is_empty() {
                    break;
                }
                let n = out.len().min(WRITE_CHUNK);
                if *written + n > wire.len() {
                    fail("output larger than the wire buffer");
                }
                wire[*written..*written + n].copy_from_slice(&out[..n]);
                *written += n;
                io.handle_written(conn, n, now);
            }
            let interest = io.interest(conn);
            let due = interest.deadline.is_some_and(|at| at <= now);
            if (input.is_empty() || interest.finished) && !interest.again && !due {
                return;
            }
        }
        fail("no progress after 1000 turns");
    }

    /// The bytes written since the last check must be `expected`, exactly.
    fn expect(&mut self, what: &str, expected: &[u8]) {
        let got = &self.wire[..self.written];
        if got != expected {
            hprintln!("FAIL {}: the output differs", what);
            hprint!("  expected: ");
            show(expected);
            hprint!("  got:      ");
            show(got);
            let at = got.iter().zip(expected).take_while(|(a, b)| a == b).count();
            hprintln!("  first difference at byte {}", at);
            fail(what);
        }
        hprintln!(
            "ok {} ({} bytes out; heap {} live, peak {})",
            what,
            got.len(),
            HEAP.current() - self.base,
            HEAP.peak() - self.base
        );
        self.written = 0;
    }

    /// The events seen since the last check must be `expected`.
    fn expect_seen(&mut self, what: &str, expected: &[Seen]) {
        let n = self.seen.iter().take_while(|s| s.is_some()).count();
        let same = n == expected.len()
            && self.seen[..n]
                .iter()
                .zip(expected)
                .all(|(a, b)| a.as_ref() == Some(b));
        if !same {
            hprintln!("FAIL {}: events", what);
            hprintln!("  expected: {:?}", expected);
            hprintln!("  got:      {:?}", &self.seen[..n]);
            fail(what);
        }
        self.seen = [None; 4];
    }
}

/// Prints bytes as text with control bytes escaped.
fn show(bytes: &[u8]) {
    for &b in bytes {
        match b {
            b'\r' => hprint!("\\r"),
            b'\n' => hprint!("\\n"),
            0x20..=0x7e => hprint!("{}", b as char),
            _ => hprint!("\\x{:02x}", b),
        }
    }
    hprintln!();
}

fn fail(what: &str) -> ! {
    hprintln!("FAILED: {}", what);
    loop {
        debug::exit(debug::EXIT_FAILURE);
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    hprintln!("panic: {}", info);
    loop {
        debug::exit(debug::EXIT_FAILURE);
    }
}

fn answer(token: u64, text: &str) -> Seen {
    let mut result = [0; 16];
    result[..text.len()].copy_from_slice(text.as_bytes());
    Seen::Answer {
        token,
        result,
        len: text.len(),
    }
}

// ----- the traffic -----

/// The peer's input and the device's exact output, frame by frame.
mod traffic;

#[entry]
fn main() -> ! {
    let main_sp = paint_stack();
    // SAFETY: once, before any allocation.
    unsafe {
        embedded_alloc::init!(HEAP, HEAP_SIZE);
    }

    let router = router();
    let router_heap = HEAP.current();
    let router_used = HEAP.heap.used();
    HEAP.reset_peak();
    let now = Instant::from_millis(1_000);
    let mut device = Device {
        router: &router,
        conn: Connection::new(Config::default(), now),
        // Reads of 64 bytes up to 256, not the 4 KiB a socket driver starts with.
        io: StreamIo::with_limits(64, 256, 4096),
        reply: Reply::default(),
        now,
        wire: [0; 512],
        written: 0,
        seen: [None; 4],
        base: router_heap,
    };
    let fresh = HEAP.current() - router_heap;

    // 1. A call with positional params.
    device.exchange(traffic::CALL.0);
    device.expect("call subtract", traffic::CALL.1);
    device.expect_seen("call subtract", &[]);
    let first = HEAP.current() - router_heap;

    // 2. A notification: handled, never answered.
    device.exchange(traffic::NOTIFICATION.0);
    device.expect("notification", traffic::NOTIFICATION.1);
    device.expect_seen("notification", &[]);
    if UPDATES.load(Relaxed) != 1 {
        fail("the notification was not handled");
    }

    // 3. A batch: two calls, a notification, an invalid entry, an unknown method.
    device.exchange(traffic::BATCH.0);
    device.expect("batch", traffic::BATCH.1);
    device.expect_seen("batch", &[]);
    if UPDATES.load(Relaxed) != 2 {
        fail("the batch's notification was not handled");
    }

    // 4. Invalid JSON in a good frame: -32700, id null.
    device.exchange(traffic::PARSE_ERROR.0);
    device.expect("invalid JSON", traffic::PARSE_ERROR.1);
    device.expect_seen("invalid JSON", &[Seen::Rejected]);

    // 5. A broken frame (a header that is not Content-Length's), then a good one: the
    // decoder resynchronises and the good one is answered.
    device.exchange(traffic::BROKEN_FRAME.0);
    device.expect("broken frame", traffic::BROKEN_FRAME.1);
    device.expect_seen("broken frame", &[Seen::FrameError]);

    // 6. An unknown method: -32601.
    device.exchange(traffic::UNKNOWN.0);
    device.expect("unknown method", traffic::UNKNOWN.1);
    device.expect_seen("unknown method", &[]);

    // 7. The device's own call, answered by the peer.
    let options = RequestOptions::timeout(Timeout::After(Duration::from_millis(500)));
    device
        .conn
        .call(1, "host/time", None, options.clone(), device.now)
        .unwrap();
    device.exchange(b"");
    device.expect("our call", traffic::OUR_CALL);
    device.expect_seen("our call", &[]);
    device.exchange(traffic::OUR_CALL_ANSWER);
    device.expect("its answer (nothing to write)", b"");
    device.expect_seen("its answer", &[answer(1, "1700000000")]);

    // 8. The device's own call, unanswered: times out on the clock, moved by hand.
    device
        .conn
        .call(2, "host/ping", None, options, device.now)
        .unwrap();
    device.exchange(b"");
    device.expect("our second call", traffic::OUR_TIMEOUT_CALL);
    device.expect_seen("our second call", &[]);
    device.now = device.now + Duration::from_millis(499);
    device.exchange(b"");
    device.expect("before its deadline", b"");
    device.expect_seen("before its deadline", &[]);
    device.now = device.now + Duration::from_millis(1);
    device.exchange(b"");
    device.expect("its cancellation", traffic::OUR_TIMEOUT_CANCEL);
    device.expect_seen(
        "its timeout",
        &[Seen::Ended {
            token: 2,
            timed_out: true,
        }],
    );

    // 9. A graceful shutdown: nothing runs, so the connection closes at once and is
    // finished once its output is written.
    device.conn.shutdown(Duration::from_secs(1), device.now);
    device.exchange(b"");
    device.expect("shutdown", b"");
    device.expect_seen("shutdown", &[Seen::Closed { shutdown: true }]);
    if !device.io.interest(&mut device.conn).finished {
        fail("the connection is not finished after its shutdown");
    }

    let peak = HEAP.peak() - router_heap;
    let peak_used = HEAP.peak_used.load(Relaxed) - router_used;
    let Device {
        conn, io, reply, ..
    } = device;
    drop((conn, io, reply));
    let left = HEAP.current() - router_heap;
    drop(router);

    hprintln!("all answers exact");
    hprintln!("router heap: {} bytes", router_heap);
    hprintln!("connection heap, new: {} bytes", fresh);
    hprintln!("connection heap after the first request: {} bytes", first);
    hprintln!("peak heap per connection: {} bytes", peak);
    hprintln!(
        "peak heap per connection, as the allocator rounds it: {} bytes",
        peak_used
    );
    hprintln!(
        "peak heap overall (with the router): {} bytes",
        peak + router_heap
    );
    hprintln!("heap left after the connection dropped: {} bytes", left);
    hprintln!("allocations: {}", HEAP.allocations.load(Relaxed));
    let depth = stack_depth();
    let main_frame = (&raw const _stack_start) as usize - main_sp;
    hprintln!("deepest stack: {} bytes", depth);
    hprintln!(
        "  of which main's frame (the Connection and the harness's buffers in it): {} bytes, \
         below it: {} bytes",
        main_frame,
        depth - main_frame
    );
    hprintln!(
        "on the stack: Connection {} bytes, StreamIo {}, Router {}, the harness's Device {}",
        core::mem::size_of::<Connection>(),
        core::mem::size_of::<StreamIo>(),
        core::mem::size_of::<Router>(),
        core::mem::size_of::<Device<'_>>()
    );
    if left != 0 {
        fail("the connection left heap behind");
    }
    loop {
        debug::exit(debug::EXIT_SUCCESS);
    }
}
