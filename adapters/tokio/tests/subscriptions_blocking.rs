//! Method subscriptions between the adapters, over TCP on 127.0.0.1: the blocking
//! adapter's server (the core router's subscription, a sink on a thread) followed by this
//! adapter's client stream, and this adapter's server followed by the blocking client's
//! iterator. Items in order, unsubscribe answered and seen by the server, the lag notice.

#[path = "../../../tests/support/common.rs"]
mod common;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use common::{within, LIMIT};
use futures::StreamExt;
use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::router::Router;
use sansrpc::ErrorObject;
use sansrpc_blocking::SubscriptionRouter;
use sansrpc_tokio::{sansrpc, AsyncRouter, Builder, Ended};
use tokio::net::TcpListener;

#[tokio::test]
async fn the_blocking_servers_subscription_streams_to_the_tokio_client() {
    within(LIMIT, async {
        let eth = MethodSubscription::ethereum().with_capacity(8 * 66);
        let (sinks_tx, sinks) = mpsc::channel();
        let sinks_tx = Mutex::new(sinks_tx);
        let mut router = Router::new();
        router
            .subscription(eth.clone(), move |pending, (kind,): (String,)| {
                if kind != "newHeads" {
                    return pending.reject(ErrorObject::fixed(-32602, "newHeads only"));
                }
                let sink = pending.accept().expect("accepted");
                sinks_tx.lock().unwrap().send(sink).unwrap();
            })
            .unwrap();
        let options = sansrpc_blocking::Options::default();
        let server = sansrpc_blocking::serve_tcp("127.0.0.1:0", Arc::new(router), options).unwrap();
        let stream = tokio::net::TcpStream::connect(server.local_addr())
            .await
            .unwrap();
        let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));

        let mut heads = conn
            .client
            .subscribe::<_, u64>(&eth, &("newHeads",))
            .await
            .unwrap();
        assert_eq!(heads.id().get(), r#""0x1""#);
        let sink = tokio::task::spawn_blocking(move || sinks.recv().unwrap())
            .await
            .unwrap();
        // A producer thread of the server's sends a queue's worth.
        let producer = sink.clone();
        std::thread::spawn(move || {
            for n in 0..8u64 {
                producer.send(&n).unwrap();
            }
        })
        .join()
        .unwrap();
        let mut seen = Vec::new();
        while seen.len() < 8 {
            match heads.next().await {
                Some(Ok(n)) => seen.push(n),
                other => panic!("an item, not {other:?}"),
            }
        }
        assert_eq!(seen, (0..8).collect::<Vec<_>>());

        assert!(heads.unsubscribe().await.unwrap());
        let closed = tokio::task::spawn_blocking(move || sink.wait_closed());
        assert_eq!(closed.await.unwrap(), Ended::Unsubscribed);

        // Rejected by the handler: the tokio client gets its error.
        match conn.client.subscribe::<_, u64>(&eth, &("logs",)).await {
            Err(sansrpc_tokio::CallError::Rpc(e)) => assert_eq!(e.code, -32602),
            other => panic!("the handler's error, not {other:?}"),
        }
        conn.client.close().await;
        tokio::task::spawn_blocking(move || server.shutdown())
            .await
            .unwrap();
    })
    .await;
}

#[tokio::test]
async fn the_tokio_servers_subscription_iterates_on_the_blocking_client() {
    within(LIMIT, async {
        let eth = MethodSubscription::ethereum();
        let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
        let mut router = AsyncRouter::new();
        router
            .subscription(eth.clone(), move |pending, (count,): (u64,)| {
                let ended_tx = ended_tx.clone();
                async move {
                    let sink = pending.accept().await.expect("accepted");
                    // The handler is dropped when the subscription is over: a watcher
                    // reports.
                    let watch = sink.closed();
                    tokio::spawn(async move {
                        let _ = ended_tx.send(watch.await);
                    });
                    for n in 0..count {
                        sink.send(&n).await.unwrap();
                    }
                    std::future::pending::<()>().await;
                }
            })
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let builder = Builder::new().router(router);
        let grace = std::time::Duration::from_secs(1);
        tokio::spawn(sansrpc_tokio::serve_tcp(listener, builder, shutdown, grace));

        let follow = tokio::task::spawn_blocking(move || {
            let options = sansrpc_blocking::Options::default();
            let client = sansrpc_blocking::connect_tcp(addr, options).unwrap();
            let mut heads = client.subscribe::<_, u64>(&eth, &(32,)).unwrap();
            let seen: Vec<u64> = heads.by_ref().take(32).map(Result::unwrap).collect();
            let answer = heads.unsubscribe().unwrap();
            client.close();
            (seen, answer)
        });
        let (seen, answer) = follow.await.unwrap();
        assert_eq!(seen, (0..32).collect::<Vec<_>>());
        assert!(answer);
        assert_eq!(ended.recv().await, Some(Ended::Unsubscribed));
        let _ = stop.send(());
    })
    .await;
}
