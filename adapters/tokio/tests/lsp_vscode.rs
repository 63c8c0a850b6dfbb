//! The `lsp_server` example driven by vscode-jsonrpc (the library VS Code's language
//! client is built on), installed with `npm ci` from `interop/vscode-jsonrpc`'s lock file:
//! initialize; a handler that calls `workspace/configuration` back, sends
//! `window/logMessage` and `$/progress` on the request's `workDoneToken`; a request
//! cancelled with `$/cancelRequest` that the handler sees and answers `-32800`; shutdown and
//! exit with status 0. The client script (`lsp_client.js`) checks each step.

#[path = "../../../tests/support/interop.rs"]
mod interop;

#[test]
fn vscode_jsonrpc_drives_the_lsp_server_example() {
    let server = interop::example("sansrpc-tokio", "lsp_server");
    interop::vscode_jsonrpc_drives(env!("CARGO_MANIFEST_DIR"), &server);
}
