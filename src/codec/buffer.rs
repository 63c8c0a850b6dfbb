//! The bounded input buffer both decoders share.

use alloc::vec::Vec;

/// The smallest capacity the buffer grows to on its first append.
const MIN_CAPACITY: usize = 1024;

/// A byte buffer with a consumed prefix and a hard bound on its live bytes.
///
/// Consuming only moves `start`; bytes are moved (`copy_within`) or cleared only inside
/// [`InputBuffer::append`], so a slice handed out after consuming stays valid until the
/// next append, and a frame costs no copy beyond the one into the buffer.
#[derive(Debug)]
pub(crate) struct InputBuffer {
    buf: Vec<u8>,
    start: usize,
    bound: usize,
}

impl InputBuffer {
    pub(crate) fn new(bound: usize) -> Self {
        InputBuffer {
            buf: Vec::new(),
            start: 0,
            bound,
        }
    }

    /// The most live bytes the buffer ever holds.
    pub(crate) fn bound(&self) -> usize {
        self.bound
    }

    /// The number of live (unconsumed) bytes.
    pub(crate) fn len(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The live bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// The absolute index of the first live byte, for slicing with [`InputBuffer::slice`].
    pub(crate) fn start(&self) -> usize {
        self.start
    }

    /// The bytes at absolute indices `from..to`, still valid after they were consumed.
    pub(crate) fn slice(&self, from: usize, to: usize) -> &[u8] {
        &self.buf[from..to]
    }

    /// Drops `n` live bytes from the front.
    pub(crate) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.len());
        self.start += n;
    }

    /// Drops every live byte.
    pub(crate) fn consume_all(&mut self) {
        self.start = self.buf.len();
    }

    /// Copies as much of `input` as the bound allows and returns how many bytes it took.
    ///
    /// Reclaims the consumed prefix only when the free tail is too small, and never grows
    /// the capacity past the bound.
    pub(crate) fn append(&mut self, input: &[u8]) -> usize {
        let n = input.len().min(self.bound - self.len());
        if n == 0 {
            return 0;
        }
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.buf.capacity() - self.buf.len() < n && self.start > 0 {
            let live = self.len();
            self.buf.copy_within(self.start.., 0);
            self.buf.truncate(live);
            self.start = 0;
        }
        let need = self.buf.len() + n;
        if need > self.buf.capacity() {
            let doubled = self.buf.capacity().saturating_mul(2).max(MIN_CAPACITY);
            let target = need.max(doubled.min(self.bound));
            self.buf.reserve_exact(target - self.buf.len());
        }
        self.buf.extend_from_slice(&input[..n]);
        n
    }

    /// Empties the buffer, keeping its capacity.
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
        self.start = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_respects_bound_and_reclaims_prefix() {
        let mut b = InputBuffer::new(8);
        assert_eq!(b.append(b"0123456789"), 8);
        assert_eq!(b.append(b"x"), 0);
        b.consume(5);
        assert_eq!(b.bytes(), b"567");
        assert_eq!(b.append(b"abcdef"), 5);
        assert_eq!(b.bytes(), b"567abcde");
        assert!(b.buf.capacity() <= MIN_CAPACITY);
    }

    #[test]
    fn consumed_slice_stays_valid_until_append() {
        let mut b = InputBuffer::new(64);
        b.append(b"hello world");
        let s = b.start();
        b.consume_all();
        assert_eq!(b.slice(s, s + 5), b"hello");
        assert_eq!(b.len(), 0);
    }
}
