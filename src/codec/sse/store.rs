//! Where SSE events wait for a client that reconnects with `Last-Event-ID`: bounded in
//! bytes and in age, in memory by default; a durable store (the redb one) keeps them
//! across a restart. Shared by every server that resumes its streams (MCP's Streamable
//! HTTP, A2A's JSON-RPC binding).

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::time::Duration;

use crate::Instant;

/// A store of the SSE events sent on resumable streams, by stream and sequence number.
///
/// Events are appended in sequence order per stream. A store may forget events (its
/// bounds); a replay then gives what it still has, and [`replay`](EventStore::replay)'s
/// return says whether anything after the asked point was forgotten.
pub trait EventStore: Send {
    /// Keeps event `seq` of `stream` (the bytes of one encoded SSE event) at `now`.
    fn append(&mut self, stream: u64, seq: u64, event: &[u8], now: Instant);

    /// Hands the events of `stream` after `after`, in order, to `each`. False when some
    /// of them were forgotten (the bounds), or the stream is unknown.
    fn replay(&mut self, stream: u64, after: u64, each: &mut dyn FnMut(u64, &[u8])) -> bool;

    /// Forgets `stream` (its session ended).
    fn remove(&mut self, stream: u64);

    /// Forgets events older than the store's age bound at `now`.
    fn expire(&mut self, now: Instant);

    /// The owner of `stream` as [`set_owner`](EventStore::set_owner) recorded it, for a
    /// stream the server no longer knows (after a restart).
    fn owner(&self, stream: u64) -> Option<Vec<u8>> {
        let _ = stream;
        None
    }

    /// Records who may resume `stream` (its session id), for a durable store.
    fn set_owner(&mut self, stream: u64, owner: &[u8]) {
        let _ = (stream, owner);
    }

    /// The highest stream number the store holds anything of (0: none). A server started
    /// on a durable store numbers its new streams above it, so an event id from before a
    /// restart never names a new stream.
    fn last_stream(&self) -> u64 {
        0
    }

    /// Makes what was appended since the last call durable. The server's driver calls it
    /// once per turn, after handing the machine its input and before writing what the
    /// machine produced, so a durable store commits once per turn, not once per event.
    fn flush(&mut self) {}
}

/// Events of one stream in memory.
#[derive(Debug, Default)]
struct Kept {
    events: VecDeque<(u64, Instant, Vec<u8>)>,
    /// The highest sequence number forgotten (0: none).
    forgotten: u64,
}

/// The default store: events in memory, at most `max_bytes` in all (the oldest event of
/// any stream goes first) and none older than `max_age`.
#[derive(Debug)]
pub struct MemoryEventStore {
    streams: BTreeMap<u64, Kept>,
    /// Every event kept, oldest first, for the global byte and age bounds; entries of
    /// removed streams stay until they come up or the queue is compacted (at twice the
    /// events kept).
    order: VecDeque<(Instant, u64, u64)>,
    /// Events kept.
    kept: usize,
    bytes: usize,
    max_bytes: usize,
    max_age: Duration,
}

impl MemoryEventStore {
    /// A store of at most `max_bytes` of events, each kept at most `max_age`.
    pub fn new(max_bytes: usize, max_age: Duration) -> Self {
        MemoryEventStore {
            streams: BTreeMap::new(),
            order: VecDeque::new(),
            kept: 0,
            bytes: 0,
            max_bytes,
            max_age,
        }
    }

    /// Bytes of events held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Forgets the oldest event of all.
    fn forget_oldest(&mut self) {
        let Some((_, stream, seq)) = self.order.pop_front() else {
            return;
        };
        if let Some(kept) = self.streams.get_mut(&stream) {
            if kept.events.front().is_some_and(|e| e.0 == seq) {
                let (_, _, bytes) = kept.events.pop_front().unwrap_or_default();
                self.bytes -= bytes.len();
                self.kept -= 1;
                kept.forgotten = kept.forgotten.max(seq);
            }
        }
    }
}

impl EventStore for MemoryEventStore {
    fn append(&mut self, stream: u64, seq: u64, event: &[u8], now: Instant) {
        if event.len() > self.max_bytes {
            let kept = self.streams.entry(stream).or_default();
            kept.forgotten = kept.forgotten.max(seq);
            return;
        }
        while self.bytes + event.len() > self.max_bytes && !self.order.is_empty() {
            self.forget_oldest();
        }
        self.streams
            .entry(stream)
            .or_default()
            .events
            .push_back((seq, now, event.to_vec()));
        self.order.push_back((now, stream, seq));
        self.bytes += event.len();
        self.kept += 1;
    }

    fn replay(&mut self, stream: u64, after: u64, each: &mut dyn FnMut(u64, &[u8])) -> bool {
        let Some(kept) = self.streams.get(&stream) else {
            return false;
        };
        for (seq, _, event) in kept.events.iter().filter(|e| e.0 > after) {
            each(*seq, event);
        }
        kept.forgotten <= after
    }

    fn remove(&mut self, stream: u64) {
        if let Some(kept) = self.streams.remove(&stream) {
            self.bytes -= kept.events.iter().map(|e| e.2.len()).sum::<usize>();
            self.kept -= kept.events.len();
            // Their entries in `order` are skipped when they come up; a queue that is
            // mostly such entries (streams removed before their events aged out) is
            // compacted, so it stays within twice the events kept.
            if self.order.len() > 2 * self.kept + 1024 {
                let streams = &self.streams;
                self.order.retain(|&(_, stream, seq)| {
                    streams
                        .get(&stream)
                        .is_some_and(|k| k.events.binary_search_by_key(&seq, |e| e.0).is_ok())
                });
            }
        }
    }

    fn expire(&mut self, now: Instant) {
        while let Some(&(at, _, _)) = self.order.front() {
            if now.saturating_duration_since(at) < self.max_age {
                break;
            }
            self.forget_oldest();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_age_are_bounded_and_a_replay_says_what_was_lost() {
        let mut store = MemoryEventStore::new(100, Duration::from_secs(10));
        let t = Instant::ZERO;
        for seq in 1..=10 {
            store.append(7, seq, &[b'x'; 20], t + Duration::from_secs(seq));
        }
        assert!(store.bytes() <= 100);
        let mut seen = Vec::new();
        assert!(
            !store.replay(7, 0, &mut |seq, _| seen.push(seq)),
            "the first ones are gone"
        );
        assert_eq!(seen, [6, 7, 8, 9, 10]);
        seen.clear();
        assert!(store.replay(7, 8, &mut |seq, _| seen.push(seq)));
        assert_eq!(seen, [9, 10]);
        store.expire(t + Duration::from_secs(18));
        seen.clear();
        store.replay(7, 8, &mut |seq, _| seen.push(seq));
        assert_eq!(seen, [9, 10]);
        store.expire(t + Duration::from_secs(19));
        seen.clear();
        store.replay(7, 8, &mut |seq, _| seen.push(seq));
        assert_eq!(seen, [10]);
        store.remove(7);
        assert_eq!(store.bytes(), 0);
        assert!(!store.replay(7, 0, &mut |_, _| {}));
    }

    #[test]
    fn removed_streams_leave_nothing_behind() {
        let mut store = MemoryEventStore::new(1 << 20, Duration::from_secs(300));
        let t = Instant::ZERO;
        // A kept stream among many short ones removed as they finish.
        store.append(1, 1, b"kept", t);
        for stream in 2..20_000 {
            store.append(stream, 1, &[b'x'; 100], t);
            store.append(stream, 2, &[b'y'; 100], t);
            store.remove(stream);
        }
        assert_eq!(store.bytes(), 4);
        assert_eq!(store.kept, 1);
        assert_eq!(store.streams.len(), 1);
        assert!(
            store.order.len() <= 2 * store.kept + 1024 + 2,
            "{}",
            store.order.len()
        );
        let mut seen = Vec::new();
        assert!(store.replay(1, 0, &mut |seq, e| seen.push((seq, e.to_vec()))));
        assert_eq!(seen, [(1, b"kept".to_vec())]);
        // The byte bound still forgets the oldest kept event first.
        let mut small = MemoryEventStore::new(10, Duration::from_secs(300));
        small.append(1, 1, b"aaaa", t);
        for stream in 2..3000 {
            small.append(stream, 1, b"b", t);
            small.remove(stream);
        }
        small.append(1, 2, b"cccccccc", t);
        seen.clear();
        assert!(!small.replay(1, 0, &mut |seq, e| seen.push((seq, e.to_vec()))));
        assert_eq!(seen, [(2, b"cccccccc".to_vec())]);
        assert_eq!((small.bytes(), small.kept), (8, 1));
    }
}
