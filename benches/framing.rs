//! W5: Content-Length decoding of 10,000 framed messages from one buffer, each classified,
//! beside a serde_json floor (a minimal header split by hand, then a borrowed parse into a
//! typed envelope). Ours takes whole frames straight from the buffer (`Decoder::frame_in`)
//! and feeds only what does not start with one, as the endpoint does.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::{Classified, Classifier, Incoming, Limits};

#[path = "common/floor.rs"]
mod floor;

use floor::Envelope;

fn stream(n: usize) -> Vec<u8> {
    let mut wire = Vec::new();
    for i in 0..n {
        let body = format!(
            r#"{{"jsonrpc":"2.0","method":"textDocument/hover","params":{{"textDocument":{{"uri":"file:///src/lib.rs"}},"position":{{"line":{i},"character":7}}}},"id":{i}}}"#
        );
        encode_frame(Framing::ContentLength, body.as_bytes(), &mut wire);
    }
    wire
}

/// The floor's framing: find the blank line, read `Content-Length` (assumed first and
/// well-formed), slice the body. No limits, no recovery, no case-insensitivity.
fn floor(wire: &[u8]) -> usize {
    let mut rest = wire;
    let mut count = 0;
    while !rest.is_empty() {
        let end = rest.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let header = std::str::from_utf8(&rest[..end]).unwrap();
        let len: usize = header["Content-Length: ".len()..].parse().unwrap();
        let body = &rest[end + 4..end + 4 + len];
        let env: Envelope<'_> = serde_json::from_slice(body).unwrap();
        black_box((env.method, env.params, env.id));
        count += 1;
        rest = &rest[end + 4 + len..];
    }
    count
}

fn ours(wire: &[u8], dec: &mut Decoder, classifier: &mut Classifier) -> usize {
    let mut rest = wire;
    let mut count = 0;
    while !rest.is_empty() {
        // Whole frames straight from the input, as the endpoint takes them; the rest fed.
        while let Some((used, frame)) = dec.frame_in(rest) {
            match classifier.classify(frame) {
                Classified::Single(Incoming::Request(req)) => {
                    black_box((&req.method, &req.params, &req.id));
                }
                other => panic!("{other:?}"),
            }
            count += 1;
            rest = &rest[used..];
        }
        let used = dec.feed(rest);
        rest = &rest[used..];
        while let Some(frame) = dec.next_frame() {
            match classifier.classify(frame.unwrap()) {
                Classified::Single(Incoming::Request(req)) => {
                    black_box((&req.method, &req.params, &req.id));
                }
                other => panic!("{other:?}"),
            }
            count += 1;
        }
    }
    count
}

fn w5(c: &mut Criterion) {
    let wire = stream(10_000);
    let mut g = c.benchmark_group("W5 content-length x10000");
    g.throughput(Throughput::Bytes(wire.len() as u64));
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(20);
    g.bench_function("serde_json floor", |b| {
        b.iter(|| assert_eq!(floor(&wire), 10_000))
    });
    let mut dec = Decoder::new(Framing::ContentLength, &Limits::default());
    let mut classifier = Classifier::default();
    g.bench_function("sansrpc", |b| {
        b.iter(|| assert_eq!(ours(&wire, &mut dec, &mut classifier), 10_000))
    });
    g.finish();
}

criterion_group!(benches, w5);
criterion_main!(benches);
