//! Runs `tests/browser.rs` in headless Chromium, against the project's own servers started
//! here on 127.0.0.1: the WebSocket calculator (`sansrpc-tokio`'s `ws_server` example), the
//! Ethereum node (`eth_node`, a block every 100 ms), and sansrpc WebSocket servers in this
//! process whose one method, `never`, is never answered (the deadline test's). The MCP
//! client in a page has its own, `sansrpc-mcp`'s `tests/chromium.rs`; what the two share is
//! `tests/support/browser.rs`.
//!
//! Their URLs reach the browser test baked in at compile time (`option_env!`): this test
//! builds it for `wasm32-unknown-unknown` with cargo and runs it with
//! `wasm-bindgen-test-runner` (cargo's runner for the target), which serves it on a page
//! of its own at `http://127.0.0.1:PORT` and drives Chromium through chromedriver. The
//! examples keep their default `Origin` rule ([`Origins::SameAsHosts`]): a page of a
//! loopback host is accepted, as a developer's page on `localhost` is. The server that
//! never answers lists the page's origin (`Origins::List`), as a server whose pages come
//! from a site of its own does; one more lists another origin only, and refuses the page.
//!
//! The example page of `docs/browser.md` (`examples/calculator_page.rs`) is built first as a
//! user ships it, by `scripts/wasm-page` (release, wasm-bindgen, `wasm-opt`, its size
//! budget), and served here over HTTP (with `Access-Control-Allow-Origin`, the test page
//! being of another port); a browser test loads the optimized module into its page and
//! waits for its lines: the module wasm-opt wrote runs.
//!
//! Needs: Debian's `chromium` and `chromium-driver`, the `wasm32-unknown-unknown` target
//! and `wasm-bindgen-cli` at the version of `wasm-bindgen` in Cargo.lock, which
//! `scripts/provision-wasm` installs (`scripts/test` and `.ci/run` call it). Without them
//! the test fails and says so: it never skips.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../../tests/support/browser.rs"]
mod browser;
#[path = "../../../tests/support/processes.rs"]
mod processes;

use std::time::Duration;

use browser::{browser_tests, build_and_serve_page, run_browser_tests, Tools};
use processes::Example;
use sansrpc_tokio::{sansrpc, ws, AsyncRouter, Builder, Origins, ServeOptions};

/// The tests in tests/browser.rs, each of which must have run and passed.
const BROWSER_TESTS: usize = 20;

/// A sansrpc WebSocket server whose method `never` is never answered (`ping` is, and
/// `hang_up` is, then closes the connection), accepting pages
/// of `origins` only (as a user configures it: `ServeOptions::allowed_origins`), on a
/// thread of its own (its runtime and listener end with the test process); its URL.
fn never_answering_server(origins: Origins) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let mut router = AsyncRouter::new();
            router
                .raw_method("never", |_| std::future::pending())
                .unwrap();
            router
                .raw_method("ping", |_| async {
                    Ok(sansrpc::RawValue::from_string("\"pong\"".to_owned()).unwrap())
                })
                .unwrap();
            // Answers, and closes the connection (the reconnecting client's test).
            router
                .raw_method_with_context("hang_up", |ctx, _| async move {
                    let peer = ctx.peer().clone();
                    tokio::spawn(async move { peer.close().await });
                    Ok(sansrpc::RawValue::from_string("true".to_owned()).unwrap())
                })
                .unwrap();
            let builder = Builder::new().router(router);
            let mut options = ServeOptions::default();
            options.allowed_origins = origins;
            let shutdown = std::future::pending::<()>();
            ws::serve_with(listener, builder, options, shutdown, Duration::from_secs(1))
                .await
                .unwrap();
        });
    });
    let addr = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    format!("ws://{addr}")
}

/// The URL in an example's first line (`calculator on ws://127.0.0.1:PORT`, `listening on
/// 127.0.0.1:PORT`).
fn ws_url(line: &str) -> String {
    let addr = line.rsplit(' ').next().unwrap();
    let addr = addr.strip_prefix("ws://").unwrap_or(addr);
    assert!(addr.starts_with("127.0.0.1:"), "no address in {line:?}");
    format!("ws://{addr}")
}

#[test]
fn the_browser_tests_pass_in_headless_chromium() {
    let tools = Tools::find();
    let mut calculator = Example::start("sansrpc-tokio", "ws_server", &["127.0.0.1:0"]);
    let calculator_url = ws_url(&calculator.line());
    let mut node = Example::start_with_env(
        "sansrpc-tokio",
        "eth_node",
        &[("PORT", "0"), ("ETH_NODE_BLOCK_MS", "100")],
    );
    let node_url = ws_url(&node.line());
    // The page's origin: wasm-bindgen-test-runner serves it at this address. The server
    // that never answers lists it, as a user lists the origin of their page; another lists
    // only a site's, and refuses the page.
    let page = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let never_url = never_answering_server(Origins::List(vec![format!("http://{page}")]));
    let refusing_url =
        never_answering_server(Origins::List(vec!["https://app.example.com".to_owned()]));
    // The example page, optimized and within its budget, served for the browser test.
    let page_url = build_and_serve_page("calculator_page", &tools);
    let mut test = browser_tests(&["-p", "sansrpc-wasm"], &tools, page);
    test.env("SANSRPC_WASM_CALCULATOR_URL", &calculator_url)
        .env("SANSRPC_WASM_ETH_NODE_URL", &node_url)
        .env("SANSRPC_WASM_NEVER_URL", &never_url)
        .env("SANSRPC_WASM_REFUSING_URL", &refusing_url)
        .env("SANSRPC_WASM_PAGE_URL", &page_url);
    run_browser_tests(test, BROWSER_TESTS);
    calculator.kill();
    node.kill();
}
