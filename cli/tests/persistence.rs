//! Persistent subscriptions through real `sansrpc serve` processes: the embedded store
//! survives a SIGKILL in the middle of a stream, and two servers on one NATS JetStream share
//! publishes and persistent subscribers.

mod common;
#[path = "../../adapters/store-nats/tests/common/mod.rs"]
mod nats;

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(60);

/// A newline-framed JSON-RPC connection that keeps the notifications it reads while it
/// waits for answers.
struct Peer {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    notifications: VecDeque<Value>,
    next_id: u64,
}

impl Peer {
    fn connect(addr: &str) -> Peer {
        let stream = TcpStream::connect(addr).expect("connect to the server");
        stream.set_read_timeout(Some(LIMIT)).unwrap();
        Peer {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
            notifications: VecDeque::new(),
            next_id: 1,
        }
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        let n = self
            .reader
            .read_line(&mut line)
            .expect("read from the server");
        assert!(n > 0, "the server closed the connection");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// Calls `method` and returns its result; notifications read meanwhile are kept.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut line =
            json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}).to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).unwrap();
        loop {
            let message = self.read();
            if message.get("method").is_some() {
                self.notifications.push_back(message);
            } else {
                assert_eq!(message["id"], id, "{message}");
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    /// The next `method` notification's params.
    fn notification(&mut self, method: &str) -> Value {
        loop {
            let message = match self.notifications.pop_front() {
                Some(m) => m,
                None => self.read(),
            };
            if message["method"] == method {
                return message["params"].clone();
            }
        }
    }

    /// Persistent deliveries, by sequence id, until every one of `want` has arrived.
    fn deliveries_until(&mut self, want: &[u64]) -> BTreeMap<u64, Value> {
        let mut got = BTreeMap::new();
        while !want.iter().all(|s| got.contains_key(s)) {
            let params = self.notification("rpc.notification.persistent");
            let seq = params["sequence_id"].as_u64().expect("a sequence id");
            got.insert(seq, params);
        }
        got
    }
}

fn serve_store(path: &std::path::Path) -> (Server, String) {
    let path = path.to_str().unwrap();
    serve_logging_addr(&[
        "serve",
        "--tcp",
        "127.0.0.1:0",
        "--framing",
        "newline",
        "--store",
        path,
    ])
}

fn publish(peer: &mut Peer, topic: &str, n: u64) -> u64 {
    let result = peer.call("publish", json!({"topic": topic, "data": {"n": n}}));
    result["sequence_id"]
        .as_u64()
        .expect("a persistent publish has a sequence id")
}

#[test]
fn embedded_store_survives_sigkill_in_the_middle_of_a_stream() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.redb");
    let (mut server, addr) = serve_store(&db);

    let mut subscriber = Peer::connect(&addr);
    let subscribed = subscriber.call(
        "rpc.subscribe.persistent",
        json!({"subscription_id": "worker", "topic": "orders"}),
    );
    assert_eq!(subscribed["resumed_from_sequence"], 0, "{subscribed}");

    let mut publisher = Peer::connect(&addr);
    let mut published = BTreeMap::new();
    for n in 1..=10 {
        published.insert(publish(&mut publisher, "orders", n), n);
    }
    assert_eq!(
        published.keys().copied().collect::<Vec<_>>(),
        (1..=10).collect::<Vec<_>>()
    );
    let first = subscriber.deliveries_until(&(1..=10).collect::<Vec<_>>());
    for (seq, params) in &first {
        assert_eq!(params["data"]["n"], published[seq], "{params}");
        assert_eq!(params["subscription_id"], "worker");
        assert_eq!(params["topic"], "orders");
    }
    // Acknowledged out of order, with a gap: 1..=4 and 6. 5, 7.. stay unacknowledged.
    for seq in [2, 1, 4, 3, 6] {
        let acked = subscriber.call(
            "rpc.acknowledge.persistent",
            json!({"subscription_id": "worker", "sequence_id": seq}),
        );
        assert_eq!(acked["acknowledged"], true);
    }
    // The stream goes on: more publishes, delivered and not acknowledged, then SIGKILL.
    for n in 11..=15 {
        published.insert(publish(&mut publisher, "orders", n), n);
    }
    subscriber.deliveries_until(&[11, 12, 13, 14, 15]);
    server.0.kill().expect("SIGKILL the server");
    server.0.wait().unwrap();
    drop((subscriber, publisher));

    let (_server, addr) = serve_store(&db);
    let mut subscriber = Peer::connect(&addr);
    let resumed = subscriber.call(
        "rpc.subscribe.persistent",
        json!({"subscription_id": "worker", "topic": "orders"}),
    );
    assert_eq!(
        resumed["resumed_from_sequence"], 4,
        "the contiguous ack floor: {resumed}"
    );
    let unacked: Vec<u64> = published
        .keys()
        .copied()
        .filter(|s| ![1, 2, 3, 4, 6].contains(s))
        .collect();
    let again = subscriber.deliveries_until(&unacked);
    for seq in [1, 2, 3, 4, 6] {
        assert!(
            !again.contains_key(&seq),
            "acknowledged {seq} delivered again"
        );
    }
    for seq in &unacked {
        assert_eq!(
            again[seq]["data"]["n"], published[seq],
            "nothing lost or changed"
        );
    }
    // Sequence ids continue where the killed process left them.
    let mut publisher = Peer::connect(&addr);
    let next = publish(&mut publisher, "orders", 16);
    assert_eq!(next, 16);
    let last = subscriber.deliveries_until(&[16]);
    assert_eq!(last[&16]["data"]["n"], 16);
}

fn serve_nats(url: &str) -> (Server, String) {
    serve_logging_addr(&[
        "serve",
        "--tcp",
        "127.0.0.1:0",
        "--framing",
        "newline",
        "--nats",
        url,
    ])
}

#[test]
fn two_servers_on_one_nats_share_publishes_and_persistent_subscribers() {
    let nats = nats::NatsServer::start();
    let (_a, addr_a) = serve_nats(&nats.url);
    let (_b, addr_b) = serve_nats(&nats.url);

    // Ephemeral: a publish through A reaches a wildcard subscriber on B.
    let mut on_b = Peer::connect(&addr_b);
    assert_eq!(
        on_b.call("rpc.subscribe", json!({"topic": "chat.*"}))["subscribed"],
        true
    );
    let mut via_a = Peer::connect(&addr_a);
    via_a.call(
        "publish",
        json!({"topic": "chat.room", "data": "hello from A"}),
    );
    let note = on_b.notification("rpc.notification");
    assert_eq!(note, json!({"topic": "chat.room", "data": "hello from A"}));

    // Persistent: a subscriber on A gets what is published through B, acks some, moves to
    // B and resumes where it acked.
    let mut mover = Peer::connect(&addr_a);
    let subscribed = mover.call(
        "rpc.subscribe.persistent",
        json!({"subscription_id": "mover", "topic": "jobs"}),
    );
    assert_eq!(subscribed["resumed_from_sequence"], 0, "{subscribed}");
    let mut via_b = Peer::connect(&addr_b);
    for n in 1..=5 {
        assert_eq!(publish(&mut via_b, "jobs", n), n);
    }
    let got = mover.deliveries_until(&[1, 2, 3, 4, 5]);
    assert_eq!(got[&5]["data"]["n"], 5);
    for seq in 1..=3 {
        mover.call(
            "rpc.acknowledge.persistent",
            json!({"subscription_id": "mover", "sequence_id": seq}),
        );
    }
    drop(mover);

    let mut mover = Peer::connect(&addr_b);
    let mut resumed = Value::Null;
    // A may still hold the subscription for a moment after the disconnect; B takes it.
    wait_until(LIMIT, "B resumes the subscription from sequence 3", || {
        resumed = mover.call(
            "rpc.subscribe.persistent",
            json!({"subscription_id": "mover", "topic": "jobs"}),
        );
        resumed["resumed_from_sequence"] == 3
    });
    let again = mover.deliveries_until(&[4, 5]);
    assert!(
        again.keys().all(|s| *s >= 4),
        "acknowledged ones came back: {again:?}"
    );
    assert_eq!(publish(&mut via_a, "jobs", 6), 6);
    let last = mover.deliveries_until(&[6]);
    assert_eq!(last[&6]["data"]["n"], 6);
}
