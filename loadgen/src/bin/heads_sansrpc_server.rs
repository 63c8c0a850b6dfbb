//! sansrpc on tokio (`sansrpc-tokio`) serving Ethereum's `newHeads` over WebSocket, as a
//! node would: `eth_subscribe("newHeads")` answers a subscription id, each new block's
//! header follows as an `eth_subscription` notification, `eth_unsubscribe(id)` ends it.
//!
//! The chain grows a block every 100 ms (`chain::BLOCK_TIME`), each header 1 KiB of JSON
//! (`chain::header`). A producer task publishes each block once on a broadcast channel;
//! each subscription's handler takes it from there and sends it into its sink. The
//! adapter's default options, except at most 10,000 connections (as `heads-jsonrpsee-server`).
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
use sansrpc_tokio::{ws, AsyncRouter, Builder, ServeOptions};
use tokio::sync::broadcast;

use chain::Header;

fn router(heads: broadcast::Sender<Arc<Header>>) -> AsyncRouter {
    let mut router = AsyncRouter::new();
    router
        .subscription(
            MethodSubscription::ethereum(),
            move |pending, (kind,): (String,)| {
                let mut blocks = heads.subscribe();
                async move {
                    if kind != "newHeads" {
                        return pending.reject(ErrorObject::fixed(-32602, "newHeads only"));
                    }
                    let Ok(sink) = pending.accept().await else {
                        return;
                    };
                    loop {
                        match blocks.recv().await {
                            Ok(header) => {
                                if sink.send(&*header).is_err() {
                                    return; // unsubscribed, or gone
                                }
                            }
                            Err(broadcast::error::RecvError::Lagged(_)) => continue,
                            Err(broadcast::error::RecvError::Closed) => return,
                        }
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
    let (heads, _) = broadcast::channel(16);
    let producer = heads.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(chain::BLOCK_TIME);
        for n in 0u64.. {
            ticks.tick().await;
            let _ = producer.send(Arc::new(chain::header(n)));
        }
    });
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let mut options = ServeOptions::default();
    options.max_connections = 10_000;
    let builder = Builder::new().router(router(heads));
    let shutdown = std::future::pending::<()>();
    ws::serve_with_options(listener, builder, options, shutdown, Duration::from_secs(1)).await
}
