//! Setting up a connection: [`Builder`].

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use sansrpc::connection::{Config, Connection, Event};
use sansrpc::Instant;
use sansrpc_runtime::Executor;

use crate::client::Client;
use crate::driver::{Driver, Parts};
use crate::extension::Extension;
use crate::router::AsyncRouter;
use crate::side::{Answering, Answers, ClientOnly, Side};
use crate::timer::Timer;
use crate::transport::Transport;

pub(crate) type EventHook = Arc<dyn for<'a> Fn(Event<'a>) + Send + Sync>;

/// The builder's router, an `Arc<AsyncRouter>` (see [`Builder`]'s field).
pub(crate) type ErasedRouter = Arc<dyn Any + Send + Sync>;

/// Sets up a connection: the connection's one [`Config`] (framing, limits, deadlines,
/// profile, heartbeat, streams, close phases), the router that serves the peer's requests,
/// and the driver's own bounds. Cheap to clone, for accept loops.
#[derive(Clone)]
pub struct Builder {
    config: Config,
    /// An `Arc<AsyncRouter>`, held as `dyn Any`: the router's drop (its tables, its
    /// handlers) is in a program only when one is set, not in one that only calls (a
    /// browser page's, 4 KB of its code).
    router: Option<ErasedRouter>,
    max_concurrent: usize,
    max_queued_notifications: usize,
    on_event: Option<EventHook>,
    /// Extension: per-connection hook (pub/sub), set with `Builder::extension`.
    pub(crate) extension: Option<Extension>,
    executor: Option<Arc<dyn Executor>>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("config", &self.config)
            .field(
                "router",
                &self
                    .router
                    .as_ref()
                    .and_then(|r| r.downcast_ref::<AsyncRouter>()),
            )
            .field("max_concurrent", &self.max_concurrent)
            .field("max_queued_notifications", &self.max_queued_notifications)
            .finish()
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// The default config, no router (the peer's requests get `-32601`), 64
    /// concurrent requests, 1024 queued notifications.
    pub fn new() -> Self {
        Builder {
            config: Config::default(),
            router: None,
            max_concurrent: 64,
            max_queued_notifications: 1024,
            on_event: None,
            extension: None,
            executor: None,
        }
    }

    /// The connection's config, whole: framing of a byte stream, limits, default deadline,
    /// cancellation, the profile, the heartbeat, streams, the close phases (replacing what
    /// was set before). The driver takes it as it is; only the framing follows the
    /// transport ([`Config::for_transport`]).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Changes fields of the config set so far:
    /// `Builder::new().configure(|c| c.heartbeat = Some(HeartbeatConfig::answer_only()))`.
    pub fn configure(mut self, change: impl FnOnce(&mut Config)) -> Self {
        change(&mut self.config);
        self
    }

    /// The config as set so far (message transports size their own buffers from its
    /// [`Limits`](sansrpc::Limits)).
    pub fn connection_config(&self) -> &Config {
        &self.config
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

    /// Gives handlers `executor` for work that outlives them ([`Peer::executor`]): what a
    /// protocol crate runs beside the connection, and sleeps on, where it can start no thread
    /// of its own (a browser's page or worker; `sansrpc-wasm` gives its own). None by
    /// default: such work then runs as it does on std (on tokio's runtime when there is one,
    /// else on a thread).
    ///
    /// [`Peer::executor`]: sansrpc_runtime::Peer::executor
    pub fn executor(mut self, executor: impl Executor) -> Self {
        self.executor = Some(Arc::new(executor));
        self
    }

    /// True once an [`executor`](Builder::executor) was given.
    pub fn has_executor(&self) -> bool {
        self.executor.is_some()
    }

    /// Builds the connection over `transport`, sleeping on `timer`: a [`Client`] to call the
    /// peer with, and the [`Driver`] future to spawn (or await) that does all the work.
    pub fn connect<T: Transport, Tm: Timer>(
        self,
        transport: T,
        timer: Tm,
    ) -> (Client, Driver<T, Tm>) {
        self.connect_as(transport, timer)
    }

    /// Like [`connect`](Builder::connect), for a connection that only calls the peer: its
    /// driver serves nothing ([`ClientOnly`]: the peer's requests get `-32601`, a router or
    /// an extension set on this builder is not used), so the program carries none of the server's code (the
    /// dispatch, the handlers' scheduling, stream producers, subscriptions served), which
    /// matters where its size does (a browser page). Everything else is as with `connect`:
    /// calls, batches, notifications, the method subscriptions it makes, the config, the
    /// event hook.
    pub fn connect_client<T: Transport, Tm: Timer>(
        self,
        transport: T,
        timer: Tm,
    ) -> (Client, Driver<T, Tm, ClientOnly>) {
        self.connect_as(transport, timer)
    }

    /// Like [`connect_client`](Builder::connect_client), for a client that answers the few
    /// requests its peer sends (an MCP client: the server's `ping`, sampling, elicitation,
    /// roots) through `answers` ([`Answering`]), which also hears the peer's notifications.
    /// A router or an extension set on this builder is not used; none of the server's code
    /// is in the program but the running of `answers`' work.
    pub fn connect_answering<T: Transport, Tm: Timer>(
        mut self,
        transport: T,
        timer: Tm,
        answers: Arc<dyn Answers>,
    ) -> (Client, Driver<T, Tm, Answering>) {
        // In the slot of what serves the peer, where the `Answering` side looks for it.
        self.router = Some(Arc::new(answers));
        self.connect_as(transport, timer)
    }

    fn connect_as<T: Transport, Tm: Timer, S: Side>(
        self,
        mut transport: T,
        timer: Tm,
    ) -> (Client, Driver<T, Tm, S>) {
        // Boxed where it is made: the driver holds it so (it may be lent), and a machine is
        // large enough that each move is a `memcpy` worth avoiding. A server whose blank
        // machines are interchangeable ([`Transport::machines`]) reuses the machine of one
        // of its ended connections, renewed, when its thread keeps one: of the same config.
        let spare = transport.machines().and_then(crate::Machines::spare);
        let mut conn = spare.unwrap_or_else(|| {
            let mut config = self.config.for_transport(transport.is_message_based());
            config.push &= transport.can_push();
            Box::new(Connection::new(config, Instant::ZERO))
        });
        // Extension: per-connection hook (pub/sub), which wakes the driver's task.
        let woken = Arc::new(crate::wake::Woken::default());
        let hooked = match self.extension.as_ref().filter(|_| S::SERVES) {
            Some(ext) => {
                conn.set_hook(crate::extension::open(ext, &woken));
                // The hook's notifications join the output where the transport asks for it.
                !transport.takes_hook_output()
            }
            None => {
                transport.without_extension();
                false
            }
        };
        let parts = Parts {
            router: self.router,
            max_concurrent: self.max_concurrent,
            max_queued: self.max_queued_notifications,
            on_event: self.on_event,
            woken,
            executor: self.executor,
            hooked,
        };
        Driver::new(conn, transport, timer, parts)
    }
}
