//! Fan-out: one notification to many subscribers of one method subscription
//! (`eth_subscription`, Ethereum's `newHeads`), in process, beside a floor in the same run.
//!
//! - The floor serializes the 1 KiB header once with serde_json, frames the notification
//!   once (`Content-Length`, the subscription id `"0x1"` every connection gives its first
//!   subscription) and copies the frame into each subscriber's output buffer: what any
//!   server that notifies every subscriber must do at least, the write aside.
//! - sansrpc: one [`Fanout`] holding the sink of one subscription on each of the
//!   subscribers' connections (a `Connection` and the runtime's `Served`, as the futures and
//!   blocking drivers keep them); `Fanout::send` serializes the header once and queues it,
//!   shared, for every subscriber; then each connection's driver turn moves it into the
//!   connection (`Served::poll`) and takes the frame out (`poll_transmit`).
//!
//! Both write byte-identical frames (checked first). `scripts/instructions` counts one call
//! of each and divides by the subscribers: instructions per subscriber.

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::connection::{Config, Connection, Event};
use sansrpc::Instant;
use sansrpc_runtime::subscriptions::{Fanout, Hub, Served, SubscriptionSink};
use serde::Serialize;

/// Subscribers per notification.
const SUBSCRIBERS: usize = 100;

/// A block header as Ethereum's `newHeads` sends it, about 1 KiB of JSON (as loadgen's).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    number: String,
    hash: String,
    parent_hash: String,
    logs_bloom: String,
    state_root: String,
    miner: String,
    gas_limit: String,
    timestamp: String,
    extra_data: String,
}

fn header() -> Header {
    let hash = |salt: u64| format!("0x{:064x}", 0x9e37_79b9_7f4a_7c15u64 ^ salt);
    Header {
        number: "0x10".into(),
        hash: hash(1),
        parent_hash: hash(2),
        logs_bloom: format!("0x{}", "0".repeat(512)),
        state_root: hash(3),
        miner: "0x0000000000000000000000000000000000000000".into(),
        gas_limit: "0x1c9c380".into(),
        timestamp: "0x65920080".into(),
        extra_data: format!("0x{}", "0".repeat(140)),
    }
}

/// The floor: serialized once, framed once, copied to every subscriber's output.
#[inline(never)]
fn fanout_floor_once(
    header: &Header,
    body: &mut Vec<u8>,
    frame: &mut Vec<u8>,
    outs: &mut [Vec<u8>],
) {
    body.clear();
    body.extend_from_slice(
        br#"{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x1","result":"#,
    );
    serde_json::to_writer(&mut *body, header).expect("a header serializes");
    body.extend_from_slice(b"}}");
    frame.clear();
    frame.extend_from_slice(b"Content-Length: ");
    frame.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
    frame.extend_from_slice(b"\r\n\r\n");
    frame.extend_from_slice(body);
    for out in outs {
        out.clear();
        out.extend_from_slice(frame);
    }
}

/// One subscriber's connection: the connection machine and its served subscriptions.
struct Subscriber {
    conn: Connection,
    served: Served,
}

/// sansrpc: serialized once by the fan-out, shared by every queue, each connection's turn.
#[inline(never)]
fn fanout_once(
    header: &Header,
    fanout: &Fanout,
    subscribers: &mut [Subscriber],
    outs: &mut [Vec<u8>],
) {
    fanout.send(header);
    for (s, out) in subscribers.iter_mut().zip(outs) {
        out.clear();
        if !s.served.is_idle() {
            s.served.poll(&mut s.conn, &mut |_| {});
        }
        while s.conn.poll_transmit(out).is_some() {}
    }
}

/// `SUBSCRIBERS` connections, each with one `eth_subscribe` accepted, their sinks in one
/// fan-out.
fn subscribers() -> (Vec<Subscriber>, Fanout) {
    let eth = MethodSubscription::ethereum();
    let fanout = Fanout::new();
    let mut subscribers = Vec::new();
    let subscribe = br#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#;
    let mut frame = format!("Content-Length: {}\r\n\r\n", subscribe.len()).into_bytes();
    frame.extend_from_slice(subscribe);
    for _ in 0..SUBSCRIBERS {
        let mut conn = Connection::new(Config::default(), Instant::ZERO);
        let mut served = Served::new(Hub::new(|| {}));
        conn.handle_input(&frame, Instant::ZERO)
            .expect("a subscribe");
        let Some(Event::Request { handle, .. }) = conn.poll_event() else {
            panic!("the subscribe request")
        };
        let pending = served.pending(handle, &eth);
        let sink: Arc<Mutex<Option<SubscriptionSink>>> = Arc::default();
        let given = Arc::clone(&sink);
        pending.accept_with(Box::new(move |s| *given.lock().unwrap() = s));
        served.poll(&mut conn, &mut |_| {});
        fanout.add(sink.lock().unwrap().take().expect("accepted"));
        let mut answer = Vec::new();
        while conn.poll_transmit(&mut answer).is_some() {}
        let answer = String::from_utf8(answer).expect("UTF-8");
        assert!(answer.contains(r#""result":"0x1""#), "{answer}");
        subscribers.push(Subscriber { conn, served });
    }
    (subscribers, fanout)
}

fn fanout(c: &mut Criterion) {
    let header = header();
    let (mut subscribers, fanout) = subscribers();
    let (mut body, mut frame) = (Vec::new(), Vec::new());
    let mut floor_outs = vec![Vec::new(); SUBSCRIBERS];
    let mut outs = vec![Vec::new(); SUBSCRIBERS];
    // Both write the same frames; each runs once before it is measured (no buffer grows
    // in a measured call).
    fanout_floor_once(&header, &mut body, &mut frame, &mut floor_outs);
    fanout_once(&header, &fanout, &mut subscribers, &mut outs);
    assert_eq!(floor_outs, outs, "the same frames");
    assert!(frame.len() > 1024);

    let mut group = c.benchmark_group(format!("fanout_{SUBSCRIBERS}"));
    group.throughput(Throughput::Elements(SUBSCRIBERS as u64));
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("floor", |b| {
        b.iter(|| fanout_floor_once(black_box(&header), &mut body, &mut frame, &mut floor_outs))
    });
    group.bench_function("sansrpc", |b| {
        b.iter(|| fanout_once(black_box(&header), &fanout, &mut subscribers, &mut outs))
    });
    group.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
