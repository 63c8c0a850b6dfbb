//! Serving a server in one call, and a server on a connection without the LSP profile: an
//! in-memory stream, Content-Length frames written and read by hand.
//!
//! - On the plain connection (`Server::router()` on a `Builder` left at plain JSON-RPC), the
//!   server says so at `initialize`: a `window/logMessage` warning to the editor, before
//!   the answer (and the same line on stderr).
//! - `Server::serve` (what `serve_stdio` runs on stdio) sets the profile: no warning,
//!   requests before `initialize` refused `-32002`, `exit` with null params after
//!   `shutdown` ends it, and the call returns the status, 0.
//! - A `didOpen` that does not decode is warned about once.
//! - `on_change`: each version's analysis, cancelled by the next version and by `didClose`,
//!   which also clears the diagnostics; `Context::cached`, once per version.

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use sansrpc_lsp::server::ServerBuilder;

/// The editor's end of an in-memory stream.
struct Editor {
    io: DuplexStream,
    read: Vec<u8>,
}

impl Editor {
    async fn send(&mut self, message: Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.io.write_all(frame.as_bytes()).await.unwrap();
    }

    /// The next frame the server writes.
    async fn next(&mut self) -> Value {
        loop {
            let text = String::from_utf8_lossy(&self.read).into_owned();
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text[..end]
                    .strip_prefix("Content-Length: ")
                    .and_then(|n| n.parse().ok())
                    .expect("a Content-Length header");
                if self.read.len() >= end + 4 + length {
                    let body: Vec<u8> = self.read.drain(..end + 4 + length).skip(end + 4).collect();
                    return serde_json::from_slice(&body).unwrap();
                }
            }
            let mut chunk = [0; 4096];
            let n = self.io.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the server closed the stream");
            self.read.extend_from_slice(&chunk[..n]);
        }
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"processId": null, "capabilities": {}}})
}

#[tokio::test]
async fn a_server_on_a_connection_without_the_lsp_profile_warns_at_initialize() {
    let (editor, server_end) = tokio::io::duplex(1 << 16);
    let server = ServerBuilder::new("plain", "1.0").build();
    let (read, write) = tokio::io::split(server_end);
    // Left at plain JSON-RPC: the mistake the warning is for.
    let builder = sansrpc_tokio::Builder::new()
        .configure(|c| c.framing = Some(sansrpc_tokio::sansrpc::codec::Framing::ContentLength))
        .router(server.router());
    let _conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::stream(read, write));
    let mut editor = Editor {
        io: editor,
        read: Vec::new(),
    };
    editor.send(initialize()).await;
    let warning = editor.next().await;
    assert_eq!(warning["method"], "window/logMessage", "{warning}");
    assert_eq!(warning["params"]["type"], 2, "a warning: {warning}");
    let message = warning["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("not under the LSP profile") && message.contains("serve_stdio"),
        "{message}"
    );
    let answer = editor.next().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["serverInfo"]["name"], "plain");
}

#[tokio::test]
async fn serve_sets_the_lsp_profile_and_returns_the_exit_status() {
    let (mut editor, served) = serve(ServerBuilder::new("served", "1.0").build());
    // Before initialize: refused by the profile's lifecycle.
    editor
        .send(json!({"jsonrpc": "2.0", "id": 0, "method": "shutdown"}))
        .await;
    let refused = editor.next().await;
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    editor.send(initialize()).await;
    let answer = editor.next().await;
    assert_eq!(answer["id"], 1, "no warning before the answer: {answer}");
    assert_eq!(answer["result"]["serverInfo"]["name"], "served");
    editor
        .send(json!({"jsonrpc": "2.0", "method": "initialized", "params": null}))
        .await;
    editor
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null}))
        .await;
    assert_eq!(
        editor.next().await,
        json!({"jsonrpc": "2.0", "id": 2, "result": null})
    );
    editor
        .send(json!({"jsonrpc": "2.0", "method": "exit", "params": null}))
        .await;
    assert_eq!(served.await.unwrap(), 0, "exit after shutdown: status 0");
}

/// A `didOpen` whose params do not decode, on a server that keeps documents and has its own
/// `didOpen` handler: one warning to the editor, not one from the documents and one from
/// the handler; the handler does not run.
#[tokio::test]
async fn undecodable_did_open_params_are_warned_about_once() {
    use sansrpc_lsp::lsp_types::notification::{DidOpenTextDocument, ShowMessage};
    use sansrpc_lsp::lsp_types::{MessageType, ShowMessageParams};

    let server = ServerBuilder::new("opens", "1.0")
        .notification::<DidOpenTextDocument, _, _>(|cx, p| async move {
            let message = format!("opened {}", p.text_document.uri.as_str());
            let params = ShowMessageParams {
                typ: MessageType::INFO,
                message,
            };
            cx.notify::<ShowMessage>(params).await;
        })
        .build();
    let mut editor = served(server).await;
    // No `version`, and `text` a number.
    editor
        .send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                     "params": {"textDocument": {"uri": "file:///a.txt", "languageId": "x", "text": 7}}}))
        .await;
    let warning = editor.next().await;
    assert_eq!(warning["method"], "window/logMessage", "{warning}");
    assert_eq!(warning["params"]["type"], 2);
    let message = warning["params"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("textDocument/didOpen: Invalid params"),
        "{message}"
    );
    // A good one runs the handler; the frame after the warning is its message.
    editor
        .send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                     "params": {"textDocument": {"uri": "file:///b.txt", "languageId": "x",
                                                 "version": 1, "text": ""}}}))
        .await;
    let shown = editor.next().await;
    assert_eq!(
        shown["method"], "window/showMessage",
        "one warning only, then: {shown}"
    );
    assert_eq!(shown["params"]["message"], "opened file:///b.txt");
}

/// `server` served over an in-memory stream (`Server::serve`): the editor's end, and the
/// status `serve` returns.
fn serve(server: sansrpc_lsp::server::Server) -> (Editor, tokio::task::JoinHandle<i32>) {
    let (editor, server_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let served =
        tokio::spawn(async move { server.serve(sansrpc_tokio::stream(read, write)).await });
    let editor = Editor {
        io: editor,
        read: Vec::new(),
    };
    (editor, served)
}

/// `server` served as [`serve`] does, initialized: the editor's end.
async fn served(server: sansrpc_lsp::server::Server) -> Editor {
    let (mut editor, _) = serve(server);
    editor.send(initialize()).await;
    assert_eq!(editor.next().await["id"], 1);
    editor
}

fn did_open(uri: &str, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
           "params": {"textDocument": {"uri": uri, "languageId": "x", "version": 1, "text": text}}})
}

fn did_change(uri: &str, version: i32, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "textDocument/didChange",
           "params": {"textDocument": {"uri": uri, "version": version},
                      "contentChanges": [{"text": text}]}})
}

/// The message of the next frame, which must be a `window/logMessage`.
async fn logged(editor: &mut Editor) -> String {
    let frame = editor.next().await;
    assert_eq!(frame["method"], "window/logMessage", "{frame}");
    frame["params"]["message"].as_str().unwrap().to_owned()
}

/// `on_change` runs for `didOpen` and every `didChange`, with the document as that version
/// left it; a newer version cancels the analysis of the one before (its `Context` says so,
/// and its diagnostics are not sent), and `didClose` cancels the last one and clears the
/// document's diagnostics. No timer: each analysis waits for its own cancellation.
#[tokio::test]
async fn a_newer_version_cancels_the_analysis_of_the_one_before_and_close_clears() {
    use sansrpc_lsp::lsp_types::MessageType;

    let server = ServerBuilder::new("versions", "1.0")
        .on_change(|cx, doc| async move {
            let version = doc.version();
            let text = doc.to_string();
            cx.log_message(MessageType::INFO, format!("start {version}: {text}"))
                .await;
            assert!(!cx.is_cancelled());
            cx.cancelled().await;
            assert!(cx.is_cancelled());
            // Superseded: publishing sends nothing.
            let sent = cx
                .publish_diagnostics(doc.uri().clone(), Vec::new(), Some(version))
                .await;
            cx.log_message(
                MessageType::INFO,
                format!("cancelled {version}, published {sent}"),
            )
            .await;
        })
        .build();
    let mut editor = served(server).await;
    let uri = "file:///v.txt";
    editor.send(did_open(uri, "one")).await;
    assert_eq!(logged(&mut editor).await, "start 1: one");
    editor.send(did_change(uri, 2, "two")).await;
    let mut seen = vec![logged(&mut editor).await, logged(&mut editor).await];
    seen.sort();
    assert_eq!(seen, ["cancelled 1, published false", "start 2: two"]);
    editor
        .send(json!({"jsonrpc": "2.0", "method": "textDocument/didClose",
                     "params": {"textDocument": {"uri": uri}}}))
        .await;
    let (mut cleared, mut cancelled) = (None, None);
    while cleared.is_none() || cancelled.is_none() {
        let frame = editor.next().await;
        match frame["method"].as_str() {
            Some("textDocument/publishDiagnostics") => cleared = Some(frame["params"].clone()),
            Some("window/logMessage") => cancelled = Some(frame["params"]["message"].clone()),
            _ => panic!("{frame}"),
        }
    }
    assert_eq!(cleared.unwrap(), json!({"uri": uri, "diagnostics": []}));
    assert_eq!(cancelled.unwrap(), "cancelled 2, published false");
}

/// `Context::cached` computes once per version of a document: two hovers on one version
/// share the value, a change makes a new one.
#[tokio::test]
async fn cached_values_are_computed_once_per_version() {
    use sansrpc_lsp::lsp_types::request::HoverRequest;
    use sansrpc_lsp::lsp_types::{Hover, HoverContents, MarkedString};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let computed = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&computed);
    let server = ServerBuilder::new("cache", "1.0")
        .request::<HoverRequest, _, _>(move |cx, p| {
            let count = Arc::clone(&count);
            async move {
                let uri = p.text_document_position_params.text_document.uri;
                let doc = cx.document(&uri).unwrap();
                let words = cx.cached(&doc, |doc| {
                    count.fetch_add(1, Ordering::SeqCst);
                    doc.to_string().split_whitespace().count()
                });
                let value = format!("v{} has {words} words", doc.version());
                Ok(Some(Hover {
                    contents: HoverContents::Scalar(MarkedString::String(value)),
                    range: None,
                }))
            }
        })
        .build();
    let mut editor = served(server).await;
    let uri = "file:///c.txt";
    let hover = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/hover",
               "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}})
    };
    editor.send(did_open(uri, "a b c")).await;
    for id in [10, 11] {
        editor.send(hover(id)).await;
        assert_eq!(editor.next().await["result"]["contents"], "v1 has 3 words");
    }
    assert_eq!(computed.load(Ordering::SeqCst), 1, "once for version 1");
    // Was a bug: opened again at the version it has (the crate's own client opens at 1),
    // with another text, it was given the value of the text before at that version.
    editor.send(did_open(uri, "a b c d")).await;
    editor.send(hover(13)).await;
    let answer = loop {
        // (The editor is warned that the document was open already.)
        let message = editor.next().await;
        if message["id"] == 13 {
            break message;
        }
    };
    assert_eq!(answer["result"]["contents"], "v1 has 4 words");
    editor.send(did_change(uri, 2, "a b")).await;
    editor.send(hover(12)).await;
    assert_eq!(editor.next().await["result"]["contents"], "v2 has 2 words");
    assert_eq!(
        computed.load(Ordering::SeqCst),
        3,
        "once more for the text opened again, once for version 2"
    );
}

/// The same on the blocking adapter: a server's `blocking_router()` on a plain connection
/// (here a TCP one on loopback) warns at `initialize`.
#[test]
fn on_threads_a_connection_without_the_profile_is_told_too() {
    use std::io::{Read, Write};

    let server = ServerBuilder::new("plain", "1.0").build();
    let router = std::sync::Arc::new(server.blocking_router());
    let listening =
        sansrpc_blocking::serve_tcp("127.0.0.1:0", router, sansrpc_blocking::Options::default())
            .unwrap();
    let mut stream = std::net::TcpStream::connect(listening.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let body = initialize().to_string();
    write!(stream, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut read = Vec::new();
    let mut frames = Vec::new();
    while frames.len() < 2 {
        let mut chunk = [0; 4096];
        let n = stream.read(&mut chunk).expect("the server answers in time");
        assert!(n > 0, "the server closed the connection");
        read.extend_from_slice(&chunk[..n]);
        while let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&read[..end]).into_owned();
            let length: usize = head["Content-Length: ".len()..].parse().unwrap();
            if read.len() < end + 4 + length {
                break;
            }
            let frame: Vec<u8> = read.drain(..end + 4 + length).skip(end + 4).collect();
            frames.push(serde_json::from_slice::<Value>(&frame).unwrap());
        }
    }
    assert_eq!(frames[0]["method"], "window/logMessage", "{frames:?}");
    let message = frames[0]["params"]["message"].as_str().unwrap();
    assert!(message.contains("not under the LSP profile"), "{message}");
    assert_eq!(frames[1]["id"], 1, "{frames:?}");
    listening.shutdown();
}

/// Was a bug: work-done progress begun by a handler that then returned early (`?`, or
/// cancelled) was never ended, and the editor's indicator spun for ever. Dropped, it ends.
#[tokio::test]
async fn work_done_progress_dropped_without_its_end_is_ended() {
    use sansrpc_lsp::lsp_types::request::HoverRequest;
    use sansrpc_lsp::server::LspError;
    let server = ServerBuilder::new("progress", "1.0")
        .request::<HoverRequest, _, _>(|cx, _| async move {
            let _progress = cx.work_done("scanning").await;
            Err::<Option<sansrpc_lsp::lsp_types::Hover>, _>(LspError::internal("gave up"))
        })
        .build();
    let mut editor = served(server).await;
    editor
        .send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
                     "params": {"textDocument": {"uri": "file:///p.txt"},
                                "position": {"line": 0, "character": 0},
                                "workDoneToken": "w-1"}}),
        )
        .await;
    let mut kinds = Vec::new();
    let three = async {
        while kinds.len() < 3 {
            let frame = editor.next().await;
            if frame["method"] == "$/progress" {
                assert_eq!(frame["params"]["token"], "w-1", "{frame}");
                let kind = &frame["params"]["value"]["kind"];
                kinds.push(kind.as_str().unwrap().to_owned());
            } else if frame["id"] == 2 {
                assert!(frame["error"].is_object(), "{frame}");
                kinds.push("answer".to_owned());
            }
        }
    };
    let limit = std::time::Duration::from_secs(10);
    tokio::time::timeout(limit, three)
        .await
        .expect("the begin, the answer and the end");
    assert_eq!(kinds[0], "begin");
    assert!(kinds.contains(&"end".to_owned()), "{kinds:?}");
}
