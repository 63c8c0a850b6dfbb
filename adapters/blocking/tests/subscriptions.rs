//! Method subscriptions on threads, over real sockets on 127.0.0.1 (and a Unix socket):
//! the core router's subscription handler with its sink, the client's iterator. Items in
//! order, unsubscribe answered and seen by the server, the iterator dropped, the lag
//! policies for a slow reader, the server's close, and the connection's end.

mod common;

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::within;
use sansrpc::connection::subscriptions::{LagPolicy, MethodSubscription};
use sansrpc::method::CallError;
use sansrpc::router::Router;
use sansrpc::ErrorObject;
use sansrpc_blocking::{
    connect_tcp, serve_tcp, Client, Ended, Options, Server, Subscription, SubscriptionError,
    SubscriptionRouter, SubscriptionSink,
};

const LIMIT: Duration = Duration::from_secs(30);

/// What the test gets from the server: each accepted subscription's sink.
type Sinks = Receiver<SubscriptionSink>;

/// The driver hold: the test learns the server's driver thread is held (`held`), and
/// releases it (`release`).
struct Hold {
    held: Receiver<()>,
    release: Sender<()>,
}

/// A router serving `declaration` (params `[kind]`: `"items"` accepted and its sink handed
/// to the test (unless the connection refused it), anything else rejected with -32602), and the notification `hold`, which
/// holds the server's driver thread until the test releases it: items sent meanwhile wait
/// in their queue, as for a reader that does not keep up.
fn router(declaration: MethodSubscription) -> (Router, Sinks, Hold) {
    let (sinks_tx, sinks) = mpsc::channel();
    let sinks_tx = Mutex::new(sinks_tx);
    let mut router = Router::new();
    router
        .subscription(declaration, move |pending, (kind,): (String,)| {
            if kind != "items" {
                return pending.reject(ErrorObject::fixed(-32602, "unknown subscription"));
            }
            // Not accepted when the connection refused it (it answered why).
            let Ok(sink) = pending.accept() else { return };
            sinks_tx.lock().unwrap().send(sink).unwrap();
        })
        .unwrap();
    let (held_tx, held) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let hold = Mutex::new((held_tx, release_rx));
    router
        .raw_notification("hold", move |_| {
            let hold = hold.lock().unwrap();
            hold.0.send(()).unwrap();
            hold.1.recv().unwrap();
        })
        .unwrap();
    (router, sinks, Hold { held, release })
}

fn serve(declaration: MethodSubscription) -> (Server, Client, Sinks, Hold) {
    let (router, sinks, hold) = router(declaration);
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), Options::default()).unwrap();
    let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
    (server, client, sinks, hold)
}

/// The next `n` items, each expected to be an item.
fn items(subscription: &mut Subscription<u64>, n: usize) -> Vec<u64> {
    (0..n)
        .map(|_| subscription.next().expect("an item").expect("not an error"))
        .collect()
}

#[test]
fn items_arrive_in_order_and_unsubscribe_is_answered_and_seen_by_the_server() {
    within(LIMIT, || {
        let eth = MethodSubscription::ethereum();
        let (server, client, sinks, _hold) = serve(eth.clone());
        let mut heads = client.subscribe::<_, u64>(&eth, &("items",)).unwrap();
        assert_eq!(heads.id().get(), r#""0x1""#);
        let sink = sinks.recv().unwrap();
        // From another thread than the handler's, as a producer of the node's would; a
        // queue's worth (64) at a time, read before the next.
        for round in 0..3u64 {
            let producer = sink.clone();
            let sent = std::thread::spawn(move || {
                for n in round * 64..(round + 1) * 64 {
                    producer.send(&n).unwrap();
                }
            });
            sent.join().unwrap();
            let expected: Vec<u64> = (round * 64..(round + 1) * 64).collect();
            assert_eq!(items(&mut heads, 64), expected);
        }

        // A second subscription on the same connection gets its own id and items.
        let mut second = client.subscribe::<_, u64>(&eth, &("items",)).unwrap();
        assert_eq!(second.id().get(), r#""0x2""#);
        let other = sinks.recv().unwrap();
        other.send(&7).unwrap();
        assert_eq!(items(&mut second, 1), [7]);

        assert!(heads.unsubscribe().unwrap());
        assert_eq!(sink.wait_closed(), Ended::Unsubscribed);
        assert_eq!(sink.send(&1), Err(Ended::Unsubscribed));
        // The other one goes on.
        other.send(&8).unwrap();
        assert_eq!(items(&mut second, 1), [8]);
        // Unsubscribing an id the server does not know is answered false.
        let unknown = sansrpc::RawValue::from_json(r#"["0x99"]"#).unwrap();
        let answer = client.call_raw("eth_unsubscribe", Some(unknown)).unwrap();
        assert_eq!(answer.get(), "false");
        drop(second);
        client.close();
        server.shutdown();
    });
}

#[test]
fn a_rejected_subscribe_fails_with_the_handlers_error() {
    within(LIMIT, || {
        let eth = MethodSubscription::ethereum();
        let (server, client, _sinks, _hold) = serve(eth.clone());
        match client.subscribe::<_, u64>(&eth, &("logs",)) {
            Err(CallError::Rpc(e)) => {
                assert_eq!((e.code, &*e.message), (-32602, "unknown subscription"))
            }
            other => panic!("the handler's error, not {other:?}"),
        }
        // Params that do not fit the handler's type.
        match client.subscribe::<_, u64>(&eth, &(1, 2, 3)) {
            Err(CallError::Rpc(e)) => assert_eq!(e.code, -32602),
            other => panic!("invalid params, not {other:?}"),
        }
        client.close();
        server.shutdown();
    });
}

#[test]
fn dropping_the_iterator_unsubscribes() {
    within(LIMIT, || {
        let eth = MethodSubscription::ethereum();
        let (server, client, sinks, _hold) = serve(eth.clone());
        let mut heads = client.subscribe::<_, u64>(&eth, &("items",)).unwrap();
        let sink = sinks.recv().unwrap();
        sink.send(&1).unwrap();
        assert_eq!(items(&mut heads, 1), [1]);
        drop(heads);
        assert_eq!(sink.wait_closed(), Ended::Unsubscribed);
        // The connection goes on.
        let mut again = client.subscribe::<_, u64>(&eth, &("items",)).unwrap();
        let sink = sinks.recv().unwrap();
        sink.send(&2).unwrap();
        assert_eq!(items(&mut again, 1), [2]);
        drop(again);
        client.close();
        server.shutdown();
    });
}

/// A queue's bound that holds `n` items of `len` bytes of JSON.
fn room_for(n: usize, len: usize) -> usize {
    n * (len + sansrpc::connection::subscriptions::ITEM_OVERHEAD)
}

#[test]
fn a_producer_that_sends_follows_a_held_reader_without_losing_an_item() {
    within(LIMIT, || {
        // The defaults: 1 MiB a queue, the connection closed when try_send overflows it.
        let eth = MethodSubscription::ethereum();
        let (server, client, sinks, hold) = serve(eth.clone());
        let mut heads = client.subscribe::<_, String>(&eth, &("items",)).unwrap();
        let sink = sinks.recv().unwrap();
        client.notify_raw("hold", None).unwrap();
        hold.held.recv().unwrap();
        // 2,000 items of 1 KiB (2 MiB) while the server's driver is held: send waits for
        // room (the queue's bound) instead of dropping or closing.
        let producer = sink.clone();
        let sent = std::thread::spawn(move || {
            for n in 0..2000u64 {
                producer
                    .send(&format!("{n:04}{}", "x".repeat(1020)))
                    .unwrap();
            }
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!sent.is_finished(), "the producer waits for room");
        hold.release.send(()).unwrap();
        for n in 0..2000u64 {
            let item = heads.next().expect("an item").expect("not an error");
            assert_eq!(item[..4], format!("{n:04}"));
        }
        sent.join().unwrap();
        drop(heads);
        client.close();
        server.shutdown();
    });
}

#[test]
fn a_subscriber_that_cannot_keep_up_is_disconnected_by_default() {
    within(LIMIT, || {
        let eth = MethodSubscription::ethereum().with_capacity(room_for(4, 1));
        let (server, client, sinks, hold) = serve(eth.clone());
        let mut heads = client.subscribe::<_, u64>(&eth, &("items",)).unwrap();
        let sink = sinks.recv().unwrap();
        client.notify_raw("hold", None).unwrap();
        hold.held.recv().unwrap();
        for n in 0..4u64 {
            sink.try_send(&n).unwrap();
        }
        assert_eq!(sink.try_send(&4), Err(Ended::Lagged));
        assert_eq!(sink.wait_closed(), Ended::Lagged);
        hold.release.send(()).unwrap();
        // What was queued, then the end of the connection (no lag notice, no error).
        assert_eq!(items(&mut heads, 4), [0, 1, 2, 3]);
        assert!(heads.next().is_none());
        let after = client.call_raw("eth_blockNumber", None);
        assert!(
            matches!(after, Err(CallError::Ended(_) | CallError::Send(_))),
            "the connection is closed: {after:?}"
        );
        client.close();
        server.shutdown();
    });
}

#[test]
fn a_slow_reader_is_told_how_many_items_the_server_dropped() {
    within(LIMIT, || {
        let small = MethodSubscription::ethereum()
            .with_capacity(room_for(4, 2))
            .with_lag(LagPolicy::DropOldest)
            .with_notices(true);
        let (server, client, sinks, hold) = serve(small.clone());
        let mut heads = client.subscribe::<_, u64>(&small, &("items",)).unwrap();
        let sink = sinks.recv().unwrap();
        // The server's driver is held: 100 items meet a queue of 4.
        client.notify_raw("hold", None).unwrap();
        hold.held.recv().unwrap();
        for n in 0..100u64 {
            sink.try_send(&n).unwrap();
        }
        hold.release.send(()).unwrap();
        match heads.next() {
            Some(Err(SubscriptionError::Lagged(n))) => assert_eq!(n, 96),
            other => panic!("the lag notice, not {other:?}"),
        }
        assert_eq!(items(&mut heads, 4), [96, 97, 98, 99]);
        // It goes on.
        sink.send(&100).unwrap();
        assert_eq!(items(&mut heads, 1), [100]);
        drop(heads);
        client.close();
        server.shutdown();
    });
}

#[test]
fn lag_policy_close_ends_a_slow_reader_after_the_items_queued() {
    within(LIMIT, || {
        let strict = MethodSubscription::ethereum()
            .with_capacity(room_for(4, 1))
            .with_lag(LagPolicy::Close)
            .with_notices(true);
        let (server, client, sinks, hold) = serve(strict.clone());
        let mut heads = client.subscribe::<_, u64>(&strict, &("items",)).unwrap();
        let sink = sinks.recv().unwrap();
        client.notify_raw("hold", None).unwrap();
        hold.held.recv().unwrap();
        for n in 0..4u64 {
            sink.try_send(&n).unwrap();
        }
        assert_eq!(sink.try_send(&4), Err(Ended::Lagged));
        assert_eq!(sink.wait_closed(), Ended::Lagged);
        hold.release.send(()).unwrap();
        assert_eq!(items(&mut heads, 4), [0, 1, 2, 3]);
        match heads.next() {
            Some(Err(SubscriptionError::Ended(e))) => assert_eq!(e.code, -32006),
            other => panic!("the end with its error, not {other:?}"),
        }
        assert!(heads.next().is_none());
        client.close();
        server.shutdown();
    });
}

#[test]
fn the_servers_close_ends_the_iterator_after_its_items() {
    within(LIMIT, || {
        // sansrpc's notices on: the server's error reaches the client.
        let eth = MethodSubscription::ethereum().with_notices(true);
        let (server, client, sinks, _hold) = serve(eth.clone());
        let mut with_error = client.subscribe::<_, u64>(&eth, &("items",)).unwrap();
        let sink = sinks.recv().unwrap();
        sink.send(&1).unwrap();
        sink.close(Some(ErrorObject::fixed(-32050, "no more")));
        assert_eq!(sink.send(&2), Err(Ended::ByServer));
        assert_eq!(items(&mut with_error, 1), [1]);
        match with_error.next() {
            Some(Err(SubscriptionError::Ended(e))) => {
                assert_eq!((e.code, &*e.message), (-32050, "no more"))
            }
            other => panic!("the server's error, not {other:?}"),
        }
        assert!(with_error.next().is_none());
        assert_eq!(sink.wait_closed(), Ended::ByServer);

        // Every sink dropped: it just ends; unsubscribing then is answered false.
        let mut quiet = client.subscribe::<_, u64>(&eth, &("items",)).unwrap();
        let sink = sinks.recv().unwrap();
        sink.send(&3).unwrap();
        drop(sink);
        assert_eq!(items(&mut quiet, 1), [3]);
        // The server's end has no notification: the client learns it from its answer.
        assert!(!quiet.unsubscribe().unwrap());
        client.close();
        server.shutdown();
    });
}

#[test]
fn the_connections_end_ends_the_iterator_and_the_server_sees_the_client_go() {
    within(LIMIT, || {
        let eth = MethodSubscription::ethereum();
        let (server, client, sinks, _hold) = serve(eth.clone());
        // The server goes away: the client's iterator ends after what came.
        let mut heads = client.subscribe::<_, u64>(&eth, &("items",)).unwrap();
        let sink = sinks.recv().unwrap();
        sink.send(&1).unwrap();
        assert_eq!(items(&mut heads, 1), [1]);
        server.shutdown();
        assert_eq!(sink.wait_closed(), Ended::Closed);
        assert!(heads.next().is_none());
        assert!(heads.next().is_none());
        drop(heads);
        client.close();

        // The client goes away: the server's sink sees the connection closed.
        let (server, client, sinks, _hold) = serve(eth.clone());
        let heads = client.subscribe::<_, u64>(&eth, &("items",)).unwrap();
        let sink = sinks.recv().unwrap();
        client.close();
        assert_eq!(sink.wait_closed(), Ended::Closed);
        assert_eq!(sink.send(&1), Err(Ended::Closed));
        drop(heads);
        server.shutdown();
    });
}

#[cfg(unix)]
#[test]
fn a_subscription_over_a_unix_socket_as_geths_ipc() {
    use sansrpc_blocking::{connect_unix, serve_unix};
    within(LIMIT, || {
        let path = std::env::temp_dir().join(format!("sansrpc-subs-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        // Substrate's shape: decimal string ids.
        let heads = MethodSubscription::new(
            "chain_subscribeNewHeads",
            "chain_newHead",
            "chain_unsubscribeNewHeads",
        );
        let (router, sinks, _hold) = router(heads.clone());
        let server = serve_unix(&path, Arc::new(router), Options::default()).unwrap();
        let client = connect_unix(&path, Options::default()).unwrap();
        let mut stream = client.subscribe::<_, u64>(&heads, &("items",)).unwrap();
        assert_eq!(stream.id().get(), r#""1""#);
        let sink = sinks.recv().unwrap();
        for n in 0..50u64 {
            sink.send(&n).unwrap();
        }
        assert_eq!(items(&mut stream, 50), (0..50).collect::<Vec<_>>());
        assert!(stream.unsubscribe().unwrap());
        assert_eq!(sink.wait_closed(), Ended::Unsubscribed);
        client.close();
        server.shutdown();
    });
}

#[test]
fn a_connection_that_cannot_push_refuses_subscriptions_on_both_sides() {
    within(LIMIT, || {
        // What plain HTTP sets (this adapter has no HTTP transport; a user's own may).
        let mut no_push = Options::default();
        no_push.connection.push = false;
        let eth = MethodSubscription::ethereum();
        let (router, _sinks, _hold) = router(eth.clone());
        let server = serve_tcp("127.0.0.1:0", Arc::new(router), no_push.clone()).unwrap();
        // The server answers -32601, to a client that sends the subscribe anyway.
        let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
        match client.subscribe::<_, u64>(&eth, &("items",)) {
            Err(CallError::Rpc(e)) => {
                assert_eq!(e.code, -32601);
                assert!(e.message.contains("not supported over plain HTTP"), "{e}");
            }
            other => panic!("refused by the server, not {other:?}"),
        }
        client.close();
        // Our client does not send it.
        let client = connect_tcp(server.local_addr(), no_push).unwrap();
        match client.subscribe::<_, u64>(&eth, &("items",)) {
            Err(CallError::Send(sansrpc::connection::SendError::NoPush)) => {}
            other => panic!("refused by the client, not {other:?}"),
        }
        client.close();
        server.shutdown();
    });
}
