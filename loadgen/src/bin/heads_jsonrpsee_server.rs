//! jsonrpsee's server serving Ethereum's `newHeads` over WebSocket, the way reth and other
//! jsonrpsee nodes do: `eth_subscribe("newHeads")` answers a subscription id (`0x`-prefixed
//! hex, as reth's id provider writes them), each new block's header follows as an
//! `eth_subscription` notification, `eth_unsubscribe(id)` ends it.
//!
//! The chain, the producer and the handlers are those of `heads-sansrpc-server`: a block
//! every 100 ms, 1 KiB headers, published once on a broadcast channel, each subscription's
//! handler sending it into its sink (`to_raw_value`, the documented way). Default options
//! except the connection limit, raised from 100 to 10,000.
//!
//! `heads-jsonrpsee-server [ADDR]` (default `127.0.0.1:0`): the first line on stdout is the
//! bound address; it serves until killed.

#[allow(dead_code)] // shared with the client, which uses the rest
#[path = "../chain.rs"]
mod chain;

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use jsonrpsee::core::traits::IdProvider;
use jsonrpsee::core::SubscriptionError;
use jsonrpsee::server::{RpcModule, Server, ServerConfig};
use jsonrpsee::types::{ErrorObjectOwned, SubscriptionId};
use tokio::sync::broadcast;

use chain::Header;

/// Subscription ids in Ethereum's form: `0x`-prefixed hex.
#[derive(Debug, Default)]
struct HexIds(AtomicU64);

impl IdProvider for HexIds {
    fn next_id(&self) -> SubscriptionId<'static> {
        let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        SubscriptionId::Str(format!("{n:#x}").into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let (heads, _) = broadcast::channel::<Arc<Header>>(16);
    let producer = heads.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(chain::block_time());
        for n in 0u64.. {
            ticks.tick().await;
            let _ = producer.send(Arc::new(chain::header(n)));
        }
    });
    let config = ServerConfig::builder()
        .max_connections(10_000)
        .set_id_provider(HexIds::default())
        .build();
    let server = Server::builder().set_config(config).build(addr).await?;
    println!("{}", server.local_addr()?);
    std::io::stdout().flush()?;

    let mut module = RpcModule::new(heads);
    module.register_subscription(
        "eth_subscribe",
        "eth_subscription",
        "eth_unsubscribe",
        |params, pending, heads, _| async move {
            if params.one::<String>().ok().as_deref() != Some("newHeads") {
                let e = ErrorObjectOwned::owned(-32602, "newHeads only", None::<()>);
                pending.reject(e).await;
                return Ok::<(), SubscriptionError>(());
            }
            let mut blocks = heads.subscribe();
            let sink = pending.accept().await?;
            loop {
                tokio::select! {
                    _ = sink.closed() => return Ok(()),
                    block = blocks.recv() => match block {
                        Ok(header) => {
                            let json = serde_json::value::to_raw_value(&*header)?;
                            sink.send(json).await?;
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return Ok(()),
                    },
                }
            }
        },
    )?;
    let handle = server.start(module);
    handle.stopped().await;
    Ok(())
}
