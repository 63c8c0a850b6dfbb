//! The server on a `sansrpc_futures::AsyncRouter`: tokio (through sansrpc-tokio), smol,
//! async-std, over any transport those adapters speak.

use std::sync::Arc;

use lsp_types::request::{Initialize, Request};
use sansrpc::{ErrorObject, RawValue};
use sansrpc_futures::{AsyncRouter, CallError, Client, NotificationContext, RequestContext};

use super::context::{BoxFuture, Host};
use super::session::Session;
use super::Server;

/// The editor, reached through the connection's client handle; for a request, through its
/// context (cancellation, its stream where the transport has one).
struct FuturesHost {
    peer: Client,
    request: Option<RequestContext>,
}

impl Host for FuturesHost {
    fn call(
        &self,
        method: &str,
        params: Box<RawValue>,
    ) -> BoxFuture<Result<Box<RawValue>, ErrorObject<'static>>> {
        let call = match &self.request {
            Some(cx) => cx.call_raw(method, Some(&params)),
            None => self.peer.call_raw(method, Some(&params)),
        };
        let method = method.to_owned();
        Box::pin(async move {
            call.await.map_err(|e| match e {
                CallError::Rpc(e) => e,
                e => ErrorObject::new(-32603, format!("{method}: {e}")),
            })
        })
    }

    fn notify(&self, method: &str, params: Box<RawValue>) -> BoxFuture<bool> {
        match &self.request {
            Some(cx) => {
                let sent = cx.notify_raw(method, Some(&params));
                Box::pin(async move { sent.await.is_ok() })
            }
            None => {
                let sent = self.peer.notify_raw(method, Some(&params));
                Box::pin(async move { sent.await.is_ok() })
            }
        }
    }

    fn session(&self) -> Arc<Session> {
        self.peer.local::<Session>()
    }

    fn is_cancelled(&self) -> bool {
        self.request
            .as_ref()
            .is_some_and(RequestContext::is_cancelled)
    }

    fn cancelled(&self) -> BoxFuture<()> {
        match &self.request {
            Some(cx) => Box::pin(cx.cancelled()),
            None => Box::pin(std::future::pending()),
        }
    }
}

impl Server {
    /// The server as an [`AsyncRouter`], for the tokio adapter (`sansrpc_tokio::stdio`,
    /// `spawn_child`, TCP…) and the futures driver (smol, async-std). Give the connection
    /// `Config::for_profile(Profile::Lsp)` (without it, the server writes a warning to stderr
    /// and the editor's log at `initialize`), or serve with `serve_stdio`, which does.
    pub fn router(&self) -> AsyncRouter {
        let mut router = AsyncRouter::new();
        self.mount(&mut router);
        router
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
                    let host: Arc<dyn Host> = Arc::new(FuturesHost {
                        peer: cx.peer().clone(),
                        request: Some(cx),
                    });
                    let warned = (method == Initialize::METHOD)
                        .then(|| super::serve::check_profile(profile, &host))
                        .flatten();
                    let answer = server.handle_request(method, params.as_deref(), host);
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
                    let host = Arc::new(FuturesHost {
                        peer: cx.peer().clone(),
                        request: None,
                    });
                    server.handle_notification(method, params.as_deref(), host)
                })
                .unwrap_or_else(|e| panic!("mounting {method}: {e}"));
        }
    }
}
