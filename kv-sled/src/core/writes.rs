//! The vocabulary of the write path: the writer's own state, the writes of one sled
//! transaction, what a writer section leaves to do, and the data tree as the emulation's
//! ordered state.

use super::codec::LeaseRecord;
use crate::error::map_error;
use keyplane_core::raw::emulation::{DeletedSize, OrderedState, PhysicalWrite};
use keyplane_core::{Event, Result};
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
