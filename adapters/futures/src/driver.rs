//! The driver: one task per connection that owns its [`Connection`] machine and does its
//! I/O. Every protocol rule (correlation, batches, cancellation, streams, heartbeat, the
//! close phases) is the core's; this file reads, writes, sleeps and runs handlers.

use std::fmt;
use std::future::Future;
use std::io;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::channel::mpsc;
use futures::StreamExt;
use sansrpc::connection::{CloseReason, Connection};
use sansrpc::Instant;

use crate::builder::EventHook;
use crate::calls::Calls;
use crate::client::{Client, Command};
use crate::server::Polled;
use crate::side::{Serving, Side};
use crate::timer::{Sleep, Timer};
use crate::transport::{Received, Transport};
use crate::wake::{Sources, Wakers, Woken, COMMANDS, SOCKET, TIMER};

/// Keeps the machine of an ended connection for its server's next one
/// ([`machines::recycle`](crate::machines::recycle)): the server's key, the machine.
type Recycle = fn(u64, Box<Connection>);

/// Commands taken per turn of the loop, so a flood of calls cannot starve input.
const COMMANDS_PER_TURN: usize = 64;

/// Which of the driver's sources were polled pending and have not been woken since: each
/// holds a waker of its own ([`Sources`]), so the driver leaves it unpolled until that waker
/// fires (a registration or a look is most of a poll's cost, and a subscriber's connection
/// is woken once per notification it sends, with nothing new on its channels, socket or
/// timer).
#[derive(Debug, Default, Clone, Copy)]
struct Listening {
    commands: bool,
    shutdown: bool,
    /// The transport's receive side was polled pending: it wakes the task when input
    /// comes.
    receive: bool,
    /// The sleep was polled pending for this target: it wakes the task then.
    timer: Option<sansrpc_runtime::time::Instant>,
    /// The connection's events were all taken, and nothing since could have made one: no
    /// input, command, timeout or handler's answer, no request of the peer's in flight,
    /// no hook. A subscriber's connection, woken once per notification it sends, does not
    /// look at its events (a dozen cold cache lines with many connections).
    routed: bool,
}

/// The next message of `rx`: polled with `waker` until it is pending (`listening`), then
/// left alone until that waker fires.
fn next<T>(
    rx: &mut mpsc::UnboundedReceiver<T>,
    waker: &Waker,
    listening: &mut bool,
) -> Poll<Option<T>> {
    if *listening {
        return Poll::Pending;
    }
    let next = rx.poll_next_unpin(&mut Context::from_waker(waker));
    *listening = next.is_pending();
    next
}

/// What a [`Builder`](crate::Builder) gives the driver besides the connection.
pub struct Parts {
    /// An `Arc<AsyncRouter>`, as the builder holds it.
    pub(crate) router: Option<crate::builder::ErasedRouter>,
    pub(crate) max_concurrent: usize,
    pub(crate) max_queued: usize,
    pub(crate) on_event: Option<EventHook>,
    /// What wakes the driver's task: its sources, its subscriptions, and the connection's
    /// extension.
    pub(crate) woken: Arc<Woken>,
    /// What handlers run work beside the connection on ([`Peer::executor`](sansrpc_runtime::Peer::executor)).
    pub(crate) executor: Option<Arc<dyn sansrpc_runtime::Executor>>,
    /// The connection has an extension's hook whose notifications join the output only
    /// when its events are looked at (the transport does not
    /// [take them](crate::Transport::takes_hook_output)).
    pub(crate) hooked: bool,
}

/// Asks a driver to shut down gracefully; from [`Driver::shutdown_handle`].
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    // The driver's wake state: a shutdown is a value there and a wake, no channel (two
    // allocations a connection less).
    woken: Arc<Woken>,
}

impl ShutdownHandle {
    /// Stops reading and taking new calls, lets the handlers in flight finish for up to
    /// `grace` (their answers go out), then closes: pending calls fail with
    /// [`CallError::is_closed`](crate::CallError::is_closed), unfinished handlers are dropped, queued output gets a
    /// short while to reach the peer. The driver future completes after that.
    pub fn shutdown(&self, grace: Duration) {
        self.woken.ask_shutdown(grace);
    }

    /// True once the driver has finished (or was dropped).
    pub fn is_finished(&self) -> bool {
        self.woken.is_finished()
    }
}

/// One connection's driver: a future that owns the [`Connection`] and runs until the peer
/// closes, an I/O error, or a [shutdown](ShutdownHandle::shutdown). Spawn it on any
/// executor (it is `Send`), or await it.
///
/// Each turn of its loop, until nothing moves: takes commands from [`Client`]s; reads input
/// into the connection while it wants input; acts on the connection's events (answers to
/// their callers, requests to handlers, notifications to the in-order queue, cancels to the
/// running handler); polls handlers and stream producers; sleeps until the connection's
/// next deadline; writes output. A pass that leaves everything written, the connection
/// blank ([`Connection::is_blank`]) and nothing running is followed by one that only asks
/// for input: the rest would find nothing (a keep-alive request's turn is one pass and a
/// look for more). It completes with an error of kind [`io::ErrorKind::TimedOut`] when a
/// heartbeat went unanswered.
///
/// `S` is what it does with the peer's requests: serve them on the builder's router
/// ([`Serving`](crate::Serving), from [`Builder::connect`](crate::Builder::connect)), or
/// answer them `-32601` and only call ([`ClientOnly`](crate::ClientOnly), from
/// [`Builder::connect_client`](crate::Builder::connect_client), which leaves the server's
/// code out of the program).
// In this order, from a cache line's start: the connection (behind a pointer: it may be
// lent, [`Transport::machines`]), what every pass of the loop reads, the side's and the
// transport's state, then what only calls, commands and the end use. A connection among
// many is cold when its turn comes, and each line a turn touches is a cache miss (a
// keep-alive HTTP request at 1,000 connections touched a dozen lines of the driver's own
// fields, spread over its 3.5 KiB).
#[repr(C, align(64))]
pub struct Driver<T, Tm, S = Serving> {
    // Taken out as the driver is dropped (to be reused, `recycle`), and never used again.
    conn: ManuallyDrop<Box<Connection>>,
    /// The machine was lent as the driver last waited ([`Transport::machines`]): the one
    /// held now is another, blank, swapped back first thing on the next turn.
    lent: bool,
    done: bool,
    commands_open: bool,
    /// `sleep` holds a sleep (one is dropped when no deadline is left): when it does not and
    /// none is wanted, the sleep is not looked at.
    sleeping: bool,
    /// `closing` is set: the connection finished.
    finished: bool,
    /// The subscriptions served write past the driver through the transport's bypass
    /// (opened as the driver parked): closed first thing on the next turn.
    bypassing: bool,
    /// The connection's hook (pub/sub) does.
    hook_bypassing: bool,
    /// The connection has a hook (an extension's) whose notifications join the output only
    /// when its events are looked at: they are looked at on every wakeup.
    hooked: bool,
    listening: Listening,
    start: sansrpc_runtime::time::Instant,
    /// The latest deadline a sleep completed for: the clock is never read as earlier.
    reached: Option<sansrpc_runtime::time::Instant>,
    /// A command the connection refused for a full output buffer, retried once it drains.
    deferred: Option<Box<Command>>,
    wakers: Wakers,
    server: S,
    transport: T,
    sleep: Sleep,
    /// Once the connection finished: until when closing the transport may take.
    closing: Option<sansrpc_runtime::time::Instant>,
    /// Read only for an event no side acts on.
    on_event: Option<EventHook>,
    sources: Sources,
    timer: Tm,
    commands: mpsc::UnboundedReceiver<Command>,
    calls: Calls,
    reason: Option<CloseReason>,
    /// The clients' record of the status the connection ended with.
    exit: crate::client::ExitCell,
    /// The callers of [`Client::close`] waiting: dropped when the driver has finished.
    closers: Vec<futures::channel::oneshot::Sender<()>>,
    /// The key of the transport's [`Machines`](crate::Machines), and what keeps a machine
    /// for the server's next connection on the thread the driver is dropped on (once
    /// finished). A pointer, not a call: a program whose transports lend no machines (a
    /// browser's) leaves the renewal's code out.
    recycle: Option<(u64, Recycle)>,
}

impl<T, Tm, S> Drop for Driver<T, Tm, S> {
    /// Dropped unfinished (its task aborted, an owner giving up on it): its shutdown
    /// handles say it has finished, and what still wakes it finds no task.
    fn drop(&mut self) {
        if !self.done {
            self.wakers.woken.finish();
        }
        // SAFETY: taken once, here, as the driver is dropped; never used after.
        let conn = unsafe { ManuallyDrop::take(&mut self.conn) };
        match self.recycle {
            // Finished: nothing runs on it any more (dropped unfinished, it may be
            // half-way through anything: dropped too).
            Some((key, recycle)) if self.done => recycle(key, conn),
            _ => drop(conn),
        }
    }
}

impl<T, Tm, S: Side> fmt::Debug for Driver<T, Tm, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("connection", &self.conn)
            .field("running", &self.server.running())
            .finish()
    }
}

impl<T: Transport, Tm: Timer, S: Side> Driver<T, Tm, S> {
    pub(crate) fn new(
        conn: Box<Connection>,
        transport: T,
        timer: Tm,
        mut parts: Parts,
    ) -> (Client, Self) {
        let (tx, commands) = mpsc::unbounded();
        let client = Client::new(tx, conn.config().profile, parts.executor.take());
        let server = S::new(&mut parts, &client);
        let (wakers, sources) = Wakers::new(parts.woken.clone());
        // Drivers that lend their machines read their times from one base, the machines'.
        let start = match transport.machines() {
            Some(machines) => machines.epoch(),
            None => sansrpc_runtime::time::Instant::now(),
        };
        // A new machine is blank: such a driver starts as if it had lent it, and its first
        // turn runs on the machine kept on its thread, grown by the exchanges before (a new
        // machine's tables and buffers each allocate on first use: a dozen allocations for a
        // connection's first request). Its own is kept in exchange.
        let machines = transport.machines();
        let lent = machines.is_some() && conn.is_blank();
        let recycle = machines.map(|m| (m.key(), crate::machines::recycle as Recycle));
        let driver = Driver {
            conn: ManuallyDrop::new(conn),
            lent,
            transport,
            timer,
            start,
            reached: None,
            commands,
            commands_open: true,
            sleeping: false,
            finished: false,
            bypassing: false,
            hook_bypassing: false,
            hooked: parts.hooked,
            deferred: None,
            listening: Listening::default(),
            wakers,
            sources,
            sleep: Sleep::default(),
            closing: None,
            calls: Calls::default(),
            server,
            on_event: parts.on_event,
            reason: None,
            exit: client.exit_cell(),
            closers: Vec::new(),
            done: false,
            recycle,
        };
        (client, driver)
    }

    /// True when nothing is under way: no handler running or waiting, no notification
    /// queued, no stream producing, no request of the peer's unanswered. A driver that is
    /// quiet can wait unpolled (an owner that drives it inline, one exchange at a time,
    /// can keep it for the next one) without holding anything up.
    pub fn is_quiet(&self) -> bool {
        self.server.is_idle() && self.conn.requests_in_flight() == 0
    }

    /// The transport, for an owner that drives the connection inline between its polls (a
    /// tower service handing it a request body and taking the answer, with no channel and
    /// no wakeup between them).
    pub fn transport_mut(&mut self) -> &mut T {
        // What the owner hands it is not announced by any waker: the next poll asks.
        self.listening = Listening::default();
        &mut self.transport
    }

    /// For an owner that drives the connection inline, one message at a time (a tower
    /// service handing it a request body): hands `message` to the machine and routes its
    /// events at once, within the call, then gives the machine to `take` for its output,
    /// as the transport's `poll_transmit` would take it at the end of the turn a poll
    /// makes. A handler that answers without waiting (most do) is answered in between.
    ///
    /// Only a driver at rest takes the message this way: nothing under way (no handler
    /// running or queued, no request unanswered, no command deferred), nothing that woke it
    /// since its last poll, no command waiting, its connection open and taking input.
    /// Otherwise `None`, with `message` not taken: the owner hands it to the transport and
    /// polls, as before. After `Some`, [`is_settled`](Self::is_settled) tells whether the
    /// turn left work that needs a poll (a handler that waits, a command one sent).
    ///
    /// What it skips of a poll's turn is the bookkeeping a poll needs and a turn at rest
    /// does not (the wakers, the sources' flags, the timer, a second pass finding nothing):
    /// about 1,000 instructions of an `add` request through `sansrpc-tokio`'s `RpcService`.
    pub fn exchange<R>(
        &mut self,
        message: &[u8],
        take: impl FnOnce(&mut Connection) -> R,
    ) -> Option<R> {
        let at_rest = !self.done
            && !self.finished
            && !self.lent
            && !self.hooked
            && !self.bypassing
            && !self.hook_bypassing
            && self.commands_open
            && self.reason.is_none()
            && self.deferred.is_none()
            && self.wakers.woken.peek() == 0
            && self.server.is_idle()
            && self.conn.requests_in_flight() == 0;
        if !at_rest {
            return None;
        }
        let now = self.now();
        // A command waiting goes first, as the turn of a poll applies it first: then the
        // owner's poll makes the turn.
        if self.poll_commands(now) || self.reason.is_some() {
            return None;
        }
        if self.conn.handle_message(message, now).is_err() {
            return None;
        }
        self.route_events(now);
        let before = self.conn.transmitted();
        let taken = take(&mut self.conn);
        let wrote = self.conn.transmitted() > before;
        let pending = self.conn.buffered_output() > 0;
        self.conn.handle_write(wrote, pending, now);
        Some(taken)
    }

    /// After [`exchange`](Self::exchange): true when its turn left nothing that needs a
    /// poll (no handler running or queued, no command deferred or sent, the connection
    /// still open).
    pub fn is_settled(&self) -> bool {
        self.reason.is_none()
            && self.deferred.is_none()
            && self.wakers.woken.peek() == 0
            && self.server.is_idle()
            && !self.conn.is_closing()
    }

    /// A handle to shut this driver down gracefully.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            woken: Arc::clone(&self.wakers.woken),
        }
    }

    fn clock(&self) -> sansrpc_runtime::time::Instant {
        let now = sansrpc_runtime::time::Instant::now();
        self.reached.map_or(now, |r| r.max(now))
    }

    fn now(&self) -> Instant {
        Instant::from_duration(self.clock().saturating_duration_since(self.start))
    }

    fn poll_commands(&mut self, now: Instant) -> bool {
        let mut progress = false;
        if let Some(command) = self.deferred.take() {
            let deferred = self.calls.apply::<S>(&mut self.conn, *command, now);
            self.deferred = deferred.map(Box::new);
            if self.deferred.is_some() {
                return false;
            }
            progress = true;
        }
        for _ in 0..COMMANDS_PER_TURN {
            if !self.commands_open {
                break;
            }
            let waker = &self.sources.commands;
            match next(&mut self.commands, waker, &mut self.listening.commands) {
                Poll::Ready(Some(Command::Close(done))) => {
                    progress = true;
                    self.closers.push(done);
                    let grace = self.conn.config().end_grace;
                    self.conn.shutdown(grace, now);
                }
                Poll::Ready(Some(command)) => {
                    progress = true;
                    let deferred = self.calls.apply::<S>(&mut self.conn, command, now);
                    self.deferred = deferred.map(Box::new);
                    if self.deferred.is_some() {
                        break;
                    }
                }
                Poll::Ready(None) => {
                    self.commands_open = false;
                    progress = true;
                }
                Poll::Pending => break,
            }
        }
        // Looked at again only once the commands' bit is set (as a shutdown sets it).
        let shutdown = match self.listening.shutdown {
            true => None,
            false => self.wakers.woken.take_shutdown(),
        };
        self.listening.shutdown = shutdown.is_none();
        if let Some(grace) = shutdown {
            // Handlers in flight get the grace; then the connection drops what still runs.
            self.conn.shutdown(grace, now);
            progress = true;
        } else if !self.commands_open && !self.server.serving() && self.conn.wants_input() {
            // Nobody can call any more and nothing is served: nothing left to do.
            self.conn.shutdown(Duration::ZERO, now);
            progress = true;
        }
        progress
    }

    /// Acts on the connection's events.
    fn route_events(&mut self, now: Instant) -> bool {
        let (conn, calls, hook) = (&mut self.conn, &mut self.calls, &self.on_event);
        let routed = self.server.route(conn, calls, hook, now);
        if let Some(reason) = routed.closed {
            self.reason = Some(reason);
        }
        routed.any
    }

    fn poll_handlers(&mut self, cx: &mut Context<'_>, now: Instant) -> Polled {
        self.server.poll(cx, &mut self.conn, now)
    }

    /// Fires the connection's deadline; sleeps until the next one.
    fn poll_timer(&mut self, now: Instant) -> bool {
        let deadline = self.conn.poll_timeout();
        if deadline.is_some_and(|d| d <= now) {
            self.conn.handle_timeout(now);
            return true;
        }
        let target = deadline.map(|d| self.start + d.since_epoch());
        let closing = if self.finished { self.closing } else { None };
        let target = target.into_iter().chain(closing).min();
        if target.is_some() && target == self.listening.timer {
            // Armed for it, and its waker has not fired.
            return false;
        }
        if target.is_none() && !self.sleeping {
            // No sleep, and none wanted (a plain request's turns).
            self.listening.timer = None;
            return false;
        }
        let cx = &mut Context::from_waker(self.sources.timer());
        let fired = self.sleep.poll_until(cx, &self.timer, target);
        self.sleeping = target.is_some() && !fired;
        match (fired, target) {
            (true, Some(target)) => self.reached = Some(self.clock().max(target)),
            (false, target) => self.listening.timer = target,
            (true, None) => {}
        }
        fired
    }

    /// Closes the connection, fails every call still waiting, and stops taking commands.
    fn finish(&mut self) -> io::Result<()> {
        let now = self.now();
        self.conn.close(now);
        self.route_events(now);
        self.server.clear();
        self.commands.close();
        let mut commands = Vec::new();
        commands.extend(self.deferred.take().map(|c| *c));
        while let Ok(command) = self.commands.try_recv() {
            commands.push(command);
        }
        for command in commands {
            let now = self.now();
            self.calls.apply::<S>(&mut self.conn, command, now);
        }
        self.calls.clear();
        self.closers.clear();
        self.wakers.woken.finish();
        self.done = true;
        if let Some(code) = self.conn.exit_code() {
            self.exit.store(code);
        }
        match self.reason {
            Some(CloseReason::HeartbeatTimeout) => {
                // In milliseconds, not `Duration`'s `Debug`: its formatting is 2 KB of a
                // browser page.
                let heartbeat = self.conn.config().heartbeat;
                let timeout = heartbeat.map_or(0, |h| h.timeout.as_millis());
                let timeout = u64::try_from(timeout).unwrap_or(u64::MAX);
                let e = format!("no pong within {timeout} ms");
                Err(io::Error::new(io::ErrorKind::TimedOut, e))
            }
            _ => Ok(()),
        }
    }

    fn poll_drive(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.done {
            return Poll::Ready(Ok(()));
        }
        if std::mem::take(&mut self.lent) {
            // The machine lent last on this thread, in place of the one held.
            if let Some(machines) = self.transport.machines() {
                machines.swap(&mut self.conn);
            }
        }
        if self.bypassing || self.hook_bypassing {
            // Nothing is written past the driver from here; what the bypass took only in
            // part is written first.
            if std::mem::take(&mut self.bypassing) {
                self.server.close_bypass();
            }
            if std::mem::take(&mut self.hook_bypassing) {
                self.conn.close_hook_bypass();
            }
            self.transport.bypass_closed();
        }
        self.transport.start_turn();
        // Kept before the sources' bits are taken and the connection drains its hook (with
        // its events), so that no wake in between is lost.
        self.wakers.polled_with(cx.waker());
        // A transport that does not wake on input is asked every turn, whatever woke the
        // task: a waker of its own would tell the driver nothing, and each of its wakes
        // (a request's read, on a keep-alive HTTP connection) would go through the source's
        // and the driver's shared state to the task's waker, three cold cache lines more with
        // many connections. It is given the task's waker.
        let own_waker = self.transport.wakes_on_input();
        if !own_waker {
            self.listening.receive = false;
            self.transport.woken();
        }
        // The last pass left nothing to do but wait for input: the machine blank, its side
        // idle, everything written, no deadline passed (see `settled` below).
        let mut settled = false;
        // The time the last pass looked at.
        let mut then = None;
        loop {
            // The sources woken since the last look are polled this pass.
            let woke = self.wakers.woken.take();
            if woke != 0 {
                self.listening.routed = false;
            }
            if woke & COMMANDS != 0 {
                self.listening.commands = false;
                self.listening.shutdown = false;
            }
            if woke & SOCKET != 0 {
                self.listening.receive = false;
                self.transport.woken();
            }
            if woke & TIMER != 0 {
                self.listening.timer = None;
            }
            // One look at the clock a pass (each is a call into the kernel's clock page, about
            // 30 ns, and a pass takes far less than the connection's timeouts can tell). A
            // pass after a settled one looks for commands and input at the last pass's time,
            // and at the clock only if it goes on (the second pass of a keep-alive request,
            // which mostly finds neither, reads no clock).
            let mut now = match then {
                Some(then) if settled => then,
                _ => self.now(),
            };
            let mut progress = self.poll_commands(now);
            if progress {
                self.listening.routed = false;
            }
            // Input left unread this pass (not asked for, or refused): room made by a write
            // may let it in. None while the transport waits for input and will wake the
            // task: it is not asked until then.
            let mut unread = false;
            let reading =
                !self.listening.receive && self.conn.wants_input() && self.server.takes_input();
            if !self.listening.receive && !reading {
                unread = true;
            } else if reading {
                self.listening.routed = false;
                let socket =
                    &mut Context::from_waker(self.sources.transport(own_waker, cx.waker()));
                match self.transport.poll_receive(socket, &mut self.conn, now) {
                    Poll::Ready(Ok(Received::Data | Received::End)) => progress = true,
                    Poll::Ready(Ok(Received::Drained)) => {
                        progress = true;
                        self.listening.receive = true;
                    }
                    Poll::Pending => self.listening.receive = true,
                    Poll::Ready(Ok(Received::Stalled)) => unread = true,
                    Poll::Ready(Err(e)) => {
                        let _ = self.finish();
                        return Poll::Ready(Err(e));
                    }
                }
            }
            // The last pass settled, and nothing since: no source woke, no command came,
            // no input (the transport now waits for it). A blank machine has no event to
            // route, a side at rest no handler to poll, and nothing is left to write or to
            // time: the rest of this pass would find nothing (the second pass of every
            // keep-alive request: 530 instructions of its 10,100).
            if settled && !progress && woke == 0 && self.listening.receive && !unread {
                self.park_settled();
                return Poll::Pending;
            }
            if settled {
                now = self.now();
            }
            then = Some(now);
            // A connection that stopped taking input (closing, closed by a handler, or
            // holding input back while its output waits) is always looked at.
            if !self.listening.routed || !self.conn.wants_input() {
                progress |= self.route_events(now);
                self.listening.routed = own_waker
                    && self.listening.receive
                    && !self.hooked
                    && self.reason.is_none()
                    && self.conn.wants_input()
                    && self.conn.requests_in_flight() == 0;
            }
            let handlers = self.poll_handlers(cx, now);
            if handlers == Polled::Again {
                progress = true;
                self.listening.routed = false;
            }
            let before = self.conn.transmitted();
            let socket = &mut Context::from_waker(self.sources.transport(own_waker, cx.waker()));
            let flushed = match self.transport.poll_transmit(socket, &mut self.conn) {
                Poll::Ready(Ok(())) => true,
                Poll::Ready(Err(e)) => {
                    let _ = self.finish();
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => false,
            };
            let wrote = self.conn.transmitted() > before;
            let pending = !flushed || self.conn.buffered_output() > 0;
            // Subscription items moved and written (a fan-out's notification, the common
            // wakeup of a subscriber's connection): another pass would find nothing to do,
            // unless something waits for the room the write made, or the connection is not
            // in its steady state (closing or closed, or not taking input; a transport
            // waiting for input wakes the task when some comes). Anything else that moved
            // passes again.
            if wrote || handlers == Polled::Moved {
                progress |= (flushed && self.conn.buffered_output() > 0)
                    || self.deferred.is_some()
                    || self.server.waits_for_room()
                    || unread
                    || self.conn.is_closing()
                    || self.conn.is_closed()
                    || (!self.listening.receive && !self.conn.wants_input());
            }
            self.conn.handle_write(wrote, pending, now);
            if self.conn.is_finished() {
                if self.closing.is_none() {
                    // The close may never complete (a peer that does not read): bounded.
                    let linger = self.conn.config().linger;
                    self.closing = Some(self.clock() + linger);
                    self.finished = true;
                    progress = true;
                }
                let deadline = self.closing.unwrap_or_else(|| self.clock());
                let socket =
                    &mut Context::from_waker(self.sources.transport(own_waker, cx.waker()));
                let closed = self.transport.poll_close(socket).is_ready();
                if closed || self.clock() >= deadline {
                    return Poll::Ready(self.finish());
                }
            }
            // Last in the pass, once the writes are told: a write stall this pass began (or
            // restarted) moves the deadline, and the sleep is armed for it before the task
            // waits (armed before, it kept the old one until something else woke the task);
            // and a connection whose close completed at once arms none.
            let fired = self.poll_timer(now);
            if fired {
                progress = true;
                self.listening.routed = false;
            }
            // Only when another pass comes: what it would find, if its input is pending.
            settled = progress
                && flushed
                && !fired
                && !unread
                && handlers == Polled::Idle
                && !self.finished
                && self.deferred.is_none()
                && self.server.is_idle()
                && self.conn.is_blank();
            if !progress {
                self.park(flushed);
                return Poll::Pending;
            }
        }
    }

    /// The task waits after a pass that found its machine blank and its side idle
    /// (`settled` in [`poll_drive`](Self::poll_drive)), and nothing since: [`park`](Self::park)
    /// without its checks, which that pass made.
    fn park_settled(&mut self) {
        match self.transport.machines() {
            Some(machines) if !self.hooked => {
                machines.lend(&mut self.conn);
                self.lent = true;
            }
            _ => self.park(true),
        }
    }

    /// The task waits: a connection with subscriptions (method subscriptions, or a hook's
    /// topics) and nothing queued lets their notifications be written past it (the core's
    /// rule, [`Connection::may_bypass`]), so that a fan-out's send wakes no task. Both may
    /// write through the transport's bypass, each in its own order: it writes one message
    /// at a time, and after one it took in part it takes none.
    fn park(&mut self, flushed: bool) {
        if !flushed || self.hooked || self.finished {
            return;
        }
        if let Some(machines) = self.transport.machines() {
            // Nothing of an exchange left in the driver or its machine (a call of ours
            // waiting is the machine's request in flight; a close asked for, or one that
            // happened, leaves it not blank): any other blank machine of the server can
            // stand in for it on the next turn.
            let idle = self.server.is_idle() && self.deferred.is_none();
            if idle && self.conn.is_blank() {
                machines.lend(&mut self.conn);
                self.lent = true;
            }
            return;
        }
        let served = self.server.may_bypass();
        let hook = self.conn.has_hook();
        if !(served || hook) {
            return;
        }
        // Asked first: a transport that cannot (any but a WebSocket server's) says so at
        // no cost, before the connection's rule reads its state.
        let Some(bypass) = self.transport.bypass() else {
            return;
        };
        if !self.conn.may_bypass() {
            return;
        }
        if served {
            self.bypassing = self.server.open_bypass(&bypass);
        }
        if hook {
            self.hook_bypassing = self.conn.open_hook_bypass(&bypass);
        }
    }
}

// Nothing in the driver is ever pinned in place: the timer is only borrowed, the transport
// is `Unpin`, and every future it holds is boxed.
impl<T, Tm, S> Unpin for Driver<T, Tm, S> {}

impl<T: Transport, Tm: Timer, S: Side> Future for Driver<T, Tm, S> {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_drive(cx)
    }
}
