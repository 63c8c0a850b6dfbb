//! Pub/sub: the cost of finding a topic's subscribers among 1,000 and 100,000 subscriptions
//! (a tenth of them wildcards), beside a linear scan of the same patterns; and one publish
//! fanned out to 10,000 subscribed sessions.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sansrpc::RawValue;
use sansrpc_pubsub::hub::{HubConfig, InlineHub};
use sansrpc_pubsub::store::MemoryStore;
use sansrpc_pubsub::topic::{matches, Trie};

/// `n` patterns over `n / 10` tenants: `tenant.{t}.orders.{i}` literals, and for every
/// tenth subscription `tenant.{t}.*.{i}` or `tenant.{t}.>`.
fn patterns(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let t = i / 10;
            match i % 20 {
                0 => format!("tenant.{t}.*.{i}"),
                10 => format!("tenant.{t}.>"),
                _ => format!("tenant.{t}.orders.{i}"),
            }
        })
        .collect()
}

fn matching(c: &mut Criterion) {
    let mut group = c.benchmark_group("pubsub_match");
    group.measurement_time(Duration::from_secs(3));
    for n in [1_000usize, 100_000] {
        let pats = patterns(n);
        let mut trie = Trie::new();
        for (i, p) in pats.iter().enumerate() {
            trie.insert(p, i as u32);
        }
        // A topic in the middle: hits one literal and its tenant's `>`.
        let topic = format!("tenant.{}.orders.{}", n / 20, n / 2 + 1);
        let mut hits = 0;
        trie.for_each_match(&topic, |_| hits += 1);
        assert!(hits >= 1);
        group.bench_with_input(BenchmarkId::new("trie", n), &topic, |b, topic| {
            b.iter(|| {
                let mut count = 0u32;
                trie.for_each_match(black_box(topic), |_| count += 1);
                count
            })
        });
        group.bench_with_input(BenchmarkId::new("scan", n), &topic, |b, topic| {
            b.iter(|| pats.iter().filter(|p| matches(p, black_box(topic))).count())
        });
    }
    group.finish();
}

fn fan_out(c: &mut Criterion) {
    let mut group = c.benchmark_group("pubsub_fan_out");
    group.measurement_time(Duration::from_secs(5));
    let n = 10_000;
    let mut config = HubConfig::default();
    config.persist = false;
    let mut hub = InlineHub::new(MemoryStore::default(), config);
    let sessions: Vec<_> = (0..n).map(|_| hub.connect()).collect();
    let mut out = Vec::new();
    let params = RawValue::from_json(r#"{"topic":"news.world"}"#).unwrap();
    for &s in &sessions {
        out.clear();
        let answer = hub.handle(
            s,
            "rpc.subscribe",
            Some(params),
            Default::default(),
            &mut out,
        );
        assert!(matches!(answer, Some(Ok(()))));
    }
    let data = RawValue::from_json(r#"{"headline":"one publish, ten thousand readers"}"#).unwrap();
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function("publish_10000_subscribers", |b| {
        b.iter(|| {
            let delivered = hub.publish_local("news.world", black_box(data)).unwrap();
            while hub.poll_woken().is_some() {}
            for &s in &sessions {
                black_box(hub.pop_outgoing(s));
            }
            delivered
        })
    });
    group.finish();
}

criterion_group!(benches, matching, fan_out);
criterion_main!(benches);
