//! Calls the calculator of the `ws_server` example.
//!
//! `cargo run -p sansrpc-tokio --example ws_client -- ws://127.0.0.1:7701`

use sansrpc_tokio::{ws, Builder, CallError};

#[path = "../../futures/fixtures/calculator.rs"]
mod calc;
use calc::{Add, Divide, Pair, Tick, Ticks};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ws://127.0.0.1:7701".into());
    let conn = ws::connect(url, Builder::new()).await?;

    let sum = conn.client.call::<Add>(&Pair { a: 1.5, b: 2.0 }).await?;
    println!("1.5 + 2 = {sum}");
    match conn.client.call::<Divide>(&Pair { a: 1.0, b: 0.0 }).await {
        Err(CallError::Rpc(e)) => println!("1 / 0: error {} {}", e.code, e.message),
        other => println!("1 / 0: {other:?}"),
    }
    conn.client.notify::<Tick>(&()).await?;
    println!("ticks: {}", conn.client.call::<Ticks>(&()).await?);
    // The last handle gone, the client-only connection closes.
    drop(conn.client);
    conn.driver.await??;
    Ok(())
}
