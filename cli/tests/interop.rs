//! `sansrpc check` against servers not written here, pinning what the reports say so that a
//! change in the checker or in those servers shows up here and in docs/interop.md:
//! - a vscode-jsonrpc server (the LSP reference implementation, Node) over stdio,
//!   `interop/vscode-jsonrpc/server.js`, installed with `npm ci` from its lock file;
//! - Python's `jsonrpcserver` 5.0.9 behind its own `http.server`,
//!   `interop/jsonrpcserver/server.py`, installed with pip from its requirements file.
//!
//! Each dependency is installed by the test when it is missing.

mod common;
#[path = "../../tests/support/interop.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn interop(dir: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../interop")
        .join(dir)
}

/// Runs `sansrpc check --spec-methods --json --timeout TIMEOUT` with `target` and checks the
/// verdicts: the run fails as a whole, each case in `pass` passes and each in `fail` fails.
fn check(target: &[&str], timeout: &str, who: &str, pass: &[&str], fail: &[&str]) {
    // Neither server closes a slowloris (that case is not pinned): waiting 1 s for it.
    let mut args = vec![
        "check",
        "--spec-methods",
        "--json",
        "--timeout",
        timeout,
        "--close-wait",
        "1",
    ];
    args.extend_from_slice(target);
    // A bound, not an estimate.
    let out = common::run(&args, Duration::from_secs(600));
    assert_eq!(
        out.status, 1,
        "{who} is not fully compliant; the check must say so"
    );
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let status: BTreeMap<&str, &str> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    for (ids, want) in [(pass, "pass"), (fail, "fail")] {
        for id in ids {
            assert_eq!(status.get(id).copied(), Some(want), "{who}: case {id}");
        }
    }
}

#[test]
fn vscode_jsonrpc_server_report() {
    let dir = interop("vscode-jsonrpc");
    support::npm_ci(&dir, "vscode-jsonrpc");
    let server = format!("node {}", dir.join("server.js").display());
    check(
        &["--stdio", &server],
        "1",
        "vscode-jsonrpc",
        // Right: notifications, unknown methods, the specification's methods, integer and
        // string ids, a 16 MiB message.
        &[
            "notification.unknown",
            "method.unknown",
            "spec.subtract-positional",
            "spec.subtract-named",
            "spec.get-data",
            "spec.sum",
            "id.integer",
            "id.fraction",
            "id.string",
            "hostile.oversize",
        ],
        // Wrong: no answer to invalid JSON or invalid requests, no batches, ids re-encoded
        // through JavaScript numbers, a crash on deep nesting.
        &[
            "parse.spec-example",
            "invalid.method-missing",
            "batch.empty",
            "batch.mixed",
            "spec.batch",
            "id.exponent",
            "id.big-integer",
            "hostile.deep-array",
        ],
    );
}

#[test]
fn python_jsonrpcserver_over_http_report() {
    let dir = interop("jsonrpcserver");
    let have = support::output_within(
        Command::new("python3").args(["-c", "import jsonrpcserver"]),
        support::CLIENT_TIMEOUT,
    );
    if !have.status.success() {
        let out = support::output_within(
            Command::new("python3")
                .args(["-m", "pip", "install", "--quiet", "-r"])
                .arg(dir.join("requirements.txt")),
            support::INSTALL_TIMEOUT,
        );
        assert!(
            out.status.success(),
            "pip install of jsonrpcserver failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Killed when dropped, however the test ends.
    let _server = common::Server(
        Command::new("python3")
            .arg(dir.join("server.py"))
            .arg(port.to_string())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    common::wait_until(Duration::from_secs(10), "the Python server listens", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let address = format!("127.0.0.1:{port}");
    check(
        &["--http", &address],
        // It answers every case (wrongly or not): a longer wait costs nothing, and spares
        // its answers on a busy machine (the tests run side by side).
        "3",
        "jsonrpcserver",
        // Right: parse errors, unknown methods, the specification's calls, integer and
        // string ids, the empty batch, every hostile input.
        &[
            "parse.spec-example",
            "method.unknown",
            "spec.subtract-positional",
            "spec.subtract-named",
            "spec.sum",
            "spec.get-data",
            "id.integer",
            "id.string",
            "batch.empty",
            "hostile.deep-array",
            "hostile.large-batch",
        ],
        // Wrong: invalid requests answered with id null instead of their id, notifications
        // answered (an empty 200 body, not 204), batches with invalid entries answered
        // with one object, ids re-encoded (1e3 as 1000.0), NaN accepted and echoed as
        // invalid JSON.
        &[
            "invalid.jsonrpc-missing",
            "params.string",
            "notification.unknown",
            "batch.mixed",
            "spec.batch",
            "id.exponent",
            "parse.nan",
        ],
    );
}
