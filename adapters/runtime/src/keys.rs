//! Hash tables keyed by the numbers a program counts out itself: connections, sessions,
//! streams, subscriptions. No peer chooses such a key, so nobody can flood a table with
//! keys that collide, and a key needs no SipHash: one multiplication hashes it.

/// A `HashMap` keyed by numbers the program counts out itself, hashed by [`KeyHasher`].
pub type KeyMap<K, V> = std::collections::HashMap<K, V, Keys>;

/// The [`BuildHasher`](core::hash::BuildHasher) of a [`KeyMap`].
pub type Keys = core::hash::BuildHasherDefault<KeyHasher>;

/// Hashes the numbers a program counts out itself (Fibonacci hashing: the key times
/// 2^64 / φ, an odd number, so that distinct keys differ in every low bit the table
/// indexes with, and the high bits it also reads are mixed). Not for keys a peer
/// chooses: those want `std`'s `RandomState`.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl core::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only numbers are hashed; any other key comes here a byte at a time.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// Gives back the room of a [`KeyMap`] most of whose entries have left (a burst of
/// connections gone): a hash table otherwise keeps the size of its fullest moment, where a
/// B-tree frees its nodes. Call it after a removal. Shrunk to twice what is left once under a
/// quarter is used, so each shrink follows as many removals as the table holds: amortized,
/// one per removal.
pub fn shrink_when_sparse<K: Eq + core::hash::Hash, V>(map: &mut KeyMap<K, V>) {
    if map.capacity() > 64 && map.len() < map.capacity() / 4 {
        map.shrink_to(map.len() * 2);
    }
}

/// Removes `key` from `map` and gives back the room a burst left
/// ([`shrink_when_sparse`]): what every table of sessions, streams or runs that come and go
/// removes with, so that none keeps the size of its fullest moment.
#[inline]
pub fn remove_and_shrink<K: Eq + core::hash::Hash, V>(
    map: &mut KeyMap<K, V>,
    key: &K,
) -> Option<V> {
    let removed = map.remove(key);
    if removed.is_some() {
        shrink_when_sparse(map);
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::hash::BuildHasher;

    #[test]
    fn counted_keys_spread_over_the_low_bits_and_a_map_finds_each() {
        let keys = Keys::default();
        // 1,024 keys counted out in turn fill 1,024 buckets of a table of that size.
        let mut buckets: Vec<u64> = (1..=1024u64).map(|k| keys.hash_one(k) & 1023).collect();
        buckets.sort_unstable();
        buckets.dedup();
        assert_eq!(buckets.len(), 1024);
        let mut map: KeyMap<u64, u64> = KeyMap::default();
        map.extend((0..10_000).map(|k| (k, k * 3)));
        assert!((0..10_000).all(|k| map[&k] == k * 3));
        assert_ne!(keys.hash_one(1u64), keys.hash_one(2u64));
        assert_ne!(keys.hash_one((1u64, 2u64)), keys.hash_one((2u64, 1u64)));
    }

    #[test]
    fn a_table_emptied_by_removals_gives_its_room_back() {
        let mut map: KeyMap<u64, [u8; 64]> = KeyMap::default();
        map.extend((0..10_000).map(|k| (k, [0; 64])));
        let full = map.capacity();
        assert!(full >= 10_000);
        for k in 10..10_000 {
            assert!(remove_and_shrink(&mut map, &k).is_some());
        }
        assert_eq!(remove_and_shrink(&mut map, &10_000), None);
        assert_eq!(map.len(), 10);
        // Shrunk as it emptied: a table of 10 keeps at most what 64 entries need.
        assert!(
            map.capacity() <= 128,
            "{} of {full} places kept",
            map.capacity()
        );
        assert!((0..10).all(|k| map.contains_key(&k)));
    }
}
