//! Lock contention of the shared hub: 64 connections publish at once to one tokio server
//! over loopback TCP, each `publish` answered once the store has the message (the CLI's
//! `publish`), with the store in memory and with a store that takes 50 µs per operation
//! (a network store's round trip). The store runs on the hub's worker, off the lock every
//! connection needs, so the fan-out and the answers of other connections do not wait on
//! the store; what the slow store costs is its own time, once per operation.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sansrpc::codec::Framing;
use sansrpc::{ErrorObject, RawValue};
use sansrpc_pubsub::hub::{HubConfig, PublishError};
use sansrpc_pubsub::store::{DynStore, MemoryStore, RetentionPolicy};
use sansrpc_pubsub::PubSub;
use sansrpc_tokio::{AsyncRouter, Builder, Extension};

const CONNECTIONS: usize = 64;
const PER_CONNECTION: usize = 16;

#[path = "../tests/support/slow_store.rs"]
mod slow_store;

use slow_store::Slow;

/// A server with a `publish` method on its own runtime thread; its address.
fn serve(store: DynStore) -> SocketAddr {
    let hub = Arc::new(PubSub::with_reporter(
        store,
        HubConfig::default(),
        Box::new(|r| eprintln!("{r}")),
    ));
    let mut router = AsyncRouter::new();
    router
        .raw_method("echo", |params| async move {
            Ok(params.unwrap_or_else(|| RawValue::from_string("null".into()).unwrap()))
        })
        .unwrap();
    let publisher = Arc::clone(&hub);
    router
        .raw_method("publish", move |params| {
            let receipt = params
                .as_deref()
                .and_then(|p| serde_json::from_str::<(String, Box<RawValue>)>(p.get()).ok())
                .ok_or_else(ErrorObject::invalid_params)
                .and_then(|(topic, data)| {
                    publisher
                        .publish(&topic, &data)
                        .map_err(|e| e.to_error_object())
                });
            async move {
                let receipt = receipt?;
                let sequence = receipt
                    .appended()
                    .await
                    .map_err(|e: PublishError| e.to_error_object())?;
                Ok(RawValue::from_string(format!("{}", sequence.unwrap_or(0))).unwrap())
            }
        })
        .unwrap();
    let builder = Builder::new()
        .configure(|c| c.framing = Some(Framing::Newline))
        .router(router)
        .extension(Extension::new(hub));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let forever = std::future::pending::<()>();
            let _ = sansrpc_tokio::serve_tcp(listener, builder, forever, Duration::ZERO).await;
        });
    });
    rx.recv().unwrap()
}

/// Every connection sends its requests at once, then reads every answer: `publish` on
/// every connection, or with `echo_every` = 2 `echo` (which needs no store) on every other
/// one. Returns the time until the last answer of the connections that matter: all of
/// them, or only the `echo` ones.
fn round(peers: &mut [(TcpStream, BufReader<TcpStream>)], echo_every: usize) -> Duration {
    let start = Instant::now();
    std::thread::scope(|scope| {
        let threads: Vec<_> = peers
            .iter_mut()
            .enumerate()
            .map(|(i, (writer, reader))| {
                let echo = echo_every > 0 && i % echo_every == 1;
                scope.spawn(move || {
                    let mut batch = String::new();
                    for n in 0..PER_CONNECTION {
                        let (method, params) = if echo {
                            ("echo", format!("[{n}]"))
                        } else {
                            ("publish", format!("[\"bench.c{i}\",{n}]"))
                        };
                        batch.push_str(&format!(
                            "{{\"jsonrpc\":\"2.0\",\"id\":{n},\"method\":\"{method}\",\"params\":{params}}}\n"
                        ));
                    }
                    writer.write_all(batch.as_bytes()).unwrap();
                    let mut line = String::new();
                    for _ in 0..PER_CONNECTION {
                        line.clear();
                        reader.read_line(&mut line).unwrap();
                        assert!(line.contains("\"result\""), "{line}");
                    }
                    (echo || echo_every == 0).then(|| start.elapsed())
                })
            })
            .collect();
        threads
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .max()
            .unwrap_or_default()
    })
}

type MakeStore = fn() -> DynStore;

fn contention(c: &mut Criterion) {
    let mut group = c.benchmark_group("pubsub_64_publishers");
    group.throughput(Throughput::Elements((CONNECTIONS * PER_CONNECTION) as u64));
    group.sample_size(10);
    let stores: [(&str, MakeStore); 2] = [
        ("memory", || {
            sansrpc_pubsub::store::boxed(MemoryStore::new(RetentionPolicy::default()))
        }),
        ("store_50us", || {
            Box::new(Slow {
                inner: MemoryStore::new(RetentionPolicy::default()),
                delay: Duration::from_micros(50),
            })
        }),
    ];
    for (name, store) in stores {
        let addr = serve(store());
        let mut peers: Vec<_> = (0..CONNECTIONS)
            .map(|_| {
                let s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                (s.try_clone().unwrap(), BufReader::new(s))
            })
            .collect();
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| round(&mut peers, 0)).sum())
        });
        // The other half of the connections only echo: how long they wait behind the
        // publishers, when the store takes its time.
        let echo = format!("{name}_echo_beside_32_publishers");
        group.bench_function(BenchmarkId::from_parameter(echo), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| round(&mut peers, 2)).sum())
        });
    }
    group.finish();
}

criterion_group!(benches, contention);
criterion_main!(benches);
