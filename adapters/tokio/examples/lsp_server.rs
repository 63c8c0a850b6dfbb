//! A small language server on stdio (Content-Length framing, the LSP profile), as an
//! editor would spawn it.
//!
//! - Documents, full sync: `textDocument/didOpen` and `textDocument/didChange` are handled
//!   by async handlers that await 20 ms (a parse, say) before storing the text; the LSP
//!   profile makes every notification a barrier, so a `textDocument/hover` sent right after
//!   a `didChange` still sees that change. `textDocument/hover` answers
//!   `{"contents": {"kind": "plaintext", "value": "version V, N chars"}}` for the latest
//!   text (`null` for a document never opened).
//! - `custom/greet` shows the handler context: it asks the client for
//!   `workspace/configuration`, sends `window/logMessage`, reports `$/progress` on the
//!   request's `workDoneToken`, and stops when the client cancels (`$/cancelRequest`),
//!   answering `-32800`.
//! - The lifecycle is the library's ([`Profile::Lsp`]): requests before `initialize` are
//!   answered `-32002`, after `shutdown` `-32600`; `exit` ends the connection, and the
//!   process exits with the connection's status ([`sansrpc_tokio::Client::exit_code`]): 0
//!   after `shutdown`, 1 without (also when the input ends without `shutdown`, or when the
//!   editor's process, `initialize`'s `processId`, is gone).
//! - `--max-inflight N`: most of the client's requests handed to handlers at once (the
//!   endpoint's `max_inflight_incoming`); later ones wait, while responses to the server's
//!   own calls (`workspace/configuration`) are still read.
//!
//! Driven by vscode-jsonrpc in `adapters/tokio/tests/lsp_vscode.rs`
//! (`interop/vscode-jsonrpc/lsp_client.js`) and by pytest-lsp in
//! `adapters/tokio/tests/lsp_pytest.rs` (`interop/pytest-lsp/`). Run by hand:
//! `cargo run -p sansrpc-tokio --example lsp_server -- [--max-inflight N]` and type
//! Content-Length frames.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::{select, Either};
use sansrpc::connection::{Config, Profile};
use sansrpc::{ErrorObject, RawValue};
use sansrpc_tokio::{sansrpc, AsyncRouter, Builder, RequestContext};
use serde::Deserialize;
use serde_json::{json, Value};

sansrpc::method!(Initialize = "initialize", Value => Value);
sansrpc::method!(Shutdown = "shutdown", () => Option<()>);
sansrpc::method!(Greet = "custom/greet", GreetParams => String);
sansrpc::method!(Configuration = "workspace/configuration", Value => Vec<Value>);
sansrpc::method!(LogMessage = "window/logMessage", Value);
sansrpc::method!(DidOpen = "textDocument/didOpen", DidOpenParams);
sansrpc::method!(DidChange = "textDocument/didChange", DidChangeParams);
sansrpc::method!(Hover = "textDocument/hover", HoverParams => Option<Value>);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GreetParams {
    name: String,
    /// How long to think before answering (to have something to cancel).
    #[serde(default)]
    wait_ms: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DidOpenParams {
    text_document: OpenedDocument,
}

#[derive(Deserialize)]
struct OpenedDocument {
    uri: String,
    version: i64,
    text: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DidChangeParams {
    text_document: VersionedDocument,
    content_changes: Vec<ContentChange>,
}

#[derive(Deserialize)]
struct VersionedDocument {
    uri: String,
    version: i64,
}

/// Full sync: each change is the whole text (the last one wins).
#[derive(Deserialize)]
struct ContentChange {
    text: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HoverParams {
    text_document: DocumentId,
}

#[derive(Deserialize)]
struct DocumentId {
    uri: String,
}

/// The latest version and text of each open document.
type Documents = Arc<Mutex<HashMap<String, (i64, String)>>>;

/// How long the document handlers take before they store the text (a parse, say).
const STORE_DELAY: Duration = Duration::from_millis(20);

async fn store(documents: Documents, uri: String, version: i64, text: String) {
    tokio::time::sleep(STORE_DELAY).await;
    documents.lock().unwrap().insert(uri, (version, text));
}

fn hover(documents: &Documents, p: &HoverParams) -> Option<Value> {
    let documents = documents.lock().unwrap();
    let (version, text) = documents.get(&p.text_document.uri)?;
    let value = format!("version {version}, {} chars", text.chars().count());
    Some(json!({"contents": {"kind": "plaintext", "value": value}}))
}

/// `--max-inflight N` (N >= 1), and `--stdio`, which editors pass and which changes nothing.
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

async fn greet(cx: RequestContext, p: GreetParams) -> Result<String, ErrorObject<'static>> {
    let peer = cx.peer();
    // Ask the client, from inside the handler.
    let items = json!({"items": [{"section": "greeting"}]});
    let config = peer.call::<Configuration>(&items).await;
    let salutation = match config.as_deref() {
        Ok([Value::String(s), ..]) => s.clone(),
        _ => "Hello".to_owned(),
    };
    let log = json!({"type": 3, "message": format!("greeting {}", p.name)});
    let _ = peer.notify::<LogMessage>(&log).await;
    let begin = r#"{"kind":"report","message":"thinking","percentage":50}"#;
    let _ = cx
        .report_progress(RawValue::from_json(begin).unwrap())
        .await;
    if p.wait_ms > 0 {
        let think = std::pin::pin!(tokio::time::sleep(Duration::from_millis(p.wait_ms)));
        if let Either::Right(_) = select(think, cx.cancelled()).await {
            eprintln!("greet: cancelled");
            return Err(ErrorObject::fixed(-32800, "Request cancelled"));
        }
    }
    Ok(format!("{salutation}, {}!", p.name))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let max_inflight = max_inflight().unwrap_or_else(|e| {
        eprintln!("lsp_server: {e}\nusage: lsp_server [--max-inflight N]");
        std::process::exit(2)
    });
    let documents = Documents::default();
    let mut router = AsyncRouter::new();
    router.method::<Initialize, _, _>(|_| async {
        Ok(json!({
            "capabilities": {"textDocumentSync": 1, "hoverProvider": true},
            "serverInfo": {"name": "sansrpc-lsp-example"},
        }))
    })?;
    router.method_with_context::<Greet, _, _>(greet)?;
    // The lifecycle is the connection's: `shutdown` reaches the router for its clean-up
    // (none here), and `exit` never does.
    router.method::<Shutdown, _, _>(|()| async { Ok(None) })?;
    let docs = documents.clone();
    router.notification::<DidOpen, _, _>(move |p| {
        let d = p.text_document;
        store(docs.clone(), d.uri, d.version, d.text)
    })?;
    let docs = documents.clone();
    router.notification::<DidChange, _, _>(move |mut p| {
        let text = p.content_changes.pop().map(|c| c.text);
        let docs = docs.clone();
        let d = p.text_document;
        async move {
            if let Some(text) = text {
                store(docs, d.uri, d.version, text).await;
            }
        }
    })?;
    router.method::<Hover, _, _>(move |p| {
        let answer = hover(&documents, &p);
        async move { Ok(answer) }
    })?;

    let mut config = Config::for_profile(Profile::Lsp);
    if let Some(n) = max_inflight {
        config.max_inflight_incoming = n;
    }
    let builder = Builder::new().config(config).router(router);
    let conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::stdio());
    let ended = conn.driver.await?;
    if let Err(e) = &ended {
        eprintln!("lsp_server: {e}");
    }
    // 0 after `shutdown`, 1 without, as the connection ended. Exiting here rather than
    // returning: tokio's stdin reads on a thread that a return would wait for.
    let code = conn.client.exit_code().unwrap_or(i32::from(ended.is_err()));
    std::process::exit(code)
}
