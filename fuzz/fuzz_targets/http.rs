//! HTTP/1.1 request decoder: no panic, bounded buffering, chunking invariance, bodies within
//! the limit.
//!
//! Input layout: byte 0 picks the body limit (255: 1 MiB, otherwise 16 times its value),
//! bytes 1..4 the read sizes (cycled; scaled up for streams over 512 bytes), the rest is
//! the stream. In the stream, `0xFF c h l` stands for `c` repeated `h * 256 + l` times, so
//! that heads, chunk lines and trailer sections as long as their limits ([`MAX_HEAD`] is
//! 32 KiB) are within reach of inputs libFuzzer keeps short.
//!
//! The stream is decoded as a transport reads it, in those sizes, both dropping a chunked
//! body's framing before each read ([`RequestDecoder::reclaim`]) and not (a buffer that
//! only grows), and again whole; all three must give the same heads, bodies and fault. A
//! head declaring a body over the limit ends the stream (the server answers 413 and
//! closes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sansrpc::codec::http::{BodyKind, Head, HttpFault, HttpStep, RequestDecoder, MAX_HEAD};

/// The longest stream once expanded: a head or a trailer section just over the limit.
const MAX_STREAM: usize = MAX_HEAD + 4096;

#[derive(Debug, PartialEq)]
enum Seen {
    Head(Head),
    Body(Vec<u8>),
    Fault(HttpFault),
}

/// The stream with each `0xFF c h l` expanded to `c` repeated `h * 256 + l` times, as long
/// as the whole stays within [`MAX_STREAM`].
fn expand(input: &[u8]) -> Vec<u8> {
    let mut stream = Vec::with_capacity(input.len());
    let mut rest = input;
    while let Some((&byte, tail)) = rest.split_first() {
        match tail {
            [c, h, l, after @ ..] if byte == 0xFF => {
                let times = (usize::from(*h) << 8) | usize::from(*l);
                let times = times.min(MAX_STREAM.saturating_sub(stream.len()));
                stream.resize(stream.len() + times, *c);
                rest = after;
            }
            _ => {
                stream.push(byte);
                rest = tail;
            }
        }
    }
    stream
}

fn decode(max_body: usize, stream: &[u8], reads: &[usize], reclaim: bool) -> Vec<Seen> {
    let largest_read = reads.iter().copied().max().unwrap_or(1);
    let mut decoder = RequestDecoder::new(max_body);
    let mut buffer: Vec<u8> = Vec::new();
    let (mut fed, mut turn, mut seen) = (0, 0, Vec::new());
    loop {
        // What a transport holds before a read: less than MAX_HEAD of a head; or a body's
        // data (at most max_body) and what is left of a line of its framing (a chunk line,
        // at most MAX_CHUNK_LINE + 1, or a trailer line, at most MAX_HEAD + 1); then a read.
        // Without reclaim the framing already decoded stays: no bound.
        if reclaim {
            assert!(buffer.len() <= MAX_HEAD + 1 + max_body + largest_read);
        }
        match decoder.decode(&mut buffer) {
            Err(fault) => {
                seen.push(Seen::Fault(fault));
                return seen;
            }
            Ok(HttpStep::Head(used, head)) => {
                assert!(used > 0 && used <= buffer.len().min(MAX_HEAD));
                assert_eq!(decoder.in_body(), head.body != BodyKind::None);
                let over = matches!(head.body, BodyKind::Length(n) if n > max_body as u64);
                seen.push(Seen::Head(head));
                if over {
                    return seen;
                }
                buffer.drain(..used);
            }
            Ok(HttpStep::Body(used, body)) => {
                assert!(body.len() <= max_body && body.len() <= used);
                seen.push(Seen::Body(body.to_vec()));
                assert!(used <= buffer.len());
                assert!(!decoder.in_body());
                buffer.drain(..used);
            }
            Ok(HttpStep::Incomplete(need)) => {
                assert!(need > buffer.len());
                if fed == stream.len() {
                    return seen;
                }
                if reclaim {
                    let kept = decoder.reclaim(&mut buffer);
                    assert!(kept <= buffer.len());
                    buffer.truncate(kept);
                }
                let take = reads[turn % reads.len()].min(stream.len() - fed);
                turn += 1;
                buffer.extend_from_slice(&stream[fed..fed + take]);
                fed += take;
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [pick, r1, r2, r3, input @ ..] = data else {
        return;
    };
    let max_body = match pick {
        255 => 1 << 20,
        n => usize::from(*n) * 16,
    };
    let stream = expand(input);
    // A head is parsed again at each read that ends a line: a long stream is read in larger
    // pieces, keeping an execution within a few hundred reads.
    let scale = 1 + stream.len() / 512;
    let reads = [r1, r2, r3].map(|r| usize::from(*r).max(1) * scale);
    let whole = decode(max_body, &stream, &[stream.len().max(1)], true);
    assert_eq!(decode(max_body, &stream, &reads, true), whole);
    assert_eq!(decode(max_body, &stream, &reads, false), whole);
    opening_handshake(&stream);
});

/// The first head of `stream`, kept whole, judged as a WebSocket opening handshake by two
/// `Origin` rules: an answer either way, `101` with a 28-byte accept key only for a `GET`
/// upgrading to websocket, a refusal's status otherwise.
fn opening_handshake(stream: &[u8]) {
    use sansrpc::codec::http::{Hosts, HttpMethod, Origins};
    use sansrpc::codec::websocket::handshake::{judge, OriginRule};
    let mut buffer = stream.to_vec();
    let Ok(HttpStep::Head(_, head)) = RequestDecoder::keeping_fields(0).decode(&mut buffer) else {
        return;
    };
    let loopback = Origins::SameAsHosts;
    let rules = [
        OriginRule { origins: &Origins::Any, hosts: &Hosts::Any, allow_missing: true },
        OriginRule { origins: &loopback, hosts: &Hosts::Loopback, allow_missing: false },
    ];
    for rule in &rules {
        let mut answer = Vec::new();
        match judge(&head, rule) {
            Ok(opening) => {
                assert_eq!(head.method, HttpMethod::Get);
                assert_eq!(head.body, BodyKind::None);
                assert_eq!(opening.accept().len(), 28);
                opening.write(&mut answer);
                assert!(answer.starts_with(b"HTTP/1.1 101 Switching Protocols\r\n"));
            }
            Err(refusal) => {
                refusal.write(&mut answer);
                let status = format!("HTTP/1.1 {} ", refusal.status());
                assert!(answer.starts_with(status.as_bytes()));
                assert!(answer.ends_with(refusal.reason().as_bytes()));
            }
        }
    }
}
