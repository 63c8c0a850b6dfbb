//! A reconnecting tokio client keeps its subscription across a server restart: the server
//! is killed (its hub and every subscription gone with it), a new one listens on the same
//! port, the client reconnects by itself and replays `rpc.subscribe`, and a publish on the
//! new server reaches it, all over real TCP.

use std::sync::Arc;
use std::time::Duration;

use sansrpc::ext::reconnect::{Backoff, PendingPolicy, ReconnectPolicy, State};
use sansrpc::RawValue;
use sansrpc_pubsub::hub::HubConfig;
use sansrpc_pubsub::store::{MemoryStore, RetentionPolicy};
use sansrpc_pubsub::PubSub;
use sansrpc_tokio::reconnect;
use sansrpc_tokio::{AsyncRouter, Builder, Extension};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(30);

fn raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).unwrap()
}

/// A pub/sub server with a hub of its own on `listener`; the hub is returned to publish on.
fn serve(listener: TcpListener) -> (Arc<PubSub>, tokio::task::JoinHandle<()>) {
    let hub = Arc::new(PubSub::new(
        MemoryStore::new(RetentionPolicy::default()),
        HubConfig::default(),
    ));
    let builder = Builder::new()
        .router(AsyncRouter::new())
        .extension(Extension::new(hub.clone()));
    let task = tokio::spawn(async move {
        let forever = std::future::pending::<()>();
        let _ = sansrpc_tokio::serve_tcp(listener, builder, forever, Duration::ZERO).await;
    });
    (hub, task)
}

async fn rebind(addr: std::net::SocketAddr) -> TcpListener {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return listener,
            Err(e) if tokio::time::Instant::now() > deadline => panic!("rebinding {addr}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Publishes until the subscriber has it (the replayed subscribe may still be on its way
/// when the client reports it is open again).
async fn publish_until_received(
    hub: &PubSub,
    received: &mut mpsc::UnboundedReceiver<String>,
    data: &str,
) -> String {
    loop {
        hub.publish("chat.room", &raw(data)).unwrap();
        match tokio::time::timeout(Duration::from_millis(200), received.recv()).await {
            Ok(Some(delivery)) => return delivery,
            Ok(None) => panic!("the client's router is gone"),
            Err(_) => continue,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnecting_subscriber_is_subscribed_again_on_the_new_server() {
    tokio::time::timeout(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (hub, server) = serve(listener);

        // The subscriber: `rpc.notification` deliveries go to a channel.
        let (tx, mut received) = mpsc::unbounded_channel();
        let mut router = AsyncRouter::new();
        router
            .raw_notification("rpc.notification", move |params| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(params.map(|p| p.get().to_owned()).unwrap_or_default());
                }
            })
            .unwrap();
        let policy = ReconnectPolicy {
            backoff: Backoff::Exponential {
                initial: Duration::from_millis(20),
                max: Duration::from_millis(250),
                multiplier: 2.0,
                max_attempts: 100,
            },
            jitter: 0.5,
            connect_timeout: Duration::from_secs(5),
            pending: PendingPolicy::Fail,
        };
        let conn = reconnect::spawn(Builder::new().router(router), policy, reconnect::tcp(addr));
        let client = conn.client;
        client.wait_open().await.unwrap();
        let answer = client
            .call_raw("rpc.subscribe", Some(&raw(r#"{"topic":"chat.*"}"#)))
            .await
            .unwrap();
        assert_eq!(answer.get(), r#"{"subscribed":true}"#);
        let first = publish_until_received(&hub, &mut received, r#""before""#).await;
        assert_eq!(first, r#"{"topic":"chat.room","data":"before"}"#);

        // The server dies with its hub; a new one, knowing no subscription, takes the port.
        let mut watch = client.watch();
        server.abort();
        let _ = server.await;
        drop(hub);
        watch.wait_for(|s| s == State::Connecting).await;
        let (hub, _server) = serve(rebind(addr).await);
        client.wait_open().await.unwrap();
        while received.try_recv().is_ok() {}
        let after = publish_until_received(&hub, &mut received, r#""after""#).await;
        assert_eq!(after, r#"{"topic":"chat.room","data":"after"}"#);
        assert!(client.connections() >= 2);
    })
    .await
    .expect("done within the limit");
}
