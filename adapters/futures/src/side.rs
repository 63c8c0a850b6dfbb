//! What a driver does with the peer's messages: serve them on a router ([`Serving`], what
//! [`Builder::connect`](crate::Builder::connect) gives), or only take the answers to its own
//! calls ([`ClientOnly`], from [`Builder::connect_client`](crate::Builder::connect_client)).
//! The driver is generic over it, so that a connection which only calls never instantiates
//! the server's dispatch, handlers, stream producers and subscription tables (a browser
//! page's code is that much smaller).

use std::task::Context;

use sansrpc::connection::{self, Connection, Event};
use sansrpc::Instant;
use sansrpc_runtime::calls::Answer;

use crate::calls::Calls;
use crate::client::Client;
use crate::driver::Parts;
use crate::server::{Polled, Routed};

pub use crate::server::Server as Serving;

/// What a [`Driver`](crate::Driver) does with the peer's requests and notifications:
/// [`Serving`] (the default) or [`ClientOnly`]. Sealed: only this crate implements it.
pub trait Side: sealed::Side {}

impl Side for Serving {}
impl Side for ClientOnly {}

pub(crate) mod sealed {
    use super::*;

    /// The driver's view of its side (see [`Side`](super::Side)).
    pub trait Side: Send + Sized {
        /// It serves the peer: the builder's extension (pub/sub) is set on its connection.
        const SERVES: bool;
        /// The side of a new connection whose clients share `client`'s commands.
        fn new(parts: &mut Parts, client: &Client) -> Self;
        /// Handlers running, for the driver's `Debug`.
        fn running(&self) -> usize;
        /// Nothing under way: no handler running or waiting, no notification queued, no
        /// stream producing.
        fn is_idle(&self) -> bool;
        /// The connection serves the peer (it runs until the peer closes or it is shut
        /// down, not until its clients are gone).
        fn serving(&self) -> bool;
        /// Room for the peer's input: its notifications queued behind the running ones are
        /// fewer than the most allowed.
        fn takes_input(&self) -> bool;
        /// Something waits for the room a write makes: subscription items held back,
        /// streams producing.
        fn waits_for_room(&self) -> bool;
        /// Acts on the connection's events.
        fn route(
            &mut self,
            conn: &mut Connection,
            calls: &mut Calls,
            on_event: Option<&(dyn for<'a> Fn(Event<'a>) + Send + Sync)>,
            now: Instant,
        ) -> Routed;
        /// Polls what runs beside the connection.
        fn poll(&mut self, cx: &mut Context<'_>, conn: &mut Connection, now: Instant) -> Polled;
        /// The connection is over: drops what still runs.
        fn clear(&mut self);
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

    fn running(&self) -> usize {
        0
    }

    fn is_idle(&self) -> bool {
        true
    }

    fn serving(&self) -> bool {
        false
    }

    fn takes_input(&self) -> bool {
        true
    }

    fn waits_for_room(&self) -> bool {
        false
    }

    fn route(
        &mut self,
        conn: &mut Connection,
        calls: &mut Calls,
        on_event: Option<&(dyn for<'a> Fn(Event<'a>) + Send + Sync)>,
        now: Instant,
    ) -> Routed {
        let mut any = false;
        let mut closed = None;
        // The connection answers the peer's requests itself (`-32601`) and consults none
        // of its serving side: the server's paths are not in this driver's program.
        while let Some(event) = conn.poll_client_event() {
            any = true;
            let event = match Answer::take(event) {
                Ok(answer) => {
                    calls.hand_over(conn, answer, now);
                    continue;
                }
                Err(event) => event,
            };
            match event {
                connection::Event::Notification(n) => {
                    calls.subs.notification(&n.method, n.params.as_deref());
                    conn.notification_done();
                }
                // Taken above.
                connection::Event::Answer { .. } | connection::Event::Ended { .. } => {}
                // Not from `poll_client_event`: requests are answered there, nothing runs
                // (nothing to cancel, to unsubscribe or to stop producing), and the LSP
                // lifecycle (the editor's process watched) is a server's.
                connection::Event::Request { .. }
                | connection::Event::Cancel { .. }
                | connection::Event::Unsubscribed { .. }
                | connection::Event::StreamClosed { .. }
                | connection::Event::CheckProcess { .. } => {}
                connection::Event::Closed { reason } => closed = Some(reason),
                // Only worth logging, as on a server.
                other => crate::server::unrouted(other, on_event),
            }
        }
        Routed { any, closed }
    }

    fn poll(&mut self, _: &mut Context<'_>, _: &mut Connection, _: Instant) -> Polled {
        Polled::Idle
    }

    fn clear(&mut self) {}
}
