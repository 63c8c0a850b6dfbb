//! Calls the calculator of the `smol_tcp_server` example: one call, a batch, an error.
//!
//! `cargo run -p sansrpc-futures --example smol_tcp_client -- 127.0.0.1:7701`

use sansrpc_futures::{transport, AsyncIoTimer, Builder};

#[path = "../fixtures/calculator.rs"]
mod calc;
use calc::{Add, Divide, Pair, Subtract};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    smol::block_on(async {
        let addr = std::env::args()
            .nth(1)
            .unwrap_or_else(|| "127.0.0.1:7701".into());
        let stream = async_net::TcpStream::connect(&addr).await?;
        let (client, driver) = Builder::new().connect(transport::tcp(stream), AsyncIoTimer);
        let driver = smol::spawn(driver);

        println!(
            "2 + 3 = {}",
            client.call::<Add>(&Pair { a: 2.0, b: 3.0 }).await?
        );
        let mut batch = client.batch();
        let sub = batch.call::<Subtract>(&Pair { a: 10.0, b: 4.0 });
        let div = batch.call::<Divide>(&Pair { a: 1.0, b: 0.0 });
        let mut results = batch.send().await?;
        println!("batch: 10 - 4 = {}", sub.take(&mut results)?);
        println!("batch: 1 / 0 -> {}", div.take(&mut results).unwrap_err());

        drop(client);
        driver.await?;
        Ok(())
    })
}
