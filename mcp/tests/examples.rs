//! The MCP examples the README and docs/ name, run: each one's output (or what its peer
//! gets) compared with the exact values it computes, so a broken example fails here.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/interop.rs"]
mod interop;

use interop::{run_example, Example};

const PACKAGE: &str = "sansrpc-mcp";

/// What `notes_client` prints of `notes_server`, however it reaches it.
const NOTES: [&str; 5] = [
    r#"tools: ["add"]"#,
    "add: 42",
    "notes://readme: Notes, kept by MCP.",
    "notes://7: Note 7: buy milk.",
    "summarize: Summarize my notes on groceries.",
];

/// `docs/mcp.md`'s first hour: the client starts the server as a child process (stdio).
#[test]
fn notes_client_uses_notes_server_as_a_child_process() {
    let server = interop::built_example(PACKAGE, "notes_server");
    let printed = run_example(PACKAGE, "notes_client", &[server.to_str().unwrap()]);
    let mut expected: Vec<&str> = NOTES.to_vec();
    expected.push("server exited: exit status: 0");
    assert_eq!(printed, expected);
}

/// `docs/mcp.md`'s first hour: the same over Streamable HTTP at /mcp, the session closed.
#[test]
fn notes_client_uses_notes_server_over_streamable_http() {
    let mut server = Example::start(PACKAGE, "notes_server", &["--http", "0"]);
    let line = server.line();
    let url = line
        .strip_prefix("listening on ")
        .filter(|u| u.starts_with("http://127.0.0.1:") && u.ends_with("/mcp"))
        .unwrap_or_else(|| panic!("not a URL: {line:?}"))
        .to_owned();
    let printed = run_example(PACKAGE, "notes_client", &["--url", &url]);
    let mut expected: Vec<&str> = NOTES.to_vec();
    expected.push("session closed");
    assert_eq!(printed, expected);
}
