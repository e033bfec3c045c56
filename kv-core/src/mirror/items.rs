//! [`Items`]: the keys of a mirrored range that parsed and decoded, in key order for
//! listings and found by a hash of their encoding for lookups, both cheap to copy (a
//! snapshot is a copy with changes).
//!
//! A lookup in an ordered map compares the key with one stored key per level, each behind
//! a pointer of its own (several hundred ns in 100,000 keys). Here a lookup hashes the key
//! once, picks one of [`CHUNKS`] hash tables by the hash's top bits, probes it and compares
//! the one candidate's bytes. A copy shares the chunks; a change copies the chunk it
//! touches (about 400 pointers in 100,000 keys), once per copy. Each item holds its
//! encoding once; the ordered set holds the items themselves, ordered by it.

use crate::keyspace::Versioned;
use hashbrown::HashTable;
use imbl::OrdSet;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::hash::BuildHasher;
use std::sync::Arc;

/// One key that parsed and decoded: its encoding, the typed key, the value.
pub(super) struct Parsed<K, V> {
    pub(super) raw: Box<[u8]>,
    pub(super) key: K,
    pub(super) value: Versioned<V>,
}

/// A shared [`Parsed`].
pub(super) type Item<K, V> = Arc<Parsed<K, V>>;

/// An item ordered (and found, by `Borrow`) by its encoding.
struct ByRaw<K, V>(Item<K, V>);

impl<K, V> Clone for ByRaw<K, V> {
    fn clone(&self) -> Self {
        ByRaw(Arc::clone(&self.0))
    }
}

impl<K, V> PartialEq for ByRaw<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.0.raw == other.0.raw
    }
}

impl<K, V> Eq for ByRaw<K, V> {}

impl<K, V> PartialOrd for ByRaw<K, V> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K, V> Ord for ByRaw<K, V> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.raw.cmp(&other.0.raw)
    }
}

impl<K, V> Borrow<[u8]> for ByRaw<K, V> {
    fn borrow(&self) -> &[u8] {
        &self.0.raw
    }
}

/// How many hash tables the items are spread over: a change copies one of them.
const CHUNKS: usize = 256;

/// One chunk's hash table, shared between copies until a change.
type Chunk<K, V> = Arc<HashTable<Item<K, V>>>;

/// The items of a view: ordered, and hashed into [`CHUNKS`] tables, shared between copies
/// until a change.
pub(super) struct Items<K, V> {
    ordered: OrdSet<ByRaw<K, V>>,
    chunks: Arc<Vec<Chunk<K, V>>>,
    hasher: foldhash::fast::RandomState,
}

impl<K, V> Clone for Items<K, V> {
    fn clone(&self) -> Self {
        Items {
            ordered: self.ordered.clone(),
            chunks: Arc::clone(&self.chunks),
            hasher: self.hasher.clone(),
        }
    }
}

impl<K, V> Items<K, V> {
    pub(super) fn new() -> Self {
        Items {
            ordered: OrdSet::new(),
            chunks: Arc::new((0..CHUNKS).map(|_| Arc::new(HashTable::new())).collect()),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.ordered.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.ordered.is_empty()
    }

    fn hash(&self, raw: &[u8]) -> u64 {
        self.hasher.hash_one(raw)
    }

    /// The chunk of `hash`: its top bits (the table itself probes with the low ones).
    fn chunk(hash: u64) -> usize {
        (hash >> 56) as usize % CHUNKS
    }

    /// The item stored as `raw`.
    pub(super) fn get(&self, raw: &[u8]) -> Option<&Item<K, V>> {
        let hash = self.hash(raw);
        self.chunks[Self::chunk(hash)].find(hash, |item| *item.raw == *raw)
    }

    /// Every item, in key order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Item<K, V>> {
        self.ordered.iter().map(|by| &by.0)
    }

    /// The items from `start` on, in key order.
    pub(super) fn iter_from<'a>(
        &'a self,
        start: &[u8],
    ) -> impl Iterator<Item = &'a Item<K, V>> + use<'a, K, V> {
        use std::ops::Bound;
        self.ordered
            .range::<_, [u8]>((Bound::Included(start), Bound::Unbounded))
            .map(|by| &by.0)
    }

    /// The table of `hash`'s chunk, copied first when another view shares it.
    fn table_mut(&mut self, hash: u64) -> &mut HashTable<Item<K, V>> {
        let chunks = Arc::make_mut(&mut self.chunks);
        Arc::make_mut(&mut chunks[Self::chunk(hash)])
    }

    /// Adds `item`, or replaces the item of its key.
    pub(super) fn insert(&mut self, item: Item<K, V>) {
        let hash = self.hash(&item.raw);
        let hasher = self.hasher.clone();
        let table = self.table_mut(hash);
        match table.find_mut(hash, |old| old.raw == item.raw) {
            Some(slot) => *slot = Arc::clone(&item),
            None => {
                table.insert_unique(hash, Arc::clone(&item), |i| hasher.hash_one(&*i.raw));
            }
        }
        self.ordered.insert(ByRaw(item));
    }

    /// Removes the item stored as `raw`, and returns it.
    pub(super) fn remove(&mut self, raw: &[u8]) -> Option<Item<K, V>> {
        let old = self.ordered.remove(raw)?.0;
        let hash = self.hash(raw);
        if let Ok(entry) = self
            .table_mut(hash)
            .find_entry(hash, |item| *item.raw == *raw)
        {
            entry.remove();
        }
        Some(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(raw: &str, value: i64) -> Item<String, i64> {
        Arc::new(Parsed {
            raw: raw.as_bytes().into(),
            key: raw.to_owned(),
            value: Versioned {
                value,
                mod_revision: value,
                create_revision: value,
                version: 1,
                lease: None,
            },
        })
    }

    /// Inserts, replacements and removals, with a copy kept at every step: each view agrees
    /// with a `BTreeMap` of its own, by lookup and in order, and the copies are untouched.
    #[test]
    fn views_agree_with_a_btreemap_and_copies_are_untouched() {
        use proptest::prelude::*;
        let ops = proptest::collection::vec((0u8..3, 0u16..600, 0i64..100), 0..300);
        proptest!(|(ops in ops)| {
            let mut items = Items::new();
            let mut model = std::collections::BTreeMap::new();
            let mut kept = Vec::new();
            for (op, key, value) in ops {
                kept.push((items.clone(), model.clone()));
                let raw = format!("k/{key}");
                if op < 2 {
                    items.insert(item(&raw, value));
                    model.insert(raw.clone(), value);
                } else {
                    let removed = items.remove(raw.as_bytes()).map(|i| i.value.value);
                    prop_assert_eq!(removed, model.remove(&raw));
                }
            }
            kept.push((items, model));
            for (items, model) in kept.iter().rev().take(5) {
                for probe in 0u16..600 {
                    let raw = format!("k/{probe}");
                    prop_assert_eq!(
                        items.get(raw.as_bytes()).map(|i| i.value.value),
                        model.get(&raw).copied()
                    );
                }
                prop_assert_eq!(items.len(), model.len());
                let listed: Vec<i64> = items.iter().map(|i| i.value.value).collect();
                prop_assert_eq!(listed, model.values().copied().collect::<Vec<_>>());
            }
        });
    }

    #[test]
    fn a_listing_from_a_key_starts_there() {
        let mut items = Items::new();
        for (raw, v) in [("a", 1), ("b/1", 2), ("b/2", 3), ("c", 4)] {
            items.insert(item(raw, v));
        }
        let from: Vec<i64> = items.iter_from(b"b/").map(|i| i.value.value).collect();
        assert_eq!(from, [2, 3, 4]);
        assert!(items.get(b"b").is_none());
    }
}
