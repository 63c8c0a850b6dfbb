//! Streams on tokio, through the shared driver: an async producer over TCP, read with
//! pipelined pulls, and cancelled by dropping the reader.

use std::sync::Mutex;
use std::time::Duration;

use futures::StreamExt;
use sansrpc::ErrorObject;
use sansrpc_tokio::{AsyncRouter, Builder, StreamOptions};
use tokio::sync::oneshot;

/// Says so on its channel when dropped.
struct Dropped(Option<oneshot::Sender<()>>);

impl Drop for Dropped {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_stream_over_tcp_with_cancel_on_drop() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, dropped) = oneshot::channel();
    let once = Mutex::new(Some(tx));
    let mut router = AsyncRouter::new();
    // Items that take time to come: one every millisecond, forever.
    router
        .stream_method("ticks", move |(): ()| {
            let guard = Dropped(once.lock().unwrap().take());
            Ok(futures::stream::unfold(0u64, move |n| {
                let _ = &guard;
                async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    Some((Ok::<u64, ErrorObject<'static>>(n + 1), n + 1))
                }
            }))
        })
        .unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let conn = sansrpc_tokio::spawn(Builder::new().router(router), sansrpc_tokio::tcp(stream));
        let _ = conn.driver.await;
    });
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));
    let mut ticks = conn
        .client
        .stream::<_, u64>("ticks", &(), StreamOptions::new(4, 16))
        .await
        .unwrap();
    for expected in 1..=50 {
        assert_eq!(ticks.next().await.unwrap().unwrap(), expected);
    }
    drop(ticks);
    tokio::time::timeout(Duration::from_secs(15), dropped)
        .await
        .expect("the producer was never dropped")
        .expect("the producer's guard says so");
}
