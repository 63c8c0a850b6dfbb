//! The language server of `sansrpc-tokio`'s `lsp_server` example, on threads with no async
//! runtime (LSP servers are often written this way): stdio, Content-Length framing, the LSP
//! profile.
//!
//! - Documents, full sync: `textDocument/didOpen` and `textDocument/didChange` sleep 20 ms
//!   (a parse, say) before storing the text. Notifications run on the driver thread, in
//!   order, each before any later request starts, so a `textDocument/hover` sent right
//!   after a `didChange` sees that change. `textDocument/hover` answers
//!   `{"contents": {"kind": "plaintext", "value": "version V, N chars"}}` for the latest
//!   text (`null` for a document never opened).
//! - `custom/greet` runs on the handler pool and uses [`RequestContext::current`]: it asks
//!   the client for `workspace/configuration` (blocking only its worker), sends
//!   `window/logMessage`, reports `$/progress` on the request's `workDoneToken`, and stops
//!   when the client cancels, answering `-32800`.
//! - The lifecycle is the library's ([`Profile::Lsp`]): requests before `initialize` are
//!   answered `-32002`, after `shutdown` `-32600`; `exit` ends the connection, and the
//!   process exits with the status [`serve_stdio_status`] returns: 0 after `shutdown`, 1
//!   without (also when the input ends without `shutdown`, or when the editor's process,
//!   `initialize`'s `processId`, is gone).
//! - `--max-inflight N`: most of the client's requests handed to handlers at once (the
//!   endpoint's `max_inflight_incoming`); later ones wait, while responses to the server's
//!   own calls (`workspace/configuration`) are still read.
//!
//! (`lsp_server_threads`: example names share one output folder across the workspace.)
//! Driven by vscode-jsonrpc in `adapters/blocking/tests/lsp_vscode.rs`, with the same client
//! script as the async example (`interop/vscode-jsonrpc/lsp_client.js`), and by pytest-lsp
//! in `adapters/blocking/tests/lsp_pytest.rs` (`interop/pytest-lsp/`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sansrpc::connection::Profile;
use sansrpc::router::Router;
use sansrpc::{ErrorObject, RawValue};
use sansrpc_blocking::{serve_stdio_status, Options, RequestContext};
use serde::Deserialize;
use serde_json::{json, Value};

sansrpc::method!(Initialize = "initialize", Value => Value);
sansrpc::method!(Shutdown = "shutdown", () => Option<()>);
sansrpc::method!(Greet = "custom/greet", GreetParams => String);
sansrpc::method!(Configuration = "workspace/configuration", Value => Vec<Value>);
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

fn store(documents: &Documents, uri: String, version: i64, text: String) {
    std::thread::sleep(STORE_DELAY);
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

fn greet(p: GreetParams) -> Result<String, ErrorObject<'static>> {
    let cx = RequestContext::current().ok_or_else(ErrorObject::internal_error)?;
    let peer = cx.peer();
    let items = json!({"items": [{"section": "greeting"}]});
    let salutation = match peer.call::<Configuration>(&items).as_deref() {
        Ok([Value::String(s), ..]) => s.clone(),
        _ => "Hello".to_owned(),
    };
    let log = json!({"type": 3, "message": format!("greeting {}", p.name)}).to_string();
    let _ = peer.notify_raw(
        "window/logMessage",
        Some(RawValue::from_json(&log).unwrap()),
    );
    let begin = r#"{"kind":"report","message":"thinking","percentage":50}"#;
    let _ = cx.report_progress(RawValue::from_json(begin).unwrap());
    let end = Instant::now() + Duration::from_millis(p.wait_ms);
    while Instant::now() < end {
        if cx.is_cancelled() {
            eprintln!("greet: cancelled");
            return Err(ErrorObject::fixed(-32800, "Request cancelled"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(format!("{salutation}, {}!", p.name))
}

fn main() -> std::io::Result<()> {
    let max_inflight = max_inflight().unwrap_or_else(|e| {
        eprintln!("lsp_server_threads: {e}\nusage: lsp_server_threads [--max-inflight N]");
        std::process::exit(2)
    });
    let documents = Documents::default();
    let mut router = Router::new();
    router
        .method::<Initialize, _>(|_| {
            Ok(json!({
                "capabilities": {"textDocumentSync": 1, "hoverProvider": true},
                "serverInfo": {"name": "sansrpc-lsp-example"},
            }))
        })
        .unwrap();
    router.method::<Greet, _>(greet).unwrap();
    // The lifecycle is the connection's: `shutdown` reaches the router for its clean-up
    // (none here), and `exit` never does.
    router.method::<Shutdown, _>(|()| Ok(None)).unwrap();
    let docs = documents.clone();
    router
        .notification::<DidOpen, _>(move |p| {
            let d = p.text_document;
            store(&docs, d.uri, d.version, d.text);
        })
        .unwrap();
    let docs = documents.clone();
    router
        .notification::<DidChange, _>(move |mut p| {
            if let Some(change) = p.content_changes.pop() {
                let d = p.text_document;
                store(&docs, d.uri, d.version, change.text);
            }
        })
        .unwrap();
    router
        .method::<Hover, _>(move |p| Ok(hover(&documents, &p)))
        .unwrap();

    let mut config = Options::default();
    config.connection = sansrpc::Config::for_profile(Profile::Lsp);
    if let Some(n) = max_inflight {
        config.connection.max_inflight_incoming = n;
    }
    // 0 after `shutdown`, 1 without, as the connection ended.
    let status = serve_stdio_status(Arc::new(router), config)?;
    std::process::exit(status)
}
