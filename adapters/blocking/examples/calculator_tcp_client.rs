//! Calls the calculator over TCP (start `calculator_tcp_server` first).
//!
//! ```sh
//! cargo run -p sansrpc-blocking --example calculator_tcp_client -- 127.0.0.1:7878
//! ```
mod calculator;

use std::time::Duration;

use calculator::{Add, Divide, Log, Logged, Operands, SubtractPositional};
use sansrpc::Timeout;
use sansrpc_blocking::{connect_tcp, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7878".into());
    let client = connect_tcp(&*addr, Options::default())?;
    let timeout = Timeout::After(Duration::from_secs(5));

    println!(
        "2 + 3 = {}",
        client.call_with::<Add>(&Operands { a: 2, b: 3 }, timeout)?
    );
    println!(
        "7 - 4 = {}",
        client.call_with::<SubtractPositional>(&(7, 4), timeout)?
    );
    println!(
        "1 / 4 = {}",
        client.call_with::<Divide>(&(1.0, 4.0), timeout)?
    );
    match client.call_with::<Divide>(&(1.0, 0.0), timeout) {
        Ok(q) => println!("1 / 0 = {q}?"),
        Err(e) => println!("1 / 0: {e}"),
    }
    client.notify::<Log>(&("hello from the client".into(),))?;
    println!("logged: {:?}", client.call_with::<Logged>(&(), timeout)?);
    client.close();
    Ok(())
}
