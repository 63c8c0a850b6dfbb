//! The `lsp_server_threads` example (threads, no async runtime) driven by pytest-lsp with
//! the same tests as the async example (see `adapters/tokio/tests/lsp_pytest.rs`).

#[path = "../../../tests/support/interop.rs"]
mod interop;

#[test]
fn pytest_lsp_drives_the_threaded_lsp_server_example() {
    let server = interop::example("sansrpc-blocking", "lsp_server_threads");
    interop::pytest_lsp_drives(env!("CARGO_MANIFEST_DIR"), &server);
}
