//! The server on the blocking adapter (`sansrpc-blocking`): the core's [`Router`] run on
//! plain threads, with no async runtime. A request's handler runs to completion on the
//! adapter's worker thread ([`pollster::block_on`]); asking the editor blocks that worker
//! only. A notification's handler runs on the connection's driver thread, where the
//! adapter runs every notification, in arrival order: what it sends the editor is queued,
//! and it cannot wait for the editor's answer to a call (see [`Server::blocking_router`]).

use std::sync::Arc;

use lsp_types::request::{Initialize, Request};
use sansrpc::router::{Router, Staged};
use sansrpc::ErrorObject;
use sansrpc_blocking::{NotificationContext, PeerConnection, PeerContext, RequestContext};

use super::Server;

/// The error a handler gets outside the blocking adapter's threads.
fn outside(method: &str) -> ErrorObject<'static> {
    ErrorObject::new(
        -32603,
        format!("{method}: an LSP method outside the blocking adapter"),
    )
}

impl Server {
    /// The server as the core's [`Router`], for the blocking adapter
    /// (`sansrpc_blocking::serve_stdio_status`, `spawn_child`, TCP…): plain threads, no
    /// async runtime. Give the connection
    /// `sansrpc_blocking::Options::for_profile(Profile::Lsp)`.
    ///
    /// The handlers are the same async functions as on tokio or smol, each run to its end
    /// where the adapter runs it: a request's on a worker of the handler pool
    /// (`Options::workers`), where a [`Context::call`](super::Context::call) to the editor
    /// blocks that worker only and [`Context::cancelled`](super::Context::cancelled) is
    /// ready once the editor cancels; a notification's on the connection's driver thread,
    /// in arrival order, before any later request starts (the LSP profile's order), where
    /// its notifications to the editor (diagnostics, log messages, progress) are queued
    /// and a `Context::call` is answered `-32603` at once: the driver thread is the one
    /// that would read the answer. The connection reads nothing while a notification's
    /// handler runs, so keep those short, and ask the editor from request handlers.
    pub fn blocking_router(&self) -> Router {
        sansrpc_runtime::mounted(|router| self.mount_blocking(router))
    }

    /// Registers the server's methods on `router`, beside the application's own.
    ///
    /// # Panics
    /// When `router` already has one of them.
    pub fn mount_blocking(&self, router: &mut Router) {
        for method in self.request_methods() {
            let server = self.clone();
            // Staged: the handler's Context (its documents) is made when the request is
            // handed out, on the driver thread between the notifications before and after
            // it; the handler runs on a worker.
            router
                .raw_staged_method(method, move |params| -> Staged {
                    let Some(cx) = RequestContext::current() else {
                        return Box::new(move |_| Err(outside(method)));
                    };
                    let profile = cx.peer().profile();
                    let host = cx.into_peer();
                    // Told from the worker: a request's sends wait for this thread.
                    let told = (method == Initialize::METHOD).then(|| Arc::clone(&host));
                    let answer = server.handle_request(method, params, host);
                    Box::new(move |out| {
                        if let Some(warned) =
                            told.and_then(|host| super::serve::check_profile(profile, &host))
                        {
                            pollster::block_on(warned);
                        }
                        let raw = pollster::block_on(answer)?;
                        out.extend_from_slice(raw.get().as_bytes());
                        Ok(())
                    })
                })
                .unwrap_or_else(|e| panic!("mounting {method}: {e}"));
        }
        for method in self.notification_methods() {
            let server = self.clone();
            router
                .raw_notification(method, move |params| {
                    let Some(cx) = NotificationContext::current() else {
                        return;
                    };
                    let host = cx.peer().clone().into_peer();
                    pollster::block_on(server.handle_notification(method, params, host));
                })
                .unwrap_or_else(|e| panic!("mounting {method}: {e}"));
        }
    }
}
