//! [`Overlay`]: pending physical writes over a base state, so that the ops of one transaction
//! see each other's writes before anything is committed.

use super::{
    DeletedCollections, DeletedSize, OrderedState, PhysicalRange, PhysicalWrite, apply,
    delete_collections, members_range,
};
use crate::changes::{CollectionChange, CollectionEvent};
use crate::collections::{CollectionKind, CollectionOp, CollectionResult};
use crate::error::Result;
use std::collections::BTreeMap;
use std::ops::Bound;

/// Pending physical writes layered over a base [`OrderedState`].
///
/// Reads through the overlay see the base with the pending writes applied. Nothing reaches the
/// base: the backend commits [`Overlay::into_writes`] in its atomic section once every op of
/// the transaction has succeeded, so a failing op leaves the store unchanged.
///
/// ```
/// use std::collections::BTreeMap;
/// use keyplane_contract::raw::emulation::Overlay;
/// use keyplane_contract::{CollectionOp, CollectionResult};
///
/// let base = BTreeMap::new();
/// let mut txn = Overlay::new(&base);
/// txn.apply(&CollectionOp::ListPush { key: b"q".to_vec(), value: b"a".to_vec() })?;
/// let len = txn.apply(&CollectionOp::ListLen { key: b"q".to_vec() })?;
/// assert_eq!(len, CollectionResult::Count(1));
/// assert_eq!(txn.into_writes().len(), 1);
/// # Ok::<(), keyplane_contract::Error>(())
/// ```
#[derive(Debug)]
pub struct Overlay<'a, S> {
    base: &'a S,
    /// Pending state per physical key: `Some(value)` written, `None` deleted.
    pending: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// The collection changes so far, in op order.
    changes: Vec<CollectionEvent>,
}

impl<'a, S: OrderedState> Overlay<'a, S> {
    /// An overlay with no pending writes.
    pub fn new(base: &'a S) -> Self {
        Overlay {
            base,
            pending: BTreeMap::new(),
            changes: Vec::new(),
        }
    }

    /// Applies a collection op through the overlay and keeps its writes pending.
    ///
    /// # Errors
    /// As [`apply`]; on error nothing is recorded.
    pub fn apply(&mut self, op: &CollectionOp) -> Result<CollectionResult> {
        let applied = apply(op, self)?;
        self.record(applied.writes);
        if let Some(change) = applied.change {
            self.changes.push(CollectionEvent {
                key: op.key().to_vec(),
                kind: op.kind(),
                change,
            });
        }
        Ok(applied.result)
    }

    /// Deletes every collection in `ranges` (see
    /// [`collection_ranges_for_key`](super::collection_ranges_for_key)) and keeps the deletes
    /// pending; returns how many collections were removed.
    ///
    /// # Errors
    /// Read errors of the base.
    pub fn delete_collections(&mut self, ranges: &[PhysicalRange]) -> Result<u64> {
        let DeletedCollections {
            collections,
            removed,
            writes,
        } = delete_collections(self, ranges)?;
        self.record(writes);
        self.changes
            .extend(removed.into_iter().map(|(kind, key)| CollectionEvent {
                key,
                kind,
                change: CollectionChange::Deleted,
            }));
        Ok(collections)
    }

    /// The collection events of the ops applied so far, as a watch reports them (see
    /// [`CollectionEvent`](crate::CollectionEvent)): grouped by collection in the order each was first
    /// changed, each collection's in op order; a collection the ops leave empty reports one
    /// `Deleted` (nothing when it was empty before too); a collection deleted and written
    /// again reports `Deleted` and the writes after it.
    ///
    /// # Errors
    /// Read errors of the base.
    pub fn collection_events(&self) -> crate::Result<Vec<CollectionEvent>> {
        let mut order: Vec<(CollectionKind, &[u8])> = Vec::new();
        let mut groups: BTreeMap<(CollectionKind, &[u8]), Vec<&CollectionEvent>> = BTreeMap::new();
        for event in &self.changes {
            let id = (event.kind, event.key.as_slice());
            let group = groups.entry(id).or_default();
            if group.is_empty() {
                order.push(id);
            }
            if event.change == CollectionChange::Deleted {
                group.clear();
            }
            group.push(event);
        }
        let mut out = Vec::with_capacity(self.changes.len());
        for id in order {
            let group = &groups[&id];
            let range = members_range(id.0, id.1);
            if self.scan(&range.start, &range.end, Some(1))?.is_empty() {
                let existed = !self
                    .base
                    .scan(&range.start, &range.end, Some(1))?
                    .is_empty();
                if existed {
                    out.push(CollectionEvent {
                        key: id.1.to_vec(),
                        kind: id.0,
                        change: CollectionChange::Deleted,
                    });
                }
            } else {
                out.extend(group.iter().map(|e| (*e).clone()));
            }
        }
        Ok(out)
    }

    /// The size at the start of the transaction of each collection that `events` (from
    /// [`Overlay::collection_events`]) report `Deleted`: what a backend that rewinds
    /// listings through its log keeps beside the event. Reads those collections' members in
    /// the base, as many as deleting them did.
    ///
    /// # Errors
    /// Read errors of the base.
    pub fn deleted_sizes(&self, events: &[CollectionEvent]) -> Result<Vec<DeletedSize>> {
        events
            .iter()
            .filter(|e| e.change == CollectionChange::Deleted)
            .map(|e| {
                let range = members_range(e.kind, &e.key);
                Ok(DeletedSize {
                    key: e.key.clone(),
                    kind: e.kind,
                    size: self.base.scan(&range.start, &range.end, None)?.len() as u64,
                })
            })
            .collect()
    }

    /// Records physical writes as pending.
    pub fn record(&mut self, writes: impl IntoIterator<Item = PhysicalWrite>) {
        for write in writes {
            match write {
                PhysicalWrite::Put { key, value } => self.pending.insert(key, Some(value)),
                PhysicalWrite::Delete { key } => self.pending.insert(key, None),
            };
        }
    }

    /// Whether no write is pending.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The pending writes, one per physical key, ascending by key.
    pub fn into_writes(self) -> Vec<PhysicalWrite> {
        self.pending
            .into_iter()
            .map(|(key, value)| match value {
                Some(value) => PhysicalWrite::Put { key, value },
                None => PhysicalWrite::Delete { key },
            })
            .collect()
    }

    fn pending_in(
        &self,
        start: &[u8],
        end: &[u8],
    ) -> impl DoubleEndedIterator<Item = (&Vec<u8>, &Option<Vec<u8>>)> {
        let bounds = if start < end {
            (Bound::Included(start), Bound::Excluded(end))
        } else {
            (Bound::Included(start), Bound::Excluded(start))
        };
        self.pending.range::<[u8], _>(bounds)
    }
}

impl<S: OrderedState> OrderedState for Overlay<'_, S> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.pending.get(key) {
            Some(value) => Ok(value.clone()),
            None => self.base.get(key),
        }
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
        let limit = limit.unwrap_or(usize::MAX);
        // At most this many base entries can be hidden or replaced by pending writes, so
        // reading that many more from the base always fills the page.
        let shadowed = self.pending_in(start, end).count();
        let base = self
            .base
            .scan(start, end, Some(limit.saturating_add(shadowed)))?;
        let mut merged: BTreeMap<Vec<u8>, Vec<u8>> = base.into_iter().collect();
        // The base page may stop early; pending puts past its last key are only valid up to
        // where the base page is known complete.
        let complete_to = if merged.len() < limit.saturating_add(shadowed) {
            None
        } else {
            merged.keys().next_back().cloned()
        };
        for (key, value) in self.pending_in(start, end) {
            if complete_to.as_ref().is_some_and(|last| key > last) {
                break;
            }
            match value {
                Some(value) => merged.insert(key.clone(), value.clone()),
                None => merged.remove(key),
            };
        }
        Ok(merged.into_iter().take(limit).collect())
    }

    fn last(&self, start: &[u8], end: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if start >= end {
            return Ok(None);
        }
        let pending_last = self
            .pending_in(start, end)
            .rev()
            .find_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone())));
        // The base's last entry not deleted by a pending write.
        let mut base_end = end.to_vec();
        let base_last = loop {
            match self.base.last(start, &base_end)? {
                Some((key, _)) if matches!(self.pending.get(&key), Some(None)) => base_end = key,
                other => break other,
            }
        };
        Ok(match (pending_last, base_last) {
            (Some(p), Some(b)) => Some(if p.0 >= b.0 { p } else { b }),
            (p, b) => p.or(b),
        })
    }

    fn count(&self, start: &[u8], end: &[u8]) -> Result<u64> {
        let mut count = self.base.count(start, end)?;
        for (key, value) in self.pending_in(start, end) {
            let in_base = self.base.get(key)?.is_some();
            match (in_base, value.is_some()) {
                (false, true) => count += 1,
                (true, false) => count -= 1,
                _ => {}
            }
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    fn base() -> BTreeMap<Vec<u8>, Vec<u8>> {
        (0..10u8).map(|i| (vec![b'k', b'0' + i], vec![i])).collect()
    }

    #[test]
    fn scan_merges_pending_writes_and_fills_pages() {
        let base = base();
        let mut overlay = Overlay::new(&base);
        overlay.record([
            PhysicalWrite::Delete { key: k("k0") },
            PhysicalWrite::Delete { key: k("k1") },
            PhysicalWrite::Put {
                key: k("k15"),
                value: k("new"),
            },
            PhysicalWrite::Put {
                key: k("k99"),
                value: k("late"),
            },
        ]);
        let page = overlay.scan(b"k", b"l", Some(3)).unwrap();
        let keys: Vec<_> = page.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(keys, vec![k("k15"), k("k2"), k("k3")]);
        let all = overlay.scan(b"k", b"l", None).unwrap();
        assert_eq!(all.len(), 10);
        assert_eq!(all.last().unwrap().0, k("k99"));
        assert_eq!(overlay.count(b"k", b"l").unwrap(), 10);
        assert_eq!(overlay.last(b"k", b"k99").unwrap().unwrap().0, k("k9"));
        assert_eq!(overlay.last(b"k", b"l").unwrap().unwrap().0, k("k99"));
        assert_eq!(overlay.get(b"k0").unwrap(), None);
    }

    #[test]
    fn last_skips_pending_deletes() {
        let base = base();
        let mut overlay = Overlay::new(&base);
        overlay.record([
            PhysicalWrite::Delete { key: k("k9") },
            PhysicalWrite::Delete { key: k("k8") },
        ]);
        assert_eq!(overlay.last(b"k", b"l").unwrap().unwrap().0, k("k7"));
    }

    #[test]
    fn ops_in_one_transaction_see_each_other() {
        let base = BTreeMap::new();
        let mut txn = Overlay::new(&base);
        for v in ["a", "b", "c"] {
            txn.apply(&CollectionOp::ListPush {
                key: k("q"),
                value: k(v),
            })
            .unwrap();
        }
        let rotated = txn
            .apply(&CollectionOp::ListRotate { key: k("q") })
            .unwrap();
        assert_eq!(rotated, CollectionResult::Value(Some(k("a"))));
        let items = txn
            .apply(&CollectionOp::ListRange {
                key: k("q"),
                start: 0,
                stop: -1,
            })
            .unwrap();
        assert_eq!(items, CollectionResult::Items(vec![k("b"), k("c"), k("a")]));
        let removed = txn
            .delete_collections(&super::super::collection_ranges_for_key(b"q"))
            .unwrap();
        assert_eq!(removed, 1);
        let len = txn.apply(&CollectionOp::ListLen { key: k("q") }).unwrap();
        assert_eq!(len, CollectionResult::Count(0));
        // Every write was to a key absent from the base and is now a delete.
        assert!(
            txn.into_writes()
                .iter()
                .all(|w| matches!(w, PhysicalWrite::Delete { .. }))
        );
    }
}
