//! A client that reconnects, on threads: [`Reconnect`] wraps one [`Client`] at a time and a
//! supervisor thread that replaces it on the [`ReconnectPolicy`]'s schedule when the
//! connection is lost.
//!
//! The rules are those of the async adapters, by construction: every decision (when to
//! connect, the backoff and its jitter, what to replay, which calls to resend, when to give
//! up, which calls are admitted) is the core's [`Reconnector`]; this file connects, waits
//! and blocks callers:
//! - calls are sent only while [`State::Open`]: while connecting they fail at once with
//!   [`SendError::Connecting`], once closing began with [`SendError::Closed`];
//! - a call pending when the connection is lost fails ([`PendingPolicy::Fail`]), or, when
//!   marked idempotent under [`PendingPolicy::ResendIdempotent`], waits for the next
//!   connection and is sent again there (it fails if the supervisor gives up);
//! - successful `rpc.subscribe*` calls are replayed on every new connection before it is
//!   reported open.

use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use sansrpc::client::{self as shared, RawResult};
use sansrpc::connection::{SendError, Timeout};
pub use sansrpc::ext::reconnect::CallOptions;
#[cfg(doc)]
use sansrpc::ext::reconnect::PendingPolicy;
use sansrpc::ext::reconnect::{Action, Jitter, ReconnectPolicy, Reconnector, State};
use sansrpc::method::{CallError, Method, NotificationMethod};
use sansrpc::RawValue;

use crate::{Client, Options};

/// Opens one connection, within the timeout it is given.
pub type Connector = dyn Fn(Duration) -> io::Result<Client> + Send + Sync;

/// The supervisor gave up: the policy's attempts were used up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GaveUp {
    /// Attempts made since the last successful connection.
    pub attempts: u32,
    /// The kind of the last failure.
    pub kind: io::ErrorKind,
    /// The last failure, as text.
    pub error: String,
}

struct Inner {
    /// The state callers see (it follows the reconnector's).
    state: State,
    rc: Reconnector,
    client: Option<Client>,
    connections: u64,
    /// Tokens for the calls the reconnector is told were lost.
    lost_calls: u64,
    gave_up: Option<GaveUp>,
}

struct Shared {
    connector: Box<Connector>,
    policy: ReconnectPolicy,
    inner: Mutex<Inner>,
    changed: Condvar,
    /// The epoch of the reconnector's clock.
    start: Instant,
}

impl Shared {
    fn now(&self) -> sansrpc::Instant {
        sansrpc::Instant::from_duration(self.start.elapsed())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves to `state` if seed §5 allows it from the current one (never out of Closed,
    /// never back from Closing).
    fn set(&self, inner: &mut Inner, state: State) {
        if inner.state.can_become(state) {
            inner.state = state;
            self.changed.notify_all();
        }
    }

    /// Waits on the condition variable until `done` holds or `deadline` passes.
    fn wait_until<'a>(
        &'a self,
        mut inner: MutexGuard<'a, Inner>,
        deadline: Option<Instant>,
        done: impl Fn(&Inner) -> bool,
    ) -> MutexGuard<'a, Inner> {
        while !done(&inner) {
            inner = match deadline {
                None => self.changed.wait(inner).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    let waited = self.changed.wait_timeout(inner, left);
                    waited.unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
        inner
    }
}

/// Owned by the handles: the last one dropped closes the client.
struct Handle {
    shared: Arc<Shared>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        close(&self.shared, &self.supervisor);
    }
}

/// A reconnecting client on threads: cheap to clone, usable from any thread. From
/// [`Reconnect::new`], [`Reconnect::tcp`], [`Reconnect::unix`] or [`Reconnect::child`].
#[derive(Clone)]
pub struct Reconnect {
    handle: Arc<Handle>,
}

impl std::fmt::Debug for Reconnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reconnect")
            .field("state", &self.state())
            .field("connections", &self.connections())
            .finish()
    }
}

impl Reconnect {
    /// A reconnecting client over the connections `connector` opens (it is given the
    /// policy's connect timeout); starts its supervisor thread, which makes the first
    /// attempt at once. Wait for the connection with [`Reconnect::wait_open`].
    pub fn new(
        policy: ReconnectPolicy,
        connector: impl Fn(Duration) -> io::Result<Client> + Send + Sync + 'static,
    ) -> io::Result<Reconnect> {
        let shared = Arc::new(Shared {
            connector: Box::new(connector),
            policy,
            inner: Mutex::new(Inner {
                state: State::Connecting,
                rc: Reconnector::new(
                    policy,
                    Jitter::from_std_random_state(),
                    sansrpc::Instant::ZERO,
                ),
                client: None,
                connections: 0,
                lost_calls: 0,
                gave_up: None,
            }),
            changed: Condvar::new(),
            start: Instant::now(),
        });
        let supervised = shared.clone();
        let supervisor = thread::Builder::new()
            .name("sansrpc-reconnect".into())
            .spawn(move || supervise(&supervised))?;
        Ok(Reconnect {
            handle: Arc::new(Handle {
                shared,
                supervisor: Mutex::new(Some(supervisor)),
            }),
        })
    }

    /// Reconnects to `addr` over TCP (each attempt bounded by the connect timeout).
    pub fn tcp(
        addr: impl ToSocketAddrs + Send + Sync + 'static,
        policy: ReconnectPolicy,
        config: Options,
    ) -> io::Result<Reconnect> {
        Reconnect::new(policy, move |timeout| {
            let mut last = io::Error::new(io::ErrorKind::NotFound, "no address to connect to");
            for addr in addr.to_socket_addrs()? {
                match TcpStream::connect_timeout(&addr, timeout) {
                    Ok(stream) if stream.local_addr()? == stream.peer_addr()? => {
                        // A connect to a port nobody listens on met itself.
                        last = io::Error::new(io::ErrorKind::ConnectionRefused, "self-connect");
                    }
                    Ok(stream) => {
                        crate::transport::tune(&stream)?;
                        return crate::transport::tcp_client(stream, &config);
                    }
                    Err(e) => last = e,
                }
            }
            Err(last)
        })
    }

    /// Reconnects to the Unix socket at `path` (a local connect does not wait, so the
    /// connect timeout does not apply).
    #[cfg(unix)]
    pub fn unix(
        path: impl Into<std::path::PathBuf>,
        policy: ReconnectPolicy,
        config: Options,
    ) -> io::Result<Reconnect> {
        let path = path.into();
        Reconnect::new(policy, move |_| crate::connect_unix(&path, config.clone()))
    }

    /// Spawns a fresh child process from `command()` on every attempt (see
    /// [`spawn_child`](crate::spawn_child)): a child that exits or is killed is respawned.
    pub fn child(
        command: impl Fn() -> std::process::Command + Send + Sync + 'static,
        policy: ReconnectPolicy,
        config: Options,
    ) -> io::Result<Reconnect> {
        Reconnect::new(policy, move |_| {
            crate::spawn_child(&mut command(), config.clone())
        })
    }

    fn shared(&self) -> &Shared {
        &self.handle.shared
    }

    /// The lifecycle state now.
    pub fn state(&self) -> State {
        self.shared().lock().state
    }

    /// Connections opened so far.
    pub fn connections(&self) -> u64 {
        self.shared().lock().connections
    }

    /// Why the supervisor gave up, once it has.
    pub fn gave_up(&self) -> Option<GaveUp> {
        self.shared().lock().gave_up.clone()
    }

    /// Waits up to `timeout` (forever with `None`) until `accept` accepts the state or the
    /// state is [`State::Closed`]; returns the state then.
    pub fn wait_for(&self, timeout: Option<Duration>, accept: impl Fn(State) -> bool) -> State {
        let deadline = timeout.map(|t| Instant::now() + t);
        let shared = self.shared();
        let inner = shared.wait_until(shared.lock(), deadline, |i| {
            accept(i.state) || i.state == State::Closed
        });
        inner.state
    }

    /// Waits up to `timeout` for an open connection: fails with [`SendError::Connecting`]
    /// when none came in time, [`SendError::Closed`] once closing or closed. (The futures
    /// adapter's `wait_open` takes no timeout: its caller races it with its runtime's.)
    pub fn wait_open(&self, timeout: Option<Duration>) -> Result<(), CallError> {
        let state = self.wait_for(timeout, |s| matches!(s, State::Open | State::Closing));
        match state {
            State::Open => Ok(()),
            State::Connecting => Err(CallError::Send(SendError::Connecting)),
            _ => Err(CallError::Send(SendError::Closed)),
        }
    }

    /// Calls `M` with the default deadline; not re-sent after a disconnect.
    pub fn call<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
    ) -> Result<M::Result, CallError> {
        self.call_with::<M>(params, Timeout::Default)
    }

    /// Calls `M`, marked idempotent: re-sent on the next connection under
    /// [`PendingPolicy::ResendIdempotent`] if the connection is lost before its answer.
    pub fn call_idempotent<
        M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>,
    >(
        &self,
        params: &M::Params,
    ) -> Result<M::Result, CallError> {
        self.call_with::<M>(params, CallOptions::idempotent())
    }

    /// Calls `M` with its own deadline (a [`Timeout`]) or options (a [`CallOptions`]:
    /// idempotent or not).
    pub fn call_with<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
        options: impl Into<CallOptions>,
    ) -> Result<M::Result, CallError> {
        let params = shared::encode(params)?;
        let raw = self.call_raw_with(M::NAME, params.as_deref(), options)?;
        shared::decode::<M>(&raw)
    }

    /// Calls `method` with raw params and the default deadline; not re-sent after a
    /// disconnect.
    pub fn call_raw(&self, method: &str, params: Option<&RawValue>) -> RawResult {
        self.call_raw_with(method, params, Timeout::Default)
    }

    /// Calls `method` with raw params and its own deadline or options.
    pub fn call_raw_with(
        &self,
        method: &str,
        params: Option<&RawValue>,
        options: impl Into<CallOptions>,
    ) -> RawResult {
        let CallOptions {
            timeout,
            idempotent,
        } = options.into();
        let shared = self.shared();
        loop {
            let (client, connection) = {
                let mut inner = shared.lock();
                inner.rc.admit().map_err(CallError::Send)?;
                let Some(client) = inner.client.clone() else {
                    return Err(CallError::Send(SendError::Connecting));
                };
                inner.rc.subscriptions().unsubscribing(method, params);
                (client, inner.connections)
            };
            match client.call_raw_with(method, params, timeout) {
                Err(e) if e.is_closed() && shared.resend(idempotent) => {
                    // Wait for the next connection (or the end) and send it again there.
                    let inner = shared.wait_until(shared.lock(), None, |i| {
                        (i.state == State::Open && i.connections > connection)
                            || matches!(i.state, State::Closing | State::Closed)
                    });
                    if inner.state != State::Open {
                        return Err(e);
                    }
                }
                Ok(result) => {
                    shared.lock().rc.subscriptions().subscribed(method, params);
                    return Ok(result);
                }
                // Refused unsent by a connection that just ended, before the supervisor
                // noticed: the client is reconnecting, not closed.
                Err(CallError::Send(SendError::Closed))
                    if !matches!(shared.lock().state, State::Closing | State::Closed) =>
                {
                    return Err(CallError::Send(SendError::Connecting))
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends notification `N` (never re-sent).
    pub fn notify<N: NotificationMethod<Params: serde::Serialize>>(
        &self,
        params: &N::Params,
    ) -> Result<(), CallError> {
        let params = shared::encode(params)?;
        self.notify_raw(N::NAME, params.as_deref())
    }

    /// Sends a notification with raw params (never re-sent).
    pub fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> Result<(), CallError> {
        let client = {
            let inner = self.shared().lock();
            inner.rc.admit().map_err(CallError::Send)?;
            match &inner.client {
                Some(client) => client.clone(),
                None => return Err(CallError::Send(SendError::Connecting)),
            }
        };
        client.notify_raw(method, params)
    }

    /// Closes the client: stops reconnecting, closes the connection (see
    /// [`Client::close`]: pending calls fail) and waits for the supervisor thread.
    pub fn close(&self) {
        close(&self.handle.shared, &self.handle.supervisor);
    }
}

fn close(shared: &Shared, supervisor: &Mutex<Option<JoinHandle<()>>>) {
    let client = {
        let mut inner = shared.lock();
        inner.rc.close();
        if inner.state != State::Closed {
            shared.set(&mut inner, State::Closing);
        }
        inner.client.take()
    };
    if let Some(client) = client {
        client.close();
    }
    let thread = supervisor.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(thread) = thread {
        if thread.thread().id() != thread::current().id() {
            let _ = thread.join();
        }
    }
    let mut inner = shared.lock();
    shared.set(&mut inner, State::Closed);
}

impl Shared {
    /// A call was lost with its connection: true when the reconnector has it wait for the
    /// next connection (idempotent, under the resend policy).
    fn resend(&self, idempotent: bool) -> bool {
        let mut inner = self.lock();
        inner.lost_calls += 1;
        let token = inner.lost_calls;
        inner.rc.call_lost(token, idempotent)
    }

    /// Publishes the reconnector's state to the callers. `Closed` is published by the
    /// supervisor on the action that ends it ([`Action::GiveUp`] records why first), so a
    /// caller that sees the client closed also sees why.
    fn follow(&self, inner: &mut Inner) {
        let state = inner.rc.state();
        if state != State::Closed {
            self.set(inner, state);
        }
    }
}

/// The supervisor thread: does what the reconnector asks (connect, open with replay, wait
/// for the connection to end, wait out the backoff), until it closes or gives up.
fn supervise(shared: &Shared) {
    let mut last = io::Error::new(io::ErrorKind::NotConnected, "never connected");
    let mut connected = None;
    loop {
        let action = shared.lock().rc.poll_action();
        match action {
            Some(Action::Connect) => {
                // The connector bounds the attempt by the connect timeout itself.
                let result = (shared.connector)(shared.policy.connect_timeout);
                let now = shared.now();
                let mut inner = shared.lock();
                match result {
                    Ok(client) if matches!(inner.rc.state(), State::Closing | State::Closed) => {
                        drop(inner);
                        client.close();
                    }
                    Ok(client) => {
                        connected = Some(client);
                        inner.rc.handle_connected(now);
                    }
                    Err(e) => {
                        last = e;
                        inner.rc.handle_failed(now);
                        shared.follow(&mut inner);
                    }
                }
            }
            Some(Action::Open) => {
                let Some(client) = connected.take() else {
                    continue;
                };
                let replay = shared.lock().rc.replay();
                for (method, params) in replay {
                    if let Err(CallError::Rpc(_)) = client.call_raw(method, Some(&params)) {
                        shared
                            .lock()
                            .rc
                            .subscriptions()
                            .refused(method, Some(&params));
                    }
                }
                {
                    let mut inner = shared.lock();
                    // The callers of lost idempotent calls send them again themselves, on
                    // seeing the next connection.
                    let _ = inner.rc.take_resend().count();
                    if matches!(inner.state, State::Closing | State::Closed) {
                        drop(inner);
                        client.close();
                        shared.lock().rc.handle_lost(shared.now());
                        continue;
                    }
                    inner.client = Some(client.clone());
                    inner.connections += 1;
                    shared.follow(&mut inner);
                }
                client.wait();
                let mut inner = shared.lock();
                inner.client = None;
                last = io::Error::new(io::ErrorKind::UnexpectedEof, "the connection was lost");
                inner.rc.handle_lost(shared.now());
                shared.follow(&mut inner);
            }
            Some(Action::GiveUp { attempts }) => {
                let mut inner = shared.lock();
                inner.gave_up = Some(GaveUp {
                    attempts,
                    kind: last.kind(),
                    error: last.to_string(),
                });
                shared.set(&mut inner, State::Closed);
                break;
            }
            Some(Action::Closed) => {
                let mut inner = shared.lock();
                shared.set(&mut inner, State::Closed);
                break;
            }
            // An attempt past the connect timeout: the connector already gave up on it.
            Some(_) => {}
            None => {
                let inner = shared.lock();
                if matches!(inner.state, State::Closing | State::Closed) {
                    break;
                }
                let deadline = inner
                    .rc
                    .poll_timeout()
                    .map(|t| shared.start + t.since_epoch());
                let mut inner = shared.wait_until(inner, deadline, |i| {
                    matches!(i.state, State::Closing | State::Closed)
                });
                inner.rc.handle_timeout(shared.now());
            }
        }
    }
}
