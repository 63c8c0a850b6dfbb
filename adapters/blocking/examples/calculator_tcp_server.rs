//! A calculator served over TCP until killed. Its first line on stdout is the address it
//! listens on (give port 0 for a free one).
//!
//! ```sh
//! cargo run -p sansrpc-blocking --example calculator_tcp_server -- 127.0.0.1:7878
//! ```
mod calculator;

use std::sync::Arc;

use sansrpc_blocking::{serve_tcp, Options};

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7878".into());
    let server = serve_tcp(&*addr, Arc::new(calculator::router()), Options::default())?;
    println!("calculator listening on {}", server.local_addr());
    loop {
        std::thread::park();
    }
}
