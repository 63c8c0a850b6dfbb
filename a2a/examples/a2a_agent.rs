//! The example agent of `shared/contracts/a2a-echo-agent.md`: the echo agent on
//! `127.0.0.1:$PORT` (default 3000), its card at `/.well-known/agent-card.json`, JSON-RPC
//! at `/a2a`. Commands: `echo <text>`, `slow <n>`, `ask`, `wait`.
//!
//! ```text
//! PORT=3000 cargo run -p sansrpc-a2a --example a2a_agent
//! ```
//!
//! With `A2A_PUSH=1` its card declares push notifications (the contract's agent does not),
//! and the agent POSTs each task's events to the webhooks its clients configure.

use sansrpc_a2a::echo::{agent_card, EchoAgent};
use sansrpc_a2a::http::Config;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(3000);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let port = listener.local_addr()?.port();
    let mut card = agent_card(&format!("http://127.0.0.1:{port}/a2a"));
    if std::env::var("A2A_PUSH").is_ok_and(|v| v == "1") {
        card.capabilities.push_notifications = Some(true);
    }
    println!("a2a_agent listening on http://127.0.0.1:{port}/a2a");
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    sansrpc_a2a::tokio::serve(listener, EchoAgent::new(), card, Config::default(), stop).await
}
