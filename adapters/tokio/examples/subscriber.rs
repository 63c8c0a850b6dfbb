//! A Rust subscriber to a pub/sub server (the README's `rpc.notification` snippet, compiled):
//! it prints every notification on `chat.*` and is subscribed again after each reconnect.
//!
//! `cargo run -p sansrpc-tokio --example subscriber -- 127.0.0.1:7878` against
//! `sansrpc serve --pubsub` (see the README).

use std::net::SocketAddr;

use sansrpc::RawValue;
use sansrpc_tokio::reconnect::{self, ReconnectPolicy};
use sansrpc_tokio::{sansrpc, Builder};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7878".into())
        .parse()?;
    let policy = ReconnectPolicy::default();
    let mut router = sansrpc_tokio::AsyncRouter::new();
    router.raw_notification("rpc.notification", |params| async move {
        println!("{}", params.as_deref().map_or("", |p| p.get())); // {"topic":"chat.room","data":...}
    })?;
    let conn = sansrpc_tokio::reconnect::spawn(
        Builder::new().router(router),
        policy,
        reconnect::tcp(addr),
    );
    // Calls are refused until the first connection is open.
    conn.client.wait_open().await?;
    conn.client
        .call_raw(
            "rpc.subscribe",
            Some(&RawValue::from_string(r#"{"topic":"chat.*"}"#.into())?),
        )
        .await?;
    std::future::pending::<()>().await;
    Ok(())
}
