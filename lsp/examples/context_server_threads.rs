//! `context_server` on the blocking adapter: the same server (`context_server.rs`'s
//! `server()`) on plain threads, with no async runtime. `custom/greet` runs on the handler
//! pool, where its calls to the editor (`workspace/configuration`,
//! `window/workDoneProgress/create`) block only its own worker, and its thinking is a sleep
//! that the editor's cancellation cuts short.
//!
//! `--max-inflight N` and `--stdio` as `context_server` takes them. Driven by the same
//! vscode-jsonrpc and pytest-lsp scripts as `context_server` (`lsp/tests/vscode_jsonrpc.rs`,
//! `lsp/tests/pytest_lsp.rs`).
//!
//! (`context_server_threads`: example names share one output folder across the workspace.)

/// The handlers, `server()` and the arguments; its tokio `main` is not used here.
#[path = "context_server.rs"]
#[allow(dead_code)]
mod context_server;

fn main() {
    // Stdio under the LSP profile, on threads; 0 after `shutdown` was answered, 1 otherwise.
    std::process::exit(context_server::server().serve_stdio_blocking_with(
        sansrpc_blocking::Options::new(context_server::config("context_server_threads")),
    ))
}
