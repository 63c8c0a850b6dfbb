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
