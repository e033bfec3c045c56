//! Sets, maps and lists in model sequences: the ops, their strategy, and their model.
//!
//! Collections live at keys `cs<n>` (sets), `cm<n>` (maps) and `cl<n>` (lists) under the
//! sequence's root. Plain keys never start with `c`, so no key is used both as a plain value
//! and as a collection, or as two kinds of collection (which only ordered backends allow).
//! Set scans are left out: their page boundaries are backend-specific.

use super::bytes::{Bytes, value};
use keyplane_core::{CollectionOp, CollectionResult};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A collection op on the `n`-th collection of its kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Coll {
    /// `SetAdd`.
    SetAdd(u8, Bytes),
    /// `SetRemove`.
    SetRemove(u8, Bytes),
    /// `SetContains`.
    SetContains(u8, Bytes),
    /// `SetMembers`.
    SetMembers(u8),
    /// `MapPut` of a field and value.
    MapPut(u8, Bytes, Bytes),
    /// `MapGet`.
    MapGet(u8, Bytes),
    /// `MapDelete`.
    MapDelete(u8, Bytes),
    /// `MapGetAll`.
    MapGetAll(u8),
    /// `ListPush`.
    ListPush(u8, Bytes),
    /// `ListPushFront`.
    ListPushFront(u8, Bytes),
    /// `ListRemove`.
    ListRemove(u8, Bytes),
    /// `ListRange` from `start` to `stop` inclusive.
    ListRange(u8, i64, i64),
    /// `ListRotate`.
    ListRotate(u8),
    /// `ListLen`.
    ListLen(u8),
}

/// The strategy of one collection op.
pub fn coll() -> impl Strategy<Value = Coll> {
    let n = || 0u8..2;
    let index = || -3i64..4;
    prop_oneof![
        3 => (n(), value()).prop_map(|(n, m)| Coll::SetAdd(n, m)),
        2 => (n(), value()).prop_map(|(n, m)| Coll::SetRemove(n, m)),
        1 => (n(), value()).prop_map(|(n, m)| Coll::SetContains(n, m)),
        1 => n().prop_map(Coll::SetMembers),
        3 => (n(), value(), value()).prop_map(|(n, f, v)| Coll::MapPut(n, f, v)),
        1 => (n(), value()).prop_map(|(n, f)| Coll::MapGet(n, f)),
        2 => (n(), value()).prop_map(|(n, f)| Coll::MapDelete(n, f)),
        1 => n().prop_map(Coll::MapGetAll),
        3 => (n(), value()).prop_map(|(n, v)| Coll::ListPush(n, v)),
        2 => (n(), value()).prop_map(|(n, v)| Coll::ListPushFront(n, v)),
        1 => (n(), value()).prop_map(|(n, v)| Coll::ListRemove(n, v)),
        1 => (n(), index(), index()).prop_map(|(n, a, b)| Coll::ListRange(n, a, b)),
        2 => n().prop_map(Coll::ListRotate),
        1 => n().prop_map(Coll::ListLen),
    ]
}

/// What a collection op touches, for the txn conflict rules.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Touch {
    /// A set member or map field.
    Member(Vec<u8>, u8, Vec<u8>),
    /// A whole list.
    List(Vec<u8>),
}

impl Coll {
    /// The collection's key, relative to the root.
    pub fn key(&self) -> Vec<u8> {
        use Coll::*;
        let (kind, n) = match self {
            SetAdd(n, _) | SetRemove(n, _) | SetContains(n, _) | SetMembers(n) => ('s', n),
            MapPut(n, ..) | MapGet(n, _) | MapDelete(n, _) | MapGetAll(n) => ('m', n),
            ListPush(n, _)
            | ListPushFront(n, _)
            | ListRemove(n, _)
            | ListRange(n, ..)
            | ListRotate(n)
            | ListLen(n) => ('l', n),
        };
        format!("c{kind}{n}").into_bytes()
    }

    /// What the op writes, if it writes.
    pub fn touch(&self) -> Option<Touch> {
        use Coll::*;
        match self {
            SetAdd(_, m) | SetRemove(_, m) => Some(Touch::Member(self.key(), b's', m.0.clone())),
            MapPut(_, f, _) | MapDelete(_, f) => Some(Touch::Member(self.key(), b'm', f.0.clone())),
            ListPush(..) | ListPushFront(..) | ListRemove(..) | ListRotate(_) => {
                Some(Touch::List(self.key()))
            }
            _ => None,
        }
    }

    /// The contract's op, with the key under `root`.
    pub fn to_op(&self, root: &[u8]) -> CollectionOp {
        use Coll::*;
        let key = [root, &self.key()].concat();
        match self.clone() {
            SetAdd(_, m) => CollectionOp::SetAdd { key, member: m.0 },
            SetRemove(_, m) => CollectionOp::SetRemove { key, member: m.0 },
            SetContains(_, m) => CollectionOp::SetContains { key, member: m.0 },
            SetMembers(_) => CollectionOp::SetMembers { key },
            MapPut(_, f, v) => CollectionOp::MapPut {
                key,
                field: f.0,
                value: v.0,
            },
            MapGet(_, f) => CollectionOp::MapGet { key, field: f.0 },
            MapDelete(_, f) => CollectionOp::MapDelete { key, field: f.0 },
            MapGetAll(_) => CollectionOp::MapGetAll { key },
            ListPush(_, v) => CollectionOp::ListPush { key, value: v.0 },
            ListPushFront(_, v) => CollectionOp::ListPushFront { key, value: v.0 },
            ListRemove(_, v) => CollectionOp::ListRemove { key, value: v.0 },
            ListRange(_, start, stop) => CollectionOp::ListRange { key, start, stop },
            ListRotate(_) => CollectionOp::ListRotate { key },
            ListLen(_) => CollectionOp::ListLen { key },
        }
    }
}

/// The model's collections (empty collections do not exist).
#[derive(Clone, Debug, Default)]
pub struct Collections {
    sets: BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>,
    maps: BTreeMap<Vec<u8>, BTreeMap<Vec<u8>, Vec<u8>>>,
    lists: BTreeMap<Vec<u8>, VecDeque<Vec<u8>>>,
}

impl Collections {
    /// Applies `op` with Redis semantics.
    pub fn apply(&mut self, op: &Coll) -> CollectionResult {
        use Coll::*;
        use CollectionResult as R;
        let key = op.key();
        let result = match op {
            SetAdd(_, m) => R::Changed(
                self.sets
                    .entry(key.clone())
                    .or_default()
                    .insert(m.0.clone()),
            ),
            SetRemove(_, m) => R::Changed(self.sets.get_mut(&key).is_some_and(|s| s.remove(&m.0))),
            SetContains(_, m) => R::Contains(self.sets.get(&key).is_some_and(|s| s.contains(&m.0))),
            SetMembers(_) => {
                R::Members(self.sets.get(&key).into_iter().flatten().cloned().collect())
            }
            MapPut(_, f, v) => {
                let map = self.maps.entry(key.clone()).or_default();
                R::Changed(map.insert(f.0.clone(), v.0.clone()).is_none())
            }
            MapGet(_, f) => R::Value(self.maps.get(&key).and_then(|m| m.get(&f.0)).cloned()),
            MapDelete(_, f) => R::Changed(
                self.maps
                    .get_mut(&key)
                    .is_some_and(|m| m.remove(&f.0).is_some()),
            ),
            MapGetAll(_) => R::Fields(
                self.maps
                    .get(&key)
                    .into_iter()
                    .flatten()
                    .map(|(f, v)| (f.clone(), v.clone()))
                    .collect(),
            ),
            ListPush(_, v) => {
                let list = self.lists.entry(key.clone()).or_default();
                list.push_back(v.0.clone());
                R::Count(list.len() as u64)
            }
            ListPushFront(_, v) => {
                let list = self.lists.entry(key.clone()).or_default();
                list.push_front(v.0.clone());
                R::Count(list.len() as u64)
            }
            ListRemove(_, v) => {
                let list = self.lists.entry(key.clone()).or_default();
                let before = list.len();
                list.retain(|item| *item != v.0);
                R::Count((before - list.len()) as u64)
            }
            ListRange(_, start, stop) => {
                let list = self.lists.get(&key).cloned().unwrap_or_default();
                let len = list.len() as i64;
                let norm = |i: i64| if i < 0 { len + i } else { i };
                let (from, to) = (norm(*start).max(0), norm(*stop).min(len - 1));
                R::Items(if from > to {
                    Vec::new()
                } else {
                    list.range(from as usize..=to as usize).cloned().collect()
                })
            }
            ListRotate(_) => {
                let list = self.lists.entry(key.clone()).or_default();
                let head = list.pop_front();
                if let Some(item) = &head {
                    list.push_back(item.clone());
                }
                R::Value(head)
            }
            ListLen(_) => R::Count(self.lists.get(&key).map_or(0, |l| l.len() as u64)),
        };
        self.sets.retain(|_, s| !s.is_empty());
        self.maps.retain(|_, m| !m.is_empty());
        self.lists.retain(|_, l| !l.is_empty());
        result
    }

    /// Deletes every collection whose key satisfies `doomed`; returns how many.
    pub fn delete_where(&mut self, doomed: impl Fn(&[u8]) -> bool) -> u64 {
        let before = self.sets.len() + self.maps.len() + self.lists.len();
        self.sets.retain(|k, _| !doomed(k));
        self.maps.retain(|k, _| !doomed(k));
        self.lists.retain(|k, _| !doomed(k));
        (before - self.sets.len() - self.maps.len() - self.lists.len()) as u64
    }

    /// How many times `member` is in the collection of `kind` (`s`, `m`, `l`) at `key`.
    pub fn count(&self, kind: u8, key: &[u8], member: &[u8]) -> i64 {
        match kind {
            b's' => i64::from(self.sets.get(key).is_some_and(|s| s.contains(member))),
            b'm' => i64::from(self.maps.get(key).is_some_and(|m| m.contains_key(member))),
            _ => self.lists.get(key).map_or(0, |l| {
                l.iter().filter(|i| i.as_slice() == member).count() as i64
            }),
        }
    }

    /// The value of field `field` of the map at `key`.
    pub fn field(&self, key: &[u8], field: &[u8]) -> Option<&Vec<u8>> {
        self.maps.get(key).and_then(|m| m.get(field))
    }

    /// The size of the collection of `kind` (`s`, `m`, `l`) at `key`.
    pub fn size(&self, kind: u8, key: &[u8]) -> i64 {
        match kind {
            b's' => self.sets.get(key).map_or(0, |s| s.len() as i64),
            b'm' => self.maps.get(key).map_or(0, |m| m.len() as i64),
            _ => self.lists.get(key).map_or(0, |l| l.len() as i64),
        }
    }
}
