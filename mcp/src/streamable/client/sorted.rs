//! [`SortedMap`]: the client machine's few tasks, exchanges and open calls (and the typed
//! client's tools' `x-mcp-header` marks).

use core::borrow::Borrow;
use core::fmt;
use std::vec::Vec;

/// A map kept as a vector sorted by key: what the client machine's tables need (a few
/// entries each; new tasks' and exchanges' ids grow, so they go at the end). Iterates in
/// key order, as a `BTreeMap` does. The three tables as B-trees cost a browser page's MCP
/// client 18.6 KB more (its B-tree code went from 18.6 KB to 5.4 KB, serde_json's `Map`).
pub(crate) struct SortedMap<K, V>(Vec<(K, V)>);

impl<K, V> SortedMap<K, V> {
    pub(crate) const fn new() -> Self {
        SortedMap(Vec::new())
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> {
        self.0.iter_mut().map(|(k, v)| (&*k, v))
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    fn find<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        self.0.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    pub(crate) fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|at| &self.0[at].1)
    }

    pub(crate) fn get_mut<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        let at = self.find(key).ok()?;
        Some(&mut self.0[at].1)
    }

    /// Sets `key`'s value; the one it replaces.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(at) => Some(core::mem::replace(&mut self.0[at].1, value)),
            Err(at) => {
                self.0.insert(at, (key, value));
                None
            }
        }
    }

    /// Takes `key` out; its value.
    pub(crate) fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let at = self.find(key).ok()?;
        Some(self.0.remove(at).1)
    }
}

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap::new()
    }
}

/// As a `BTreeMap` prints: `{key: value, ...}`.
impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for SortedMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}
