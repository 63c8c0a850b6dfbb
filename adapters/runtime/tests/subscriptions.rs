//! Method subscriptions on a driver with threads (`sansrpc_runtime::subscriptions`), in
//! virtual time: the core router's subscriptions registered through
//! `SubscriptionRouter`, the sinks, the served table and the client's inboxes.

use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::connection::{Config, Connection, Event};
use sansrpc::Id;

#[path = "../../../tests/support/bypass.rs"]
mod bypass;
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

/// The hub's side of writing past a parked driver: while the driver has let it
/// (`Served::open_bypass`), a sink's send of a subscription with nothing queued goes to the
/// transport's `Bypass` as the whole notification the output would hold, and wakes no
/// driver. It is not opened while something waits for the driver. The rest of a message
/// taken in part stays with the transport and closes the bypass (the driver is woken); one
/// not taken at all closes it and goes through the output. Either way what follows is
/// queued, in order. The connection's end lets go of the transport.
#[test]
fn a_parked_drivers_subscriptions_write_past_it_in_order_until_it_takes_them_back() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use bypass::Socket;
    use sansrpc_runtime::subscriptions::{Bypass, Hub, Served, SubscriptionSink};

    /// What the connection's output holds, taken as a transport takes it.
    fn output(conn: &mut Connection) -> String {
        let bytes: Vec<u8> = conn
            .peek_message_parts()
            .flatten()
            .flatten()
            .copied()
            .collect();
        conn.consume_transmit(bytes.len());
        String::from_utf8(bytes).unwrap()
    }

    let eth = MethodSubscription::ethereum();
    // A WebSocket's connection: whole messages, output taken as parts.
    let mut config = Config::default();
    config.framing = None;
    let mut server = Connection::new(config, NOW);
    assert_eq!(output(&mut server), "");
    let wakes = Arc::new(AtomicUsize::new(0));
    let woken = Arc::clone(&wakes);
    let mut served = Served::new(Hub::new(move || {
        woken.fetch_add(1, Ordering::Relaxed);
    }));
    let subscribe = br#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#;
    server.handle_message(subscribe, NOW).unwrap();
    let Some(Event::Request { handle, .. }) = server.poll_event() else {
        panic!("the subscribe request")
    };
    let socket = Arc::new(Socket::default());
    let bypass: Arc<dyn Bypass> = socket.clone();
    assert!(!served.open_bypass(&bypass), "no subscription active yet");
    let sink: Arc<Mutex<Option<SubscriptionSink>>> = Arc::default();
    let given = Arc::clone(&sink);
    served
        .pending(handle, &eth)
        .accept_with(Box::new(move |s| *given.lock().unwrap() = s));
    assert!(
        !served.open_bypass(&bypass),
        "a decision waits for the driver"
    );
    assert!(!served.is_idle());
    served.poll(&mut server, &mut |_| {});
    let sink = sink.lock().unwrap().take().expect("accepted");
    assert!(output(&mut server).contains(r#""result":"0x1""#));
    assert!(server.may_bypass());

    // Parked, nothing queued: sent past the driver, whole, waking nothing.
    assert!(served.open_bypass(&bypass));
    socket.room(usize::MAX);
    let before = wakes.load(Ordering::Relaxed);
    sink.try_send(&1u64).unwrap();
    sink.try_send(&2u64).unwrap();
    assert_eq!(wakes.load(Ordering::Relaxed), before, "no driver woken");
    assert!(served.is_idle(), "nothing handed over");
    let took = socket.took();
    let notification = |n: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"eth_subscription","params":{{"subscription":"0x1","result":{n}}}}}"#
        )
    };
    assert_eq!(took, notification(1) + &notification(2));

    // The driver takes it back: queued, woken, in the output as the same bytes.
    served.close_bypass();
    sink.try_send(&3u64).unwrap();
    assert_eq!(wakes.load(Ordering::Relaxed), before + 1);
    assert!(!served.open_bypass(&bypass), "an item waits for the driver");
    assert!(!served.is_idle());
    served.poll(&mut server, &mut |_| {});
    assert!(!server.may_bypass(), "the item waits in the output");
    assert_eq!(output(&mut server), notification(3));

    // Taken in part: the rest stays with the transport, the bypass is over, the driver is
    // woken, and the next item is queued behind.
    assert!(server.may_bypass() && served.open_bypass(&bypass));
    socket.room(10);
    sink.try_send(&4u64).unwrap();
    sink.try_send(&5u64).unwrap();
    assert_eq!(wakes.load(Ordering::Relaxed), before + 2);
    assert_eq!(socket.took() + &socket.rest(), notification(4));
    assert!(!served.is_idle());
    served.poll(&mut server, &mut |_| {});
    assert_eq!(output(&mut server), notification(5));

    // Not taken at all: through the output, and the bypass is over.
    assert!(served.open_bypass(&bypass));
    socket.room(0);
    sink.try_send(&6u64).unwrap();
    socket.room(usize::MAX);
    sink.try_send(&7u64).unwrap();
    assert_eq!(socket.took(), "");
    assert!(!served.is_idle());
    served.poll(&mut server, &mut |_| {});
    assert_eq!(output(&mut server), notification(6) + &notification(7));

    // The connection ends with the bypass open: the hub lets go of the transport.
    assert!(served.open_bypass(&bypass));
    assert_eq!(Arc::strong_count(&socket), 3);
    served.clear();
    assert_eq!(Arc::strong_count(&socket), 2);
    assert!(sink.try_send(&8u64).is_err());
}
