//! sansrpc-lsp's client against this crate's own `todo_server` and `todo_server_threads`
//! examples, as child processes: in each position encoding (the Neovim capability set
//! offers UTF-8 first; UTF-16 and UTF-32 offered alone), a document with non-BMP
//! characters, CJK and CRLF is opened and edited incrementally; after each edit the
//! server's diagnostics for that version cover exactly the `TODO`s where the client's copy
//! of the text has them, and a hover answers with the client's line: client and server
//! keep the same text because they apply the same edits with the same store. Then
//! `shutdown` and `exit`: status 0. A server that never publishes for a version leaves the
//! wait to the caller's timeout, and a server that is gone ends it with `Closed`.

#[path = "../../tests/support/processes.rs"]
mod support;

use std::process::Stdio;
use std::time::Duration;

use sansrpc_lsp::client::{capabilities, ClientError, LanguageClient};
use sansrpc_lsp::document::{PositionEncoding, TextDocument};
use sansrpc_lsp::lsp_types::request::HoverRequest;
use sansrpc_lsp::lsp_types::*;

const WAIT: Duration = Duration::from_secs(20);

/// The ranges of every `TODO` in `doc`, left to right.
fn todos(doc: &TextDocument) -> Vec<Range> {
    let text = doc.to_string();
    text.match_indices("TODO")
        .map(|(at, _)| doc.range_of(at..at + 4))
        .collect()
}

async fn start(example: &str, caps: ClientCapabilities) -> LanguageClient {
    let exe = support::built_example("sansrpc-lsp", example);
    let mut command = tokio::process::Command::new(exe);
    command.stderr(Stdio::inherit()).kill_on_drop(true);
    tokio::time::timeout(WAIT, LanguageClient::builder(caps).start(&mut command))
        .await
        .expect("initialized in time")
        .expect("the example starts and initializes")
}

fn offering(encoding: &str) -> ClientCapabilities {
    let mut caps = capabilities::vscode();
    caps.general.as_mut().unwrap().position_encodings =
        Some(vec![PositionEncodingKind::from(encoding.to_owned())]);
    caps
}

async fn hover(client: &LanguageClient, uri: &Uri, line: u32) -> Option<String> {
    let params = HoverParams {
        text_document_position_params: TextDocumentPositionParams::new(
            TextDocumentIdentifier::new(uri.clone()),
            Position::new(line, 0),
        ),
        work_done_progress_params: WorkDoneProgressParams::default(),
    };
    let hover = client.request::<HoverRequest>(params).await.unwrap()?;
    match hover.contents {
        HoverContents::Markup(m) => Some(m.value),
        other => panic!("{other:?}"),
    }
}

async fn edits_agree(example: &str, caps: ClientCapabilities, encoding: PositionEncoding) {
    let client = start(example, caps).await;
    assert_eq!(client.encoding(), encoding, "{example}");
    let uri: Uri = "file:///tmp/sansrpc-client/notes.txt".parse().unwrap();
    let doc = client
        .open(
            uri.clone(),
            "plaintext",
            "😀 TODO 日本\r\n𝄞𝄞 TODOTODO\r\nend",
        )
        .await
        .unwrap();
    let diagnostics = tokio::time::timeout(WAIT, client.diagnostics(&uri, 1))
        .await
        .unwrap()
        .unwrap();
    let ranges: Vec<Range> = diagnostics.iter().map(|d| d.range).collect();
    assert_eq!(ranges, todos(&doc), "{example} {encoding:?}");

    // Edits at places only the encoding names: after each non-BMP character, at line
    // ends, across the CRLF.
    let edits: [(&str, &str); 4] = [
        ("😀", "TODO✓"),
        ("𝄞𝄞", " 😀TODO"),
        ("\r\nend", " TODO"),
        ("日本", ""),
    ];
    for (n, (after, text)) in edits.into_iter().enumerate() {
        let doc = client.document(&uri).unwrap();
        let whole = doc.to_string();
        let at = whole.find(after).unwrap() + after.len();
        let place = doc.position_at(at);
        let version = client
            .edit(&uri, Range::new(place, place), text)
            .await
            .unwrap();
        assert_eq!(version, n as i32 + 2);
        let doc = client.document(&uri).unwrap();
        let published = tokio::time::timeout(WAIT, client.diagnostics(&uri, version))
            .await
            .unwrap()
            .unwrap();
        let ranges: Vec<Range> = published.iter().map(|d| d.range).collect();
        assert_eq!(
            ranges,
            todos(&doc),
            "{example} {encoding:?} version {version}"
        );
        for line in 0..doc.line_count() {
            let expected = format!("version {version}: {}", doc.line(line).unwrap());
            assert_eq!(hover(&client, &uri, line).await, Some(expected));
        }
    }
    assert_eq!(hover(&client, &uri, 99).await, None);
    client.close(&uri).await.unwrap();
    let status = client.shutdown(WAIT).await.unwrap();
    assert_eq!(status.code(), Some(0), "{example}");
}

#[tokio::test(flavor = "current_thread")]
async fn client_and_todo_server_agree_in_each_encoding() {
    edits_agree(
        "todo_server",
        capabilities::neovim(),
        PositionEncoding::Utf8,
    )
    .await;
    edits_agree("todo_server", offering("utf-16"), PositionEncoding::Utf16).await;
    edits_agree("todo_server", offering("utf-32"), PositionEncoding::Utf32).await;
}

#[tokio::test(flavor = "current_thread")]
async fn client_and_todo_server_threads_agree_in_each_encoding() {
    let example = "todo_server_threads";
    edits_agree(example, capabilities::neovim(), PositionEncoding::Utf8).await;
    edits_agree(example, capabilities::vscode(), PositionEncoding::Utf16).await;
    edits_agree(example, offering("utf-32"), PositionEncoding::Utf32).await;
}

/// Waits for diagnostics end: at a timeout the caller sets (a version never published),
/// or with `Closed` once the server is gone; changing a document that is not open is
/// refused before anything is sent.
#[tokio::test(flavor = "current_thread")]
async fn waits_for_diagnostics_end_and_misuse_is_refused() {
    let client = start("todo_server", capabilities::neovim()).await;
    let uri: Uri = "file:///tmp/sansrpc-client/a.txt".parse().unwrap();
    let not_open = client.edit(&uri, Range::default(), "x").await;
    assert!(
        matches!(not_open, Err(ClientError::Document(_))),
        "{not_open:?}"
    );
    client.open(uri.clone(), "plaintext", "TODO").await.unwrap();
    let never = tokio::time::timeout(Duration::from_millis(300), client.diagnostics(&uri, 7)).await;
    assert!(never.is_err(), "no diagnostics for version 7: {never:?}");
    let status = client.shutdown(WAIT).await.unwrap();
    assert!(status.success());
    let closed = tokio::time::timeout(WAIT, client.diagnostics(&uri, 7))
        .await
        .expect("ends once the connection is closed");
    assert!(matches!(closed, Err(ClientError::Closed)), "{closed:?}");
    assert!(matches!(
        client.shutdown(WAIT).await,
        Err(ClientError::Closed)
    ));
}

/// docs/lsp.md's client section shows the client module's example (which compiles as a
/// doctest), its hidden lines aside.
#[test]
fn the_lsp_guide_shows_the_client_example_as_it_is() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let module = std::fs::read_to_string(format!("{dir}/src/client/mod.rs")).unwrap();
    let lines: Vec<&str> = module.lines().collect();
    let start = lines.iter().position(|l| *l == "//! ```no_run").unwrap();
    let end = start
        + 1
        + lines[start + 1..]
            .iter()
            .position(|l| *l == "//! ```")
            .unwrap();
    let shown: Vec<&str> = lines[start + 1..end]
        .iter()
        .map(|l| {
            l.strip_prefix("//! ")
                .unwrap_or(l.trim_start_matches("//!"))
        })
        .filter(|l| !l.trim_start().starts_with("# ") && l.trim() != "#")
        .collect();
    let snippet = format!("```rust,ignore\n{}\n```", shown.join("\n"));
    let guide = std::fs::read_to_string(format!("{dir}/../docs/lsp.md")).unwrap();
    assert!(
        guide.contains(&snippet),
        "docs/lsp.md must show the client example as it is:\n{snippet}"
    );
}
