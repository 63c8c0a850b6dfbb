//! Streams on tokio, through the shared driver: an async producer over TCP, read with
//! pipelined pulls, and cancelled by dropping the reader.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use sansrpc::ErrorObject;
use sansrpc_tokio::{AsyncRouter, Builder, StreamOptions};

struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_stream_over_tcp_with_cancel_on_drop() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let mut router = AsyncRouter::new();
    // Items that take time to come: one every millisecond, forever.
    router
        .stream_method("ticks", move |(): ()| {
            let guard = Dropped(flag.clone());
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
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !dropped.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the producer was never dropped"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
