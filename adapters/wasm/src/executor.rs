//! The browser's executor for work that outlives a handler.

use std::time::Duration;

use sansrpc_runtime::{BoxFuture, Executor};

use crate::local::SingleThread;
use crate::timer::Sleep;

/// The [`Executor`] of a page or worker: work runs as a task of `wasm-bindgen-futures`
/// (`spawn_local`), sleeps are `setTimeout`s. [`spawn`](crate::spawn) gives it to every
/// connection's handlers: an LSP server's analysis of a document's version
/// (`sansrpc-lsp`'s `on_change` and its `debounce`) runs on it, where a thread would fail.
#[derive(Debug, Clone, Copy, Default)]
pub struct BrowserExecutor;

impl Executor for BrowserExecutor {
    fn spawn(&self, work: BoxFuture<()>) {
        wasm_bindgen_futures::spawn_local(work);
    }

    fn sleep(&self, wait: Duration) -> BoxFuture<()> {
        Box::pin(SingleThread(Sleep::after(wait)))
    }
}
