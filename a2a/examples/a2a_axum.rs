//! An agent of your own, mounted beside an MCP server in an axum app, on
//! `127.0.0.1:$PORT` (default 3000): the card at `/.well-known/agent-card.json`, A2A at
//! `/a2a`, MCP at `/mcp`. `docs/a2a.md` shows it piece by piece.

use sansrpc_a2a::agent::{Agent, BoxFuture, Publisher};
use sansrpc_a2a::machine::Run;
use sansrpc_a2a::tokio::A2aService;
use sansrpc_a2a::types::{AgentCapabilities, AgentCard, AgentInterface, Artifact, TaskState};

/// Answers every message with its text upper-cased, after a status that says it works.
struct Shout;

impl Agent for Shout {
    fn execute(&self, run: Run, events: Publisher) -> BoxFuture<()> {
        Box::pin(async move {
            events.status_text(TaskState::Working, "shouting");
            let text = run.message.first_text().unwrap_or_default().to_uppercase();
            events.artifact(Artifact::text("", text));
            events.status(TaskState::Completed, None);
        })
    }
}

fn card(url: &str) -> AgentCard {
    AgentCard {
        name: "shout".into(),
        description: "Answers in capitals.".into(),
        version: "1.0.0".into(),
        supported_interfaces: vec![AgentInterface::jsonrpc(url)],
        capabilities: AgentCapabilities {
            streaming: Some(true),
            ..Default::default()
        },
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        ..Default::default()
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(3000);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let port = listener.local_addr()?.port();
    let a2a = A2aService::new(
        Shout,
        card(&format!("http://127.0.0.1:{port}/a2a")),
        Default::default(),
    );
    let mcp = mcp_service();
    let app = axum::Router::new()
        .route_service("/a2a", a2a.clone())
        .route_service("/.well-known/agent-card.json", a2a)
        .route_service("/mcp", mcp)
        .route("/healthz", axum::routing::get(|| async { "ok" }));
    println!("a2a_axum listening on http://127.0.0.1:{port}");
    axum::serve(listener, app).await
}

/// An MCP server (its tools, resources and prompts as `docs/mcp.md` adds them).
fn mcp_service() -> sansrpc_mcp::tokio::McpService {
    use sansrpc::connection::{Config, Profile};

    let server = sansrpc_mcp::server::ServerBuilder::new("beside-a2a", "1").build();
    let config = Config::for_profile(Profile::Mcp);
    let builder = sansrpc_tokio::Builder::new()
        .config(config)
        .router(server.router());
    sansrpc_mcp::tokio::McpService::new(builder, server.streamable_config())
}
