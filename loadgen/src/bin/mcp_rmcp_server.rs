//! rmcp (the official Rust MCP SDK) serving the same tool as `mcp-sansrpc-server` (`add`:
//! `{a, b}` -> the sum as text) over its Streamable HTTP server (axum), single-threaded, for
//! the load generator's MCP tables.
//!
//! `mcp-rmcp-server json|sse`: `sse` is rmcp's default, sessions with every answer on an
//! event stream (rmcp answers JSON only without sessions); `json` is rmcp's stateless mode
//! with JSON answers (no `Mcp-Session-Id`). The first line on stdout is the bound address
//! (`127.0.0.1:0`); it serves until killed.

#[path = "../axum_serve.rs"]
mod axum_serve;
#[path = "../backlog.rs"]
mod backlog;

use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Clone)]
struct Adder {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Adder {
    fn new() -> Self {
        Adder {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Adds two integers")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        a.wrapping_add(b).to_string()
    }
}

#[tool_handler(router = self.tool_router, name = "rmcp-loadgen")]
impl ServerHandler for Adder {}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let json = std::env::args().nth(1).as_deref() == Some("json");
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!json)
        .with_json_response(json);
    let adder = Adder::new();
    let service: StreamableHttpService<Adder, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(adder.clone()), Default::default(), config);
    let app = axum::Router::new().nest_service("/mcp", service);
    axum_serve::serve(app).await
}
