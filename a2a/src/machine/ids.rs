//! Where the task machine's ids come from: an input, never a clock or the OS.

/// Makes the ids the task machine hands out: task ids, context ids, and the ids of agent
/// messages and artifacts that came without one.
///
/// Ids should be unique and, since a task id is all a client needs to read a task,
/// unguessable: seed [`SeededIds`] from the operating system's randomness in production
/// (the driver reads it; the machine never does), or plug in any generator. A closure
/// returning `String` is an `IdSource`.
pub trait IdSource {
    /// The next id.
    fn next_id(&mut self) -> String;
}

impl<F: FnMut() -> String> IdSource for F {
    fn next_id(&mut self) -> String {
        self()
    }
}

/// UUID-shaped (version 4) ids from a 64-bit seed: the same seed gives the same ids, so
/// tests see the same run every time.
///
/// ```
/// use sansrpc_a2a::machine::{IdSource, SeededIds};
///
/// let mut a = SeededIds::new(7);
/// let mut b = SeededIds::new(7);
/// let id = a.next_id();
/// assert_eq!(id, b.next_id());
/// assert_eq!(id.len(), 36);
/// assert_eq!(&id[14..15], "4");
/// ```
#[derive(Debug, Clone)]
pub struct SeededIds {
    state: u64,
}

impl SeededIds {
    /// Ids from `seed`.
    pub fn new(seed: u64) -> SeededIds {
        SeededIds { state: seed }
    }

    /// SplitMix64: a full-period generator whose outputs pass BigCrush.
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl IdSource for SeededIds {
    fn next_id(&mut self) -> String {
        let hi = self.next_u64();
        let lo = self.next_u64();
        // Version 4, variant 10xx.
        let hi = (hi & !0xf000) | 0x4000;
        let lo = (lo & !(0xc << 60)) | (0x8 << 60);
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            hi >> 32,
            (hi >> 16) & 0xffff,
            hi & 0xffff,
            lo >> 48,
            lo & 0xffff_ffff_ffff
        )
    }
}
