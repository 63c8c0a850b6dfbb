//! One client API on every runtime: the calls of `calls!`, written once, run on the async
//! client (tokio here; smol and async-std have the same one, `sansrpc_futures::Client`)
//! and on the blocking client of `sansrpc-blocking`, against the calculator over TCP. The
//! async client's methods return futures, the blocking client's return the values: the
//! code is the same but for `.await`. docs/client.md shows it.
//!
//! `cargo run -p sansrpc-tokio --example client_api`

use std::time::Duration;

use sansrpc::{RawValue, Timeout};
use sansrpc_tokio::Builder;

#[path = "../../futures/fixtures/calculator.rs"]
mod calc;
use calc::{Add, Divide, Multiply, Pair, Tick};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The same calls on either client: `$($wait)*` is `.await` for the async one, nothing for
/// the blocking one.
macro_rules! calls {
    ($client:expr; $($wait:tt)*) => {{
        let client = $client;
        let sum = client.call::<Add>(&Pair { a: 1.5, b: 2.0 }) $($wait)* ?;
        let soon = Timeout::After(Duration::from_secs(5));
        let product = client.call_with::<Multiply>(&Pair { a: 6.0, b: 7.0 }, soon) $($wait)* ?;
        let refused = match client.call::<Divide>(&Pair { a: 1.0, b: 0.0 }) $($wait)* {
            Err(e) => e.code(),
            Ok(_) => None,
        };
        let raw = client.call_raw("add", Some(RawValue::from_json("[2, 3]")?)) $($wait)* ?;
        client.notify::<Tick>(&()) $($wait)* ?;
        let mut batch = client.batch();
        let sum_slot = batch.call::<Add>(&Pair { a: 1.0, b: 1.0 });
        batch.notify::<Tick>(&());
        batch.call_raw("subtract", Some(RawValue::from_json("[5, 2]")?));
        let mut results = batch.send() $($wait)* ?;
        let batched = (sum_slot.take(&mut results)?, results[1].as_ref().map(|r| r.get().to_owned()));
        client.close() $($wait)*;
        format!("{sum} {product} {refused:?} {} {batched:?}", raw.get())
    }};
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let builder = Builder::new().router(calc::calculator());
    let server = tokio::spawn(sansrpc_tokio::serve_tcp(
        listener,
        builder,
        std::future::pending(),
        Duration::from_secs(1),
    ));

    let stream = tokio::net::TcpStream::connect(addr).await?;
    let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));
    println!("async:    {}", calls!(conn.client; .await));

    let on_threads = tokio::task::spawn_blocking(move || -> Result<String, Error> {
        let options = sansrpc_blocking::Options::default();
        Ok(calls!(sansrpc_blocking::connect_tcp(addr, options)?;))
    });
    println!("blocking: {}", on_threads.await??);
    server.abort();
    Ok(())
}
