//! Newline decoder: no panic, bounded buffer, chunking invariance, no line ends or blank
//! lines in frames.
//!
//! Input layout: byte 0 picks the limits, bytes 1..5 the chunk sizes (cycled), the rest is
//! the stream. The stream is decoded whole and in chunks; both must give the same events.
#![no_main]

mod chunked;

use libfuzzer_sys::fuzz_target;
use sansrpc::codec::Framing;

fuzz_target!(|data: &[u8]| {
    chunked::run(
        Framing::Newline,
        |body| {
            assert!(!body.contains(&b'\n'));
            assert!(!body.iter().all(|b| b" \t\r".contains(b)), "blank line");
        },
        data,
    );
});
