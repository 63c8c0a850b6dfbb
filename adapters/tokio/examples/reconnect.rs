//! A reconnecting client riding out a server restart: the calculator is served on a port,
//! killed, and served again on the same port; the client notices and reconnects with
//! backoff. A call made while it reconnects is refused at once with a typed error; once the
//! connection is open again, calls go through. (With `PendingPolicy::ResendIdempotent`, an
//! idempotent call pending when a connection drops would be sent again on the next one;
//! none is pending here when the server dies.)
//!
//! `cargo run -p sansrpc-tokio --example reconnect`

use std::time::Duration;

use sansrpc::connection::keepalive::HeartbeatConfig;
use sansrpc_tokio::reconnect::{self, Backoff, PendingPolicy, ReconnectPolicy, State};
use sansrpc_tokio::{sansrpc, Builder};
use tokio::net::TcpListener;

#[path = "../../futures/fixtures/calculator.rs"]
mod calc;
use calc::{Add, Pair};

fn serve(listener: TcpListener) -> tokio::task::JoinHandle<std::io::Result<()>> {
    // The server answers the client's heartbeat pings.
    let builder = Builder::new()
        .configure(|c| c.heartbeat = Some(HeartbeatConfig::answer_only()))
        .router(calc::calculator());
    let forever = std::future::pending();
    tokio::spawn(sansrpc_tokio::serve_tcp(
        listener,
        builder,
        forever,
        Duration::ZERO,
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = serve(listener);

    let policy = ReconnectPolicy {
        backoff: Backoff::Exponential {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(2),
            multiplier: 2.0,
            max_attempts: 10,
        },
        pending: PendingPolicy::ResendIdempotent,
        ..ReconnectPolicy::default()
    };
    // Pings every 5 s; a server silent for 2 s after a ping counts as dead.
    let heartbeat = HeartbeatConfig::ping(Duration::from_secs(5), Duration::from_secs(2));
    let builder = Builder::new().configure(|c| c.heartbeat = Some(heartbeat));
    let conn = reconnect::spawn(builder, policy, reconnect::tcp(addr));
    let client = conn.client.clone();
    // The client's state: `wait_for` returns once it is the one wanted (`changed()`, at the
    // next change).
    let mut watch = client.watch();

    client.wait_open().await?;
    println!("client: {}", client.state());
    let sum = client.call::<Add>(&Pair { a: 1.0, b: 2.0 }).await?;
    println!("1 + 2 = {sum}");

    println!("server: killed");
    server.abort();
    let _ = server.await;
    let state = watch.wait_for(|s| s == State::Connecting).await;
    println!("client: {state}");
    // While the client reconnects, calls are refused at once with a typed error...
    if let Err(e) = client.call::<Add>(&Pair { a: 2.0, b: 2.0 }).await {
        println!("2 + 2 while the server is down: {e}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _server = serve(TcpListener::bind(addr).await?);
    println!("server: restarted");

    // ...and once it is open again, calls go through.
    client.wait_open().await?;
    println!("client: {}", client.state());
    let sum = client
        .call_idempotent::<Add>(&Pair { a: 3.0, b: 4.0 })
        .await?;
    println!("3 + 4 = {sum} (connection {})", client.connections());

    client.close().await;
    conn.task.await??;
    println!("client: {}", client.state());
    Ok(())
}
