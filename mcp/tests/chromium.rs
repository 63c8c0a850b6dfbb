//! Runs `tests/browser.rs` (the MCP client over `fetch`, `sansrpc_mcp::wasm`, and the
//! example page `examples/mcp_page.rs`) in headless Chromium, against the project's MCP
//! server started here on 127.0.0.1: `everything_server`, listing the test page's origin in
//! `MCP_ORIGINS` (as a user lists their page's, `streamable::Config::origins`), and a proxy
//! in front of it that cuts one event stream, for the client's resumption.
//!
//! Their URLs reach the browser test baked in at compile time (`option_env!`): this test
//! builds it for `wasm32-unknown-unknown` (`--no-default-features --features wasm`) with
//! cargo and runs it with `wasm-bindgen-test-runner`, which serves it on a page of its own
//! and drives Chromium through chromedriver. The example page is built first as a user
//! ships it, by `scripts/wasm-page` (release, wasm-bindgen, `wasm-opt`, its size
//! budget), and served over HTTP; a browser test loads the optimized module and waits for
//! its lines. The tools and the page's build are `tests/support/browser.rs`, shared with
//! sansrpc-wasm's `tests/chromium.rs`.
//!
//! Needs: Debian's `chromium` and `chromium-driver`, the `wasm32-unknown-unknown` target
//! and `wasm-bindgen-cli` at the version of `wasm-bindgen` in Cargo.lock, which
//! `scripts/provision-wasm` installs (`scripts/test` and `.ci/run` call it). Without them
//! the test fails and says so: it never skips.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/browser.rs"]
mod browser;
#[path = "../../tests/support/processes.rs"]
mod processes;

use browser::{browser_tests, build_and_serve_page, run_browser_tests, Tools};
use processes::Example;

/// The tests in tests/browser.rs, each of which must have run and passed.
const BROWSER_TESTS: usize = 5;

/// The progress token of the browser test's resumed call: the cutting proxy ends the
/// answer's connection after its second progress notification.
const CUT_MARKER: &[u8] = b"\"progressToken\":650265";

/// What the cutting proxy saw.
#[derive(Default)]
struct Cuts {
    /// Connections it cut (after the second progress notification of [`CUT_MARKER`]).
    cut: std::sync::atomic::AtomicUsize,
    /// A request with `Last-Event-ID` went through it after the cut.
    resumed: std::sync::atomic::AtomicBool,
}

/// A TCP proxy to `upstream` on a thread of its own (it ends with the test process), which
/// cuts the first connection whose answer carries [`CUT_MARKER`] twice (both ways closed,
/// right after the bytes of the second): the network drop that resuming an event stream is
/// for. The server has no way to close a request's stream on purpose (SEP-1699): the proxy
/// stands for a network that loses the connection. Its URL (the server's path), and what it
/// saw.
fn cutting_proxy(upstream: std::net::SocketAddr) -> (String, std::sync::Arc<Cuts>) {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let cuts = Arc::new(Cuts::default());
    let seen = Arc::clone(&cuts);
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let (Ok(client), Ok(server)) = (client, TcpStream::connect(upstream)) else {
                continue;
            };
            let (mut from_client, mut to_server) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let cuts = Arc::clone(&seen);
            // The requests: any `Last-Event-ID` after the cut is the resumption.
            std::thread::spawn(move || {
                let mut buf = vec![0; 16 * 1024];
                while let Ok(n @ 1..) = from_client.read(&mut buf) {
                    let text = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                    if text.contains("last-event-id:") && cuts.cut.load(Ordering::Acquire) > 0 {
                        cuts.resumed.store(true, Ordering::Release);
                    }
                    if to_server.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = to_server.shutdown(Shutdown::Write);
            });
            let cuts = Arc::clone(&seen);
            let (mut from_server, mut to_client) = (server, client);
            // The answers: the markers counted across reads (the last bytes of the one
            // before kept, shorter than the marker: a marker is counted once).
            std::thread::spawn(move || {
                let mut buf = vec![0; 16 * 1024];
                let mut window: Vec<u8> = Vec::new();
                let mut markers = 0;
                while let Ok(n @ 1..) = from_server.read(&mut buf) {
                    window.extend_from_slice(&buf[..n]);
                    markers += window
                        .windows(CUT_MARKER.len())
                        .filter(|w| *w == CUT_MARKER)
                        .count();
                    let keep = window.len().saturating_sub(CUT_MARKER.len() - 1);
                    window.drain(..keep);
                    if to_client.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    let first = || {
                        cuts.cut
                            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
                            .is_ok()
                    };
                    if markers >= 2 && first() {
                        let _ = to_client.shutdown(Shutdown::Both);
                        let _ = from_server.shutdown(Shutdown::Both);
                        return;
                    }
                }
                let _ = to_client.shutdown(Shutdown::Write);
            });
        }
    });
    (format!("http://{addr}/mcp"), cuts)
}

#[test]
fn the_browser_tests_pass_in_headless_chromium() {
    let tools = Tools::find();
    // The page's origin: wasm-bindgen-test-runner serves it at this address; the server
    // allows it.
    let page = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let page_origin = format!("http://{page}");
    let mut mcp = Example::start_with_env(
        "sansrpc-mcp",
        "everything_server",
        &[("PORT", "0"), ("MCP_ORIGINS", &page_origin)],
    );
    let mcp_line = mcp.line();
    let mcp_url = mcp_line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("no address in {mcp_line:?}"))
        .to_owned();
    let mcp_addr = mcp_url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let (mcp_cut_url, cuts) = cutting_proxy(mcp_addr);
    // The example page, optimized and within its budget, served for the browser test.
    let page_url = build_and_serve_page("mcp_page", &tools);
    let args = [
        "-p",
        "sansrpc-mcp",
        "--no-default-features",
        "--features",
        "wasm",
    ];
    let mut test = browser_tests(&args, &tools, page);
    test.env("SANSRPC_MCP_URL", &mcp_url)
        .env("SANSRPC_MCP_CUT_URL", &mcp_cut_url)
        .env("SANSRPC_MCP_PAGE_URL", &page_url);
    run_browser_tests(test, BROWSER_TESTS);
    // The resumption test's call was cut once, and resumed with `Last-Event-ID`.
    use std::sync::atomic::Ordering;
    assert_eq!(
        cuts.cut.load(Ordering::Acquire),
        1,
        "the proxy cut no stream"
    );
    assert!(
        cuts.resumed.load(Ordering::Acquire),
        "no request with Last-Event-ID after the cut"
    );
    mcp.kill();
}
