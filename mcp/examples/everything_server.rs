//! The MCP conformance suite's "everything server" over Streamable HTTP: the tools,
//! resources and prompts its scenarios call, served at `http://127.0.0.1:$PORT/mcp` (`PORT`
//! from the environment, default 3000) for both the 2025-11-25 session revision and the
//! stateless 2026-07-28 one; with `--stdio`, on stdin and stdout instead. It also has what
//! the official SDKs' interop clients call (`add`, `slow`, `ask_name`, `sample`,
//! `test://hello`, `greet`): `mcp/tests/mcp_sdks.rs` (stdio) and
//! `mcp_http_sdks.rs` (HTTP) drive it with the Python and TypeScript SDKs. The protocol is `sansrpc_mcp::server`, the transport
//! `sansrpc_mcp::tokio` (the sans-I/O `sansrpc_mcp::streamable` machine); everything here is the
//! application, written once for both revisions.
//!
//! ```sh
//! PORT=3000 cargo run -p sansrpc-mcp --example everything_server
//! MCP_ORIGINS=http://127.0.0.1:8080 cargo run -p sansrpc-mcp --example everything_server
//! bash interop/mcp-conformance/run.sh server --url http://127.0.0.1:3000/mcp --scenario ping
//! python3 interop/mcp-python/client.py "cargo run -q -p sansrpc-mcp --example everything_server -- --stdio"
//! ```

#[path = "../fixtures/everything.rs"]
mod everything;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::ServerBuilder;
use sansrpc_store_redb::RedbEventStore;
use sansrpc_tokio::Builder;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = ServerBuilder::new("sansrpc-everything-server", "0.1.0");
    let server = everything::everything(server).build();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    if std::env::args().any(|a| a == "--stdio") {
        // MCP's stdio transport: newline-delimited JSON on stdin and stdout.
        let conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::stdio());
        conn.driver.await??;
        return Ok(());
    }
    let port: u16 = std::env::var("PORT").map_or(Ok(3000), |p| p.parse())?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    // The `Mcp-Param-*` headers checked are those the tools' schemas mark (SEP-2243).
    let mut config = server.streamable_config();
    // MCP_ORIGINS=http://127.0.0.1:8080,https://app.example.com: the browser pages that may
    // call it (their preflight answered, Mcp-Session-Id exposed to them); without it, pages
    // of a loopback host.
    if let Ok(origins) = std::env::var("MCP_ORIGINS") {
        let origins = origins.split(',').map(|o| o.trim().to_owned()).collect();
        config.origins = sansrpc_mcp::streamable::Origins::List(origins);
    }
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    // MCP_EVENT_STORE=path: the SSE events kept in a redb file, across restarts.
    let mut options = sansrpc_mcp::tokio::Options::default();
    if let Some(path) = std::env::var_os("MCP_EVENT_STORE") {
        let store = RedbEventStore::open(path, config.store_bytes, config.store_age)
            .map_err(std::io::Error::other)?;
        options = options.event_store(store);
    }
    sansrpc_mcp::tokio::serve_with(listener, builder, config, options, stop).await?;
    Ok(())
}
