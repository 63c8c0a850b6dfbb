//! The server path's workloads (W1 to W4, as in `server_path`, W5, as in `framing`, and the
//! round trip between two connection machines, as in `endpoint`), the floor and sansrpc timed
//! in turns: a round of the floor, a round of sansrpc, again, 200 times; each side's best
//! round, and their ratio.
//!
//! Criterion times one function, then the next. On a shared machine whose speed drifts by
//! 10 % or more within a minute, the ratio of two such times moves with the drift. Taken in
//! turns, both sides see the same machine, and the best round of each is the one least
//! disturbed: the ratio holds to a few percent from run to run. Use it beside criterion's
//! times (and `scripts/instructions`), not instead of them.
//!
//! `cargo bench --bench interleaved` (add a workload name to run only those that contain it);
//! with `--test` (as `cargo bench -- --test` passes), one short round, to check it runs.

use std::hint::black_box;
use std::time::Instant;

#[path = "common/floor.rs"]
mod floor;
#[path = "common/server.rs"]
mod server;

#[path = "common/framing.rs"]
mod framing;

#[path = "common/round_trip.rs"]
mod round_trip;

use sansrpc::codec::{Decoder, Framing};
use sansrpc::{Classifier, Limits, RawValue};
use server::{checked_server, floor_once, serve_once, workloads};

/// Nanoseconds per call of `f`, over `n` calls.
fn per_call<T>(mut f: impl FnMut() -> T, n: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        black_box(f());
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

/// The best round of each side over `rounds` rounds taken in turns (a round of the floor,
/// a round of ours), after `rounds / 10` rounds of warm-up not counted (caches, branch
/// predictors, the clock's speed). Each closure runs one round and returns its time per
/// call.
fn in_turns(
    rounds: usize,
    mut floor: impl FnMut() -> f64,
    mut ours: impl FnMut() -> f64,
) -> (f64, f64) {
    let (mut best_floor, mut best_ours) = (f64::MAX, f64::MAX);
    for round in 0..rounds + rounds / 10 {
        let (t, u) = (floor(), ours());
        if round >= rounds / 10 {
            best_floor = best_floor.min(t);
            best_ours = best_ours.min(u);
        }
    }
    (best_floor, best_ours)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let test = args.iter().any(|a| a == "--test");
    let only: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let rounds = if test { 1 } else { 200 };
    println!("| workload | floor (best round) | sansrpc (best round) | ratio |");
    println!("|---|---:|---:|---:|");
    for w in workloads() {
        if !only.is_empty() && !only.iter().any(|o| w.name.contains(o.as_str())) {
            continue;
        }
        // About 2 ms a round on this kind of machine: short rounds, many of them, so that
        // some of each side fall between disturbances.
        let calls = (2_000_000 / w.frame.len().max(1000)).max(20);
        let calls = if test { 2 } else { calls };
        for &(label, params, floor) in w.ours {
            let (floor_label, floor) = w.floors[floor];
            let mut server = checked_server(&w, label, params, floor);
            let (mut body, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
            let (best_floor, best_ours) = in_turns(
                rounds,
                || {
                    per_call(
                        || floor_once(floor, black_box(&w.frame), &mut body, &mut a),
                        calls,
                    )
                },
                || {
                    per_call(
                        || serve_once(&mut server, black_box(&w.frame), &mut b),
                        calls,
                    )
                },
            );
            println!(
                "| {} ({label}; {floor_label}) | {best_floor:.1} ns | {best_ours:.1} ns | {:.2} |",
                w.name,
                best_ours / best_floor
            );
        }
    }
    if only.is_empty()
        || only
            .iter()
            .any(|o| "W5 content-length".contains(o.as_str()))
    {
        // W5 (as in `framing`): 1,000 frames a round, times per frame.
        let frames = if test { 10 } else { 1_000 };
        let wire = framing::stream(frames);
        let mut dec = Decoder::new(Framing::ContentLength, &Limits::default());
        let mut classifier = Classifier::default();
        let mut ours = || framing::ours(black_box(&wire), &mut dec, &mut classifier);
        assert_eq!((framing::floor(&wire), ours()), (frames, frames));
        let (best_floor, best_ours) = in_turns(
            rounds,
            || per_call(|| framing::floor(black_box(&wire)), 1) / frames as f64,
            || per_call(&mut ours, 1) / frames as f64,
        );
        println!(
            "| W5 content-length (decode + classify, per frame) | {best_floor:.1} ns | {best_ours:.1} ns | {:.2} |",
            best_ours / best_floor
        );
    }
    if only.is_empty() || only.iter().any(|o| "round trip".contains(o.as_str())) {
        // As in `endpoint`: a request sent, answered and its answer read, in one thread.
        let calls = if test { 2 } else { 2_000 };
        let mut floor = round_trip::Floor::new();
        let mut machines = round_trip::Machines::new();
        let params = RawValue::from_json("[1,2]").expect("params");
        let now = sansrpc::Instant::ZERO;
        assert_eq!((floor.once(), machines.round_trip(params, now)), (3, 3));
        let (best_floor, best_ours) = in_turns(
            rounds,
            || per_call(|| floor.once(), calls),
            || per_call(|| machines.round_trip(black_box(params), now), calls),
        );
        println!(
            "| round trip (two connection machines; serde_json floor) | {best_floor:.1} ns | {best_ours:.1} ns | {:.2} |",
            best_ours / best_floor
        );
    }
}
