//! Calls the calculator of the `tcp_server` example.
//!
//! `cargo run -p sansrpc-tokio --example tcp_client -- 127.0.0.1:7700`

use sansrpc_tokio::{Builder, CallError};

#[path = "../../futures/fixtures/calculator.rs"]
mod calc;
use calc::{Add, Divide, Pair};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7700".into());
    let stream = tokio::net::TcpStream::connect(&addr).await?;
    let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));

    let sum = conn.client.call::<Add>(&Pair { a: 1.5, b: 2.0 }).await?;
    println!("1.5 + 2 = {sum}");
    match conn.client.call::<Divide>(&Pair { a: 1.0, b: 0.0 }).await {
        Err(CallError::Rpc(e)) => println!("1 / 0: error {} {}", e.code, e.message),
        other => println!("1 / 0: {other:?}"),
    }
    // The last handle gone, the client-only connection closes.
    drop(conn.client);
    conn.driver.await??;
    Ok(())
}
