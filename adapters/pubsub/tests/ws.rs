//! Pub/sub over real WebSocket connections on 127.0.0.1, served by the tokio adapter, with
//! a publisher on a thread of its own racing the connections' drivers: a parked
//! connection's notifications are written by the publisher, past its driver
//! (`Hub::open_bypass`), and the driver takes that back on each turn.

use std::sync::Arc;
use std::time::Duration;

use sansrpc::RawValue;
use sansrpc_pubsub::hub::HubConfig;
use sansrpc_pubsub::store::{MemoryStore, RetentionPolicy};
use sansrpc_pubsub::PubSub;
use sansrpc_tokio::{ws, AsyncRouter, Builder, Extension};
use serde_json::Value;

#[path = "../../../tests/support/echoes.rs"]
mod echoes;
use echoes::Echoes;

const LIMIT: Duration = Duration::from_secs(60);

/// Three subscribers to `t` with 4 KiB receive buffers, reading in bursts with pauses (so
/// that some of the publisher's writes are taken in part or not at all, and the socket
/// fills), each asking an `echo` of 3 KiB every 25 notifications (which wakes its driver
/// between them, and whose answer the socket takes in part too), while a thread publishes
/// 3,000 messages of 300 bytes on two worker threads' server. Every subscriber gets every
/// message whole, once, in order, and every answer to its requests in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_written_past_a_parked_driver_keep_their_order_with_its_own_output() {
    tokio::time::timeout(LIMIT, async {
        const MESSAGES: usize = 3_000;
        const SUBSCRIBERS: usize = 3;
        let mut config = HubConfig::default();
        config.persist = false;
        // Room for every message: a subscriber that falls behind is not dropped from here.
        config.max_queued = 1 << 20;
        config.max_queued_bytes = 64 << 20;
        let pubsub = Arc::new(PubSub::new(
            MemoryStore::new(RetentionPolicy::default()),
            config,
        ));
        let mut router = AsyncRouter::new();
        router
            .raw_method("echo", |params| async move {
                Ok(params.unwrap_or_else(|| RawValue::from_string("null".into()).unwrap()))
            })
            .unwrap();
        let builder = Builder::new()
            .router(router)
            .extension(Extension::new(Arc::clone(&pubsub) as Arc<_>));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = std::future::pending::<()>();
        tokio::spawn(ws::serve(
            listener,
            builder,
            shutdown,
            Duration::from_secs(1),
        ));
        let data = |n: usize| format!("{n:06}{}", "z".repeat(294));
        let (subscribed, all_subscribed) = std::sync::mpsc::channel::<()>();
        let mut readers = Vec::new();
        for who in 0..SUBSCRIBERS {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.set_recv_buffer_size(4096).unwrap();
            let stream = socket.connect(addr).await.unwrap().into_std().unwrap();
            stream.set_nonblocking(false).unwrap();
            let subscribed = subscribed.clone();
            readers.push(tokio::task::spawn_blocking(move || {
                use ws::tungstenite::{client, Message};
                let (mut ws, _) = client::client(format!("ws://{addr}"), stream).unwrap();
                let subscribe =
                    r#"{"jsonrpc":"2.0","id":0,"method":"rpc.subscribe","params":{"topic":"t"}}"#;
                ws.send(Message::text(subscribe)).unwrap();
                let (mut seen, mut echoes) = (0usize, Echoes::new(who));
                while seen < MESSAGES || echoes.waiting() {
                    let text = ws.read().unwrap().into_text().unwrap();
                    let v: Value = serde_json::from_str(&text).unwrap();
                    if v["method"] == "rpc.notification" {
                        assert_eq!(v["params"]["topic"], "t");
                        assert_eq!(v["params"]["data"], data(seen), "subscriber {who}");
                        seen += 1;
                        echoes.after_item(&mut ws, seen);
                    } else if v["id"] == 0 {
                        assert_eq!(v["result"]["subscribed"], true, "{text}");
                        subscribed.send(()).unwrap();
                    } else {
                        echoes.answer(&v);
                    }
                }
                (seen, echoes.answered)
            }));
        }
        drop(subscribed);
        for _ in 0..SUBSCRIBERS {
            all_subscribed.recv().unwrap();
        }
        let publisher = std::thread::spawn(move || {
            for n in 0..MESSAGES {
                let message = RawValue::from_string(format!("\"{}\"", data(n))).unwrap();
                let receipt = pubsub.publish("t", &message).unwrap();
                assert_eq!(receipt.delivered(), SUBSCRIBERS, "message {n}");
                if n % 100 == 99 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        });
        for reader in readers {
            let got = reader.await.unwrap();
            assert_eq!(got, (MESSAGES, MESSAGES as u64 / 25));
        }
        publisher.join().unwrap();
    })
    .await
    .expect("within the limit");
}
