//! W5: Content-Length decoding of 10,000 framed messages from one buffer, each classified,
//! beside a serde_json floor (a minimal header split by hand, then a borrowed parse into a
//! typed envelope). Ours takes whole frames straight from the buffer (`Decoder::frame_in`)
//! and feeds only what does not start with one, as the endpoint does.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sansrpc::codec::{Decoder, Framing};
use sansrpc::{Classifier, Limits};

#[path = "common/floor.rs"]
mod floor;
#[path = "common/framing.rs"]
mod framing;

use framing::{floor, ours, stream};

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
    // Once first, so that every measured call finds its buffers grown: under callgrind a
    // second lasts three calls, and the first call's growth would weigh on the count.
    assert_eq!(ours(&wire, &mut dec, &mut classifier), 10_000);
    g.bench_function("sansrpc", |b| {
        b.iter(|| assert_eq!(ours(&wire, &mut dec, &mut classifier), 10_000))
    });
    g.finish();
}

criterion_group!(benches, w5);
criterion_main!(benches);
