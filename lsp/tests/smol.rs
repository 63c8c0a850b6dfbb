//! The same kind of server definition on the futures driver under smol, with no tokio in
//! the process: `Server::router()` on `sansrpc_futures`, over real TCP on 127.0.0.1, driven
//! by a sansrpc client in the LSP profile. A notification handler awaits smol's timer (a
//! runtime-neutral await) and publishes diagnostics through its context; a hover reads the
//! document as its request saw it; `shutdown` is answered and the client's exit code says so.

use std::time::Duration;

use futures::StreamExt;
use sansrpc::connection::Config;
use sansrpc::{Profile, RawValue};
use sansrpc_futures::{transport, AsyncIoTimer, AsyncRouter, Builder};
use sansrpc_lsp::lsp_types::notification::DidOpenTextDocument;
use sansrpc_lsp::lsp_types::request::HoverRequest;
use sansrpc_lsp::lsp_types::*;
use sansrpc_lsp::server::{Context, LspError, ServerBuilder};
use serde_json::{json, Value};

fn raw(value: Value) -> Box<RawValue> {
    RawValue::from_string(value.to_string()).unwrap()
}

async fn opened(cx: Context, uri: Uri) {
    let Some(doc) = cx.document(&uri) else { return };
    async_io::Timer::after(Duration::from_millis(20)).await;
    let text = doc.to_string();
    let todo = |(at, _)| Diagnostic {
        range: doc.range_of(at..at + 4),
        message: "TODO found".into(),
        ..Diagnostic::default()
    };
    let diagnostics = text.match_indices("TODO").map(todo).collect();
    cx.publish_diagnostics(uri, diagnostics, Some(doc.version()))
        .await;
}

async fn hover(cx: Context, params: HoverParams) -> Result<Option<Hover>, LspError> {
    let at = params.text_document_position_params;
    let line = cx
        .document(&at.text_document.uri)
        .and_then(|doc| doc.line(at.position.line).map(|l| l.to_string()));
    Ok(line.map(|value| Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::PlainText,
            value,
        }),
        range: None,
    }))
}

#[test]
fn the_server_runs_on_the_futures_driver_under_smol() {
    smol::block_on(async {
        let server = ServerBuilder::new("todo-smol", "1.0")
            .notification::<DidOpenTextDocument, _, _>(|cx, p| opened(cx, p.text_document.uri))
            .request::<HoverRequest, _, _>(hover)
            .build();
        let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let served = smol::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (client, driver) = Builder::new()
                .config(Config::for_profile(Profile::Lsp))
                .router(server.router())
                .connect(transport::tcp(stream), AsyncIoTimer);
            let ended = driver.await;
            (client.exit_code(), ended.is_ok())
        });

        // The editor's side: a client in the LSP profile that takes the diagnostics.
        let (tx, mut published) = futures::channel::mpsc::unbounded::<Value>();
        let mut editor = AsyncRouter::new();
        editor
            .raw_notification("textDocument/publishDiagnostics", move |params| {
                let tx = tx.clone();
                async move {
                    let params = params.map(|p| serde_json::from_str(p.get()).unwrap());
                    let _ = tx.unbounded_send(params.unwrap_or(Value::Null));
                }
            })
            .unwrap();
        let stream = async_net::TcpStream::connect(addr).await.unwrap();
        let (client, driver) = Builder::new()
            .config(Config::for_profile(Profile::Lsp))
            .router(editor)
            .connect(transport::tcp(stream), AsyncIoTimer);
        let driver = smol::spawn(driver);

        let init = json!({"processId": null, "rootUri": null, "capabilities": {
            "general": {"positionEncodings": ["utf-32", "utf-16"]}}});
        let answer = client
            .call_raw("initialize", Some(&raw(init)))
            .await
            .unwrap();
        let answer: Value = serde_json::from_str(answer.get()).unwrap();
        assert_eq!(answer["capabilities"]["positionEncoding"], "utf-32");
        assert_eq!(answer["capabilities"]["hoverProvider"], true);
        client
            .notify_raw("initialized", Some(&raw(json!({}))))
            .await
            .unwrap();
        let uri = "file:///smol.txt";
        let text = "first line\n𝄞 a TODO here\n";
        let open = json!({"textDocument": {"uri": uri, "languageId": "plaintext",
            "version": 3, "text": text}});
        client
            .notify_raw("textDocument/didOpen", Some(&raw(open)))
            .await
            .unwrap();
        let diagnostics = smol::future::or(published.next(), async {
            async_io::Timer::after(Duration::from_secs(20)).await;
            None
        })
        .await
        .expect("diagnostics within 20 s");
        assert_eq!(diagnostics["uri"], uri);
        assert_eq!(diagnostics["version"], 3);
        // In UTF-32, as negotiated: the clef is one unit, so TODO starts at character 4.
        assert_eq!(
            diagnostics["diagnostics"][0]["range"],
            json!({"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 8}})
        );
        let at = json!({"textDocument": {"uri": uri}, "position": {"line": 1, "character": 0}});
        let hovered = client
            .call_raw("textDocument/hover", Some(&raw(at)))
            .await
            .unwrap();
        let hovered: Value = serde_json::from_str(hovered.get()).unwrap();
        assert_eq!(hovered["contents"]["value"], "𝄞 a TODO here");
        client.call_raw("shutdown", None).await.unwrap();
        client.notify_raw("exit", None).await.unwrap();
        let (code, ended) = served.await;
        assert_eq!(code, Some(0), "the server saw shutdown answered, then exit");
        assert!(ended);
        drop(client);
        let _ = driver.await;
    });
}
