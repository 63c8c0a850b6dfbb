//! The wire's framed output: one buffer, the frames in it, and how much of it the
//! driver has taken.
//!
//! The driver takes output either a frame at a time (a copy into its own buffer, what a
//! message transport needs) or as bytes straight from this buffer (peek, write, consume:
//! what a byte stream needs). Either way the consumed prefix is reclaimed as it grows, so
//! the memory held stays proportional to what is pending however the driver drains it:
//! a driver that never empties the buffer (it takes a part per turn while more is queued)
//! cannot make it grow.
//!
//! A frame may hold a shared item (a fan-out's notification, serialized once for every
//! subscriber): its bytes are not copied into the buffer, which keeps the frame's bytes
//! before and after it; the frame reads as three runs ([`parts`](Output::parts)), and
//! [`materialize`](Output::materialize) copies the items in for a driver that wants one
//! run of bytes.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::raw::RawValue;
use crate::sync::Arc;

/// Consumed bytes kept at the front before the rest is moved down: below this a move is
/// not worth its copy.
const COMPACT_AT: usize = 4 * 1024;

/// Capacity an emptied buffer keeps; a larger one (after a burst) is given back.
const KEEP: usize = 64 * 1024;

/// An item shared by the frames of many connections.
pub(crate) type Shared = Arc<RawValue>;

/// A frame's shared item: in frame number `frame`, `at` bytes of the buffer after the
/// frame's start.
#[derive(Debug)]
struct Hole {
    frame: u64,
    at: usize,
    item: Shared,
}

impl Hole {
    /// Bytes of the buffer behind the first `taken` bytes of its frame.
    #[inline]
    fn stored_in(&self, taken: usize) -> usize {
        let len = self.item.get().len();
        if taken <= self.at {
            taken
        } else if taken <= self.at + len {
            self.at
        } else {
            taken - len
        }
    }

    /// Bytes of the item in the first `taken` bytes of its frame.
    #[inline]
    fn item_in(&self, taken: usize) -> usize {
        taken.saturating_sub(self.at).min(self.item.get().len())
    }

    /// Its frame's bytes from `taken` on, as three runs (some empty): `rest` is what of it
    /// the buffer holds from there.
    #[inline]
    fn parts<'a>(&'a self, rest: &'a [u8], taken: usize) -> [&'a [u8]; 3] {
        let item = self.item.get().as_bytes();
        if taken <= self.at {
            let (before, after) = rest.split_at(self.at - taken);
            [before, item, after]
        } else if taken < self.at + item.len() {
            [&item[taken - self.at..], rest, &[]]
        } else {
            [rest, &[], &[]]
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Output {
    buf: Vec<u8>,
    /// `buf[..head]` is consumed.
    head: usize,
    /// The length (shared items included) and tag of each frame from `head` on; the first
    /// may be partly consumed (`front_taken` bytes of it).
    frames: VecDeque<(usize, u64)>,
    front_taken: usize,
    /// Bytes consumed since the start.
    total: u64,
    /// Frames consumed since the start: the number of the front one.
    popped: u64,
    /// The frames that hold a shared item, in order.
    holes: VecDeque<Hole>,
    /// Bytes of the shared items not consumed.
    held: usize,
}

impl Output {
    /// Bytes queued and not consumed.
    pub(super) fn len(&self) -> usize {
        self.buf.len() - self.head + self.held
    }

    /// True when no frame waits.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // the crate's own tests use it
    pub(super) fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Bytes consumed since the start.
    pub(super) fn total(&self) -> u64 {
        self.total
    }

    /// Bytes of memory the buffer holds (its capacity).
    pub(super) fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Appends one frame written by `write`, with `tag`.
    #[inline]
    pub(super) fn push(&mut self, tag: u64, write: impl FnOnce(&mut Vec<u8>)) {
        let before = self.buf.len();
        write(&mut self.buf);
        let len = self.buf.len() - before;
        if len > 0 {
            self.frames.push_back((len, tag));
        }
    }

    /// Appends one frame, with `tag`: what `head` writes, then `item` (held, not copied),
    /// then `tail`.
    pub(super) fn push_shared(
        &mut self,
        tag: u64,
        head: impl FnOnce(&mut Vec<u8>),
        item: &Shared,
        tail: &[u8],
    ) {
        let before = self.buf.len();
        head(&mut self.buf);
        let at = self.buf.len() - before;
        self.buf.extend_from_slice(tail);
        let len = item.get().len();
        self.holes.push_back(Hole {
            frame: self.popped + self.frames.len() as u64,
            at,
            item: item.clone(),
        });
        self.held += len;
        self.frames.push_back((self.buf.len() - before + len, tag));
    }

    /// The shared item of the front frame, if it holds one.
    #[inline]
    fn front_hole(&self) -> Option<&Hole> {
        self.holes.front().filter(|h| h.frame == self.popped)
    }

    /// The front frame is consumed whole (`len` of it, `stored` bytes of the buffer, from
    /// where it was consumed to).
    #[inline]
    fn pop(&mut self, len: usize, stored: usize) {
        self.frames.pop_front();
        if self.front_hole().is_some() {
            let hole = self.holes.pop_front();
            let taken = hole.map_or(0, |h| h.item.get().len() - h.item_in(self.front_taken));
            self.held -= taken;
        }
        self.head += stored;
        self.total += (len - self.front_taken) as u64;
        self.popped += 1;
        self.front_taken = 0;
    }

    /// Copies every shared item into the buffer, where its frame has it: the output is
    /// then one run of bytes ([`bytes`](Output::bytes)). Moves only what was queued from
    /// the first such frame on.
    pub(super) fn materialize(&mut self) {
        let Some(first) = self.holes.front() else {
            return;
        };
        // The frames before the first with an item are in the buffer as they are.
        let first = (first.frame - self.popped) as usize;
        let before: usize = self.frames.iter().take(first).map(|f| f.0).sum();
        let taken = if first > 0 { self.front_taken } else { 0 };
        let stored = self.buf.split_off(self.head + before - taken);
        let mut from = 0;
        let mut taken = if first == 0 { self.front_taken } else { 0 };
        let mut holes = core::mem::take(&mut self.holes).into_iter().peekable();
        for (i, &(len, _)) in self.frames.iter().enumerate().skip(first) {
            let frame = self.popped + i as u64;
            match holes.next_if(|h| h.frame == frame) {
                Some(h) => {
                    let n = len - h.item.get().len() - h.stored_in(taken);
                    for part in h.parts(&stored[from..from + n], taken) {
                        self.buf.extend_from_slice(part);
                    }
                    from += n;
                }
                None => {
                    let n = len - taken;
                    self.buf.extend_from_slice(&stored[from..from + n]);
                    from += n;
                }
            }
            taken = 0;
        }
        self.held = 0;
    }

    /// Everything queued, as one run of bytes; only once no frame holds a shared item
    /// ([`materialize`](Output::materialize)).
    pub(super) fn bytes(&self) -> &[u8] {
        debug_assert!(self.holes.is_empty(), "materialize first");
        &self.buf[self.head..]
    }

    /// The frames queued, in order, each as three runs of bytes (some empty; more than
    /// one only where a frame holds a shared item): the first without what of it was
    /// consumed.
    pub(super) fn parts(&self) -> Parts<'_> {
        Parts {
            out: self,
            next: 0,
            at: self.head,
            hole: 0,
        }
    }

    /// The frames queued, in order: the first without what of it was consumed; only once
    /// no frame holds a shared item ([`materialize`](Output::materialize)).
    pub(super) fn frames(&self) -> impl Iterator<Item = &[u8]> + '_ {
        debug_assert!(self.holes.is_empty(), "materialize first");
        let mut at = self.head;
        let mut taken = self.front_taken;
        self.frames.iter().map(move |&(len, _)| {
            let len = len - core::mem::take(&mut taken);
            let frame = &self.buf[at..at + len];
            at += len;
            frame
        })
    }

    /// The rest of the next frame (all of it unless bytes of it were consumed), and its tag.
    #[cfg(test)]
    pub(super) fn front(&self) -> Option<(Vec<u8>, u64)> {
        let tag = self.frames.front()?.1;
        let parts = self.parts().next()?;
        Some((parts.concat(), tag))
    }

    /// Appends the rest of the next frame to `out` and consumes it, as
    /// [`front`](Output::front) then [`consume`](Output::consume) of its length would: its
    /// length and tag.
    #[inline]
    pub(super) fn take_front(&mut self, out: &mut Vec<u8>) -> Option<(usize, u64)> {
        if !self.holes.is_empty() {
            return self.take_front_shared(out);
        }
        let (len, tag) = self.frames.pop_front()?;
        let len = len - self.front_taken;
        out.extend_from_slice(&self.buf[self.head..self.head + len]);
        self.head += len;
        self.total += len as u64;
        self.popped += 1;
        self.front_taken = 0;
        self.reclaim();
        Some((len, tag))
    }

    /// [`take_front`](Output::take_front) where some frame holds a shared item.
    #[inline(never)]
    fn take_front_shared(&mut self, out: &mut Vec<u8>) -> Option<(usize, u64)> {
        let &(len, tag) = self.frames.front()?;
        let taken = self.front_taken;
        let stored = match self.front_hole() {
            None => {
                let stored = len - taken;
                out.extend_from_slice(&self.buf[self.head..self.head + stored]);
                stored
            }
            Some(h) => {
                let stored = len - h.item.get().len() - h.stored_in(taken);
                for part in h.parts(&self.buf[self.head..self.head + stored], taken) {
                    out.extend_from_slice(part);
                }
                stored
            }
        };
        self.pop(len, stored);
        self.reclaim();
        Some((len - taken, tag))
    }

    /// `n` bytes from the front are written (at most [`len`](Output::len)).
    pub(super) fn consume(&mut self, mut n: usize) {
        if !self.holes.is_empty() {
            return self.consume_shared(n);
        }
        n = n.min(self.len());
        self.head += n;
        self.total += n as u64;
        while n > 0 {
            let Some((front, _)) = self.frames.front_mut() else {
                break;
            };
            let rest = *front - self.front_taken;
            if n >= rest {
                n -= rest;
                self.frames.pop_front();
                self.popped += 1;
                self.front_taken = 0;
            } else {
                self.front_taken += n;
                n = 0;
            }
        }
        self.reclaim();
    }

    /// [`consume`](Output::consume) where some frame holds a shared item.
    #[inline(never)]
    fn consume_shared(&mut self, mut n: usize) {
        let len = self.len();
        if n >= len {
            // All of it (a subscriber's notification written whole, most often).
            self.total += len as u64;
            self.popped += self.frames.len() as u64;
            self.frames.clear();
            self.holes.clear();
            self.held = 0;
            self.head = self.buf.len();
            self.reclaim();
            return;
        }
        while n > 0 {
            let Some(&(len, _)) = self.frames.front() else {
                break;
            };
            let taken = self.front_taken;
            let rest = len - taken;
            match self.front_hole() {
                None if n >= rest => {
                    n -= rest;
                    self.pop(len, rest);
                }
                None => {
                    self.front_taken += n;
                    self.head += n;
                    self.total += n as u64;
                    n = 0;
                }
                Some(h) if n >= rest => {
                    let stored = len - h.item.get().len() - h.stored_in(taken);
                    n -= rest;
                    self.pop(len, stored);
                }
                Some(h) => {
                    let (stored, item) = (h.stored_in(taken), h.item_in(taken));
                    let now = taken + n;
                    let (stored, item) = (h.stored_in(now) - stored, h.item_in(now) - item);
                    self.front_taken = now;
                    self.head += stored;
                    self.held -= item;
                    self.total += n as u64;
                    n = 0;
                }
            }
        }
        self.reclaim();
    }

    /// Gives back what is consumed: all of it once everything is, else the consumed prefix
    /// once it is at least half the buffer (each byte is moved at most once for each byte
    /// consumed, and the buffer holds at most twice what is pending).
    #[inline]
    fn reclaim(&mut self) {
        if self.head == self.buf.len() && self.held == 0 {
            self.buf.clear();
            self.head = 0;
            self.frames.clear();
            self.front_taken = 0;
            if self.buf.capacity() > KEEP {
                self.buf.shrink_to(KEEP);
            }
        } else if self.head >= COMPACT_AT && self.head * 2 >= self.buf.len() {
            self.buf.copy_within(self.head.., 0);
            self.buf.truncate(self.buf.len() - self.head);
            self.head = 0;
        }
    }
}

/// The frames of an [`Output`], each as three runs of bytes ([`Output::parts`]).
pub(crate) struct Parts<'a> {
    out: &'a Output,
    /// The index of the next frame.
    next: usize,
    /// Where its bytes start in the buffer.
    at: usize,
    /// The index of the first hole not behind us.
    hole: usize,
}

impl<'a> Iterator for Parts<'a> {
    type Item = [&'a [u8]; 3];

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let out = self.out;
        let &(len, _) = out.frames.get(self.next)?;
        let taken = if self.next == 0 { out.front_taken } else { 0 };
        let frame = out.popped + self.next as u64;
        self.next += 1;
        match out.holes.get(self.hole).filter(|h| h.frame == frame) {
            Some(h) => {
                self.hole += 1;
                let n = len - h.item.get().len() - h.stored_in(taken);
                let parts = h.parts(&out.buf[self.at..self.at + n], taken);
                self.at += n;
                Some(parts)
            }
            None => {
                let n = len - taken;
                let frame = &out.buf[self.at..self.at + n];
                self.at += n;
                Some([frame, &[], &[]])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::borrow::ToOwned;

    fn frame(out: &mut Output, bytes: &[u8]) {
        out.push(0, |b| b.extend_from_slice(bytes));
    }

    #[test]
    fn frames_come_out_whole_or_in_parts() {
        let mut out = Output::default();
        frame(&mut out, b"abc");
        frame(&mut out, b"defg");
        assert_eq!(out.bytes(), b"abcdefg");
        out.consume(2);
        assert_eq!(out.front(), Some((b"c".to_vec(), 0)));
        out.consume(1);
        assert_eq!(out.front(), Some((b"defg".to_vec(), 0)));
        out.consume(4);
        assert!(out.is_empty());
        frame(&mut out, b"hij");
        frame(&mut out, b"kl");
        out.consume(1);
        let mut taken = Vec::new();
        assert_eq!(out.take_front(&mut taken), Some((2, 0)));
        assert_eq!(out.take_front(&mut taken), Some((2, 0)));
        assert_eq!(taken, b"ijkl");
        assert_eq!(out.take_front(&mut taken), None);
        assert_eq!(out.total(), 12);
        assert!(out.is_empty());
        assert_eq!(out.len(), 0);
        assert_eq!(out.front(), None);
    }

    #[test]
    fn frames_are_listed_one_by_one_the_first_without_what_was_consumed() {
        let mut out = Output::default();
        assert_eq!(out.frames().count(), 0);
        frame(&mut out, b"abc");
        frame(&mut out, b"defg");
        frame(&mut out, b"h");
        let all: Vec<&[u8]> = out.frames().collect();
        assert_eq!(all, [&b"abc"[..], b"defg", b"h"]);
        out.consume(4);
        let rest: Vec<&[u8]> = out.frames().collect();
        assert_eq!(rest, [&b"efg"[..], b"h"]);
        out.consume(3);
        let rest: Vec<&[u8]> = out.frames().collect();
        assert_eq!(rest, [&b"h"[..]]);
        out.consume(1);
        assert_eq!(out.frames().count(), 0);
    }

    #[test]
    fn partial_drains_under_steady_load_keep_the_buffer_bounded() {
        let mut out = Output::default();
        let answer = [b'x'; 60];
        let mut peak = 0;
        // Each turn queues 1,000 frames and takes all but about one frame's worth: the
        // buffer never empties, and used to grow without bound.
        for _ in 0..2_000 {
            for _ in 0..1_000 {
                frame(&mut out, &answer);
            }
            let take = out.len() - 59;
            out.consume(take);
            peak = peak.max(out.capacity());
        }
        assert!(!out.is_empty());
        // 1,000 frames a turn is 60 KB; twice what is pending and the allocator's rounding.
        assert!(peak <= 256 * 1024, "peak capacity {peak}");
    }

    fn shared(json: &str) -> Shared {
        Shared::from(RawValue::from_validated(json).to_owned())
    }

    /// `out`'s frames, each whole as its parts give it.
    fn listed(out: &Output) -> Vec<Vec<u8>> {
        out.parts().map(|p| p.concat()).collect()
    }

    #[test]
    fn a_shared_item_reads_in_its_frame_however_the_frame_is_consumed() {
        let item = shared("[1,2,3]");
        // Every split of the queue's bytes, consumed in two steps, reads as the same bytes.
        let whole = b"ab<[1,2,3]>cd<[1,2,3]>".to_vec();
        for first in 0..=whole.len() {
            let mut out = Output::default();
            frame(&mut out, b"ab");
            out.push_shared(7, |b| b.push(b'<'), &item, b">");
            frame(&mut out, b"cd");
            out.push_shared(8, |b| b.push(b'<'), &item, b">");
            assert_eq!(out.len(), whole.len());
            out.consume(first);
            assert_eq!(out.len(), whole.len() - first);
            assert_eq!(listed(&out).concat(), &whole[first..], "after {first}");
            // Taken frame by frame from there, by copy.
            let mut taken = Vec::new();
            while out.take_front(&mut taken).is_some() {}
            assert_eq!(taken, &whole[first..], "after {first}");
            assert_eq!(out.total(), whole.len() as u64);
            assert!(out.is_empty());
        }
    }

    #[test]
    fn shared_items_consume_in_any_steps() {
        let item = shared("[10,20]");
        let whole = b"<[10,20]>ab[10,20]<[10,20]".to_vec();
        for first in 0..=whole.len() {
            for second in 0..=whole.len() - first {
                let mut out = Output::default();
                out.push_shared(1, |b| b.push(b'<'), &item, b">");
                frame(&mut out, b"ab");
                out.push_shared(2, |_| {}, &item, b"");
                out.push_shared(3, |b| b.push(b'<'), &item, b"");
                out.consume(first);
                out.consume(second);
                let at = first + second;
                assert_eq!(out.len(), whole.len() - at, "{first} then {second}");
                assert_eq!(listed(&out).concat(), &whole[at..], "{first} then {second}");
                let mut taken = Vec::new();
                while out.take_front(&mut taken).is_some() {}
                assert_eq!(taken, &whole[at..], "{first} then {second}");
                assert_eq!(out.len(), 0);
                assert_eq!(out.total(), whole.len() as u64);
                // Emptied: the buffer is reused from its start.
                frame(&mut out, b"z");
                assert_eq!(out.bytes(), b"z");
            }
        }
    }

    #[test]
    fn materialized_output_is_the_same_bytes_in_one_run() {
        let item = shared("{\"n\":1}");
        let whole = b"x<{\"n\":1}>yz<{\"n\":1}>".to_vec();
        for first in 0..=whole.len() {
            let mut out = Output::default();
            frame(&mut out, b"x");
            out.push_shared(1, |b| b.push(b'<'), &item, b">");
            frame(&mut out, b"yz");
            out.push_shared(2, |b| b.push(b'<'), &item, b">");
            out.consume(first);
            let frames = listed(&out);
            out.materialize();
            assert_eq!(out.bytes(), &whole[first..], "after {first}");
            assert_eq!(out.frames().map(<[u8]>::to_vec).collect::<Vec<_>>(), frames);
            assert_eq!(out.len(), whole.len() - first);
            // The rest consumes as bytes.
            out.consume(out.len());
            assert!(out.is_empty());
            assert_eq!(out.total(), whole.len() as u64);
        }
        // Only the frames from the first shared item on are moved; one with none is left.
        let mut out = Output::default();
        frame(&mut out, b"abc");
        out.materialize();
        assert_eq!(out.bytes(), b"abc");
    }

    #[test]
    fn a_shared_item_is_held_not_copied_until_its_frame_is_consumed() {
        let item = shared("\"held\"");
        let mut out = Output::default();
        out.push_shared(0, |_| {}, &item, b"");
        assert_eq!(Arc::strong_count(&item), 2);
        assert_eq!(out.capacity(), 0, "the item's bytes are not in the buffer");
        assert_eq!(out.parts().next(), Some([&b""[..], b"\"held\"", b""]));
        out.consume(3);
        assert_eq!(out.parts().next(), Some([&b"ld\""[..], b"", b""]));
        out.consume(3);
        assert_eq!(Arc::strong_count(&item), 1);
        assert!(out.is_empty());
    }
}
