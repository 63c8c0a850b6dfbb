//! The wire's framed output: one buffer, the frames in it, and how much of it the
//! driver has taken.
//!
//! The driver takes output either a frame at a time (a copy into its own buffer, what a
//! message transport needs) or as bytes straight from this buffer (peek, write, consume:
//! what a byte stream needs). Either way the consumed prefix is reclaimed as it grows, so
//! the memory held stays proportional to what is pending however the driver drains it:
//! a driver that never empties the buffer (it takes a part per turn while more is queued)
//! cannot make it grow.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

/// Consumed bytes kept at the front before the rest is moved down: below this a move is
/// not worth its copy.
const COMPACT_AT: usize = 4 * 1024;

/// Capacity an emptied buffer keeps; a larger one (after a burst) is given back.
const KEEP: usize = 64 * 1024;

#[derive(Debug, Default)]
pub(super) struct Output {
    buf: Vec<u8>,
    /// `buf[..head]` is consumed.
    head: usize,
    /// The length and tag of each frame from `head` on; the first may be partly consumed
    /// (`front_taken` bytes of it).
    frames: VecDeque<(usize, u64)>,
    front_taken: usize,
    /// Bytes consumed since the start.
    total: u64,
}

impl Output {
    /// Bytes queued and not consumed.
    pub(super) fn len(&self) -> usize {
        self.buf.len() - self.head
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

    /// Everything queued, as one run of bytes.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf[self.head..]
    }

    /// The frames queued, in order: the first without what of it was consumed.
    pub(super) fn frames(&self) -> impl Iterator<Item = &[u8]> + '_ {
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
    pub(super) fn front(&self) -> Option<(&[u8], u64)> {
        let &(len, tag) = self.frames.front()?;
        let len = len - self.front_taken;
        Some((&self.buf[self.head..self.head + len], tag))
    }

    /// Appends the rest of the next frame to `out` and consumes it, as
    /// [`front`](Output::front) then [`consume`](Output::consume) of its length would: its
    /// length and tag.
    #[inline]
    pub(super) fn take_front(&mut self, out: &mut Vec<u8>) -> Option<(usize, u64)> {
        let (len, tag) = self.frames.pop_front()?;
        let len = len - self.front_taken;
        out.extend_from_slice(&self.buf[self.head..self.head + len]);
        self.head += len;
        self.total += len as u64;
        self.front_taken = 0;
        self.reclaim();
        Some((len, tag))
    }

    /// `n` bytes from the front are written (at most [`len`](Output::len)).
    pub(super) fn consume(&mut self, mut n: usize) {
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
    fn reclaim(&mut self) {
        if self.head == self.buf.len() {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(out.front(), Some((&b"c"[..], 0)));
        out.consume(1);
        assert_eq!(out.front(), Some((&b"defg"[..], 0)));
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
}
