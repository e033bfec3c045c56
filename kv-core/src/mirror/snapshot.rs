//! [`MirrorSnapshot`]: one immutable, consistent view of a mirrored range, and how a change
//! is applied to a copy of it (persistent maps: a copy costs O(1), a change O(log n)).

use super::{Indexer, Typer};
use crate::entry::Entry;
use crate::error::Error;
use crate::keyspace::{Key, TypedEvent, Versioned};
use crate::watch::Event;
use imbl::{OrdMap, OrdSet};
use std::fmt;
use std::sync::Arc;

/// A parsed key with its decoded value.
type Item<K, V> = Arc<(K, Versioned<V>)>;

/// An entry the mirror could not type, with the reason.
type Unreadable = Arc<(Entry, Error)>;

/// One consistent view of a mirrored range: every key of the range as the store held it at
/// [`revision`](Self::revision), never part of a transaction. Immutable and cheap to keep:
/// readers load it without locks and hold it as long as they like.
pub struct MirrorSnapshot<K, V> {
    pub(super) revision: i64,
    pub(super) items: OrdMap<Vec<u8>, Item<K, V>>,
    pub(super) unreadable: OrdMap<Vec<u8>, Unreadable>,
    pub(super) indexes: Vec<OrdMap<String, OrdSet<Vec<u8>>>>,
    pub(super) index_names: Arc<[&'static str]>,
}

impl<K, V> Clone for MirrorSnapshot<K, V> {
    fn clone(&self) -> Self {
        MirrorSnapshot {
            revision: self.revision,
            items: self.items.clone(),
            unreadable: self.unreadable.clone(),
            indexes: self.indexes.clone(),
            index_names: Arc::clone(&self.index_names),
        }
    }
}

impl<K, V> fmt::Debug for MirrorSnapshot<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MirrorSnapshot")
            .field("revision", &self.revision)
            .field("keys", &self.items.len())
            .field("unreadable", &self.unreadable.len())
            .field("indexes", &self.index_names)
            .finish()
    }
}

impl<K, V> MirrorSnapshot<K, V> {
    pub(super) fn empty(revision: i64, index_names: Arc<[&'static str]>) -> Self {
        MirrorSnapshot {
            revision,
            items: OrdMap::new(),
            unreadable: OrdMap::new(),
            indexes: vec![OrdMap::new(); index_names.len()],
            index_names,
        }
    }

    /// The store revision this view reflects.
    pub fn revision(&self) -> i64 {
        self.revision
    }

    /// How many keys parsed and decoded.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no key parsed and decoded.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The key stored as `raw`, with its value.
    pub fn get_raw(&self, raw: &[u8]) -> Option<(&K, &Versioned<V>)> {
        self.items.get(raw).map(|item| (&item.0, &item.1))
    }

    /// Every key with its value, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &Versioned<V>)> {
        self.items.values().map(|item| (&item.0, &item.1))
    }

    /// The keys whose raw encoding starts with `prefix` (a directory), in key order.
    pub fn iter_prefix<'a>(
        &'a self,
        prefix: &[u8],
    ) -> impl Iterator<Item = (&'a K, &'a Versioned<V>)> + use<'a, K, V> {
        let prefix = prefix.to_vec();
        self.items
            .range::<_, Vec<u8>>(prefix.clone()..)
            .take_while(move |(raw, _)| raw.starts_with(&prefix))
            .map(|(_, item)| (&item.0, &item.1))
    }

    /// The keys of the range that did not parse or whose value did not decode, with the
    /// stored entry and the reason: reported, never dropped.
    pub fn unreadable(&self) -> impl Iterator<Item = (&Entry, &Error)> {
        self.unreadable.values().map(|u| (&u.0, &u.1))
    }

    /// The keys whose index `index` holds `value`, in key order (none for an unknown index).
    pub fn lookup<'a>(
        &'a self,
        index: &str,
        value: &str,
    ) -> impl Iterator<Item = (&'a K, &'a Versioned<V>)> + 'a {
        let keys = self
            .index_names
            .iter()
            .position(|name| *name == index)
            .and_then(|i| self.indexes[i].get(value));
        keys.into_iter()
            .flat_map(|keys| keys.iter())
            .filter_map(|raw| self.get_raw(raw))
    }

    /// The values index `index` holds, in order (none for an unknown index).
    pub fn index_values<'a>(&'a self, index: &str) -> impl Iterator<Item = &'a str> + 'a {
        let map = self
            .index_names
            .iter()
            .position(|name| *name == index)
            .map(|i| &self.indexes[i]);
        map.into_iter().flat_map(|m| m.keys().map(String::as_str))
    }

    /// The mod revision of every raw key, readable or not: what a listing is compared with.
    pub(super) fn mod_revisions(&self) -> impl Iterator<Item = (&[u8], i64)> {
        let items = self
            .items
            .iter()
            .map(|(k, item)| (k.as_slice(), item.1.mod_revision));
        let unreadable = self
            .unreadable
            .iter()
            .map(|(k, u)| (k.as_slice(), u.0.mod_revision));
        items.chain(unreadable)
    }

    pub(super) fn raw_len(&self) -> usize {
        self.items.len() + self.unreadable.len()
    }
}

impl<K: Clone, V: Clone> MirrorSnapshot<K, V> {
    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&Versioned<V>>
    where
        K: Key,
    {
        thread_local! {
            /// The encoding of the key looked up, reused: a lookup allocates nothing.
            static ENCODED: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        ENCODED.with(|buf| {
            let mut buf = buf.borrow_mut();
            buf.clear();
            key.write(&mut buf);
            self.items.get(buf.as_bytes()).map(|item| &item.1)
        })
    }

    fn remove(&mut self, raw: &[u8], indexers: &[Indexer<K, V>]) -> Option<Item<K, V>> {
        self.unreadable.remove(raw);
        let old = self.items.remove(raw)?;
        for (i, indexer) in indexers.iter().enumerate() {
            for value in (indexer.f)(&old.0, &old.1.value) {
                if let Some(keys) = self.indexes[i].get_mut(&value) {
                    keys.remove(raw);
                    if keys.is_empty() {
                        self.indexes[i].remove(&value);
                    }
                }
            }
        }
        Some(old)
    }

    fn insert(&mut self, raw: Vec<u8>, item: Item<K, V>, indexers: &[Indexer<K, V>]) {
        for (i, indexer) in indexers.iter().enumerate() {
            for value in (indexer.f)(&item.0, &item.1.value) {
                self.indexes[i]
                    .entry(value)
                    .or_default()
                    .insert(raw.clone());
            }
        }
        self.items.insert(raw, item);
    }

    /// Applies one event of a batch; the typed change it makes.
    pub(super) fn apply(
        &mut self,
        event: Event,
        typer: &Typer<K, V>,
        indexers: &[Indexer<K, V>],
    ) -> Option<TypedEvent<K, V>> {
        match event {
            Event::Put { entry, .. } => {
                self.remove(&entry.key, indexers);
                match typer.type_entry(&entry) {
                    Ok((key, value)) => {
                        let item = Arc::new((key, value));
                        let change = TypedEvent::Put {
                            key: item.0.clone(),
                            value: item.1.clone(),
                        };
                        self.insert(entry.key.clone(), item, indexers);
                        Some(change)
                    }
                    Err(error) => {
                        let raw = entry.key.clone();
                        let change = TypedEvent::Unreadable {
                            event: Box::new(Event::Put {
                                entry: entry.clone(),
                                prev: None,
                            }),
                            error: error.clone(),
                        };
                        self.unreadable.insert(raw, Arc::new((entry, error)));
                        Some(change)
                    }
                }
            }
            Event::Delete { key, .. } => {
                let was_unreadable = self.unreadable.contains_key(&key);
                match self.remove(&key, indexers) {
                    Some(old) => Some(TypedEvent::Delete { key: old.0.clone() }),
                    None if was_unreadable => Some(unreadable_delete(key, typer)),
                    None => None,
                }
            }
            // Mirrors watch plain keys only.
            Event::Collection(_) => None,
        }
    }

    /// The changes that turn `self` into `other` (both views of the same range), as the
    /// events a subscriber would have seen.
    pub(super) fn diff(&self, other: &Self, typer: &Typer<K, V>) -> Vec<TypedEvent<K, V>> {
        let mut changes = Vec::new();
        let before: std::collections::BTreeMap<&[u8], i64> = self.mod_revisions().collect();
        let after: std::collections::BTreeMap<&[u8], i64> = other.mod_revisions().collect();
        let keys: std::collections::BTreeSet<&[u8]> =
            before.keys().chain(after.keys()).copied().collect();
        for raw in keys {
            if before.get(raw) == after.get(raw) {
                continue;
            }
            if let Some(item) = other.items.get(raw) {
                changes.push(TypedEvent::Put {
                    key: item.0.clone(),
                    value: item.1.clone(),
                });
            } else if let Some(u) = other.unreadable.get(raw) {
                changes.push(TypedEvent::Unreadable {
                    event: Box::new(Event::Put {
                        entry: u.0.clone(),
                        prev: None,
                    }),
                    error: u.1.clone(),
                });
            } else if let Some(item) = self.items.get(raw) {
                changes.push(TypedEvent::Delete {
                    key: item.0.clone(),
                });
            } else {
                changes.push(unreadable_delete(raw.to_vec(), typer));
            }
        }
        changes
    }
}

/// The delete of a key the mirror held as unreadable: a typed delete when only its value was
/// unreadable, else the raw event.
fn unreadable_delete<K, V>(key: Vec<u8>, typer: &Typer<K, V>) -> TypedEvent<K, V> {
    match (typer.parse)(&key) {
        Ok(key) => TypedEvent::Delete { key },
        Err(error) => TypedEvent::Unreadable {
            event: Box::new(Event::Delete { key, prev: None }),
            error,
        },
    }
}
