//! The calculator served over WebSocket on tokio until Ctrl-C, which shuts it down
//! gracefully.
//!
//! `cargo run -p sansrpc-tokio --example ws_server -- 127.0.0.1:7701`

use std::time::Duration;

use sansrpc_tokio::{ws, Builder};

#[path = "../../futures/fixtures/calculator.rs"]
mod calc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7701".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("calculator on ws://{}", listener.local_addr()?);
    let builder = Builder::new().router(calc::calculator());
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    ws::serve(listener, builder, shutdown, Duration::from_secs(5)).await
}
