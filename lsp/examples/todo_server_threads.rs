//! `todo_server` on the blocking adapter: the same server definition (the same handlers,
//! capabilities, documents and lifecycle) on plain threads, with no async runtime. A
//! notification's handler runs on the connection's driver thread (in order, before any
//! later request), so the 20 ms of pretend analysis is a thread sleep there; hovers run on
//! the handler pool. `lsp/tests/todo_server.rs` drives it with the same frames as
//! `todo_server`, and pytest-lsp and vscode-jsonrpc drive it with the same scripts
//! (`lsp/tests/pytest_lsp.rs`, `lsp/tests/vscode_jsonrpc.rs`).
//!
//! (`todo_server_threads`: example names share one output folder across the workspace.)

use std::time::Duration;

use sansrpc_lsp::lsp_types::notification::{DidChangeTextDocument, DidOpenTextDocument};
use sansrpc_lsp::lsp_types::request::HoverRequest;
use sansrpc_lsp::lsp_types::*;
use sansrpc_lsp::server::{Context, LspError, ServerBuilder};

async fn analyse(cx: Context, uri: Uri) {
    let Some(doc) = cx.document(&uri) else { return };
    // No runtime to await a timer on: the driver thread does the work itself.
    std::thread::sleep(Duration::from_millis(20));
    let text = doc.to_string();
    let todo = |(at, _)| Diagnostic {
        range: doc.range_of(at..at + 4),
        severity: Some(DiagnosticSeverity::WARNING),
        source: Some("todo".into()),
        message: "TODO found".into(),
        ..Diagnostic::default()
    };
    let diagnostics = text.match_indices("TODO").map(todo).collect();
    cx.publish_diagnostics(uri, diagnostics, Some(doc.version()))
        .await;
}

async fn hover(cx: Context, params: HoverParams) -> Result<Option<Hover>, LspError> {
    let at = params.text_document_position_params;
    let Some(doc) = cx.document(&at.text_document.uri) else {
        return Ok(None);
    };
    let Some(line) = doc.line(at.position.line) else {
        return Ok(None);
    };
    let value = format!("version {}: {line}", doc.version());
    let contents = HoverContents::Markup(MarkupContent {
        kind: MarkupKind::PlainText,
        value,
    });
    Ok(Some(Hover {
        contents,
        range: None,
    }))
}

fn main() {
    let server = ServerBuilder::new("todo", "1.0")
        .notification::<DidOpenTextDocument, _, _>(|cx, p| analyse(cx, p.text_document.uri))
        .notification::<DidChangeTextDocument, _, _>(|cx, p| analyse(cx, p.text_document.uri))
        .request::<HoverRequest, _, _>(hover)
        .build();
    // Stdio under the LSP profile; 0 after `shutdown` was answered, 1 otherwise.
    std::process::exit(server.serve_stdio_blocking())
}
