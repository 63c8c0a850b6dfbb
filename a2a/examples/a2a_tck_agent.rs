//! The agent the A2A TCK (a2aproject/a2a-tck) tests against, on `127.0.0.1:$PORT`
//! (default 9999), JSON-RPC at `/` (where the TCK's raw JSON-RPC cases post: its URL of the
//! agent, whose card is at `/.well-known/agent-card.json`): every message to a new task or a task not over
//! puts it in `TASK_STATE_WORKING`, and there it stays until it is canceled (the TCK's
//! reference agent does the same: its tests list, get, subscribe to and cancel tasks that
//! are still working). A message whose id starts with `test-resubscribe-message-id` waits
//! `$RESUBSCRIBE_TIMEOUT_MS` (default 3000) first, as the TCK's requirements of an agent
//! say, so that its resubscribe test finds the task still going.
//!
//! ```text
//! PORT=9999 cargo run -p sansrpc-a2a --example a2a_tck_agent
//! ```

use std::time::Duration;

use sansrpc_a2a::agent::{BoxFuture, Publisher};
use sansrpc_a2a::http::Config;
use sansrpc_a2a::machine::Run;
use sansrpc_a2a::types::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(9999);
    let wait = std::env::var("RESUBSCRIBE_TIMEOUT_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(Duration::from_secs(3), Duration::from_millis);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let port = listener.local_addr()?.port();
    // `localhost`: the TCK takes a private address in a card for a leak (it allows this name).
    let card = card(&format!("http://localhost:{port}/"));
    println!("a2a_tck_agent listening on http://127.0.0.1:{port}/");
    let agent = move |run: Run, events: Publisher| -> BoxFuture<()> {
        Box::pin(async move {
            if run
                .message
                .message_id
                .starts_with("test-resubscribe-message-id")
            {
                events.sleep(wait).await;
            }
            events.status(TaskState::Working, None);
        })
    };
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let mut config = Config::default();
    config.path = "/".into();
    sansrpc_a2a::tokio::serve(listener, agent, card, config, stop).await
}

/// A card declaring streaming and push notifications, one skill, text in and out.
fn card(jsonrpc_url: &str) -> AgentCard {
    let text = vec!["text/plain".to_owned()];
    AgentCard {
        name: "tck-agent".into(),
        // No "test" in it: the TCK takes "test" before a URL in a card for a leak.
        description: "Puts every task to work until it is canceled: sansrpc-a2a's agent for \
                      the A2A compatibility kit."
            .into(),
        supported_interfaces: vec![AgentInterface::jsonrpc(jsonrpc_url)],
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            // The server keeps push configs and posts to them: the TCK's config tests run.
            push_notifications: Some(true),
            extensions: Vec::new(),
            extended_agent_card: Some(false),
        },
        default_input_modes: text.clone(),
        default_output_modes: text,
        skills: vec![AgentSkill {
            id: "work".into(),
            name: "Work".into(),
            description: "Works on every task until it is canceled.".into(),
            tags: vec!["work".into()],
            ..AgentSkill::default()
        }],
        ..AgentCard::default()
    }
}
