//! A language server whose handler reaches the editor through its [`Context`], on stdio:
//! the request `custom/greet` asks the editor for `workspace/configuration` (section
//! `greeting`), logs with `window/logMessage`, reports work-done progress (on the request's
//! `workDoneToken`, or on a token it creates when the editor supports that), and, when asked
//! to think for `waitMs`, stops as soon as the editor cancels it (`$/cancelRequest`),
//! answering `-32800`.
//!
//! `--max-inflight N` hands at most N of the editor's requests to handlers at once (the
//! connection's `max_inflight_incoming`): later ones wait, while the editor's answers to the
//! server's own calls (`workspace/configuration`) are still read, so a handler waiting on
//! the editor never wedges the server. `--stdio`, which editors pass, changes nothing.
//!
//! Driven by vscode-jsonrpc (`lsp/tests/vscode_jsonrpc.rs`) and pytest-lsp
//! (`lsp/tests/pytest_lsp.rs`). By hand: `cargo run -p sansrpc-lsp --example context_server
//! -- [--max-inflight N]`, then type Content-Length frames.

use std::time::Duration;

use sansrpc_lsp::lsp_types::request::{Request, WorkspaceConfiguration};
use sansrpc_lsp::lsp_types::{ConfigurationItem, ConfigurationParams, MessageType};
use sansrpc_lsp::server::{Context, LspError, Server, ServerBuilder};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `custom/greet`: a request of this server's own, declared as lsp-types declares its own.
enum Greet {}

impl Request for Greet {
    type Params = GreetParams;
    type Result = String;
    const METHOD: &'static str = "custom/greet";
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GreetParams {
    name: String,
    /// How long to think before answering (something to cancel).
    #[serde(default)]
    wait_ms: u64,
}

async fn greet(cx: Context, p: GreetParams) -> Result<String, LspError> {
    let items = vec![ConfigurationItem {
        scope_uri: None,
        section: Some("greeting".into()),
    }];
    let config = cx
        .call::<WorkspaceConfiguration>(ConfigurationParams { items })
        .await;
    let salutation = match config.as_deref() {
        Ok([Value::String(s), ..]) => s.clone(),
        _ => "Hello".to_owned(),
    };
    cx.log_message(MessageType::INFO, format!("greeting {}", p.name))
        .await;
    let progress = cx.work_done("greeting").await;
    if let Some(progress) = &progress {
        progress.report(Some("thinking".into()), Some(50)).await;
    }
    // Thinks for `wait_ms`, unless the editor cancels first.
    if p.wait_ms > 0 && !cx.debounce(Duration::from_millis(p.wait_ms)).await {
        eprintln!("greet: cancelled");
        return Err(LspError::cancelled());
    }
    if let Some(progress) = progress {
        progress.end(None).await;
    }
    Ok(format!("{salutation}, {}!", p.name))
}

/// The connection's configuration from the arguments: `--max-inflight N` (N >= 1), and
/// `--stdio`; on a bad argument, the usage of `name`, and exit status 2. The server sets the
/// LSP profile's conventions on it itself.
pub fn config(name: &str) -> sansrpc::Config {
    let mut config = sansrpc::Config::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = match arg.as_str() {
            "--stdio" => continue,
            "--max-inflight" => args.next(),
            _ => arg.strip_prefix("--max-inflight=").map(str::to_owned),
        };
        let Some(n) = value.and_then(|v| v.parse().ok()).filter(|&n| n > 0) else {
            eprintln!("{name}: bad argument {arg:?}\nusage: {name} [--max-inflight N (>= 1)]");
            std::process::exit(2)
        };
        config.max_inflight_incoming = n;
    }
    config
}

pub fn server() -> Server {
    let builder = ServerBuilder::new("context", "1.0").keep_documents(false);
    builder.request::<Greet, _, _>(greet).build()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Stdio under the LSP profile; 0 after `shutdown` was answered, 1 otherwise.
    let status = server().serve_stdio_with(config("context_server")).await;
    std::process::exit(status)
}
