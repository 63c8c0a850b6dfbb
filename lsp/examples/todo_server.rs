use std::time::Duration;

use sansrpc_lsp::lsp_types::notification::{DidChangeTextDocument, DidOpenTextDocument};
use sansrpc_lsp::lsp_types::request::HoverRequest;
use sansrpc_lsp::lsp_types::*;
use sansrpc_lsp::server::{Context, LspError, ServerBuilder};

async fn analyse(cx: Context, uri: Uri) {
    let Some(doc) = cx.document(&uri) else { return };
    tokio::time::sleep(Duration::from_millis(20)).await;
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

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let server = ServerBuilder::new("todo", "1.0")
        .notification::<DidOpenTextDocument, _, _>(|cx, p| analyse(cx, p.text_document.uri))
        .notification::<DidChangeTextDocument, _, _>(|cx, p| analyse(cx, p.text_document.uri))
        .request::<HoverRequest, _, _>(hover)
        .build();
    // Stdio under the LSP profile; 0 after `shutdown` was answered, 1 otherwise.
    std::process::exit(server.serve_stdio().await)
}
