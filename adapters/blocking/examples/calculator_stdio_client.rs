//! Starts the stdio calculator as a child process and calls it over its stdin and stdout.
//!
//! ```sh
//! cargo run -p sansrpc-blocking --example calculator_stdio_client
//! # or with any other server command:
//! cargo run -p sansrpc-blocking --example calculator_stdio_client -- ./my-server --stdio
//! ```
mod calculator;

use std::process::Command;
use std::time::Duration;

use calculator::{Add, AddPositional, Divide, Operands};
use sansrpc::codec::Framing;
use sansrpc::Timeout;
use sansrpc_blocking::{spawn_child, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut command = match args.split_first() {
        Some((program, rest)) => {
            let mut c = Command::new(program);
            c.args(rest);
            c
        }
        None => {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut c = Command::new(cargo);
            c.args(["run", "-q", "-p", "sansrpc-blocking"]);
            c.args(["--example", "calculator_stdio_server"]);
            c
        }
    };
    let mut config = Options::default();
    config.connection.framing = Some(Framing::Newline);
    let client = spawn_child(&mut command, config)?;
    // The first call may wait for cargo to build the server.
    let timeout = Timeout::After(Duration::from_secs(120));
    println!(
        "2 + 3 = {}",
        client.call_with::<Add>(&Operands { a: 2, b: 3 }, timeout)?
    );
    println!(
        "4 + 5 = {}",
        client.call_with::<AddPositional>(&(4, 5), timeout)?
    );
    println!(
        "1 / 8 = {}",
        client.call_with::<Divide>(&(1.0, 8.0), timeout)?
    );
    client.close();
    Ok(())
}
