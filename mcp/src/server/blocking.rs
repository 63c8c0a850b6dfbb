//! The server on the blocking adapter (`sansrpc-blocking`): the core's [`Router`] run on
//! plain threads, with no async runtime. Each request's handler runs to completion on the
//! adapter's worker thread ([`pollster::block_on`]); asking the client (sampling,
//! elicitation, roots) blocks that worker only, as a blocking handler's call does.

use crate::raw_json;
use std::sync::Arc;

use sansrpc::router::Router;
use sansrpc::ErrorObject;
use sansrpc_blocking::{Client, RequestContext};
use serde_json::Value;

use super::context::{BoxFuture, Host};
use super::state::{Notifier, Session};
use super::{read_params, request_id, Server, NOTIFICATIONS, REQUESTS};

struct BlockingHost {
    cx: RequestContext,
    peer: Client,
}

impl Host for BlockingHost {
    fn call(&self, method: &str, params: Value) -> BoxFuture<Result<Value, ErrorObject<'static>>> {
        let (peer, method) = (self.peer.clone(), method.to_owned());
        Box::pin(async move {
            // Blocks this worker until the client answers: the handler runs here alone.
            match peer.call_raw(&method, Some(&raw_json(&params))) {
                Ok(result) => serde_json::from_str(result.get()).map_err(|e| {
                    ErrorObject::new(-32603, format!("the client's answer to {method}: {e}"))
                }),
                Err(sansrpc::method::CallError::Rpc(e)) => Err(e),
                Err(e) => Err(ErrorObject::new(-32603, format!("{method}: {e}"))),
            }
        })
    }

    fn notify(&self, method: &str, params: Value) -> BoxFuture<bool> {
        let sent = self
            .peer
            .notify_raw(method, Some(&raw_json(&params)))
            .is_ok();
        Box::pin(std::future::ready(sent))
    }

    fn progress(&self, value: Value) -> BoxFuture<bool> {
        let sent = self.cx.report_progress(&raw_json(&value));
        Box::pin(std::future::ready(sent.unwrap_or(false)))
    }

    fn progress_token(&self) -> Option<Value> {
        let mut json = Vec::new();
        self.cx.progress_token()?.write_json(&mut json);
        serde_json::from_slice(&json).ok()
    }

    fn is_cancelled(&self) -> bool {
        self.cx.is_cancelled()
    }

    fn cancelled(&self) -> BoxFuture<()> {
        Box::pin(self.cx.cancelled())
    }

    fn session(&self) -> Arc<Session> {
        self.peer.local::<Session>()
    }

    fn notifier(&self) -> Arc<dyn Notifier> {
        Arc::new(PeerNotifier(self.peer.clone()))
    }

    fn request_id(&self) -> Option<crate::types::RequestId> {
        request_id(self.cx.id())
    }
}

/// Notifies a session from outside its requests, without waiting for its driver.
struct PeerNotifier(Client);

impl Notifier for PeerNotifier {
    fn notify(&self, method: &str, params: Value) -> bool {
        self.0.notify_raw_queued(method, Some(&raw_json(&params)))
    }

    fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

impl Server {
    /// The server as the core's [`Router`], for the blocking adapter
    /// (`sansrpc_blocking::serve_stdio`, `serve_tcp`, …). Give the connection
    /// `sansrpc_blocking::Options::for_profile(Profile::Mcp)` (the MCP profile and its
    /// newline framing).
    pub fn blocking_router(&self) -> Router {
        let mut router = Router::new();
        self.mount_blocking(&mut router);
        router
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
                    let host: Arc<dyn Host> = Arc::new(BlockingHost {
                        peer: cx.peer().clone(),
                        cx,
                    });
                    let raw = pollster::block_on(server.handle_raw(method, params, host))?;
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
