//! The server on the blocking adapter (`sansrpc-blocking`): the core's [`Router`] run on
//! plain threads, with no async runtime. Each request's handler runs to completion on the
//! adapter's worker thread ([`pollster::block_on`]); asking the client (sampling,
//! elicitation, roots) blocks that worker only, as a blocking handler's call does.

use sansrpc::router::Router;
use sansrpc::ErrorObject;
use sansrpc_blocking::{PeerContext, RequestContext};

use super::{read_params, Server, NOTIFICATIONS, REQUESTS};

impl Server {
    /// The server as the core's [`Router`], for the blocking adapter
    /// (`sansrpc_blocking::serve_stdio`, `serve_tcp`, …). Give the connection
    /// `sansrpc_blocking::Options::for_profile(Profile::Mcp)` (the MCP profile and its
    /// newline framing).
    pub fn blocking_router(&self) -> Router {
        sansrpc_runtime::mounted(|router| self.mount_blocking(router))
    }

    /// Registers the server's methods on `router`, beside the application's own.
    ///
    /// # Panics
    /// When `router` already has one of the MCP methods.
    pub fn mount_blocking(&self, router: &mut Router) {
        for method in REQUESTS {
            let server = self.clone();
            router
                .raw_method(method, move |params, out| {
                    let cx = RequestContext::current().ok_or_else(|| {
                        ErrorObject::new(-32603, "an MCP method outside the blocking adapter")
                    })?;
                    let params = read_params(params)?;
                    let raw =
                        pollster::block_on(server.handle_raw(method, params, cx.into_peer()))?;
                    out.extend_from_slice(raw.get().as_bytes());
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("mounting {method}: {e}"));
        }
        for method in NOTIFICATIONS {
            router
                .raw_notification(method, |_| {})
                .unwrap_or_else(|e| panic!("mounting {method}: {e}"));
        }
    }
}
