//! HTTP/1.1 request decoder: no panic, bounded buffering, chunking invariance, bodies within
//! the limit.
//!
//! Input layout: byte 0 picks the body limit, bytes 1..4 the read sizes (cycled), the rest
//! is the stream. The stream is decoded as a transport reads it, in those sizes (dropping a
//! chunked body's framing before each read), and again whole; both must give the same
//! heads, bodies and fault. A head declaring a body over the limit ends the stream (the
//! server answers 413 and closes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sansrpc::codec::http::{BodyKind, Head, HttpFault, HttpStep, RequestDecoder, MAX_HEAD};

#[derive(Debug, PartialEq)]
enum Seen {
    Head(Head),
    Body(Vec<u8>),
    Fault(HttpFault),
}

fn decode(max_body: usize, stream: &[u8], reads: &[usize]) -> Vec<Seen> {
    let largest_read = reads.iter().copied().max().unwrap_or(1);
    let mut decoder = RequestDecoder::new(max_body);
    let mut buffer: Vec<u8> = Vec::new();
    let (mut fed, mut turn, mut seen) = (0, 0, Vec::new());
    loop {
        // What a transport holds: a head, or a body's data and less than a line of its
        // framing (a trailer section at most), and a read.
        assert!(buffer.len() <= MAX_HEAD + max_body + 4 + largest_read);
        let held = buffer.len();
        match decoder.decode(&mut buffer) {
            Err(fault) => {
                seen.push(Seen::Fault(fault));
                return seen;
            }
            Ok(HttpStep::Head(used, head)) => {
                assert!(used > 0 && used <= buffer.len().min(MAX_HEAD));
                let over = matches!(head.body, BodyKind::Length(n) if n > max_body as u64);
                seen.push(Seen::Head(head));
                if over {
                    return seen;
                }
                buffer.drain(..used);
            }
            Ok(HttpStep::Body(used, body)) => {
                assert!(body.len() <= max_body && used <= held);
                seen.push(Seen::Body(body.to_vec()));
                buffer.drain(..used);
            }
            Ok(HttpStep::Incomplete(need)) => {
                assert!(need > buffer.len());
                if fed == stream.len() {
                    return seen;
                }
                let kept = decoder.reclaim(&mut buffer);
                assert!(kept <= buffer.len());
                buffer.truncate(kept);
                let take = reads[turn % reads.len()].min(stream.len() - fed);
                turn += 1;
                buffer.extend_from_slice(&stream[fed..fed + take]);
                fed += take;
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [pick, r1, r2, r3, stream @ ..] = data else {
        return;
    };
    let max_body = [0usize, 1, 16, 100, 4096, 1 << 20][usize::from(*pick) % 6];
    let reads = [
        usize::from(*r1).max(1),
        usize::from(*r2).max(1),
        usize::from(*r3).max(1),
    ];
    let pieces = decode(max_body, stream, &reads);
    let whole = decode(max_body, stream, &[stream.len().max(1)]);
    assert_eq!(pieces, whole);
});
