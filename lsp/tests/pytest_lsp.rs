//! sansrpc-lsp's examples driven by pytest-lsp (pygls's language client, initializing with
//! the client capabilities it captured from VS Code, Neovim 0.11 and Emacs 29): pytest-lsp
//! 1.0.1 and everything it needs, installed with pip from
//! `interop/pytest-lsp/requirements.txt` (every package pinned) into the target folder, then
//! `interop/pytest-lsp/test_lsp_server.py` run with `SANSRPC_TODO_SERVER` and
//! `SANSRPC_CONTEXT_SERVER` naming the examples. Its tests, on `todo_server`: for each of
//! the three editors (UTF-16, UTF-8 and UTF-32 negotiated), 20 pipelined incremental
//! `didChange` + `hover` pairs, each hover seeing its change, and the last diagnostics'
//! ranges in that encoding; the lifecycle (`-32002` before `initialize`, `-32600` after
//! `shutdown`, exit status 0 after `shutdown`, 1 after `exit` alone or the end of input);
//! the server exiting by itself once the editor's process (`processId`) is gone. On
//! `context_server`: two requests whose handler calls the editor back
//! (`workspace/configuration`, `window/workDoneProgress/create`) both answered under
//! `--max-inflight 1`, with their log messages and progress. The same tests run against
//! `todo_server_threads` and `context_server_threads`: the same servers on the blocking
//! adapter's threads.

#[path = "../../tests/support/interop.rs"]
mod interop;

#[test]
fn pytest_lsp_drives_the_todo_and_context_servers() {
    let todo = interop::built_example("sansrpc-lsp", "todo_server");
    let context = interop::built_example("sansrpc-lsp", "context_server");
    interop::pytest_lsp_drives_lsp_examples(env!("CARGO_MANIFEST_DIR"), &todo, &context);
}

#[test]
fn pytest_lsp_drives_the_todo_and_context_servers_on_threads() {
    let todo = interop::built_example("sansrpc-lsp", "todo_server_threads");
    let context = interop::built_example("sansrpc-lsp", "context_server_threads");
    interop::pytest_lsp_drives_lsp_examples(env!("CARGO_MANIFEST_DIR"), &todo, &context);
}
