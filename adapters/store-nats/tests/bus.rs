//! NatsBus against a real nats-server: two buses stand for two server nodes.

mod common;

use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::NatsServer;
use sansrpc::ext::store::{RetentionPolicy, Store};
use sansrpc::RawValue;
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
    // Neither hears its own publishes back.
    std::thread::sleep(Duration::from_millis(300));
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
    let deadline = std::time::Instant::now() + WAIT;
    while b.dropped() < 16 {
        assert!(
            std::time::Instant::now() < deadline,
            "dropped {}",
            b.dropped()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let kept: Vec<BusEvent> = b_rx.try_iter().collect();
    assert_eq!(kept.len(), 4);
    assert_eq!(kept[0], published("burst", "0"));
    assert_eq!(b.dropped(), 16);
    // Dropping the bus ends the receiver.
    drop(b);
    assert!(b_rx.recv_timeout(WAIT).is_err());
}
