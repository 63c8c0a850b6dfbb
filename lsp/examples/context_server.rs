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
use sansrpc_lsp::server::{Context, LspError, ServerBuilder};
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
    if p.wait_ms > 0 {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(p.wait_ms)) => {}
            () = cx.cancelled() => {
                eprintln!("greet: cancelled");
                return Err(LspError::cancelled());
            }
        }
    }
    if let Some(progress) = progress {
        progress.end(None).await;
    }
    Ok(format!("{salutation}, {}!", p.name))
}

/// `--max-inflight N` (N >= 1), and `--stdio`.
fn max_inflight() -> Result<Option<usize>, String> {
    let mut max = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = match arg.as_str() {
            "--stdio" => continue,
            "--max-inflight" => args.next(),
            _ => match arg.strip_prefix("--max-inflight=") {
                Some(v) => Some(v.to_owned()),
                None => return Err(format!("unknown argument {arg:?}")),
            },
        };
        let n = value
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .ok_or("--max-inflight takes a number of requests, at least 1")?;
        max = Some(n);
    }
    Ok(max)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let max_inflight = max_inflight().unwrap_or_else(|e| {
        eprintln!("context_server: {e}\nusage: context_server [--max-inflight N]");
        std::process::exit(2)
    });
    let server = ServerBuilder::new("context", "1.0")
        .keep_documents(false)
        .request::<Greet, _, _>(greet)
        .build();
    // Stdio under the LSP profile; 0 after `shutdown` was answered, 1 otherwise.
    let status = server
        .serve_stdio_with(|config| {
            if let Some(n) = max_inflight {
                config.max_inflight_incoming = n;
            }
        })
        .await;
    std::process::exit(status)
}
