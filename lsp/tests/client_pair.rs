//! The client paired with a server in the same process (`ClientBuilder::start_in_process`),
//! the way a server's unit tests drive it: every typed helper (`hover`, `definition`,
//! `completion`, `document_symbols`, `formatting`, `pull_diagnostics`) against a server that
//! answers each from the document it keeps, the diagnostics of its `on_change` analysis, and
//! `shutdown`'s status. And the client's errors for servers that fail as processes: a
//! missing binary, one that dies while starting, one that never answers `initialize`:
//! each names the command, with the exit status and the end of its stderr.

use std::time::Duration;

use sansrpc_lsp::client::{capabilities, ClientError, Command, LanguageClient};
use sansrpc_lsp::lsp_types::request::{
    Completion, DocumentDiagnosticRequest, DocumentSymbolRequest, Formatting, GotoDefinition,
    HoverRequest,
};
use sansrpc_lsp::lsp_types::*;
use sansrpc_lsp::server::{Context, LspError, Server, ServerBuilder};

const WAIT: Duration = Duration::from_secs(20);

/// A server for a toy language: a line `let NAME` defines NAME; `use NAME` uses it.
fn words_server() -> Server {
    fn word_at(doc: &sansrpc_lsp::document::TextDocument, at: Position) -> Option<String> {
        let line = doc.line(at.line)?;
        line.split_whitespace().nth(1).map(str::to_owned)
    }
    fn defined(cx: &Context, uri: &Uri, name: &str) -> Option<Range> {
        let doc = cx.document(uri)?;
        let line = doc.lines().find(|l| l.text == format!("let {name}"))?;
        Some(doc.range_of(line.offsets.start + 4..line.offsets.end))
    }
    ServerBuilder::new("words", "1.0")
        .on_change(|cx, doc| async move {
            // `use` of a name no line defines.
            let undefined = doc.lines().filter_map(|l| {
                let name = l.text.trim_end().strip_prefix("use ")?;
                let defined = doc.lines().any(|d| d.text == format!("let {name}"));
                let start = l.offsets.start + 4;
                (!defined).then(|| Diagnostic {
                    range: doc.range_of(start..start + name.len()),
                    message: format!("{name} is not defined"),
                    ..Diagnostic::default()
                })
            });
            let diagnostics = undefined.collect();
            cx.publish_diagnostics(doc.uri().clone(), diagnostics, Some(doc.version()))
                .await;
        })
        .request::<HoverRequest, _, _>(|cx, p| async move {
            let at = p.text_document_position_params;
            let doc = cx.document(&at.text_document.uri).unwrap();
            Ok(word_at(&doc, at.position).map(|word| Hover {
                contents: HoverContents::Scalar(MarkedString::String(format!("`{word}`"))),
                range: None,
            }))
        })
        .request::<GotoDefinition, _, _>(|cx, p| async move {
            let at = p.text_document_position_params;
            let uri = at.text_document.uri;
            let doc = cx.document(&uri).unwrap();
            let found = word_at(&doc, at.position).and_then(|w| defined(&cx, &uri, &w));
            Ok(found.map(|range| GotoDefinitionResponse::Scalar(Location::new(uri, range))))
        })
        .request::<Completion, _, _>(|cx, p| async move {
            let doc = cx
                .document(&p.text_document_position.text_document.uri)
                .unwrap();
            let names = doc
                .lines()
                .filter_map(|l| l.text.strip_prefix("let ").map(str::to_owned));
            let items = names.map(|name| CompletionItem::new_simple(name, "defined".into()));
            Ok(Some(CompletionResponse::Array(items.collect())))
        })
        .request::<DocumentSymbolRequest, _, _>(|cx, p| async move {
            let doc = cx.document(&p.text_document.uri).unwrap();
            #[allow(deprecated)]
            let symbols = doc.lines().filter_map(|l| {
                let name = l.text.strip_prefix("let ")?;
                Some(SymbolInformation {
                    name: name.to_owned(),
                    kind: SymbolKind::VARIABLE,
                    tags: None,
                    deprecated: None,
                    location: Location::new(doc.uri().clone(), doc.range_of(l.offsets.clone())),
                    container_name: None,
                })
            });
            Ok(Some(DocumentSymbolResponse::Flat(symbols.collect())))
        })
        .request::<Formatting, _, _>(|cx, p| async move {
            // Lines with trailing spaces lose them.
            let doc = cx.document(&p.text_document.uri).unwrap();
            let edits = doc.lines().filter_map(|l| {
                let kept = l.text.trim_end().len();
                (kept < l.text.len()).then(|| TextEdit {
                    range: doc.range_of(l.offsets.start + kept..l.offsets.end),
                    new_text: String::new(),
                })
            });
            Ok(Some(edits.collect()))
        })
        .request::<DocumentDiagnosticRequest, _, _>(|cx, p| async move {
            let doc = cx
                .document(&p.text_document.uri)
                .ok_or_else(|| LspError::invalid_params("not open"))?;
            let report = FullDocumentDiagnosticReport {
                result_id: Some(format!("v{}", doc.version())),
                items: Vec::new(),
            };
            Ok(DocumentDiagnosticReportResult::Report(
                DocumentDiagnosticReport::Full(RelatedFullDocumentDiagnosticReport {
                    related_documents: None,
                    full_document_diagnostic_report: report,
                }),
            ))
        })
        .build()
}

#[tokio::test(flavor = "current_thread")]
async fn the_typed_helpers_against_a_server_in_process() {
    let client = LanguageClient::builder(capabilities::neovim())
        .start_in_process(&words_server())
        .await
        .unwrap();
    let caps = &client.initialize_result().capabilities;
    assert!(caps.hover_provider.is_some() && caps.definition_provider.is_some());
    assert!(caps.completion_provider.is_some() && caps.document_symbol_provider.is_some());
    let uri: Uri = "file:///words.txt".parse().unwrap();
    client
        .open(uri.clone(), "words", "let 😀a\nuse 😀a  \nuse b")
        .await
        .unwrap();
    // Neovim's capabilities offer UTF-8 first: 😀 is four units.
    let published = tokio::time::timeout(WAIT, client.diagnostics(&uri, 1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].message, "b is not defined");
    assert_eq!(
        published[0].range,
        Range::new(Position::new(2, 4), Position::new(2, 5))
    );

    let hover = client
        .hover(&uri, Position::new(1, 0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        hover.contents,
        HoverContents::Scalar(MarkedString::String("`😀a`".into()))
    );
    let definition = client.definition(&uri, Position::new(1, 4)).await.unwrap();
    let def_range = Range::new(Position::new(0, 4), Position::new(0, 9));
    assert_eq!(
        definition,
        Some(GotoDefinitionResponse::Scalar(Location::new(
            uri.clone(),
            def_range
        )))
    );
    let Some(CompletionResponse::Array(items)) =
        client.completion(&uri, Position::new(2, 4)).await.unwrap()
    else {
        panic!("a completion list")
    };
    assert_eq!(
        items.iter().map(|i| i.label.as_str()).collect::<Vec<_>>(),
        ["😀a"]
    );
    let Some(DocumentSymbolResponse::Flat(symbols)) = client.document_symbols(&uri).await.unwrap()
    else {
        panic!("flat symbols")
    };
    assert_eq!(symbols.len(), 1);
    assert_eq!(
        symbols[0].location.range,
        Range::new(Position::new(0, 0), Position::new(0, 9))
    );
    let edits = client
        .formatting(&uri, FormattingOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        edits,
        [TextEdit {
            range: Range::new(Position::new(1, 9), Position::new(1, 11)),
            new_text: String::new()
        }]
    );
    let report = client.pull_diagnostics(&uri).await.unwrap();
    let DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(full)) = report
    else {
        panic!("a full report: {report:?}")
    };
    assert_eq!(
        full.full_document_diagnostic_report.result_id.as_deref(),
        Some("v1")
    );

    // Defining `b` clears the diagnostic, in version 2's publication.
    let end = client.document(&uri).unwrap().end_position();
    let version = client
        .edit(&uri, Range::new(end, end), "\nlet b")
        .await
        .unwrap();
    let published = tokio::time::timeout(WAIT, client.diagnostics(&uri, version))
        .await
        .unwrap()
        .unwrap();
    assert!(published.is_empty(), "{published:?}");
    let status = client.shutdown(WAIT).await.unwrap();
    assert_eq!(status.code(), Some(0), "shutdown then exit: 0");
}

/// The server's own errors reach the caller as they were answered.
#[tokio::test(flavor = "current_thread")]
async fn an_in_process_server_s_errors_are_its_answers() {
    let client = LanguageClient::builder(capabilities::vscode())
        .start_in_process(&words_server())
        .await
        .unwrap();
    let uri: Uri = "file:///not-open.txt".parse().unwrap();
    match client.pull_diagnostics(&uri).await {
        Err(ClientError::Call(e)) => assert!(e.to_string().contains("not open"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(client.shutdown(WAIT).await.unwrap().success());
}

#[tokio::test(flavor = "current_thread")]
async fn a_missing_binary_names_the_command() {
    let mut command = Command::new("/nonexistent/sansrpc-lsp-server");
    command.arg("--stdio");
    let error = LanguageClient::builder(capabilities::vscode())
        .start(&mut command)
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Start { .. }), "{error:?}");
    let text = error.to_string();
    assert!(
        text.contains("`/nonexistent/sansrpc-lsp-server --stdio` could not be started"),
        "{text}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_server_that_dies_while_starting_gives_its_status_and_stderr() {
    let mut command = Command::new("sh");
    command.args(["-c", "echo 'boom: no config found' >&2; exit 3"]);
    let error = LanguageClient::builder(capabilities::vscode())
        .forward_stderr(false)
        .start(&mut command)
        .await
        .unwrap_err();
    match &error {
        ClientError::Exited {
            command,
            during,
            status,
            stderr,
        } => {
            assert!(command.starts_with("sh -c echo"), "{command}");
            assert_eq!(during, "initialize");
            assert_eq!(status.and_then(|s| s.code()), Some(3));
            assert_eq!(stderr, "boom: no config found\n");
        }
        other => panic!("{other:?}"),
    }
    let text = error.to_string();
    assert!(
        text.contains("ended during initialize (exit status: 3)"),
        "{text}"
    );
    assert!(
        text.ends_with("the end of its stderr:\nboom: no config found"),
        "{text}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_server_that_never_answers_initialize_fails_after_the_stated_timeout() {
    let mut command = Command::new("sh");
    // Reads nothing, writes nothing, keeps its stdout open: killed after the grace.
    command.args(["-c", "echo 'waiting for nothing' >&2; exec sleep 60"]);
    let error = LanguageClient::builder(capabilities::vscode())
        .initialize_timeout(Duration::from_millis(300))
        .forward_stderr(false)
        .start(&mut command)
        .await
        .unwrap_err();
    match &error {
        ClientError::InitializeTimeout {
            timeout, stderr, ..
        } => {
            assert_eq!(*timeout, Duration::from_millis(300));
            assert_eq!(stderr, "waiting for nothing\n");
        }
        other => panic!("{other:?}"),
    }
    let text = error.to_string();
    assert!(
        text.contains("did not answer initialize within 300ms"),
        "{text}"
    );
}

/// Was a bug: the client's capability sets say it answers `workspace/workspaceFolders` and
/// `window/showDocument`, and it answered both -32601. It answers its folders (those
/// `initialize` named) and `success: false` (it shows no document).
#[tokio::test(flavor = "current_thread")]
async fn the_client_answers_what_its_capabilities_say_it_does() {
    let server = ServerBuilder::new("asks", "1")
        .request::<HoverRequest, _, _>(|cx, _| async move {
            let folders = cx
                .call::<request::WorkspaceFoldersRequest>(())
                .await?
                .unwrap_or_default();
            let show = ShowDocumentParams {
                uri: "file:///asks.txt".parse().unwrap(),
                external: None,
                take_focus: None,
                selection: None,
            };
            let shown = cx.call::<request::ShowDocument>(show).await?;
            let names: Vec<String> = folders.iter().map(|f| f.uri.to_string()).collect();
            let text = format!("{} {}", names.join(","), shown.success);
            Ok(Some(Hover {
                contents: HoverContents::Scalar(MarkedString::String(text)),
                range: None,
            }))
        })
        .build();
    for caps in [capabilities::neovim(), capabilities::vscode()] {
        let client = LanguageClient::builder(caps)
            .root("file:///project".parse().unwrap())
            .start_in_process(&server)
            .await
            .unwrap();
        let uri: Uri = "file:///asks.txt".parse().unwrap();
        client.open(uri.clone(), "text", "x").await.unwrap();
        let hover = client.hover(&uri, Position::new(0, 0)).await.unwrap();
        let Some(Hover {
            contents: HoverContents::Scalar(MarkedString::String(text)),
            ..
        }) = hover
        else {
            panic!("{hover:?}")
        };
        assert_eq!(text, "file:///project false");
        client.shutdown(WAIT).await.unwrap();
    }
}
