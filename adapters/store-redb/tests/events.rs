//! `RedbEventStore` against real redb files: the semantics of `MemoryEventStore` (checked
//! side by side on a pseudo-random run), durability after `flush`, what a crash keeps, and
//! the age bound across a reopen.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use sansrpc::Instant;
use sansrpc_mcp::streamable::{EventStore, MemoryEventStore};
use sansrpc_store_redb::RedbEventStore;

const CHILD_ENV: &str = "SANSRPC_REDB_EVENTS_CHILD";

fn at(secs: u64) -> Instant {
    Instant::from_millis(secs * 1000)
}

/// A 20-byte event naming its stream and sequence number.
fn event(stream: u64, seq: u64) -> Vec<u8> {
    format!("id: {stream:04}/{seq:04}\n\n\n\n\n\n\n\n")
        .into_bytes()
        .into_iter()
        .take(20)
        .collect()
}

/// What a replay gave and returned.
fn replay(store: &mut dyn EventStore, stream: u64, after: u64) -> (bool, Vec<(u64, Vec<u8>)>) {
    let mut seen = Vec::new();
    let complete = store.replay(stream, after, &mut |seq, bytes| {
        seen.push((seq, bytes.to_vec()))
    });
    (complete, seen)
}

/// The events `(seq, event(stream, seq))` for each of `seqs`.
fn events(stream: u64, seqs: &[u64]) -> Vec<(u64, Vec<u8>)> {
    seqs.iter().map(|&seq| (seq, event(stream, seq))).collect()
}

fn open(path: &Path, max_bytes: usize, max_age: Duration) -> RedbEventStore {
    let store = RedbEventStore::open(path, max_bytes, max_age).expect("the store opens");
    assert_eq!(store.errors(), 0);
    store
}

#[test]
fn bytes_and_age_are_bounded_and_a_replay_says_what_was_lost() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("e.redb"), 100, Duration::from_secs(10));
    for seq in 1..=10 {
        store.append(7, seq, &event(7, seq), at(seq));
    }
    assert_eq!(store.bytes(), 100);
    assert_eq!(
        replay(&mut store, 7, 0),
        (false, events(7, &[6, 7, 8, 9, 10])),
        "the first ones are gone"
    );
    assert_eq!(
        replay(&mut store, 7, 5),
        (true, events(7, &[6, 7, 8, 9, 10]))
    );
    assert_eq!(replay(&mut store, 7, 8), (true, events(7, &[9, 10])));
    // Event n was appended at n s: at 15 s, 6 is 9 s old; at 17 s, 7 is 10 s old.
    store.expire(at(15));
    assert_eq!(
        replay(&mut store, 7, 5),
        (true, events(7, &[6, 7, 8, 9, 10]))
    );
    store.expire(at(17));
    assert_eq!(replay(&mut store, 7, 5), (false, events(7, &[8, 9, 10])));
    assert_eq!(replay(&mut store, 7, 7), (true, events(7, &[8, 9, 10])));
    store.flush();
    store.expire(at(18));
    assert_eq!(replay(&mut store, 7, 8), (true, events(7, &[9, 10])));
    store.expire(at(19));
    assert_eq!(replay(&mut store, 7, 8), (false, events(7, &[10])));
    assert_eq!(replay(&mut store, 7, 9), (true, events(7, &[10])));
    assert_eq!(store.bytes(), 20);
    store.flush();
    store.expire(at(20));
    assert_eq!(replay(&mut store, 7, 9), (false, vec![]));
    assert_eq!(replay(&mut store, 7, 10), (true, vec![]));
    assert_eq!(store.bytes(), 0);
    store.append(7, 11, &event(7, 11), at(21));
    store.remove(7);
    assert_eq!(store.bytes(), 0);
    assert_eq!(replay(&mut store, 7, 0), (false, vec![]));
    store.flush();
    assert_eq!(replay(&mut store, 7, 0), (false, vec![]));
    assert_eq!(store.errors(), 0);
}

#[test]
fn the_oldest_event_of_any_stream_goes_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("e.redb"), 60, Duration::from_secs(3600));
    store.append(1, 1, &event(1, 1), at(1));
    store.append(2, 1, &event(2, 1), at(2));
    store.append(1, 2, &event(1, 2), at(3));
    store.flush();
    store.append(2, 2, &event(2, 2), at(4));
    // 80 bytes over 60: stream 1's first event went.
    assert_eq!(store.bytes(), 60);
    assert_eq!(replay(&mut store, 1, 0), (false, events(1, &[2])));
    assert_eq!(replay(&mut store, 1, 1), (true, events(1, &[2])));
    assert_eq!(replay(&mut store, 2, 0), (true, events(2, &[1, 2])));
    store.append(2, 3, &event(2, 3), at(5));
    assert_eq!(replay(&mut store, 2, 0), (false, events(2, &[2, 3])));
    assert_eq!(replay(&mut store, 1, 0), (false, events(1, &[2])));
    store.append(3, 1, &event(3, 1), at(6));
    assert_eq!(replay(&mut store, 1, 0), (false, vec![]));
    assert_eq!(
        replay(&mut store, 1, 2),
        (true, vec![]),
        "known, all forgotten"
    );
    assert_eq!(replay(&mut store, 2, 1), (true, events(2, &[2, 3])));
    assert_eq!(replay(&mut store, 3, 0), (true, events(3, &[1])));
    assert_eq!(replay(&mut store, 4, 0), (false, vec![]), "unknown");
    assert_eq!(store.bytes(), 60);
}

#[test]
fn an_event_larger_than_the_bound_is_not_kept_and_counts_as_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("e.redb"), 50, Duration::from_secs(3600));
    store.append(5, 1, &event(5, 1), at(1));
    store.append(5, 2, &[b'x'; 51], at(2));
    store.append(5, 3, &event(5, 3), at(3));
    assert_eq!(
        store.bytes(),
        40,
        "the big one is not kept, nothing else went"
    );
    assert_eq!(replay(&mut store, 5, 0), (false, events(5, &[1, 3])));
    assert_eq!(replay(&mut store, 5, 1), (false, events(5, &[3])));
    assert_eq!(replay(&mut store, 5, 2), (true, events(5, &[3])));
    // A first event too large still makes the stream known (its only event was forgotten).
    store.append(6, 1, &[b'y'; 60], at(4));
    assert_eq!(replay(&mut store, 6, 0), (false, vec![]));
    assert_eq!(replay(&mut store, 6, 1), (true, vec![]));
    // Exactly the bound is kept, everything else goes.
    store.append(6, 2, &[b'z'; 50], at(5));
    assert_eq!(store.bytes(), 50);
    assert_eq!(replay(&mut store, 6, 1), (true, vec![(2, vec![b'z'; 50])]));
    assert_eq!(replay(&mut store, 5, 2), (false, vec![]));
}

#[test]
fn remove_forgets_a_stream_its_events_and_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("e.redb"), 1000, Duration::from_secs(3600));
    store.set_owner(1, b"session-1");
    store.set_owner(2, b"session-2");
    for seq in 1..=3 {
        store.append(1, seq, &event(1, seq), at(seq));
        store.append(2, seq, &event(2, seq), at(seq));
    }
    store.flush();
    store.append(1, 4, &event(1, 4), at(4));
    store.remove(1);
    assert_eq!(store.bytes(), 60);
    assert_eq!(replay(&mut store, 1, 0), (false, vec![]));
    assert_eq!(store.owner(1), None);
    assert_eq!(store.owner(2).as_deref(), Some(&b"session-2"[..]));
    assert_eq!(replay(&mut store, 2, 0), (true, events(2, &[1, 2, 3])));
    // The byte bound no longer counts what was removed.
    store.flush();
    store.remove(9);
    assert_eq!(replay(&mut store, 9, 0), (false, vec![]));
    assert_eq!(store.last_stream(), 2, "never lowered");
    drop(store);

    let mut store = open(&dir.path().join("e.redb"), 1000, Duration::from_secs(3600));
    assert_eq!(store.bytes(), 60);
    assert_eq!(replay(&mut store, 1, 0), (false, vec![]));
    assert_eq!(store.owner(1), None);
    assert_eq!(replay(&mut store, 2, 0), (true, events(2, &[1, 2, 3])));
}

#[test]
fn unflushed_writes_are_visible_before_the_flush() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(&dir.path().join("e.redb"), 1000, Duration::from_secs(3600));
    store.append(3, 1, &event(3, 1), at(1));
    store.flush();
    store.append(3, 2, &event(3, 2), at(2));
    store.set_owner(4, b"s4");
    store.append(4, 1, &event(4, 1), at(3));
    assert_eq!(replay(&mut store, 3, 0), (true, events(3, &[1, 2])));
    assert_eq!(replay(&mut store, 4, 0), (true, events(4, &[1])));
    assert_eq!(store.owner(4).as_deref(), Some(&b"s4"[..]));
    assert_eq!(store.last_stream(), 4);
    assert_eq!(store.bytes(), 60);
    store.remove(4);
    assert_eq!(replay(&mut store, 4, 0), (false, vec![]));
    store.flush();
    assert_eq!(replay(&mut store, 3, 1), (true, events(3, &[2])));
    assert_eq!(store.errors(), 0);
}

#[test]
fn events_owners_and_last_stream_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.redb");
    let mut store = open(&path, 100, Duration::from_secs(3600));
    assert_eq!(store.last_stream(), 0);
    store.set_owner(11, b"session-a");
    store.set_owner(12, b"session-b");
    for seq in 1..=4 {
        store.append(11, seq, &event(11, seq), at(seq));
    }
    for seq in 1..=2 {
        store.append(12, seq, &event(12, seq), at(10 + seq));
    }
    store.set_owner(13, b"session-c");
    store.flush();
    drop(store);

    let mut store = open(&path, 100, Duration::from_secs(3600));
    assert_eq!(store.bytes(), 100);
    assert_eq!(store.last_stream(), 13);
    assert_eq!(store.owner(11).as_deref(), Some(&b"session-a"[..]));
    assert_eq!(store.owner(12).as_deref(), Some(&b"session-b"[..]));
    assert_eq!(store.owner(13).as_deref(), Some(&b"session-c"[..]));
    assert_eq!(store.owner(14), None);
    assert_eq!(replay(&mut store, 11, 0), (false, events(11, &[2, 3, 4])));
    assert_eq!(replay(&mut store, 11, 1), (true, events(11, &[2, 3, 4])));
    assert_eq!(replay(&mut store, 12, 0), (true, events(12, &[1, 2])));
    assert_eq!(
        replay(&mut store, 13, 0),
        (false, vec![]),
        "an owner, no events"
    );
    // The global order goes on where it was: stream 11's events are the oldest.
    store.append(12, 3, &event(12, 3), at(1));
    assert_eq!(replay(&mut store, 11, 1), (false, events(11, &[3, 4])));
    assert_eq!(replay(&mut store, 12, 0), (true, events(12, &[1, 2, 3])));
    // Dropping commits too.
    store.append(20, 1, &event(20, 1), at(2));
    drop(store);

    // A smaller bound applies at once.
    let mut store = open(&path, 40, Duration::from_secs(3600));
    assert_eq!(store.last_stream(), 20);
    assert_eq!(store.bytes(), 40);
    assert_eq!(replay(&mut store, 12, 0), (false, events(12, &[3])));
    assert_eq!(replay(&mut store, 20, 0), (true, events(20, &[1])));
    assert_eq!(replay(&mut store, 11, 0), (false, vec![]));
}

#[test]
fn the_age_bound_holds_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.redb");
    let mut store = open(&path, 1000, Duration::from_secs(10));
    // The first process's clock reads 1000 s and more.
    store.append(1, 1, &event(1, 1), at(1000));
    store.append(1, 2, &event(1, 2), at(1004));
    store.append(1, 3, &event(1, 3), at(1008));
    store.flush();
    drop(store);

    // The next process's clock starts lower: the events keep the ages they had (0..8 s of
    // store time at the last commit), whatever the driver's instants.
    let mut store = open(&path, 1000, Duration::from_secs(10));
    store.expire(at(5));
    assert_eq!(replay(&mut store, 1, 0), (true, events(1, &[1, 2, 3])));
    store.expire(at(6));
    assert_eq!(replay(&mut store, 1, 0), (true, events(1, &[1, 2, 3])));
    store.expire(at(7));
    assert_eq!(replay(&mut store, 1, 0), (false, events(1, &[2, 3])));
    store.append(1, 4, &event(1, 4), at(8));
    store.flush();
    drop(store);

    // An expire that forgets nothing still saves the clock (after the next flush).
    let mut store = open(&path, 1000, Duration::from_secs(10));
    store.expire(at(500));
    assert_eq!(replay(&mut store, 1, 0), (false, events(1, &[2, 3, 4])));
    store.expire(at(502));
    assert_eq!(replay(&mut store, 1, 0), (false, events(1, &[2, 3, 4])));
    store.flush();
    drop(store);

    // Store time is now 13 s: event 2 (4 s) is 9 s old, event 3 5 s, event 4 2 s.
    let mut store = open(&path, 1000, Duration::from_secs(10));
    store.expire(at(0));
    assert_eq!(replay(&mut store, 1, 1), (true, events(1, &[2, 3, 4])));
    store.expire(at(1));
    assert_eq!(replay(&mut store, 1, 2), (true, events(1, &[3, 4])));
    assert_eq!(replay(&mut store, 1, 1), (false, events(1, &[3, 4])));
    store.expire(at(5));
    assert_eq!(replay(&mut store, 1, 3), (true, events(1, &[4])));
    store.expire(at(8));
    assert_eq!(replay(&mut store, 1, 3), (false, vec![]));
    assert_eq!(replay(&mut store, 1, 4), (true, vec![]));
    assert_eq!(store.bytes(), 0);
    assert_eq!(store.errors(), 0);
}

/// A tiny deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[test]
fn it_behaves_as_the_memory_store_on_a_random_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.redb");
    let (max_bytes, max_age) = (400, Duration::from_secs(30));
    let mut memory = MemoryEventStore::new(max_bytes, max_age);
    let mut redb = open(&path, max_bytes, max_age);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Streams are never reused once removed (as in the server).
    let mut live: Vec<(u64, u64)> = vec![(1, 0)];
    let mut next_stream = 2;
    let mut now = Duration::from_secs(100);
    let (mut reopens, mut forgotten_replays) = (0, 0);
    for step in 0..2000 {
        match rng.below(100) {
            0..=54 => {
                let i = rng.below(live.len() as u64) as usize;
                let (stream, seq) = &mut live[i];
                *seq += 1;
                let len = match rng.below(20) {
                    0 => 401,
                    1 => 0,
                    _ => 1 + rng.below(80) as usize,
                };
                let event: Vec<u8> = (0..len).map(|b| (b as u64 + *seq * 7) as u8).collect();
                let t = Instant::from_duration(now);
                memory.append(*stream, *seq, &event, t);
                redb.append(*stream, *seq, &event, t);
            }
            55..=64 => {
                now += Duration::from_millis(rng.below(8000));
                let t = Instant::from_duration(now);
                memory.expire(t);
                redb.expire(t);
            }
            65..=69 => {
                live.push((next_stream, 0));
                next_stream += 1;
            }
            70..=72 if live.len() > 1 => {
                let i = rng.below(live.len() as u64) as usize;
                let (stream, _) = live.swap_remove(i);
                memory.remove(stream);
                redb.remove(stream);
            }
            73..=78 => redb.flush(),
            79..=80 => {
                // A restart taking no time: the store clock is saved at `now` and the next
                // process's clock starts from it at its first instant, `now` again; so the
                // ages stay the memory store's.
                let t = Instant::from_duration(now);
                memory.expire(t);
                redb.expire(t);
                redb.flush();
                drop(redb);
                redb = open(&path, max_bytes, max_age);
                redb.expire(t);
                reopens += 1;
            }
            _ => now += Duration::from_millis(rng.below(3000)),
        }
        assert_eq!(redb.bytes(), memory.bytes(), "bytes after step {step}");
        // The live streams, and one of any (removed, or never known).
        let mut check: Vec<u64> = live.iter().map(|l| l.0).collect();
        check.push(rng.below(next_stream + 1));
        for stream in check {
            let seq = live.iter().find(|l| l.0 == stream).map_or(0, |l| l.1);
            let after = rng.below(seq + 2);
            let expected = replay(&mut memory, stream, after);
            forgotten_replays += usize::from(!expected.0 && !expected.1.is_empty());
            assert_eq!(
                replay(&mut redb, stream, after),
                expected,
                "stream {stream} after {after} at step {step}"
            );
        }
    }
    assert!(
        reopens > 20 && forgotten_replays > 100,
        "the run tried enough"
    );
    assert_eq!(redb.errors(), 0);
}

/// The crash child: writes, flushes some of it, and exits without dropping the store.
fn crash_child(path: &Path, flush_bytes: usize) -> ! {
    let mut store = RedbEventStore::open(path, 1 << 20, Duration::from_secs(3600))
        .unwrap()
        .with_flush_bytes(flush_bytes);
    store.set_owner(1, b"session-1");
    for seq in 1..=3 {
        store.append(1, seq, &event(1, seq), at(seq));
    }
    store.flush();
    store.set_owner(2, b"session-2");
    for seq in 4..=9 {
        store.append(1, seq, &event(1, seq), at(seq));
    }
    assert_eq!(store.errors(), 0);
    // No destructor runs: what is not committed stays so.
    std::process::exit(0)
}

/// Runs `crash_child` in a child process (this test binary, re-executed on `test`).
fn run_child(test: &str, path: &Path, flush_bytes: usize) {
    let status = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{flush_bytes} {}", path.display()))
        .status()
        .unwrap();
    assert!(status.success());
}

/// The child's arguments, in the child.
fn child_args() -> Option<(usize, std::path::PathBuf)> {
    let arg = std::env::var(CHILD_ENV).ok()?;
    let (flush_bytes, path) = arg.split_once(' ').unwrap();
    Some((flush_bytes.parse().unwrap(), path.into()))
}

#[test]
fn a_crash_loses_what_was_not_flushed() {
    if let Some((flush_bytes, path)) = child_args() {
        crash_child(&path, flush_bytes);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.redb");
    run_child("a_crash_loses_what_was_not_flushed", &path, 1 << 20);
    let mut store = open(&path, 1 << 20, Duration::from_secs(3600));
    assert_eq!(replay(&mut store, 1, 0), (true, events(1, &[1, 2, 3])));
    assert_eq!(store.owner(1).as_deref(), Some(&b"session-1"[..]));
    assert_eq!(store.owner(2), None);
    assert_eq!(store.last_stream(), 1);
    assert_eq!(store.bytes(), 60);
}

#[test]
fn a_crash_keeps_what_was_committed_for_the_byte_bound() {
    if let Some((flush_bytes, path)) = child_args() {
        crash_child(&path, flush_bytes);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.redb");
    // Commits once 70 bytes were written since the last commit: the owner (9 bytes) and 3
    // events (69) wait for the flush; the second owner and events 4 to 7 (89) commit; events
    // 8 and 9 (40) are lost.
    run_child(
        "a_crash_keeps_what_was_committed_for_the_byte_bound",
        &path,
        70,
    );
    let mut store = open(&path, 1 << 20, Duration::from_secs(3600));
    assert_eq!(
        replay(&mut store, 1, 0),
        (true, events(1, &[1, 2, 3, 4, 5, 6, 7]))
    );
    assert_eq!(store.owner(2).as_deref(), Some(&b"session-2"[..]));
    assert_eq!(store.last_stream(), 2);
    assert_eq!(store.bytes(), 140);
}
