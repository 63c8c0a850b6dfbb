//! A pull-based stream served by the core `Router` (run on the blocking adapter's handler
//! pool) and read as an iterator, over TCP on 127.0.0.1: the blocking half of the README's
//! streams snippet, compiled and run.
//!
//! `cargo run -p sansrpc-blocking --example streams_threads` (example names share one output folder across the workspace)

use std::sync::Arc;

use sansrpc::router::Router;
use sansrpc_blocking::{connect_tcp, serve_tcp, Options, StreamOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut router = Router::new();
    router.stream_method("count", |(to,): (u64,)| Ok((1..=to).map(Ok)))?;
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), Options::default())?;
    let client = connect_tcp(server.local_addr(), Options::default())?;
    let mut sum = 0;
    for n in client.stream::<_, u64>("count", &(1000,), StreamOptions::new(16, 64))? {
        sum += n?;
    }
    println!("sum of 1..=1000: {sum}");
    assert_eq!(sum, 500_500);
    Ok(())
}
