//! Runs `tests/browser.rs` in headless Chromium, against the project's own servers started
//! here on 127.0.0.1: the WebSocket calculator (`sansrpc-tokio`'s `ws_server` example), the
//! Ethereum node (`eth_node`, a block every 100 ms), the MCP server (`sansrpc-mcp`'s
//! `everything_server`, listing the test page's origin in `MCP_ORIGINS`, and a proxy in
//! front of it that cuts one event stream, for the client's resumption), and sansrpc
//! WebSocket servers in this process whose one method, `never`, is never answered (the
//! deadline test's).
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
//! The example pages of `docs/browser.md` (`examples/calculator_page.rs`, `mcp_page.rs`) are
//! built first as a user ships them, by `scripts/wasm-page` (release, wasm-bindgen, `wasm-opt -Oz`, its size
//! budget), and served here over HTTP (with `Access-Control-Allow-Origin`, the test page
//! being of another port); a browser test loads each optimized module into its page and
//! waits for its lines: the modules wasm-opt wrote run.
//!
//! Needs: Debian's `chromium` and `chromium-driver`, the `wasm32-unknown-unknown` target
//! and `wasm-bindgen-cli` at the version of `wasm-bindgen` in Cargo.lock, which
//! `scripts/provision-wasm` installs (`scripts/test` and `.ci/run` call it). Without them
//! the test fails and says so: it never skips.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../../tests/support/processes.rs"]
mod processes;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use processes::{output_within, Example};
use sansrpc_tokio::{sansrpc, ws, AsyncRouter, Builder, Origins, ServeOptions};

/// The tests in tests/browser.rs, each of which must have run and passed.
const BROWSER_TESTS: usize = 25;

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

/// A program on `PATH`, or at one of `fallbacks`.
fn find(env: &str, program: &str, fallbacks: &[PathBuf]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env) {
        return Some(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(program));
    on_path
        .chain(fallbacks.iter().cloned())
        .find(|p| p.is_file())
}

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

/// Serves the files of `dir` over HTTP/1.1 on a thread of its own (it ends with the test
/// process), to pages of any origin; its URL, with a trailing `/`.
fn static_server(dir: PathBuf) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = String::new();
            let mut reader = BufReader::new(&stream);
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            // The rest of the head (the page's requests have no body).
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request.split(' ').nth(1).unwrap_or("/");
            let name = path.trim_start_matches('/');
            let file = (!name.contains("..") && !name.is_empty())
                .then(|| std::fs::read(dir.join(name)).ok())
                .flatten();
            let kind = match name.rsplit('.').next() {
                Some("js") => "text/javascript",
                Some("wasm") => "application/wasm",
                _ => "text/html",
            };
            let (status, body) = match file {
                Some(body) => ("200 OK", body),
                None => ("404 Not Found", Vec::new()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                 Access-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    format!("http://{addr}/")
}

/// The URL in an example's first line (`calculator on ws://127.0.0.1:PORT`, `listening on
/// 127.0.0.1:PORT`).
fn ws_url(line: &str) -> String {
    let addr = line.rsplit(' ').next().unwrap();
    let addr = addr.strip_prefix("ws://").unwrap_or(addr);
    assert!(addr.starts_with("127.0.0.1:"), "no address in {line:?}");
    format!("ws://{addr}")
}

/// Leaves out of `command` the variables cargo set for this test (a build script watching one
/// would rebuild, here and in the next plain build).
fn without_cargo_test_env(command: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_BIN_EXE_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
            ]
            .contains(&&*key)
        {
            command.env_remove(&*key);
        }
    }
}

#[test]
fn the_browser_tests_pass_in_headless_chromium() {
    let provision = "run scripts/provision-wasm (Debian's chromium and chromium-driver, and \
                     wasm-bindgen-cli at Cargo.lock's wasm-bindgen version)";
    let chromedriver = find(
        "CHROMEDRIVER",
        "chromedriver",
        &[PathBuf::from("/usr/bin/chromedriver")],
    )
    .unwrap_or_else(|| panic!("no chromedriver: {provision}"));
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|home| home.join("bin").join("wasm-bindgen-test-runner"));
    let runner = find(
        "WASM_BINDGEN_TEST_RUNNER",
        "wasm-bindgen-test-runner",
        &cargo_bin.into_iter().collect::<Vec<_>>(),
    )
    .unwrap_or_else(|| panic!("no wasm-bindgen-test-runner: {provision}"));

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
    // The MCP server, allowing the test page's origin as a user allows their page's
    // (`streamable::Config::origins`, here through the example's `MCP_ORIGINS`).
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

    let manifest = env!("CARGO_MANIFEST_DIR");
    // This test binary is target/<profile>/deps/<name>: the same target folder.
    let exe = std::env::current_exe().unwrap();
    let target_dir = exe.ancestors().nth(3).unwrap().to_owned();

    // The example page, optimized and within its budget, served for the browser test.
    let page_dir = target_dir.join("wasm-page");
    let mut build = Command::new(format!("{manifest}/../../scripts/wasm-page"));
    build
        .arg(&page_dir)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("WASM_BINDGEN", runner.with_file_name("wasm-bindgen"));
    without_cargo_test_env(&mut build);
    // A cold release build of the page on a slow machine: minutes.
    let built = output_within(&mut build, Duration::from_secs(1800));
    assert!(
        built.status.success(),
        "scripts/wasm-page failed ({}):\n{}",
        built.status,
        String::from_utf8_lossy(&built.stderr)
    );
    let page_url = static_server(page_dir);
    let mut test = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    test.current_dir(manifest)
        .args(["test", "-p", "sansrpc-wasm"])
        .args(["--target", "wasm32-unknown-unknown", "--test", "browser"])
        .arg("--target-dir")
        .arg(&target_dir)
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", &runner)
        .env("CHROMEDRIVER", &chromedriver)
        .env("WASM_BINDGEN_TEST_TIMEOUT", "300")
        .env("SANSRPC_WASM_CALCULATOR_URL", &calculator_url)
        .env("SANSRPC_WASM_ETH_NODE_URL", &node_url)
        .env("SANSRPC_WASM_NEVER_URL", &never_url)
        .env("SANSRPC_WASM_REFUSING_URL", &refusing_url)
        .env("SANSRPC_WASM_PAGE_URL", &page_url)
        .env("SANSRPC_WASM_MCP_URL", &mcp_url)
        .env("SANSRPC_WASM_MCP_CUT_URL", &mcp_cut_url)
        .env("WASM_BINDGEN_TEST_ADDRESS", page.to_string());
    without_cargo_test_env(&mut test);
    // A cold build of the wasm test and its dependencies on a slow machine: minutes.
    let out = output_within(&mut test, Duration::from_secs(1800));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the browser tests failed ({}):\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
        out.status
    );
    // Every test ran in the browser: none filtered out or ignored.
    let summary = format!("test result: ok. {BROWSER_TESTS} passed; 0 failed; 0 ignored");
    assert!(
        stdout.contains(&summary),
        "expected {summary:?}:\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}"
    );
    assert!(
        stdout.contains("Running headless tests in Chrome"),
        "not run in headless Chromium:\n{stdout}"
    );
    // The MCP test's call was cut once, and resumed with `Last-Event-ID`.
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
    calculator.kill();
    node.kill();
    mcp.kill();
}
