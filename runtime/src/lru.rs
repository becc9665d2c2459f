//! Values kept up to a capacity, the least recently used dropped first:
//! the process's cache of compilations and each `CompileCache` (`cpu`),
//! and each thread's compiled fetches (`graph`).

use std::{
    borrow::Borrow,
    collections::{HashMap, hash_map::RandomState},
    hash::{BuildHasher, Hash},
};

/// Values by key, at most `capacity` of them; the hasher is `S`.
pub(crate) struct Lru<K, V, S = RandomState> {
    /// Each value with the clock when it was last used.
    entries: HashMap<K, (V, u64), S>,
    clock: u64,
    capacity: usize,
}

impl<K: Eq + Hash + Clone, V, S: BuildHasher + Default> Lru<K, V, S> {
    /// An empty cache of `capacity` values (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: HashMap::with_hasher(S::default()),
            clock: 0,
            capacity: capacity.max(1),
        }
    }

    /// The value of `key`, now the most recently used.
    pub(crate) fn get<Q>(&mut self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.clock += 1;
        let (value, used) = self.entries.get_mut(key)?;
        *used = self.clock;
        Some(value)
    }

    /// Keeps `value` under `key`, dropping the least recently used beyond
    /// the capacity.
    pub(crate) fn insert(&mut self, key: K, value: V) {
        self.clock += 1;
        self.entries.insert(key, (value, self.clock));
        self.trim();
    }

    /// How many values it keeps.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Drops every value.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }

    /// How many values it keeps at most.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity.max(1);
        self.trim();
    }

    fn trim(&mut self) {
        while self.entries.len() > self.capacity {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            self.entries.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;

    #[test]
    fn the_least_recently_used_goes_first() {
        let mut lru: Lru<u32, &str> = Lru::new(2);
        lru.insert(1, "one");
        lru.insert(2, "two");
        assert_eq!(lru.get(&1), Some(&"one"));
        lru.insert(3, "three");
        assert_eq!(lru.get(&2), None, "2 was used least recently");
        assert_eq!(lru.get(&1), Some(&"one"));
        assert_eq!(lru.get(&3), Some(&"three"));
        lru.set_capacity(0);
        assert_eq!(lru.len(), 1, "a capacity is at least one");
        assert_eq!(lru.get(&3), Some(&"three"));
        lru.clear();
        assert_eq!(lru.len(), 0);
    }
}
