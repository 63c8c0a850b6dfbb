//! Calls the calculator of the `http_server` example, one POST per call, on the ordinary
//! client: the HTTP transport keeps its connection alive between POSTs.
//!
//! `cargo run -p sansrpc-tokio --example http_client -- http://127.0.0.1:7702/`

use sansrpc_tokio::{http, Builder};

#[path = "../../futures/fixtures/calculator.rs"]
mod calc;
use calc::{Add, Divide, Multiply, Pair, Tick, Ticks};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:7702/".into());
    let client = http::connect(&url, Builder::new()).await?.client;

    let sum = client.call::<Add>(&Pair { a: 1.5, b: 2.0 }).await?;
    println!("1.5 + 2 = {sum}");
    match client.call::<Divide>(&Pair { a: 1.0, b: 0.0 }).await {
        Err(e) => println!("1 / 0: {e}"),
        Ok(q) => println!("1 / 0 = {q}"),
    }
    client.notify::<Tick>(&()).await?;
    println!("ticks: {}", client.call::<Ticks>(&()).await?);

    let mut batch = client.batch();
    let product = batch.call::<Multiply>(&Pair { a: 6.0, b: 7.0 });
    batch.notify::<Tick>(&());
    let mut results = batch.send().await?;
    println!("6 * 7 = {}", product.take(&mut results)?);
    Ok(())
}
