//! With warm buffers, decoding and encoding allocate nothing.
//!
//! A test binary of its own: it installs a counting global allocator that counts the
//! current thread's allocations only, so the test harness's own threads cannot disturb it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::Limits;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Feeds `wire` in `chunk`-byte pieces and returns the total body bytes decoded.
fn pump(decoder: &mut Decoder, wire: &[u8], chunk: usize) -> usize {
    let mut total = 0;
    for piece in wire.chunks(chunk) {
        let mut rest = piece;
        while !rest.is_empty() {
            let n = decoder.feed(rest);
            rest = &rest[n..];
            while let Some(frame) = decoder.next_frame() {
                total += frame.expect("valid frame").len();
            }
        }
    }
    total
}

#[test]
fn warm_codecs_allocate_nothing() {
    let bodies: Vec<Vec<u8>> = (0..50)
        .map(|i| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"m","params":[{}]}}"#,
                "1,".repeat(i * 7) + "0"
            )
            .into_bytes()
        })
        .collect();
    let expected: usize = bodies.iter().map(Vec::len).sum();
    let limits = Limits::default();
    for framing in [Framing::ContentLength, Framing::Newline] {
        let mut wire = Vec::new();
        let mut decoder = Decoder::new(framing, &limits);
        for body in &bodies {
            encode_frame(framing, body, &mut wire);
        }
        // Warm-up: the buffers reach their working size.
        for chunk in [4096, 7, 1000] {
            assert_eq!(pump(&mut decoder, &wire, chunk), expected);
        }
        let capacity = wire.capacity();
        let before = ALLOCATIONS.with(Cell::get);
        for chunk in [4096, 7, 1000, 333] {
            assert_eq!(pump(&mut decoder, &wire, chunk), expected);
        }
        wire.clear();
        for body in &bodies {
            encode_frame(framing, body, &mut wire);
        }
        let after = ALLOCATIONS.with(Cell::get);
        assert_eq!(after - before, 0, "{framing:?} allocated");
        assert_eq!(wire.capacity(), capacity);
        assert_eq!(decoder.finish(), None);
    }
}
