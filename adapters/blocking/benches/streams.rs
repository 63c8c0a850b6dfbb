//! Stream throughput over a real loopback TCP connection (blocking adapter on both ends):
//! items per second with 1 pull in flight against 16, one item per pull (so the window is
//! all that differs), and with 64 items per pull for scale.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sansrpc::router::Router;
use sansrpc_blocking::{connect_tcp, serve_tcp, Options, StreamOptions};

const ITEMS: u64 = 2_000;

fn streams(c: &mut Criterion) {
    let mut router = Router::new();
    router
        .stream_method("count", |(to,): (u64,)| Ok((1..=to).map(Ok)))
        .unwrap();
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), Options::default()).unwrap();
    let client = connect_tcp(server.local_addr(), Options::default()).unwrap();

    let mut group = c.benchmark_group("stream_items_tcp");
    group.throughput(Throughput::Elements(ITEMS));
    group.sample_size(20);
    for (window, max) in [(1, 1), (16, 1), (16, 64)] {
        let name = format!("window{window}_max{max}");
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let items = client
                    .stream::<_, u64>("count", &(ITEMS,), StreamOptions::new(window, max))
                    .unwrap();
                let n = items.map(Result::unwrap).count() as u64;
                assert_eq!(n, ITEMS);
            })
        });
    }
    group.finish();
    client.close();
    server.shutdown();
}

criterion_group!(benches, streams);
criterion_main!(benches);
