//! What every driver needs beyond its I/O, written once and sans-I/O like the rest of the
//! core: a byte-stream helper ([`StreamIo`]) and a timer set for many connections
//! ([`Timers`]). What a driver on `std` needs from its host (a clock, per-connection
//! values, the process check, method subscriptions' sinks) is in the `sansrpc-runtime` crate.
//!
//! A driver of a byte stream (TCP, a Unix socket, a pipe, stdio) owns one [`Connection`]
//! and one [`StreamIo`] per connection, and repeats one turn whenever the socket is ready
//! or a deadline passes:
//!
//! 1. **read** while [`StreamIo::read_buf`] gives a buffer: read into it and report the
//!    count with [`StreamIo::handle_read`] (0 is the end of input); stop at "would block";
//! 2. **events**: drain [`Connection::poll_event`] (or let
//!    [`Router::serve`](crate::router::Router::serve) do it), then
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
//!         router.serve(&mut conn, &mut reply, |_| {});
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

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec::Vec;

use crate::codec::ReadSize;
use crate::connection::Connection;
use crate::time::Instant;

/// Unsent bytes a driver lets the kernel queue on a TCP socket (`TCP_NOTSENT_LOWAT`, where
/// the system has it). Without a bound the kernel's send buffer grows to megabytes, and a
/// peer that stopped reading keeps "taking" answers (into that buffer) for as long as the
/// server takes to compute them, so the write-stall timeout starts late. Bytes in flight
/// are not counted, so a fast link keeps its throughput. The adapters set it on every TCP
/// connection; a driver of its own should too.
pub const UNSENT_LOW_WATER: u32 = 128 * 1024;

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
    /// With `finished`: close with a reset (TCP: `SO_LINGER` 0, then close) rather than
    /// gracefully ([`Connection::resets_on_close`]).
    pub reset: bool,
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
    /// Chunks handed in behind `input` ([`StreamIo::handle_chunk`]), and buffers consumed.
    queued: VecDeque<Vec<u8>>,
    spare: Vec<Vec<u8>>,
    /// The transport's input ended; the connection is told once every byte before it is
    /// taken.
    eof: bool,
    told_eof: bool,
    /// Bytes read this turn, against `budget`.
    turn: usize,
    budget: usize,
    /// A read was refused this turn for the budget alone.
    yielded: bool,
    /// The driver reads through [`read_buf`](StreamIo::read_buf) (not a reader thread).
    reads_here: bool,
    /// The last read attempt found nothing to read ("would block") and no byte came since:
    /// an edge-triggered poller will say when more comes.
    drained: bool,
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
            queued: VecDeque::new(),
            spare: Vec::new(),
            eof: false,
            told_eof: false,
            turn: 0,
            budget: budget.max(1),
            yielded: false,
            reads_here: true,
            drained: false,
        }
    }

    /// For a driver whose reads happen elsewhere (a reader thread handing its chunks to
    /// [`handle_chunk`](StreamIo::handle_chunk)): [`interest`](StreamIo::interest) never
    /// asks it to read.
    pub fn for_chunks() -> Self {
        StreamIo {
            reads_here: false,
            ..StreamIo::new()
        }
    }

    /// Bytes read and not yet taken by the connection.
    pub fn buffered_input(&self) -> usize {
        self.end - self.start + self.queued.iter().map(Vec::len).sum::<usize>()
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
            self.drained = false;
            (self.start, self.end) = (0, n);
        }
        self.feed(conn, now);
    }

    /// The transport has nothing to read now (it would block) while nothing is held: a
    /// quiet connection gives a grown read buffer back.
    pub fn handle_read_idle(&mut self) {
        self.drained = true;
        if self.start == self.end && (self.size.idle() || self.input.len() > self.size.get()) {
            self.input = Vec::new();
        }
    }

    /// Bytes read elsewhere (a reader thread's chunk), offered to the connection: taken as
    /// the read buffer itself when nothing is held (no copy), queued behind what is held
    /// otherwise. An empty chunk is the end of input (passed on after every chunk before
    /// it). Buffers consumed come back through [`take_spare`](StreamIo::take_spare): a
    /// reader that reads only into a buffer it got back stays a bounded number of chunks
    /// ahead of the connection.
    pub fn handle_chunk(&mut self, conn: &mut Connection, chunk: Vec<u8>, now: Instant) {
        if chunk.is_empty() {
            self.eof = true;
            self.spare.push(chunk);
        } else {
            self.queued.push_back(chunk);
        }
        self.feed(conn, now);
    }

    /// A buffer consumed by the connection, for the reader to read into again.
    pub fn take_spare(&mut self) -> Option<Vec<u8>> {
        self.spare.pop()
    }

    /// Offers the input held back to the connection again, and passes the end of input on
    /// once every byte before it is taken. Call it after draining the connection's events
    /// (which makes room); true when the connection took something, so its events want
    /// draining again.
    pub fn feed(&mut self, conn: &mut Connection, now: Instant) -> bool {
        let mut progress = false;
        loop {
            if self.start == self.end {
                let Some(next) = self.queued.pop_front() else {
                    break;
                };
                let done = core::mem::replace(&mut self.input, next);
                if done.capacity() > 0 {
                    self.spare.push(done);
                }
                (self.start, self.end) = (0, self.input.len());
            }
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
            progress |= taken > 0;
            if self.start < self.end {
                break;
            }
            (self.start, self.end) = (0, 0);
            if !self.reads_here {
                // A reader thread's chunk goes back to it as soon as it is consumed.
                self.spare.push(core::mem::take(&mut self.input));
            }
        }
        if self.eof && !self.told_eof && self.start == self.end && self.queued.is_empty() {
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
    /// write-stall clock runs from the last byte written. A driver whose writes block calls
    /// it before a write that may block, so the clock starts then.
    pub fn handle_write_blocked(&mut self, conn: &mut Connection, now: Instant) {
        conn.handle_write(false, true, now);
    }

    /// True when this turn's read budget is spent: [`read_buf`](StreamIo::read_buf) gives
    /// nothing until [`end_turn`](StreamIo::end_turn) (or [`interest`](StreamIo::interest)).
    pub fn turn_spent(&self) -> bool {
        self.turn >= self.budget
    }

    /// Ends this turn: the read budget starts again. [`interest`](StreamIo::interest) does
    /// it; a driver that does not ask it (an async one, whose turn is one poll) calls this.
    pub fn end_turn(&mut self) {
        self.turn = 0;
        self.yielded = false;
    }

    /// What to wait for before the next turn; it ends this turn (the read budget starts
    /// again).
    ///
    /// It asks for another turn at once when the connection wants input that may already
    /// be waiting: reads stopped this turn before one found nothing (back-pressure that
    /// has eased since, or the budget), which an edge-triggered poller would not report
    /// again.
    pub fn interest(&mut self, conn: &mut Connection) -> Interest {
        let held = self.start < self.end || !self.queued.is_empty();
        let wants = conn.wants_input();
        let read = !self.eof && !held && wants;
        let again = (held && wants)
            || (self.eof && !self.told_eof && !held)
            || (self.yielded && wants)
            || (read && self.reads_here && !self.drained);
        self.end_turn();
        let finished = conn.is_finished();
        Interest {
            read: read && !finished,
            write: !finished && !conn.peek_transmit().is_empty(),
            deadline: conn.poll_timeout(),
            again: again && !finished,
            finished,
            reset: finished && conn.resets_on_close(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Set(u8, Option<u16>),
        Pop(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..12u8, proptest::option::of(0..400u16)).prop_map(|(k, at)| Op::Set(k, at)),
            1 => (0..400u16).prop_map(Op::Pop),
        ]
    }

    proptest! {
        /// Against the plainest model (every key's deadline, searched): the same earliest
        /// deadline and the same keys due in the same order, whatever is set, replaced and
        /// removed.
        #[test]
        fn timers_do_what_a_list_of_deadlines_does(ops in prop::collection::vec(op(), 0..300)) {
            let mut timers = Timers::new();
            let mut model: BTreeMap<u8, Instant> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Set(key, at) => {
                        let at = at.map(|ms| Instant::from_millis(ms.into()));
                        timers.set(key, at);
                        match at {
                            Some(at) => model.insert(key, at),
                            None => model.remove(&key),
                        };
                    }
                    Op::Pop(now) => {
                        let now = Instant::from_millis(now.into());
                        let due = model
                            .iter()
                            .map(|(&k, &at)| (at, k))
                            .filter(|&(at, _)| at <= now)
                            .min()
                            .map(|(_, k)| k);
                        if let Some(k) = due {
                            model.remove(&k);
                        }
                        prop_assert_eq!(timers.pop_due(now), due);
                    }
                }
                prop_assert_eq!(timers.next_deadline(), model.values().min().copied());
                prop_assert_eq!(timers.len(), model.len());
            }
        }
    }
}
