//! The path a server built from the README takes, beside a framed serde_json floor in the
//! same run and group: Content-Length frames in, through one `sansrpc::connection::Connection` and a typed
//! `Router` handler, Content-Length frames out, all on one thread.
//!
//! The floor is a minimal hand-written server on serde_json: find the end of the header
//! block, parse the length, `serde_json::from_slice` into a borrowed envelope, run the same
//! application work, `serde_json::to_writer` the answer into a reused body buffer and copy
//! it behind a `Content-Length` header into a reused output buffer. It checks nothing a
//! JSON-RPC server must check (ids, versions, limits, duplicate ids, cancellation), so it is
//! a floor, not a peer.
//!
//! Before measuring, every workload checks that both sides write byte-identical frames.
//!
//! - W1: one `add` request;
//! - W2: a batch of 100 `add` requests;
//! - W3: a 64 KiB `textDocument/didOpen`-like request, answered `null`; measured twice: with
//!   a typed handler taking `Box<RawValue>` (serde scans and copies the params again), and
//!   with a raw handler that takes the params text as received, as the floor's does;
//! - W4: one notification, its params decoded, nothing written.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};

#[path = "common/floor.rs"]
mod floor;
#[path = "common/server.rs"]
mod server;

use server::{checked_server, floor_once, serve_once, workloads, Workload};

fn configure(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>, bytes: usize) {
    group.throughput(Throughput::Bytes(bytes as u64));
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
}

/// One group: the floors, then sansrpc with each way of taking params.
fn workload(c: &mut Criterion, w: &Workload) {
    let (mut body, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
    let mut servers: Vec<_> = w
        .ours
        .iter()
        .map(|&(label, params, floor)| (label, checked_server(w, label, params, w.floors[floor].1)))
        .collect();
    let mut group = c.benchmark_group(w.name);
    configure(&mut group, w.frame.len());
    for &(label, floor) in &w.floors {
        group.bench_function(label, |bn| {
            bn.iter(|| floor_once(floor, black_box(&w.frame), &mut body, &mut a))
        });
    }
    for (label, server) in &mut servers {
        group.bench_function(*label, |bn| {
            bn.iter(|| serve_once(server, black_box(&w.frame), &mut b))
        });
    }
    group.finish();
}

fn server_path(c: &mut Criterion) {
    for w in workloads() {
        workload(c, &w);
    }
}

criterion_group!(benches, server_path);
criterion_main!(benches);
