//! The vocabulary of the write path: the writer's own state, the writes of one sled
//! transaction, what a writer section leaves to do, and the data tree as the emulation's
//! ordered state (as a group plans against it, with the span of its keys read ahead).

use super::codec::LeaseRecord;
use crate::error::map_error;
use keyplane_contract::raw::emulation::{DeletedSize, OrderedState, PhysicalWrite};
use keyplane_contract::{Event, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The live leases, by id and by deadline.
#[derive(Debug, Default)]
pub(crate) struct LeaseIndex {
    pub(crate) records: HashMap<i64, LeaseRecord>,
    pub(crate) by_deadline: BTreeSet<(i64, i64)>,
}

impl LeaseIndex {
    pub(crate) fn get(&self, id: i64) -> Option<LeaseRecord> {
        self.records.get(&id).copied()
    }

    pub(crate) fn insert(&mut self, id: i64, record: LeaseRecord) {
        if let Some(old) = self.records.insert(id, record) {
            self.by_deadline.remove(&(old.deadline_ms, id));
        }
        self.by_deadline.insert((record.deadline_ms, id));
    }

    pub(crate) fn remove(&mut self, id: i64) {
        if let Some(old) = self.records.remove(&id) {
            self.by_deadline.remove(&(old.deadline_ms, id));
        }
    }

    /// Leases whose deadline is at or before `now_ms`, earliest first.
    pub(crate) fn due(&self, now_ms: i64) -> Vec<i64> {
        self.by_deadline
            .iter()
            .take_while(|(deadline, _)| *deadline <= now_ms)
            .map(|&(_, id)| id)
            .collect()
    }

    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.by_deadline.first().map(|&(deadline, _)| deadline)
    }

    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }
}

/// State only writers touch, behind the writer mutex.
pub(crate) struct Writer {
    pub(crate) leases: LeaseIndex,
    /// The last lease id granted.
    pub(crate) lease_seq: i64,
    /// The room taken for the section's first sled write ([`Room`](super::behind::Room)).
    pub(crate) room: Option<super::behind::Room>,
}

/// The writes of one sled transaction.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Data tree writes (user entries encoded, collection members raw).
    pub(crate) data: Vec<PhysicalWrite>,
    /// Leases tree writes: `Some` inserts, `None` removes.
    pub(crate) leases: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Meta tree inserts.
    pub(crate) meta: Vec<(&'static [u8], Vec<u8>)>,
    /// `Some` when the transaction changes keys: it gets the next revision and this log record.
    pub(crate) events: Option<Vec<Event>>,
    /// The sizes of the collections the transaction deletes, logged with its events.
    pub(crate) deleted: Vec<DeletedSize>,
}

/// The writes of one sled transaction: one [`Plan`], or a group's plans merged in order.
#[derive(Debug, Default)]
pub(crate) struct Writes {
    /// Data tree writes, at most one per key.
    pub(crate) data: Vec<PhysicalWrite>,
    /// Leases tree writes: `Some` inserts, `None` removes.
    pub(crate) leases: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Meta tree inserts.
    pub(crate) meta: Vec<(&'static [u8], Vec<u8>)>,
    /// The log records of the revisions it commits, each under its last revision, ascending
    /// from the one that holds the next revision.
    pub(crate) log: Vec<(i64, Vec<u8>)>,
}

impl Writes {
    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
            && self.leases.is_empty()
            && self.meta.is_empty()
            && self.log.is_empty()
    }
}

/// What the writes of one writer-mutex section need afterwards.
#[derive(Debug, Default)]
pub(crate) struct Commits {
    /// Something was committed (it must be flushed under `FlushOnCommit`).
    pub(crate) wrote: bool,
    /// The newest revision committed, to publish to watchers once durable.
    pub(crate) revision: Option<i64>,
    /// The section is counted in [`Core::unflushed`](super::Core::unflushed) (from before its first commit).
    pub(crate) counted: bool,
}

/// The data tree as the emulation's [`OrderedState`].
pub(crate) struct TreeState<'a>(pub(crate) &'a sled::Tree);

impl OrderedState for TreeState<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .0
            .get(key)
            .map_err(|e| map_error("read", e))?
            .map(|v| v.to_vec()))
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
        self.0
            .range::<&[u8], _>(start..end)
            .take(limit.unwrap_or(usize::MAX))
            .map(|kv| {
                kv.map(|(k, v)| (k.to_vec(), v.to_vec()))
                    .map_err(|e| map_error("read", e))
            })
            .collect()
    }

    fn last(&self, start: &[u8], end: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if start >= end {
            return Ok(None);
        }
        self.0
            .range::<&[u8], _>(start..end)
            .next_back()
            .transpose()
            .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .map_err(|e| map_error("read", e))
    }
}

/// A group's writes to this many keys or more are read ahead (see [`GroupBase`]).
const READ_AHEAD_MIN: usize = 64;

/// The data tree as a group plans against it: [`TreeState`], with the records in the span
/// of the keys the group writes read ahead in one scan, when it writes many keys
/// ([`READ_AHEAD_MIN`]) and few other keys lie between them. A bulk write then costs one
/// pass over its span instead of one descent of the tree per key. Planning holds the writer
/// mutex, so the tree does not change under the records read ahead.
pub(crate) struct GroupBase<'a> {
    tree: TreeState<'a>,
    ahead: Option<ReadAhead>,
}

/// A span read ahead (both bounds included) and every record in it.
type ReadAhead = (Vec<u8>, Vec<u8>, BTreeMap<Vec<u8>, Vec<u8>>);

impl<'a> GroupBase<'a> {
    /// The data tree for a group that writes `keys`.
    pub(crate) fn new<'k>(
        tree: &'a sled::Tree,
        keys: impl Iterator<Item = &'k [u8]>,
    ) -> Result<Self> {
        let mut base = GroupBase {
            tree: TreeState(tree),
            ahead: None,
        };
        let mut count = 0usize;
        let mut span: Option<(&[u8], &[u8])> = None;
        for key in keys {
            count += 1;
            span = Some(match span {
                None => (key, key),
                Some((lo, hi)) => (lo.min(key), hi.max(key)),
            });
        }
        let Some((lo, hi)) = span.filter(|_| count >= READ_AHEAD_MIN) else {
            return Ok(base);
        };
        // Past this many records the span holds mostly other keys: a descent per key is
        // then cheaper than the pass.
        let most = 2 * count + READ_AHEAD_MIN;
        let mut records = BTreeMap::new();
        for kv in tree.range::<&[u8], _>(lo..=hi) {
            let (k, v) = kv.map_err(|e| map_error("read", e))?;
            if records.len() == most {
                return Ok(base);
            }
            records.insert(k.to_vec(), v.to_vec());
        }
        base.ahead = Some((lo.to_vec(), hi.to_vec(), records));
        Ok(base)
    }
}

impl OrderedState for GroupBase<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match &self.ahead {
            Some((lo, hi, records)) if lo.as_slice() <= key && key <= hi.as_slice() => {
                Ok(records.get(key).cloned())
            }
            _ => self.tree.get(key),
        }
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: Option<usize>,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.tree.scan(start, end, limit)
    }

    fn last(&self, start: &[u8], end: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.tree.last(start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(keys: impl IntoIterator<Item = String>) -> (sled::Db, sled::Tree) {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("data").unwrap();
        for key in keys {
            tree.insert(key.as_bytes(), key.as_bytes()).unwrap();
        }
        (db, tree)
    }

    fn written(keys: &[String]) -> impl Iterator<Item = &[u8]> {
        keys.iter().map(|k| k.as_bytes())
    }

    #[test]
    fn a_dense_span_is_read_ahead_and_answers_like_the_tree() {
        // Every other key of the span exists.
        let (_db, data) = tree((0..200).step_by(2).map(|i| format!("k/{i:03}")));
        let keys: Vec<String> = (0..200).map(|i| format!("k/{i:03}")).collect();
        let base = GroupBase::new(&data, written(&keys)).unwrap();
        let (lo, hi, records) = base.ahead.as_ref().expect("read ahead");
        assert_eq!(
            (lo.as_slice(), hi.as_slice()),
            (&b"k/000"[..], &b"k/199"[..])
        );
        assert_eq!(records.len(), 100);
        let plain = TreeState(&data);
        for key in keys
            .iter()
            .map(String::as_str)
            .chain(["k/", "k/200", "j", "l"])
        {
            assert_eq!(
                base.get(key.as_bytes()).unwrap(),
                plain.get(key.as_bytes()).unwrap(),
                "{key}"
            );
        }
        assert_eq!(
            base.scan(b"k/", b"k/010", None).unwrap(),
            plain.scan(b"k/", b"k/010", None).unwrap()
        );
    }

    #[test]
    fn a_span_mostly_of_other_keys_or_few_writes_is_not_read_ahead() {
        let (_db, data) = tree((0..10_000).map(|i| format!("k/{i:05}")));
        // 64 writes spread over 10,000 keys.
        let spread: Vec<String> = (0..64).map(|i| format!("k/{:05}", i * 150)).collect();
        let base = GroupBase::new(&data, written(&spread)).unwrap();
        assert!(base.ahead.is_none());
        assert_eq!(base.get(b"k/00150").unwrap(), Some(b"k/00150".to_vec()));
        assert_eq!(base.get(b"k/00151x").unwrap(), None);
        let few: Vec<String> = (0..READ_AHEAD_MIN - 1)
            .map(|i| format!("k/{i:05}"))
            .collect();
        assert!(
            GroupBase::new(&data, written(&few))
                .unwrap()
                .ahead
                .is_none()
        );
    }
}
