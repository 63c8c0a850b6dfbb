//! sansrpc-lsp's client against python-lsp-server (pylsp 1.15.0 with its pyflakes and
//! pycodestyle plugins, every package pinned in `interop/pylsp/requirements.txt`, installed
//! with pip into the target folder), started as a child process (`python3 -m pylsp`) and
//! initialized with the VS Code capability set: pylsp declares no `positionEncoding`, so
//! positions count UTF-16 units. A Python file with a non-BMP character (😀) and other
//! non-ASCII text is opened and edited incrementally (an insertion right after the 😀, in
//! UTF-16 units, then a deletion): each version's diagnostics arrive for that version
//! (pyflakes' unused import and undefined names, pycodestyle's style warnings), each
//! where the client's copy of the text says the name is; a hover on `os` answers with its
//! documentation; `shutdown` and `exit` end the server with status 0.

#[path = "../../tests/support/interop.rs"]
mod interop;
mod servers;

use std::process::Stdio;
use std::time::Duration;

use sansrpc_lsp::client::{capabilities, LanguageClient};
use sansrpc_lsp::document::PositionEncoding;
use sansrpc_lsp::lsp_types::request::HoverRequest;
use sansrpc_lsp::lsp_types::*;
use servers::{range_of, uri, workspace};

/// How long pylsp may take to answer or publish (its first lint loads the plugins).
const WAIT: Duration = Duration::from_secs(60);

/// The diagnostic whose message contains `needle`.
fn find<'a>(diagnostics: &'a [Diagnostic], needle: &str) -> &'a Diagnostic {
    diagnostics
        .iter()
        .find(|d| d.message.contains(needle))
        .unwrap_or_else(|| panic!("no diagnostic about {needle:?} in {diagnostics:#?}"))
}

#[tokio::test(flavor = "current_thread")]
async fn the_client_edits_gets_diagnostics_hovers_and_shuts_pylsp_down() {
    let packages = interop::pip_install(env!("CARGO_MANIFEST_DIR"), "pylsp");
    let root = workspace("client-pylsp");
    let mut command = tokio::process::Command::new("python3");
    command
        .args(["-m", "pylsp"])
        .env("PYTHONPATH", &packages)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(&root)
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let client = tokio::time::timeout(
        WAIT,
        LanguageClient::builder(capabilities::vscode())
            .root(uri(&root))
            .start(&mut command),
    )
    .await
    .expect("pylsp initializes in time")
    .expect("pylsp starts and initializes");
    let info = client.initialize_result().server_info.clone().unwrap();
    assert_eq!(info.name, "pylsp");
    assert_eq!(client.encoding(), PositionEncoding::Utf16);

    let file = uri(&root.join("example.py"));
    let text = "import os\n\n# 😀 naïve\nvalue = 'größe'\n";
    let doc = client.open(file.clone(), "python", text).await.unwrap();
    assert_eq!(doc.version(), 1);
    let opened = tokio::time::timeout(WAIT, client.diagnostics(&file, 1))
        .await
        .expect("pylsp publishes the first version's diagnostics")
        .unwrap();
    let unused = find(&opened, "'os' imported but unused");
    assert_eq!(unused.range.start, Position::new(0, 0));
    assert_eq!(unused.source.as_deref(), Some("pyflakes"));

    // Right after the 😀 (two UTF-16 units: character 4 of line 2), a new line calling
    // an undefined name, in the middle of the comment: the rest of the comment moves
    // to a line of its own (not Python: an undefined name and a syntax-free line).
    let after_emoji = Position::new(2, 4);
    let inserted = "\nprint(ünknown) ; x=1\n#";
    let version = client
        .edit(&file, Range::new(after_emoji, after_emoji), inserted)
        .await
        .unwrap();
    assert_eq!(version, 2);
    let doc = client.document(&file).unwrap();
    assert_eq!(
        doc.to_string(),
        "import os\n\n# 😀\nprint(ünknown) ; x=1\n# naïve\nvalue = 'größe'\n"
    );
    let changed = tokio::time::timeout(
        WAIT,
        client.diagnostics_where(&file, 2, |d| {
            d.iter().any(|d| d.message.contains("ünknown"))
        }),
    )
    .await
    .expect("pylsp publishes the second version's diagnostics")
    .unwrap();
    // pyflakes: the name, where the client's text has it (line 3, after "print(").
    let undefined = find(&changed, "undefined name 'ünknown'");
    assert_eq!(undefined.range.start, range_of(&doc, "ünknown").start);
    // pycodestyle: whitespace before ';' and the statement after it, on line 3.
    let style: Vec<_> = changed
        .iter()
        .filter(|d| d.source.as_deref() == Some("pycodestyle"))
        .collect();
    assert!(
        style.iter().any(|d| d.range.start.line == 3),
        "pycodestyle's warnings on line 3: {changed:#?}"
    );

    // Delete " ; x=1" again (a range inside the line with ü before it).
    let gone = range_of(&doc, " ; x=1");
    let version = client.edit(&file, gone, "").await.unwrap();
    assert_eq!(version, 3);
    let cleaned = tokio::time::timeout(WAIT, client.diagnostics(&file, 3))
        .await
        .expect("pylsp publishes the third version's diagnostics")
        .unwrap();
    assert!(
        cleaned
            .iter()
            .all(|d| d.range.start.line != 3 || d.message.contains("ünknown")),
        "only the undefined name is left on line 3: {cleaned:#?}"
    );
    find(&cleaned, "undefined name 'ünknown'");
    // pylsp says which version its diagnostics are for.
    assert_eq!(client.published(&file).unwrap().version, Some(3));

    // Hover on `os` (line 0, character 8): jedi's documentation of the module.
    let at = TextDocumentPositionParams::new(
        TextDocumentIdentifier::new(file.clone()),
        Position::new(0, 8),
    );
    let hover = tokio::time::timeout(
        WAIT,
        client.request::<HoverRequest>(HoverParams {
            text_document_position_params: at,
            work_done_progress_params: WorkDoneProgressParams::default(),
        }),
    )
    .await
    .expect("pylsp answers the hover")
    .unwrap()
    .expect("a hover for os");
    let shown = serde_json::to_string(&hover.contents).unwrap();
    assert!(shown.contains("os"), "{shown}");

    client.close(&file).await.unwrap();
    let status = client.shutdown(Duration::from_secs(10)).await.unwrap();
    assert_eq!(status.code(), Some(0), "pylsp's exit status");
    let _ = std::fs::remove_dir_all(&root);
}
