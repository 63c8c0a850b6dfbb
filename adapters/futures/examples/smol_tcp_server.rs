//! The calculator served over TCP on smol, one driver task per connection.
//!
//! `cargo run -p sansrpc-futures --example smol_tcp_server -- 127.0.0.1:7701`

use std::sync::Arc;

use sansrpc_futures::{transport, AsyncIoTimer, Builder};

#[path = "../fixtures/calculator.rs"]
mod calc;

fn main() -> std::io::Result<()> {
    smol::block_on(async {
        let addr = std::env::args()
            .nth(1)
            .unwrap_or_else(|| "127.0.0.1:7701".into());
        let listener = async_net::TcpListener::bind(&addr).await?;
        println!("calculator on {}", listener.local_addr()?);
        let builder = Builder::new().shared_router(Arc::new(calc::calculator()));
        loop {
            let (stream, peer) = listener.accept().await?;
            let (_client, driver) = builder
                .clone()
                .connect(transport::tcp(stream), AsyncIoTimer);
            smol::spawn(async move {
                if let Err(e) = driver.await {
                    eprintln!("{peer}: {e}");
                }
            })
            .detach();
        }
    })
}
