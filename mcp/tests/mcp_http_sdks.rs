//! The `everything_server` example (the conformance suite's server, on the MCP server of
//! `sansrpc_mcp`) over Streamable HTTP, driven by the official MCP SDKs' clients: Python (`mcp` 2.3.0, pinned in `interop/mcp-python/requirements.txt`) on the
//! 2025-11-25 session revision and on the stateless 2026-07-28 one, and TypeScript
//! (`@modelcontextprotocol/sdk` 1.32.2, `interop/mcp-ts`'s lock file) on 2025-11-25. Each:
//! initialize (or discover), list and call tools, progress seen by the caller, elicitation
//! and sampling answered inside a call (a server-to-client request on the call's stream, or
//! an `input_required` result and a retried call on 2026-07-28), a resource and a prompt;
//! and with `--resume`, the `slow` call's SSE stream cut after two progress notifications
//! and resumed by the SDK with `Last-Event-ID`, nothing lost and nothing repeated.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/interop.rs"]
mod support;

use std::process::Command;

use support::Running;

/// The example `name` on a free port, and the URL of its `/mcp`.
fn example_server(name: &str) -> (Running, String) {
    let (server, line) = support::start_example("sansrpc-mcp", name, &[("PORT", "0")]);
    let url = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line:?}"))
        .trim_end_matches("/mcp");
    (server, format!("{url}/mcp"))
}

fn everything_server() -> (Running, String) {
    example_server("everything_server")
}

/// The same application mounted in an axum app as a tower service.
fn axum_app() -> (Running, String) {
    example_server("axum_app")
}

/// Runs a client; its report (the JSON line it prints), which must say `ok`.
fn report(mut client: Command) -> serde_json::Value {
    let out = support::output_within(&mut client, support::CLIENT_TIMEOUT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{client:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(stdout.trim().lines().last().unwrap())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["ask_name"], "hello Ada", "{report}");
    assert_eq!(
        report["sample"], "sampled by the interop client",
        "{report}"
    );
    assert!(report["progress"].as_u64().unwrap() >= 3, "{report}");
    assert_eq!(
        report["extras"],
        serde_json::json!(["resource", "prompt"]),
        "{report}"
    );
    report
}

fn python(url: &str, args: &[&str]) -> serde_json::Value {
    let sdk = support::pip_install(env!("CARGO_MANIFEST_DIR"), "mcp-python");
    let script = support::interop(env!("CARGO_MANIFEST_DIR"), "mcp-python").join("http_client.py");
    let mut client = Command::new("python3");
    client
        .arg(script)
        .arg(url)
        .args(args)
        .env("PYTHONPATH", sdk);
    report(client)
}

fn typescript(url: &str, args: &[&str]) -> serde_json::Value {
    let dir = support::interop(env!("CARGO_MANIFEST_DIR"), "mcp-ts");
    support::npm_ci(&dir, "@modelcontextprotocol/sdk");
    let mut client = Command::new("node");
    client.arg(dir.join("http_client.mjs")).arg(url).args(args);
    report(client)
}

#[test]
fn the_python_sdk_on_both_revisions_and_resuming() {
    python_on_both_revisions_and_resuming(everything_server);
}

#[test]
fn the_python_sdk_on_both_revisions_and_resuming_against_the_mounted_service() {
    python_on_both_revisions_and_resuming(axum_app);
}

fn python_on_both_revisions_and_resuming(server: fn() -> (Running, String)) {
    let (_server, url) = server();
    let legacy = python(&url, &["--mode", "legacy"]);
    assert_eq!(legacy["protocol"], "2025-11-25");
    assert_eq!(legacy["http"]["DELETE"], 1, "the session ends: {legacy}");
    let stateless = python(&url, &["--mode", "2026"]);
    assert_eq!(stateless["protocol"], "2026-07-28");
    assert_eq!(
        stateless["http"]["GET"], 0,
        "no session, no GET: {stateless}"
    );
    let resumed = python(&url, &["--mode", "legacy", "--resume"]);
    assert_eq!(resumed["resumed"], true);
}

#[test]
fn the_typescript_sdk_and_resuming() {
    typescript_and_resuming(everything_server);
}

#[test]
fn the_typescript_sdk_and_resuming_against_the_mounted_service() {
    typescript_and_resuming(axum_app);
}

fn typescript_and_resuming(server: fn() -> (Running, String)) {
    let (_server, url) = server();
    let plain = typescript(&url, &[]);
    assert_eq!(plain["protocol"], "2025-11-25");
    let resumed = typescript(&url, &["--resume"]);
    assert_eq!(resumed["resumed"], true);
}
