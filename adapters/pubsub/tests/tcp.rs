//! Pub/sub over real TCP connections served by the blocking adapter: a publish from one
//! client reaches another client's subscription, and closing a connection removes its
//! subscriptions. Each test runs twice: with the in-memory store (its operations performed
//! inline) and with a store that waits 1 ms per operation like a disk (performed by the
//! store worker, answers coming later through the connection's hook).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sansrpc::codec::Framing;
use sansrpc::router::Router;
use sansrpc::ErrorObject;
use sansrpc_blocking::{serve_tcp, Extension, Options, Server};
use sansrpc_pubsub::hub::HubConfig;
use sansrpc_pubsub::store::{MemoryStore, RetentionPolicy, Store};
use sansrpc_pubsub::PubSub;
use serde_json::{json, Value};

#[path = "support/slow_store.rs"]
mod slow_store;

use slow_store::Slow;

/// The in-memory store, taking 1 ms per operation (and saying it waits) like a disk.
fn like_a_disk(inner: MemoryStore) -> Slow {
    Slow {
        inner,
        delay: Duration::from_millis(1),
    }
}

fn server_with(hub: HubConfig, disk: bool) -> Server {
    let memory = MemoryStore::new(RetentionPolicy::default());
    assert!(!memory.waits());
    let pubsub = Arc::new(if disk {
        assert!(like_a_disk(MemoryStore::default()).waits());
        PubSub::new(like_a_disk(memory), hub)
    } else {
        PubSub::new(memory, hub)
    });
    let mut router = Router::new();
    let hub = Arc::clone(&pubsub);
    router
        .raw_method("publish", move |params, out| {
            let p: Value = params
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .ok_or_else(ErrorObject::invalid_params)?;
            let (Some(topic), Some(data)) = (p["topic"].as_str(), p.get("data")) else {
                return Err(ErrorObject::invalid_params());
            };
            let data = sansrpc::RawValue::from_string(data.to_string()).unwrap();
            let published = hub.publish(topic, &data).map_err(|e| e.to_error_object())?;
            out.extend_from_slice(
                format!("{{\"delivered\":{}}}", published.delivered()).as_bytes(),
            );
            Ok(())
        })
        .unwrap();
    let mut config = Options::default();
    config.connection.framing = Some(Framing::Newline);
    config.extension = Some(Extension::new(pubsub));
    serve_tcp("127.0.0.1:0", Arc::new(router), config).unwrap()
}

struct Peer {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Peer {
    fn connect(addr: SocketAddr) -> Peer {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Peer {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).unwrap();
    }

    fn next(&mut self) -> Value {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}));
        // Notifications may come first (a redelivery racing the answer): skipped here.
        let answer = loop {
            let message = self.next();
            if message.get("method").is_none() {
                break message;
            }
        };
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }
}

#[test]
fn publish_reaches_another_connection_and_close_unsubscribes_in_memory() {
    publish_reaches_another_connection_and_close_unsubscribes(false);
}

#[test]
fn publish_reaches_another_connection_and_close_unsubscribes_on_a_disk() {
    publish_reaches_another_connection_and_close_unsubscribes(true);
}

fn publish_reaches_another_connection_and_close_unsubscribes(disk: bool) {
    let server = server_with(HubConfig::default(), disk);
    let mut a = Peer::connect(server.local_addr());
    let mut b = Peer::connect(server.local_addr());
    assert_eq!(
        a.call(1, "rpc.subscribe", json!({"topic": "chat.*"})),
        json!({"jsonrpc": "2.0", "result": {"subscribed": true}, "id": 1})
    );
    assert_eq!(
        b.call(
            1,
            "publish",
            json!({"topic": "chat.room", "data": {"from": "b"}})
        )["result"],
        json!({"delivered": 1})
    );
    assert_eq!(
        a.next(),
        json!({"jsonrpc": "2.0", "method": "rpc.notification",
               "params": {"topic": "chat.room", "data": {"from": "b"}}})
    );
    // Many in a row arrive in order.
    for i in 0..100 {
        b.call(2 + i, "publish", json!({"topic": "chat.room", "data": i}));
    }
    for i in 0..100 {
        assert_eq!(a.next()["params"]["data"], i);
    }
    // Persistent: delivered with a sequence id, acknowledged.
    let sub = a.call(
        2,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "p", "topic": "orders"}),
    );
    assert_eq!(sub["result"]["resumed_from_sequence"], 0);
    b.call(200, "publish", json!({"topic": "orders", "data": 7}));
    let n = a.next();
    assert_eq!(n["method"], "rpc.notification.persistent");
    assert_eq!(
        (
            n["params"]["sequence_id"].clone(),
            n["params"]["data"].clone()
        ),
        (json!(1), json!(7))
    );
    let ack = a.call(
        3,
        "rpc.acknowledge.persistent",
        json!({"subscription_id": "p", "sequence_id": 1}),
    );
    assert_eq!(ack["result"], json!({"acknowledged": true}));

    drop(a);
    // The server notices the close on its own schedule; wait for it, generously.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut id = 1000;
    loop {
        id += 1;
        let answer = b.call(id, "publish", json!({"topic": "chat.room", "data": 0}));
        if answer["result"]["delivered"] == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the subscription outlived its connection"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The persistent subscription was released: a new connection takes it, nothing unacked.
    let mut c = Peer::connect(server.local_addr());
    let sub = c.call(
        1,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "p", "topic": "orders"}),
    );
    assert_eq!(sub["result"]["resumed_from_sequence"], 1);
    server.shutdown();
}

#[test]
fn the_worker_redelivers_what_is_not_acknowledged_in_memory() {
    the_worker_redelivers_what_is_not_acknowledged(false);
}

#[test]
fn the_worker_redelivers_what_is_not_acknowledged_on_a_disk() {
    the_worker_redelivers_what_is_not_acknowledged(true);
}

fn the_worker_redelivers_what_is_not_acknowledged(disk: bool) {
    let mut config = HubConfig::default();
    config.ack_timeout = Duration::from_millis(200);
    let server = server_with(config, disk);
    let mut a = Peer::connect(server.local_addr());
    let mut b = Peer::connect(server.local_addr());
    a.call(
        1,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "p", "topic": "jobs"}),
    );
    b.call(1, "publish", json!({"topic": "jobs", "data": "work"}));
    let first = a.next();
    assert_eq!(first["params"]["sequence_id"], 1);
    // Not acknowledged: the same delivery comes again once the ack timeout passes.
    let again = a.next();
    assert_eq!(again, first);
    let ack = a.call(
        2,
        "rpc.acknowledge.persistent",
        json!({"subscription_id": "p", "sequence_id": 1}),
    );
    assert_eq!(ack["result"], json!({"acknowledged": true}));
    server.shutdown();
}
