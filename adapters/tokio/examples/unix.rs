//! The calculator over a Unix socket on tokio: serves on a socket path and calls it from the
//! same program, then shuts the server down gracefully.
//!
//! `cargo run -p sansrpc-tokio --example unix -- /tmp/sansrpc-calculator.sock`

use std::time::Duration;

use sansrpc_tokio::Builder;

#[path = "../../futures/fixtures/calculator.rs"]
mod calc;
use calc::{Add, Pair};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        std::env::temp_dir()
            .join("sansrpc-calculator.sock")
            .display()
            .to_string()
    });
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path)?;
    println!("calculator on {path}");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let builder = Builder::new().router(calc::calculator());
    let server = tokio::spawn(sansrpc_tokio::serve_unix(
        listener,
        builder,
        async {
            let _ = stopped.await;
        },
        Duration::from_secs(5),
    ));

    let stream = tokio::net::UnixStream::connect(&path).await?;
    let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::unix(stream));
    let sum = conn.client.call::<Add>(&Pair { a: 20.0, b: 22.0 }).await?;
    println!("20 + 22 = {sum}");
    drop(conn.client);
    conn.driver.await??;

    let _ = stop.send(());
    server.await??;
    std::fs::remove_file(&path)?;
    Ok(())
}
