//! What a driver does with the peer's messages: serve them on a router ([`Serving`], what
//! [`Builder::connect`](crate::Builder::connect) gives), only take the answers to its own
//! calls ([`ClientOnly`], from [`Builder::connect_client`](crate::Builder::connect_client)),
//! or take them and answer the few requests a client's peer sends through one
//! [`Answers`] ([`Answering`], from
//! [`Builder::connect_answering`](crate::Builder::connect_answering)). The driver is
//! generic over it, so that a connection which only calls never instantiates the server's
//! dispatch, handlers, stream producers and subscription tables (a browser page's code is
//! that much smaller).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::FutureExt;
use sansrpc::connection::{self, Connection, Event, IncomingId};
use sansrpc::{ErrorObject, Instant, RawValue};
use sansrpc_runtime::calls::Answer;

use crate::builder::EventHook;
use crate::calls::Calls;
use crate::client::Client;
use crate::driver::Parts;
use crate::router::{BoxFuture, HandlerResult};
use crate::server::{guarded, respond, Guarded, Polled, Routed};

pub use crate::server::Server as Serving;

/// What a [`Driver`](crate::Driver) does with the peer's requests and notifications:
/// [`Serving`] (the default) or [`ClientOnly`]. Sealed: only this crate implements it.
pub trait Side: sealed::Side {}

impl Side for Serving {}
impl Side for ClientOnly {}
impl Side for Answering {}

pub(crate) mod sealed {
    use super::*;

    /// The driver's view of its side (see [`Side`](super::Side)).
    pub trait Side: Send + Sized {
        /// It serves the peer: the builder's extension (pub/sub) is set on its connection.
        const SERVES: bool;
        /// The side of a new connection whose clients share `client`'s commands.
        fn new(parts: &mut Parts, client: &Client) -> Self;
        /// Handlers running, for the driver's `Debug`.
        fn running(&self) -> usize {
            0
        }
        /// Nothing under way: no handler running or waiting, no notification queued, no
        /// stream producing.
        fn is_idle(&self) -> bool {
            self.running() == 0
        }
        /// The connection serves the peer (it runs until the peer closes or it is shut
        /// down, not until its clients are gone). A side that only calls does not.
        fn serving(&self) -> bool {
            false
        }
        /// Room for the peer's input: its notifications queued behind the running ones are
        /// fewer than the most allowed.
        fn takes_input(&self) -> bool {
            true
        }
        /// Something waits for the room a write makes: subscription items held back,
        /// streams producing.
        fn waits_for_room(&self) -> bool {
            false
        }
        /// Acts on the connection's events.
        fn route(
            &mut self,
            conn: &mut Connection,
            calls: &mut Calls,
            on_event: &Option<EventHook>,
            now: Instant,
        ) -> Routed;
        /// Polls what runs beside the connection.
        fn poll(&mut self, cx: &mut Context<'_>, conn: &mut Connection, now: Instant) -> Polled {
            let _ = (cx, conn, now);
            Polled::Idle
        }
        /// Lets the subscriptions served write past the driver through `bypass` (see
        /// [`Transport::bypass`](crate::Transport::bypass)); false when none is active or
        /// something waits for the driver. False by default.
        fn open_bypass(&mut self, bypass: &std::sync::Arc<dyn crate::Bypass>) -> bool {
            let _ = bypass;
            false
        }
        /// True when [`open_bypass`](Side::open_bypass) could open: some subscription
        /// is active. False by default.
        fn may_bypass(&self) -> bool {
            false
        }
        /// Closes what [`open_bypass`](Side::open_bypass) opened.
        fn close_bypass(&mut self) {}
        /// The connection is over: drops what still runs.
        fn clear(&mut self) {}
    }
}

/// The [`Side`] of a connection that only calls: the peer's requests are answered
/// `-32601` (method not found), its notifications go to the client's subscriptions or
/// nowhere. No router, no handler, no stream producer, no subscription served.
#[derive(Debug)]
pub struct ClientOnly {
    _private: (),
}

impl sealed::Side for ClientOnly {
    const SERVES: bool = false;

    fn new(_: &mut Parts, _: &Client) -> Self {
        ClientOnly { _private: () }
    }

    fn route(
        &mut self,
        conn: &mut Connection,
        calls: &mut Calls,
        on_event: &Option<EventHook>,
        now: Instant,
    ) -> Routed {
        // The connection answers the peer's requests itself (`-32601`) and consults none
        // of its serving side: the server's paths are not in this driver's program.
        let poll: PollEvent = Connection::poll_client_event;
        route_calls(conn, calls, on_event, now, poll, |_, _| {}, |_, _| {})
    }
}

/// What a client answers of its peer's requests and notifications, when a router would be
/// more than it needs (an MCP client answers the server's `ping`, sampling, elicitation
/// and roots, and hears its notifications): given to
/// [`Builder::connect_answering`](crate::Builder::connect_answering).
pub trait Answers: Send + Sync + 'static {
    /// The work answering the peer's request `method`, or `None` for a method not answered
    /// here (the peer gets `-32601`). Work that is ready when first polled is answered at
    /// once; a panic in it is answered as an internal error, and it is dropped when the
    /// peer cancels the request.
    fn request(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Option<BoxFuture<HandlerResult>>;

    /// The peer's notification `method` (not one of the client's own subscriptions'),
    /// handled before the next event.
    fn notification(&self, method: &str, params: Option<&RawValue>);
}

/// The [`Side`] of a connection that calls and answers its peer's requests through one
/// [`Answers`]: no router, no stream producer, no subscription served. The requests
/// answered run together (as many as the connection's
/// [`max_inflight_incoming`](sansrpc::connection::Config::max_inflight_incoming) lets in).
pub struct Answering {
    answers: Option<Arc<dyn Answers>>,
    running: Vec<(IncomingId, Guarded)>,
}

impl std::fmt::Debug for Answering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answering")
            .field("running", &self.running.len())
            .finish_non_exhaustive()
    }
}

impl Answering {
    /// Starts the work answering request `handle`: answered at once when it is ready,
    /// else kept in `running`.
    fn start(
        answers: Option<&dyn Answers>,
        running: &mut Vec<(IncomingId, Guarded)>,
        conn: &mut Connection,
        handle: IncomingId,
        method: &str,
        params: Option<Box<RawValue>>,
    ) {
        let work = std::panic::catch_unwind(AssertUnwindSafe(|| {
            answers.and_then(|a| a.request(method, params))
        }));
        let mut work = match work {
            Ok(Some(work)) => guarded(work),
            Ok(None) => return conn.respond(handle, Err(&ErrorObject::method_not_found())),
            Err(_) => return conn.respond(handle, Err(&ErrorObject::internal_error())),
        };
        // Most answer at once (a `ping`): answered here, never kept.
        let mut first = Context::from_waker(futures::task::noop_waker_ref());
        match work.poll_unpin(&mut first) {
            Poll::Ready(outcome) => respond(conn, handle, Some(outcome)),
            Poll::Pending => running.push((handle, work)),
        }
    }
}

impl sealed::Side for Answering {
    const SERVES: bool = false;

    fn new(parts: &mut Parts, _: &Client) -> Self {
        let answers = parts.router.take();
        let answers = answers.and_then(|a| a.downcast::<Arc<dyn Answers>>().ok());
        Answering {
            answers: answers.map(|a| Arc::clone(&*a)),
            running: Vec::new(),
        }
    }

    fn running(&self) -> usize {
        self.running.len()
    }

    fn route(
        &mut self,
        conn: &mut Connection,
        calls: &mut Calls,
        on_event: &Option<EventHook>,
        now: Instant,
    ) -> Routed {
        let poll: PollEvent = Connection::poll_answering_event;
        let (answers, running) = (self.answers.as_deref(), &mut self.running);
        let heard = |method: &str, params: Option<&RawValue>| {
            if let Some(answers) = answers {
                let heard = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    answers.notification(method, params)
                }));
                drop(heard);
            }
        };
        let serve = |conn: &mut Connection, peer: PeerCall| match peer {
            PeerCall::Request(handle, method, params) => {
                Answering::start(answers, running, conn, handle, &method, params)
            }
            PeerCall::Cancel(handle) => {
                if let Some(i) = running.iter().position(|(h, _)| *h == handle) {
                    drop(running.swap_remove(i));
                    conn.respond_cancelled(handle);
                }
            }
        };
        route_calls(conn, calls, on_event, now, poll, heard, serve)
    }

    fn poll(&mut self, cx: &mut Context<'_>, conn: &mut Connection, _: Instant) -> Polled {
        let before = self.running.len();
        let mut i = 0;
        while i < self.running.len() {
            match self.running[i].1.poll_unpin(cx) {
                Poll::Ready(outcome) => {
                    let (handle, _) = self.running.swap_remove(i);
                    respond(conn, handle, Some(outcome));
                }
                Poll::Pending => i += 1,
            }
        }
        if self.running.len() < before {
            Polled::Again
        } else {
            Polled::Idle
        }
    }

    fn clear(&mut self) {
        self.running.clear();
    }
}

/// How a side that calls polls the connection: `poll_client_event` or
/// `poll_answering_event`.
type PollEvent = for<'a> fn(&'a mut Connection) -> Option<Event<'a>>;

/// A request of the peer's, or its cancellation, for a side that answers.
enum PeerCall {
    Request(IncomingId, String, Option<Box<RawValue>>),
    Cancel(IncomingId),
}

/// The connection's events as a side that calls takes them, from `poll`: the answers
/// handed to their calls, the peer's notifications to the client's subscriptions or else to
/// `heard` (then done), its requests and their cancellations (from `poll_answering_event`
/// only) to `serve`, the close noted, what is only worth logging logged.
fn route_calls(
    conn: &mut Connection,
    calls: &mut Calls,
    on_event: &Option<EventHook>,
    now: Instant,
    poll: PollEvent,
    mut heard: impl FnMut(&str, Option<&RawValue>),
    mut serve: impl FnMut(&mut Connection, PeerCall),
) -> Routed {
    let mut any = false;
    let mut closed = None;
    while let Some(event) = poll(conn) {
        any = true;
        // An answer goes to its call; the other events are matched as they are.
        let event = Answer::take(event);
        match event {
            Ok(answer) => calls.hand_over(conn, answer, now),
            Err(connection::Event::Notification(n)) => {
                let params = n.params.as_deref();
                if !calls.subs.notification(&n.method, params) {
                    heard(&n.method, params);
                }
                conn.notification_done();
            }
            Err(connection::Event::Request { handle, request }) => {
                let params = request.params.map(|p| p.into_owned());
                let call = PeerCall::Request(handle, request.method.into_owned(), params);
                serve(conn, call);
            }
            Err(connection::Event::Cancel { handle }) => serve(conn, PeerCall::Cancel(handle)),
            // Taken by `Answer::take`.
            Err(connection::Event::Answer { .. } | connection::Event::Ended { .. }) => {}
            // Not from these polls: nothing of a server's runs (nothing to unsubscribe or
            // to stop producing), and the LSP lifecycle (the editor's process watched) is a
            // server's.
            Err(
                connection::Event::Unsubscribed { .. }
                | connection::Event::StreamClosed { .. }
                | connection::Event::CheckProcess { .. },
            ) => {}
            Err(connection::Event::Closed { reason }) => closed = Some(reason),
            // Only worth logging, as on a server.
            Err(other) => crate::server::unrouted(other, on_event),
        }
    }
    Routed { any, closed }
}
