//! sansrpc-lsp's examples driven by vscode-jsonrpc (the library VS Code's language client
//! is built on), installed with `npm ci` from `interop/vscode-jsonrpc`'s lock file; the
//! client script (`interop/vscode-jsonrpc/lsp_client.js`) checks each step. `todo_server`:
//! initialize and its exact capabilities, a CRLF document with a non-BMP character, its
//! diagnostics, an incremental change and the hovers sent right behind it (`null` past the
//! last line), the new diagnostics' UTF-16 ranges, shutdown and exit with status 0.
//! `context_server`: a handler that calls `workspace/configuration` back, sends
//! `window/logMessage` and work-done progress on the request's `workDoneToken`; a request
//! cancelled with `$/cancelRequest` that the handler sees and answers `-32800`; shutdown and
//! exit with status 0. The same script drives `todo_server_threads` and
//! `context_server_threads`, the same servers on the blocking adapter's threads.

#[path = "../../tests/support/interop.rs"]
mod interop;

#[test]
fn vscode_jsonrpc_drives_the_todo_and_context_servers() {
    let todo = interop::built_example("sansrpc-lsp", "todo_server");
    let context = interop::built_example("sansrpc-lsp", "context_server");
    interop::vscode_jsonrpc_drives_lsp_examples(env!("CARGO_MANIFEST_DIR"), &todo, &context);
}

#[test]
fn vscode_jsonrpc_drives_the_todo_and_context_servers_on_threads() {
    let todo = interop::built_example("sansrpc-lsp", "todo_server_threads");
    let context = interop::built_example("sansrpc-lsp", "context_server_threads");
    interop::vscode_jsonrpc_drives_lsp_examples(env!("CARGO_MANIFEST_DIR"), &todo, &context);
}
