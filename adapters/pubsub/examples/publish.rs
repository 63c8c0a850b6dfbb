//! A pub/sub server on the blocking adapter, publishing from the application: the README's
//! pub/sub snippet, compiled and run (it publishes once, to nobody yet, and exits).
//!
//! `cargo run -p sansrpc-pubsub --example publish`

use std::sync::Arc;

use sansrpc::router::Router;
use sansrpc::RawValue;
use sansrpc_pubsub::hub::HubConfig;
use sansrpc_pubsub::store::{MemoryStore, RetentionPolicy};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let router = Router::new();
    let pubsub = Arc::new(sansrpc_pubsub::PubSub::new(
        MemoryStore::new(RetentionPolicy::default()),
        HubConfig::default(),
    ));
    let mut config = sansrpc_blocking::Options::default();
    config.extension = Some(sansrpc_blocking::Extension::new(pubsub.clone()));
    let server = sansrpc_blocking::serve_tcp("127.0.0.1:0", Arc::new(router), config)?;
    let receipt = pubsub.publish(
        "stock.prices.AAPL",
        RawValue::from_json(r#"{"price": 187.5}"#)?,
    )?;
    let sequence = receipt.wait()?;
    println!(
        "published on a server at {} (sequence {sequence:?})",
        server.local_addr()
    );
    Ok(())
}
