//! A pull-based stream served by an `AsyncRouter` and read as an async `Stream`, over TCP on
//! 127.0.0.1: the async half of the README's streams snippet, compiled and run.
//!
//! `cargo run -p sansrpc-tokio --example streams`

use std::time::Duration;

use futures::StreamExt;
use sansrpc_tokio::{AsyncRouter, Builder, StreamOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let mut async_router = AsyncRouter::new();
    async_router.stream_method("count", |(to,): (u64,)| {
        Ok(futures::stream::iter((1..=to).map(Ok)))
    })?;
    let server = Builder::new().router(async_router);
    let forever = std::future::pending();
    tokio::spawn(sansrpc_tokio::serve_tcp(
        listener,
        server,
        forever,
        Duration::ZERO,
    ));

    let conn = sansrpc_tokio::spawn(
        Builder::new(),
        sansrpc_tokio::tcp(tokio::net::TcpStream::connect(addr).await?),
    );
    let client = conn.client;
    let mut items = client
        .stream::<_, u64>("count", &(1000,), StreamOptions::new(16, 64))
        .await?;
    let mut sum = 0;
    while let Some(n) = items.next().await {
        sum += n?;
    }
    println!("sum of 1..=1000: {sum}");
    assert_eq!(sum, 500_500);
    Ok(())
}
