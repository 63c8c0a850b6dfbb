//! The MCP client over `fetch` (`sansrpc_mcp::wasm`) in a real browser, against the
//! project's `everything_server` (started by tests/chromium.rs, listing this page's origin):
//! both revisions, JSON and SSE answers, progress, a stream cut by the network and resumed
//! with `Last-Event-ID`, the session's `DELETE` checked from the server's side, and the
//! example page (`examples/mcp_page.rs`) as `scripts/wasm-page` left it. tests/chromium.rs
//! builds this file for `wasm32-unknown-unknown` with the servers' URLs and runs it with
//! `wasm-bindgen-test-runner` in headless Chromium.
#![cfg(all(target_arch = "wasm32", feature = "wasm"))]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::{ClientBuilder, McpClient};
use sansrpc_mcp::types::{version, CallToolResult, ContentBlock, CreateMessageResult};
use sansrpc_wasm::{Builder, Spawned};
use serde_json::json;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

/// `http://127.0.0.1:PORT/mcp` of the everything server, and of the proxy in front of it
/// that cuts the answer carrying the progress token 650265 after its second notification;
/// baked in by tests/chromium.rs.
const MCP: Option<&str> = option_env!("SANSRPC_MCP_URL");
const MCP_CUT: Option<&str> = option_env!("SANSRPC_MCP_CUT_URL");
/// `http://127.0.0.1:PORT/`: the example page (`examples/mcp_page.rs`) as
/// `scripts/wasm-page` wrote it, after `wasm-opt -Oz`.
const PAGE: Option<&str> = option_env!("SANSRPC_MCP_PAGE_URL");

fn url(url: Option<&'static str>) -> &'static str {
    url.expect("built without the servers' URLs: run it through tests/chromium.rs")
}

/// The progress notifications a client received: (token, progress).
type Progress = Arc<Mutex<Vec<(i64, f64)>>>;

/// How a test's connection answers the server: with the MCP client's own answers and no
/// router (`connect_answering`, as the example page does), or on a router the client's
/// handlers are mounted on (`connect`).
#[derive(Clone, Copy, PartialEq)]
enum Answering {
    Alone,
    OnARouter,
}

/// A client that keeps the progress it is told and answers the server's sampling requests
/// ("pong from the page"), and its connection to `url`.
fn client(url: Option<&'static str>, answering: Answering) -> (ClientBuilder, Spawned, Progress) {
    let progress = Progress::default();
    let kept = Arc::clone(&progress);
    let mcp = ClientBuilder::new("sansrpc-wasm-test", "1.0.0")
        .on_notification(move |method, params| {
            if method == "notifications/progress" {
                let token = params["progressToken"].as_i64().unwrap_or(-1);
                let step = params["progress"].as_f64().unwrap_or(-1.0);
                kept.lock().unwrap().push((token, step));
            }
        })
        .on_sampling(|_| async move {
            let answer = json!({"role": "assistant", "model": "page-model",
                "content": {"type": "text", "text": "pong from the page"}});
            Ok(serde_json::from_value::<CreateMessageResult>(answer).unwrap())
        });
    let builder = Builder::new().config(Config::for_profile(Profile::Mcp));
    let url = crate::url(url);
    let conn = match answering {
        Answering::Alone => sansrpc_mcp::wasm::connect_answering(url, builder, mcp.answers()),
        Answering::OnARouter => sansrpc_mcp::wasm::connect(url, builder.router(mcp.router())),
    };
    (mcp, conn.expect("connect"), progress)
}

fn text(result: &CallToolResult) -> &str {
    match result.content.first() {
        Some(ContentBlock::Text(t)) => &t.text,
        other => panic!("not a text answer: {other:?}"),
    }
}

/// `slow` for half a second with progress token `token`: five progress notifications on
/// the call's event stream, then the answer.
async fn slow(server: &McpClient, token: i64) -> CallToolResult {
    server
        .call_tool_with_progress(
            "slow",
            json!({"seconds": 0.5}),
            token,
            Duration::from_secs(20),
            Duration::from_secs(60),
        )
        .await
        .expect("slow")
}

fn steps(progress: &Progress, token: i64) -> Vec<f64> {
    let progress = progress.lock().unwrap();
    progress
        .iter()
        .filter(|(t, _)| *t == token)
        .map(|(_, step)| *step)
        .collect()
}

/// The status the server answers a `ping` POSTed with session id `session`: 200 while the
/// session lives, 404 once it ended. A plain `fetch`, as another tab would send it.
async fn ping_status(session: &str) -> u16 {
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    let headers = web_sys::Headers::new().unwrap();
    headers.append("content-type", "application/json").unwrap();
    headers
        .append("accept", "application/json, text/event-stream")
        .unwrap();
    headers.append("mcp-session-id", session).unwrap();
    headers
        .append("mcp-protocol-version", version::V2025_11_25)
        .unwrap();
    init.set_headers(&headers);
    init.set_body(&r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.into());
    let window = web_sys::window().unwrap();
    let response = JsFuture::from(window.fetch_with_str_and_init(url(MCP), &init))
        .await
        .expect("the server answers");
    response.unchecked_into::<web_sys::Response>().status()
}

#[wasm_bindgen_test]
async fn an_mcp_session_initializes_calls_tools_with_json_and_sse_answers_and_ends_with_delete() {
    let (mcp, conn, progress) = client(MCP, Answering::Alone);
    let server = mcp.initialize(&conn).await.expect("initialize");
    assert_eq!(server.protocol_version(), version::V2025_11_25);
    assert_eq!(server.server_info().name, "sansrpc-everything-server");
    // The session id came in a header CORS exposes to the page.
    let session = sansrpc_mcp::wasm::session_id(&conn.client).expect("a session id");
    assert_eq!(session.len(), 32, "{session:?}");

    let tools = server.all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"add") && names.contains(&"slow"),
        "{names:?}"
    );
    // Answered at once: one JSON body.
    let sum = server
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(text(&sum), "5");
    // A tool that reports progress: its answer comes on an event stream, after it.
    let slept = slow(&server, 11).await;
    assert_eq!(text(&slept), "slept 0.5 s");
    assert_eq!(steps(&progress, 11), [1.0, 2.0, 3.0, 4.0, 5.0]);
    // An error of the tool's reaches the caller as the tool's result.
    let overflow = server
        .call_tool("add", json!({"a": i64::MAX, "b": 1}))
        .await
        .unwrap();
    assert_eq!(overflow.is_error, Some(true));
    // The server asks the page's model from inside a tool: its request comes on the call's
    // event stream, the page's answer goes in a POST of its own.
    let sampled = server
        .call_tool("test_sampling", json!({"prompt": "ping?"}))
        .await
        .unwrap();
    assert_eq!(text(&sampled), "LLM response: pong from the page");

    // The session lives on the server until the client closes it (DELETE).
    assert_eq!(ping_status(&session).await, 200);
    server.close().await;
    assert_eq!(
        ping_status(&session).await,
        404,
        "the session outlived close"
    );
    conn.driver.await.expect("the driver ends cleanly");
}

#[wasm_bindgen_test]
async fn an_event_stream_cut_by_the_network_is_resumed_with_last_event_id() {
    let (mcp, conn, progress) = client(MCP_CUT, Answering::OnARouter);
    let server = mcp.initialize(&conn).await.expect("initialize");
    // The proxy cuts this call's answer after its second progress notification; the client
    // resumes the stream after the server's `retry` delay and reads the rest: every step
    // once, in order, and the answer.
    let slept = slow(&server, 650265).await;
    assert_eq!(text(&slept), "slept 0.5 s");
    assert_eq!(steps(&progress, 650265), [1.0, 2.0, 3.0, 4.0, 5.0]);
    // tests/chromium.rs checks that the cut happened, and the `Last-Event-ID` request.
    server.close().await;
}

#[wasm_bindgen_test]
async fn the_stateless_revision_discovers_and_calls_with_json_and_sse_answers() {
    let (mcp, conn, progress) = client(MCP, Answering::Alone);
    let server = mcp.discover(&conn).await.expect("server/discover");
    assert!(server.is_stateless());
    assert_eq!(server.protocol_version(), version::V2026_07_28);
    assert_eq!(sansrpc_mcp::wasm::session_id(&conn.client), None);
    let tools = server.all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "slow"));
    let sum = server
        .call_tool("add", json!({"a": 40, "b": 2}))
        .await
        .unwrap();
    assert_eq!(text(&sum), "42");
    let slept = slow(&server, 12).await;
    assert_eq!(text(&slept), "slept 0.5 s");
    assert_eq!(steps(&progress, 12), [1.0, 2.0, 3.0, 4.0, 5.0]);
    // A method the revision removed is refused by the client itself.
    let ping = server.ping().await.unwrap_err();
    assert!(ping.to_string().contains("ping"), "{ping}");
    server.close().await;
}

#[wasm_bindgen_test]
async fn a_server_that_is_not_there_is_a_clear_transport_error() {
    // A port nothing listens on (the discard port).
    let mcp = ClientBuilder::new("sansrpc-wasm-test", "1.0.0");
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router());
    let conn = sansrpc_mcp::wasm::connect("http://127.0.0.1:9/mcp", builder).unwrap();
    let err = mcp.initialize(&conn).await.unwrap_err();
    let cause = err.transport().expect("the transport's reason").to_string();
    assert!(
        cause.contains("fetch") && cause.contains("POST http://127.0.0.1:9/mcp"),
        "{cause}"
    );
    // And a header the transport sets itself is refused before anything is sent.
    let refused = sansrpc_mcp::wasm::Connect::new(url(MCP))
        .header("Mcp-Session-Id", "mine")
        .connect(Builder::new())
        .unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
}

#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
export async function load_mcp_page(base, server) {
  for (const id of ["mcp-server", "mcp-sum"]) {
    const p = document.createElement("p");
    p.id = id;
    document.body.appendChild(p);
  }
  document.getElementById("mcp-server").dataset.url = server;
  const glue = await import(base + "mcp_page.js");
  await glue.default({ module_or_path: base + "mcp_page_bg.wasm" });
}

export function mcp_text_of(id) {
  return document.getElementById(id).textContent;
}
"#)]
extern "C" {
    /// Adds the MCP page's two elements (with the server's URL) to this page, and loads the
    /// example page's module from `base`, which starts it.
    async fn load_mcp_page(base: &str, server: &str);

    /// The text of the element `id`.
    fn mcp_text_of(id: &str) -> String;
}

#[wasm_bindgen_test]
async fn the_mcp_example_page_runs_as_wasm_opt_left_it() {
    load_mcp_page(url(PAGE), url(MCP)).await;
    // It lists the tools, then writes the sum (the test's timeout bounds the wait).
    let timer = sansrpc_wasm::BrowserTimer;
    while mcp_text_of("mcp-sum") != "2 + 3 = 5" {
        sansrpc_futures::Timer::sleep_until(
            &timer,
            sansrpc_runtime::time::Instant::now() + Duration::from_millis(20),
        )
        .await;
    }
    let server = mcp_text_of("mcp-server");
    assert!(
        server.starts_with("sansrpc-everything-server: ") && server.ends_with(" tools"),
        "{server:?}"
    );
}
