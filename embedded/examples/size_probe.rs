//! The flash a firmware pays for sansrpc's `Connection` + `Router` (and the `StreamIo`
//! helper), without the example's checking and printing: the same router and the same
//! connection calls as `src/main.rs`, fed input the optimiser cannot see through
//! (`black_box`), with no formatting of its own. `run.sh` holds this figure to
//! `FLASH_BUDGET`. It runs too (and exits at once with success), but checks nothing.
#![no_std]
#![no_main]

extern crate alloc;

use core::hint::black_box;
use core::time::Duration;

use cortex_m as _; // its critical-section implementation, for the heap
use cortex_m_rt::entry;
use cortex_m_semihosting::debug;
use embedded_alloc::LlffHeap;
use sansrpc::connection::{Config, Connection, Event};
use sansrpc::driver::StreamIo;
use sansrpc::connection::{RequestOptions, Timeout};
use sansrpc::router::{Reply, Router};
use sansrpc::{ErrorObject, Instant};

#[global_allocator]
static HEAP: LlffHeap = LlffHeap::empty();

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {
        debug::exit(debug::EXIT_FAILURE);
    }
}

sansrpc::method!(Subtract = "subtract", (i64, i64) => i64);
sansrpc::method!(Sum = "sum", alloc::vec::Vec<i64> => i64);

static INPUT: &[u8] = b"Content-Length: 61\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[42,23],\"id\":1}";

#[entry]
fn main() -> ! {
    // SAFETY: once, before any allocation.
    unsafe {
        embedded_alloc::init!(HEAP, 16 * 1024);
    }
    let mut router = Router::new();
    router
        .method::<Subtract, _>(|(a, b)| {
            a.checked_sub(b)
                .ok_or_else(|| ErrorObject::new(-32000, "overflow"))
        })
        .unwrap();
    router.method::<Sum, _>(|n| Ok(n.iter().sum())).unwrap();
    router
        .raw_notification("update", |p| {
            black_box(p);
        })
        .unwrap();

    let mut now = black_box(Instant::from_millis(1_000));
    let mut conn = Connection::new(Config::default(), now);
    let mut io = StreamIo::with_limits(64, 256, 4096);
    let mut reply = Reply::default();
    let options = RequestOptions::timeout(Timeout::After(Duration::from_millis(500)));
    conn.call(1, "host/ping", None, options, now).unwrap();

    let mut input = black_box(INPUT);
    for round in 0..3 {
        while let Some(buf) = io.read_buf(&conn) {
            let n = buf.len().min(input.len()).min(7);
            if n == 0 {
                io.handle_read_idle();
                break;
            }
            buf[..n].copy_from_slice(&input[..n]);
            input = &input[n..];
            io.handle_read(&mut conn, n, now);
            while router.serve(&mut conn, &mut reply, |e| {
                black_box(matches!(e, Event::Closed { .. }));
            }) || io.feed(&mut conn, now)
            {}
        }
        if conn.poll_timeout().is_some_and(|at| at <= now) {
            conn.handle_timeout(now);
        }
        while router.serve(&mut conn, &mut reply, |e| {
            black_box(matches!(e, Event::Answer { .. } | Event::Ended { .. }));
        }) || io.feed(&mut conn, now)
        {}
        loop {
            let out = io.transmit(&mut conn);
            if out.is_empty() {
                break;
            }
            let n = black_box(out).len().min(16);
            io.handle_written(&mut conn, n, now);
        }
        black_box(io.interest(&mut conn));
        now = now + Duration::from_millis(500);
        if round == 1 {
            conn.shutdown(Duration::from_secs(1), now);
        }
    }
    black_box(conn.is_finished());
    loop {
        debug::exit(debug::EXIT_SUCCESS);
    }
}
