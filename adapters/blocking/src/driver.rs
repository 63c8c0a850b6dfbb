//! The driver thread: the only owner of a connection's [`Connection`] machine. It moves
//! bytes between the transport and the machine, sleeps until the machine's deadline, and
//! hands the peer's requests to the handler pool; every protocol rule is the core's.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant as StdInstant};

use sansrpc::codec::FrameError;
use sansrpc::connection::{self, Connection, Event};
use sansrpc::endpoint::IncomingId;
use sansrpc::ext::stream::{BoxSource, Demand, Produced};
use sansrpc::method::CallError;
use sansrpc::router::{Reply, Router};
use sansrpc::{ErrorObject, Instant, RawValue, Request};

use crate::pool::{join_by, Job, Pool};
use crate::{Config, Direction, Error, Tap};

/// What a caller waiting for a response is eventually given.
pub(crate) type Answer = Result<Box<RawValue>, Error>;

/// Callers waiting for answers, by the token their call (or batch) went out with and the
/// call's index in it.
#[derive(Default)]
pub(crate) struct Waiters {
    next: u64,
    waiting: BTreeMap<(u64, usize), Sender<Answer>>,
}

impl Waiters {
    /// A token for the next call or batch.
    pub(crate) fn token(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Waits for the answer of call `index` of `token`.
    pub(crate) fn insert(&mut self, token: u64, index: usize, tx: Sender<Answer>) {
        self.waiting.insert((token, index), tx);
    }

    fn answer(&mut self, token: u64, index: usize, answer: Answer) {
        if let Some(tx) = self.waiting.remove(&(token, index)) {
            // The caller may have given up; then nobody wants the answer.
            let _ = tx.send(answer);
        }
    }
}

/// An application call run on the driver thread, against the connection.
pub(crate) type Op = Box<dyn FnOnce(&mut Connection, Instant, &mut Waiters) + Send>;

/// How long output queued at close may take to reach the peer.
const LINGER: Duration = Duration::from_secs(1);

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
    /// A worker's batch of items from a stream's iterator, and the iterator back.
    Produced { stream: u64, batch: Batch },
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

/// Stream items produced per turn of the driver, so a fast stream cannot starve the rest.
const ITEMS_PER_TURN: usize = 4096;

/// Most items a worker takes from a stream's iterator per turn, however many the pulls
/// want.
const ITEMS_PER_TURN_OF_WORKER: u64 = 4096;

/// Items a worker took from a stream's iterator (JSON, back to back), handed over as each
/// pull's worth is complete; the last one gives back the iterator unless it ended.
pub(crate) struct Batch {
    buf: Vec<u8>,
    ends: Vec<usize>,
    end: Option<Produced>,
    /// `Some` on the last batch of a turn, when the iterator goes on.
    source: Option<BoxSource>,
    last: bool,
}

/// A worker's turn with a stream's iterator: takes what the queued pulls want, and hands
/// over the front pull's worth as soon as it is complete (the next item may take long: the
/// iterator may block).
fn work_stream(mut source: BoxSource, demand: Demand, mut send: impl FnMut(Batch) -> bool) {
    let total = demand.total.clamp(1, ITEMS_PER_TURN_OF_WORKER);
    let front = u64::from(demand.front);
    let (mut taken, mut buf, mut ends) = (0, Vec::new(), Vec::new());
    while taken < total {
        let next =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| source.next_item(&mut buf)));
        match next.unwrap_or_else(|_| Produced::Error(ErrorObject::internal_error())) {
            Produced::Item => {
                ends.push(buf.len());
                taken += 1;
                if taken == front && taken < total {
                    let full = Batch {
                        buf: std::mem::take(&mut buf),
                        ends: std::mem::take(&mut ends),
                        end: None,
                        source: None,
                        last: false,
                    };
                    if !send(full) {
                        return; // The connection is gone.
                    }
                }
            }
            // An iterator is never pending; treat it as a pause.
            Produced::Pending => break,
            done => {
                send(Batch {
                    buf,
                    ends,
                    end: Some(done),
                    source: None,
                    last: true,
                });
                return;
            }
        }
    }
    send(Batch {
        buf,
        ends,
        end: None,
        source: Some(source),
        last: true,
    });
}

/// A served stream's producer: its iterator (or lent to a worker), and the items a worker
/// gathered, handed out one at a time.
pub(crate) struct Lent {
    source: Option<BoxSource>,
    /// A worker has the iterator.
    lent: bool,
    buf: Vec<u8>,
    ends: VecDeque<usize>,
    /// Where the next item starts in `buf`.
    start: usize,
    end: Option<Produced>,
}

impl Lent {
    fn new(source: BoxSource) -> Lent {
        Lent {
            source: Some(source),
            lent: false,
            buf: Vec::new(),
            ends: VecDeque::new(),
            start: 0,
            end: None,
        }
    }

    /// The next item gathered, the end, or `None` when there is nothing (yet).
    fn take(&mut self, out: &mut Vec<u8>) -> Option<Produced> {
        if let Some(end) = self.ends.pop_front() {
            out.extend_from_slice(&self.buf[self.start..end]);
            self.start = end;
            return Some(Produced::Item);
        }
        self.end.take()
    }

    fn receive(&mut self, batch: Batch) {
        if self.ends.is_empty() {
            self.buf.clear();
            self.start = 0;
        }
        let offset = self.buf.len();
        self.buf.extend_from_slice(&batch.buf);
        self.ends.extend(batch.ends.iter().map(|e| e + offset));
        if batch.last {
            self.lent = false;
            self.source = batch.source;
            self.end = batch.end;
        }
    }
}

thread_local! {
    static CANCELLED: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
    static CONNECTION: RefCell<Option<Sender<Cmd>>> = const { RefCell::new(None) };
}

/// Reports progress from inside a request handler, to the peer of the connection the
/// request came on, with the connection's progress method and profile (LSP `$/progress
/// {token, value}`, MCP `notifications/progress {progressToken, …}`; the token is the one
/// the peer put in its request). False outside a handler or once the connection is gone.
/// The peer may extend the request's deadline on it.
pub fn report_progress(token: &sansrpc::Id<'_>, value: &RawValue) -> bool {
    let (token, value) = (token.to_owned_id(), value.to_owned());
    CONNECTION.with(|c| {
        c.borrow().as_ref().is_some_and(|me| {
            let op: Op = Box::new(move |conn, _, _| {
                let _ = conn.send_progress(&token, &value);
            });
            me.send(Cmd::With(op)).is_ok()
        })
    })
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
    let mut machine = connection::Config::new(config.endpoint.clone());
    machine.endpoint.framing = Some(config.framing);
    machine.streams = config.streams;
    machine.heartbeat = config.heartbeat;
    machine.end_grace = config.shutdown_grace;
    machine.linger = LINGER;
    let mut conn = Connection::new(machine, Instant::ZERO);
    // Extension: per-connection hook (pub/sub), woken through the driver's channel.
    if let Some(extension) = &config.extension {
        conn.set_hook(crate::extension::open(extension, me.clone()));
    }
    let driver = Driver {
        conn,
        start: StdInstant::now(),
        cmds,
        me: me.clone(),
        writer: None,
        out: Vec::new(),
        inputs: VecDeque::new(),
        free: None,
        waiters: Waiters::default(),
        inflight: BTreeMap::new(),
        lent: BTreeMap::new(),
        router: handlers.router,
        jobs: handlers.jobs,
        closed: Arc::new(AtomicBool::new(false)),
        eof: false,
        grace: config.shutdown_grace,
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
    conn: Connection,
    /// The epoch of the connection's clock.
    start: StdInstant,
    cmds: Receiver<Cmd>,
    /// Handed to handler jobs, for their answers.
    me: Sender<Cmd>,
    writer: Option<Box<dyn Write + Send>>,
    out: Vec<u8>,
    /// Chunks read and not yet taken by the connection, with how much of each it took.
    inputs: VecDeque<(Vec<u8>, usize)>,
    /// Returns consumed chunks to the reader; the reader reads only with a chunk in hand.
    free: Option<SyncSender<Vec<u8>>>,
    waiters: Waiters,
    /// The peer's requests on the handler pool, with their cancellation flags.
    inflight: BTreeMap<IncomingId, Arc<AtomicBool>>,
    /// The producers of the streams this connection serves; their iterators run on the
    /// handler pool.
    lent: BTreeMap<u64, Lent>,
    router: Arc<Router>,
    jobs: Option<Sender<Job>>,
    /// Set once the connection is closed: queued jobs of this connection are skipped.
    closed: Arc<AtomicBool>,
    /// The reader saw the end of the input.
    eof: bool,
    grace: Duration,
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
            self.conn.close(self.now());
        }

        while !self.conn.is_finished() {
            self.step();
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

    /// One turn: timeouts and input in, output and events out, then wait for the next
    /// command or deadline.
    fn step(&mut self) {
        let now = self.now();
        if self.conn.poll_timeout().is_some_and(|d| d <= now) {
            self.conn.handle_timeout(now);
        }
        self.feed(now);
        if self.eof && self.inputs.is_empty() {
            self.conn.handle_end_of_input(now);
        }
        self.pump(now);
        let producing = self.produce(now);
        if self.conn.is_finished() {
            return;
        }
        if (!self.inputs.is_empty() && self.conn.wants_input()) || producing {
            // Input was pushed back (draining the events made room for it), or a stream
            // has more to produce: no waiting.
            return;
        }
        let wait = self
            .conn
            .poll_timeout()
            .map(|t| t.saturating_duration_since(now));
        let cmd = match wait {
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

    fn command(&mut self, cmd: Cmd) {
        let now = self.now();
        match cmd {
            Cmd::Input(chunk) => self.inputs.push_back((chunk, 0)),
            // Told once the input read before it is taken.
            Cmd::Eof => self.eof = true,
            Cmd::With(op) => op(&mut self.conn, now, &mut self.waiters),
            Cmd::Respond { id, mut reply } => {
                if self.inflight.remove(&id).is_some() {
                    reply.answer(&mut self.conn, id);
                }
            }
            Cmd::Produced { stream, batch } => {
                // Nothing to do when the stream was freed meanwhile: its iterator drops here.
                if let Some(lent) = self.lent.get_mut(&stream) {
                    lent.receive(batch);
                }
            }
            Cmd::Shutdown => {
                self.inputs.clear();
                // Handlers in flight get the grace; their flags go up at teardown.
                self.conn.shutdown(self.grace, now);
            }
            // The connection drains its extension with its events, this turn.
            Cmd::Wake => {}
        }
    }

    /// Offers pending input, oldest first, until the connection pushes back.
    fn feed(&mut self, now: Instant) {
        while let Some((chunk, taken)) = self.inputs.front_mut() {
            match self.conn.handle_input(&chunk[*taken..], now) {
                Ok(n) => *taken += n,
                // This driver builds framed connections only; were one not, its input
                // could not be read at all: end the connection rather than spin.
                Err(_) => {
                    self.inputs.clear();
                    self.conn.close(now);
                    return;
                }
            }
            if *taken < chunk.len() {
                return;
            }
            if let (Some((chunk, _)), Some(free)) = (self.inputs.pop_front(), &self.free) {
                let _ = free.try_send(chunk);
            }
        }
    }

    /// Takes items from the streams' iterators for the pulls waiting, and writes the
    /// answers. True when some stream still has more to produce right now.
    fn produce(&mut self, now: Instant) -> bool {
        if !self.conn.wants_items() {
            return false;
        }
        let (jobs, me, closed, lent) = (&self.jobs, &self.me, &self.closed, &mut self.lent);
        let mut inline = Vec::new();
        let taken = self
            .conn
            .produce(now, ITEMS_PER_TURN, |stream, out, demand| {
                let Some(lent) = lent.get_mut(&stream) else {
                    return Produced::End;
                };
                if let Some(produced) = lent.take(out) {
                    return produced;
                }
                if lent.lent {
                    return Produced::Pending; // A worker has it: its batch will wake us.
                }
                let Some(source) = lent.source.take() else {
                    return Produced::Pending;
                };
                lent.lent = true;
                let (me, closed) = (me.clone(), Arc::clone(closed));
                let job: Job = Box::new(move || {
                    if !closed.load(Ordering::Relaxed) {
                        work_stream(source, demand, |batch| {
                            me.send(Cmd::Produced { stream, batch }).is_ok()
                                && !closed.load(Ordering::Relaxed)
                        });
                    }
                });
                match jobs {
                    Some(jobs) => {
                        if let Err(mpsc::SendError(job)) = jobs.send(job) {
                            inline.push(job); // The pool is gone: run it here.
                        }
                    }
                    None => inline.push(job),
                }
                Produced::Pending
            });
        for job in inline {
            job();
        }
        self.pump(now);
        taken > 0 && self.conn.wants_items()
    }

    /// Writes the output and routes the events, until neither is left.
    fn pump(&mut self, now: Instant) {
        loop {
            let routed = self.events();
            self.flush(now);
            if !routed {
                break;
            }
        }
    }

    /// Writes everything the connection has to transmit; a failed write closes it.
    fn flush(&mut self, now: Instant) {
        while self.conn.poll_transmit(&mut self.out).is_some() {}
        if self.out.is_empty() {
            self.conn.handle_write(false, false, now);
            return;
        }
        let (mut written, had_writer) = (0, self.writer.is_some());
        self.conn.handle_write(false, true, now);
        while let Some(w) = &mut self.writer {
            if written == self.out.len() {
                let _ = w.flush();
                break;
            }
            // A socket's write times out at the write-stall timeout; the connection decides.
            match w.write(&self.out[written..]) {
                Ok(0) => self.writer = None,
                Ok(n) => {
                    written += n;
                    let pending = written < self.out.len();
                    self.conn.handle_write(true, pending, self.now());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    let now = self.now();
                    self.conn.handle_write(false, true, now);
                    self.conn.handle_timeout(now);
                    if self.conn.is_closed() {
                        self.writer = None;
                    }
                }
                Err(_) => self.writer = None,
            }
        }
        if had_writer && self.writer.is_none() && !self.conn.is_closed() {
            self.conn.close(now);
        }
        self.conn.handle_write(false, false, now);
        self.out.clear();
    }

    /// Routes every queued event; false when there was none.
    fn events(&mut self) -> bool {
        let mut any = false;
        // Batch sizes for the router's layers (metrics), before the batch's calls run.
        self.router.observe_connection_batches(&mut self.conn);
        let now = self.now();
        // Checked before a stream method's handler runs, so a flood of opens builds nothing.
        let mut room = self.conn.stream_room();
        while let Some(event) = self.conn.poll_event() {
            any = true;
            match event {
                Event::Request { handle, request } => {
                    if !self.router.is_stream_method(&request.method) {
                        let request = request.into_owned();
                        self.request(handle, request);
                        continue;
                    }
                    if room == 0 {
                        self.conn.refuse_stream(handle);
                        continue;
                    }
                    // Built here: the handler only makes the iterator; a worker runs it.
                    let params = request.params.as_deref();
                    let open = || self.router.open_stream(&request.method, params);
                    let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(open))
                        .unwrap_or_else(|_| Some(Err(ErrorObject::internal_error())));
                    match opened {
                        Some(Ok(source)) => {
                            if let Some(stream) = self.conn.open_stream(handle, now) {
                                self.lent.insert(stream, Lent::new(source));
                                room = room.saturating_sub(1);
                            }
                        }
                        Some(Err(e)) => self.conn.respond(handle, Err(&e)),
                        None => {}
                    }
                }
                // Here, in arrival order: its effects are visible to every request that
                // arrived after it (LSP's didChange before completion).
                Event::Notification(n) => self.router.notify(&n),
                Event::Answer {
                    token,
                    index,
                    result,
                    ..
                } => {
                    let answer = match result {
                        Ok(raw) => Ok(raw.into_owned()),
                        Err(e) => Err(Error::Call(CallError::Rpc(e.into_owned()))),
                    };
                    self.waiters.answer(token, index, answer);
                }
                Event::Ended {
                    token,
                    index,
                    reason,
                    ..
                } => {
                    let answer = Err(Error::Call(CallError::Ended(reason)));
                    self.waiters.answer(token, index, answer);
                }
                Event::Cancel { handle } => {
                    if let Some(flag) = self.inflight.get(&handle) {
                        flag.store(true, Ordering::Relaxed);
                    }
                }
                Event::StreamClosed { stream } => {
                    self.lent.remove(&stream);
                    room += 1;
                }
                Event::Closed { .. } => {
                    self.lent.clear();
                    self.closed.store(true, Ordering::Relaxed);
                }
                Event::Other(sansrpc::endpoint::Event::FrameError(
                    e @ FrameError::WrongFraming { .. },
                )) => {
                    tracing::warn!("sansrpc: {e}");
                }
                // Other framing faults, refused frames, stray responses: the connection
                // answered whatever needed an answer, and a caller has nothing to do.
                _ => {}
            }
        }
        any
    }

    /// Hands a request to the handler pool, or answers it here when there is none.
    fn request(&mut self, handle: IncomingId, request: Request<'static>) {
        let mut reply = Reply::default();
        let Some(jobs) = &self.jobs else {
            self.router.dispatch(&request, &mut reply);
            reply.answer(&mut self.conn, handle);
            return;
        };
        let flag = Arc::new(AtomicBool::new(false));
        self.inflight.insert(handle, Arc::clone(&flag));
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
            CONNECTION.with(|c| *c.borrow_mut() = Some(me.clone()));
            router.dispatch(&request, &mut reply);
            CANCELLED.with(|c| *c.borrow_mut() = None);
            CONNECTION.with(|c| *c.borrow_mut() = None);
            let _ = me.send(Cmd::Respond { id: handle, reply });
        });
        if jobs.send(job).is_err() {
            // The pool is gone: a server shutting down.
            self.inflight.remove(&handle);
            self.conn
                .respond(handle, Err(&ErrorObject::internal_error()));
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
