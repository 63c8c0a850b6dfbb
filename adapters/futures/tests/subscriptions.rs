//! Method subscriptions on the futures driver under smol, over real TCP on 127.0.0.1: the
//! driver runs the subscription's handler and moves its items, whatever the runtime.

use std::time::Duration;

use futures::StreamExt;
use sansrpc::connection::subscriptions::{IdStyle, MethodSubscription};
use sansrpc_futures::{transport, AsyncIoTimer, AsyncRouter, Builder, Ended, Subscription};

/// Substrate's shape: its own names and decimal string ids.
fn substrate() -> MethodSubscription {
    MethodSubscription::new(
        "chain_subscribeNewHeads",
        "chain_newHead",
        "chain_unsubscribeNewHeads",
    )
    .with_ids(IdStyle::String)
}

#[test]
fn a_substrate_subscription_under_smol_streams_and_unsubscribes() {
    smol::block_on(async {
        let (tx, mut ended) = futures::channel::mpsc::unbounded::<Ended>();
        let mut router = AsyncRouter::new();
        router
            .subscription(substrate(), move |pending, (): ()| {
                let tx = tx.clone();
                async move {
                    let sink = pending.accept().await.unwrap();
                    let watch = sink.clone();
                    smol::spawn(async move {
                        let _ = tx.unbounded_send(watch.closed().await);
                    })
                    .detach();
                    for n in 0u64.. {
                        if sink.send(&n).await.is_err() {
                            break;
                        }
                        async_io::Timer::after(Duration::from_millis(5)).await;
                    }
                }
            })
            .unwrap();
        let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = smol::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (_, driver) = Builder::new()
                .router(router)
                .connect(transport::tcp(stream), AsyncIoTimer);
            driver.await
        });

        let stream = async_net::TcpStream::connect(addr).await.unwrap();
        let (client, driver) = Builder::new().connect(transport::tcp(stream), AsyncIoTimer);
        let driver = smol::spawn(driver);
        let mut heads: Subscription<u64> = client.subscribe(&substrate(), &()).await.unwrap();
        assert_eq!(heads.id().get(), r#""1""#, "a decimal string id");
        let mut seen = Vec::new();
        while seen.len() < 5 {
            seen.push(heads.next().await.unwrap().unwrap());
        }
        assert_eq!(seen, [0, 1, 2, 3, 4]);
        assert!(heads.unsubscribe().await.unwrap());
        assert_eq!(ended.next().await, Some(Ended::Unsubscribed));
        drop(client);
        driver.await.unwrap();
        server.await.unwrap();
    });
}
