//! The `lsp_server_threads` example (threads, no async runtime) driven by vscode-jsonrpc,
//! with the same client script as the async example (`interop/vscode-jsonrpc/lsp_client.js`):
//! initialize; a handler on the pool that calls `workspace/configuration` back, sends
//! `window/logMessage` and `$/progress`; a cancelled request answered `-32800`; shutdown and
//! exit with status 0.

#[path = "../../../tests/support/interop.rs"]
mod interop;

#[test]
fn vscode_jsonrpc_drives_the_threaded_lsp_server_example() {
    let server = interop::example("sansrpc-blocking", "lsp_server_threads");
    interop::vscode_jsonrpc_drives(env!("CARGO_MANIFEST_DIR"), &server);
}
