//! The `lsp_server` example driven by pytest-lsp (pygls's language client, initializing
//! with VS Code's captured client capabilities): pytest-lsp 1.0.1 and everything it needs,
//! installed with pip from `interop/pytest-lsp/requirements.txt` (every package pinned)
//! into the target folder, then `interop/pytest-lsp/test_lsp_server.py` run with
//! `SANSRPC_LSP_SERVER` naming the example. Its tests: 20 pipelined `didChange` + `hover`
//! pairs, each hover seeing its change; the lifecycle (`-32002` before `initialize`,
//! `-32600` after `shutdown`, exit status 0 after `shutdown`, 1 without); a handler that
//! calls `workspace/configuration` answered under `--max-inflight 1`; and the server
//! exiting by itself once the editor's process (`processId`) is gone.

#[path = "../../../tests/support/interop.rs"]
mod interop;

#[test]
fn pytest_lsp_drives_the_lsp_server_example() {
    let server = interop::example("sansrpc-tokio", "lsp_server");
    interop::pytest_lsp_drives(env!("CARGO_MANIFEST_DIR"), &server);
}
