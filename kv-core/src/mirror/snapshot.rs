//! [`MirrorSnapshot`]: one immutable, consistent view of a mirrored range, and how a change
//! is applied to a copy of it (persistent maps: a copy costs O(1), a change O(log n)).
//!
//! Each item is held once, behind an `Arc` with its raw key, and shared by a hash index
//! (lookups by key) and an ordered set (iteration in key order, directories, secondary
//! indexes).

use super::hashed::{HashIndex, Keyed};
use super::item::Item;
use super::typer::{Indexer, Typer};
use crate::CollectionKind;
use crate::Entry;
use crate::Event;
use crate::keyspace::{Key, TypedEvent, Versioned};
use crate::{CollectionChange, CollectionEvent, CollectionValue};
use crate::{Error, Result};
use imbl::{OrdMap, OrdSet};
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

/// An entry the mirror could not type, with the reason.
type Unreadable = Arc<(Entry, Error)>;

/// The slot of a kind in [`MirrorSnapshot::collections`].
fn slot(kind: CollectionKind) -> usize {
    match kind {
        CollectionKind::Set => 0,
        CollectionKind::Map => 1,
        CollectionKind::List => 2,
    }
}

const KINDS: [CollectionKind; 3] = [
    CollectionKind::Set,
    CollectionKind::Map,
    CollectionKind::List,
];

/// A collection's parsed key (or why it does not parse) with its contents.
type Collection<K> = Arc<(std::result::Result<K, Error>, CollectionValue)>;

/// One consistent view of a mirrored range: every key of the range as the store held it at
/// [`revision`](Self::revision), never part of a transaction. Immutable and cheap to keep:
/// readers load it without locks and hold it as long as they like.
pub struct MirrorSnapshot<K, V> {
    pub(super) revision: i64,
    /// The items, by raw key: what a lookup reads.
    items: HashIndex<Item<K, V>>,
    /// The same items in key order.
    ordered: OrdSet<Item<K, V>>,
    pub(super) unreadable: OrdMap<Vec<u8>, Unreadable>,
    indexes: Vec<OrdMap<String, OrdSet<Item<K, V>>>>,
    pub(super) index_names: Arc<[&'static str]>,
    /// Sets, maps and lists (by [`slot`]), by raw key.
    pub(super) collections: [OrdMap<Vec<u8>, Collection<K>>; 3],
}

impl<K, V> Clone for MirrorSnapshot<K, V> {
    fn clone(&self) -> Self {
        MirrorSnapshot {
            revision: self.revision,
            items: self.items.clone(),
            ordered: self.ordered.clone(),
            unreadable: self.unreadable.clone(),
            indexes: self.indexes.clone(),
            index_names: Arc::clone(&self.index_names),
            collections: self.collections.clone(),
        }
    }
}

impl<K, V> fmt::Debug for MirrorSnapshot<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MirrorSnapshot")
            .field("revision", &self.revision)
            .field("keys", &self.ordered.len())
            .field("unreadable", &self.unreadable.len())
            .field("collections", &self.collection_count())
            .field("indexes", &self.index_names)
            .finish()
    }
}

impl<K, V> MirrorSnapshot<K, V> {
    pub(super) fn empty(revision: i64, index_names: Arc<[&'static str]>) -> Self {
        MirrorSnapshot {
            revision,
            items: HashIndex::new(),
            ordered: OrdSet::new(),
            unreadable: OrdMap::new(),
            indexes: vec![OrdMap::new(); index_names.len()],
            index_names,
            collections: Default::default(),
        }
    }

    /// The store revision this view reflects.
    pub fn revision(&self) -> i64 {
        self.revision
    }

    /// How many keys parsed and decoded.
    pub fn len(&self) -> usize {
        self.ordered.len()
    }

    /// Whether no key parsed and decoded.
    pub fn is_empty(&self) -> bool {
        self.ordered.is_empty()
    }

    /// The key stored as `raw`, with its value.
    pub fn get_raw(&self, raw: &[u8]) -> Option<(&K, &Versioned<V>)> {
        self.items.get(raw).map(Item::pair)
    }

    /// Every key with its value, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &Versioned<V>)> {
        self.ordered.iter().map(Item::pair)
    }

    /// The keys whose raw encoding starts with `prefix` (a directory), in key order.
    pub fn iter_prefix<'a>(
        &'a self,
        prefix: &[u8],
    ) -> impl Iterator<Item = (&'a K, &'a Versioned<V>)> + use<'a, K, V> {
        let prefix = prefix.to_vec();
        let from = (Bound::Included(prefix.as_slice()), Bound::Unbounded);
        self.ordered
            .range::<_, [u8]>(from)
            .take_while(move |item| item.raw().starts_with(&prefix))
            .map(Item::pair)
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
            .flat_map(|items| items.iter().map(Item::pair))
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

    /// How many sets, maps and lists the view holds (for a mirror
    /// [with collections](super::MirrorBuilder::with_collections)).
    pub fn collection_count(&self) -> usize {
        self.collections.iter().map(OrdMap::len).sum()
    }

    /// The collection of `kind` stored as `raw`, with its parsed key (or why it does not
    /// parse as the mirror's key type).
    pub fn collection_raw(
        &self,
        raw: &[u8],
        kind: CollectionKind,
    ) -> Option<(std::result::Result<&K, &Error>, &CollectionValue)> {
        self.collections[slot(kind)]
            .get(raw)
            .map(|c| (c.0.as_ref(), &c.1))
    }

    /// Every collection whose key parsed, with its contents: the sets, then the maps, then
    /// the lists, each in key order.
    pub fn collections(&self) -> impl Iterator<Item = (&K, &CollectionValue)> {
        self.collections
            .iter()
            .flat_map(OrdMap::values)
            .filter_map(|c| c.0.as_ref().ok().map(|key| (key, &c.1)))
    }

    /// The collections of the range whose keys did not parse, with their contents and the
    /// reason: reported, never dropped.
    pub fn unreadable_collections(
        &self,
    ) -> impl Iterator<Item = (&[u8], &CollectionValue, &Error)> {
        self.collections
            .iter()
            .flat_map(OrdMap::iter)
            .filter_map(|(raw, c)| {
                c.0.as_ref()
                    .err()
                    .map(|error| (raw.as_slice(), &c.1, error))
            })
    }

    /// Sets the contents of a collection read from the store (empty: it does not exist).
    pub(super) fn set_collection(
        &mut self,
        raw: Vec<u8>,
        contents: CollectionValue,
        typer: &Typer<K, V>,
    ) {
        let map = &mut self.collections[slot(contents.kind())];
        if contents.is_empty() {
            map.remove(&raw);
        } else {
            let key = (typer.parse)(&raw);
            map.insert(raw, Arc::new((key, contents)));
        }
    }

    /// The mod revision of every raw key, readable or not: what a listing is compared with.
    pub(super) fn mod_revisions(&self) -> impl Iterator<Item = (&[u8], i64)> {
        let items = self
            .ordered
            .iter()
            .map(|item| (item.raw(), item.0.value.mod_revision));
        let unreadable = self
            .unreadable
            .iter()
            .map(|(k, u)| (k.as_slice(), u.0.mod_revision));
        items.chain(unreadable)
    }
}

impl<K: Clone, V: Clone> MirrorSnapshot<K, V> {
    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&Versioned<V>>
    where
        K: Key,
    {
        with_encoded(key, |raw| self.items.get(raw).map(|item| &item.0.value))
    }

    /// The members of the set at `key`, encoded (`None`: no such set, or the mirror was
    /// not built [with collections](super::MirrorBuilder::with_collections)). `key` is any
    /// typed key (a keyspace mirror's collection keys are one template's key type).
    pub fn set<Q: Key>(&self, key: &Q) -> Option<&std::collections::BTreeSet<Vec<u8>>> {
        match self.collection(key, CollectionKind::Set)? {
            CollectionValue::Set(members) => Some(members),
            _ => None,
        }
    }

    /// The fields of the map at `key`, encoded (`None` as for [`set`](Self::set)).
    pub fn map<Q: Key>(&self, key: &Q) -> Option<&std::collections::BTreeMap<Vec<u8>, Vec<u8>>> {
        match self.collection(key, CollectionKind::Map)? {
            CollectionValue::Map(fields) => Some(fields),
            _ => None,
        }
    }

    /// The items of the list at `key`, encoded, head first (`None` as for
    /// [`set`](Self::set)).
    pub fn list<Q: Key>(&self, key: &Q) -> Option<&[Vec<u8>]> {
        match self.collection(key, CollectionKind::List)? {
            CollectionValue::List(items) => Some(items),
            _ => None,
        }
    }

    fn collection<Q: Key>(&self, key: &Q, kind: CollectionKind) -> Option<&CollectionValue> {
        with_encoded(key, |raw| {
            self.collections[slot(kind)].get(raw).map(|c| &c.1)
        })
    }

    /// Applies one collection change; `Corrupted` when it does not fit the contents held
    /// (the view drifted from the store), after applying what it could.
    pub(super) fn apply_collection(
        &mut self,
        event: &CollectionEvent,
        typer: &Typer<K, V>,
    ) -> Result<()> {
        let map = &mut self.collections[slot(event.kind)];
        if event.change == CollectionChange::Deleted {
            map.remove(&event.key);
            return Ok(());
        }
        let (key, mut contents) = match map.remove(&event.key) {
            Some(held) => Arc::unwrap_or_clone(held),
            None => (
                (typer.parse)(&event.key),
                CollectionValue::empty(event.kind),
            ),
        };
        let applied = contents.apply(&event.change);
        if !contents.is_empty() {
            map.insert(event.key.clone(), Arc::new((key, contents)));
        }
        applied
    }

    /// The collection changes that turn the collections of `self` into those of `other`:
    /// `Deleted` for each that changed, then its contents as additions.
    pub(super) fn collection_diff(&self, other: &Self) -> Vec<CollectionEvent> {
        let mut changes = Vec::new();
        for kind in KINDS {
            let (old, new) = (
                &self.collections[slot(kind)],
                &other.collections[slot(kind)],
            );
            let keys: std::collections::BTreeSet<&Vec<u8>> = old.keys().chain(new.keys()).collect();
            for raw in keys {
                Self::diff_one(raw, kind, old.get(raw), new.get(raw), &mut changes);
            }
        }
        changes
    }

    fn diff_one(
        raw: &[u8],
        kind: CollectionKind,
        before: Option<&Collection<K>>,
        after: Option<&Collection<K>>,
        changes: &mut Vec<CollectionEvent>,
    ) {
        let (before, after) = (before.map(|c| &c.1), after.map(|c| &c.1));
        if before == after {
            return;
        }
        let event = |change| CollectionEvent {
            key: raw.to_vec(),
            kind,
            change,
        };
        if before.is_some() {
            changes.push(event(CollectionChange::Deleted));
        }
        match after {
            Some(CollectionValue::Set(members)) => changes.extend(
                members
                    .iter()
                    .map(|m| event(CollectionChange::SetAdd { member: m.clone() })),
            ),
            Some(CollectionValue::Map(fields)) => changes.extend(fields.iter().map(|(f, v)| {
                event(CollectionChange::MapPut {
                    field: f.clone(),
                    value: v.clone(),
                    prev: None,
                })
            })),
            Some(CollectionValue::List(items)) => changes.extend(
                items
                    .iter()
                    .map(|i| event(CollectionChange::ListPush { item: i.clone() })),
            ),
            None => {}
        }
    }

    fn remove(&mut self, raw: &[u8], indexers: &[Indexer<K, V>]) -> Option<Item<K, V>> {
        self.unreadable.remove(raw);
        let old = self.items.remove(raw)?;
        self.ordered.remove(raw);
        self.unindex(&old, indexers);
        Some(old)
    }

    /// Takes `item` out of the secondary indexes.
    fn unindex(&mut self, item: &Item<K, V>, indexers: &[Indexer<K, V>]) {
        for (i, indexer) in indexers.iter().enumerate() {
            for value in (indexer.f)(&item.0.key, &item.0.value.value) {
                if let Some(items) = self.indexes[i].get_mut(&value) {
                    items.remove(item.raw());
                    if items.is_empty() {
                        self.indexes[i].remove(&value);
                    }
                }
            }
        }
    }

    /// Stores `item`, in place of the item of its key if there is one (a replacement
    /// copies each path once, where a removal and an insertion would copy it twice).
    fn insert(&mut self, item: Item<K, V>, indexers: &[Indexer<K, V>]) {
        self.items.insert(item.clone());
        self.place(item, indexers);
    }

    /// Puts `item` in the ordered set (in place of the item of its key, if there is one) and
    /// the secondary indexes, and its key out of the unreadable ones.
    fn place(&mut self, item: Item<K, V>, indexers: &[Indexer<K, V>]) {
        self.unreadable.remove(item.raw());
        if let Some(old) = self.ordered.insert(item.clone()) {
            self.unindex(&old, indexers);
        }
        for (i, indexer) in indexers.iter().enumerate() {
            for value in (indexer.f)(&item.0.key, &item.0.value.value) {
                self.indexes[i]
                    .entry(value)
                    .or_default()
                    .insert(item.clone());
            }
        }
    }

    /// Adds one entry of a listing, and adds its item to `listed` with the hash of its key.
    /// Lookups by key see the entries added this way only after [`loaded`](Self::loaded)
    /// indexes `listed` at once.
    pub(super) fn load(
        &mut self,
        entry: Entry,
        typer: &Typer<K, V>,
        indexers: &[Indexer<K, V>],
        listed: &mut Vec<(u64, Item<K, V>)>,
    ) {
        // A listing lists a key once; a key listed again replaces what it listed before.
        match typer.type_entry(&entry) {
            Ok((key, value)) => {
                let item = Item::new(entry.key, key, value);
                // Hashed now, while the key is in the processor's caches.
                listed.push((self.items.hash(item.raw()), item.clone()));
                self.place(item, indexers);
            }
            Err(error) => {
                if let Some(old) = self.ordered.remove(entry.key.as_slice()) {
                    self.unindex(&old, indexers);
                }
                let raw = entry.key.clone();
                self.unreadable.insert(raw, Arc::new((entry, error)));
            }
        }
    }

    /// Indexes by key the items [`load`](Self::load) added to `listed`.
    pub(super) fn loaded(&mut self, listed: Vec<(u64, Item<K, V>)>) {
        self.items = self.items.of_hashed(listed);
        if self.items.len() != self.ordered.len() {
            // A key listed again, unreadable the second time, is in `listed` but not in the
            // view (the index holds a superset: equal sizes mean equal contents).
            let items = (self.ordered.iter())
                .map(|item| (self.items.hash(item.raw()), item.clone()))
                .collect();
            self.items = self.items.of_hashed(items);
        }
    }

    /// Applies one event of a batch; the typed change it makes.
    pub(super) fn apply(
        &mut self,
        event: Event,
        typer: &Typer<K, V>,
        indexers: &[Indexer<K, V>],
    ) -> Option<TypedEvent<K, V>> {
        match event {
            Event::Put { entry, .. } => match typer.type_entry(&entry) {
                Ok((key, value)) => {
                    let change = TypedEvent::Put {
                        key: key.clone(),
                        value: value.clone(),
                    };
                    self.insert(Item::new(entry.key, key, value), indexers);
                    Some(change)
                }
                Err(error) => {
                    self.remove(&entry.key, indexers);
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
            },
            Event::Delete { key, .. } => {
                let was_unreadable = self.unreadable.contains_key(&key);
                match self.remove(&key, indexers) {
                    Some(old) => Some(TypedEvent::Delete {
                        key: old.0.key.clone(),
                    }),
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
                    key: item.0.key.clone(),
                    value: item.0.value.clone(),
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
                    key: item.0.key.clone(),
                });
            } else {
                changes.push(unreadable_delete(raw.to_vec(), typer));
            }
        }
        changes
    }
}

/// Runs `f` on the encoding of `key`, in a buffer reused by the thread: a lookup allocates
/// nothing.
fn with_encoded<K: Key, R>(key: &K, f: impl FnOnce(&[u8]) -> R) -> R {
    thread_local! {
        static ENCODED: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    ENCODED.with(|buf| {
        let mut buf = buf.borrow_mut();
        buf.clear();
        key.write(&mut buf);
        f(buf.as_bytes())
    })
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

#[cfg(test)]
mod tests {
    use super::super::item::SHORT;
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Raw keys of every length class (held in the item, and not), several the prefix of
    /// others, and two that do not parse.
    fn pool() -> Vec<Vec<u8>> {
        let long = "d/".to_owned() + &"x".repeat(SHORT - 2);
        let mut keys: Vec<String> = ["", "a", "a/", "a/b", "a/bc", "a/b/c", "b", "bad/1", "c/bad"]
            .iter()
            .map(|k| (*k).to_owned())
            .collect();
        keys.push(long.clone());
        keys.push(long.clone() + "y");
        keys.push(long.clone() + "/z");
        keys.push(long + &"w".repeat(100));
        keys.retain(|k| !k.is_empty());
        keys.into_iter().map(String::into_bytes).collect()
    }

    /// Keys parse unless they contain "bad"; values decode unless they are "?".
    fn typer() -> Typer<String, String> {
        Typer {
            parse: Arc::new(|raw: &[u8]| {
                let key = String::from_utf8_lossy(raw).into_owned();
                match key.contains("bad") {
                    true => Err(Error::invalid_argument("a bad key")),
                    false => Ok(key),
                }
            }),
            decode: Arc::new(|_key: &String, entry: &Entry| {
                let value = String::from_utf8_lossy(&entry.value).into_owned();
                match value.as_str() {
                    "?" => Err(Error::invalid_argument("a bad value")),
                    _ => Ok(Versioned {
                        value,
                        create_revision: entry.create_revision,
                        mod_revision: entry.mod_revision,
                        version: entry.version,
                        lease: None,
                    }),
                }
            }),
        }
    }

    /// Indexes each value under its first character.
    fn indexers() -> Vec<Indexer<String, String>> {
        vec![Indexer {
            name: "first",
            f: Arc::new(|_key: &String, value: &String| {
                value.chars().take(1).map(String::from).collect()
            }),
        }]
    }

    fn entry(raw: &[u8], value: &str, revision: i64) -> Entry {
        Entry {
            key: raw.to_vec(),
            value: value.as_bytes().to_vec(),
            create_revision: revision,
            mod_revision: revision,
            version: 1,
            lease: None,
        }
    }

    /// What a view should hold: each raw key's value and revision.
    type Model = BTreeMap<Vec<u8>, (String, i64)>;

    fn readable(raw: &[u8], value: &str) -> bool {
        !String::from_utf8_lossy(raw).contains("bad") && value != "?"
    }

    fn agrees(view: &MirrorSnapshot<String, String>, model: &Model) -> Result<(), TestCaseError> {
        let good: Vec<(String, String, i64)> = (model.iter())
            .filter(|(raw, (value, _))| readable(raw, value))
            .map(|(raw, (v, rev))| (String::from_utf8_lossy(raw).into_owned(), v.clone(), *rev))
            .collect();
        let seen: Vec<(String, String, i64)> = (view.iter())
            .map(|(k, v)| (k.clone(), v.value.clone(), v.mod_revision))
            .collect();
        prop_assert_eq!(&seen, &good);
        prop_assert_eq!(view.len(), good.len());
        for raw in pool() {
            let expected = good.iter().find(|(k, ..)| k.as_bytes() == raw.as_slice());
            let found = view
                .get_raw(&raw)
                .map(|(k, v)| (k.clone(), v.value.clone()));
            prop_assert_eq!(found, expected.map(|(k, v, _)| (k.clone(), v.clone())));
        }
        for prefix in ["", "a", "a/", "a/b", "d/", "d/xx", "e"] {
            let under: Vec<&String> = view
                .iter_prefix(prefix.as_bytes())
                .map(|(k, _)| k)
                .collect();
            let expected: Vec<&String> = good
                .iter()
                .map(|(k, ..)| k)
                .filter(|k| k.starts_with(prefix))
                .collect();
            prop_assert_eq!(under, expected, "prefix {:?}", prefix);
        }
        for first in ["v", "w", "z"] {
            let found: Vec<&String> = view.lookup("first", first).map(|(k, _)| k).collect();
            let expected: Vec<&String> = good
                .iter()
                .filter(|(_, v, _)| v.starts_with(first))
                .map(|(k, ..)| k)
                .collect();
            prop_assert_eq!(found, expected, "index value {:?}", first);
        }
        let unreadable: Vec<&[u8]> = view.unreadable().map(|(e, _)| e.key.as_slice()).collect();
        let expected: Vec<&[u8]> = (model.iter())
            .filter(|(raw, (value, _))| !readable(raw, value))
            .map(|(raw, _)| raw.as_slice())
            .collect();
        prop_assert_eq!(unreadable, expected);
        Ok(())
    }

    proptest! {
        /// After a listing and any puts and deletes, a view answers every read as the map
        /// of what was written: lookups, order, directories, the index, the unreadable keys;
        /// and a view kept before later changes still answers as then.
        #[test]
        fn a_view_reads_as_its_model_and_kept_views_do_not_change(
            listed in proptest::collection::vec(
                (0..12usize, prop_oneof![Just("v0"), Just("w0"), Just("?")]),
                0..30,
            ),
            ops in proptest::collection::vec(
                (0..13usize, prop_oneof![Just("v1"), Just("w2"), Just("v3"), Just("?"), Just("")]),
                0..120,
            ),
        ) {
            let (typer, indexers, pool) = (typer(), indexers(), pool());
            let mut view = MirrorSnapshot::empty(0, Arc::from(["first"]));
            let mut model = Model::new();
            let mut items = Vec::new();
            for (at, value) in listed {
                let raw = pool[at % pool.len()].clone();
                view.load(entry(&raw, value, 1), &typer, &indexers, &mut items);
                model.insert(raw, (value.to_owned(), 1));
            }
            view.loaded(items);
            agrees(&view, &model)?;
            let mut kept = Vec::new();
            for (revision, (at, value)) in (2..).zip(ops) {
                let raw = pool[at % pool.len()].clone();
                if at >= pool.len() {
                    kept.push((view.clone(), model.clone()));
                    continue;
                }
                if value.is_empty() {
                    view.apply(Event::Delete { key: raw.clone(), prev: None }, &typer, &indexers);
                    model.remove(&raw);
                } else {
                    let entry = entry(&raw, value, revision);
                    view.apply(Event::Put { entry, prev: None }, &typer, &indexers);
                    model.insert(raw, (value.to_owned(), revision));
                }
                agrees(&view, &model)?;
            }
            for (view, model) in &kept {
                agrees(view, model)?;
            }
        }
    }
}
