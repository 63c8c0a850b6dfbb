//! The driver thread: the only owner of a connection's [`Endpoint`], run by its calling
//! contract.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant as StdInstant};

use sansrpc::endpoint::{Endpoint, Event, IncomingId, RequestId};
use sansrpc::method::CallError;
use sansrpc::router::{Reply, Router};
use sansrpc::{ErrorObject, Instant, RawValue, Request};

use crate::extension::Slot;
use crate::pool::{join_by, Job, Pool};
use crate::{Config, Direction, Error, Tap};

/// What a caller waiting for a response is eventually given.
pub(crate) type Answer = Result<Box<RawValue>, Error>;
/// Callers waiting for a response, by the id of their request.
pub(crate) type Waiters = BTreeMap<RequestId, Sender<Answer>>;
/// An application call run on the driver thread, against the endpoint.
pub(crate) type Op = Box<dyn FnOnce(&mut Endpoint, Instant, &mut Waiters) + Send>;

/// Everything the driver is told, by the reader, the clients and the handler workers.
pub(crate) enum Cmd {
    /// Bytes from the transport.
    Input(Vec<u8>),
    /// The transport's input ended (or failed).
    Eof,
    /// Send a request, a notification or a batch.
    With(Op),
    /// A handler's answer to a request.
    Respond { id: IncomingId, reply: Reply },
    /// Close gracefully.
    Shutdown,
    /// The connection's extension has notifications to send.
    Wake,
}

/// A byte stream, and how to unblock its reader once we are done with it.
pub(crate) struct Transport {
    pub reader: Box<dyn Read + Send>,
    pub writer: Box<dyn Write + Send>,
    /// Run after the writer is dropped; must make the reader's `read` return (shut a socket
    /// down, reap a child process).
    pub close: Box<dyn FnOnce() + Send>,
    /// False when nothing can unblock the reader (the process's stdin): it is left behind.
    pub join_reader: bool,
}

/// What runs the peer's requests and notifications.
pub(crate) struct Handlers {
    pub router: Arc<Router>,
    /// A handler pool's queue; `None` runs the router on the driver thread, which only an
    /// empty router (a client's) may do.
    pub jobs: Option<Sender<Job>>,
    /// A pool of this connection's own, shut down with it.
    pub pool: Option<Pool>,
}

impl Handlers {
    /// For a connection that serves nothing: every request is answered "Method not found".
    pub fn none() -> Handlers {
        let mut router = Router::new();
        router.extensions(false);
        Handlers {
            router: Arc::new(router),
            jobs: None,
            pool: None,
        }
    }

    /// For a connection with a pool of its own.
    pub fn own_pool(router: Arc<Router>, workers: usize) -> io::Result<Handlers> {
        let pool = Pool::new(workers)?;
        Ok(Handlers {
            router,
            jobs: Some(pool.sender()),
            pool: Some(pool),
        })
    }
}

thread_local! {
    static CANCELLED: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// True when the request the current thread's handler is answering was cancelled: by the
/// peer (its cancellation notification arrived), or because the connection is closing. A
/// long handler checks it now and then and returns early (typically with an error object);
/// whatever it returns is still sent if the connection is open. False outside a handler.
pub fn is_cancelled() -> bool {
    CANCELLED.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    })
}

/// Hands a copy of what passes through to a [`Tap`].
struct Tapped<T> {
    inner: T,
    tap: Tap,
}

impl<R: Read> Read for Tapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.tap.see(Direction::Received, &buf[..n]);
        Ok(n)
    }
}

impl<W: Write> Write for Tapped<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.tap.see(Direction::Sent, &buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Starts a connection's driver thread, which starts its reader thread.
pub(crate) fn spawn(
    mut transport: Transport,
    handlers: Handlers,
    config: &Config,
) -> io::Result<(Sender<Cmd>, JoinHandle<()>)> {
    if let Some(tap) = &config.tap {
        let (reader, writer) = (transport.reader, transport.writer);
        transport.reader = Box::new(Tapped {
            inner: reader,
            tap: tap.clone(),
        });
        transport.writer = Box::new(Tapped {
            inner: writer,
            tap: tap.clone(),
        });
    }
    let (me, cmds) = mpsc::channel();
    let mut endpoint = config.endpoint.clone();
    endpoint.framing = Some(config.framing);
    let driver = Driver {
        ep: Endpoint::new(endpoint),
        start: StdInstant::now(),
        cmds,
        me: me.clone(),
        writer: None,
        out: Vec::new(),
        inputs: VecDeque::new(),
        free: None,
        waiters: BTreeMap::new(),
        inflight: BTreeMap::new(),
        router: handlers.router,
        jobs: handlers.jobs,
        closed: Arc::new(AtomicBool::new(false)),
        eof: false,
        shutdown: false,
        closing: None,
        done: false,
        grace: config.shutdown_grace,
        // Extension: per-connection hook (pub/sub).
        ext: config.extension.as_ref().map(|e| Slot::open(e, me.clone())),
    };
    let (size, buffers, pool) = (
        config.read_size.max(1),
        config.read_buffers.max(1),
        handlers.pool,
    );
    let thread = thread::Builder::new()
        .name("rpc-driver".into())
        .spawn(move || driver.run(transport, size, buffers, pool))?;
    Ok((me, thread))
}

struct Driver {
    ep: Endpoint,
    /// The epoch of the endpoint's clock.
    start: StdInstant,
    cmds: Receiver<Cmd>,
    /// Handed to handler jobs, for their answers.
    me: Sender<Cmd>,
    writer: Option<Box<dyn Write + Send>>,
    out: Vec<u8>,
    /// Chunks read and not yet taken by the endpoint, with how much of each it took.
    inputs: VecDeque<(Vec<u8>, usize)>,
    /// Returns consumed chunks to the reader; the reader reads only with a chunk in hand.
    free: Option<SyncSender<Vec<u8>>>,
    waiters: Waiters,
    /// The peer's requests being handled, with their cancellation flags.
    inflight: BTreeMap<IncomingId, Arc<AtomicBool>>,
    router: Arc<Router>,
    jobs: Option<Sender<Job>>,
    /// Set once the connection is closed: queued jobs of this connection are skipped.
    closed: Arc<AtomicBool>,
    eof: bool,
    shutdown: bool,
    /// When closing started, the moment handlers in flight run out of time.
    closing: Option<StdInstant>,
    /// The endpoint reported `Closed`.
    done: bool,
    grace: Duration,
    /// The connection's extension (pub/sub), offered requests before the router.
    ext: Option<Slot>,
}

impl Driver {
    fn run(mut self, transport: Transport, size: usize, buffers: usize, pool: Option<Pool>) {
        let (free, chunks) = mpsc::sync_channel(buffers);
        for _ in 0..buffers {
            let _ = free.try_send(Vec::with_capacity(size));
        }
        self.free = Some(free);
        self.writer = Some(transport.writer);
        let (reader, tx) = (transport.reader, self.me.clone());
        let reader = thread::Builder::new()
            .name("rpc-reader".into())
            .spawn(move || read(reader, &tx, &chunks, size));
        if reader.is_err() {
            self.ep.close(self.now());
        }

        while !self.done {
            self.step();
        }

        // Extension: the connection is over.
        if let Some(ext) = &mut self.ext {
            ext.close();
        }
        // Teardown: nothing answered from here on is wanted.
        self.closed.store(true, Ordering::Relaxed);
        self.inflight
            .values()
            .for_each(|f| f.store(true, Ordering::Relaxed));
        let deadline = StdInstant::now() + self.grace;
        self.writer = None;
        (transport.close)();
        self.free = None;
        if let (Ok(reader), true) = (reader, transport.join_reader) {
            let _ = join_by(reader, deadline);
        }
        self.jobs = None;
        if let Some(pool) = pool {
            pool.shutdown(deadline);
        }
    }

    fn now(&self) -> Instant {
        Instant::from_duration(self.start.elapsed())
    }

    /// One turn of the calling contract: input and timeouts in, output and events out, then
    /// wait for the next command or deadline.
    fn step(&mut self) {
        let now = self.now();
        self.ep.handle_timeout(now);
        self.feed(now);
        self.pump(now);
        // After the events: a request they carried is in flight, not forgotten.
        if self.try_close(now) {
            self.pump(now);
        }
        if self.done {
            return;
        }
        if !self.inputs.is_empty() && !self.shutdown {
            // Input was pushed back; draining the events made room for it.
            return;
        }
        let cmd = match self.wait(now) {
            None => self.cmds.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(wait) => self.cmds.recv_timeout(wait),
        };
        // The driver holds a sender itself, so the channel never disconnects.
        if let Ok(cmd) = cmd {
            self.command(cmd);
            while let Ok(cmd) = self.cmds.try_recv() {
                self.command(cmd);
            }
        }
    }

    /// How long to wait for a command: until the endpoint's next deadline, or until
    /// handlers in flight run out of time.
    fn wait(&self, now: Instant) -> Option<Duration> {
        let timer = self.ep.poll_timeout().map(|t| t - now);
        let closing = self
            .closing
            .map(|c| c.saturating_duration_since(StdInstant::now()));
        match (timer, closing) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn command(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Input(chunk) => self.inputs.push_back((chunk, 0)),
            Cmd::Eof => {
                self.eof = true;
                self.begin_closing();
            }
            Cmd::With(op) => {
                let now = self.now();
                op(&mut self.ep, now, &mut self.waiters);
            }
            Cmd::Respond { id, mut reply } => {
                if self.inflight.remove(&id).is_some() {
                    // Fails only once the endpoint closed, when no answer is wanted.
                    let _ = reply.send(&mut self.ep, id);
                }
            }
            Cmd::Shutdown => {
                self.shutdown = true;
                self.begin_closing();
            }
            // Extension: `pump` drains it on this turn.
            Cmd::Wake => {}
        }
    }

    fn begin_closing(&mut self) {
        let grace = self.grace;
        self.closing
            .get_or_insert_with(|| StdInstant::now() + grace);
    }

    /// Offers pending input, oldest first, until the endpoint pushes back.
    fn feed(&mut self, now: Instant) {
        if self.shutdown {
            return;
        }
        while let Some((chunk, taken)) = self.inputs.front_mut() {
            *taken += self.ep.handle_input(&chunk[*taken..], now);
            if *taken < chunk.len() {
                return;
            }
            if let (Some((chunk, _)), Some(free)) = (self.inputs.pop_front(), &self.free) {
                let _ = free.try_send(chunk);
            }
        }
    }

    /// Writes the output and routes the events, until neither is left.
    fn pump(&mut self, now: Instant) {
        loop {
            self.flush(now);
            // Extension: its notifications, as much as the output takes, then written.
            if self.ext.as_mut().is_some_and(|ext| ext.drain(&mut self.ep)) {
                continue;
            }
            if !self.events() {
                break;
            }
        }
    }

    /// Closes the endpoint once closing started, the input that came before the end is
    /// taken, and the handlers in flight have answered or run out of time. True when it
    /// closed it.
    fn try_close(&mut self, now: Instant) -> bool {
        let Some(deadline) = self.closing else {
            return false;
        };
        if self.ep.is_closed() || !(self.shutdown || self.inputs.is_empty()) {
            return false;
        }
        if !self.inflight.is_empty() && StdInstant::now() < deadline {
            return false;
        }
        if self.shutdown {
            self.ep.close(now);
        } else {
            self.ep.handle_end_of_input(now);
        }
        true
    }

    /// Writes everything the endpoint has to transmit; a failed write closes it.
    fn flush(&mut self, now: Instant) {
        while self.ep.poll_transmit(&mut self.out).is_some() {}
        if self.out.is_empty() {
            return;
        }
        if let Some(w) = &mut self.writer {
            if w.write_all(&self.out).and_then(|()| w.flush()).is_err() {
                self.writer = None;
                self.ep.close(now);
            }
        }
        self.out.clear();
    }

    /// Routes every queued event; false when there was none.
    fn events(&mut self) -> bool {
        let mut any = false;
        while let Some(event) = self.ep.poll_event() {
            any = true;
            match event {
                Event::Request { id, request } => {
                    let request = request.into_owned();
                    // Extension: offered the request before the router.
                    if let Some(ext) = &mut self.ext {
                        if ext.offer(&mut self.ep, id, &request) {
                            continue;
                        }
                    }
                    self.request(id, request);
                }
                // Here, in arrival order: its effects are visible to every request that
                // arrived after it (LSP's didChange before completion).
                Event::Notification(n) => self.router.notify(&n),
                Event::Response { id, result } => {
                    let answer = match result {
                        Ok(raw) => Ok(raw.into_owned()),
                        Err(e) => Err(Error::Call(CallError::Rpc(e.into_owned()))),
                    };
                    self.answer(id, answer);
                }
                Event::Ended { id, reason } => {
                    self.answer(id, Err(Error::Call(CallError::Ended(reason))));
                }
                Event::PeerCancelled { id } => {
                    if let Some(flag) = self.inflight.get(&id) {
                        flag.store(true, Ordering::Relaxed);
                    }
                }
                Event::Closed => self.done = true,
                // Framing faults, refused frames, stray responses: the endpoint answered
                // whatever needed an answer, and a caller has nothing to do about them.
                _ => {}
            }
        }
        any
    }

    fn answer(&mut self, id: RequestId, answer: Answer) {
        if let Some(waiter) = self.waiters.remove(&id) {
            // The caller may have given up; then nobody wants the answer.
            let _ = waiter.send(answer);
        }
    }

    /// Hands a request to the handler pool, or answers it here when there is none.
    fn request(&mut self, id: IncomingId, request: Request<'static>) {
        let mut reply = Reply::default();
        let Some(jobs) = &self.jobs else {
            self.router.dispatch(&request, &mut reply);
            let _ = reply.send(&mut self.ep, id);
            return;
        };
        let flag = Arc::new(AtomicBool::new(false));
        self.inflight.insert(id, Arc::clone(&flag));
        let (router, closed, me) = (
            Arc::clone(&self.router),
            Arc::clone(&self.closed),
            self.me.clone(),
        );
        let job: Job = Box::new(move || {
            if closed.load(Ordering::Relaxed) {
                return;
            }
            CANCELLED.with(|c| *c.borrow_mut() = Some(flag));
            router.dispatch(&request, &mut reply);
            CANCELLED.with(|c| *c.borrow_mut() = None);
            let _ = me.send(Cmd::Respond { id, reply });
        });
        if jobs.send(job).is_err() {
            // The pool is gone: a server shutting down.
            self.inflight.remove(&id);
            let _ = self.ep.respond(id, Err(&ErrorObject::internal_error()));
        }
    }
}

/// The reader thread: reads only with a free chunk in hand, so it stays at most the
/// driver's chunk count ahead of the endpoint.
fn read(mut reader: Box<dyn Read + Send>, tx: &Sender<Cmd>, free: &Receiver<Vec<u8>>, size: usize) {
    while let Ok(mut chunk) = free.recv() {
        chunk.resize(size, 0);
        let n = loop {
            match reader.read(&mut chunk) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A read error ends the input as the end of the stream does.
                result => break result.unwrap_or(0),
            }
        };
        if n == 0 {
            break;
        }
        chunk.truncate(n);
        if tx.send(Cmd::Input(chunk)).is_err() {
            return;
        }
    }
    let _ = tx.send(Cmd::Eof);
}
