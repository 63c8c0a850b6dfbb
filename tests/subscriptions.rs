//! Method subscriptions in the Ethereum shape, in virtual time: a server connection accepts
//! `eth_subscribe`, sends items, answers `eth_unsubscribe` itself; a client reads the
//! notifications through `ClientSubscriptions`; each subscription's queue holds its bound
//! with the declared lag policy.

use proptest::prelude::*;
use sansrpc::connection::subscriptions::{
    ClientSubscriptions, IdStyle, LagPolicy, MethodSubscription, Notice, Popped, Pushed,
    SubscriptionQueue,
};
use sansrpc::connection::{CloseReason, Config, Connection, Event, SendError};
use sansrpc::{ErrorObject, Id};

#[path = "support/wire.rs"]
mod wire;
use wire::{bodies, raw, send, NOW};

/// A server that accepted one `eth_subscribe` from a client: (server, client, the
/// client's table, the subscription's number on the server).
fn subscribed(
    declaration: &MethodSubscription,
) -> (Connection, Connection, ClientSubscriptions, u64) {
    let mut server = Connection::new(Config::default(), NOW);
    let mut client = Connection::new(Config::default(), NOW);
    let mut routes = ClientSubscriptions::new();
    let params = raw(r#"["newHeads"]"#);
    client
        .call(
            7,
            declaration.subscribe,
            Some(&params),
            Default::default(),
            NOW,
        )
        .unwrap();
    routes.subscribing(7, declaration);
    send(&mut client, &mut server);
    let Some(Event::Request { handle, request }) = server.poll_event() else {
        panic!("the subscribe request")
    };
    assert_eq!(request.method, declaration.subscribe);
    let sub = server.accept_subscription(handle, declaration).unwrap();
    send(&mut server, &mut client);
    let Some(Event::Answer {
        token: 7, result, ..
    }) = client.poll_event()
    else {
        panic!("the answer")
    };
    assert!(routes.answered(7, &result.unwrap()));
    (server, client, routes, sub)
}

/// The notices the client reads now, as (key, notice).
fn notices(client: &mut Connection, routes: &mut ClientSubscriptions) -> Vec<(u64, Notice)> {
    let mut seen = Vec::new();
    while let Some(event) = client.poll_event() {
        if let Event::Notification(n) = event {
            assert!(routes.is_notification(&n.method) || routes.id_of(7).is_none());
            if let Some(notice) = routes.read(&n.method, n.params.as_deref()) {
                seen.push(notice);
            }
        }
    }
    seen
}

#[test]
fn an_ethereum_subscription_answers_a_hex_id_sends_items_and_ends_on_unsubscribe() {
    let eth = MethodSubscription::ethereum();
    let (mut server, mut client, mut routes, sub) = subscribed(&eth);
    assert_eq!(routes.id_of(7), Some(r#""0x1""#));
    server.send_item(sub, &raw(r#"{"number":"0x10"}"#)).unwrap();
    server.send_item(sub, &raw(r#"{"number":"0x11"}"#)).unwrap();
    let wire = send(&mut server, &mut client);
    assert_eq!(
        bodies(&wire),
        [
            r#"{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x1","result":{"number":"0x10"}}}"#,
            r#"{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x1","result":{"number":"0x11"}}}"#,
        ]
    );
    assert_eq!(
        notices(&mut client, &mut routes),
        [
            (7, Notice::Item(raw(r#"{"number":"0x10"}"#))),
            (7, Notice::Item(raw(r#"{"number":"0x11"}"#))),
        ]
    );

    // The server answers the unsubscribe itself, and tells its driver.
    let params = raw(r#"["0x1"]"#);
    client
        .call(8, "eth_unsubscribe", Some(&params), Default::default(), NOW)
        .unwrap();
    // Twice: the second finds nothing.
    client
        .call(9, "eth_unsubscribe", Some(&params), Default::default(), NOW)
        .unwrap();
    send(&mut client, &mut server);
    assert!(matches!(
        server.poll_event(),
        Some(Event::Unsubscribed { sub: 1 })
    ));
    assert!(server.poll_event().is_none());
    assert_eq!(server.subscriptions(), 0);
    assert_eq!(
        server.send_item(sub, &raw("1")),
        Err(SendError::Closed),
        "nothing goes out once unsubscribed"
    );
    let wire = send(&mut server, &mut client);
    assert_eq!(
        bodies(&wire),
        [
            r#"{"jsonrpc":"2.0","result":true,"id":2}"#,
            r#"{"jsonrpc":"2.0","result":false,"id":3}"#
        ]
    );
}

#[test]
fn unsubscribe_by_name_and_ids_of_other_declarations_or_connections_are_refused() {
    let substrate = MethodSubscription::new(
        "chain_subscribeNewHeads",
        "chain_newHead",
        "chain_unsubscribeNewHeads",
    );
    let (mut server, mut client, _routes, sub) = subscribed(&substrate);
    assert_eq!(sub, 1);
    let names = [
        r#"{"subscription":"2"}"#, // not one of ours
        r#"["0x1"]"#,              // a hex id where ids are decimal strings
        r#"[1]"#,                  // a number where ids are strings
        r#"{}"#,
        r#"{"subscription":"1"}"#, // by name: this one ends it
    ];
    for (n, params) in names.iter().enumerate() {
        let params = raw(params);
        client
            .call(
                20 + n as u64,
                "chain_unsubscribeNewHeads",
                Some(&params),
                Default::default(),
                NOW,
            )
            .unwrap();
    }
    send(&mut client, &mut server);
    assert!(matches!(
        server.poll_event(),
        Some(Event::Unsubscribed { sub: 1 })
    ));
    let wire = send(&mut server, &mut client);
    let answers: Vec<_> = bodies(&wire)
        .iter()
        .map(|b| b.contains(r#""result":true"#))
        .collect();
    assert_eq!(answers, [false, false, false, false, true]);
}

#[test]
fn ids_are_written_and_read_in_each_style() {
    let mut out = Vec::new();
    for (style, written) in [
        (IdStyle::Hex, r#""0xff""#),
        (IdStyle::String, r#""255""#),
        (IdStyle::Number, "255"),
    ] {
        let d = MethodSubscription::new("s", "n", "u").with_ids(style);
        out.clear();
        d.write_id(255, &mut out);
        assert_eq!(std::str::from_utf8(&out).unwrap(), written);
        let id: Id<'static> = serde_json::from_str(written).unwrap();
        assert_eq!(d.read_id(&id), Some(255));
    }
    let hex = MethodSubscription::ethereum();
    for bad in [
        r#""ff""#,
        r#""0x""#,
        r#""0x10000000000000000""#,
        r#""0xzz""#,
        "255",
    ] {
        let id: Id<'static> = serde_json::from_str(bad).unwrap();
        assert_eq!(hex.read_id(&id), None, "{bad}");
    }
}

#[test]
fn solana_numbers_and_custom_fields_reach_the_client() {
    let solana = MethodSubscription::new(
        "accountSubscribe",
        "accountNotification",
        "accountUnsubscribe",
    )
    .with_ids(IdStyle::Number)
    .with_fields("subscription", "result");
    let (mut server, mut client, mut routes, sub) = subscribed(&solana);
    assert_eq!(routes.id_of(7), Some("1"));
    server
        .send_item(sub, &raw(r#"{"context":{"slot":5},"value":null}"#))
        .unwrap();
    let wire = send(&mut server, &mut client);
    assert!(
        wire.contains(r#""params":{"subscription":1,"result":{"context""#),
        "{wire}"
    );
    assert_eq!(notices(&mut client, &mut routes).len(), 1);
}

/// Bytes a queue holds for `items` items of `len` bytes of JSON each.
fn room_for(items: usize, len: usize) -> usize {
    items * (len + sansrpc::connection::subscriptions::ITEM_OVERHEAD)
}

/// Every frame on `wire` that is a notification carries a `result`: the only shape
/// Ethereum's clients read.
fn every_notification_has_a_result(wire: &str) {
    for body in bodies(wire) {
        if body.contains(r#""method":"eth_subscription""#) {
            assert!(
                body.contains(r#","result":"#),
                "a notification without a result: {body}"
            );
        }
    }
}

#[test]
fn the_ethereum_declaration_closes_the_connection_of_a_subscriber_that_cannot_keep_up() {
    let eth = MethodSubscription::ethereum();
    assert_eq!(eth.lag, LagPolicy::Disconnect);
    assert!(!eth.notices);
    assert_eq!(eth.max_bytes, 1 << 20);
    let d = eth.with_capacity(room_for(2, 1));
    let mut queue = SubscriptionQueue::new(&d);
    assert_eq!(queue.push(raw("0")), Pushed::Queued);
    assert_eq!(queue.push(raw("1")), Pushed::Queued);
    assert_eq!(queue.push(raw("2")), Pushed::Overflowed);
    assert_eq!(queue.push(raw("3")), Pushed::Closed);
    let (mut server, mut client, mut routes, sub) = subscribed(&d);
    while let Some(popped) = queue.pop() {
        server.send_popped(sub, &popped).unwrap();
    }
    // The connection closes after what it wrote, as go-ethereum closes a client whose
    // queue overflowed: no notification of another shape.
    let mut reasons = Vec::new();
    while let Some(event) = server.poll_event() {
        if let Event::Closed { reason } = event {
            reasons.push(reason);
        }
    }
    assert_eq!(reasons, [CloseReason::SubscriberLagged]);
    assert_eq!(server.subscriptions(), 0);
    let wire = send(&mut server, &mut client);
    every_notification_has_a_result(&wire);
    assert_eq!(
        notices(&mut client, &mut routes),
        [(7, Notice::Item(raw("0"))), (7, Notice::Item(raw("1")))]
    );
}

#[test]
fn without_notices_a_queue_drops_or_ends_silently_and_the_server_close_sends_no_error() {
    for lag in [LagPolicy::DropOldest, LagPolicy::Close] {
        let d = MethodSubscription::ethereum()
            .with_capacity(room_for(2, 1))
            .with_lag(lag);
        let mut queue = SubscriptionQueue::new(&d);
        for n in 0..4 {
            queue.push(raw(&n.to_string()));
        }
        let (mut server, mut client, mut routes, sub) = subscribed(&d);
        while let Some(popped) = queue.pop() {
            server.send_popped(sub, &popped).unwrap();
        }
        let wire = send(&mut server, &mut client);
        every_notification_has_a_result(&wire);
        let items: Vec<_> = notices(&mut client, &mut routes)
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        match lag {
            LagPolicy::DropOldest => {
                assert_eq!(items, [Notice::Item(raw("2")), Notice::Item(raw("3"))]);
                assert_eq!(server.subscriptions(), 1);
                // The server's own close with an error: it just stops.
                assert!(server.end_subscription(sub, Some(&ErrorObject::internal_error())));
                assert_eq!(send(&mut server, &mut client), "");
            }
            _ => {
                // Ended after what it held, as after eth_unsubscribe.
                assert_eq!(items, [Notice::Item(raw("0")), Notice::Item(raw("1"))]);
                assert_eq!(server.subscriptions(), 0);
            }
        }
    }
}

#[test]
fn a_queue_dropping_the_oldest_with_notices_tells_the_subscriber_how_many_it_missed() {
    let d = MethodSubscription::ethereum()
        .with_capacity(room_for(3, 1))
        .with_lag(LagPolicy::DropOldest)
        .with_notices(true);
    let mut queue = SubscriptionQueue::new(&d);
    for n in 0..3 {
        assert_eq!(queue.push(raw(&n.to_string())), Pushed::Queued);
    }
    assert_eq!(queue.push(raw("3")), Pushed::Lagged { dropped: 1 });
    assert_eq!(queue.push(raw("4")), Pushed::Lagged { dropped: 2 });
    assert_eq!(queue.len(), 3);
    let (mut server, mut client, mut routes, sub) = subscribed(&d);
    while let Some(popped) = queue.pop() {
        server.send_popped(sub, &popped).unwrap();
    }
    send(&mut server, &mut client);
    assert_eq!(
        notices(&mut client, &mut routes),
        [
            (7, Notice::Lagged(2)),
            (7, Notice::Item(raw("2"))),
            (7, Notice::Item(raw("3"))),
            (7, Notice::Item(raw("4"))),
        ]
    );
    // The count starts again after it was told.
    assert_eq!(queue.push(raw("5")), Pushed::Queued);
}

#[test]
fn a_queue_that_closes_on_lag_with_notices_ends_the_subscription_with_an_error_after_what_it_held()
{
    let d = MethodSubscription::ethereum()
        .with_capacity(room_for(2, 1))
        .with_lag(LagPolicy::Close)
        .with_notices(true);
    let mut queue = SubscriptionQueue::new(&d);
    assert_eq!(queue.push(raw("0")), Pushed::Queued);
    assert_eq!(queue.push(raw("1")), Pushed::Queued);
    assert_eq!(queue.push(raw("2")), Pushed::Overflowed);
    assert_eq!(queue.push(raw("3")), Pushed::Closed);
    let (mut server, mut client, mut routes, sub) = subscribed(&d);
    let mut popped = Vec::new();
    while let Some(p) = queue.pop() {
        server.send_popped(sub, &p).unwrap();
        popped.push(p);
    }
    assert_eq!(popped.last(), Some(&Popped::Overflowed));
    assert!(queue.is_closed());
    assert_eq!(server.subscriptions(), 0);
    send(&mut server, &mut client);
    let seen = notices(&mut client, &mut routes);
    assert_eq!(seen.len(), 3);
    let Notice::Ended(error) = &seen[2].1 else {
        panic!("{seen:?}")
    };
    assert_eq!(error.code, sansrpc::error::code::SUBSCRIPTION_LAGGED);
    // The client forgot it: a late notification for it reaches nobody.
    assert_eq!(routes.id_of(7), None);
}

#[test]
fn a_queue_is_bounded_by_bytes_and_keeps_one_item_larger_than_the_bound() {
    let overhead = sansrpc::connection::subscriptions::ITEM_OVERHEAD;
    let d = MethodSubscription::ethereum()
        // "12345678" and "12" side by side, not "1234".
        .with_capacity(2 * overhead + 10 + 5)
        .with_lag(LagPolicy::DropOldest)
        .with_notices(true);
    let mut queue = SubscriptionQueue::new(&d);
    assert_eq!(queue.push(raw("\"12345678\"")), Pushed::Queued);
    assert!(queue.has_room(4));
    assert!(!queue.has_room(80));
    assert_eq!(queue.push(raw("\"1234\"")), Pushed::Lagged { dropped: 1 });
    assert_eq!(queue.bytes(), 6 + overhead);
    assert_eq!(
        queue.push(raw(&format!("\"{}\"", "x".repeat(200)))),
        Pushed::Lagged { dropped: 2 }
    );
    assert_eq!((queue.len(), queue.bytes()), (1, 202 + overhead));
    queue.close();
    assert_eq!((queue.len(), queue.bytes()), (0, 0));
    assert_eq!(queue.push(raw("1")), Pushed::Closed);
    assert_eq!(queue.pop(), None);
    // A thousand small items (a block's logs) fit the default bound.
    let mut queue = SubscriptionQueue::new(&MethodSubscription::ethereum());
    let log = raw(&format!("\"{}\"", "l".repeat(600)));
    for _ in 0..1000 {
        assert_eq!(queue.push(log.clone()), Pushed::Queued);
    }
}

#[test]
fn past_max_subscriptions_a_subscribe_is_server_busy_and_closing_ends_them_all() {
    let eth = MethodSubscription::ethereum();
    let mut config = Config::default();
    config.max_subscriptions = 2;
    let mut server = Connection::new(config, NOW);
    let mut client = Connection::new(Config::default(), NOW);
    let params = raw(r#"["newHeads"]"#);
    for token in 0..3 {
        client
            .call(
                token,
                "eth_subscribe",
                Some(&params),
                Default::default(),
                NOW,
            )
            .unwrap();
    }
    send(&mut client, &mut server);
    let mut accepted = Vec::new();
    while let Some(Event::Request { handle, .. }) = server.poll_event() {
        accepted.push(server.accept_subscription(handle, &eth));
    }
    assert_eq!(accepted, [Some(1), Some(2), None]);
    let wire = send(&mut server, &mut client);
    assert!(bodies(&wire)[2].contains(r#""code":-32002"#), "{wire}");
    server.close(NOW);
    while server.poll_event().is_some() {}
    assert_eq!(server.subscriptions(), 0);
    assert_eq!(server.send_item(1, &raw("1")), Err(SendError::Closed));
}

#[test]
fn a_request_already_answered_cannot_be_accepted() {
    let eth = MethodSubscription::ethereum();
    let mut server = Connection::new(Config::default(), NOW);
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#;
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    server.handle_input(frame.as_bytes(), NOW).unwrap();
    let Some(Event::Request { handle, .. }) = server.poll_event() else {
        panic!()
    };
    server.respond(handle, Ok(&raw("null")));
    assert_eq!(server.accept_subscription(handle, &eth), None);
    assert_eq!(server.subscriptions(), 0);
}

proptest! {
    /// Whatever is pushed and popped, the queue holds its bounds, hands out items in order,
    /// and every item pushed is either handed out, still queued, or counted in a lag
    /// notice.
    #[test]
    fn a_queue_holds_its_bounds_and_accounts_for_every_item(
        max_bytes in 1usize..400,
        ops in prop::collection::vec(prop::option::of(1usize..12), 0..200),
    ) {
        let d = MethodSubscription::ethereum()
            .with_capacity(max_bytes)
            .with_lag(LagPolicy::DropOldest)
            .with_notices(true);
        let mut queue = SubscriptionQueue::new(&d);
        let (mut pushed, mut handed, mut lagged) = (0u64, 0u64, 0u64);
        let mut last = None;
        for op in ops {
            match op {
                Some(len) => {
                    let item = format!("\"{}{}\"", pushed, "x".repeat(len));
                    queue.push(raw(&item));
                    pushed += 1;
                }
                None => match queue.pop() {
                    Some(Popped::Item(item)) => {
                        let n: u64 = item.get()[1..].split('x').next().unwrap().trim_end_matches('"').parse().unwrap();
                        prop_assert!(last.is_none_or(|l| n > l), "in order");
                        last = Some(n);
                        handed += 1;
                    }
                    Some(Popped::Lagged(n)) => lagged += n,
                    Some(Popped::Overflowed) => prop_assert!(false, "never under DropOldest"),
                    None => {}
                },
            }
            prop_assert!(queue.len() <= 1 || queue.bytes() <= max_bytes);
        }
        while let Some(popped) = queue.pop() {
            match popped {
                Popped::Item(_) => handed += 1,
                Popped::Lagged(n) => lagged += n,
                Popped::Overflowed => prop_assert!(false),
            }
        }
        prop_assert_eq!(pushed, handed + lagged);
    }
}

/// The core's rule for writing past the output ([`Connection::may_bypass`]): a connection
/// whose messages a transport frames, open, with nothing queued, may let a notification
/// go to its socket from elsewhere; what is written then ([`Connection::bypass_head`], the
/// item, `}}`) is byte for byte what its output would have held. Not with output waiting,
/// not on a connection that frames its own output, not once closing.
#[test]
fn a_notification_written_past_the_output_is_the_one_the_output_would_hold() {
    let eth = MethodSubscription::ethereum();
    // A WebSocket's: whole messages, no framing of its own.
    let mut config = Config::default();
    config.framing = None;
    let mut server = Connection::new(config, NOW);
    let subscribe = br#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#;
    server.handle_message(subscribe, NOW).unwrap();
    let Some(Event::Request { handle, .. }) = server.poll_event() else {
        panic!("the subscribe request")
    };
    let sub = server.accept_subscription(handle, &eth).unwrap();
    // The answer waits: nothing may go past it.
    assert!(!server.may_bypass());
    let answer: Vec<u8> = server
        .peek_message_parts()
        .flatten()
        .flatten()
        .copied()
        .collect();
    server.consume_transmit(answer.len());
    assert!(
        server.may_bypass(),
        "open, a transport's framing, nothing queued"
    );

    let item: std::sync::Arc<sansrpc::RawValue> =
        std::sync::Arc::from(raw(r#"{"number":"0x1b4"}"#));
    let head = server.bypass_head(sub).unwrap();
    let bypassed = [&head[..], item.get().as_bytes(), b"}}"].concat();
    server.send_shared_item(sub, &item).unwrap();
    assert!(!server.may_bypass(), "a notification queued");
    let queued: Vec<u8> = server
        .peek_message_parts()
        .flatten()
        .flatten()
        .copied()
        .collect();
    assert_eq!(
        String::from_utf8(bypassed).unwrap(),
        String::from_utf8(queued).unwrap()
    );
    assert_eq!(
        server.bypass_head(sub + 1),
        None,
        "not an active subscription"
    );

    // A connection that frames its output (Content-Length) never lets it be bypassed.
    let (framed, _, _, framed_sub) = subscribed(&eth);
    assert!(!framed.may_bypass());
    assert_eq!(framed.bypass_head(framed_sub), None);

    // Closing: everything goes through the output, in order with the close.
    let _ = server.peek_message_parts().count();
    let queued = server.buffered_output();
    server.consume_transmit(queued);
    assert!(server.may_bypass());
    server.shutdown(std::time::Duration::from_secs(1), NOW);
    assert!(!server.may_bypass());
}
