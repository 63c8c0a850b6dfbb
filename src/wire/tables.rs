//! The wire's bookkeeping: requests we sent and await, requests we received and owe an
//! answer, incoming batches being assembled, and cancels that arrived early.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::num::NonZeroU64;

use super::IncomingId;
use crate::id::Id;
use crate::message::Version;
use crate::time::Instant;

/// A request we sent, in [`Outgoing::pending`]: still pending (with its deadline, if any),
/// or ended out of order and left in place until it reaches an end of the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Ended,
    Pending(Option<Instant>),
}

/// Requests we sent, by our id, with their deadlines in time order.
///
/// Requests mostly end in the order they were sent (answers in order, deadlines expiring),
/// and then leave from the front of both rings. One that ends out of order is not moved
/// out of the middle (that moves up to half the ring, 13.5 µs at 100,000 pending): its slot
/// is marked ended and its deadline entry left stale, both dropped once they reach the
/// front (or back), or swept out at once when they outnumber the live ones.
#[derive(Debug, Default)]
pub(super) struct Outgoing {
    pending: SortedDeque<u64, Slot>,
    /// `(deadline, id)`; an entry is live while `pending` has `id` pending with that
    /// deadline. The first entry is always live.
    deadlines: SortedDeque<(Instant, u64), ()>,
    live: usize,
    /// Slots of `pending` marked ended.
    ended: usize,
    /// Entries of `deadlines` no longer live.
    stale: usize,
}

/// Ended slots or stale deadlines beyond which (and beyond the live count) a ring is swept.
const SWEEP: usize = 64;

// A slot costs what an `Option<Instant>` did: the table's heap per request is unchanged.
const _: () = assert!(core::mem::size_of::<Slot>() == core::mem::size_of::<Option<Instant>>());

impl Outgoing {
    pub(super) fn len(&self) -> usize {
        self.live
    }

    pub(super) fn insert(&mut self, id: u64, deadline: Option<Instant>) {
        // Our ids are never reused: a new one goes last, and replaces nothing.
        match self.pending.insert(id, Slot::Pending(deadline)) {
            None => self.live += 1,
            Some(Slot::Ended) => {
                self.live += 1;
                self.ended -= 1;
            }
            Some(Slot::Pending(old)) => {
                self.stale += usize::from(old.is_some() && old != deadline);
            }
        }
        if let Some(d) = deadline {
            self.deadlines.insert((d, id), ());
        }
        // A new entry leaves the first live (itself, or the one before it).
        if self.stale > 0 {
            self.tidy_deadlines();
        }
    }

    /// Removes a pending request; false when it was not pending.
    pub(super) fn remove(&mut self, id: u64) -> bool {
        let Some(deadline) = self.end(id) else {
            return false;
        };
        if let Some(d) = deadline {
            if self
                .deadlines
                .first()
                .is_some_and(|&(key, ())| key == (d, id))
            {
                self.deadlines.pop_first();
            } else {
                self.stale += 1;
            }
            self.tidy_deadlines();
        }
        true
    }

    /// Marks `id` ended in `pending` (dropping it when at an end of the ring); its deadline
    /// when it was pending.
    fn end(&mut self, id: u64) -> Option<Option<Instant>> {
        let slot = self.pending.get_mut(&id)?;
        let Slot::Pending(deadline) = *slot else {
            return None;
        };
        *slot = Slot::Ended;
        self.live -= 1;
        self.ended += 1;
        while let Some(&(_, Slot::Ended)) = self.pending.first() {
            self.pending.pop_first();
            self.ended -= 1;
        }
        while let Some(&(_, Slot::Ended)) = self.pending.last() {
            self.pending.pop_last();
            self.ended -= 1;
        }
        if self.ended > SWEEP && self.ended > self.live {
            self.pending.retain(|_, slot| *slot != Slot::Ended);
            self.ended = 0;
        }
        Some(deadline)
    }

    fn is_live(&self, (d, id): (Instant, u64)) -> bool {
        self.pending.get(&id) == Some(&Slot::Pending(Some(d)))
    }

    /// Drops stale deadline entries at the front (the first is then live), and sweeps them
    /// all when they outnumber the live ones.
    fn tidy_deadlines(&mut self) {
        while let Some(&(key, ())) = self.deadlines.first() {
            if self.is_live(key) {
                break;
            }
            self.deadlines.pop_first();
            self.stale -= 1;
        }
        if self.stale > SWEEP && self.stale > self.live {
            let pending = &self.pending;
            self.deadlines
                .retain(|&(d, id), ()| pending.get(&id) == Some(&Slot::Pending(Some(d))));
            self.stale = 0;
        }
    }

    /// Moves a pending request's deadline later (progress); never earlier.
    #[cfg(feature = "progress")]
    pub(crate) fn extend_deadline(&mut self, id: u64, deadline: Instant) {
        if let Some(Slot::Pending(Some(old))) = self.pending.get_mut(&id) {
            if deadline > *old {
                *old = deadline;
                self.deadlines.insert((deadline, id), ());
                self.stale += 1;
                self.tidy_deadlines();
            }
        }
    }

    pub(super) fn contains(&self, id: u64) -> bool {
        matches!(self.pending.get(&id), Some(Slot::Pending(_)))
    }

    /// The only pending request, if exactly one is pending.
    pub(super) fn single(&self) -> Option<u64> {
        // The ring's ends are always pending: with one pending, it is the first.
        match (self.live, self.pending.first()) {
            (1, Some(&(id, Slot::Pending(_)))) => Some(id),
            _ => None,
        }
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|&((d, _), ())| d)
    }

    /// Removes and returns one request whose deadline is at or before `now`.
    pub(crate) fn pop_expired(&mut self, now: Instant) -> Option<u64> {
        let &((d, id), ()) = self.deadlines.first()?;
        if d > now {
            return None;
        }
        self.deadlines.pop_first();
        self.end(id);
        self.tidy_deadlines();
        Some(id)
    }

    /// Removes every pending request, in id order.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = u64> {
        self.deadlines.clear();
        self.live = 0;
        self.ended = 0;
        self.stale = 0;
        self.pending
            .drain()
            .filter_map(|(id, slot)| matches!(slot, Slot::Pending(_)).then_some(id))
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.deadlines.is_empty()
    }
}

/// Entries of room a [`SortedDeque`] keeps when it shrinks.
const KEEP: usize = 128;

/// Gives a drained burst's room back, down to [`KEEP`] entries (see [`SortedDeque`]).
fn shrink<T>(entries: &mut VecDeque<T>) {
    let (len, capacity) = (entries.len(), entries.capacity());
    if capacity > KEEP && (len == 0 || (capacity > 4 * KEEP && len < capacity / 8)) {
        entries.shrink_to((2 * len).max(KEEP));
    }
}

/// A map kept as a sorted ring buffer: the wire's keys mostly arrive in order (our ids,
/// handles and deadlines grow) and leave from the front (answers in order, deadlines
/// expiring), which a ring does with one push or pop and no node allocation, in one
/// contiguous block (a B-tree allocates a node per few entries, half full). Keys out of
/// order are placed by binary search and moved into place, bounded by the table's limit.
#[derive(Debug)]
pub(crate) struct SortedDeque<K, V> {
    entries: VecDeque<(K, V)>,
}

impl<K, V> Default for SortedDeque<K, V> {
    fn default() -> Self {
        SortedDeque {
            entries: VecDeque::new(),
        }
    }
}

impl<K: Ord, V> SortedDeque<K, V> {
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn find<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: core::borrow::Borrow<Q>,
    {
        // The usual cases first: the oldest entry, or past the newest.
        match self.entries.front() {
            Some((k, _)) if k.borrow() == key => return Ok(0),
            None => return Err(0),
            _ => {}
        }
        if let Some((k, _)) = self.entries.back() {
            match k.borrow().cmp(key) {
                Ordering::Less => return Err(self.entries.len()),
                Ordering::Equal => return Ok(self.entries.len() - 1),
                Ordering::Greater => {}
            }
        }
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// Inserts or replaces; returns the value replaced.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(core::mem::replace(&mut self.entries[i].1, value)),
            Err(i) if i == self.entries.len() => {
                self.entries.push_back((key, value));
                None
            }
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    #[inline]
    pub(crate) fn get_mut<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: core::borrow::Borrow<Q>,
    {
        // The usual case (the oldest entry: the batch being read or answered) without
        // finding its place twice.
        if self.entries.front().is_some_and(|(k, _)| k.borrow() == key) {
            return self.entries.front_mut().map(|(_, v)| v);
        }
        let i = self.find(key).ok()?;
        Some(&mut self.entries[i].1)
    }

    pub(crate) fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: core::borrow::Borrow<Q>,
    {
        let i = self.find(key).ok()?;
        let (_, value) = self.entries.remove(i)?;
        self.shrink();
        Some(value)
    }

    pub(crate) fn first(&self) -> Option<&(K, V)> {
        self.entries.front()
    }

    pub(crate) fn last(&self) -> Option<&(K, V)> {
        self.entries.back()
    }

    pub(crate) fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: core::borrow::Borrow<Q>,
    {
        let i = self.find(key).ok()?;
        Some(&self.entries[i].1)
    }

    pub(crate) fn pop_last(&mut self) -> Option<(K, V)> {
        let last = self.entries.pop_back();
        self.shrink();
        last
    }

    /// Keeps the entries for which `keep` is true, in order.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
        self.shrink();
    }

    pub(crate) fn pop_first(&mut self) -> Option<(K, V)> {
        let first = self.entries.pop_front();
        self.shrink();
        first
    }

    /// The entries, in key order.
    #[cfg(feature = "streams")]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(K, V)> {
        self.entries.iter()
    }

    /// The values, in key order.
    #[cfg(feature = "streams")]
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// Removes every entry, in key order.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (K, V)> {
        core::mem::take(&mut self.entries).into_iter()
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.shrink();
    }

    /// A table that held a burst gives its room back once the burst has drained, down to
    /// [`KEEP`] entries: the room a steady load (a batch of 100, 64 pipelined requests)
    /// reuses without allocating, and all an idle connection keeps.
    fn shrink(&mut self) {
        shrink(&mut self.entries);
    }
}

impl<V> SortedDeque<u64, V> {
    /// [`get`](SortedDeque::get) for keys handed out in sequence (handles): while none
    /// before `key` has left, it sits at its distance from the first, found without a
    /// search.
    pub(crate) fn get_seq(&self, key: u64) -> Option<&V> {
        self.index_seq(key).map(|i| &self.entries[i].1)
    }

    /// Where [`get_seq`](SortedDeque::get_seq) finds `key`.
    fn index_seq(&self, key: u64) -> Option<usize> {
        if let Some(&(first, _)) = self.entries.front() {
            let guess = key.wrapping_sub(first);
            if let Ok(i) = usize::try_from(guess) {
                if self.entries.get(i).is_some_and(|(k, _)| *k == key) {
                    return Some(i);
                }
            }
        }
        self.find(&key).ok()
    }
}

/// A request the peer sent that the application has not answered yet.
#[derive(Debug)]
pub(super) struct InFlight {
    pub peer_id: Id<'static>,
    pub version: Version,
    /// The incoming batch this request belongs to, if any (batch keys start at 1, so this
    /// takes 8 bytes).
    batch: Option<NonZeroU64>,
    /// The peer cancelled it; profiles that do not answer cancelled requests drop the answer.
    pub cancelled: bool,
}

impl InFlight {
    /// The key of the incoming batch this request belongs to, if any.
    pub(super) fn batch(&self) -> Option<u64> {
        self.batch.map(NonZeroU64::get)
    }
}

/// An incoming batch whose answers are being collected into one array.
#[derive(Debug, Default)]
pub(super) struct BatchAnswer {
    /// Requests of the batch still unanswered.
    pub remaining: usize,
    /// The array so far: `[` and the answers written, comma-separated.
    pub body: Vec<u8>,
    pub answers: usize,
}

impl BatchAnswer {
    /// Prepares `body` for one more answer.
    pub(super) fn entry(&mut self) -> &mut Vec<u8> {
        if self.answers == 0 {
            self.body.clear();
            self.body.push(b'[');
        } else {
            self.body.push(b',');
        }
        self.answers += 1;
        &mut self.body
    }
}

/// Where a new in-flight request goes in the index by peer id ([`Incoming::place`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Place(usize);

/// Requests received and owed an answer, and incoming batches in progress.
#[derive(Debug, Default)]
pub(super) struct Incoming {
    next_handle: u64,
    in_flight: SortedDeque<u64, InFlight>,
    /// The handles of `in_flight` in the order of their peer ids: the index by wire id, at
    /// 8 bytes an entry (the id itself is kept once, in its entry).
    by_peer_id: VecDeque<u64>,
    batches: SortedDeque<u64, BatchAnswer>,
    next_batch: u64,
    /// Spent batch buffers kept for reuse, so that steady batching allocates nothing.
    spare: Vec<Vec<u8>>,
}

impl Incoming {
    pub(super) fn len(&self) -> usize {
        self.in_flight.len()
    }

    /// Where `id` is (`Ok`) or would go (`Err`) in `by_peer_id`.
    fn find_peer(&self, id: &Id<'_>) -> Result<usize, usize> {
        // Every handle in the index has its entry.
        let order = |&h: &u64| {
            self.in_flight
                .get_seq(h)
                .map_or(Ordering::Less, |e| e.peer_id.cmp(id))
        };
        // Peers mostly count their ids up: the newest id is the last, a new one goes after.
        let len = self.by_peer_id.len();
        match self.by_peer_id.back().map(order) {
            None | Some(Ordering::Less) => return Err(len),
            Some(Ordering::Equal) => return Ok(len - 1),
            Some(Ordering::Greater) => {}
        }
        // And answers mostly leave in the order they came: the oldest id is the first.
        match self.by_peer_id.front().map(order) {
            Some(Ordering::Equal) => return Ok(0),
            Some(Ordering::Greater) => return Err(0),
            _ => {}
        }
        self.by_peer_id.binary_search_by(order)
    }

    /// The handle of the in-flight request with wire id `id`.
    pub(crate) fn handle_of(&self, id: &Id<'_>) -> Option<IncomingId> {
        let at = self.find_peer(id).ok()?;
        Some(IncomingId(self.by_peer_id[at]))
    }

    /// Where a new request with wire id `id` goes, found once for both the duplicate check
    /// and [`Incoming::insert`]; `Err` with the handle of the request in flight under the
    /// same id.
    pub(super) fn place(&self, id: &Id<'_>) -> Result<Place, IncomingId> {
        match self.find_peer(id) {
            Ok(at) => Err(IncomingId(self.by_peer_id[at])),
            Err(at) => Ok(Place(at)),
        }
    }

    /// Records a request at the place [`Incoming::place`] found for its id, with no change
    /// to the table in between.
    pub(super) fn insert(
        &mut self,
        peer_id: &Id<'_>,
        version: Version,
        batch: Option<u64>,
        Place(at): Place,
    ) -> IncomingId {
        let handle = self.next_handle;
        self.next_handle += 1;
        debug_assert_eq!(self.find_peer(peer_id), Err(at));
        // Handles grow: a new one always goes last.
        self.in_flight.entries.push_back((
            handle,
            InFlight {
                // Made owned here, where the table keeps it, not earlier and moved in.
                peer_id: peer_id.to_owned_id(),
                version,
                batch: batch.and_then(NonZeroU64::new),
                cancelled: false,
            },
        ));
        if at == self.by_peer_id.len() {
            self.by_peer_id.push_back(handle);
        } else {
            self.by_peer_id.insert(at, handle);
        }
        IncomingId(handle)
    }

    pub(super) fn remove(&mut self, handle: IncomingId) -> Option<InFlight> {
        let h = handle.0;
        // Answers mostly leave in the order their ids came: the handle is then first (or
        // last) in the index, found without comparing ids.
        if self.by_peer_id.front() == Some(&h) {
            self.by_peer_id.pop_front();
        } else if self.by_peer_id.back() == Some(&h) {
            self.by_peer_id.pop_back();
        } else {
            let at = self
                .in_flight
                .get_seq(h)
                .map(|e| self.find_peer(&e.peer_id))?;
            if let Ok(at) = at {
                if self.by_peer_id[at] == h {
                    self.by_peer_id.remove(at);
                }
            }
        }
        shrink(&mut self.by_peer_id);
        match self.in_flight.entries.front() {
            Some(&(first, _)) if first == h => self.in_flight.pop_first().map(|(_, e)| e),
            _ => self.in_flight.remove(&h),
        }
    }

    /// Answers the in-flight request `handle` and forgets it: `write` gets its wire id, its
    /// version and where its answer goes (its batch's array, or `single` for a request on
    /// its own), unless the peer cancelled it and `answer_cancelled` is false. `None` for a
    /// handle not in flight; else, for a request of a batch, the batch's key and whether
    /// this was its last request unanswered.
    ///
    /// The entry is read where it lies and dropped there: moved out whole, its fields were
    /// copied in pieces of other widths than they were written in, a stalled store-to-load
    /// forward on every answer.
    pub(super) fn answer(
        &mut self,
        handle: IncomingId,
        single: &mut Vec<u8>,
        answer_cancelled: bool,
        write: impl FnOnce(&Id<'_>, Version, &mut Vec<u8>),
    ) -> Option<Option<(u64, bool)>> {
        let at = self.in_flight.index_seq(handle.0)?;
        let entry = &self.in_flight.entries[at].1;
        let batch = entry
            .batch()
            .and_then(|key| Some((key, self.batches.get_mut(&key)?)));
        let settled = match batch {
            Some((key, b)) => {
                if !entry.cancelled || answer_cancelled {
                    write(&entry.peer_id, entry.version, b.entry());
                }
                b.remaining = b.remaining.saturating_sub(1);
                Some((key, b.remaining == 0))
            }
            None => {
                if !entry.cancelled || answer_cancelled {
                    write(&entry.peer_id, entry.version, single);
                }
                None
            }
        };
        self.remove(handle).map(|_| settled)
    }

    pub(super) fn get_mut(&mut self, handle: IncomingId) -> Option<&mut InFlight> {
        self.in_flight.get_mut(&handle.0)
    }

    pub(crate) fn open_batch(&mut self) -> u64 {
        // Keys start at 1: an entry's batch is an `Option<NonZeroU64>`.
        self.next_batch += 1;
        let key = self.next_batch;
        let body = self.spare.pop().unwrap_or_default();
        self.batches.insert(
            key,
            BatchAnswer {
                remaining: 0,
                body,
                answers: 0,
            },
        );
        key
    }

    pub(super) fn batch(&mut self, key: u64) -> Option<&mut BatchAnswer> {
        self.batches.get_mut(&key)
    }

    /// Removes a batch, returning its array body when it holds answers. Give the buffer back
    /// with [`Incoming::recycle`] once written.
    pub(crate) fn close_batch(&mut self, key: u64) -> Option<BatchAnswer> {
        self.batches.remove(&key)
    }

    pub(crate) fn recycle(&mut self, mut body: Vec<u8>) {
        if self.spare.len() < 8 {
            body.clear();
            self.spare.push(body);
        }
    }

    pub(super) fn clear(&mut self) {
        self.in_flight.clear();
        self.by_peer_id.clear();
        self.batches.clear();
    }

    pub(super) fn is_empty(&self) -> bool {
        self.in_flight.is_empty() && self.by_peer_id.is_empty() && self.batches.is_empty()
    }
}

/// Cancels that arrived before their request: remembered, bounded in count and time.
#[derive(Debug, Default)]
pub(super) struct EarlyCancels {
    entries: VecDeque<(Id<'static>, Instant)>,
}

impl EarlyCancels {
    /// Remembers a cancel for `id` until `expiry`, forgetting the oldest beyond `capacity`.
    pub(crate) fn remember(&mut self, id: Id<'static>, expiry: Instant, capacity: usize) {
        if capacity == 0 {
            return;
        }
        while self.entries.len() >= capacity {
            self.entries.pop_front();
        }
        self.entries.push_back((id, expiry));
    }

    /// Takes a remembered cancel for `id`, if there is a live one.
    #[inline]
    pub(super) fn take(&mut self, id: &Id<'_>, now: Instant) -> bool {
        // Asked for every request; nearly always none is remembered.
        !self.entries.is_empty() && self.take_remembered(id, now)
    }

    /// [`take`](EarlyCancels::take) with some cancel remembered.
    fn take_remembered(&mut self, id: &Id<'_>, now: Instant) -> bool {
        self.expire(now);
        match self.entries.iter().position(|(x, _)| x == id) {
            Some(i) => {
                self.entries.remove(i);
                true
            }
            None => false,
        }
    }

    pub(super) fn expire(&mut self, now: Instant) {
        while self.entries.front().is_some_and(|&(_, t)| t <= now) {
            self.entries.pop_front();
        }
    }

    pub(crate) fn next_expiry(&self) -> Option<Instant> {
        self.entries.front().map(|&(_, t)| t)
    }

    pub(super) fn clear(&mut self) {
        self.entries.clear();
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn permutations(items: &[i64]) -> Vec<Vec<i64>> {
        if items.len() <= 1 {
            return alloc::vec![items.to_vec()];
        }
        let mut all = Vec::new();
        for i in 0..items.len() {
            let mut rest = items.to_vec();
            let first = rest.remove(i);
            for mut tail in permutations(&rest) {
                tail.insert(0, first);
                all.push(tail);
            }
        }
        all
    }

    /// Answers in any order, some of them to cancelled requests: each answer goes to its
    /// own batch's array under its own id (a cancelled one only when cancelled requests are
    /// answered), and a batch reports itself complete exactly at its last answer.
    #[test]
    fn answers_find_their_batch_and_settle_it_at_the_last() {
        for answer_cancelled in [true, false] {
            let mut table = Incoming::default();
            let (a, b) = (table.open_batch(), table.open_batch());
            let mut handles = Vec::new();
            for (n, batch) in [(1, a), (2, b), (3, a), (4, b)] {
                let id = Id::number(n);
                let place = table.place(&id).expect("a new id");
                handles.push(table.insert(&id, Version::V2, Some(batch), place));
                table.batch(batch).expect("open").remaining += 1;
            }
            table.get_mut(handles[2]).expect("in flight").cancelled = true;
            let mut single = Vec::new();
            let mut settled = Vec::new();
            for &i in &[3, 2, 0, 1] {
                let answered =
                    table.answer(handles[i], &mut single, answer_cancelled, |id, _, out| {
                        id.write_json(out);
                    });
                settled.push(answered.expect("in flight").expect("in a batch"));
                assert!(table
                    .answer(handles[i], &mut single, true, |_, _, _| {})
                    .is_none());
            }
            assert!(
                single.is_empty(),
                "batch answers never go to the single buffer"
            );
            assert_eq!(settled, [(b, false), (a, false), (a, true), (b, true)]);
            let mut body = |key| table.close_batch(key).expect("open").body;
            let a_body: &[u8] = if answer_cancelled { b"[3,1" } else { b"[1" };
            assert_eq!(
                (body(a).as_slice(), body(b).as_slice()),
                (a_body, &b"[4,2"[..])
            );
            assert_eq!(table.len(), 0);
        }
    }

    /// Every order of arrival and every order of answers: the index by peer id finds
    /// exactly the requests still in flight, by the fast paths (first, last) or the search.
    #[test]
    fn the_peer_id_index_follows_every_order_of_arrival_and_answer() {
        let ids = [7, 3, 12, 100, 5];
        for arrival in permutations(&ids) {
            for answers in permutations(&ids) {
                let mut table = Incoming::default();
                let mut handles = Vec::new();
                for &id in &arrival {
                    let id = Id::number(id);
                    let place = table.place(&id).expect("a new id");
                    handles.push((id.clone(), table.insert(&id, Version::V2, None, place)));
                }
                let mut live: Vec<(Id<'static>, IncomingId)> = handles.clone();
                for &answered in &answers {
                    let at = live.iter().position(|(id, _)| *id == Id::number(answered));
                    let (id, handle) = live.remove(at.expect("in flight"));
                    let entry = table.remove(handle).expect("removed once");
                    assert_eq!(entry.peer_id, id);
                    assert!(table.remove(handle).is_none());
                    for (id, handle) in &live {
                        assert_eq!(table.handle_of(id), Some(*handle));
                        assert_eq!(table.place(id).err(), Some(*handle));
                    }
                    assert_eq!(table.handle_of(&id), None);
                    assert_eq!(table.len(), live.len());
                }
                assert!(table.is_empty());
            }
        }
    }
}
