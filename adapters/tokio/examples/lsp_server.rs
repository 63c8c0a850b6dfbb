//! A small language server on stdio (Content-Length framing, the LSP profile), as an
//! editor would spawn it. `custom/greet` shows the handler context: it asks the client for
//! `workspace/configuration`, sends `window/logMessage`, reports `$/progress` on the
//! request's `workDoneToken`, and stops when the client cancels (`$/cancelRequest`),
//! answering `-32800`. `shutdown` then `exit` end the process with status 0 (1 without
//! `shutdown` first, as the LSP says).
//!
//! Driven by vscode-jsonrpc in `adapters/tokio/tests/lsp_vscode.rs`
//! (`interop/vscode-jsonrpc/lsp_client.js`). Run by hand:
//! `cargo run -p sansrpc-tokio --example lsp_server` and type Content-Length frames.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::{select, Either};
use sansrpc::endpoint::{Config, Profile};
use sansrpc::{ErrorObject, RawValue};
use sansrpc_tokio::{sansrpc, AsyncRouter, Builder, RequestContext};
use serde::Deserialize;
use serde_json::{json, Value};

sansrpc::method!(Initialize = "initialize", Value => Value);
sansrpc::method!(Shutdown = "shutdown", () => Option<()>);
sansrpc::method!(Exit = "exit", ());
sansrpc::method!(Greet = "custom/greet", GreetParams => String);
sansrpc::method!(Configuration = "workspace/configuration", Value => Vec<Value>);
sansrpc::method!(LogMessage = "window/logMessage", Value);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GreetParams {
    name: String,
    /// How long to think before answering (to have something to cancel).
    #[serde(default)]
    wait_ms: u64,
}

async fn greet(cx: RequestContext, p: GreetParams) -> Result<String, ErrorObject<'static>> {
    let peer = cx.peer();
    // Ask the client, from inside the handler.
    let items = json!({"items": [{"section": "greeting"}]});
    let config = peer.call::<Configuration>(&items).await;
    let salutation = match config.as_deref() {
        Ok([Value::String(s), ..]) => s.clone(),
        _ => "Hello".to_owned(),
    };
    let log = json!({"type": 3, "message": format!("greeting {}", p.name)});
    let _ = peer.notify::<LogMessage>(&log).await;
    let begin = r#"{"kind":"report","message":"thinking","percentage":50}"#;
    let _ = cx
        .report_progress(RawValue::from_json(begin).unwrap())
        .await;
    if p.wait_ms > 0 {
        let think = std::pin::pin!(tokio::time::sleep(Duration::from_millis(p.wait_ms)));
        if let Either::Right(_) = select(think, cx.cancelled()).await {
            eprintln!("greet: cancelled");
            return Err(ErrorObject::fixed(-32800, "Request cancelled"));
        }
    }
    Ok(format!("{salutation}, {}!", p.name))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shut_down = Arc::new(AtomicBool::new(false));
    let mut router = AsyncRouter::new();
    router.method::<Initialize, _, _>(|_| async {
        Ok(json!({"capabilities": {}, "serverInfo": {"name": "sansrpc-lsp-example"}}))
    })?;
    router.method_with_context::<Greet, _, _>(greet)?;
    let flag = shut_down.clone();
    router.method::<Shutdown, _, _>(move |()| {
        flag.store(true, Ordering::SeqCst);
        async { Ok(None) }
    })?;
    router.notification::<Exit, _, _>(move |()| {
        let code = if shut_down.load(Ordering::SeqCst) {
            0
        } else {
            1
        };
        std::process::exit(code);
        #[allow(unreachable_code)]
        async {}
    })?;
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Lsp))
        .router(router);
    let conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::stdio());
    conn.driver.await??;
    Ok(())
}
