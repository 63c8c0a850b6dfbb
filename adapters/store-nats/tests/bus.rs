//! NatsBus against a real nats-server: two buses stand for two server nodes.

mod common;

use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::{wait_until, NatsServer};
use sansrpc::RawValue;
use sansrpc_pubsub::store::{RetentionPolicy, Store, SubscriptionState};
use sansrpc_store_nats::{BusEvent, Error, NatsBus, NatsStore};

const WAIT: Duration = Duration::from_secs(30);

fn raw(s: &str) -> &RawValue {
    RawValue::from_json(s).unwrap()
}

fn published(topic: &str, data: &str) -> BusEvent {
    BusEvent::Published {
        topic: topic.to_owned(),
        data: RawValue::from_string(data.into()).unwrap(),
    }
}

/// The next event that is not an `Appended` (those are checked separately).
fn next_published(rx: &Receiver<BusEvent>) -> BusEvent {
    loop {
        let event = rx.recv_timeout(WAIT).expect("an event within 30 s");
        if matches!(event, BusEvent::Published { .. }) {
            return event;
        }
    }
}

#[test]
fn a_publish_on_one_node_reaches_the_other_and_not_itself() {
    let server = NatsServer::start();
    let (a, a_rx) = NatsBus::connect(&server.url, 64).unwrap();
    let (b, b_rx) = NatsBus::connect(&server.url, 64).unwrap();

    a.publish("orders.eu", raw(r#"{"id":1}"#)).unwrap();
    a.publish("orders.us", raw("[true]")).unwrap();
    b.publish("news", raw("\"hi\"")).unwrap();
    a.flush().unwrap();
    b.flush().unwrap();

    assert_eq!(next_published(&b_rx), published("orders.eu", r#"{"id":1}"#));
    assert_eq!(next_published(&b_rx), published("orders.us", "[true]"));
    assert_eq!(next_published(&a_rx), published("news", "\"hi\""));
    // Neither hears its own publishes back. Each node's publishes were flushed (the server
    // processed them) before the other node sends a marker, so an echo would reach a node's
    // connection before the marker does: once the marker arrives, nothing else may have.
    b.publish("mark.b", raw("0")).unwrap();
    b.flush().unwrap();
    assert_eq!(next_published(&a_rx), published("mark.b", "0"));
    a.publish("mark.a", raw("0")).unwrap();
    a.flush().unwrap();
    assert_eq!(next_published(&b_rx), published("mark.a", "0"));
    assert!(a_rx.try_recv().is_err());
    assert!(b_rx.try_recv().is_err());
    assert!(matches!(
        a.publish("bad.*", raw("1")),
        Err(Error::InvalidTopic(_))
    ));
    assert_eq!((a.dropped(), b.dropped()), (0, 0));
}

#[test]
fn appends_by_any_node_are_announced_to_every_node() {
    let server = NatsServer::start();
    let (_a, a_rx) = NatsBus::connect(&server.url, 64).unwrap();
    let (_b, b_rx) = NatsBus::connect(&server.url, 64).unwrap();
    let mut store_a = NatsStore::connect(&server.url, RetentionPolicy::default()).unwrap();
    assert_eq!(store_a.append("jobs.q1", 0, raw("1")).unwrap(), 1);
    for rx in [&a_rx, &b_rx] {
        assert_eq!(
            rx.recv_timeout(WAIT).unwrap(),
            BusEvent::Appended {
                topic: "jobs.q1".into()
            }
        );
    }
}

#[test]
fn a_full_receiver_drops_and_counts_instead_of_growing() {
    let server = NatsServer::start();
    let (a, _a_rx) = NatsBus::connect(&server.url, 4).unwrap();
    let (b, b_rx) = NatsBus::connect(&server.url, 4).unwrap();
    for i in 0..20 {
        a.publish("burst", raw(&i.to_string())).unwrap();
    }
    a.flush().unwrap();
    wait_until(WAIT, "16 events dropped", || b.dropped() >= 16);
    let kept: Vec<BusEvent> = b_rx.try_iter().collect();
    assert_eq!(kept.len(), 4);
    assert_eq!(kept[0], published("burst", "0"));
    assert_eq!(b.dropped(), 16);
    // Dropping the bus ends the receiver.
    drop(b);
    assert!(b_rx.recv_timeout(WAIT).is_err());
}

#[test]
fn payloads_that_are_not_json_are_dropped_and_counted() {
    let server = NatsServer::start();
    let (bus, rx) = NatsBus::connect(&server.url, 8).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = async_nats::connect(&server.url).await.unwrap();
        for payload in [&b"{not json"[..], b"\xff\xfe", b"", b"[1,2]"] {
            client
                .publish("sansrpc.pub.raw", payload.to_vec().into())
                .await
                .unwrap();
        }
        client.flush().await.unwrap();
    });
    assert_eq!(next_published(&rx), published("raw", "[1,2]"));
    assert_eq!(bus.dropped(), 3);
}

/// The issue's two-node scenario at library level: each node is a store and a bus on one
/// NATS. An ephemeral publish through node A reaches a subscriber on node B; a persistent
/// subscriber reads and acknowledges on A, moves to B, and resumes where it acknowledged,
/// woken on B by the append notification of a publish made on A.
#[test]
fn two_nodes_end_to_end() {
    struct Node {
        store: NatsStore,
        bus: NatsBus,
        events: Receiver<BusEvent>,
    }
    let server = NatsServer::start();
    let node = || {
        let (bus, events) = NatsBus::connect(&server.url, 64).unwrap();
        Node {
            store: NatsStore::connect(&server.url, RetentionPolicy::default()).unwrap(),
            bus,
            events,
        }
    };
    let (mut a, mut b) = (node(), node());

    // Ephemeral: A publishes, B's hub gets it for its local subscribers.
    a.bus
        .publish("chat.room1", raw(r#"{"text":"hi"}"#))
        .unwrap();
    assert_eq!(
        next_published(&b.events),
        published("chat.room1", r#"{"text":"hi"}"#)
    );

    // Persistent: a subscriber on A receives 1..=4 and acknowledges 1, 2 and 4.
    let mut state = SubscriptionState::new("orders", a.store.last_sequence("orders").unwrap());
    a.store.save_subscription("proc-1", &state).unwrap();
    for i in 1..=4 {
        a.store.append("orders", i, raw(&i.to_string())).unwrap();
    }
    for s in [1, 2, 4] {
        state.ack(s);
        a.store.save_subscription("proc-1", &state).unwrap();
    }
    // It reconnects to B: B resumes it from the shared record.
    let mut resumed = b.store.load_subscription("proc-1").unwrap().unwrap();
    let mut inbox = Vec::new();
    b.store
        .read("orders", resumed.ack_floor, 100, &mut inbox)
        .unwrap();
    let due: Vec<u64> = inbox
        .iter()
        .map(|m| m.sequence)
        .filter(|&s| !resumed.is_acked(s))
        .collect();
    assert_eq!(
        due,
        [3],
        "no acknowledged message again, every unacknowledged one"
    );
    resumed.ack(3);
    b.store.save_subscription("proc-1", &resumed).unwrap();

    // A publishes one more persistent message; B hears of it and delivers it.
    while b.events.try_recv().is_ok() {}
    assert_eq!(a.store.append("orders", 5, raw("5")).unwrap(), 5);
    loop {
        match b.events.recv_timeout(WAIT).expect("an append notification") {
            BusEvent::Appended { topic } if topic == "orders" => break,
            _ => {}
        }
    }
    inbox.clear();
    b.store
        .read("orders", resumed.ack_floor, 100, &mut inbox)
        .unwrap();
    assert_eq!(inbox.len(), 1);
    assert_eq!((inbox[0].sequence, inbox[0].data.get()), (5, "5"));
}
