//! The generic emulation of sets, maps and lists over ordered keys, for every backend without
//! native collections (memory, sled, etcd).
//!
//! Members live one per physical key in the reserved layout of
//! [`collections::layout`](crate::raw::layout). A backend reads its physical state
//! inside its atomic section through [`OrderedState`], calls [`apply`], and writes the returned
//! [`PhysicalWrite`]s in the same atomic section. [`apply`] is pure: it never writes, so a
//! backend that fails later leaves the store unchanged.
//!
//! - A locking backend (memory, sled) implements [`OrderedState`] over its own map.
//! - An optimistic backend (etcd) pre-reads the ranges of [`reads`] at one revision into a
//!   `BTreeMap` (which implements [`OrderedState`]), runs [`apply`] on that snapshot, and guards
//!   the same ranges in its transaction.
//! - Several collection ops of one transaction see each other's writes through an [`Overlay`].
//!
//! Semantics follow Redis: writes that change nothing return `Changed(false)` (or a zero
//! count) and produce no physical write; set members and map fields come in ascending byte
//! order; a set scan pages in byte order with an opaque cursor; lists append at the tail and
//! rotate head to tail atomically.
//!
//! ```
//! use std::collections::BTreeMap;
//! use keyplane_contract::raw::emulation::{apply, PhysicalWrite};
//! use keyplane_contract::{CollectionOp, CollectionResult};
//!
//! let mut state = BTreeMap::new();
//! let op = CollectionOp::SetAdd { key: b"users".to_vec(), member: b"ada".to_vec() };
//! let applied = apply(&op, &state)?;
//! assert_eq!(applied.result, CollectionResult::Changed(true));
//! for write in applied.writes {
//!     if let PhysicalWrite::Put { key, value } = write {
//!         state.insert(key, value);
//!     }
//! }
//! // Adding the same member again changes nothing and writes nothing.
//! let again = apply(&op, &state)?;
//! assert_eq!(again.result, CollectionResult::Changed(false));
//! assert!(again.writes.is_empty());
//! # Ok::<(), keyplane_contract::Error>(())
//! ```

mod apply;
mod listing;
mod overlay;
mod rewind;

pub use apply::apply;
pub use listing::{cut_page, list_collections, merge_page};
pub use overlay::Overlay;
pub use rewind::{DeletedSize, Logged, Touched, check_revision, rewind, rewind_with_collections};

use crate::collections::{CollectionKind, CollectionOp};
use crate::error::Result;
use crate::raw::layout;
use crate::raw::prefix_end;
use crate::txn::{Compare, CompareTarget};
use std::collections::BTreeMap;

/// A half-open interval `[start, end)` of physical keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PhysicalRange {
    /// First physical key included.
    pub start: Vec<u8>,
    /// First physical key excluded.
    pub end: Vec<u8>,
}

impl PhysicalRange {
    /// Every physical key starting with `prefix` (which must not be empty or all `0xFF`; the
    /// reserved layout's prefixes never are).
    pub fn prefix(prefix: Vec<u8>) -> Self {
        let end = prefix_end(&prefix).unwrap_or_else(|| vec![0xff; prefix.len() + 1]);
        PhysicalRange { start: prefix, end }
    }

    /// Exactly one physical key.
    pub fn key(key: Vec<u8>) -> Self {
        let mut end = key.clone();
        end.push(0);
        PhysicalRange { start: key, end }
    }

    /// Whether `key` lies in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && key < self.end.as_slice()
    }
}

/// Ordered physical state, read inside a backend's atomic section.
///
/// Keys are physical: for the emulation, the reserved layout's keys and their raw values.
pub trait OrderedState {
    /// The value of one physical key.
    ///
    /// # Errors
    /// Backend read errors.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Physical entries in `[start, end)`, ascending, at most `limit` of them.
    ///
    /// # Errors
    /// Backend read errors.
    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: Option<usize>,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;

    /// The last physical entry in `[start, end)`.
    ///
    /// # Errors
    /// Backend read errors.
    fn last(&self, start: &[u8], end: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>>;

    /// How many physical entries `[start, end)` holds. The default scans them.
    ///
    /// # Errors
    /// Backend read errors.
    fn count(&self, start: &[u8], end: &[u8]) -> Result<u64> {
        Ok(self.scan(start, end, None)?.len() as u64)
    }
}

/// One write to the physical state, produced by [`apply`] or [`Overlay::into_writes`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PhysicalWrite {
    /// Set a physical key.
    Put {
        /// The physical key.
        key: Vec<u8>,
        /// Its value.
        value: Vec<u8>,
    },
    /// Remove a physical key.
    Delete {
        /// The physical key.
        key: Vec<u8>,
    },
}

impl PhysicalWrite {
    /// The physical key written.
    pub fn key(&self) -> &[u8] {
        match self {
            PhysicalWrite::Put { key, .. } | PhysicalWrite::Delete { key } => key,
        }
    }
}

/// The outcome of [`apply`]: the op's result and the writes that make it so (none for an op
/// that changes nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The result to report.
    pub result: crate::CollectionResult,
    /// The physical writes, to apply in order in the same atomic section.
    pub writes: Vec<PhysicalWrite>,
    /// What the op changed, as a watch reports it (`None` when it wrote nothing).
    pub change: Option<crate::CollectionChange>,
}

/// The physical ranges [`apply`] reads for `op`: an optimistic backend pre-reads them at one
/// revision and guards them (nothing in them changed) in its transaction.
pub fn reads(op: &CollectionOp) -> Vec<PhysicalRange> {
    let kind = op.kind();
    let key = op.key();
    match op {
        CollectionOp::SetAdd { member, .. }
        | CollectionOp::SetRemove { member, .. }
        | CollectionOp::SetContains { member, .. } => {
            vec![PhysicalRange::key(layout::member_key(kind, key, member))]
        }
        CollectionOp::MapPut { field, .. }
        | CollectionOp::MapGet { field, .. }
        | CollectionOp::MapDelete { field, .. } => {
            vec![PhysicalRange::key(layout::member_key(kind, key, field))]
        }
        CollectionOp::SetScan {
            after: Some(after), ..
        } => {
            let whole = members_range(kind, key);
            vec![PhysicalRange {
                start: layout::member_key(kind, key, after.start_key()),
                end: whole.end,
            }]
        }
        _ => vec![members_range(kind, key)],
    }
}

/// The physical ranges [`evaluate_compare`] reads for a collection compare (none for a plain
/// one): an optimistic backend pre-reads and guards them like the ranges of [`reads`].
pub fn compare_reads(compare: &Compare) -> Vec<PhysicalRange> {
    let key = &compare.key;
    match &compare.target {
        CompareTarget::Member {
            kind: kind @ (CollectionKind::Set | CollectionKind::Map),
            member,
            ..
        } => vec![PhysicalRange::key(layout::member_key(*kind, key, member))],
        CompareTarget::Field { field, .. } => vec![PhysicalRange::key(layout::member_key(
            CollectionKind::Map,
            key,
            field,
        ))],
        CompareTarget::Member { kind, .. } | CompareTarget::Size { kind, .. } => {
            vec![members_range(*kind, key)]
        }
        _ => Vec::new(),
    }
}

/// Whether every compare holds, stopping at the first that does not: collection compares
/// against `members` ([`evaluate_compare`]), plain compares against the entry `entry` reads
/// for their key ([`Compare::evaluate`]). Pick the branch to run with
/// [`Txn::branch`](crate::Txn::branch).
///
/// # Errors
/// Read errors of `members` or `entry`.
pub fn compares_hold(
    compares: &[Compare],
    members: &impl OrderedState,
    mut entry: impl FnMut(&[u8]) -> Result<Option<crate::Entry>>,
) -> Result<bool> {
    for compare in compares {
        let holds = if compare.target.collection_kind().is_some() {
            evaluate_compare(compare, members)?
        } else {
            compare.evaluate(entry(&compare.key)?.as_ref())
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Evaluates a collection compare ([`CompareTarget::Member`], [`CompareTarget::Field`],
/// [`CompareTarget::Size`]) against `state`, reading only [`compare_reads`]. A plain compare
/// is false here (see [`Compare::evaluate`]).
///
/// # Errors
/// Read errors of `state`.
pub fn evaluate_compare(compare: &Compare, state: &impl OrderedState) -> Result<bool> {
    let key = &compare.key;
    let count_of = |range: &PhysicalRange| state.count(&range.start, &range.end);
    Ok(match &compare.target {
        CompareTarget::Member { kind, member, .. } => {
            let count = match kind {
                CollectionKind::Set | CollectionKind::Map => i64::from(
                    state
                        .get(&layout::member_key(*kind, key, member))?
                        .is_some(),
                ),
                CollectionKind::List => {
                    let range = members_range(*kind, key);
                    let items = state.scan(&range.start, &range.end, None)?;
                    items.iter().filter(|(_, item)| item == member).count() as i64
                }
            };
            compare.evaluate_collection(|_| count, |_| None, || 0)
        }
        CompareTarget::Field { field, .. } => {
            let value = state.get(&layout::member_key(CollectionKind::Map, key, field))?;
            compare.evaluate_collection(|_| 0, |_| value, || 0)
        }
        CompareTarget::Size { kind, .. } => {
            let size = count_of(&members_range(*kind, key))? as i64;
            compare.evaluate_collection(|_| 0, |_| None, || size)
        }
        _ => false,
    })
}

/// The physical range holding every member of the collection of `kind` at `key`.
pub fn members_range(kind: CollectionKind, key: &[u8]) -> PhysicalRange {
    PhysicalRange::prefix(layout::members_prefix(kind, key))
}

/// The physical ranges that `delete(key)` removes besides the plain key: the set, map and list
/// at `key`.
pub fn collection_ranges_for_key(key: &[u8]) -> [PhysicalRange; 3] {
    CollectionKind::ALL.map(|kind| members_range(kind, key))
}

/// The physical ranges that `delete_prefix(prefix)` removes besides the plain keys: every set,
/// map and list whose key starts with `prefix`.
pub fn collection_ranges_for_prefix(prefix: &[u8]) -> [PhysicalRange; 3] {
    CollectionKind::ALL.map(|kind| PhysicalRange::prefix(layout::kind_prefix(kind, prefix)))
}

/// Physical deletes of whole collections, and how many collections they remove.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeletedCollections {
    /// Number of non-empty collections removed (each counts as one deleted key).
    pub collections: u64,
    /// Each collection removed: its kind and key.
    pub removed: Vec<(CollectionKind, Vec<u8>)>,
    /// One delete per physical member key.
    pub writes: Vec<PhysicalWrite>,
}

/// Deletes every collection whose physical members lie in `ranges` (from
/// [`collection_ranges_for_key`] or [`collection_ranges_for_prefix`]).
///
/// # Errors
/// Backend read errors.
pub fn delete_collections(
    state: &impl OrderedState,
    ranges: &[PhysicalRange],
) -> Result<DeletedCollections> {
    let mut out = DeletedCollections::default();
    for range in ranges {
        let mut last_collection: Option<Vec<u8>> = None;
        for (key, _) in state.scan(&range.start, &range.end, None)? {
            let collection = collection_of(&key);
            if last_collection.as_deref() != Some(collection) {
                out.collections += 1;
                if let Some(removed) = split_collection(collection) {
                    out.removed.push(removed);
                }
                last_collection = Some(collection.to_vec());
            }
            out.writes.push(PhysicalWrite::Delete { key });
        }
    }
    Ok(out)
}

/// The kind and key of a collection from its `\0 tag K \0` members prefix.
fn split_collection(members_prefix: &[u8]) -> Option<(CollectionKind, Vec<u8>)> {
    let (kind, rest) = layout::split_reserved(members_prefix)?;
    Some((kind, rest.strip_suffix(&[0])?.to_vec()))
}

/// For an optimistic backend: per collection that `ops` remove members from one by one, a
/// read of its first members (as many as the removals, plus one) that tells whether the
/// removals leave it empty. Add them to the pre-read like the ranges of [`reads`]: a
/// partial read of a members range is enough for [`Overlay::collection_events`].
pub fn emptiness_probes<'a>(
    ops: impl IntoIterator<Item = &'a CollectionOp>,
) -> Vec<(PhysicalRange, usize)> {
    let mut removals: BTreeMap<(CollectionKind, &[u8]), usize> = BTreeMap::new();
    for op in ops {
        if let CollectionOp::SetRemove { key, .. } | CollectionOp::MapDelete { key, .. } = op {
            *removals.entry((op.kind(), key.as_slice())).or_default() += 1;
        }
    }
    removals
        .into_iter()
        .map(|((kind, key), n)| (members_range(kind, key), n + 1))
        .collect()
}

/// The `\0 tag K \0` part of a physical member key: which collection it belongs to.
fn collection_of(physical: &[u8]) -> &[u8] {
    let end = physical
        .iter()
        .skip(2)
        .position(|&b| b == 0)
        .map_or(physical.len(), |i| i + 3);
    &physical[..end]
}

impl OrderedState for BTreeMap<Vec<u8>, Vec<u8>> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(BTreeMap::get(self, key).cloned())
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: Option<usize>,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        if start >= end {
            return Ok(Vec::new());
        }
        let iter = self
            .range::<[u8], _>((
                std::ops::Bound::Included(start),
                std::ops::Bound::Excluded(end),
            ))
            .map(|(k, v)| (k.clone(), v.clone()));
        Ok(iter.take(limit.unwrap_or(usize::MAX)).collect())
    }

    fn last(&self, start: &[u8], end: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if start >= end {
            return Ok(None);
        }
        Ok(self
            .range::<[u8], _>((
                std::ops::Bound::Included(start),
                std::ops::Bound::Excluded(end),
            ))
            .next_back()
            .map(|(k, v)| (k.clone(), v.clone())))
    }

    fn count(&self, start: &[u8], end: &[u8]) -> Result<u64> {
        if start >= end {
            return Ok(0);
        }
        Ok(self
            .range::<[u8], _>((
                std::ops::Bound::Included(start),
                std::ops::Bound::Excluded(end),
            ))
            .count() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_exactly_their_collections() {
        let [set, map, list] = collection_ranges_for_key(b"a");
        assert!(set.contains(&layout::member_key(CollectionKind::Set, b"a", b"x")));
        assert!(!set.contains(&layout::member_key(CollectionKind::Set, b"ab", b"x")));
        assert!(map.contains(&layout::member_key(CollectionKind::Map, b"a", b"")));
        assert!(list.contains(&layout::list_item_key(b"a", 0)));
        assert!(!list.contains(&layout::list_item_key(b"a/", 0)));

        let [set, _, _] = collection_ranges_for_prefix(b"a/");
        assert!(set.contains(&layout::member_key(CollectionKind::Set, b"a/b", b"x")));
        assert!(!set.contains(&layout::member_key(CollectionKind::Set, b"a0", b"x")));
        let [_, _, list] = collection_ranges_for_prefix(b"\xff");
        assert!(list.contains(&layout::list_item_key(b"\xff\xff", 3)));
    }

    #[test]
    fn delete_collections_counts_each_collection_once() {
        let mut state = BTreeMap::new();
        for (key, member) in [("a/1", "x"), ("a/1", "y"), ("a/2", "x"), ("b", "x")] {
            state.insert(
                layout::member_key(CollectionKind::Set, key.as_bytes(), member.as_bytes()),
                Vec::new(),
            );
        }
        state.insert(layout::list_item_key(b"a/1", 7), b"item".to_vec());
        let deleted = delete_collections(&state, &collection_ranges_for_prefix(b"a/")).unwrap();
        assert_eq!(deleted.collections, 3);
        assert_eq!(deleted.writes.len(), 4);
        let deleted = delete_collections(&state, &collection_ranges_for_key(b"b")).unwrap();
        assert_eq!(deleted.collections, 1);
    }

    #[test]
    fn reads_cover_the_member_or_the_collection() {
        let op = CollectionOp::SetContains {
            key: b"s".to_vec(),
            member: b"m".to_vec(),
        };
        let [r] = reads(&op).try_into().unwrap();
        assert!(r.contains(&layout::member_key(CollectionKind::Set, b"s", b"m")));
        assert!(!r.contains(&layout::member_key(CollectionKind::Set, b"s", b"m2")));
        let op = CollectionOp::ListLen { key: b"l".to_vec() };
        assert_eq!(reads(&op), vec![members_range(CollectionKind::List, b"l")]);
    }
}
