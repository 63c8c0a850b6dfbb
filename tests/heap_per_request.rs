//! Heap held per request a connection machine keeps: our calls pending an answer, and the
//! peer's requests in flight (owed an answer). Measured with a global allocator that tracks
//! the bytes live on the current thread, over 1,024 requests, with numeric ids as LSP and
//! MCP clients send. The figures are printed (`--nocapture`) and recorded in
//! BENCHMARKS.md; the bounds here keep them from growing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use sansrpc::connection::RequestOptions;
use sansrpc::connection::{Connection, Event};
use sansrpc::{Instant, RawValue};

struct Live;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Live {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.with(|n| n.set(n.get() + layout.size() as isize));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.with(|n| n.set(n.get() - layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.with(|n| n.set(n.get() + new_size as isize - layout.size() as isize));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Live = Live;

fn live() -> isize {
    LIVE.with(Cell::get)
}

const N: usize = 1024;

fn machine() -> Connection {
    let mut config = sansrpc::connection::Config::default();
    config.max_pending_outgoing = 4 * N;
    config.max_inflight_incoming = 4 * N;
    Connection::new(config, Instant::ZERO)
}

/// Bytes per pending call: the client's heap with `N` more calls sent (and their frames
/// taken off it) and unanswered, over `N`.
fn per_pending_call() -> f64 {
    let mut client = machine();
    let params = RawValue::from_json("[1,2]").unwrap();
    let mut wire = Vec::with_capacity(1 << 20);
    // Warm: the tables grown once and emptied, as a connection that has been busy.
    let send = |client: &mut Connection, wire: &mut Vec<u8>, base: u64| {
        for token in base..base + N as u64 {
            let options = RequestOptions::default();
            client
                .call(token, "add", Some(params), options, Instant::ZERO)
                .unwrap();
            wire.clear();
            while client.poll_transmit(wire).is_some() {}
        }
    };
    send(&mut client, &mut wire, 0);
    for token in 0..N as u64 {
        assert!(client.cancel_call(token, Instant::ZERO));
    }
    wire.clear();
    while client.poll_transmit(&mut wire).is_some() {}
    while client.poll_event().is_some() {}
    assert_eq!(client.waiting_calls(), 0);
    let before = live();
    send(&mut client, &mut wire, N as u64);
    let held = live() - before;
    assert_eq!(client.waiting_calls(), N);
    held as f64 / N as f64
}

/// Bytes per request in flight: the server's heap with `N` requests received, their events
/// taken, and none answered yet, over `N`.
fn per_request_in_flight() -> f64 {
    let mut server = machine();
    let frames = |base: usize| {
        let mut wire = Vec::new();
        for id in base..base + N {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"add","params":[1,2]}}"#);
            let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
            wire.extend_from_slice(frame.as_bytes());
        }
        wire
    };
    let (warm, measured) = (frames(0), frames(N));
    let mut handles = Vec::with_capacity(N);
    let mut out = Vec::with_capacity(1 << 20);
    let receive = |server: &mut Connection, wire: &[u8], handles: &mut Vec<_>| {
        // In the reads of a socket's 4 KiB buffer.
        for chunk in wire.chunks(4096) {
            let mut at = 0;
            while at < chunk.len() {
                at += server.handle_input(&chunk[at..], Instant::ZERO).unwrap();
                while let Some(event) = server.poll_event() {
                    if let Event::Request { handle, .. } = event {
                        handles.push(handle);
                    }
                }
            }
        }
    };
    // Warm: the buffers and tables grown once and emptied, as a connection that has been busy.
    receive(&mut server, &warm, &mut handles);
    let three = RawValue::from_json("3").unwrap();
    for handle in handles.drain(..) {
        server.respond(handle, Ok(three));
        out.clear();
        while server.poll_transmit(&mut out).is_some() {}
    }
    assert_eq!(server.requests_in_flight(), 0);
    let before = live();
    receive(&mut server, &measured, &mut handles);
    let held = live() - before;
    assert_eq!(handles.len(), N);
    assert_eq!(server.requests_in_flight(), N);
    held as f64 / N as f64
}

#[test]
fn heap_per_pending_call_and_per_request_in_flight() {
    let pending = per_pending_call();
    let in_flight = per_request_in_flight();
    println!(
        "heap per pending call: {pending:.1} bytes; per request in flight: {in_flight:.1} bytes"
    );
    // 42 and 56 bytes when written (B-tree tables: 97.7 and 199.9; the ring tables keep
    // room for 128 entries from the warm-up, so the first 128 cost no table growth): within
    // the targets of 48 and 64 bytes.
    assert!(pending <= 48.0, "per pending call: {pending:.1} bytes");
    assert!(
        in_flight <= 64.0,
        "per request in flight: {in_flight:.1} bytes"
    );
}
