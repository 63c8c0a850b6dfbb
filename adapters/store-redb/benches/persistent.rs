//! Persistent publish + ack throughput on the embedded store: every operation is one
//! committed, synced redb write transaction, so this measures the disk's sync latency as
//! much as the code.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sansrpc::RawValue;
use sansrpc_pubsub::store::{RetentionPolicy, Store, SubscriptionState};
use sansrpc_store_redb::RedbStore;

fn persistent(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = RedbStore::open(dir.path().join("bench.redb"), RetentionPolicy::default())
        .expect("open the store");
    let data = RawValue::from_json(r#"{"order_id":"ORD-12345","status":"confirmed","total":42.5}"#)
        .unwrap();
    // The floor: the least a durable append can cost on this disk, one row inserted in one
    // committed redb write transaction, no retention or bookkeeping.
    let floor_db = redb::Database::create(dir.path().join("floor.redb")).unwrap();
    const FLOOR: redb::TableDefinition<u64, &str> = redb::TableDefinition::new("floor");
    let mut group = c.benchmark_group("redb");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);

    let mut ts = 0u64;
    group.bench_function("floor: insert+commit", |b| {
        b.iter(|| {
            ts += 1;
            let txn = floor_db.begin_write().unwrap();
            txn.open_table(FLOOR)
                .unwrap()
                .insert(ts, data.get())
                .unwrap();
            txn.commit().unwrap();
        })
    });

    group.bench_function("append", |b| {
        b.iter(|| {
            ts += 1;
            store.append("bench.append", ts, data).unwrap()
        })
    });

    let mut state = SubscriptionState::new("bench.ack", 0);
    group.bench_function("append+ack", |b| {
        b.iter(|| {
            ts += 1;
            let sequence = store.append("bench.ack", ts, data).unwrap();
            state.raise_floor(sequence - 1);
            state.ack(sequence);
            store.save_subscription("bench-worker", &state).unwrap();
        })
    });

    let mut out = Vec::with_capacity(100);
    group.throughput(Throughput::Elements(100));
    group.bench_function("read 100", |b| {
        b.iter(|| {
            out.clear();
            store.read("bench.append", 0, 100, &mut out).unwrap();
            out.len()
        })
    });
    group.finish();
}

criterion_group!(benches, persistent);
criterion_main!(benches);
