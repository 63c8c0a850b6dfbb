//! Method subscriptions on a driver with threads (`sansrpc_runtime::subscriptions`), in
//! virtual time: the core router's subscriptions registered through
//! `SubscriptionRouter`, the sinks, the served table and the client's inboxes.

use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::connection::{Config, Connection, Event};
use sansrpc::Id;

#[path = "../../../tests/support/wire.rs"]
mod wire;
use wire::{bodies, raw, send, NOW};

/// The core router's subscriptions, and the machinery every threaded driver shares
/// (`sansrpc_runtime::subscriptions`), in virtual time: a handler accepts, a sink queues, the
/// served table moves items into the connection, the client's inbox reads them, the
/// unsubscribe reaches the sink.
#[test]
fn the_router_and_the_shared_machinery_serve_a_subscription_to_an_inbox() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use sansrpc::router::{Call, Reply, Router};
    use sansrpc::Timeout;
    use sansrpc_runtime::subscriptions::{
        open, Ended, Hub, Inbox, PendingSubscription, Served, Subscribed, SubscriptionRouter,
        SubscriptionSink,
    };

    let eth = MethodSubscription::ethereum();
    let mut router = Router::new();
    let pendings: Arc<Mutex<Vec<PendingSubscription>>> = Arc::default();
    let kept = Arc::clone(&pendings);
    router
        .subscription(eth.clone(), move |pending, (kind,): (String,)| {
            assert_eq!(kind, "newHeads");
            kept.lock().unwrap().push(pending);
        })
        .unwrap();
    // Taken already, by the subscription or by its unsubscribe method.
    let again = router.subscription(eth.clone(), |_, (): ()| {});
    assert!(again.is_err());
    assert!(router.raw_method("eth_unsubscribe", |_, _| Ok(())).is_err());
    // A driver that does not serve them: unknown; the unsubscribe answered false.
    let mut reply = Reply::default();
    let request = |id: i64, method: &'static str| sansrpc::Request {
        id: Id::number(id),
        method: method.into(),
        params: None,
        version: Default::default(),
    };
    router.dispatch(&request(1, "eth_subscribe"), &mut reply);
    assert_eq!(reply.error().map(|e| e.code), Some(-32601));
    router.dispatch(&request(2, "eth_unsubscribe"), &mut reply);
    assert_eq!(reply.result_json(), Some("false"));
    // Params that do not fit.
    let bad = raw("[1, 2]");
    let call = Call {
        method: "eth_subscribe",
        params: Some(&bad),
        id: None,
    };
    let (_, opened) = open(&router, &call).unwrap();
    assert_eq!(opened.err().map(|e| e.code), Some(-32602));

    let mut server = Connection::new(Config::default(), NOW);
    let mut client = Connection::new(Config::default(), NOW);
    let wakes = Arc::new(AtomicUsize::new(0));
    let woken = Arc::clone(&wakes);
    let mut served = Served::new(Hub::new(move || {
        woken.fetch_add(1, Ordering::Relaxed);
    }));
    let mut subscribed = Subscribed::new();
    let inbox = Inbox::new(eth.max_bytes);
    let params = raw(r#"["newHeads"]"#);
    subscribed
        .subscribe(
            &mut client,
            7,
            &eth,
            Some(&params),
            Timeout::Default,
            Arc::clone(&inbox),
            NOW,
        )
        .unwrap();
    send(&mut client, &mut server);
    let Some(Event::Request { handle, request }) = server.poll_event() else {
        panic!("the subscribe request")
    };
    let call = Call {
        method: &request.method,
        params: request.params.as_deref(),
        id: Some(&request.id),
    };
    let (declaration, opened) = open(&router, &call).unwrap();
    let pending = served.pending(handle, declaration);
    opened.unwrap()(pending);
    let pending = pendings.lock().unwrap().pop().unwrap();
    let sink: Arc<Mutex<Option<SubscriptionSink>>> = Arc::default();
    let given = Arc::clone(&sink);
    pending.accept_with(Box::new(move |s| *given.lock().unwrap() = s));
    assert!(wakes.load(Ordering::Relaxed) > 0, "the driver is woken");
    assert!(!served.is_idle());
    served.poll(&mut server, &mut |_| {});
    let sink = sink.lock().unwrap().take().expect("accepted");
    for n in 0..3u64 {
        sink.send(&n).unwrap();
    }
    assert!(!served.is_idle());
    served.poll(&mut server, &mut |_| {});
    send(&mut server, &mut client);
    while let Some(event) = client.poll_event() {
        match event {
            Event::Answer { token, result, .. } => {
                let mut result = sansrpc::client::answer(result);
                subscribed.answer(&mut client, token, &mut result, NOW);
                assert_eq!(result.unwrap().get(), r#""0x1""#);
            }
            Event::Notification(n) => {
                assert!(subscribed.notification(&n.method, n.params.as_deref()));
                client.notification_done();
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let items: Vec<String> = (0..3)
        .map(|_| inbox.next_blocking().unwrap().unwrap().get().to_owned())
        .collect();
    assert_eq!(items, ["0", "1", "2"]);

    // Unsubscribed: the sink learns it.
    assert!(subscribed.unsubscribe(&mut client, 7, 8, NOW).unwrap());
    send(&mut client, &mut server);
    let mut handles = Vec::new();
    while let Some(event) = server.poll_event() {
        if let Event::Unsubscribed { sub } = event {
            handles.extend(served.unsubscribed(sub));
        }
    }
    assert_eq!(handles, [handle]);
    assert_eq!(sink.wait_closed(), Ended::Unsubscribed);
    assert_eq!(sink.send(&4), Err(Ended::Unsubscribed));
    // The inbox ends once it is read.
    assert!(inbox.next_blocking().is_none());
}

/// A subscribe the peer cancels before its handler decides is answered as cancelled at
/// once; the handler's accept then fails, and nothing else is sent.
#[test]
fn a_subscribe_cancelled_before_its_handler_decides_is_answered_cancelled() {
    use std::sync::{Arc, Mutex};

    use sansrpc_runtime::subscriptions::{Hub, Served};

    let eth = MethodSubscription::ethereum();
    let mut server = Connection::new(Config::default(), NOW);
    let mut client = Connection::new(Config::default(), NOW);
    let mut served = Served::new(Hub::new(|| {}));
    let params = raw(r#"["newHeads"]"#);
    client
        .call(7, eth.subscribe, Some(&params), Default::default(), NOW)
        .unwrap();
    send(&mut client, &mut server);
    let Some(Event::Request { handle, .. }) = server.poll_event() else {
        panic!("the subscribe request")
    };
    let pending = served.pending(handle, &eth);
    assert!(served.cancel(&mut server, handle));
    assert!(!served.cancel(&mut server, handle), "once");
    let accepted: Arc<Mutex<Option<bool>>> = Arc::default();
    let seen = Arc::clone(&accepted);
    pending.accept_with(Box::new(move |sink| {
        *seen.lock().unwrap() = Some(sink.is_some())
    }));
    served.poll(&mut server, &mut |_| {});
    assert_eq!(*accepted.lock().unwrap(), Some(false));
    assert_eq!(server.subscriptions(), 0);
    let wire = send(&mut server, &mut client);
    let bodies = bodies(&wire);
    assert_eq!(bodies.len(), 1, "{wire}");
    assert!(
        bodies[0].contains(r#""id":1"#) && bodies[0].contains(r#""error""#),
        "{wire}"
    );
}
