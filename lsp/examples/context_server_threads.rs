//! `context_server` on the blocking adapter: the same server definition on plain threads,
//! with no async runtime. `custom/greet` runs on the handler pool, where its calls to the
//! editor (`workspace/configuration`, `window/workDoneProgress/create`) block only its own
//! worker; with nothing to await a timer on, it thinks in 10 ms sleeps and looks at the
//! cancellation flag between them.
//!
//! `--max-inflight N` and `--stdio` as `context_server` takes them. Driven by the same
//! vscode-jsonrpc and pytest-lsp scripts as `context_server` (`lsp/tests/vscode_jsonrpc.rs`,
//! `lsp/tests/pytest_lsp.rs`).
//!
//! (`context_server_threads`: example names share one output folder across the workspace.)

use std::time::{Duration, Instant};

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
    let end = Instant::now() + Duration::from_millis(p.wait_ms);
    while Instant::now() < end {
        if cx.is_cancelled() {
            eprintln!("greet: cancelled");
            return Err(LspError::cancelled());
        }
        std::thread::sleep(Duration::from_millis(10));
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

fn main() {
    let max_inflight = max_inflight().unwrap_or_else(|e| {
        eprintln!("context_server_threads: {e}\nusage: context_server_threads [--max-inflight N]");
        std::process::exit(2)
    });
    let server = ServerBuilder::new("context", "1.0")
        .keep_documents(false)
        .request::<Greet, _, _>(greet)
        .build();
    // Stdio under the LSP profile; 0 after `shutdown` was answered, 1 otherwise.
    std::process::exit(server.serve_stdio_blocking_with(|options| {
        if let Some(n) = max_inflight {
            options.connection.max_inflight_incoming = n;
        }
    }))
}
