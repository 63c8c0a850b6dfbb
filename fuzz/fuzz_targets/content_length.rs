//! Content-Length decoder: no panic, bounded buffer, chunking invariance.
//!
//! Input layout: byte 0 picks the limits, bytes 1..5 the chunk sizes (cycled), the rest is
//! the stream. The stream is decoded whole and in chunks; both must give the same events.
#![no_main]

mod chunked;

use libfuzzer_sys::fuzz_target;
use sansrpc::codec::Framing;

fuzz_target!(|data: &[u8]| {
    chunked::run(Framing::ContentLength, |_| {}, data);
});
