//! sansrpc's topic pub/sub (`sansrpc-pubsub`, the WebSocket seed's `rpc.subscribe` /
//! `rpc.notification`) on tokio, fed by one publisher: the same chain as the newHeads
//! servers (a 1 KiB header every 100 ms), each block published once to the topic
//! `newHeads`, which the hub fans out to every subscribed connection (the notification's
//! params written once and shared). Ephemeral topics (`HubConfig::persist` off: nothing is
//! appended to a store), the adapter's default options, at most 10,000 connections.
//!
//! `heads-pubsub-server [ADDR]` (default `127.0.0.1:0`): the first line on stdout is the
//! bound address; it serves until killed.

#[allow(dead_code)] // shared with the client, which uses the rest
#[path = "../chain.rs"]
mod chain;

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use sansrpc::RawValue;
use sansrpc_pubsub::hub::HubConfig;
use sansrpc_pubsub::store::{MemoryStore, RetentionPolicy};
use sansrpc_pubsub::PubSub;
use sansrpc_tokio::{ws, AsyncRouter, Builder, Extension, ServeOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let mut config = HubConfig::default();
    config.persist = false;
    let pubsub = Arc::new(PubSub::new(
        MemoryStore::new(RetentionPolicy::default()),
        config,
    ));
    let publisher = Arc::clone(&pubsub);
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(chain::block_time());
        for n in 0u64.. {
            ticks.tick().await;
            let header = RawValue::from_serialize(&chain::header(n)).expect("a header");
            let _ = publisher.publish("newHeads", &header);
        }
    });
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let mut options = ServeOptions::default();
    options.max_connections = 10_000;
    let builder = Builder::new()
        .router(AsyncRouter::new())
        .extension(Extension::new(pubsub));
    let shutdown = std::future::pending::<()>();
    ws::serve_with(listener, builder, options, shutdown, Duration::from_secs(1)).await
}
