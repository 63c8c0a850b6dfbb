//! The `lsp_server_threads` example (threads, no async runtime) driven by vscode-jsonrpc (the library VS Code's language
//! client is built on), installed with `npm ci` from `interop/vscode-jsonrpc`'s lock file:
//! initialize; a handler that calls `workspace/configuration` back, sends
//! `window/logMessage` and `$/progress` on the request's `workDoneToken`; a request
//! cancelled with `$/cancelRequest` that the handler sees and answers `-32800`; shutdown and
//! exit with status 0. The client script (`lsp_client.js`) checks each step.

use std::path::PathBuf;
use std::process::Command;

fn interop() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/vscode-jsonrpc")
}

/// The example binary `cargo test` builds beside the test binaries.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo test` builds examples; alone, run `cargo build -p sansrpc-blocking --example {name}`",
        path.display()
    );
    path
}

#[test]
fn vscode_jsonrpc_drives_the_threaded_lsp_server_example() {
    let dir = interop();
    if !dir
        .join("node_modules/vscode-jsonrpc/package.json")
        .exists()
    {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .status()
            .expect("npm (Node 20) is needed for this test");
        assert!(status.success(), "npm ci failed in {}", dir.display());
    }
    let out = Command::new("node")
        .arg(dir.join("lsp_client.js"))
        .arg(example("lsp_server_threads"))
        .output()
        .expect("node (Node 20) is needed for this test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "client failed: {stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        report,
        serde_json::json!({"ok": true, "cancelled": -32800, "exit": 0, "progress": 1})
    );
}
