//! The driver thread: the only owner of a connection's [`Connection`] machine. It moves
//! bytes between the transport and the machine, sleeps until the machine's deadline, and
//! hands the peer's requests to the handler pool; every protocol rule is the core's.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant as StdInstant};

use sansrpc::client::{Answered, Callers, RawResult};
use sansrpc::connection::Connection;
use sansrpc::connection::IncomingId;
use sansrpc::driver::StreamIo;
use sansrpc::method::CallError;
use sansrpc::router::{Reply, Router};
use sansrpc::Instant;
use sansrpc_runtime::calls::Answer;
use sansrpc_runtime::subscriptions::{Hub, Served, Subscribed};

mod dispatch;

pub(crate) use dispatch::Handlers;
pub use dispatch::{Cancelled, NotificationContext, RequestContext};

use crate::client::Link;
use crate::pool::{join_by, Job, Pool};
use crate::transport::{read, Tapped, Transport};
use crate::worker::{Batch, Lent};
use crate::Options;

/// The callers waiting for answers, by the token their call (or batch) went out with.
#[derive(Default)]
pub(crate) struct Waiters {
    next: u64,
    pub callers: Callers<Sender<RawResult>, Sender<Result<Vec<RawResult>, CallError>>>,
    /// Our method subscriptions: their routes and inboxes (the core's).
    pub subs: Subscribed,
}

impl Waiters {
    /// A token for the next call or batch.
    pub(crate) fn token(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Gives `answer` to whoever waits for it ([`Answer::hand_over`]); the caller may have
    /// given up, and then nobody wants it.
    fn hand_over(&mut self, conn: &mut Connection, answer: Answer, now: Instant) {
        match answer.hand_over(conn, &mut self.subs, &mut self.callers, now) {
            Some(Answered::Call(tx, result)) => drop(tx.send(result)),
            Some(Answered::Batch(tx, results)) => drop(tx.send(Ok(results))),
            None => {}
        }
    }
}

/// An application call run on the driver thread, against the connection.
pub(crate) type Op = Box<dyn FnOnce(&mut Connection, Instant, &mut Waiters) + Send>;

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

/// The channel of a connection's driver: its handles' end, and the driver's.
pub(crate) fn channel() -> (Sender<Cmd>, Receiver<Cmd>) {
    mpsc::channel()
}

/// Starts a connection's driver thread, which starts its reader thread; `cmds` is the
/// driver's end of the channel of `link`.
pub(crate) fn spawn(
    mut transport: Transport,
    handlers: Handlers,
    config: &Options,
    link: Arc<Link>,
    cmds: Receiver<Cmd>,
) -> io::Result<JoinHandle<()>> {
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
    let me = link.cmds.clone();
    let machine = config.connection.clone().for_transport(false);
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
        io: StreamIo::for_chunks(),
        free: None,
        waiters: Waiters::default(),
        inflight: BTreeMap::new(),
        lent: BTreeMap::new(),
        served: Served::new(Hub::new({
            // Sinks and handlers on other threads wake the driver through its channel.
            let me = me.clone();
            move || drop(me.send(Cmd::Wake))
        })),
        router: handlers.router,
        jobs: handlers.jobs,
        closed: Arc::new(AtomicBool::new(false)),
        link,
        grace: config.connection.end_grace,
        on_event: config.on_event.clone(),
    };
    let (size, buffers, pool) = (
        config.read_size.max(1),
        config.read_buffers.max(1),
        handlers.pool,
    );
    let thread = thread::Builder::new()
        .name("rpc-driver".into())
        .spawn(move || driver.run(transport, size, buffers, pool))?;
    Ok(thread)
}

struct Driver {
    conn: Connection,
    /// The epoch of the connection's clock.
    start: StdInstant,
    cmds: Receiver<Cmd>,
    /// Handed to handler jobs, for their answers.
    me: Sender<Cmd>,
    writer: Option<Box<dyn Write + Send>>,
    /// The chunks read and not yet taken by the connection, the end of input after them,
    /// and the write bookkeeping: the core's byte-stream helper.
    io: StreamIo,
    /// Returns consumed chunks to the reader; the reader reads only with a chunk in hand.
    free: Option<SyncSender<Vec<u8>>>,
    waiters: Waiters,
    /// The peer's requests on the handler pool, with their cancellation flags.
    inflight: BTreeMap<IncomingId, Arc<AtomicBool>>,
    /// The producers of the streams this connection serves; their iterators run on the
    /// handler pool.
    lent: BTreeMap<u64, Lent>,
    /// The method subscriptions this connection serves (the core's table).
    served: Served,
    router: Arc<Router>,
    jobs: Option<Sender<Job>>,
    /// Set once the connection is closed: queued jobs of this connection are skipped.
    closed: Arc<AtomicBool>,
    /// What the connection's handles share: its per-connection values, its exit status,
    /// whether it is closed.
    link: Arc<Link>,
    grace: Duration,
    /// [`Options::on_event`](crate::Options::on_event).
    on_event: Option<crate::EventHook>,
}

impl Driver {
    fn run(mut self, transport: Transport, size: usize, buffers: usize, pool: Option<Pool>) {
        dispatch::driving(&self.link);
        let (free, chunks) = mpsc::sync_channel(buffers);
        for _ in 0..buffers {
            // Allocated by the reader as the traffic needs (up to `size`).
            let _ = free.try_send(Vec::new());
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
        if let Some(code) = self.conn.exit_code() {
            self.link.exit.store(i64::from(code), Ordering::SeqCst);
        }
        self.link.closed.store(true, Ordering::Relaxed);
        self.inflight
            .values()
            .for_each(|f| f.store(true, Ordering::Relaxed));
        let deadline = StdInstant::now() + self.grace;
        self.writer = None;
        (transport.close)(self.conn.resets_on_close());
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
        // First what the sinks handed over before the input of this turn came: a
        // subscription its server ended is over before an unsubscribe read after it.
        let pushing = self.push(now);
        self.io.feed(&mut self.conn, now);
        // Chunks consumed go back to the reader, which reads only into one it holds.
        while let (Some(chunk), Some(free)) = (self.io.take_spare(), &self.free) {
            let _ = free.try_send(chunk);
        }
        self.pump(now);
        let producing = self.produce(now);
        if self.conn.is_finished() {
            return;
        }
        if self.io.interest(&mut self.conn).again || producing || pushing {
            // Input was held back (draining the events made room for it), or a stream or
            // a subscription has more to send: no waiting.
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
            Cmd::Input(chunk) => self.io.handle_chunk(&mut self.conn, chunk, now),
            // Passed on once the input read before it is taken.
            Cmd::Eof => self.io.handle_chunk(&mut self.conn, Vec::new(), now),
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
                // Handlers in flight get the grace; their flags go up at teardown.
                self.conn.shutdown(self.grace, now);
            }
            // The connection drains its extension with its events, this turn.
            Cmd::Wake => {}
        }
    }

    /// Takes the subscription handlers' decisions and moves their sinks' items into the
    /// connection (while less than `OUTPUT_ROOM` of output waits), then writes them. True
    /// when some were held back for room.
    fn push(&mut self, now: Instant) -> bool {
        if self.served.is_idle() {
            return false;
        }
        // A handler runs on the pool and cannot be stopped: a subscription that ends
        // leaves it to learn so from its sink.
        if self.served.poll(&mut self.conn, &mut |_| {}) {
            self.pump(now);
        }
        self.served.is_held_back()
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

    /// Writes everything the connection has to transmit, straight from its buffer; a
    /// failed write closes it.
    fn flush(&mut self, now: Instant) {
        let had_writer = self.writer.is_some();
        if !self.io.transmit(&mut self.conn).is_empty() {
            // The write below may block: the stall is counted from now, not from when the
            // first blocked write gives up.
            self.io.handle_write_blocked(&mut self.conn, now);
        }
        while let Some(w) = &mut self.writer {
            let out = self.io.transmit(&mut self.conn);
            if out.is_empty() {
                let _ = w.flush();
                break;
            }
            // A socket's write times out within a quarter second; the connection decides.
            let result = w.write(out);
            let now = self.now();
            match result {
                Ok(0) => self.writer = None,
                Ok(n) => self.io.handle_written(&mut self.conn, n, now),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    self.io.handle_write_blocked(&mut self.conn, now)
                }
                Err(_) => self.writer = None,
            }
            // A peer that takes a few bytes now and then never lets a write time out: the
            // stall is judged after every write.
            if self.conn.poll_timeout().is_some_and(|d| d <= now) {
                self.conn.handle_timeout(now);
                if self.conn.is_closed() {
                    self.writer = None;
                }
            }
        }
        if had_writer && self.writer.is_none() && !self.conn.is_closed() {
            self.conn.close(now);
        }
        if self.writer.is_none() {
            // Nothing can be written any more: what is queued is dropped, so the
            // connection can finish.
            let rest = self.conn.buffered_output();
            self.conn.consume_transmit(rest);
        }
        self.conn.handle_write(false, false, now);
    }
}
