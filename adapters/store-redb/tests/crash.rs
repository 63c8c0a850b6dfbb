//! Crash test: a child process (this same binary, re-executed) publishes and acknowledges in a
//! loop against a real redb file and is killed with SIGKILL mid-stream, three times over.
//! After each kill the store reopens and shows: every append that returned is there with its
//! data, sequences are contiguous and continue in the next run, and every acknowledgement
//! that returned is still recorded (so no acknowledged message would be delivered again,
//! and every unacknowledged one still would be).
//!
//! The child prints one line per operation that returned, flushed at once:
//! `A <sequence> <data>` after an append, `S <floor> <acked,...>` after a subscription save.

#[path = "../../../tests/support/harness.rs"]
mod harness;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use sansrpc::RawValue;
use sansrpc_pubsub::store::{Retention, RetentionPolicy, Store, SubscriptionState};
use sansrpc_store_redb::RedbStore;

const CHILD_ENV: &str = "SANSRPC_REDB_CRASH_CHILD";
const TOPIC: &str = "orders";
const SUBSCRIPTION: &str = "worker";

fn policy() -> RetentionPolicy {
    RetentionPolicy {
        default: Retention {
            max_age: None,
            max_count: None,
            max_bytes: None,
        },
        topics: Default::default(),
    }
}

/// The writer: publishes, then "delivers" every unacknowledged message and acknowledges
/// most of them at once and every third one four appends later, so the saved state has out-of-order
/// acks above the floor most of the time.
fn child(path: &Path, round: u32) {
    let mut store = RedbStore::open(path, policy()).expect("child opens the store");
    let mut state = match store.load_subscription(SUBSCRIPTION).unwrap() {
        Some(state) => state,
        None => SubscriptionState::new(TOPIC, 0),
    };
    let mut stdout = std::io::stdout().lock();
    let mut inbox = Vec::new();
    for i in 0..1_000_000u64 {
        let data = format!(r#"{{"round":{round},"n":{i}}}"#);
        let data = RawValue::from_json(&data).unwrap();
        let sequence = store.append(TOPIC, i, data).unwrap();
        writeln!(stdout, "A {sequence} {data}").unwrap();
        stdout.flush().unwrap();

        inbox.clear();
        store.read(TOPIC, state.ack_floor, 64, &mut inbox).unwrap();
        let mut changed = false;
        for message in &inbox {
            // Every third message is acknowledged only once four newer ones exist.
            if message.sequence % 3 != 0 || message.sequence + 4 <= sequence {
                changed |= state.ack(message.sequence);
            }
        }
        if changed {
            store.save_subscription(SUBSCRIPTION, &state).unwrap();
            let acked: Vec<String> = state.acked.iter().map(u64::to_string).collect();
            writeln!(stdout, "S {} {}", state.ack_floor, acked.join(",")).unwrap();
            stdout.flush().unwrap();
        }
    }
}

struct Run {
    appended: Vec<(u64, String)>,
    saved: Option<SubscriptionState>,
    /// Saves that had acknowledgements above the floor.
    out_of_order_saves: usize,
}

/// Runs the child until it printed `lines` lines, kills it with SIGKILL, and returns every
/// line it printed (including those still in the pipe).
fn run_and_kill(path: &Path, round: u32, lines: usize) -> Run {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, path)
        .env("SANSRPC_REDB_CRASH_ROUND", round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    while seen.len() < lines {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(line) => seen.push(line),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "round {round}: the child stopped after {} lines: {e}",
                    seen.len()
                );
            }
        }
    }
    child.kill().unwrap(); // SIGKILL on Unix
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child was killed, not finished");
    reader.join().unwrap();
    seen.extend(rx.try_iter());

    let mut run = Run {
        appended: Vec::new(),
        saved: None,
        out_of_order_saves: 0,
    };
    for line in seen {
        let mut parts = line.splitn(3, ' ');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("A"), Some(seq), Some(data)) => {
                run.appended.push((seq.parse().unwrap(), data.to_owned()))
            }
            (Some("S"), Some(floor), acked) => {
                run.out_of_order_saves += usize::from(acked.is_some_and(|a| !a.is_empty()));
                run.saved = Some(SubscriptionState {
                    topic: TOPIC.into(),
                    ack_floor: floor.parse().unwrap(),
                    acked: acked
                        .unwrap_or("")
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(|s| s.parse().unwrap())
                        .collect(),
                    ..SubscriptionState::default()
                })
            }
            _ => panic!("unexpected child line {line:?}"),
        }
    }
    run
}

fn parent() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("crash.redb");
    let mut last_before = 0u64;
    let mut every_append: Vec<(u64, String)> = Vec::new();
    let mut out_of_order_saves = 0;
    for (round, lines) in [(0u32, 150usize), (1, 233), (2, 91)] {
        let run = run_and_kill(&path, round, lines);
        out_of_order_saves += run.out_of_order_saves;
        assert!(!run.appended.is_empty());
        assert_eq!(
            run.appended[0].0,
            last_before + 1,
            "round {round}: sequences continue from the last one the store ever had"
        );
        every_append.extend(run.appended.iter().cloned());

        let mut store = RedbStore::open(&path, policy()).expect("the store reopens after SIGKILL");
        let last = store.last_sequence(TOPIC).unwrap();
        let mut log = Vec::new();
        store.read(TOPIC, 0, usize::MAX, &mut log).unwrap();
        assert_eq!(
            log.iter().map(|m| m.sequence).collect::<Vec<_>>(),
            (1..=last).collect::<Vec<_>>(),
            "round {round}: no gap, nothing lost"
        );
        for (sequence, data) in &every_append {
            let stored = &log[*sequence as usize - 1];
            assert_eq!(
                stored.data.get(),
                data,
                "round {round}: append {sequence} survived"
            );
        }
        assert!(last >= run.appended.last().unwrap().0);

        let loaded = store.load_subscription(SUBSCRIPTION).unwrap();
        if let Some(saved) = &run.saved {
            let loaded = loaded.expect("a save that returned survived");
            // The child may have saved once more after its last line: never less.
            assert!(loaded.ack_floor >= saved.ack_floor, "round {round}");
            for sequence in (1..=saved.ack_floor).chain(saved.acked.iter().copied()) {
                assert!(
                    loaded.is_acked(sequence),
                    "round {round}: acknowledged {sequence} would be delivered again"
                );
            }
            assert!(loaded.ack_floor <= last);
            // What a resumed subscriber gets: exactly the unacknowledged messages.
            let redelivered: Vec<u64> = log
                .iter()
                .map(|m| m.sequence)
                .filter(|&s| !loaded.is_acked(s))
                .collect();
            for s in &redelivered {
                assert!(*s > saved.ack_floor && !saved.acked.contains(s));
            }
        } else {
            panic!("round {round}: the child saved no subscription state in {lines} lines");
        }
        last_before = last;
    }
    assert!(
        out_of_order_saves > 0,
        "the child acknowledges out of order"
    );
    let mut store = RedbStore::open(&path, policy()).unwrap();
    assert_eq!(
        store
            .append(TOPIC, 0, RawValue::from_json("0").unwrap())
            .unwrap(),
        last_before + 1
    );
    println!(
        "crash: 3 SIGKILLs, {} appends seen returned, all retained, {out_of_order_saves} saves \
         with out-of-order acks; ok",
        every_append.len()
    );
}

fn main() {
    match std::env::var_os(CHILD_ENV) {
        Some(path) => {
            let round = std::env::var("SANSRPC_REDB_CRASH_ROUND")
                .unwrap()
                .parse()
                .unwrap();
            child(Path::new(&path), round)
        }
        None => harness::run(&[("every_returned_append_and_ack_survives_sigkill", parent)]),
    }
}
