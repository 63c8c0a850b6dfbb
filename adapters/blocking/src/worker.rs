//! Streams served on the blocking driver: a stream's iterator may block, so a handler-pool
//! worker takes items from it, as many as the waiting pulls want, and hands them to the
//! driver thread, which answers the pulls through the connection machine.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sansrpc::connection::stream::{BoxSource, Demand, Produced};
use sansrpc::ErrorObject;

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
pub(crate) fn work_stream(
    mut source: BoxSource,
    demand: Demand,
    mut send: impl FnMut(Batch) -> bool,
) {
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
    pub(crate) source: Option<BoxSource>,
    /// The stream handler's cancellation flag, set when the stream goes.
    cancelled: Arc<AtomicBool>,
    /// A worker has the iterator.
    pub(crate) lent: bool,
    buf: Vec<u8>,
    ends: VecDeque<usize>,
    /// Where the next item starts in `buf`.
    start: usize,
    end: Option<Produced>,
}

impl Drop for Lent {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

impl Lent {
    pub(crate) fn new(source: BoxSource, cancelled: Arc<AtomicBool>) -> Lent {
        Lent {
            source: Some(source),
            cancelled,
            lent: false,
            buf: Vec::new(),
            ends: VecDeque::new(),
            start: 0,
            end: None,
        }
    }

    /// The next item gathered, the end, or `None` when there is nothing (yet).
    pub(crate) fn take(&mut self, out: &mut Vec<u8>) -> Option<Produced> {
        if let Some(end) = self.ends.pop_front() {
            out.extend_from_slice(&self.buf[self.start..end]);
            self.start = end;
            return Some(Produced::Item);
        }
        self.end.take()
    }

    pub(crate) fn receive(&mut self, batch: Batch) {
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
