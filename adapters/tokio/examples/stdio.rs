//! The LSP/MCP shape: a client spawns its server as a child process and speaks JSON-RPC over
//! the child's stdin/stdout. This example is both: run plainly it spawns itself with
//! `--serve` and calls it; with `--serve` it serves the calculator on stdio.
//!
//! `cargo run -p sansrpc-tokio --example stdio`

use sansrpc::codec::Framing;
use sansrpc_tokio::{sansrpc, Builder};

#[path = "../../futures/fixtures/calculator.rs"]
mod calc;
use calc::{Multiply, Pair};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let builder = Builder::new().configure(|c| c.framing = Some(Framing::Newline));
    if std::env::args().any(|a| a == "--serve") {
        let conn = sansrpc_tokio::spawn(builder.router(calc::calculator()), sansrpc_tokio::stdio());
        return Ok(conn.driver.await??);
    }
    let mut command = tokio::process::Command::new(std::env::current_exe()?);
    command.arg("--serve").kill_on_drop(true);
    let (mut child, transport) = sansrpc_tokio::child(&mut command)?;
    let conn = sansrpc_tokio::spawn(builder, transport);
    let product = conn
        .client
        .call::<Multiply>(&Pair { a: 6.0, b: 7.0 })
        .await?;
    println!(
        "6 * 7 = {product} (computed by child process {:?})",
        child.id()
    );
    drop(conn.client);
    conn.driver.await??;
    println!("child exited: {}", child.wait().await?);
    Ok(())
}
