//! sansrpc-lsp's client against typescript-language-server 5.3.0 with TypeScript 5.9.3
//! (`interop/tsls/package-lock.json`, installed with `npm ci`), started as a child process
//! (`node …/typescript-language-server/lib/cli.mjs --stdio`) and initialized with the
//! Neovim capability set (UTF-8 offered first; the server's choice, or UTF-16 when it makes
//! none, is what positions count). A TypeScript file with a non-BMP character (😀) and
//! other non-ASCII text in the same line as a type error is opened, and its diagnostics
//! (TS2322) arrive where the client's copy of the text has the error; it is edited
//! incrementally (an insertion right after the 😀, then a replacement that fixes one error
//! and makes another) and each version's diagnostics follow the text; a hover names the
//! variable's type; `shutdown` and `exit` end the server with status 0.

#[path = "../../tests/support/interop.rs"]
mod interop;
mod servers;

use std::process::Stdio;
use std::time::Duration;

use sansrpc_lsp::client::{capabilities, LanguageClient};
use sansrpc_lsp::lsp_types::request::HoverRequest;
use sansrpc_lsp::lsp_types::*;
use servers::{range_of, uri, workspace};

/// How long the server may take to answer or publish (tsserver starts on the first file).
const WAIT: Duration = Duration::from_secs(90);

/// True when `diagnostics` hold a type error (TS2322) at `range`.
fn type_error_at(diagnostics: &[Diagnostic], range: Range) -> bool {
    diagnostics.iter().any(|d| {
        d.code == Some(NumberOrString::Number(2322))
            && d.range == range
            && d.severity == Some(DiagnosticSeverity::ERROR)
    })
}

#[tokio::test(flavor = "current_thread")]
async fn the_client_edits_gets_diagnostics_hovers_and_shuts_typescript_language_server_down() {
    let packages = interop::interop(env!("CARGO_MANIFEST_DIR"), "tsls");
    interop::npm_ci(&packages, "typescript-language-server");
    let cli = packages.join("node_modules/typescript-language-server/lib/cli.mjs");
    let root = workspace("client-tsls");
    let mut command = tokio::process::Command::new("node");
    command
        .arg(&cli)
        .arg("--stdio")
        .current_dir(&root)
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let client = tokio::time::timeout(
        WAIT,
        LanguageClient::builder(capabilities::neovim())
            .root(uri(&root))
            .start(&mut command),
    )
    .await
    .expect("typescript-language-server initializes in time")
    .expect("typescript-language-server starts and initializes");
    // It gives no `serverInfo`; its capabilities say hover and incremental sync.
    let capabilities = &client.initialize_result().capabilities;
    assert!(capabilities.hover_provider.is_some(), "{capabilities:#?}");
    let encoding = client.encoding();

    let file = uri(&root.join("example.ts"));
    let text = "const greeting: string = \"größe 😀\"; const count: number = greeting;\n";
    let doc = client.open(file.clone(), "typescript", text).await.unwrap();
    // `count` comes after the 😀 on the same line: its range differs in each encoding.
    let count = range_of(&doc, "count");
    let opened = tokio::time::timeout(WAIT, client.diagnostics_where(&file, 1, |d| !d.is_empty()))
        .await
        .expect("the first version's diagnostics")
        .unwrap();
    assert!(
        type_error_at(&opened, count),
        "TS2322 at {count:?} ({encoding:?}): {opened:#?}"
    );

    // Right after the 😀, inside the string: more non-ASCII text. Everything after it
    // moves, by what the client's store says, in the negotiated encoding.
    let emoji = range_of(&doc, "😀");
    let version = client
        .edit(&file, Range::new(emoji.end, emoji.end), " ✓ 名前 𝄞")
        .await
        .unwrap();
    assert_eq!(version, 2);
    let doc = client.document(&file).unwrap();
    assert_eq!(
        doc.to_string(),
        "const greeting: string = \"größe 😀 ✓ 名前 𝄞\"; const count: number = greeting;\n"
    );
    let count = range_of(&doc, "count");
    let changed = tokio::time::timeout(
        WAIT,
        client.diagnostics_where(&file, 2, |d| type_error_at(d, count)),
    )
    .await
    .unwrap_or_else(|_| {
        let latest = client.published(&file);
        panic!("TS2322 at {count:?} for version 2; latest: {latest:#?}")
    })
    .unwrap();
    assert_eq!(changed.len(), 1, "{changed:#?}");

    // Replace `greeting;` with `greeting.length;` and add a line with an error of its own.
    let end = range_of(&doc, "greeting;\n");
    let version = client
        .edit(
            &file,
            end,
            "greeting.length;\nconst 名: boolean = \"😀\";\n",
        )
        .await
        .unwrap();
    assert_eq!(version, 3);
    let doc = client.document(&file).unwrap();
    let declared = doc.to_string().find("const 名").unwrap() + "const ".len();
    let name = doc.range_of(declared..declared + "名".len());
    let fixed = tokio::time::timeout(
        WAIT,
        client.diagnostics_where(&file, 3, |d| type_error_at(d, name)),
    )
    .await
    .unwrap_or_else(|_| {
        let latest = client.published(&file);
        panic!("TS2322 at {name:?} for version 3; latest: {latest:#?}")
    })
    .unwrap();
    assert_eq!(
        fixed.len(),
        1,
        "only the new line's error is left: {fixed:#?}"
    );

    // Hover on `greeting` in `greeting.length`: its declared type.
    let text = doc.to_string();
    let at = text.rfind("greeting.length").unwrap();
    let position = doc.position_at(at + 2);
    let params = HoverParams {
        text_document_position_params: TextDocumentPositionParams::new(
            TextDocumentIdentifier::new(file.clone()),
            position,
        ),
        work_done_progress_params: WorkDoneProgressParams::default(),
    };
    let hover = tokio::time::timeout(WAIT, client.request::<HoverRequest>(params))
        .await
        .expect("the server answers the hover")
        .unwrap()
        .expect("a hover for greeting");
    let shown = serde_json::to_string(&hover.contents).unwrap();
    assert!(shown.contains("const greeting: string"), "{shown}");

    client.close(&file).await.unwrap();
    let status = client.shutdown(Duration::from_secs(10)).await.unwrap();
    assert_eq!(status.code(), Some(0), "the server's exit status");
    let _ = std::fs::remove_dir_all(&root);
}
