//! The state the writer thread, the readers and the watches share, the writer's own state,
//! and the writes of one revision.

use super::codec::LeaseRecord;
use crate::config::RedbConfig;
use crate::error::RedbResult;
use keyplane_contract::raw::emulation::{DeletedSize, PhysicalWrite};
use keyplane_contract::{Capabilities, Event, Result};
use redb::ReadableDatabase;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// What the writer thread, the readers and the watches share.
pub(crate) struct Shared {
    pub(crate) db: redb::Database,
    pub(crate) config: RedbConfig,
    pub(crate) caps: Capabilities,
    /// The latest committed revision.
    pub(crate) revision: AtomicI64,
    /// The oldest revision kept by explicit compaction (retention may keep fewer).
    pub(crate) compact_floor: AtomicI64,
    /// The latest committed revision, for watchers to wait on.
    pub(crate) published: watch::Sender<i64>,
    /// Write transactions committed, for the tests of the group commit.
    #[cfg(test)]
    pub(crate) commits: std::sync::atomic::AtomicU64,
    /// How long the writer thread holds the writer state each time it looks at its flush
    /// deadline, in µs: the tests widen that moment to catch callers that find it held.
    #[cfg(test)]
    pub(crate) deadline_hold_us: std::sync::atomic::AtomicU64,
}

impl Shared {
    pub(crate) fn revision(&self) -> i64 {
        self.revision.load(Ordering::Acquire)
    }

    /// The oldest revision whose history is retained.
    pub(crate) fn oldest(&self) -> i64 {
        oldest(
            self.revision(),
            self.compact_floor.load(Ordering::Acquire),
            self.config.history_retention,
        )
    }

    /// A read transaction: a snapshot of one committed state.
    pub(crate) fn read(&self, op: &'static str) -> Result<redb::ReadTransaction> {
        self.db.begin_read().redb(op)
    }

    /// Tells watchers that `revision` is committed.
    pub(crate) fn publish(&self, revision: i64) {
        self.published.send_if_modified(|current| {
            let newer = revision > *current;
            if newer {
                *current = revision;
            }
            newer
        });
    }
}

/// The oldest revision retained at `revision`, with an explicit compaction at `floor`.
pub(crate) fn oldest(revision: i64, floor: i64, retention: u64) -> i64 {
    let by_retention = revision + 1 - i64::try_from(retention).unwrap_or(i64::MAX);
    floor.max(by_retention).max(1)
}

/// The live leases, by id and by deadline.
#[derive(Debug, Default, Clone)]
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
}

/// State only the writer thread touches, recovered from the tables at open (and again after
/// a write transaction fails to commit).
#[derive(Debug, Default)]
pub(crate) struct Writer {
    pub(crate) leases: LeaseIndex,
    /// The last lease id granted.
    pub(crate) lease_seq: i64,
    /// The revision of the writes so far, committed or in the open transaction.
    pub(crate) revision: i64,
    /// The explicit compaction point, committed or in the open transaction.
    pub(crate) compact_floor: i64,
    /// The log holds no record below it.
    pub(crate) log_floor: i64,
}

/// The writes of one revision (or of a write that changes no key: a lease's record, say).
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// `kv` writes (user entries encoded, collection members raw).
    pub(crate) kv: Vec<PhysicalWrite>,
    /// Lease records: `Some` inserts, `None` removes.
    pub(crate) leases: BTreeMap<i64, Option<LeaseRecord>>,
    /// `lease_keys` entries ([`attachment_key`]): `true` inserts, `false` removes.
    pub(crate) attach: BTreeMap<Vec<u8>, bool>,
    /// Meta counters written.
    pub(crate) meta: Vec<(&'static str, i64)>,
    /// `Some` when the write changes keys: it gets the next revision and this log record.
    pub(crate) events: Option<Vec<Event>>,
    /// The sizes of the collections the write deletes, logged with its events.
    pub(crate) deleted: Vec<DeletedSize>,
}

/// The lease clock: Unix time in milliseconds.
pub(crate) fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}
