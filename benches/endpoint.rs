//! Wire-protocol benches, on the connection machine: round trips between two connections in
//! one thread (beside a serde_json floor doing the same parsing and writing by hand), and
//! the cost of expiring one deadline among 10 and among 100,000 pending calls, and calls
//! pipelined between two connections: `n` sent at once, answered in order, read back (the
//! cost per call should not grow with `n`); and ending one call among 10 and among 100,000
//! pending in order, out of order and by cancelling (`end_one_of_pending`). (These drove the
//! inner `Endpoint` before it was folded into `Connection`; the names are kept so their
//! history continues.)

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sansrpc::codec::{Decoder, Framing};
use sansrpc::connection::{Config, Connection, RequestOptions, Timeout};
use sansrpc::{Instant, Limits, RawValue};
use serde_json::value::RawValue as SerdeRaw;

#[path = "common/round_trip.rs"]
mod round_trip;

use round_trip::{floor_round_trip, itoa, Machines};

fn round_trips(c: &mut Criterion) {
    let mut g = c.benchmark_group("round_trip");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    let serde_params = SerdeRaw::from_string("[1,2]".into()).unwrap();
    let (mut wire, mut body) = (Vec::with_capacity(4096), Vec::with_capacity(4096));
    let mut dec = Decoder::new(Framing::ContentLength, &Limits::default());
    let mut id = 0;
    g.bench_function("serde_json floor", |b| {
        b.iter(|| {
            id += 1;
            floor_round_trip(id, &serde_params, &mut wire, &mut body, &mut dec)
        })
    });
    let params = RawValue::from_json("[1,2]").unwrap();
    // Named for the two inner endpoints it drove before the fold; now the same round trip
    // between two connections as the next, kept so its history continues.
    let mut link = Machines::new();
    g.bench_function("sansrpc endpoints", |b| {
        b.iter(|| link.round_trip(params, Instant::ZERO))
    });
    let mut machines = Machines::new();
    g.bench_function("sansrpc connection machines", |b| {
        b.iter(|| machines.round_trip(params, Instant::ZERO))
    });
    g.finish();
}

/// Keeps `pending` requests outstanding with staggered deadlines; each iteration expires the
/// oldest and sends one more, so the table size stays constant while deadlines fire.
fn deadlines(c: &mut Criterion) {
    let mut g = c.benchmark_group("expire_one_deadline");
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    for pending in [10usize, 100_000] {
        let mut config = Config::default();
        config.max_pending_outgoing = pending + 1;
        config.cancel_on_timeout = false;
        let mut ep = Connection::new(config, Instant::ZERO);
        let step = Duration::from_millis(1);
        let timeout = RequestOptions::timeout(Timeout::After(step * pending as u32));
        let mut now = Instant::ZERO;
        let mut sink = Vec::with_capacity(1 << 20);
        let mut token = 0;
        for _ in 0..pending {
            token += 1;
            ep.call(token, "m", None, timeout.clone(), now).unwrap();
            now = now + step;
        }
        while ep.poll_transmit(&mut sink).is_some() {}
        g.bench_with_input(BenchmarkId::from_parameter(pending), &pending, |b, _| {
            b.iter(|| {
                ep.handle_timeout(now);
                let mut ended = 0;
                while let Some(e) = ep.poll_event() {
                    black_box(&e);
                    ended += 1;
                }
                debug_assert_eq!(ended, 1);
                token += 1;
                ep.call(token, "m", None, timeout.clone(), now).unwrap();
                sink.clear();
                while ep.poll_transmit(&mut sink).is_some() {}
                now = now + step;
            })
        });
    }
    g.finish();
}

/// How the one request an iteration ends is picked among the pending ones.
#[derive(Clone, Copy)]
enum Pick {
    /// The oldest: answered in the order sent.
    Oldest,
    /// Any, at random: answered out of order.
    Random,
    /// Any, at random, cancelled by the caller instead of answered.
    CancelRandom,
}

/// `pending` requests outstanding (each with a deadline); each iteration ends one of them
/// (answered with a response, or cancelled) picked as `pick` says, and sends one more, so
/// the tables stay at `pending`. Out of order, a request leaves the middle of the tables.
fn answer_one(c: &mut Criterion) {
    let mut g = c.benchmark_group("end_one_of_pending");
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    for (name, pick) in [
        ("in order", Pick::Oldest),
        ("out of order", Pick::Random),
        ("cancelled out of order", Pick::CancelRandom),
    ] {
        for pending in [10usize, 100_000] {
            let mut config = Config::default();
            config.framing = None;
            config.max_pending_outgoing = pending + 1;
            config.cancellation = false;
            let mut ep = Connection::new(config, Instant::ZERO);
            let timeout = RequestOptions::timeout(Timeout::After(Duration::from_secs(3600)));
            let now = Instant::ZERO;
            let mut sink = Vec::with_capacity(1 << 20);
            // Each call's token is its request's id on the wire: the connection numbers its
            // requests 1, 2, 3... and nothing else here takes an id.
            let mut token = 0;
            let mut call = |ep: &mut Connection| {
                token += 1;
                ep.call(token, "m", None, timeout.clone(), now).unwrap();
                token
            };
            let mut ids = std::collections::VecDeque::with_capacity(pending + 1);
            for _ in 0..pending {
                ids.push_back(call(&mut ep));
            }
            while ep.poll_transmit(&mut sink).is_some() {}
            let last = format!(r#","id":{}}}"#, ids.back().unwrap());
            assert!(sink.ends_with(last.as_bytes()), "a token is its call's id");
            // xorshift: the same sequence every run.
            let mut state = 0x9E37_79B9_7F4A_7C15u64;
            let mut message = Vec::with_capacity(64);
            let id = BenchmarkId::new(name, pending);
            g.bench_with_input(id, &pending, |b, _| {
                b.iter(|| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let at = match pick {
                        Pick::Oldest => 0,
                        Pick::Random | Pick::CancelRandom => state as usize % ids.len(),
                    };
                    let id = ids.swap_remove_back(at).unwrap();
                    if let Pick::CancelRandom = pick {
                        black_box(ep.cancel_call(id, now));
                    } else {
                        message.clear();
                        message.extend_from_slice(br#"{"jsonrpc":"2.0","result":1,"id":"#);
                        itoa(id as i64, &mut message);
                        message.push(b'}');
                        ep.handle_message(&message, now).unwrap();
                    }
                    while let Some(e) = ep.poll_event() {
                        black_box(&e);
                    }
                    ids.push_back(call(&mut ep));
                    sink.clear();
                    while ep.poll_transmit(&mut sink).is_some() {}
                })
            });
        }
    }
    g.finish();
}

/// `n` calls sent at once by one connection machine, answered in order by another, and
/// their answers read: the time per call, which stays flat as `n` grows when no table
/// shifts its whole contents per answer.
fn pipelined(c: &mut Criterion) {
    use sansrpc::connection::{Config as ConnConfig, Event as ConnEvent};
    let mut g = c.benchmark_group("pipelined_calls");
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(20);
    let params = RawValue::from_json("[1,2]").unwrap();
    let three = RawValue::from_json("3").unwrap();
    for n in [64u64, 4000] {
        let mut client = Connection::new(ConnConfig::default(), Instant::ZERO);
        let mut server = Connection::new(ConnConfig::default(), Instant::ZERO);
        let (mut wire, mut back) = (Vec::new(), Vec::new());
        let mut token = 0;
        g.throughput(Throughput::Elements(n));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter(|| {
                for _ in 0..n {
                    token += 1;
                    let options = RequestOptions::default();
                    client
                        .call(token, "add", Some(params), options, Instant::ZERO)
                        .unwrap();
                }
                wire.clear();
                while client.poll_transmit(&mut wire).is_some() {}
                let (mut at, mut answered) = (0, 0);
                while answered < n {
                    at += server.handle_input(&wire[at..], Instant::ZERO).unwrap();
                    while let Some(event) = server.poll_event() {
                        if let ConnEvent::Request { handle, .. } = event {
                            server.respond(handle, Ok(three));
                        }
                    }
                    back.clear();
                    while server.poll_transmit(&mut back).is_some() {}
                    let mut read = 0;
                    while read < back.len() {
                        read += client.handle_input(&back[read..], Instant::ZERO).unwrap();
                        while let Some(event) = client.poll_event() {
                            if let ConnEvent::Answer { .. } = event {
                                answered += 1;
                            }
                        }
                    }
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, round_trips, deadlines, answer_one, pipelined);
criterion_main!(benches);
