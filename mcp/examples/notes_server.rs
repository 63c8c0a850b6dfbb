//! The MCP server of `docs/mcp.md`'s first hour: a tool, a resource, a resource template
//! and a prompt, served on stdio (the default) or over Streamable HTTP at
//! `http://127.0.0.1:PORT/mcp` (`--http PORT`; 0 picks a free port, printed first).
//! `notes_client` talks to it both ways (`adapters/tokio/tests/examples.rs` runs them).

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::{Context, McpError, Server, ServerBuilder};
use sansrpc_mcp::types::{GetPromptResult, Prompt, PromptArgument, PromptMessage};
use sansrpc_mcp::types::{Resource, ResourceContents, ResourceTemplate};
use sansrpc_tokio::{sansrpc, Builder};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

fn notes() -> Server {
    ServerBuilder::new("notes", "1.0")
        .tool(
            "add",
            "Adds two numbers",
            |_: Context, Add { a, b }| async move { Ok::<_, McpError>((a + b).to_string()) },
        )
        .resource(
            Resource::new("notes://readme", "readme"),
            |_, uri| async move {
                Ok(vec![ResourceContents::text(
                    uri,
                    None,
                    "Notes, kept by MCP.",
                )])
            },
        )
        .resource_template(
            ResourceTemplate::new("notes://{id}", "note"),
            |_, uri, vars| async move {
                let text = format!("Note {}: buy milk.", vars["id"]);
                Ok(vec![ResourceContents::text(uri, None, text)])
            },
        )
        .prompt(
            Prompt::new("summarize")
                .description("Summarizes the notes on a topic")
                .argument(PromptArgument::required("topic")),
            |_, args| async move {
                let ask = format!("Summarize my notes on {}.", args["topic"]);
                Ok(GetPromptResult::new(vec![PromptMessage::user_text(ask)]))
            },
        )
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = notes();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some("--http") {
        // stdio: one client, newline-delimited JSON on stdin and stdout.
        let conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::stdio());
        conn.driver.await??;
        return Ok(());
    }
    // Streamable HTTP: every client, each in its own session, at /mcp.
    let port: u16 = args.next().map_or(Ok(3000), |p| p.parse())?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let config = server.streamable_config(); // path /mcp, loopback Host and Origin only
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    sansrpc_mcp::tokio::serve(listener, builder, config, stop).await?;
    Ok(())
}
