//! What every driver needs beyond its I/O, written once: a byte-stream helper
//! ([`StreamIo`]), a timer set for many connections ([`Timers`]) and, with `std`, a clock
//! ([`Clock`]) that turns `std::time::Instant` into [`Instant`] and back.
//!
//! A driver of a byte stream (TCP, a Unix socket, a pipe, stdio) owns one [`Connection`]
//! and one [`StreamIo`] per connection, and repeats one turn whenever the socket is ready
//! or a deadline passes:
//!
//! 1. **read** while [`StreamIo::read_buf`] gives a buffer: read into it and report the
//!    count with [`StreamIo::handle_read`] (0 is the end of input); stop at "would block";
//! 2. **events**: drain [`Connection::poll_event`] (or let
//!    [`Router::serve_connection`](crate::router::Router::serve_connection) do it), then
//!    [`StreamIo::feed`] offers input held back meanwhile; repeat while it returns true;
//! 3. **timers**: once [`Connection::poll_timeout`] has passed, call
//!    [`Connection::handle_timeout`];
//! 4. **write** what [`StreamIo::transmit`] gives, straight from the connection's buffer,
//!    and report the count with [`StreamIo::handle_written`] (or
//!    [`StreamIo::handle_write_blocked`] when the socket would block);
//! 5. **wait** for what [`StreamIo::interest`] says: readable, writable, a deadline, or
//!    another turn at once; close the socket once it says `finished`.
//!
//! What the helper owns, so no driver gets it wrong: the read buffer (sized by
//! [`ReadSize`], given back when the connection idles), input the connection could not
//! take yet (offered again, and nothing more read meanwhile, which is the back-pressure),
//! the end of input (passed on only after every byte before it), the write bookkeeping
//! the write-stall timeout runs on, and a per-turn read budget so that one peer that
//! floods does not starve the others on the same thread.
//!
//! ```
//! use sansrpc::connection::{Config, Connection};
//! use sansrpc::driver::StreamIo;
//! use sansrpc::router::{Reply, Router};
//! use sansrpc::Instant;
//!
//! let mut router = Router::new();
//! router.raw_method("ping", |_, out| { out.extend_from_slice(b"\"pong\""); Ok(()) }).unwrap();
//! let mut conn = Connection::new(Config::default(), Instant::ZERO);
//! let mut io = StreamIo::new();
//! let mut reply = Reply::default();
//! let now = Instant::ZERO;
//!
//! // What a socket delivered, in two reads.
//! let mut input: &[u8] = b"Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}";
//! let mut wire = Vec::new();
//! while let Some(buf) = io.read_buf(&conn) {
//!     let n = buf.len().min(input.len()).min(30);
//!     buf[..n].copy_from_slice(&input[..n]);
//!     input = &input[n..];
//!     io.handle_read(&mut conn, n, now);
//!     loop {
//!         router.serve_connection(&mut conn, &mut reply, |_| {});
//!         if !io.feed(&mut conn, now) { break; }
//!     }
//!     // The socket takes 16 bytes at a time.
//!     loop {
//!         let out = io.transmit(&mut conn);
//!         if out.is_empty() { break; }
//!         let n = out.len().min(16);
//!         wire.extend_from_slice(&out[..n]);
//!         io.handle_written(&mut conn, n, now);
//!     }
//!     if input.is_empty() { break; }
//! }
//! assert!(wire.ends_with(br#"{"jsonrpc":"2.0","result":"pong","id":1}"#));
//! let interest = io.interest(&mut conn);
//! assert!(interest.read && !interest.write && !interest.finished);
//! ```

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use crate::codec::ReadSize;
use crate::connection::Connection;
use crate::time::Instant;

/// The smallest read, and what a quiet connection keeps.
const MIN_READ: usize = 4 * 1024;
/// The largest read.
const MAX_READ: usize = 64 * 1024;
/// Bytes read per turn before the helper asks the driver to turn to other work.
const TURN_BUDGET: usize = 256 * 1024;

/// What a byte-stream driver waits for next; from [`StreamIo::interest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Interest {
    /// Wait until the transport is readable, then read (the connection wants input and no
    /// input is held back).
    pub read: bool,
    /// Wait until the transport is writable, then write: output is pending.
    pub write: bool,
    /// Call [`Connection::handle_timeout`] at this instant (it may be past: at once).
    pub deadline: Option<Instant>,
    /// Turn again soon without waiting for readiness: input is held in the helper that the
    /// connection can take now, the end of input is still to be passed on, or the turn's
    /// read budget ran out with the transport still readable (let other connections have
    /// their turn first; an edge-triggered poller will not say readable again).
    pub again: bool,
    /// The connection is over and its output written: close the transport and drop it.
    pub finished: bool,
}

/// The sans-I/O half of a byte-stream driver: the read buffer, input held back, the end of
/// input, the write bookkeeping and the per-turn budget; see the [module
/// documentation](self) for the turn a driver repeats.
#[derive(Debug)]
pub struct StreamIo {
    input: Vec<u8>,
    size: ReadSize,
    /// `input[start..end]` was read and not taken by the connection yet.
    start: usize,
    end: usize,
    /// The transport's input ended; the connection is told once every byte before it is
    /// taken.
    eof: bool,
    told_eof: bool,
    /// Bytes read this turn, against `budget`.
    turn: usize,
    budget: usize,
    /// A read was refused this turn for the budget alone.
    yielded: bool,
}

impl Default for StreamIo {
    fn default() -> Self {
        StreamIo::new()
    }
}

impl StreamIo {
    /// Reads of 4 KiB to 64 KiB, and 256 KiB read per turn.
    pub fn new() -> Self {
        StreamIo::with_limits(MIN_READ, MAX_READ, TURN_BUDGET)
    }

    /// Reads of `min_read` bytes (what a quiet connection keeps) growing to `max_read`
    /// while reads fill the buffer, and at most about `budget` bytes read per turn.
    pub fn with_limits(min_read: usize, max_read: usize, budget: usize) -> Self {
        StreamIo {
            input: Vec::new(),
            size: ReadSize::new(min_read, max_read),
            start: 0,
            end: 0,
            eof: false,
            told_eof: false,
            turn: 0,
            budget: budget.max(1),
            yielded: false,
        }
    }

    /// Bytes read and not yet taken by the connection.
    pub fn buffered_input(&self) -> usize {
        self.end - self.start
    }

    /// True once the transport reported the end of its input.
    pub fn input_ended(&self) -> bool {
        self.eof
    }

    /// The buffer to read into now, or `None` when the driver must not read: the
    /// connection takes no input (back-pressure, or it is closing), input read before is
    /// still held, the input ended, or this turn's budget is spent (see
    /// [`Interest::again`]).
    pub fn read_buf(&mut self, conn: &Connection) -> Option<&mut [u8]> {
        if self.eof || self.start < self.end || !conn.wants_input() || conn.is_closed() {
            return None;
        }
        if self.turn >= self.budget {
            self.yielded = true;
            return None;
        }
        let size = self.size.get();
        if self.input.len() != size {
            // Zero-filled once per size: later reads reuse it.
            self.input.clear();
            self.input.resize(size, 0);
        }
        (self.start, self.end) = (0, 0);
        Some(&mut self.input[..])
    }

    /// The transport read `n` bytes into [`read_buf`](StreamIo::read_buf) (`0`: the end
    /// of its input). They are offered to the connection at once; what it cannot take yet
    /// is held and offered again by [`feed`](StreamIo::feed).
    pub fn handle_read(&mut self, conn: &mut Connection, n: usize, now: Instant) {
        if n == 0 {
            self.eof = true;
        } else {
            let n = n.min(self.input.len());
            self.size.read(n);
            self.turn += n;
            (self.start, self.end) = (0, n);
        }
        self.feed(conn, now);
    }

    /// The transport has nothing to read now (it would block) while nothing is held: a
    /// quiet connection gives a grown read buffer back.
    pub fn handle_read_idle(&mut self) {
        if self.start == self.end && (self.size.idle() || self.input.len() > self.size.get()) {
            self.input = Vec::new();
        }
    }

    /// Bytes read elsewhere (a reader thread's chunk): taken as the read buffer itself when
    /// nothing is held (no copy), after what is held otherwise, and offered to the
    /// connection. Returns a buffer the reader may reuse. An empty chunk is the end of
    /// input.
    pub fn handle_chunk(
        &mut self,
        conn: &mut Connection,
        mut chunk: Vec<u8>,
        now: Instant,
    ) -> Option<Vec<u8>> {
        let spare = if chunk.is_empty() {
            self.eof = true;
            Some(chunk)
        } else if self.start == self.end {
            let n = chunk.len();
            core::mem::swap(&mut self.input, &mut chunk);
            (self.start, self.end) = (0, n);
            Some(chunk)
        } else {
            self.input.truncate(self.end);
            self.input.drain(..self.start);
            self.input.extend_from_slice(&chunk);
            (self.start, self.end) = (0, self.input.len());
            chunk.clear();
            Some(chunk)
        };
        self.feed(conn, now);
        spare
    }

    /// Offers the input held back to the connection again, and passes the end of input on
    /// once every byte before it is taken. Call it after draining the connection's events
    /// (which makes room); true when the connection took something, so its events want
    /// draining again.
    pub fn feed(&mut self, conn: &mut Connection, now: Instant) -> bool {
        let mut progress = false;
        if self.start < self.end {
            // A connection built for whole messages takes no bytes: they could never be
            // read, so the connection ends.
            let taken = match conn.handle_input(&self.input[self.start..self.end], now) {
                Ok(n) => n,
                Err(_) => {
                    conn.close(now);
                    self.end - self.start
                }
            };
            self.start += taken;
            progress = taken > 0;
            if self.start == self.end {
                (self.start, self.end) = (0, 0);
            }
        }
        if self.eof && !self.told_eof && self.start == self.end {
            self.told_eof = true;
            conn.handle_end_of_input(now);
            progress = true;
        }
        progress
    }

    /// The output to write, straight from the connection's buffer: write what the
    /// transport takes of it and report the count with
    /// [`handle_written`](StreamIo::handle_written). Empty when nothing is pending.
    pub fn transmit<'c>(&self, conn: &'c mut Connection) -> &'c [u8] {
        conn.peek_transmit()
    }

    /// The transport took the first `n` bytes of [`transmit`](StreamIo::transmit): they
    /// leave the connection's buffer, and the write-stall clock restarts (`n > 0`).
    pub fn handle_written(&mut self, conn: &mut Connection, n: usize, now: Instant) {
        conn.consume_transmit(n);
        let pending = conn.buffered_output() > 0;
        conn.handle_write(n > 0, pending, now);
    }

    /// The transport would block (or a blocking write timed out) with output pending: the
    /// write-stall clock runs from the last byte written.
    pub fn handle_write_blocked(&mut self, conn: &mut Connection, now: Instant) {
        conn.handle_write(false, true, now);
    }

    /// What to wait for before the next turn; it ends this turn (the read budget starts
    /// again).
    pub fn interest(&mut self, conn: &mut Connection) -> Interest {
        let held = self.start < self.end;
        let again = (held && conn.wants_input())
            || (self.eof && !self.told_eof && !held)
            || (self.yielded && conn.wants_input());
        self.turn = 0;
        self.yielded = false;
        let finished = conn.is_finished();
        Interest {
            read: !finished && !self.eof && !held && conn.wants_input(),
            write: !finished && !conn.peek_transmit().is_empty(),
            deadline: conn.poll_timeout(),
            again: again && !finished,
            finished,
        }
    }
}

/// Deadlines of many connections, each under the driver's own key (a token, a slot
/// index): the earliest, and which are due. Setting a key's deadline replaces its previous
/// one; both take O(log n).
///
/// ```
/// use sansrpc::driver::Timers;
/// use sansrpc::Instant;
///
/// let mut timers = Timers::new();
/// timers.set(7u32, Some(Instant::from_millis(30)));
/// timers.set(3u32, Some(Instant::from_millis(10)));
/// timers.set(3u32, Some(Instant::from_millis(50))); // moved
/// assert_eq!(timers.next_deadline(), Some(Instant::from_millis(30)));
/// assert_eq!(timers.pop_due(Instant::from_millis(40)), Some(7));
/// assert_eq!(timers.pop_due(Instant::from_millis(40)), None);
/// ```
#[derive(Debug, Clone)]
pub struct Timers<K> {
    by_time: BTreeSet<(Instant, K)>,
    by_key: BTreeMap<K, Instant>,
}

impl<K: Ord + Copy> Default for Timers<K> {
    fn default() -> Self {
        Timers::new()
    }
}

impl<K: Ord + Copy> Timers<K> {
    /// No deadlines.
    pub fn new() -> Self {
        Timers {
            by_time: BTreeSet::new(),
            by_key: BTreeMap::new(),
        }
    }

    /// Sets `key`'s deadline (`None` removes it), replacing the one it had.
    pub fn set(&mut self, key: K, deadline: Option<Instant>) {
        match deadline {
            Some(at) => {
                if let Some(old) = self.by_key.insert(key, at) {
                    if old == at {
                        return;
                    }
                    self.by_time.remove(&(old, key));
                }
                self.by_time.insert((at, key));
            }
            None => {
                if let Some(old) = self.by_key.remove(&key) {
                    self.by_time.remove(&(old, key));
                }
            }
        }
    }

    /// The earliest deadline set.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.by_time.first().map(|(at, _)| *at)
    }

    /// Removes and returns a key whose deadline is at or before `now`, earliest first.
    pub fn pop_due(&mut self, now: Instant) -> Option<K> {
        let &(at, key) = self.by_time.first()?;
        if at > now {
            return None;
        }
        self.by_time.remove(&(at, key));
        self.by_key.remove(&key);
        Some(key)
    }

    /// How many keys have a deadline.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// True when no key has a deadline.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

/// A monotonic clock for drivers on `std`: [`Instant`]s measured from when it was made,
/// and back to `std::time::Instant` for sleeping.
#[cfg(feature = "std")]
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: std::time::Instant,
}

#[cfg(feature = "std")]
impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

#[cfg(feature = "std")]
impl Clock {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        Clock {
            start: std::time::Instant::now(),
        }
    }

    /// The current time.
    pub fn now(&self) -> Instant {
        self.instant(std::time::Instant::now())
    }

    /// `at` on this clock (the epoch when earlier).
    pub fn instant(&self, at: std::time::Instant) -> Instant {
        Instant::from_duration(at.saturating_duration_since(self.start))
    }

    /// `at` as a `std::time::Instant`, to sleep until.
    pub fn to_std(&self, at: Instant) -> std::time::Instant {
        self.start + at.since_epoch()
    }

    /// How long from now until `at` (zero when it passed): a poller's timeout.
    pub fn until(&self, at: Instant) -> core::time::Duration {
        self.to_std(at)
            .saturating_duration_since(std::time::Instant::now())
    }
}
