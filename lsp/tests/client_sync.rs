//! What sansrpc-lsp's client sends follows the server's `textDocumentSync`: this test binary
//! runs itself as the server (`--serve=full` or `--serve=none`: a sansrpc-lsp server on the
//! blocking adapter, over its stdio, declaring full sync, or no sync at all), so it has no
//! libtest harness, whose output would mix with the protocol on stdout.
//!
//! - Full sync: the client edits incrementally (after a 😀, across a CRLF) and sends the
//!   whole new text each time; the server's copy (its hover answers with the whole text
//!   and version) equals the client's, and each `didChange` it got held one change without
//!   a range (it says so in a diagnostic's message).
//! - No sync (`openClose` absent, change `None`): the client keeps its documents and sends
//!   nothing: the server has no document to hover.

#[path = "../../tests/support/harness.rs"]
mod harness;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use sansrpc::Profile;
use sansrpc_blocking::{serve_stdio_status, Options};
use sansrpc_lsp::client::{capabilities, LanguageClient};
use sansrpc_lsp::lsp_types::notification::DidChangeTextDocument;
use sansrpc_lsp::lsp_types::request::HoverRequest;
use sansrpc_lsp::lsp_types::*;
use sansrpc_lsp::server::{Context, LspError, ServerBuilder};

const WAIT: Duration = Duration::from_secs(20);

/// The child: a server declaring `sync`, answering hovers with the whole text.
fn serve(sync: TextDocumentSyncCapability) {
    async fn hover(cx: Context, p: HoverParams) -> Result<Option<Hover>, LspError> {
        let uri = p.text_document_position_params.text_document.uri;
        Ok(cx.document(&uri).map(|doc| Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::PlainText,
                value: format!("{}|{doc}", doc.version()),
            }),
            range: None,
        }))
    }
    async fn changed(cx: Context, p: DidChangeTextDocumentParams) {
        let whole = p.content_changes.len() == 1 && p.content_changes[0].range.is_none();
        let message = if whole { "whole text" } else { "ranges" };
        let diagnostic = Diagnostic::new_simple(Range::default(), message.into());
        let version = Some(p.text_document.version);
        cx.publish_diagnostics(p.text_document.uri, vec![diagnostic], version)
            .await;
    }
    let server = ServerBuilder::new("sync", "1.0")
        .notification::<DidChangeTextDocument, _, _>(changed)
        .request::<HoverRequest, _, _>(hover)
        .capabilities(move |c| c.text_document_sync = Some(sync.clone()))
        .build();
    let options = Options::for_profile(Profile::Lsp);
    let status = serve_stdio_status(Arc::new(server.blocking_router()), options).unwrap();
    std::process::exit(status)
}

async fn start(mode: &str) -> LanguageClient {
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command
        .arg(format!("--serve={mode}"))
        .stderr(Stdio::inherit());
    let client = LanguageClient::builder(capabilities::neovim());
    tokio::time::timeout(WAIT, client.start(&mut command))
        .await
        .unwrap()
        .unwrap()
}

async fn server_copy(client: &LanguageClient, uri: &Uri) -> Option<String> {
    let params = HoverParams {
        text_document_position_params: TextDocumentPositionParams::new(
            TextDocumentIdentifier::new(uri.clone()),
            Position::new(0, 0),
        ),
        work_done_progress_params: WorkDoneProgressParams::default(),
    };
    let hover = client.request::<HoverRequest>(params).await.unwrap()?;
    match hover.contents {
        HoverContents::Markup(m) => Some(m.value),
        other => panic!("{other:?}"),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn full_sync_sends_the_whole_text_after_each_edit() {
    runtime().block_on(async {
        let client = start("full").await;
        let uri: Uri = "file:///tmp/sansrpc-sync/full.txt".parse().unwrap();
        client
            .open(uri.clone(), "plaintext", "a😀b\r\nsecond")
            .await
            .unwrap();
        // After the 😀 (UTF-8 was negotiated: byte 5), then across the CRLF.
        let edits = [
            (Range::new(Position::new(0, 5), Position::new(0, 5)), "𝄞"),
            (Range::new(Position::new(0, 10), Position::new(1, 3)), " ✓ "),
        ];
        for (range, text) in edits {
            let version = client.edit(&uri, range, text).await.unwrap();
            let doc = client.document(&uri).unwrap();
            let published = tokio::time::timeout(WAIT, client.diagnostics(&uri, version))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(published[0].message, "whole text");
            let copy = server_copy(&client, &uri).await;
            assert_eq!(copy, Some(format!("{version}|{doc}")));
        }
        assert_eq!(client.document(&uri).unwrap().to_string(), "a😀𝄞b ✓ ond");
        assert!(client.shutdown(WAIT).await.unwrap().success());
    });
}

fn no_sync_sends_no_documents() {
    runtime().block_on(async {
        let client = start("none").await;
        let uri: Uri = "file:///tmp/sansrpc-sync/none.txt".parse().unwrap();
        client
            .open(uri.clone(), "plaintext", "kept here")
            .await
            .unwrap();
        let at = Position::new(0, 4);
        let version = client
            .edit(&uri, Range::new(at, at), " only")
            .await
            .unwrap();
        assert_eq!(version, 2);
        assert_eq!(client.document(&uri).unwrap().to_string(), "kept only here");
        assert_eq!(server_copy(&client, &uri).await, None);
        client.close(&uri).await.unwrap();
        assert!(client.shutdown(WAIT).await.unwrap().success());
    });
}

fn main() {
    if let Some(mode) = std::env::args().find_map(|a| a.strip_prefix("--serve=").map(str::to_owned))
    {
        let sync = match mode.as_str() {
            "full" => TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL),
            _ => TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                change: Some(TextDocumentSyncKind::NONE),
                ..TextDocumentSyncOptions::default()
            }),
        };
        return serve(sync);
    }
    harness::run(&[
        (
            "full_sync_sends_the_whole_text_after_each_edit",
            full_sync_sends_the_whole_text_after_each_edit,
        ),
        ("no_sync_sends_no_documents", no_sync_sends_no_documents),
    ]);
}
