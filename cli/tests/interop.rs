//! `sansrpc check` against a server not written here: a vscode-jsonrpc server (the LSP
//! reference implementation, Node) over stdio, `interop/vscode-jsonrpc/server.js`. The test
//! installs its one npm dependency when it is missing (`npm ci`, from the lock file), then
//! pins what the report says, so a change in either the checker or vscode-jsonrpc's
//! behaviour shows up here and in docs/interop.md.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn server_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../interop/vscode-jsonrpc")
}

fn ensure_installed() {
    let dir = server_dir();
    if dir
        .join("node_modules/vscode-jsonrpc/package.json")
        .exists()
    {
        return;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(&dir)
        .status()
        .expect("npm (Node 20) is needed for the interop test");
    assert!(status.success(), "npm ci failed in {}", dir.display());
}

#[test]
fn vscode_jsonrpc_server_report() {
    ensure_installed();
    let server = format!("node {}", server_dir().join("server.js").display());
    let out = Command::new(env!("CARGO_BIN_EXE_sansrpc"))
        .args([
            "check",
            "--spec-methods",
            "--json",
            "--timeout",
            "1",
            "--stdio",
            &server,
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "vscode-jsonrpc is not fully compliant; the check must say so"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let status: BTreeMap<String, String> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expect = |id: &str, want: &str| {
        assert_eq!(status.get(id).map(String::as_str), Some(want), "case {id}")
    };
    // What it does right: notifications, unknown methods, the specification's methods,
    // integer and string ids.
    for id in [
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
    ] {
        expect(id, "pass");
    }
    // What it does not: no answer to invalid JSON or invalid requests, no batches, ids
    // re-encoded through JavaScript numbers, a stack overflow on deep nesting.
    for id in [
        "parse.spec-example",
        "invalid.method-missing",
        "batch.empty",
        "batch.mixed",
        "spec.batch",
        "id.exponent",
        "id.big-integer",
        "hostile.deep-array",
    ] {
        expect(id, "fail");
    }
}

/// Python's `jsonrpcserver` 5.0.9 behind its own `http.server`:
/// `interop/jsonrpcserver/server.py`, installed with pip from its requirements file when
/// missing.
#[test]
fn python_jsonrpcserver_over_http_report() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../interop/jsonrpcserver");
    let have = Command::new("python3")
        .args(["-c", "import jsonrpcserver"])
        .status()
        .expect("python3 is needed for the interop test");
    if !have.success() {
        let status = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "-r"])
            .arg(dir.join("requirements.txt"))
            .status()
            .unwrap();
        assert!(status.success(), "pip install of jsonrpcserver failed");
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new("python3")
        .arg(dir.join("server.py"))
        .arg(port.to_string())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the Python server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = Command::new(env!("CARGO_BIN_EXE_sansrpc"))
        .args([
            "check",
            "--spec-methods",
            "--json",
            "--timeout",
            "1",
            "--http",
        ])
        .arg(format!("127.0.0.1:{port}"))
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        out.status.code(),
        Some(1),
        "jsonrpcserver is not fully compliant; the check must say so"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let status: BTreeMap<String, String> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expect = |id: &str, want: &str| {
        assert_eq!(status.get(id).map(String::as_str), Some(want), "case {id}")
    };
    // Right: parse errors, unknown methods, the spec's calls, integer and string ids, the
    // empty batch, every hostile input.
    for id in [
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
    ] {
        expect(id, "pass");
    }
    // Wrong: invalid requests answered with id null instead of their id, notifications
    // answered (an empty 200 body, not 204), batches with invalid entries answered with one
    // object, ids re-encoded (1e3 as 1000.0), NaN accepted and echoed as invalid JSON.
    for id in [
        "invalid.jsonrpc-missing",
        "params.string",
        "notification.unknown",
        "batch.mixed",
        "spec.batch",
        "id.exponent",
        "parse.nan",
    ] {
        expect(id, "fail");
    }
}
