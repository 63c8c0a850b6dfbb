//! sansrpc-a2a's echo agent (`shared/contracts/a2a-echo-agent.md`) with no wait between
//! `slow`'s steps, on one thread, on `127.0.0.1:0`; prints
//! `listening on http://127.0.0.1:<port>`, as the SDKs' servers in `interop/` do.

use std::time::Duration;

use sansrpc_a2a::echo::{agent_card, EchoAgent};
use sansrpc_a2a::http::Config;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let card = agent_card(&format!("http://127.0.0.1:{port}/a2a"));
    println!("listening on http://127.0.0.1:{port}");
    let agent = EchoAgent::with_step_delay(Duration::ZERO);
    let stop = std::future::pending::<()>();
    sansrpc_a2a::tokio::serve(listener, agent, card, Config::default(), stop).await
}
