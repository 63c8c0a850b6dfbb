//! How much to read at a time: a driver's read buffer that starts small, grows while reads
//! fill it, and shrinks back when the traffic is small or the connection idles, so that a
//! thousand quiet connections cost a few KiB each and one busy connection reads in large
//! chunks.

/// The size a driver's next read should have. Drivers keep one per connection, ask
/// [`ReadSize::get`] before a read, and report each read's length with [`ReadSize::read`]
/// and an idle wait with [`ReadSize::idle`].
///
/// ```
/// use sansrpc::codec::ReadSize;
/// let mut size = ReadSize::new(4096, 65536);
/// assert_eq!(size.get(), 4096);
/// size.read(4096); // filled: more is waiting
/// assert_eq!(size.get(), 8192);
/// size.idle();     // nothing to read: back to the start
/// assert_eq!(size.get(), 4096);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadSize {
    min: usize,
    max: usize,
    current: usize,
    /// Reads in a row that used under a quarter of the buffer.
    small: u8,
}

/// Reads in a row under a quarter of the buffer before it halves.
const SMALL_READS: u8 = 8;

impl ReadSize {
    /// Starts at `min` bytes and grows up to `max` (at least `min`).
    pub const fn new(min: usize, max: usize) -> Self {
        let min = if min == 0 { 1 } else { min };
        let max = if max < min { min } else { max };
        ReadSize {
            min,
            max,
            current: min,
            small: 0,
        }
    }

    /// The size the next read should have.
    pub fn get(&self) -> usize {
        self.current
    }

    /// The smallest size: what an idle connection keeps.
    pub fn min(&self) -> usize {
        self.min
    }

    /// A read of `n` bytes into a buffer of [`ReadSize::get`] bytes: a full one doubles
    /// the size, eight in a row under a quarter halve it.
    pub fn read(&mut self, n: usize) {
        if n >= self.current {
            self.current = self.current.saturating_mul(2).min(self.max);
            self.small = 0;
        } else if n < self.current / 4 {
            self.small += 1;
            if self.small >= SMALL_READS {
                self.current = (self.current / 2).max(self.min);
                self.small = 0;
            }
        } else {
            self.small = 0;
        }
    }

    /// The connection waits for input with nothing buffered: back to the smallest size.
    /// True when the size shrank, so a driver may give its larger buffer back.
    pub fn idle(&mut self) -> bool {
        let shrank = self.current > self.min;
        self.current = self.min;
        self.small = 0;
        shrank
    }
}

#[cfg(test)]
mod tests {
    use super::ReadSize;

    #[test]
    fn grows_while_full_up_to_max_and_halves_on_small_reads() {
        let mut s = ReadSize::new(1024, 8192);
        for expected in [2048, 4096, 8192, 8192] {
            let full = s.get();
            s.read(full);
            assert_eq!(s.get(), expected);
        }
        for _ in 0..7 {
            s.read(10);
        }
        assert_eq!(s.get(), 8192, "seven small reads are not yet a pattern");
        s.read(10);
        assert_eq!(s.get(), 4096);
        s.read(3000); // over a quarter: the count starts again
        for _ in 0..7 {
            s.read(10);
        }
        assert_eq!(s.get(), 4096);
        assert!(s.idle());
        assert_eq!(s.get(), 1024);
        assert!(!s.idle());
        assert_eq!(ReadSize::new(0, 0).get(), 1);
    }
}
