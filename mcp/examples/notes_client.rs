//! The MCP client of `docs/mcp.md`'s first hour: `notes_client PROGRAM` starts the server
//! program as a child process and speaks MCP on its stdio; `notes_client --url URL` connects
//! to a Streamable HTTP server. Either way it initializes, lists the tools, calls one, reads
//! a resource and a templated one, gets a prompt, and closes cleanly.

use std::collections::BTreeMap;
use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::{ClientBuilder, McpClient};
use sansrpc_mcp::types::{ContentBlock, ResourceContents};
use sansrpc_tokio::{sansrpc, Builder};
use serde_json::json;

type Error = Box<dyn std::error::Error>;

async fn use_notes(client: &McpClient) -> Result<(), Error> {
    let tools = client.all_tools().await?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    println!("tools: {names:?}");
    let sum = client.call_tool("add", json!({"a": 2, "b": 40})).await?;
    println!("add: {}", text(&sum.content[0]));
    for uri in ["notes://readme", "notes://7"] {
        if let ResourceContents::Text(t) = &client.read_resource(uri).await?.contents[0] {
            println!("{uri}: {}", t.text);
        }
    }
    let topic = BTreeMap::from([("topic".to_owned(), "groceries".to_owned())]);
    let prompt = client.get_prompt("summarize", topic).await?;
    println!("summarize: {}", text(&prompt.messages[0].content));
    Ok(())
}

fn text(block: &ContentBlock) -> &str {
    match block {
        ContentBlock::Text(t) => &t.text,
        _ => "(not text)",
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mcp = ClientBuilder::new("notes-client", "1.0");
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router());
    if let [flag, url] = &args[..] {
        if flag == "--url" {
            // Streamable HTTP (https:// too, with the `tls` feature).
            let conn = sansrpc_mcp::tokio::connect(url, builder)?;
            let client = mcp.initialize(&conn).await?;
            use_notes(&client).await?;
            client.close().await; // ends the session: DELETE
            println!("session closed");
            return Ok(());
        }
    }
    // A child process: MCP over its stdin and stdout.
    let program = args
        .first()
        .ok_or("usage: notes_client PROGRAM | --url URL")?;
    let mut command = tokio::process::Command::new(program);
    let child = sansrpc_tokio::spawn_child(builder, &mut command)?;
    let client = mcp.initialize(&child).await?;
    use_notes(&client).await?;
    // MCP's stdio shutdown: close its stdin, wait, kill after the grace.
    let status = child.shutdown(Duration::from_secs(5)).await?;
    println!("server exited: {status}");
    Ok(())
}
