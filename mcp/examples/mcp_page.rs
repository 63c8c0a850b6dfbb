//! The MCP example page of `docs/browser.md`: an MCP client in the browser over Streamable
//! HTTP with `fetch` (`sansrpc_mcp::wasm`), against the project's `everything_server`
//! (`sansrpc-mcp`'s example, run with `MCP_ORIGINS` listing the page's origin): it
//! initializes a session, lists the server's tools, calls `add`, and ends the session
//! (`DELETE`).
//!
//! Built as a `.wasm` (a `cdylib`) for wasm-bindgen's CLI, then shrunk with `wasm-opt`
//! (`scripts/wasm-page`, which CI runs with its size budget); `mcp_page.html` beside it is
//! the page. The server's URL is the `data-url` of the element it writes into
//! (`http://127.0.0.1:3000/mcp` without one). The browser test loads the optimized module
//! into its own page and waits for its lines.
#![cfg(target_arch = "wasm32")]

use sansrpc_mcp::client::ClientBuilder;
use sansrpc_mcp::types::ContentBlock;
use sansrpc_wasm::sansrpc::connection::{Config, Profile};
use sansrpc_wasm::Builder;
use wasm_bindgen::prelude::*;

/// The element `id` of the page.
fn element(id: &str) -> Result<web_sys::Element, JsError> {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or_else(|| JsError::new("not in a page"))?;
    document
        .get_element_by_id(id)
        .ok_or_else(|| JsError::new(&format!("no element #{id}")))
}

/// Writes `text` into the element `id`.
fn show(id: &str, text: &str) -> Result<(), JsError> {
    element(id)?.set_text_content(Some(text));
    Ok(())
}

#[wasm_bindgen(start)]
pub async fn start() -> Result<(), JsError> {
    let url = element("mcp-server")?
        .get_attribute("data-url")
        .unwrap_or_else(|| "http://127.0.0.1:3000/mcp".to_owned());
    let mcp = ClientBuilder::new("mcp-page", "1.0.0");
    // The connection answers what the MCP client does (the server's `ping`, and sampling,
    // elicitation or roots when the client has their handlers): no router of its own.
    let builder = Builder::new().config(Config::for_profile(Profile::Mcp));
    let conn = sansrpc_mcp::wasm::connect_answering(&url, builder, mcp.answers())?;
    let server = mcp.initialize(&conn).await?;
    let tools = server.all_tools().await?;
    show(
        "mcp-server",
        &format!("{}: {} tools", server.server_info().name, tools.len()),
    )?;
    let sum = server
        .call_tool("add", serde_json::json!({"a": 2, "b": 3}))
        .await?;
    let text = match sum.content.first() {
        Some(ContentBlock::Text(t)) => t.text.as_str(),
        _ => "?",
    };
    show("mcp-sum", &format!("2 + 3 = {text}"))?;
    server.close().await;
    Ok(())
}
