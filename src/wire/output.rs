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

/// Set in a frame's length when it answers the peer's request: a length is at most
/// `isize::MAX` (a `Vec`'s bound), so this bit is never part of one.
const ANSWER: usize = 1 << (usize::BITS - 1);

/// A frame's length, from its entry in [`Output::frames`].
#[inline]
fn length(entry: usize) -> usize {
    entry & !ANSWER
}

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
    /// Its frame's bytes as three runs: `stored` is what of it the buffer holds.
    #[inline]
    fn parts<'a>(&'a self, stored: &'a [u8]) -> [&'a [u8]; 3] {
        let (before, after) = stored.split_at(self.at);
        [before, self.item.get().as_bytes(), after]
    }
}

#[derive(Debug, Default)]
pub(super) struct Output {
    buf: Vec<u8>,
    /// `buf[..head]` is consumed.
    head: usize,
    /// The length (shared items included, with [`ANSWER`] set for an answer to the peer's
    /// request) and tag of each frame from `head` on; the first may be partly consumed
    /// (`front_taken` bytes of it).
    frames: VecDeque<(usize, u64)>,
    front_taken: usize,
    /// Bytes consumed since the start.
    total: u64,
    /// Frames consumed since the start: the number of the front one.
    popped: u64,
    /// The frames that hold a shared item, in order (all let go at once: when everything
    /// is written, or copied in).
    holes: Vec<Hole>,
    /// Bytes of the shared items not consumed.
    held: usize,
}

impl Output {
    /// Takes `old`'s buffers, emptied, where each is within [`keep`](super::keep_vec)'s
    /// bound (this output is new: nothing in it).
    pub(super) fn keep_buffers(&mut self, old: &mut Output) {
        super::keep_vec(&mut self.buf, &mut old.buf);
        super::keep_deque(&mut self.frames, &mut old.frames);
        super::keep_vec(&mut self.holes, &mut old.holes);
    }

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
        self.push_as(tag, false, write);
    }

    /// Appends one frame written by `write`, with `tag`; `answer` when it answers the
    /// peer's request (a response, or a batch's array).
    #[inline]
    pub(super) fn push_as(&mut self, tag: u64, answer: bool, write: impl FnOnce(&mut Vec<u8>)) {
        let before = self.buf.len();
        write(&mut self.buf);
        let len = self.buf.len() - before;
        if len > 0 {
            self.frames
                .push_back((len | if answer { ANSWER } else { 0 }, tag));
        }
    }

    /// Drops the frames in front of the first answer (all of them when none is queued):
    /// how many. A transport that carries only answers has no way to send the others.
    pub(super) fn skip_to_answer(&mut self) -> usize {
        let mut skipped = 0;
        while let Some(&(len, _)) = self.frames.front().filter(|f| f.0 & ANSWER == 0) {
            self.consume(len - self.front_taken);
            skipped += 1;
        }
        skipped
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
        self.holes.push(Hole {
            frame: self.popped + self.frames.len() as u64,
            at,
            item: item.clone(),
        });
        self.held += len;
        self.frames.push_back((self.buf.len() - before + len, tag));
    }

    /// Copies every shared item into the buffer, where its frame has it: the output is
    /// then one run of bytes ([`bytes`](Output::bytes)). Moves only what was queued from
    /// the first such frame on.
    #[inline]
    pub(super) fn materialize(&mut self) {
        if !self.holes.is_empty() {
            self.copy_items_in();
        }
    }

    /// [`materialize`](Output::materialize) where some frame holds an item.
    #[cold]
    #[inline(never)]
    fn copy_items_in(&mut self) {
        let Some(first) = self.holes.first() else {
            return;
        };
        // The frames before the first with an item are in the buffer as they are; a frame
        // with an item is never partly consumed (a partial consume copies the items in).
        let first = (first.frame - self.popped) as usize;
        let mut start = self.head - self.front_taken;
        for i in 0..first {
            start += length(self.frames[i].0);
        }
        let stored = self.buf.split_off(start);
        let (mut from, mut next) = (0, 0);
        for i in first..self.frames.len() {
            let frame = self.popped + i as u64;
            let mut n = length(self.frames[i].0);
            if let Some(h) = self.holes.get(next).filter(|h| h.frame == frame) {
                next += 1;
                n -= h.item.get().len();
                self.buf.extend_from_slice(&stored[from..from + h.at]);
                self.buf.extend_from_slice(h.item.get().as_bytes());
                from += h.at;
                n -= h.at;
            }
            self.buf.extend_from_slice(&stored[from..from + n]);
            from += n;
        }
        self.holes.clear();
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
            let len = length(len) - core::mem::take(&mut taken);
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
        // Only a driver that took parts holds items; one taking copies copies them in.
        self.materialize();
        let (len, tag) = self.frames.pop_front()?;
        let len = length(len) - self.front_taken;
        out.extend_from_slice(&self.buf[self.head..self.head + len]);
        self.head += len;
        self.total += len as u64;
        self.popped += 1;
        self.front_taken = 0;
        self.reclaim();
        Some((len, tag))
    }

    /// `n` bytes from the front are written (at most [`len`](Output::len)).
    pub(super) fn consume(&mut self, mut n: usize) {
        if !self.holes.is_empty() {
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
            // In part (the socket took some of it): the items are copied in, once.
            self.materialize();
        }
        n = n.min(self.len());
        self.head += n;
        self.total += n as u64;
        while n > 0 {
            let Some(&(front, _)) = self.frames.front() else {
                break;
            };
            let rest = length(front) - self.front_taken;
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

impl<'a> Parts<'a> {
    /// The next frame's three runs, and the shared item that is its middle run, if any.
    #[inline]
    fn next_with_item(&mut self) -> Option<([&'a [u8]; 3], Option<&'a Shared>)> {
        let out = self.out;
        let len = length(out.frames.get(self.next)?.0);
        let frame = out.popped + self.next as u64;
        match out.holes.get(self.hole).filter(|h| h.frame == frame) {
            // Never partly consumed.
            Some(h) => {
                self.hole += 1;
                self.next += 1;
                let n = len - h.item.get().len();
                let parts = h.parts(&out.buf[self.at..self.at + n]);
                self.at += n;
                Some((parts, Some(&h.item)))
            }
            None => {
                let n = len - if self.next == 0 { out.front_taken } else { 0 };
                self.next += 1;
                let frame = &out.buf[self.at..self.at + n];
                self.at += n;
                Some(([frame, &[], &[]], None))
            }
        }
    }

    /// The frames with the shared item each holds, if any.
    #[cfg(all(feature = "subscriptions", target_has_atomic = "ptr"))]
    pub(crate) fn with_items(self) -> WithItems<'a> {
        WithItems(self)
    }
}

impl<'a> Iterator for Parts<'a> {
    type Item = [&'a [u8]; 3];

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.next_with_item().map(|(parts, _)| parts)
    }
}

/// The frames of an [`Output`] as [`Parts`] gives them, each with the shared item that is
/// its middle run, if any.
#[cfg(all(feature = "subscriptions", target_has_atomic = "ptr"))]
pub(crate) struct WithItems<'a>(Parts<'a>);

#[cfg(all(feature = "subscriptions", target_has_atomic = "ptr"))]
impl<'a> Iterator for WithItems<'a> {
    type Item = ([&'a [u8]; 3], Option<&'a Shared>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_with_item()
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
    fn a_shared_item_is_held_until_its_frame_is_written_whole_or_split() {
        let item = shared("\"held\"");
        let mut out = Output::default();
        out.push_shared(0, |_| {}, &item, b"");
        assert_eq!(Arc::strong_count(&item), 2);
        assert_eq!(out.capacity(), 0, "the item's bytes are not in the buffer");
        assert_eq!(out.parts().next(), Some([&b""[..], b"\"held\"", b""]));
        // Written whole: let go, never copied.
        out.consume(6);
        assert_eq!(Arc::strong_count(&item), 1);
        assert_eq!(out.capacity(), 0);
        assert!(out.is_empty());
        // Written in part: the rest is copied in, once, and the item let go.
        out.push_shared(0, |b| b.push(b'<'), &item, b">");
        out.consume(3);
        assert_eq!(Arc::strong_count(&item), 1);
        assert_eq!(out.parts().next(), Some([&b"eld\">"[..], b"", b""]));
        out.consume(5);
        assert!(out.is_empty());
    }
}
