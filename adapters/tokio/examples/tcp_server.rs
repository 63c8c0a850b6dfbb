//! The calculator served over TCP on tokio until Ctrl-C, which shuts it down gracefully.
//!
//! `cargo run -p sansrpc-tokio --example tcp_server -- 127.0.0.1:7700`

use std::time::Duration;

use sansrpc_tokio::Builder;

#[path = "../../futures/fixtures/calculator.rs"]
mod calc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7700".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("calculator on {}", listener.local_addr()?);
    let builder = Builder::new().router(calc::calculator());
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    sansrpc_tokio::serve_tcp(listener, builder, shutdown, Duration::from_secs(5)).await
}
