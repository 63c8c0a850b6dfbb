//! Setting up a connection: [`Builder`].

use std::fmt;
use std::sync::Arc;

use sansrpc::connection::{self, Connection};
use sansrpc::endpoint::{Config, Event};
use sansrpc::ext::keepalive::HeartbeatConfig;
use sansrpc::ext::stream::StreamConfig;
use sansrpc::Instant;

use crate::client::Client;
use crate::driver::{Driver, Parts, LINGER};
use crate::extension::Extension;
use crate::router::AsyncRouter;
use crate::timer::Timer;
use crate::transport::Transport;

pub(crate) type EventHook = Arc<dyn for<'a> Fn(Event<'a>) + Send + Sync>;

/// Sets up a connection: the endpoint's [`Config`], the router that serves the peer's
/// requests, and the driver's own bounds. Cheap to clone, for accept loops.
#[derive(Clone)]
pub struct Builder {
    config: Config,
    router: Option<Arc<AsyncRouter>>,
    max_concurrent: usize,
    max_queued_notifications: usize,
    on_event: Option<EventHook>,
    heartbeat: Option<HeartbeatConfig>,
    streams: StreamConfig,
    lsp_lifecycle: bool,
    /// Extension: per-connection hook (pub/sub), set with `Builder::extension`.
    pub(crate) extension: Option<Extension>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("config", &self.config)
            .field("router", &self.router)
            .field("max_concurrent", &self.max_concurrent)
            .field("max_queued_notifications", &self.max_queued_notifications)
            .field("heartbeat", &self.heartbeat)
            .finish()
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// The default endpoint config, no router (the peer's requests get `-32601`), 64
    /// concurrent requests, 1024 queued notifications.
    pub fn new() -> Self {
        Builder {
            config: Config::default(),
            router: None,
            max_concurrent: 64,
            max_queued_notifications: 1024,
            on_event: None,
            heartbeat: None,
            streams: StreamConfig::default(),
            extension: None,
            lsp_lifecycle: true,
        }
    }

    /// Bounds of the streams this connection serves (open streams, queued pulls, items per
    /// answer, idle timeout); see [`sansrpc::ext::stream`].
    pub fn stream_config(mut self, config: StreamConfig) -> Self {
        self.streams = config;
        self
    }

    /// The endpoint's config: framing of a byte stream, limits, default deadline,
    /// cancellation, bounds.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// The endpoint's config as set so far (message transports size their own buffers from
    /// its [`Limits`](sansrpc::Limits)).
    pub fn endpoint_config(&self) -> &Config {
        &self.config
    }

    /// The framing of a byte stream (Content-Length unless set).
    pub fn framing(mut self, framing: sansrpc::codec::Framing) -> Self {
        self.config.framing = Some(framing);
        self
    }

    /// Serves the peer's requests and notifications with `router`. A connection with a
    /// router runs until the peer closes or it is shut down; one without stops once every
    /// [`Client`] is dropped.
    pub fn router(self, router: AsyncRouter) -> Self {
        self.shared_router(Arc::new(router))
    }

    /// Like [`router`](Builder::router), sharing one router between connections.
    pub fn shared_router(mut self, router: Arc<AsyncRouter>) -> Self {
        self.router = Some(router);
        self
    }

    /// Most async request handlers running at once (default 64); further requests wait, in
    /// arrival order, and beyond [`Config::max_inflight_incoming`] the connection stops
    /// reading until one is answered ([`Config::hold_when_busy`]; off, the endpoint answers
    /// `-32002`).
    pub fn max_concurrent_requests(mut self, n: usize) -> Self {
        self.max_concurrent = n.max(1);
        self
    }

    /// Most notifications waiting for their turn (default 1024); beyond it the driver stops
    /// reading until the handlers catch up.
    pub fn max_queued_notifications(mut self, n: usize) -> Self {
        self.max_queued_notifications = n.max(1);
        self
    }

    /// Called with every event the driver does not act on itself (unknown responses,
    /// errors without id, protocol and framing errors, rejected frames): for logging.
    pub fn on_event(mut self, hook: impl for<'a> Fn(Event<'a>) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(hook));
        self
    }

    /// Runs the application-level heartbeat of seed 002 §3.3.2 (for byte streams without
    /// native pings): the peer's `ping` notifications are answered with `pong` and never
    /// reach the router; with an interval set, a `ping` goes out every interval and the
    /// driver fails with [`std::io::ErrorKind::TimedOut`] when its `pong` is later than the
    /// timeout (pending calls then fail with [`CallError::is_closed`](crate::CallError::is_closed)).
    pub fn heartbeat(mut self, config: HeartbeatConfig) -> Self {
        self.heartbeat = Some(config);
        self
    }

    /// Under the LSP profile, keep a server's lifecycle (default `true`; see
    /// [`sansrpc::connection::Config::lsp_lifecycle`]): requests before `initialize`
    /// refused, `exit` ends the driver ([`Client::exit_code`] then says with what status),
    /// the editor's process watched. A connection that sends `initialize` is a client and
    /// keeps none either way.
    pub fn lsp_lifecycle(mut self, on: bool) -> Self {
        self.lsp_lifecycle = on;
        self
    }

    /// Builds the connection over `transport`, sleeping on `timer`: a [`Client`] to call the
    /// peer with, and the [`Driver`] future to spawn (or await) that does all the work.
    pub fn connect<T: Transport, Tm: Timer>(
        self,
        transport: T,
        timer: Tm,
    ) -> (Client, Driver<T, Tm>) {
        let mut config = connection::Config::new(self.config);
        if transport.is_message_based() {
            config.endpoint.framing = None;
        } else if config.endpoint.framing.is_none() {
            config.endpoint.framing = Some(sansrpc::codec::Framing::ContentLength);
        }
        config.streams = self.streams;
        config.heartbeat = self.heartbeat;
        config.linger = LINGER;
        config.lsp_lifecycle = self.lsp_lifecycle;
        let mut conn = Connection::new(config, Instant::ZERO);
        // Extension: per-connection hook (pub/sub), woken through the driver's waker.
        let wake = self.extension.as_ref().map(|ext| {
            let (hook, waker) = ext.open();
            conn.set_hook(hook);
            waker
        });
        let parts = Parts {
            router: self.router,
            max_concurrent: self.max_concurrent,
            max_queued: self.max_queued_notifications,
            on_event: self.on_event,
            wake,
        };
        Driver::new(conn, transport, timer, parts)
    }
}
