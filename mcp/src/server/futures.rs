//! The server on a `sansrpc_futures::AsyncRouter`: tokio (through sansrpc-tokio), smol,
//! async-std, over any transport those adapters speak.

use sansrpc::ErrorObject;
use sansrpc_futures::{AsyncRouter, PeerContext, RequestContext};

use super::{read_params, Server, NOTIFICATIONS, REQUESTS};

impl Server {
    /// The server as an [`AsyncRouter`], for the tokio adapter (`sansrpc_mcp::tokio::serve`
    /// for Streamable HTTP, `serve_stdio` for stdio) and the futures driver (smol,
    /// async-std). Give the connection `Config::for_profile(Profile::Mcp)`.
    pub fn router(&self) -> AsyncRouter {
        sansrpc_runtime::mounted(|router| self.mount(router))
    }

    /// Registers the server's methods on `router`, beside the application's own.
    ///
    /// # Panics
    /// When `router` already has one of the MCP methods.
    pub fn mount(&self, router: &mut AsyncRouter) {
        for method in REQUESTS {
            let server = self.clone();
            router
                .raw_method_with_context(method, move |cx: RequestContext, params| {
                    request(server.clone(), method, cx, params)
                })
                .unwrap_or_else(|e| panic!("mounting {method}: {e}"));
        }
        for method in NOTIFICATIONS {
            router
                .raw_notification(method, |_| async {})
                .unwrap_or_else(|e| panic!("mounting {method}: {e}"));
        }
    }
}

/// One request of `method` as the router runs it. Its params are read before its future is
/// made, so the future is the server's for what was read, not one holding the context and
/// the raw params as well: the router boxes it (and copies it into the box), and at most
/// 1 KiB comes from the allocator's per-thread cache.
fn request(
    server: Server,
    method: &'static str,
    cx: RequestContext,
    params: Option<&sansrpc::RawValue>,
) -> impl std::future::Future<Output = Result<Box<sansrpc::RawValue>, ErrorObject<'static>>>
       + Send
       + 'static {
    use futures::future::{ready, Either};
    match read_params(params) {
        Ok(params) => Either::Left(server.handle_raw(method, params, cx.into_peer())),
        Err(e) => Either::Right(ready(Err(e))),
    }
}

#[cfg(test)]
mod tests {
    /// The size of what `make` returns, without calling it.
    fn returned_size<A, R, F: Fn(A) -> R>(_: &F) -> usize {
        std::mem::size_of::<R>()
    }

    /// A call's future is moved into its box by the router, and its bytes copied with it
    /// (it was 3,696 bytes when every method's future had room in it: `subscriptions/listen`
    /// and the request's `_meta` inline).
    #[test]
    fn a_calls_future_stays_small() {
        let server = crate::server::ServerBuilder::new("a", "1").build();
        let call = |host: std::sync::Arc<dyn super::super::Peer>| {
            server.handle_raw("tools/call", Default::default(), host)
        };
        let size = returned_size(&call);
        assert!(size <= 1024, "a call's future is {size} bytes");
        // And as the router boxes it: at most 1 KiB, or its box is not one of the
        // allocator's cached sizes (1,040 bytes when it held the context and the raw params
        // beside what was read from them).
        let boxed = |cx| super::request(server.clone(), "tools/call", cx, None);
        let size = returned_size(&boxed);
        assert!(
            size <= 1024,
            "a call's future as the router boxes it is {size} bytes"
        );
    }
}
