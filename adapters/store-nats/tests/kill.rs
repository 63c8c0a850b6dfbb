//! A node killed mid-stream: a child process (this binary, re-executed) is a sansrpc node
//! that publishes to and acknowledges from a persistent topic on a real nats-server, and is
//! killed with SIGKILL twice. After each kill another node (this process) takes the
//! subscriber over and shows: every append that returned is in the log, sequences are
//! contiguous and continue, every acknowledgement that returned is kept (no acknowledged
//! message would be delivered again) and exactly the unacknowledged ones are due.
//!
//! The child prints `A <sequence> <data>` after each append returned and
//! `S <floor> <acked,...>` after each subscription save returned.

mod common;
#[path = "../../../tests/support/harness.rs"]
mod harness;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use sansrpc::RawValue;
use sansrpc_pubsub::store::{Retention, RetentionPolicy, Store, SubscriptionState};
use sansrpc_store_nats::NatsStore;

const CHILD_ENV: &str = "SANSRPC_NATS_KILL_CHILD";
const TOPIC: &str = "orders.kill";
const SUBSCRIPTION: &str = "worker-1";

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

fn child(url: &str) {
    let mut store = NatsStore::connect(url, policy()).expect("child connects");
    let mut state = store
        .load_subscription(SUBSCRIPTION)
        .unwrap()
        .unwrap_or_else(|| SubscriptionState::new(TOPIC, 0));
    let mut stdout = std::io::stdout().lock();
    let mut inbox = Vec::new();
    for i in 0..100_000u64 {
        let data = format!(r#"{{"n":{i}}}"#);
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

/// Runs the child node until it printed `lines` lines, SIGKILLs it, returns every line.
fn run_and_kill(url: &str, lines: usize) -> Vec<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, url)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
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
                panic!("the child node stopped after {} lines: {e}", seen.len());
            }
        }
    }
    child.kill().unwrap(); // SIGKILL on Unix
    assert!(!child.wait().unwrap().success());
    reader.join().unwrap();
    seen.extend(rx.try_iter());
    seen
}

fn main() {
    if let Some(url) = std::env::var_os(CHILD_ENV) {
        return child(url.to_str().unwrap());
    }
    harness::run(&[(
        "a_node_killed_twice_loses_no_returned_append_or_ack",
        parent,
    )]);
}

fn parent() {
    let server = common::NatsServer::start();
    let mut node_b = NatsStore::connect(&server.url, policy()).unwrap();
    let mut appended: Vec<(u64, String)> = Vec::new();
    let mut out_of_order_saves = 0;
    let mut last_before = 0;
    for lines in [120, 77] {
        let mut saved: Option<SubscriptionState> = None;
        let mut first = None;
        for line in run_and_kill(&server.url, lines) {
            let mut parts = line.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("A"), Some(seq), Some(data)) => {
                    let seq: u64 = seq.parse().unwrap();
                    first.get_or_insert(seq);
                    appended.push((seq, data.to_owned()));
                }
                (Some("S"), Some(floor), acked) => {
                    let acked: Vec<u64> = acked
                        .unwrap_or("")
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(|s| s.parse().unwrap())
                        .collect();
                    out_of_order_saves += usize::from(!acked.is_empty());
                    saved = Some(SubscriptionState {
                        topic: TOPIC.into(),
                        ack_floor: floor.parse().unwrap(),
                        acked,
                        ..SubscriptionState::default()
                    });
                }
                _ => panic!("unexpected line {line:?}"),
            }
        }
        assert_eq!(first, Some(last_before + 1), "sequences continue");

        // Node B takes over.
        let last = node_b.last_sequence(TOPIC).unwrap();
        let mut log = Vec::new();
        node_b.read(TOPIC, 0, usize::MAX, &mut log).unwrap();
        let sequences: Vec<u64> = log.iter().map(|m| m.sequence).collect();
        assert_eq!(sequences, (1..=last).collect::<Vec<_>>(), "nothing lost");
        for (sequence, data) in &appended {
            assert_eq!(log[*sequence as usize - 1].data.get(), data);
        }
        let saved = saved.expect("the child saved its subscription");
        let resumed = node_b.load_subscription(SUBSCRIPTION).unwrap().unwrap();
        assert!(resumed.ack_floor >= saved.ack_floor);
        for sequence in (1..=saved.ack_floor).chain(saved.acked.iter().copied()) {
            assert!(
                resumed.is_acked(sequence),
                "{sequence} would be redelivered"
            );
        }
        let due: Vec<u64> = sequences
            .iter()
            .copied()
            .filter(|&s| !resumed.is_acked(s))
            .collect();
        for s in &due {
            assert!(*s > saved.ack_floor && !saved.acked.contains(s));
        }
        last_before = last;
    }
    assert!(out_of_order_saves > 0);
    let next = node_b
        .append(TOPIC, 0, RawValue::from_json("0").unwrap())
        .unwrap();
    assert_eq!(next, last_before + 1);
    println!(
        "kill: 2 SIGKILLed nodes, {} appends seen returned, all in the log; ok",
        appended.len()
    );
}
