//! What the headless-Chromium harnesses share (`adapters/wasm/tests/chromium.rs` for
//! sansrpc-wasm, `mcp/tests/chromium.rs` for the MCP client in a page): the tools found
//! (chromedriver, wasm-bindgen-test-runner), an example page built by `scripts/wasm-page`
//! and served over HTTP, and a package's `tests/browser.rs` built for wasm32 with its
//! servers' URLs and run in Chromium. Included with `#[path]` beside `processes.rs` (as
//! `mod processes`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::processes::output_within;

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

/// What drives the browser: chromedriver and wasm-bindgen-test-runner (`CHROMEDRIVER`,
/// `WASM_BINDGEN_TEST_RUNNER`, else on `PATH` or where Debian and `cargo install` put
/// them). Panics, saying what to run, when one is missing: the test never skips.
pub struct Tools {
    pub chromedriver: PathBuf,
    pub runner: PathBuf,
}

impl Tools {
    pub fn find() -> Tools {
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
        Tools {
            chromedriver,
            runner,
        }
    }
}

/// The target folder of this test binary (target/<profile>/deps/<name>).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_owned()
}

/// Leaves out of `command` the variables cargo set for this test (a build script watching one
/// would rebuild, here and in the next plain build).
pub fn without_cargo_test_env(command: &mut Command) {
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

/// The example page `page` (`calculator_page`, `mcp_page`) built as a user ships it by
/// `scripts/wasm-page` (release, wasm-bindgen, `wasm-opt`, its size budget) into
/// `target/wasm-page-<page>`, and served over HTTP for the browser test; its URL.
pub fn build_and_serve_page(page: &str, tools: &Tools) -> String {
    let target_dir = target_dir();
    let dir = target_dir.join(format!("wasm-page-{page}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("scripts/wasm-page").is_file())
        .expect("the repository's scripts/wasm-page")
        .join("scripts/wasm-page");
    let mut build = Command::new(script);
    build
        .arg(&dir)
        .arg(page)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("WASM_BINDGEN", tools.runner.with_file_name("wasm-bindgen"));
    without_cargo_test_env(&mut build);
    // A cold release build of the page on a slow machine: minutes.
    let built = output_within(&mut build, Duration::from_secs(1800));
    assert!(
        built.status.success(),
        "scripts/wasm-page failed ({}):\n{}",
        built.status,
        String::from_utf8_lossy(&built.stderr)
    );
    static_server(dir)
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

/// `cargo test` of this package's `tests/browser.rs` for `wasm32-unknown-unknown` with
/// `args` (`-p`, features), run by wasm-bindgen-test-runner in headless Chromium with its
/// page served at `page` (the origin the servers list); add the servers' URLs with `env`
/// and give it to [`run_browser_tests`].
pub fn browser_tests(args: &[&str], tools: &Tools, page: std::net::SocketAddr) -> Command {
    let mut test = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    test.current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("test")
        .args(args)
        .args(["--target", "wasm32-unknown-unknown", "--test", "browser"])
        .arg("--target-dir")
        .arg(target_dir())
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", &tools.runner)
        .env("CHROMEDRIVER", &tools.chromedriver)
        .env("WASM_BINDGEN_TEST_TIMEOUT", "300")
        // How long the runner waits for chromedriver to listen: 5 s by default, which a busy
        // machine (the suite's other tests, the other browser test's driver starting) once
        // exceeded in CI ("driver failed to bind port during startup"). It restarts a driver
        // that has not bound after 10 s, until this much has passed.
        .env("WASM_BINDGEN_TEST_DRIVER_TIMEOUT", "120")
        .env("WASM_BINDGEN_TEST_ADDRESS", page.to_string());
    without_cargo_test_env(&mut test);
    test
}

/// Runs the browser tests `test` (from [`browser_tests`]), and checks that all `count` ran
/// in headless Chromium and passed (none filtered out or ignored).
pub fn run_browser_tests(mut test: Command, count: usize) {
    // A cold build of the wasm test and its dependencies on a slow machine: minutes.
    let out = output_within(&mut test, Duration::from_secs(1800));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the browser tests failed ({}):\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
        out.status
    );
    let summary = format!("test result: ok. {count} passed; 0 failed; 0 ignored");
    assert!(
        stdout.contains(&summary),
        "expected {summary:?}:\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}"
    );
    assert!(
        stdout.contains("Running headless tests in Chrome"),
        "not run in headless Chromium:\n{stdout}"
    );
}
