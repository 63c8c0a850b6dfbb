//! NatsStore against a real nats-server with JetStream. Two store instances stand for two
//! server nodes sharing one NATS system.

mod common;

use std::time::Duration;

use async_nats::jetstream;
use common::{wait_until, NatsServer};
use sansrpc::RawValue;
use sansrpc_pubsub::store::{Retention, RetentionPolicy, Store, StoredMessage, SubscriptionState};
use sansrpc_store_nats::{Error, NatsStore};

fn raw(s: &str) -> &RawValue {
    RawValue::from_json(s).unwrap()
}

fn unbounded() -> RetentionPolicy {
    RetentionPolicy {
        default: Retention {
            max_age: None,
            max_count: None,
            max_bytes: None,
        },
        topics: Default::default(),
    }
}

fn read_all(store: &mut NatsStore, topic: &str, after: u64) -> Vec<StoredMessage> {
    let mut out = Vec::new();
    store.read(topic, after, usize::MAX, &mut out).unwrap();
    out
}

fn sequences(messages: &[StoredMessage]) -> Vec<u64> {
    messages.iter().map(|m| m.sequence).collect()
}

/// Runs `f` with a JetStream context of its own, to look at what the store left in NATS.
fn inspect<T>(url: &str, f: impl AsyncFnOnce(jetstream::Context) -> T) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = async_nats::connect(url).await.unwrap();
        f(jetstream::new(client)).await
    })
}

#[test]
fn two_nodes_share_one_log_and_sequences_continue() {
    let server = NatsServer::start();
    let mut a = NatsStore::connect(&server.url, unbounded()).unwrap();
    let mut b = NatsStore::connect(&server.url, unbounded()).unwrap();
    assert_eq!(a.last_sequence("orders.eu").unwrap(), 0);
    assert!(read_all(&mut a, "orders.eu", 0).is_empty());
    for i in 1..=3u64 {
        let data = format!(r#"{{"n":{i}}}"#);
        assert_eq!(a.append("orders.eu", 1000 + i, raw(&data)).unwrap(), i);
    }
    assert_eq!(b.last_sequence("orders.eu").unwrap(), 3);
    assert_eq!(b.append("orders.eu", 2000, raw("[1,2]")).unwrap(), 4);
    assert_eq!(
        a.append("orders.us", 5, raw("true")).unwrap(),
        1,
        "per topic"
    );
    assert_eq!(a.append("orders.eu", 2001, raw("null")).unwrap(), 5);

    let messages = read_all(&mut a, "orders.eu", 0);
    assert_eq!(sequences(&messages), [1, 2, 3, 4, 5]);
    assert_eq!(messages[3].data.get(), "[1,2]");
    assert_eq!(messages[3].timestamp_ms, 2000);
    assert_eq!(messages[0].data.get(), r#"{"n":1}"#);
    assert_eq!(messages[0].topic, "orders.eu");
    let mut page = Vec::new();
    b.read("orders.eu", 1, 2, &mut page).unwrap();
    assert_eq!(sequences(&page), [2, 3]);
    assert_eq!(sequences(&read_all(&mut b, "orders.us", 0)), [1]);

    // A third node that comes later (a restarted server) continues the same sequence.
    drop(a);
    let mut c = NatsStore::connect(&server.url, unbounded()).unwrap();
    assert_eq!(c.last_sequence("orders.eu").unwrap(), 5);
    assert_eq!(c.append("orders.eu", 3000, raw("6")).unwrap(), 6);
}

#[test]
fn subscription_state_is_seen_by_the_other_node_and_the_consumer_follows_the_floor() {
    let server = NatsServer::start();
    let mut a = NatsStore::connect(&server.url, unbounded()).unwrap();
    let mut b = NatsStore::connect(&server.url, unbounded()).unwrap();
    for i in 0..6 {
        a.append("jobs", i, raw(&i.to_string())).unwrap();
    }
    assert_eq!(b.load_subscription("worker 1").unwrap(), None);

    // A persistent subscriber on node A acknowledges 1, 2 and 4.
    let mut state = SubscriptionState::new("jobs", 0);
    for s in [1, 2, 4] {
        state.ack(s);
    }
    a.save_subscription("worker 1", &state).unwrap();

    // It moves to node B, which resumes where it acknowledged: 3, 5 and 6 are due again.
    let mut resumed = b.load_subscription("worker 1").unwrap().unwrap();
    assert_eq!(resumed, state);
    let due: Vec<u64> = read_all(&mut b, "jobs", resumed.ack_floor)
        .iter()
        .map(|m| m.sequence)
        .filter(|&s| !resumed.is_acked(s))
        .collect();
    assert_eq!(due, [3, 5, 6]);
    resumed.ack(3);
    resumed.ack(5);
    b.save_subscription("worker 1", &resumed).unwrap();
    let back = a.load_subscription("worker 1").unwrap().unwrap();
    assert_eq!((back.ack_floor, back.acked.len()), (5, 0));

    // The durable consumer of the subscription id carries the ack floor.
    let floor = inspect(&server.url, async |js| {
        let stream = js.get_stream("SANSRPC_jobs").await.unwrap();
        let info = stream.consumer_info("SANSRPC_worker_201").await.unwrap();
        (info.ack_floor.stream_sequence, info.config.durable_name)
    });
    assert_eq!(floor, (5, Some("SANSRPC_worker_201".to_owned())));

    // Acknowledging everything, then deleting: gone for both nodes, consumer included.
    resumed.ack(6);
    a.save_subscription("worker 1", &resumed).unwrap();
    assert_eq!(
        b.load_subscription("worker 1").unwrap().unwrap().ack_floor,
        6
    );
    b.delete_subscription("worker 1").unwrap();
    b.delete_subscription("never existed").unwrap();
    assert_eq!(a.load_subscription("worker 1").unwrap(), None);
    let consumers = inspect(&server.url, async |js| {
        let stream = js.get_stream("SANSRPC_jobs").await.unwrap();
        stream.get_info().await.unwrap().state.consumer_count
    });
    assert_eq!(consumers, 0);
}

#[test]
fn a_subscription_moved_to_another_topic_leaves_no_consumer_behind() {
    let server = NatsServer::start();
    let mut a = NatsStore::connect(&server.url, unbounded()).unwrap();
    a.append("one", 0, raw("1")).unwrap();
    a.save_subscription("s", &SubscriptionState::new("one", 0))
        .unwrap();
    a.save_subscription("s", &SubscriptionState::new("two", 0))
        .unwrap();
    let counts = inspect(&server.url, async |js| {
        let one = js.get_stream("SANSRPC_one").await.unwrap().get_info().await;
        let two = js.get_stream("SANSRPC_two").await.unwrap().get_info().await;
        (
            one.unwrap().state.consumer_count,
            two.unwrap().state.consumer_count,
        )
    });
    assert_eq!(counts, (0, 1));
    assert_eq!(a.load_subscription("s").unwrap().unwrap().topic, "two");
}

#[test]
fn retention_maps_to_stream_limits_and_sequences_continue_past_it() {
    let server = NatsServer::start();
    let mut policy = unbounded();
    policy.topics.insert(
        "small".into(),
        Retention {
            max_age: Some(Duration::from_secs(3600)),
            max_count: Some(3),
            max_bytes: Some(1 << 20),
        },
    );
    let mut a = NatsStore::connect(&server.url, policy.clone()).unwrap();
    for i in 1..=10u64 {
        assert_eq!(a.append("small", i, raw("\"x\"")).unwrap(), i);
        a.append("big", i, raw("1")).unwrap();
    }
    assert_eq!(sequences(&read_all(&mut a, "small", 0)), [8, 9, 10]);
    assert_eq!(read_all(&mut a, "big", 0).len(), 10);
    let limits = inspect(&server.url, async |js| {
        let info = js
            .get_stream("SANSRPC_small")
            .await
            .unwrap()
            .get_info()
            .await
            .unwrap();
        let c = info.config;
        (
            c.max_messages,
            c.max_bytes,
            c.max_age,
            c.subjects,
            c.discard,
        )
    });
    assert_eq!(
        limits,
        (
            3,
            1 << 20,
            Duration::from_secs(3600),
            vec!["sansrpc.log.small".to_owned()],
            jetstream::stream::DiscardPolicy::Old
        )
    );
    let mut b = NatsStore::connect(&server.url, policy).unwrap();
    assert_eq!(b.last_sequence("small").unwrap(), 10);
    assert_eq!(b.append("small", 11, raw("\"y\"")).unwrap(), 11);
    assert_eq!(sequences(&read_all(&mut a, "small", 0)), [9, 10, 11]);
    // A subscriber whose floor fell behind retention gets what is left, nothing older.
    assert_eq!(sequences(&read_all(&mut a, "small", 2)), [9, 10, 11]);
}

#[test]
fn retention_by_age_is_enforced_by_the_server() {
    let server = NatsServer::start();
    let mut policy = unbounded();
    policy.default.max_age = Some(Duration::from_secs(1));
    let mut a = NatsStore::connect(&server.url, policy).unwrap();
    a.append("fleeting", 0, raw("1")).unwrap();
    a.append("fleeting", 0, raw("2")).unwrap();
    a.expire(u64::MAX).unwrap(); // a no-op: the server has the clock
    wait_until(Duration::from_secs(30), "max_age applied", || {
        read_all(&mut a, "fleeting", 0).is_empty()
    });
    assert_eq!(a.last_sequence("fleeting").unwrap(), 2);
    assert_eq!(a.append("fleeting", 0, raw("3")).unwrap(), 3);
}

#[test]
fn bad_names_are_errors_and_a_dead_server_is_an_error_in_bounded_time() {
    let server = NatsServer::start();
    let mut a = NatsStore::connect(&server.url, unbounded()).unwrap();
    for topic in ["", "a.*", "a b", "a..b", "x.>"] {
        assert!(matches!(
            a.append(topic, 0, raw("1")),
            Err(Error::InvalidTopic(_))
        ));
        assert!(a.last_sequence(topic).is_err());
    }
    let long_id = "i".repeat(500);
    assert!(matches!(
        a.load_subscription(&long_id),
        Err(Error::IdTooLong(_))
    ));
    let url = server.url.clone();
    drop(server);
    assert!(NatsStore::connect(&url, unbounded()).is_err());
    // The existing connection keeps reconnecting; operations give up at the timeout.
    let started = std::time::Instant::now();
    assert!(a.append("after", 0, raw("1")).is_err());
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usable_from_inside_a_tokio_runtime() {
    let server = NatsServer::start();
    let mut a = NatsStore::connect(&server.url, unbounded()).unwrap();
    assert_eq!(a.append("in.tokio", 1, raw("1")).unwrap(), 1);
    let mut out = Vec::new();
    a.read("in.tokio", 0, 10, &mut out).unwrap();
    assert_eq!(out.len(), 1);
    // Dropping the store inside the runtime must not panic either.
    drop(a);
}

#[test]
fn retention_by_bytes_drops_the_oldest_and_refuses_what_could_never_be_kept() {
    let server = NatsServer::start();
    let mut policy = unbounded();
    policy.default.max_bytes = Some(600);
    let mut a = NatsStore::connect(&server.url, policy).unwrap();
    let data = format!("\"{}\"", "x".repeat(100));
    for i in 1..=10u64 {
        assert_eq!(a.append("sized", i, raw(&data)).unwrap(), i);
    }
    let kept = sequences(&read_all(&mut a, "sized", 0));
    assert!(kept.len() >= 2 && kept.len() < 6, "{kept:?}");
    assert_eq!(kept, ((11 - kept.len() as u64)..=10).collect::<Vec<_>>());
    // JetStream would accept a message over max_bytes and discard it at once; the store's
    // stream refuses it instead, and the log is untouched.
    let big = format!("\"{}\"", "y".repeat(1000));
    assert!(matches!(
        a.append("sized", 11, raw(&big)),
        Err(Error::Nats { .. })
    ));
    assert_eq!(sequences(&read_all(&mut a, "sized", 0)), kept);
    // One that fits alone is kept alone.
    let alone = format!("\"{}\"", "z".repeat(400));
    assert_eq!(a.append("sized", 12, raw(&alone)).unwrap(), 11);
    assert_eq!(sequences(&read_all(&mut a, "sized", 0)), [11]);
}

#[test]
fn subscriptions_are_listed_with_their_last_seen_time() {
    let server = NatsServer::start();
    let mut a = NatsStore::connect(&server.url, unbounded()).unwrap();
    let mut b = NatsStore::connect(&server.url, unbounded()).unwrap();
    let listed = |store: &mut NatsStore| {
        let mut out = Vec::new();
        store.subscriptions(&mut out).unwrap();
        out.sort();
        out
    };
    assert!(listed(&mut a).is_empty());
    let mut state = SubscriptionState::new("t", 0);
    state.last_seen_ms = 1_000;
    a.save_subscription("worker 1", &state).unwrap();
    state.last_seen_ms = 2_000;
    a.save_subscription("w.é", &state).unwrap();
    a.save_subscription("gone", &state).unwrap();
    a.delete_subscription("gone").unwrap();
    assert_eq!(
        listed(&mut b),
        [("w.é".to_owned(), 2_000), ("worker 1".to_owned(), 1_000)],
        "another node sees the same records, ids as they were given"
    );
}
