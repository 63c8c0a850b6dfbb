//! The server on a `sansrpc_futures::AsyncRouter`: tokio (through sansrpc-tokio), smol,
//! async-std, over any transport those adapters speak.

use lsp_types::request::{Initialize, Request};
use sansrpc_futures::{
    AsyncRouter, NotificationContext, PeerConnection, PeerContext, RequestContext,
};

use super::Server;

impl Server {
    /// The server as an [`AsyncRouter`], for the tokio adapter (`sansrpc_tokio::stdio`,
    /// `spawn_child`, TCP…) and the futures driver (smol, async-std). Give the connection
    /// `Config::for_profile(Profile::Lsp)` (without it, the server writes a warning to stderr
    /// and the editor's log at `initialize`), or serve with `serve_stdio`, which does.
    pub fn router(&self) -> AsyncRouter {
        sansrpc_runtime::mounted(|router| self.mount(router))
    }

    /// Registers the server's methods on `router`, beside the application's own.
    ///
    /// # Panics
    /// When `router` already has one of them.
    pub fn mount(&self, router: &mut AsyncRouter) {
        for method in self.request_methods() {
            let server = self.clone();
            router
                .raw_method_with_context(method, move |cx: RequestContext, params| {
                    let profile = cx.peer().profile();
                    let host = cx.into_peer();
                    let warned = (method == Initialize::METHOD)
                        .then(|| super::serve::check_profile(profile, &host))
                        .flatten();
                    let answer = server.handle_request(method, params, host);
                    match warned {
                        Some(warned) => Box::pin(async move {
                            warned.await;
                            answer.await
                        }),
                        None => answer,
                    }
                })
                .unwrap_or_else(|e| panic!("mounting {method}: {e}"));
        }
        for method in self.notification_methods() {
            let server = self.clone();
            router
                .raw_notification_with_context(method, move |cx: NotificationContext, params| {
                    server.handle_notification(
                        method,
                        params.as_deref(),
                        cx.peer().clone().into_peer(),
                    )
                })
                .unwrap_or_else(|e| panic!("mounting {method}: {e}"));
        }
    }
}
