//! The calculator served over HTTP on tokio until Ctrl-C, which shuts it down
//! gracefully.
//!
//! `cargo run -p sansrpc-tokio --example http_server -- 127.0.0.1:7702`

use std::time::Duration;

use sansrpc_tokio::{http, Builder};

#[path = "../../futures/fixtures/calculator.rs"]
mod calc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7702".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("calculator on http://{}", listener.local_addr()?);
    let builder = Builder::new().router(calc::calculator());
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    http::serve(listener, builder, shutdown, Duration::from_secs(5)).await
}
