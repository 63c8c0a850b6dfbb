//! sansrpc on tokio (`sansrpc-tokio`) serving Ethereum's `newHeads` over WebSocket, as a
//! node would: `eth_subscribe("newHeads")` answers a subscription id, each new block's
//! header follows as an `eth_subscription` notification, `eth_unsubscribe(id)` ends it.
//!
//! The chain grows a block every 100 ms (`chain::BLOCK_TIME`), each header 1 KiB of JSON
//! (`chain::header`). Every subscription's sink goes into one `Fanout` as its handler
//! accepts it (the handler then ends: no task per subscriber); the producer sends each
//! block to the fan-out once, which serializes it once and queues it, shared, for every
//! subscriber, each with its own bound and the declaration's lag policy. The adapter's
//! default options, except at most 10,000 connections (as `heads-jsonrpsee-server`).
//!
//! `heads-sansrpc-server [ADDR]` (default `127.0.0.1:0`): the first line on stdout is the
//! bound address; it serves until killed.

#[allow(dead_code)] // shared with the client, which uses the rest
#[path = "../chain.rs"]
mod chain;

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::ErrorObject;
use sansrpc_tokio::{ws, AsyncRouter, Builder, Fanout, ServeOptions};

fn router(heads: Arc<Fanout>) -> AsyncRouter {
    let mut router = AsyncRouter::new();
    router
        .subscription(
            MethodSubscription::ethereum(),
            move |pending, (kind,): (String,)| {
                let heads = Arc::clone(&heads);
                async move {
                    if kind != "newHeads" {
                        return pending.reject(ErrorObject::fixed(-32602, "newHeads only"));
                    }
                    if let Ok(sink) = pending.accept().await {
                        heads.add(sink);
                    }
                }
            },
        )
        .expect("eth_subscribe registers");
    router
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let heads = Arc::new(Fanout::new());
    let producer = Arc::clone(&heads);
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(chain::block_time());
        for n in 0u64.. {
            ticks.tick().await;
            producer.send(&chain::header(n));
        }
    });
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let mut options = ServeOptions::default();
    options.max_connections = 10_000;
    let builder = Builder::new().router(router(heads));
    let shutdown = std::future::pending::<()>();
    ws::serve_with(listener, builder, options, shutdown, Duration::from_secs(1)).await
}
