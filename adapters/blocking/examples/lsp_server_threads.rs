//! The language server of `sansrpc-tokio`'s `lsp_server` example, on threads with no async
//! runtime (LSP servers are often written this way): stdio, Content-Length framing, the LSP
//! profile. `custom/greet` runs on the handler pool and uses
//! [`RequestContext::current`]: it asks the client for `workspace/configuration` (blocking
//! only its worker), sends `window/logMessage`, reports `$/progress` on the request's
//! `workDoneToken`, and stops when the client cancels, answering `-32800`. `shutdown` then
//! `exit` end the process with status 0.
//!
//! (`lsp_server_threads`: example names share one output folder across the workspace.)
//! Driven by vscode-jsonrpc in `adapters/blocking/tests/lsp_vscode.rs`, with the same client
//! script as the async example (`interop/vscode-jsonrpc/lsp_client.js`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sansrpc::endpoint::Profile;
use sansrpc::router::Router;
use sansrpc::{ErrorObject, RawValue};
use sansrpc_blocking::{serve_stdio, Config, RequestContext};
use serde::Deserialize;
use serde_json::{json, Value};

sansrpc::method!(Initialize = "initialize", Value => Value);
sansrpc::method!(Shutdown = "shutdown", () => Option<()>);
sansrpc::method!(Exit = "exit", ());
sansrpc::method!(Greet = "custom/greet", GreetParams => String);
sansrpc::method!(Configuration = "workspace/configuration", Value => Vec<Value>);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GreetParams {
    name: String,
    /// How long to think before answering (to have something to cancel).
    #[serde(default)]
    wait_ms: u64,
}

fn greet(p: GreetParams) -> Result<String, ErrorObject<'static>> {
    let cx = RequestContext::current().ok_or_else(ErrorObject::internal_error)?;
    let peer = cx.peer();
    let items = json!({"items": [{"section": "greeting"}]});
    let salutation = match peer.call::<Configuration>(&items, None).as_deref() {
        Ok([Value::String(s), ..]) => s.clone(),
        _ => "Hello".to_owned(),
    };
    let log = json!({"type": 3, "message": format!("greeting {}", p.name)}).to_string();
    let _ = peer.notify_raw(
        "window/logMessage",
        Some(RawValue::from_json(&log).unwrap()),
    );
    let begin = r#"{"kind":"report","message":"thinking","percentage":50}"#;
    cx.report_progress(RawValue::from_json(begin).unwrap());
    let end = Instant::now() + Duration::from_millis(p.wait_ms);
    while Instant::now() < end {
        if cx.is_cancelled() {
            eprintln!("greet: cancelled");
            return Err(ErrorObject::fixed(-32800, "Request cancelled"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(format!("{salutation}, {}!", p.name))
}

fn main() -> std::io::Result<()> {
    let shut_down = Arc::new(AtomicBool::new(false));
    let mut router = Router::new();
    router
        .method::<Initialize, _>(|_| {
            Ok(json!({"capabilities": {}, "serverInfo": {"name": "sansrpc-lsp-example"}}))
        })
        .unwrap();
    router.method::<Greet, _>(greet).unwrap();
    let flag = shut_down.clone();
    router
        .method::<Shutdown, _>(move |()| {
            flag.store(true, Ordering::SeqCst);
            Ok(None)
        })
        .unwrap();
    // Notifications run on the driver thread, in order: after `shutdown` was answered.
    router
        .notification::<Exit, _>(move |()| {
            std::process::exit(if shut_down.load(Ordering::SeqCst) {
                0
            } else {
                1
            })
        })
        .unwrap();
    let mut config = Config::default();
    config.endpoint = sansrpc::endpoint::Config::for_profile(Profile::Lsp);
    serve_stdio(Arc::new(router), config)
}
