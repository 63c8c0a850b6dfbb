//! A calculator served over TCP until killed.
//!
//! ```sh
//! cargo run -p sansrpc-blocking --example calculator_tcp_server -- 127.0.0.1:7878
//! ```
mod calculator;

use std::sync::Arc;

use sansrpc_blocking::{serve_tcp, Config};

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7878".into());
    let server = serve_tcp(&*addr, Arc::new(calculator::router()), Config::default())?;
    eprintln!("calculator listening on {}", server.local_addr());
    loop {
        std::thread::park();
    }
}
