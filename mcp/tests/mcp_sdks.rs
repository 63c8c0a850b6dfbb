//! The `everything_server` example on stdio (`--stdio`; the conformance suite's server, on
//! the MCP server of `sansrpc_mcp`) and the small `mcp_server` example, each driven by the
//! official MCP SDKs' clients: Python (`mcp` 2.3.0,
//! installed with pip from `interop/mcp-python/requirements.txt`, pinned, into the test's
//! own target folder) and TypeScript (`@modelcontextprotocol/sdk` 1.32.2, `npm ci` from
//! `interop/mcp-ts`'s lock file). Each: initialize, tools/list, tools/call `add`, ping, a
//! `slow` call whose progress notifications reach the SDK's callback, and a `slow` call the
//! SDK abandons: the handler sees the cancellation (stderr) and no response to it goes on
//! the wire (the server's output is teed to a file and counted), and the server goes on
//! serving. And the other direction: the `mcp_client` example drives a server written with
//! the Python SDK.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/interop.rs"]
mod support;

use std::path::PathBuf;
use std::process::Command;

/// The SDK and its dependencies, installed once into the target folder.
fn sdk() -> PathBuf {
    support::pip_install(env!("CARGO_MANIFEST_DIR"), "mcp-python")
}

fn interop(dir: &str) -> PathBuf {
    support::interop(env!("CARGO_MANIFEST_DIR"), dir)
}

fn example(name: &str) -> PathBuf {
    support::example("sansrpc-mcp", name)
}

/// Runs `client` (a command taking the server command as its last argument) against the
/// example with its output teed to a file; checks what the client and the server's output
/// say.
///
/// Each line goes to the file before it goes on to the client, so whatever the client has
/// seen is in the file even when the client ends the pipeline (the SDKs stop the server's
/// shell when they close) right after the last answer: with `tee`, which writes to its
/// standard output first, that last line was at times missing from the file.
fn drive(who: &str, mut client: Command, server: &str, args: &str) {
    let wire =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("mcp-{who}-{server}-wire.log"));
    let _ = std::fs::remove_file(&wire);
    let server = format!(
        "'{}' {args} | while IFS= read -r line; do printf '%s\\n' \"$line\" >> '{}'; printf '%s\\n' \"$line\"; done",
        example(server).display(),
        wire.display()
    );
    let out = support::output_within(client.arg(server), support::CLIENT_TIMEOUT);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "the {who} client failed:\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["ok"], true);
    assert!(report["progress"].as_u64().unwrap() >= 3, "{report}");
    assert!(
        stderr.contains("slow: cancelled"),
        "the handler saw no cancel:\n{stderr}"
    );

    // What the server wrote: one response to each request but the cancelled one.
    let written = std::fs::read_to_string(&wire).unwrap();
    let messages: Vec<serde_json::Value> = written
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let responses = messages.iter().filter(|m| m.get("id").is_some()).count();
    // initialize, tools/list, add, ping, slow, tools/list; not the cancelled slow call.
    assert_eq!(responses, 6, "{who}: {written}");
    let progress = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert!(progress >= 3, "{who}: {written}");
}

fn python() -> Command {
    let mut client = Command::new("python3");
    client
        .arg(interop("mcp-python").join("client.py"))
        .env("PYTHONPATH", sdk());
    client
}

fn typescript() -> Command {
    let dir = interop("mcp-ts");
    support::npm_ci(&dir, "@modelcontextprotocol/sdk");
    let mut client = Command::new("node");
    client.arg(dir.join("client.mjs"));
    client
}

#[test]
fn the_mcp_python_sdk_drives_the_everything_server_on_stdio() {
    drive("python", python(), "everything_server", "--stdio");
}

#[test]
fn the_mcp_typescript_sdk_drives_the_everything_server_on_stdio() {
    drive("typescript", typescript(), "everything_server", "--stdio");
}

#[test]
fn the_mcp_python_sdk_drives_the_small_mcp_server_example() {
    drive("python", python(), "mcp_server", "");
}

#[test]
fn the_mcp_typescript_sdk_drives_the_small_mcp_server_example() {
    drive("typescript", typescript(), "mcp_server", "");
}

/// The other direction: the `mcp_client` example starts a server written with the Python
/// SDK (`interop/mcp-python/server.py`) as its child process and drives it; the server's
/// stderr shows that the abandoned call's work was stopped, and the MCP stdio shutdown
/// ends the child with status 0.
#[test]
fn the_mcp_client_example_drives_a_python_sdk_server() {
    let out = support::output_within(
        Command::new(example("mcp_client"))
            .arg("python3")
            .arg(interop("mcp-python").join("server.py"))
            .env("PYTHONPATH", sdk()),
        support::CLIENT_TIMEOUT,
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "mcp_client failed:\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["server"], "python-sdk-server");
    assert_eq!(report["tools"], serde_json::json!(["add", "slow"]));
    assert_eq!(report["add"], "5");
    assert_eq!(report["slow"], "slept 0.5 s");
    assert!(report["progress"].as_u64().unwrap() >= 3, "{report}");
    assert_eq!(report["abandoned_call_finished"], false);
    assert_eq!(report["tools_after_cancel"], 2);
    assert_eq!(
        report["exit"], 0,
        "the server exits cleanly on the stdio shutdown"
    );
    assert!(
        stderr.contains("slow: cancelled"),
        "the server's work was not cancelled:\n{stderr}"
    );
}
