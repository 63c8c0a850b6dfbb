//! `todo_server` on the blocking adapter: the same server (its handlers, capabilities,
//! documents and lifecycle: `todo_server.rs`'s `server()`) on plain threads, with no async
//! runtime. Hovers run on the handler pool; each version's analysis runs on a thread of its
//! own, its debounce a sleep there that a newer version cuts short. `lsp/tests/todo_server.rs`
//! drives it with the same frames as `todo_server`, and pytest-lsp and vscode-jsonrpc drive
//! it with the same scripts (`lsp/tests/pytest_lsp.rs`, `lsp/tests/vscode_jsonrpc.rs`).
//!
//! (`todo_server_threads`: example names share one output folder across the workspace.)

/// The handlers and `server()`; its tokio `main` is not used here.
#[path = "todo_server.rs"]
#[allow(dead_code)]
mod todo_server;

fn main() {
    // Stdio under the LSP profile, on threads; 0 after `shutdown` was answered, 1 otherwise.
    std::process::exit(todo_server::server().serve_stdio_blocking())
}
