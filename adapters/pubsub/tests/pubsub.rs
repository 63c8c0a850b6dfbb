//! The pub/sub hub: the seed's exact shapes (WebSocket seed §10–11), matching, limits, the
//! slow-subscriber policy, cleanup, takeover, acknowledgements, redelivery and retention.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use sansrpc::{Instant, RawValue};
use sansrpc_pubsub::hub::{
    HubConfig, InlineHub, Report, SessionId, SUBSCRIPTION_IN_USE, TOO_MANY_PERSISTENT_IDS,
    TOO_MANY_SUBSCRIPTIONS,
};
use sansrpc_pubsub::store::{
    MemoryStore, Never, RetentionPolicy, Store, StoredMessage, SubscriptionState,
};
use serde_json::{json, Value};

#[path = "../../../tests/support/bypass.rs"]
mod bypass;

/// 2025-12-26T12:00:00Z, the seed's example timestamp.
const WALL: u64 = 1_766_750_400_000;

fn raw(v: &Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string()).unwrap()
}

fn hub() -> InlineHub<MemoryStore> {
    hub_with(HubConfig::default(), RetentionPolicy::default())
}

fn hub_with(config: HubConfig, retention: RetentionPolicy) -> InlineHub<MemoryStore> {
    InlineHub::new(MemoryStore::new(retention), config)
}

fn call<S: Store>(
    hub: &mut InlineHub<S>,
    s: SessionId,
    method: &str,
    params: Value,
) -> Result<Value, (i64, String)> {
    call_at(hub, s, method, params, Instant::ZERO)
}

fn call_at<S: Store>(
    hub: &mut InlineHub<S>,
    s: SessionId,
    method: &str,
    params: Value,
    now: Instant,
) -> Result<Value, (i64, String)> {
    let mut out = b"prefix".to_vec();
    let params = raw(&params);
    match hub
        .handle(s, method, Some(&params), now, &mut out)
        .expect("a hub method")
    {
        Ok(()) => {
            assert!(out.starts_with(b"prefix"), "appends, never clears");
            Ok(serde_json::from_slice(&out[6..]).unwrap())
        }
        Err(e) => {
            assert_eq!(out, b"prefix", "nothing written on error");
            Err((e.code, e.message.to_string()))
        }
    }
}

fn drain<S: Store>(hub: &mut InlineHub<S>, s: SessionId) -> Vec<(String, Value)> {
    std::iter::from_fn(|| hub.pop_outgoing(s))
        .map(|o| {
            (
                o.method().to_string(),
                serde_json::from_str(o.params().get()).unwrap(),
            )
        })
        .collect()
}

fn publish<S: Store>(hub: &mut InlineHub<S>, topic: &str, data: Value) -> usize {
    hub.publish(topic, &raw(&data), Instant::ZERO, WALL)
        .unwrap()
        .delivered
}

fn sequences(items: &[(String, Value)]) -> Vec<u64> {
    items
        .iter()
        .map(|(m, p)| {
            assert_eq!(m, "rpc.notification.persistent");
            p["sequence_id"].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn seed_pubsub_shapes() {
    let mut hub = hub();
    let (a, b) = (hub.connect(), hub.connect());
    assert_eq!(
        call(
            &mut hub,
            a,
            "rpc.subscribe",
            json!({"topic": "chat.messages"})
        ),
        Ok(json!({"subscribed": true}))
    );
    let data = json!({"from": "alice", "message": "Hello everyone!"});
    assert_eq!(publish(&mut hub, "chat.messages", data.clone()), 1);
    assert_eq!(hub.poll_woken(), Some(a));
    assert_eq!(hub.poll_woken(), None);
    let out = hub.pop_outgoing(a).unwrap();
    assert_eq!(out.method(), "rpc.notification");
    assert_eq!(
        out.params().get(),
        r#"{"topic":"chat.messages","data":{"from":"alice","message":"Hello everyone!"}}"#
    );
    assert!(hub.pop_outgoing(b).is_none());
    assert_eq!(
        call(
            &mut hub,
            a,
            "rpc.unsubscribe",
            json!({"topic": "chat.messages"})
        ),
        Ok(json!({"unsubscribed": true}))
    );
    assert_eq!(
        call(
            &mut hub,
            a,
            "rpc.unsubscribe",
            json!({"topic": "chat.messages"})
        ),
        Ok(json!({"unsubscribed": false})),
        "nothing to remove"
    );
    assert_eq!(
        call(
            &mut hub,
            a,
            "rpc.subscribe",
            json!({"topic": "stock.prices.*"})
        ),
        Ok(json!({"subscribed": true}))
    );
    assert_eq!(
        call(
            &mut hub,
            b,
            "rpc.subscribe.batch",
            json!({"topics": ["news", "alerts", "updates"]})
        ),
        Ok(json!({"subscribed": ["news", "alerts", "updates"]}))
    );
    assert_eq!(
        call(
            &mut hub,
            b,
            "rpc.unsubscribe.batch",
            json!({"topics": ["news", "alerts"]})
        ),
        Ok(json!({"unsubscribed": ["news", "alerts"]}))
    );
    assert_eq!(hub.subscriptions(b), 1);
    // By position as well as by name.
    assert_eq!(
        call(&mut hub, b, "rpc.subscribe", json!(["x.y"])),
        Ok(json!({"subscribed": true}))
    );
    let mut out = Vec::new();
    assert!(hub
        .handle(a, "publish", None, Instant::ZERO, &mut out)
        .is_none());
}

/// A waker that counts its wakes.
struct Counting(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Counting {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn a_woken_session_comes_out_once_in_order_with_its_waker_and_never_once_gone() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let mut hub = hub();
    let counters: Vec<Arc<Counting>> = (0..3)
        .map(|_| Arc::new(Counting(AtomicUsize::new(0))))
        .collect();
    let sessions: Vec<SessionId> = counters
        .iter()
        .map(|c| hub.connect_waking(std::task::Waker::from(Arc::clone(c))))
        .collect();
    let plain = hub.connect();
    for &s in sessions.iter().chain([&plain]) {
        let sub = call(&mut hub, s, "rpc.subscribe", json!({"topic": "t"}));
        assert_eq!(sub, Ok(json!({"subscribed": true})));
    }
    // Woken once however many times it is queued something before it is handed out.
    assert_eq!(publish(&mut hub, "t", json!(1)), 4);
    assert_eq!(publish(&mut hub, "t", json!(2)), 4);
    let mut woken = Vec::new();
    while let Some((s, waker)) = hub.poll_woken_waker() {
        woken.push((s, waker.is_some()));
        waker.into_iter().for_each(std::task::Waker::wake);
    }
    let expected: Vec<(SessionId, bool)> = sessions
        .iter()
        .map(|&s| (s, true))
        .chain([(plain, false)])
        .collect();
    assert_eq!(woken, expected, "in the order queued, each once");
    let wakes: Vec<usize> = counters
        .iter()
        .map(|c| c.0.load(Ordering::Relaxed))
        .collect();
    assert_eq!(wakes, [1, 1, 1]);
    // Handed out, it is put back by the next publish (its queue untouched meanwhile).
    assert_eq!(publish(&mut hub, "t", json!(3)), 4);
    assert_eq!(hub.poll_woken(), Some(sessions[0]));
    // One gone while it waits in the list is never handed out; the others keep their order.
    hub.disconnect(sessions[1]);
    assert_eq!(hub.poll_woken(), Some(sessions[2]));
    assert_eq!(hub.poll_woken(), Some(plain));
    assert_eq!(hub.poll_woken(), None);
    // A session gone after it was handed out leaves nothing behind either.
    assert_eq!(publish(&mut hub, "t", json!(4)), 3);
    hub.disconnect(sessions[0]);
    assert_eq!(hub.poll_woken_waker().map(|(s, _)| s), Some(sessions[2]));
    assert_eq!(
        hub.poll_woken_waker().map(|(s, w)| (s, w.is_some())),
        Some((plain, false))
    );
    assert!(hub.poll_woken_waker().is_none());
    assert_eq!(
        drain(&mut hub, sessions[2]).len(),
        4,
        "every notification kept"
    );
}

/// A session whose connection's driver parked with nothing queued (`Hub::open_bypass`)
/// has each publish written through the bypass as it is published, as the connection's
/// output would write it, and is not woken. One taken in part ends it (the session is woken
/// for the rest, and what follows is queued); so does one not taken at all (queued, and
/// woken). It is not opened while anything waits for the connection, and a session gone
/// lets go of it.
#[test]
fn a_parked_sessions_publishes_are_written_past_its_connection_until_one_is_not_taken_whole() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use bypass::Socket;
    use sansrpc::connection::bypass::Bypass;

    let mut hub = hub();
    let wakes = Arc::new(Counting(AtomicUsize::new(0)));
    let parked = hub.connect_waking(std::task::Waker::from(Arc::clone(&wakes)));
    // Another subscriber, served as usual: what its connection gets is the reference.
    let other = hub.connect();
    for s in [parked, other] {
        let sub = call(&mut hub, s, "rpc.subscribe", json!({"topic": "t.*"}));
        assert_eq!(sub, Ok(json!({"subscribed": true})));
    }
    let socket = Arc::new(Socket::default());
    socket.room(usize::MAX);
    let bypass: Arc<dyn Bypass> = socket.clone();
    let idle = hub.connect();
    assert!(
        !hub.open_bypass(idle, Arc::clone(&bypass)),
        "subscribes to nothing"
    );
    // Each publish as the connection's output writes it: the hub's notification whole.
    let sent = |hub: &mut InlineHub<MemoryStore>, n: u64| {
        assert_eq!(publish(hub, "t.x", json!(n)), 2);
        let item = hub.pop_outgoing(other).unwrap();
        assert_eq!(hub.pop_outgoing(other).map(|o| o.method()), None);
        format!(
            r#"{{"jsonrpc":"2.0","method":"rpc.notification","params":{}}}"#,
            item.params().get()
        )
    };
    let woken = |hub: &mut InlineHub<MemoryStore>| {
        std::iter::from_fn(|| hub.poll_woken()).collect::<Vec<_>>()
    };

    assert!(hub.open_bypass(parked, Arc::clone(&bypass)));
    let expected = sent(&mut hub, 1) + &sent(&mut hub, 2);
    assert_eq!(socket.took(), expected);
    assert_eq!(hub.queued(parked), 0);
    assert_eq!(woken(&mut hub), [other], "the parked session is not woken");
    assert_eq!(wakes.0.load(Ordering::Relaxed), 0);

    // Taken in part: the rest stays with the transport, the session is woken for it, and
    // the next publish is queued.
    socket.room(10);
    let third = sent(&mut hub, 3);
    assert_eq!(socket.took() + &socket.rest(), third);
    socket.room(usize::MAX);
    sent(&mut hub, 4);
    assert_eq!(socket.took(), "");
    let queued = drain(&mut hub, parked);
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].1["data"], json!(4));
    assert_eq!(woken(&mut hub), [parked, other]);

    // Not opened while something waits for the connection.
    sent(&mut hub, 5);
    assert!(
        !hub.open_bypass(parked, Arc::clone(&bypass)),
        "a notification queued"
    );
    assert_eq!(drain(&mut hub, parked).len(), 1);
    assert!(
        !hub.open_bypass(parked, Arc::clone(&bypass)),
        "woken, not looked at yet"
    );
    woken(&mut hub);

    // Not taken at all: queued, woken, and the bypass is over.
    assert!(hub.open_bypass(parked, Arc::clone(&bypass)));
    socket.room(0);
    sent(&mut hub, 6);
    socket.room(usize::MAX);
    sent(&mut hub, 7);
    assert_eq!(socket.took(), "");
    assert_eq!(drain(&mut hub, parked).len(), 2);
    assert_eq!(woken(&mut hub), [parked, other]);

    // Closed by the connection's driver: queued again.
    assert!(hub.open_bypass(parked, Arc::clone(&bypass)));
    hub.close_bypass(parked);
    sent(&mut hub, 8);
    assert_eq!((socket.took(), hub.queued(parked)), (String::new(), 1));
    drain(&mut hub, parked);
    woken(&mut hub);

    // A session gone lets go of what writes for it.
    assert!(hub.open_bypass(parked, Arc::clone(&bypass)));
    assert_eq!(Arc::strong_count(&socket), 3);
    hub.disconnect(parked);
    assert_eq!(Arc::strong_count(&socket), 2);
}

#[test]
fn seed_persistent_shapes() {
    let mut hub = hub();
    for i in 0..42 {
        publish(&mut hub, "orders", json!(i));
    }
    let a = hub.connect();
    assert_eq!(
        call(
            &mut hub,
            a,
            "rpc.subscribe.persistent",
            json!({"subscription_id": "order-processor-1", "topic": "orders"})
        ),
        Ok(
            json!({"subscription_id": "order-processor-1", "topic": "orders", "resumed_from_sequence": 42})
        )
    );
    let data = json!({"order_id": "ORD-12345", "status": "confirmed"});
    hub.publish("orders", &raw(&data), Instant::ZERO, WALL)
        .unwrap();
    let out = hub.pop_outgoing(a).unwrap();
    assert_eq!(out.method(), "rpc.notification.persistent");
    assert_eq!(
        out.params().get(),
        r#"{"subscription_id":"order-processor-1","topic":"orders","sequence_id":43,"timestamp":"2025-12-26T12:00:00Z","data":{"order_id":"ORD-12345","status":"confirmed"}}"#
    );
    assert_eq!(
        call(
            &mut hub,
            a,
            "rpc.acknowledge.persistent",
            json!({"subscription_id": "order-processor-1", "sequence_id": 43})
        ),
        Ok(json!({"acknowledged": true}))
    );
    assert_eq!(
        call(
            &mut hub,
            a,
            "rpc.acknowledge.persistent",
            json!({"subscription_id": "order-processor-1", "sequence_id": 44})
        ),
        Ok(json!({"acknowledged": false})),
        "never delivered"
    );
    assert_eq!(
        call(
            &mut hub,
            a,
            "rpc.unsubscribe.persistent",
            json!({"subscription_id": "order-processor-1"})
        ),
        Ok(json!({"unsubscribed": true}))
    );
    assert_eq!(
        hub.store_mut()
            .load_subscription("order-processor-1")
            .unwrap(),
        None,
        "unsubscribing forgets the subscription"
    );
}

#[test]
fn seed_persistent_batch_shapes() {
    let mut hub = hub();
    let setup = hub.connect();
    for (id, topic, n) in [
        ("order-proc", "orders", 10),
        ("payment-proc", "payments", 5),
    ] {
        call(
            &mut hub,
            setup,
            "rpc.subscribe.persistent",
            json!({"subscription_id": id, "topic": topic}),
        )
        .unwrap();
        for i in 0..n {
            publish(&mut hub, topic, json!(i));
        }
        let items = drain(&mut hub, setup);
        for s in sequences(&items) {
            call(
                &mut hub,
                setup,
                "rpc.acknowledge.persistent",
                json!({"subscription_id": id, "sequence_id": s}),
            )
            .unwrap();
        }
    }
    hub.disconnect(setup);
    for i in 0..3 {
        publish(&mut hub, "orders", json!(i));
    }
    publish(&mut hub, "payments", json!(0));
    let a = hub.connect();
    assert_eq!(
        call(
            &mut hub,
            a,
            "rpc.subscribe.persistent.batch",
            json!({"subscriptions": [
                {"subscription_id": "order-proc", "topic": "orders"},
                {"subscription_id": "payment-proc", "topic": "payments"}
            ]})
        ),
        Ok(json!({"subscriptions": [
            {"subscription_id": "order-proc", "resumed_from_sequence": 10},
            {"subscription_id": "payment-proc", "resumed_from_sequence": 5}
        ]}))
    );
    assert_eq!(sequences(&drain(&mut hub, a)), [11, 12, 13, 6]);
    assert_eq!(
        call(
            &mut hub,
            a,
            "rpc.acknowledge.persistent.batch",
            json!({"acknowledgments": [
                {"subscription_id": "order-proc", "sequence_id": 11},
                {"subscription_id": "order-proc", "sequence_id": 12},
                {"subscription_id": "payment-proc", "sequence_id": 6},
                {"subscription_id": "nobody", "sequence_id": 1}
            ]})
        ),
        Ok(json!({"acknowledged": [
            {"subscription_id": "order-proc", "sequence_id": 11, "success": true},
            {"subscription_id": "order-proc", "sequence_id": 12, "success": true},
            {"subscription_id": "payment-proc", "sequence_id": 6, "success": true},
            {"subscription_id": "nobody", "sequence_id": 1, "success": false}
        ]}))
    );
    assert_eq!(
        call(
            &mut hub,
            a,
            "rpc.unsubscribe.persistent.batch",
            json!({"subscription_ids": ["order-proc", "nobody"]})
        ),
        Ok(json!({"unsubscribed": ["order-proc"]}))
    );
    assert_eq!(hub.subscriptions(a), 1);
}

#[test]
fn wildcards_match_and_a_session_gets_one_copy() {
    let mut hub = hub();
    let (a, b, c) = (hub.connect(), hub.connect(), hub.connect());
    call(
        &mut hub,
        a,
        "rpc.subscribe.batch",
        json!({"topics": ["events.*", "events.>", "events.user"]}),
    )
    .unwrap();
    call(&mut hub, b, "rpc.subscribe", json!({"topic": "events.>"})).unwrap();
    call(
        &mut hub,
        c,
        "rpc.subscribe",
        json!({"topic": "events.*.login"}),
    )
    .unwrap();
    assert_eq!(publish(&mut hub, "events.user", json!(1)), 2);
    assert_eq!(
        drain(&mut hub, a).len(),
        1,
        "three patterns, one notification"
    );
    assert_eq!(publish(&mut hub, "events.user.login", json!(2)), 3);
    assert_eq!(drain(&mut hub, a).len(), 1);
    assert_eq!(drain(&mut hub, b).len(), 2);
    assert_eq!(drain(&mut hub, c).len(), 1);
    assert_eq!(publish(&mut hub, "events", json!(3)), 0);
}

#[test]
fn malformed_topics_are_invalid_params() {
    let mut hub = hub();
    let a = hub.connect();
    for bad in ["", "a..b", "a b", "a*", ">.a", "a.>.b"] {
        let e = call(&mut hub, a, "rpc.subscribe", json!({"topic": bad})).unwrap_err();
        assert_eq!(e.0, -32602, "{bad:?}: {e:?}");
    }
    let e = call(&mut hub, a, "rpc.unsubscribe", json!({"topic": "a..b"})).unwrap_err();
    assert_eq!(e.0, -32602);
    let e = call(
        &mut hub,
        a,
        "rpc.unsubscribe.batch",
        json!({"topics": ["a", "a*"]}),
    )
    .unwrap_err();
    assert_eq!(e.0, -32602);
    let e = call(&mut hub, a, "rpc.subscribe", json!({"topics": "x"})).unwrap_err();
    assert_eq!(e.0, -32602);
    // A batch is all or nothing.
    let e = call(
        &mut hub,
        a,
        "rpc.subscribe.batch",
        json!({"topics": ["ok", "not ok"]}),
    )
    .unwrap_err();
    assert_eq!(e.0, -32602);
    assert_eq!(hub.subscriptions(a), 0);
    for bad in ["a.*", "a.>"] {
        let e = hub
            .publish(bad, &raw(&json!(1)), Instant::ZERO, WALL)
            .unwrap_err();
        assert_eq!(e.to_error_object().code, -32602);
        let e = call(
            &mut hub,
            a,
            "rpc.subscribe.persistent",
            json!({"subscription_id": "p", "topic": bad}),
        )
        .unwrap_err();
        assert_eq!(e.0, -32602);
        assert!(e.1.contains("exact topic"), "{}", e.1);
    }
    let e = call(
        &mut hub,
        a,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "", "topic": "t"}),
    )
    .unwrap_err();
    assert_eq!(e.0, -32602);
}

#[test]
fn subscription_and_batch_limits() {
    let mut config = HubConfig::default();
    config.max_subscriptions = 3;
    config.max_batch = 4;
    let mut hub = hub_with(config, RetentionPolicy::default());
    let a = hub.connect();
    call(
        &mut hub,
        a,
        "rpc.subscribe.batch",
        json!({"topics": ["a", "b"]}),
    )
    .unwrap();
    // Subscribing again to a pattern one already has costs nothing.
    call(&mut hub, a, "rpc.subscribe", json!({"topic": "a"})).unwrap();
    call(
        &mut hub,
        a,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "p", "topic": "t"}),
    )
    .unwrap();
    let e = call(&mut hub, a, "rpc.subscribe", json!({"topic": "c"})).unwrap_err();
    assert_eq!(e.0, TOO_MANY_SUBSCRIPTIONS);
    let e = call(
        &mut hub,
        a,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "q", "topic": "t"}),
    )
    .unwrap_err();
    assert_eq!(e.0, TOO_MANY_SUBSCRIPTIONS);
    call(&mut hub, a, "rpc.unsubscribe", json!({"topic": "a"})).unwrap();
    call(&mut hub, a, "rpc.subscribe", json!({"topic": "c"})).unwrap();
    let e = call(
        &mut hub,
        a,
        "rpc.unsubscribe.batch",
        json!({"topics": ["1", "2", "3", "4", "5"]}),
    )
    .unwrap_err();
    assert_eq!(e.0, -32602);
}

#[test]
fn a_full_queue_drops_the_oldest_and_reports_once() {
    let mut config = HubConfig::default();
    config.max_queued = 3;
    let mut hub = hub_with(config, RetentionPolicy::default());
    let a = hub.connect();
    call(&mut hub, a, "rpc.subscribe", json!({"topic": "t"})).unwrap();
    for i in 0..5 {
        publish(&mut hub, "t", json!(i));
    }
    assert_eq!(hub.queued(a), 3);
    assert_eq!(hub.dropped(a), 2);
    let reports: Vec<Report> = std::iter::from_fn(|| hub.poll_report()).collect();
    assert_eq!(
        reports,
        [Report::Dropped {
            session: a,
            total: 1
        }]
    );
    let data: Vec<Value> = drain(&mut hub, a)
        .into_iter()
        .map(|(_, p)| p["data"].clone())
        .collect();
    assert_eq!(data, [json!(2), json!(3), json!(4)]);
    // Bytes too: one big message pushes out the small ones.
    let mut config = HubConfig::default();
    config.max_queued_bytes = 100;
    let mut hub = hub_with(config, RetentionPolicy::default());
    let a = hub.connect();
    call(&mut hub, a, "rpc.subscribe", json!({"topic": "t"})).unwrap();
    publish(&mut hub, "t", json!(1));
    publish(&mut hub, "t", json!(2));
    publish(&mut hub, "t", json!("x".repeat(70)));
    assert_eq!((hub.queued(a), hub.dropped(a)), (1, 2));
}

#[test]
fn disconnect_removes_every_subscription() {
    let mut hub = hub();
    let (a, b) = (hub.connect(), hub.connect());
    call(
        &mut hub,
        a,
        "rpc.subscribe.batch",
        json!({"topics": ["x", "y.*", ">"]}),
    )
    .unwrap();
    call(
        &mut hub,
        a,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "p", "topic": "x"}),
    )
    .unwrap();
    publish(&mut hub, "x", json!(1));
    hub.disconnect(a);
    assert_eq!(
        (hub.sessions(), hub.subscriptions(a), hub.queued(a)),
        (1, 0, 0)
    );
    assert_eq!(publish(&mut hub, "x", json!(2)), 0);
    assert_eq!(publish(&mut hub, "y.z", json!(3)), 0);
    // The persistent subscription is released, not forgotten: b may take it.
    assert_eq!(
        call(
            &mut hub,
            b,
            "rpc.subscribe.persistent",
            json!({"subscription_id": "p", "topic": "x"})
        ),
        Ok(json!({"subscription_id": "p", "topic": "x", "resumed_from_sequence": 0}))
    );
    assert_eq!(sequences(&drain(&mut hub, b)), [1, 2]);
    assert_eq!(
        std::iter::from_fn(|| hub.poll_report()).count(),
        0,
        "no takeover"
    );
}

#[test]
fn a_second_connection_takes_a_persistent_subscription_over() {
    let mut hub = hub();
    let (a, b) = (hub.connect(), hub.connect());
    let sub = json!({"subscription_id": "p", "topic": "t"});
    call(&mut hub, a, "rpc.subscribe.persistent", sub.clone()).unwrap();
    publish(&mut hub, "t", json!(1));
    assert_eq!(sequences(&drain(&mut hub, a)), [1]);
    call(&mut hub, b, "rpc.subscribe.persistent", sub.clone()).unwrap();
    assert_eq!(
        hub.poll_report(),
        Some(Report::TakenOver {
            subscription_id: "p".into(),
            from: a,
            to: b
        })
    );
    assert_eq!(
        sequences(&drain(&mut hub, b)),
        [1],
        "the unacknowledged message follows"
    );
    publish(&mut hub, "t", json!(2));
    assert!(drain(&mut hub, a).is_empty());
    assert_eq!(sequences(&drain(&mut hub, b)), [2]);
    assert_eq!((hub.subscriptions(a), hub.subscriptions(b)), (0, 1));
    let e = call(
        &mut hub,
        a,
        "rpc.acknowledge.persistent",
        json!({"subscription_id": "p", "sequence_id": 1}),
    )
    .unwrap_err();
    assert_eq!(e.0, -32602, "not a's any more");

    let mut config = HubConfig::default();
    config.takeover = false;
    let mut hub = hub_with(config, RetentionPolicy::default());
    let (a, b) = (hub.connect(), hub.connect());
    call(&mut hub, a, "rpc.subscribe.persistent", sub.clone()).unwrap();
    let e = call(&mut hub, b, "rpc.subscribe.persistent", sub.clone()).unwrap_err();
    assert_eq!(e.0, SUBSCRIPTION_IN_USE);
    hub.disconnect(a);
    call(&mut hub, b, "rpc.subscribe.persistent", sub).unwrap();
}

#[test]
fn unacknowledged_messages_come_again_after_the_ack_timeout() {
    let mut config = HubConfig::default();
    config.ack_timeout = Duration::from_secs(30);
    let mut hub = hub_with(config, RetentionPolicy::default());
    let a = hub.connect();
    call(
        &mut hub,
        a,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "p", "topic": "t"}),
    )
    .unwrap();
    let t0 = Instant::from_millis(1000);
    hub.handle_timeout(t0, WALL);
    for i in 0..3 {
        hub.publish("t", &raw(&json!(i)), t0, WALL).unwrap();
    }
    assert_eq!(sequences(&drain(&mut hub, a)), [1, 2, 3]);
    call_at(
        &mut hub,
        a,
        "rpc.acknowledge.persistent",
        json!({"subscription_id": "p", "sequence_id": 2}),
        t0,
    )
    .unwrap();
    assert_eq!(
        hub.poll_timeout(),
        Some(t0 + Duration::from_secs(10)),
        "retention pass first"
    );
    hub.handle_timeout(t0 + Duration::from_secs(10), WALL);
    assert!(drain(&mut hub, a).is_empty());
    assert_eq!(hub.poll_timeout(), Some(t0 + Duration::from_secs(20)));
    hub.handle_timeout(t0 + Duration::from_secs(20), WALL);
    assert_eq!(
        hub.poll_timeout(),
        Some(t0 + Duration::from_secs(30)),
        "the ack deadline"
    );
    hub.handle_timeout(t0 + Duration::from_secs(30), WALL);
    assert_eq!(sequences(&drain(&mut hub, a)), [1, 3]);
    assert_eq!(hub.poll_woken(), Some(a));
    assert_eq!(hub.poll_timeout(), Some(t0 + Duration::from_secs(40)));
    let t1 = t0 + Duration::from_secs(40);
    hub.handle_timeout(t1, WALL);
    assert_eq!(
        sequences(&drain(&mut hub, a)),
        Vec::<u64>::new(),
        "the next pass is retention only"
    );
    // Acknowledged or released deliveries leave no deadline behind.
    call_at(
        &mut hub,
        a,
        "rpc.acknowledge.persistent",
        json!({"subscription_id": "p", "sequence_id": 1}),
        t1,
    )
    .unwrap();
    assert_eq!(hub.poll_timeout(), Some(t0 + Duration::from_secs(50)));
    hub.disconnect(a);
    hub.handle_timeout(t0 + Duration::from_secs(50), WALL);
    hub.handle_timeout(t0 + Duration::from_secs(60), WALL);
    assert_eq!(
        hub.poll_timeout(),
        Some(t0 + Duration::from_secs(70)),
        "only retention: 3's deadline (60 s) went with the session"
    );
}

#[test]
fn reconnecting_redelivers_from_the_ack_floor() {
    let mut hub = hub();
    let sub = json!({"subscription_id": "p", "topic": "t"});
    let a = hub.connect();
    call(&mut hub, a, "rpc.subscribe.persistent", sub.clone()).unwrap();
    for i in 0..4 {
        publish(&mut hub, "t", json!(i));
    }
    assert_eq!(sequences(&drain(&mut hub, a)), [1, 2, 3, 4]);
    for s in [1, 3] {
        call(
            &mut hub,
            a,
            "rpc.acknowledge.persistent",
            json!({"subscription_id": "p", "sequence_id": s}),
        )
        .unwrap();
    }
    hub.disconnect(a);
    publish(&mut hub, "t", json!(4));
    let b = hub.connect();
    assert_eq!(
        call(&mut hub, b, "rpc.subscribe.persistent", sub.clone()),
        Ok(json!({"subscription_id": "p", "topic": "t", "resumed_from_sequence": 1}))
    );
    assert_eq!(
        sequences(&drain(&mut hub, b)),
        [2, 4, 5],
        "3 was acknowledged out of order"
    );
    // Subscribing again on the same connection sends the unacknowledged ones again.
    call(&mut hub, b, "rpc.subscribe.persistent", sub.clone()).unwrap();
    assert_eq!(sequences(&drain(&mut hub, b)), [2, 4, 5]);
    let e = call(
        &mut hub,
        b,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "p", "topic": "other"}),
    )
    .unwrap_err();
    assert_eq!(e.0, -32602, "an id stays bound to its topic");
}

#[test]
fn the_in_flight_window_is_bounded() {
    let mut config = HubConfig::default();
    config.max_in_flight = 2;
    let mut hub = hub_with(config, RetentionPolicy::default());
    let a = hub.connect();
    call(
        &mut hub,
        a,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "p", "topic": "t"}),
    )
    .unwrap();
    for i in 0..5 {
        publish(&mut hub, "t", json!(i));
    }
    assert_eq!(sequences(&drain(&mut hub, a)), [1, 2]);
    call(
        &mut hub,
        a,
        "rpc.acknowledge.persistent",
        json!({"subscription_id": "p", "sequence_id": 2}),
    )
    .unwrap();
    assert_eq!(sequences(&drain(&mut hub, a)), [3]);
    call(
        &mut hub,
        a,
        "rpc.acknowledge.persistent",
        json!({"subscription_id": "p", "sequence_id": 1}),
    )
    .unwrap();
    assert_eq!(sequences(&drain(&mut hub, a)), [4]);
}

#[test]
fn retention_by_count_and_age() {
    let mut retention = RetentionPolicy::default();
    retention.default.max_count = Some(2);
    retention.default.max_age = Some(Duration::from_secs(60));
    let mut hub = hub_with(HubConfig::default(), retention);
    let sub = json!({"subscription_id": "p", "topic": "t"});
    let a = hub.connect();
    call(&mut hub, a, "rpc.subscribe.persistent", sub.clone()).unwrap();
    hub.disconnect(a);
    for i in 0..5 {
        publish(&mut hub, "t", json!(i));
    }
    let b = hub.connect();
    call(&mut hub, b, "rpc.subscribe.persistent", sub.clone()).unwrap();
    assert_eq!(sequences(&drain(&mut hub, b)), [4, 5], "1 to 3 are gone");
    hub.disconnect(b);
    // Both left unacknowledged expire with age.
    hub.handle_timeout(Instant::ZERO, WALL + 61_000);
    let c = hub.connect();
    assert_eq!(
        call(&mut hub, c, "rpc.subscribe.persistent", sub.clone()),
        Ok(json!({"subscription_id": "p", "topic": "t", "resumed_from_sequence": 3})),
        "the floor rose over what retention removed"
    );
    assert!(drain(&mut hub, c).is_empty());
    publish(&mut hub, "t", json!(6));
    assert_eq!(sequences(&drain(&mut hub, c)), [6]);
}

/// A [`MemoryStore`] that fails every call while `broken` is set: the hub must answer
/// `-32603` and tell the operator.
struct Flaky {
    inner: MemoryStore,
    broken: Rc<Cell<bool>>,
}

impl Flaky {
    fn check(&self) -> Result<(), String> {
        if self.broken.get() {
            Err("disk on fire".into())
        } else {
            Ok(())
        }
    }
}

fn never(e: Never) -> String {
    match e {}
}

impl Store for Flaky {
    type Error = String;
    fn append(&mut self, topic: &str, ts: u64, data: &RawValue) -> Result<u64, String> {
        self.check()?;
        self.inner.append(topic, ts, data).map_err(never)
    }
    fn last_sequence(&mut self, topic: &str) -> Result<u64, String> {
        self.check()?;
        self.inner.last_sequence(topic).map_err(never)
    }
    fn read(
        &mut self,
        topic: &str,
        after: u64,
        max: usize,
        out: &mut Vec<StoredMessage>,
    ) -> Result<(), String> {
        self.check()?;
        self.inner.read(topic, after, max, out).map_err(never)
    }
    fn load_subscription(&mut self, id: &str) -> Result<Option<SubscriptionState>, String> {
        self.check()?;
        self.inner.load_subscription(id).map_err(never)
    }
    fn save_subscription(&mut self, id: &str, state: &SubscriptionState) -> Result<(), String> {
        self.check()?;
        self.inner.save_subscription(id, state).map_err(never)
    }
    fn delete_subscription(&mut self, id: &str) -> Result<(), String> {
        self.check()?;
        self.inner.delete_subscription(id).map_err(never)
    }
    fn expire(&mut self, now_ms: u64) -> Result<(), String> {
        self.check()?;
        self.inner.expire(now_ms).map_err(never)
    }
    fn subscriptions(&mut self, out: &mut Vec<(String, u64)>) -> Result<(), String> {
        self.check()?;
        self.inner.subscriptions(out).map_err(never)
    }
}

#[test]
fn store_failures_are_internal_errors_and_reported() {
    let broken = Rc::new(Cell::new(false));
    let store = Flaky {
        inner: MemoryStore::default(),
        broken: broken.clone(),
    };
    let mut hub = InlineHub::new(store, HubConfig::default());
    let a = hub.connect();
    call(&mut hub, a, "rpc.subscribe", json!({"topic": "t"})).unwrap();
    call(
        &mut hub,
        a,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "p", "topic": "t"}),
    )
    .unwrap();
    broken.set(true);
    let e = call(
        &mut hub,
        a,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "q", "topic": "t"}),
    )
    .unwrap_err();
    assert_eq!(e.0, -32603);
    assert!(
        !e.1.contains("fire"),
        "store details stay with the operator"
    );
    let err = hub
        .publish("t", &raw(&json!(1)), Instant::ZERO, WALL)
        .unwrap_err();
    assert_eq!(err.to_error_object().code, -32603);
    assert_eq!(
        drain(&mut hub, a).len(),
        1,
        "the ephemeral fan-out still happened"
    );
    let reports: Vec<String> = std::iter::from_fn(|| hub.poll_report())
        .map(|r| r.to_string())
        .collect();
    assert_eq!(reports.len(), 2);
    assert!(
        reports.iter().all(|r| r.contains("disk on fire")),
        "{reports:?}"
    );
    broken.set(false);
    call(
        &mut hub,
        a,
        "rpc.subscribe.persistent",
        json!({"subscription_id": "q", "topic": "t"}),
    )
    .unwrap();
}

#[test]
fn timestamps_are_rfc3339() {
    let cases = [
        (0, "1970-01-01T00:00:00Z"),
        (WALL, "2025-12-26T12:00:00Z"),
        (951_782_400_123, "2000-02-29T00:00:00.123Z"),
        (u64::MAX, "9999-12-31T23:59:59.999Z"),
    ];
    for (ms, text) in cases {
        let mut s = String::new();
        sansrpc_pubsub::hub::write_rfc3339(&mut s, ms);
        assert_eq!(s, text);
    }
}

#[test]
fn retention_under_a_live_subscriber_does_not_strand_the_floor() {
    let mut retention = RetentionPolicy::default();
    retention.default.max_count = Some(2);
    let mut config = HubConfig::default();
    config.max_in_flight = 2;
    let mut hub = hub_with(config, retention);
    let sub = json!({"subscription_id": "p", "topic": "t"});
    let a = hub.connect();
    call(&mut hub, a, "rpc.subscribe.persistent", sub.clone()).unwrap();
    for i in 0..6 {
        publish(&mut hub, "t", json!(i));
    }
    // 1 and 2 went out; 3 and 4 were removed unseen (1 and 2 as well); 5 and 6 remain.
    assert_eq!(sequences(&drain(&mut hub, a)), [1, 2]);
    call(
        &mut hub,
        a,
        "rpc.acknowledge.persistent",
        json!({"subscription_id": "p", "sequence_id": 2}),
    )
    .unwrap();
    assert_eq!(sequences(&drain(&mut hub, a)), [5, 6], "the gap is skipped");
    for s in [5, 6] {
        call(
            &mut hub,
            a,
            "rpc.acknowledge.persistent",
            json!({"subscription_id": "p", "sequence_id": s}),
        )
        .unwrap();
    }
    hub.disconnect(a);
    let b = hub.connect();
    assert_eq!(
        call(&mut hub, b, "rpc.subscribe.persistent", sub),
        Ok(json!({"subscription_id": "p", "topic": "t", "resumed_from_sequence": 6})),
        "1 (never acknowledged, now gone) and 3 to 4 do not hold the floor back"
    );
    assert_eq!(
        hub.store_mut()
            .load_subscription("p")
            .unwrap()
            .unwrap()
            .acked,
        Vec::<u64>::new()
    );
}

fn subscribe_id(
    hub: &mut InlineHub<impl Store>,
    s: SessionId,
    id: &str,
) -> Result<Value, (i64, String)> {
    call(
        hub,
        s,
        "rpc.subscribe.persistent",
        json!({"subscription_id": id, "topic": "t"}),
    )
}

#[test]
fn the_server_keeps_a_bounded_number_of_persistent_ids() {
    let mut config = HubConfig::default();
    config.max_persistent_ids = 5;
    config.persistent_idle_timeout = None;
    let mut hub = hub_with(config, RetentionPolicy::default());
    // Ids from several connections, kept after they close, count together.
    for round in 0..2 {
        let s = hub.connect();
        for i in 0..2 {
            subscribe_id(&mut hub, s, &format!("r{round}-{i}")).unwrap();
        }
        hub.disconnect(s);
    }
    let a = hub.connect();
    subscribe_id(&mut hub, a, "fifth").unwrap();
    let e = subscribe_id(&mut hub, a, "sixth").unwrap_err();
    assert_eq!(e.0, TOO_MANY_PERSISTENT_IDS, "{}", e.1);
    assert!(e.1.contains("at most 5"), "{}", e.1);
    // A batch that would cross the bound changes nothing.
    let e = call(
        &mut hub,
        a,
        "rpc.subscribe.persistent.batch",
        json!({"subscriptions": [
            {"subscription_id": "r0-0", "topic": "t"},
            {"subscription_id": "new", "topic": "t"}
        ]}),
    )
    .unwrap_err();
    assert_eq!(e.0, TOO_MANY_PERSISTENT_IDS);
    assert_eq!(stored_ids(&mut hub).len(), 5);
    // Known ids are always served, on any connection, attached or not.
    let b = hub.connect();
    for id in ["r0-0", "r1-1", "fifth"] {
        subscribe_id(&mut hub, b, id).unwrap();
    }
    // Unsubscribing frees a place.
    call(
        &mut hub,
        b,
        "rpc.unsubscribe.persistent",
        json!({"subscription_id": "r0-1"}),
    )
    .unwrap();
    subscribe_id(&mut hub, a, "sixth").unwrap();
    assert_eq!(
        subscribe_id(&mut hub, a, "seventh").unwrap_err().0,
        TOO_MANY_PERSISTENT_IDS
    );
}

#[test]
fn idle_persistent_ids_are_deleted_and_free_their_place() {
    let mut config = HubConfig::default();
    config.max_persistent_ids = 2;
    config.persistent_idle_timeout = Some(Duration::from_secs(160));
    config.expire_interval = Duration::from_secs(10);
    let mut hub = hub_with(config, RetentionPolicy::default());
    let t = |secs: u64| Instant::from_millis(secs * 1000);
    let wall = |secs: u64| WALL + secs * 1000;
    hub.handle_timeout(t(0), wall(0));
    let (a, b) = (hub.connect(), hub.connect());
    subscribe_id(&mut hub, a, "gone").unwrap();
    subscribe_id(&mut hub, b, "kept").unwrap();
    hub.publish("t", &raw(&json!(1)), t(0), wall(0)).unwrap();
    assert_eq!(
        subscribe_id(&mut hub, a, "third").unwrap_err().0,
        TOO_MANY_PERSISTENT_IDS
    );
    // "gone" is released at 20 s; "kept" stays attached far longer than the timeout.
    hub.handle_timeout(t(20), wall(20));
    hub.disconnect(a);
    let mut secs = 20;
    while secs < 170 {
        secs += 10;
        hub.handle_timeout(t(secs), wall(secs));
        assert!(
            has(&mut hub, "gone"),
            "still within the timeout at {secs} s"
        );
    }
    // Deleted between 15/16 of the timeout and a sixteenth past it after release.
    while has(&mut hub, "gone") {
        secs += 10;
        assert!(secs <= 20 + 160 + 10, "still there at {secs} s");
        hub.handle_timeout(t(secs), wall(secs));
    }
    assert!(has(&mut hub, "kept"), "an attached id is never idle");
    let c = hub.connect();
    // Its place is free, and the id itself starts over at the topic's end.
    subscribe_id(&mut hub, c, "third").unwrap();
    let again = subscribe_id(&mut hub, c, "gone");
    assert_eq!(again.unwrap_err().0, TOO_MANY_PERSISTENT_IDS);
    // The attached id survives a long time detached only if it comes back in time.
    hub.disconnect(b);
    hub.disconnect(c);
    let back = secs + 100;
    hub.handle_timeout(t(back), wall(back));
    let d = hub.connect();
    let resumed = subscribe_id(&mut hub, d, "kept").unwrap();
    assert_eq!(
        resumed["resumed_from_sequence"], 0,
        "its unacked message is still due"
    );
    assert_eq!(sequences(&drain(&mut hub, d)), [1]);
    // 0 is unknown (a record from before last-seen times): idle from the first sweep on.
    let mut config = HubConfig::default();
    config.persistent_idle_timeout = Some(Duration::from_secs(160));
    let mut store = MemoryStore::default();
    store
        .save_subscription("old", &SubscriptionState::new("t", 0))
        .unwrap();
    let mut hub = InlineHub::new(store, config);
    hub.handle_timeout(t(0), wall(1_000_000));
    assert!(has(&mut hub, "old"));
    hub.handle_timeout(t(100), wall(1_000_100));
    assert!(has(&mut hub, "old"));
    hub.handle_timeout(t(200), wall(1_000_200));
    assert!(!has(&mut hub, "old"));
}

/// The subscription ids the hub's store holds.
fn stored_ids<S: Store>(hub: &mut InlineHub<S>) -> Vec<String> {
    let mut ids = Vec::new();
    hub.store_mut().subscriptions(&mut ids).unwrap();
    ids.into_iter().map(|(id, _)| id).collect()
}

fn has<S: Store>(hub: &mut InlineHub<S>, id: &str) -> bool {
    stored_ids(hub).iter().any(|i| i == id)
}

#[test]
fn a_transport_without_push_refuses_every_subscription_method_with_a_reason() {
    use sansrpc::router::{Reply, Router};
    use sansrpc_pubsub::hub::{refuse_subscriptions, METHODS};
    let mut router = Router::new();
    refuse_subscriptions(&mut router).unwrap();
    let mut reply = Reply::default();
    for method in METHODS {
        let text = format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{{}},"id":1}}"#);
        let request = match sansrpc::Classifier::default().classify(text.as_bytes()) {
            sansrpc::Classified::Single(sansrpc::Incoming::Request(r)) => r.into_owned(),
            other => panic!("{other:?}"),
        };
        router.dispatch(&request, &mut reply);
        let error = reply.error().expect("refused");
        assert_eq!(error.code, -32601, "{method}");
        assert!(error.message.contains("stays open"), "{method}");
    }
}
