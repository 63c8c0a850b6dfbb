//! A language server (`sansrpc-lsp`) in a Web Worker, the page as the editor: over a
//! `MessagePort` the page transferred to the worker, with positions in UTF-16 and emoji in
//! the text, a hover after incremental edits, diagnostics from a debounced analysis (which
//! runs on the driver's executor and sleeps on `setTimeout`: no thread in a browser), and
//! the lifecycle to its end (`shutdown` with `"params": null`, `exit`, status 0).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc;
use futures::StreamExt;
use sansrpc::{Config, Profile, RawValue};
use sansrpc_futures::AsyncRouter;
use sansrpc_lsp::lsp_types::request::HoverRequest;
use sansrpc_lsp::lsp_types::{
    Diagnostic, DiagnosticSeverity, Hover, HoverContents, HoverParams, MarkupContent, MarkupKind,
    Range,
};
use sansrpc_lsp::server::{Context, LspError, ServerBuilder};
use sansrpc_wasm::Builder;
use serde_json::{json, Value};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen_test::wasm_bindgen_test;

use crate::worker::{post_status, status, worker};

/// The word (letters and digits) under the hover's position, with its range: both ways
/// through the negotiated position encoding.
async fn hover(cx: Context, params: HoverParams) -> Result<Option<Hover>, LspError> {
    let at = params.text_document_position_params;
    let Some(doc) = cx.document(&at.text_document.uri) else {
        return Ok(None);
    };
    let Some(line_start) = doc.line_start(at.position.line) else {
        return Ok(None);
    };
    let offset = doc.offset_at(at.position) - line_start;
    let line = doc.line(at.position.line).unwrap_or_default();
    let is_word = |c: char| c.is_alphanumeric();
    let start = line[..offset]
        .char_indices()
        .rev()
        .take_while(|&(_, c)| is_word(c))
        .last()
        .map_or(offset, |(i, _)| i);
    let end = line[offset..]
        .char_indices()
        .find(|&(_, c)| !is_word(c))
        .map_or(line.len(), |(i, _)| offset + i);
    if start == end {
        return Ok(None);
    }
    let range = Range::new(
        doc.position_at(line_start + start),
        doc.position_at(line_start + end),
    );
    let contents = HoverContents::Markup(MarkupContent {
        kind: MarkupKind::PlainText,
        value: line[start..end].to_owned(),
    });
    Ok(Some(Hover {
        contents,
        range: Some(range),
    }))
}

/// One diagnostic per character outside ASCII, at its range in the negotiated encoding.
fn non_ascii(doc: &sansrpc_lsp::document::TextDocument) -> Vec<Diagnostic> {
    let text: String = doc.chunks().collect();
    text.char_indices()
        .filter(|(_, c)| !c.is_ascii())
        .map(|(i, c)| Diagnostic {
            range: Range::new(doc.position_at(i), doc.position_at(i + c.len_utf8())),
            severity: Some(DiagnosticSeverity::INFORMATION),
            message: c.to_string(),
            ..Diagnostic::default()
        })
        .collect()
}

/// In the worker: the language server over `port`, under the LSP profile; the worker tells
/// its own `postMessage` how the connection ended (the exit status).
#[wasm_bindgen]
pub fn sansrpc_test_lsp_worker(port: web_sys::MessagePort) {
    let server = ServerBuilder::new("words", "1.0")
        .request::<HoverRequest, _, _>(hover)
        .on_change(|cx, doc| async move {
            // Typing goes on: only a version left alone for 50 ms is analysed.
            if !cx.debounce(Duration::from_millis(50)).await {
                return;
            }
            let diagnostics = non_ascii(&doc);
            cx.publish_diagnostics(doc.uri().clone(), diagnostics, Some(doc.version()))
                .await;
        })
        .build();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Lsp))
        .router(server.router());
    let spawned = sansrpc_wasm::connect_port(port, builder);
    wasm_bindgen_futures::spawn_local(async move {
        let ended = spawned.driver.await;
        let code = spawned.client.exit_code();
        post_status(&js_sys::global(), &format!("exit {code:?}, {ended:?}"));
    });
}

fn raw(value: Value) -> Box<RawValue> {
    RawValue::from_string(value.to_string()).unwrap()
}

#[wasm_bindgen_test]
async fn a_language_server_in_a_worker_answers_a_hover_after_edits_with_emoji() {
    let (worker, port) = worker("sansrpc_test_lsp_worker");
    // The editor's side: it takes the server's diagnostics and log messages.
    let (diagnostics_tx, mut diagnostics) = mpsc::unbounded::<Value>();
    let logs = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut router = AsyncRouter::new();
    router
        .raw_notification("textDocument/publishDiagnostics", move |params| {
            let params: Value = serde_json::from_str(params.unwrap().get()).unwrap();
            let _ = diagnostics_tx.unbounded_send(params);
            async {}
        })
        .unwrap();
    let seen = Arc::clone(&logs);
    router
        .raw_notification("window/logMessage", move |params| {
            seen.lock()
                .unwrap()
                .push(params.map(|p| p.get().to_owned()).unwrap_or_default());
            async {}
        })
        .unwrap();
    let editor = sansrpc_wasm::connect_port(port, Builder::new().router(router));
    let client = &editor.client;

    let initialize = json!({
        "processId": null,
        "rootUri": null,
        "capabilities": { "general": { "positionEncodings": ["utf-16"] } },
    });
    let result = client
        .call_raw("initialize", Some(&raw(initialize)))
        .await
        .unwrap();
    let result: Value = serde_json::from_str(result.get()).unwrap();
    assert_eq!(
        result["capabilities"]["positionEncoding"], "utf-16",
        "{result}"
    );
    assert_eq!(result["capabilities"]["hoverProvider"], true, "{result}");
    assert_eq!(result["serverInfo"]["name"], "words", "{result}");
    client
        .notify_raw("initialized", Some(&raw(json!({}))))
        .await
        .unwrap();

    let uri = "file:///notes.txt";
    let open = json!({ "textDocument": {
        "uri": uri, "languageId": "plaintext", "version": 1,
        "text": "hello 😀 world\nsecond line",
    }});
    client
        .notify_raw("textDocument/didOpen", Some(&raw(open)))
        .await
        .unwrap();
    // UTF-16: "hello " is 0..6, 😀 is 6..8, "world" is 9..14.
    let change = json!({
        "textDocument": { "uri": uri, "version": 2 },
        "contentChanges": [{
            "range": { "start": { "line": 0, "character": 9 }, "end": { "line": 0, "character": 14 } },
            "text": "wörld 🦀 crab",
        }],
    });
    client
        .notify_raw("textDocument/didChange", Some(&raw(change)))
        .await
        .unwrap();
    // Two edits in one notification, applied in order: 🎉 at the start of line 1, then
    // "!" after "second" (which the first edit moved to 3..9).
    let change = json!({
        "textDocument": { "uri": uri, "version": 3 },
        "contentChanges": [
            { "range": { "start": { "line": 1, "character": 0 }, "end": { "line": 1, "character": 0 } },
              "text": "🎉 " },
            { "range": { "start": { "line": 1, "character": 9 }, "end": { "line": 1, "character": 9 } },
              "text": "!" },
        ],
    });
    client
        .notify_raw("textDocument/didChange", Some(&raw(change)))
        .await
        .unwrap();

    // "hello 😀 wörld 🦀 crab": "crab" is at 18..22 in UTF-16 (14 in chars, 21 in bytes).
    let at = |line, character| {
        raw(json!({
            "textDocument": { "uri": uri },
            "position": { "line": line, "character": character },
        }))
    };
    let hover = client
        .call_raw("textDocument/hover", Some(&at(0, 19)))
        .await;
    let hover: Value = serde_json::from_str(hover.unwrap().get()).unwrap();
    assert_eq!(hover["contents"]["value"], "crab", "{hover}");
    assert_eq!(
        hover["range"],
        json!({ "start": { "line": 0, "character": 18 }, "end": { "line": 0, "character": 22 } })
    );
    let hover = client
        .call_raw("textDocument/hover", Some(&at(0, 11)))
        .await;
    let hover: Value = serde_json::from_str(hover.unwrap().get()).unwrap();
    assert_eq!(hover["contents"]["value"], "wörld", "{hover}");
    // "🎉 second! line": "second" at 3..9.
    let hover = client.call_raw("textDocument/hover", Some(&at(1, 4))).await;
    let hover: Value = serde_json::from_str(hover.unwrap().get()).unwrap();
    assert_eq!(hover["contents"]["value"], "second", "{hover}");
    assert_eq!(hover["range"]["start"]["character"], 3, "{hover}");
    // On the space after 🦀: no word.
    let hover = client
        .call_raw("textDocument/hover", Some(&at(0, 17)))
        .await;
    assert_eq!(hover.unwrap().get(), "null");

    // The analysis of version 3 (the earlier ones were superseded within their debounce, or
    // published before): one diagnostic per character outside ASCII, in UTF-16.
    let published = loop {
        let published = diagnostics
            .next()
            .await
            .expect("the editor's connection ended");
        if published["version"] == 3 {
            break published;
        }
    };
    let found: Vec<(String, u64, u64, u64)> = published["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let range = &d["range"];
            (
                d["message"].as_str().unwrap().to_owned(),
                range["start"]["line"].as_u64().unwrap(),
                range["start"]["character"].as_u64().unwrap(),
                range["end"]["character"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("😀", 0, 6, 8),
        ("ö", 0, 10, 11),
        ("🦀", 0, 15, 17),
        ("🎉", 1, 0, 2),
    ];
    let expected: Vec<_> = expected
        .iter()
        .map(|&(c, l, s, e)| (c.to_owned(), l, s, e))
        .collect();
    assert_eq!(found, expected, "{published}");

    // The lifecycle as Zed and IntelliJ end it: `shutdown` with `"params": null`, then `exit`.
    let shutdown = client.call_raw("shutdown", Some(&raw(Value::Null))).await;
    assert_eq!(shutdown.unwrap().get(), "null");
    client.notify_raw("exit", None).await.unwrap();
    let ended = status(&worker).await;
    assert_eq!(ended, "exit Some(0), Ok(())");
    // No warning in the editor's log: the documents followed every edit.
    assert!(
        logs.lock().unwrap().is_empty(),
        "{:?}",
        logs.lock().unwrap()
    );
    editor.shutdown.shutdown(Duration::ZERO);
    let _ = editor.driver.await;
    worker.terminate();
}
