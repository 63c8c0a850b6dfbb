use std::time::Duration;

use sansrpc_lsp::document::TextDocument;
use sansrpc_lsp::lsp_types::request::HoverRequest;
use sansrpc_lsp::lsp_types::*;
use sansrpc_lsp::server::{Context, LspError, Server, ServerBuilder};

/// Each new version of a document, once typing pauses: one warning per `TODO`.
async fn analyse(cx: Context, doc: TextDocument) {
    if !cx.debounce(Duration::from_millis(50)).await {
        return; // superseded: the newer version's analysis runs instead
    }
    let text = doc.to_string();
    let todo = |(at, _)| Diagnostic {
        range: doc.range_of(at..at + 4),
        severity: Some(DiagnosticSeverity::WARNING),
        source: Some("todo".into()),
        message: "TODO found".into(),
        ..Diagnostic::default()
    };
    let diagnostics = text.match_indices("TODO").map(todo).collect();
    let uri = doc.uri().clone();
    cx.publish_diagnostics(uri, diagnostics, Some(doc.version()))
        .await;
}

async fn hover(cx: Context, params: HoverParams) -> Result<Option<Hover>, LspError> {
    let at = params.text_document_position_params;
    let line = cx.document(&at.text_document.uri).and_then(|doc| {
        let line = doc.line(at.position.line)?;
        Some(format!("version {}: {line}", doc.version()))
    });
    Ok(line.map(|value| Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::PlainText,
            value,
        }),
        range: None,
    }))
}

pub fn server() -> Server {
    let builder = ServerBuilder::new("todo", "1.0").on_change(analyse);
    builder.request::<HoverRequest, _, _>(hover).build()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Stdio under the LSP profile; 0 after `shutdown` was answered, 1 otherwise.
    std::process::exit(server().serve_stdio().await)
}
