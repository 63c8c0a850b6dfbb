//! Pub/sub through `sansrpc serve` and `sansrpc call --follow`, on real processes: a
//! subscriber over TCP or WebSocket receives what another `call` publishes.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(60);

/// A `sansrpc call --follow` process and its output lines, killed when dropped.
struct Follower {
    _child: Server,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Follower {
    fn start(args: &[&str]) -> Follower {
        let mut child = Command::new(exe())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start sansrpc call --follow");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Follower {
            _child: Server(child),
            lines,
        }
    }

    fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(LIMIT)
            .expect("the follower prints a line");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }
}

fn publish(target: &str, addr: &str, topic: &str, data: Value) -> Value {
    let params = json!({"topic": topic, "data": data}).to_string();
    let out = run(&["call", target, addr, "publish", &params], LIMIT);
    assert_eq!(out.status, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

fn subscribe_and_receive(target: &str, addr: &str) {
    let follower = Follower::start(&[
        "call",
        target,
        addr,
        "--follow",
        "60",
        "rpc.subscribe",
        r#"{"topic": "chat.*"}"#,
    ]);
    assert_eq!(
        follower.next(),
        json!({"jsonrpc": "2.0", "result": {"subscribed": true}, "id": 1})
    );
    let answer = publish(target, addr, "chat.room", json!({"text": "hello"}));
    assert_eq!(answer["delivered"], 1);
    assert_eq!(
        follower.next(),
        json!({"jsonrpc": "2.0", "method": "rpc.notification",
               "params": {"topic": "chat.room", "data": {"text": "hello"}}})
    );
    assert_eq!(publish(target, addr, "other", json!(1))["delivered"], 0);
}

#[test]
fn subscribe_over_tcp_publish_from_another_call() {
    let (_server, addr) = serve_tcp("content-length");
    subscribe_and_receive("--tcp", &addr);
}

#[test]
fn subscribe_over_websocket_publish_from_another_call() {
    let (_server, addr) = serve_web("ws");
    subscribe_and_receive("--ws", &addr);
}

#[test]
fn persistent_subscription_over_tcp_resumes_after_reconnect() {
    let (_server, addr) = serve_tcp("content-length");
    let sub = r#"{"subscription_id": "worker-1", "topic": "orders"}"#;
    let follower = Follower::start(&[
        "call",
        "--tcp",
        &addr,
        "--follow",
        "60",
        "rpc.subscribe.persistent",
        sub,
    ]);
    assert_eq!(follower.next()["result"]["resumed_from_sequence"], 0);
    publish("--tcp", &addr, "orders", json!({"order": 1}));
    let n = follower.next();
    assert_eq!(n["method"], "rpc.notification.persistent");
    assert_eq!(n["params"]["sequence_id"], 1);
    drop(follower); // never acknowledged
                    // The server releases the subscription when it sees the close; a new connection gets
                    // the unacknowledged message again (and takes the subscription over if it is first).
    let again = Follower::start(&[
        "call",
        "--tcp",
        &addr,
        "--follow",
        "60",
        "rpc.subscribe.persistent",
        sub,
    ]);
    assert_eq!(again.next()["result"]["resumed_from_sequence"], 0);
    let n = again.next();
    assert_eq!(
        (
            n["params"]["sequence_id"].clone(),
            n["params"]["data"].clone()
        ),
        (json!(1), json!({"order": 1}))
    );
}

#[test]
fn http_refuses_subscriptions_and_store_flags_explain_themselves() {
    let (_server, addr) = serve_web("http");
    let out = run(
        &[
            "call",
            "--http",
            &addr,
            "rpc.subscribe",
            r#"{"topic": "x"}"#,
        ],
        LIMIT,
    );
    assert_eq!(out.status, 1);
    let error: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("stays open"),
        "{error}"
    );
    assert_eq!(publish("--http", &addr, "x", json!(null))["delivered"], 0);

    let out = run(&["serve", "--store", "/nonexistent/db"], LIMIT);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("--store"), "{}", out.stderr);
    let out = run(&["serve", "--retention-max-age", "5x"], LIMIT);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("unit"), "{}", out.stderr);
}
