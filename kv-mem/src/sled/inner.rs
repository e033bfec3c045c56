//! The shared state of an open store and the one path every write takes: under the writer
//! mutex, one sled transaction over the four trees; then the flush the durability asks for;
//! then publication to watchers.

use super::codec::{LeaseRecord, be, encode_events};
use super::config::{Durability, SledConfig};
use super::error::{map_sled, map_txn};
use kv_core::raw::emulation::{DeletedSize, PhysicalWrite};
use kv_core::{Capabilities, Event, Result};
use sled::Tree;
use sled::transaction::{TransactionResult, Transactional};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use tokio::sync::{Notify, watch};

/// Log records below the retained history are removed in batches of at least this many.
const PRUNE_BATCH: i64 = 256;

/// The four trees of the layout (see [`codec`](super::codec)).
pub(crate) struct Trees {
    pub(crate) data: Tree,
    pub(crate) meta: Tree,
    pub(crate) log: Tree,
    pub(crate) leases: Tree,
}

/// The live leases, by id and by deadline.
#[derive(Debug, Default)]
pub(crate) struct LeaseIndex {
    records: HashMap<i64, LeaseRecord>,
    by_deadline: BTreeSet<(i64, i64)>,
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
    /// The first revision still physically in the log tree.
    pub(crate) log_floor: i64,
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

/// What the writes of one writer-mutex section need afterwards.
#[derive(Debug, Default)]
pub(crate) struct Commits {
    /// Something was committed (it must be flushed under `FlushOnCommit`).
    wrote: bool,
    /// The newest revision committed, to publish to watchers once durable.
    revision: Option<i64>,
}

/// An open store.
pub(crate) struct Inner {
    pub(crate) config: SledConfig,
    pub(crate) caps: Capabilities,
    pub(crate) db: sled::Db,
    pub(crate) trees: Trees,
    pub(crate) writer: Mutex<Writer>,
    /// Range reads hold it shared, commits exclusively, so a page never shows half a
    /// transaction (sled's own iteration is not isolated from transactions).
    pub(crate) gate: RwLock<()>,
    /// The latest committed revision.
    pub(crate) revision: AtomicI64,
    /// The oldest revision kept by explicit compaction (retention may keep fewer).
    pub(crate) compact_floor: AtomicI64,
    /// The latest revision watchers may see: committed and, under `FlushOnCommit`, durable.
    pub(crate) published: watch::Sender<i64>,
    /// Wakes the lease expiry task (a lease was granted or renewed, or the store closed).
    pub(crate) expiry_wake: Arc<Notify>,
    /// Released after the database is dropped.
    pub(crate) _claim: super::open::PathClaim,
    /// The directory of a [`SledStore::temporary`](super::SledStore::temporary) store,
    /// removed last.
    pub(crate) _temp_dir: Option<tempfile::TempDir>,
}

/// A committed revision not yet published. When the writing future is dropped while it
/// flushes, the flush completes here, blocking, and the revision is published: watchers never
/// stall on a cancelled write.
struct Unpublished<'a> {
    inner: &'a Inner,
    revision: Option<i64>,
}

impl Drop for Unpublished<'_> {
    fn drop(&mut self) {
        if let Some(rev) = self.revision.take() {
            if self.inner.config.durability == Durability::FlushOnCommit
                && let Err(err) = self.inner.db.flush()
            {
                tracing::warn!(error = %err, "sled store: flushing a cancelled write failed");
            }
            self.inner.publish(Some(rev));
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.expiry_wake.notify_one();
    }
}

impl Inner {
    pub(crate) fn revision(&self) -> i64 {
        self.revision.load(Ordering::Acquire)
    }

    /// The oldest revision whose history is retained.
    pub(crate) fn oldest(&self) -> i64 {
        let by_retention = self.revision() + 1 - self.config.history_retention as i64;
        self.compact_floor
            .load(Ordering::Acquire)
            .max(by_retention)
            .max(1)
    }

    pub(crate) fn lock_writer(&self) -> MutexGuard<'_, Writer> {
        // A panic while holding the lock happens before a commit or after the in-memory
        // update that follows it; the persisted state is consistent either way.
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` under the writer mutex, after expiring due leases, and returns its result
    /// once its commits are flushed (per the durability) and published.
    pub(crate) async fn write<T>(
        &self,
        f: impl FnOnce(&Inner, &mut Writer, &mut Commits) -> Result<T>,
    ) -> Result<T> {
        let (out, commits) = self.write_locked(f);
        self.finish(commits).await?;
        out
    }

    /// [`Inner::write`] for the synchronous open path.
    pub(crate) fn write_blocking<T>(
        &self,
        f: impl FnOnce(&Inner, &mut Writer, &mut Commits) -> Result<T>,
    ) -> Result<T> {
        let (out, commits) = self.write_locked(f);
        if commits.wrote && self.config.durability == Durability::FlushOnCommit {
            self.db.flush().map_err(map_sled)?;
        }
        self.publish(commits.revision);
        out
    }

    fn write_locked<T>(
        &self,
        f: impl FnOnce(&Inner, &mut Writer, &mut Commits) -> Result<T>,
    ) -> (Result<T>, Commits) {
        let mut commits = Commits::default();
        let mut w = self.lock_writer();
        let out = super::lease::expire_due(self, &mut w, &mut commits)
            .and_then(|()| f(self, &mut w, &mut commits));
        (out, commits)
    }

    async fn finish(&self, commits: Commits) -> Result<()> {
        let mut pending = Unpublished {
            inner: self,
            revision: commits.revision,
        };
        let flushed = if commits.wrote && self.config.durability == Durability::FlushOnCommit {
            // Flushing outside the writer mutex lets concurrent writers share one fsync.
            self.flush().await
        } else {
            Ok(())
        };
        // Published even when the flush failed: the revision is committed and readable, and
        // holding it back would stall every watch.
        self.publish(pending.revision.take());
        flushed
    }

    /// Flushes every write to disk on a blocking thread.
    ///
    /// Not `sled::Tree::flush_async`: it runs the flush on sled's own I/O pool, where a flush
    /// holds sled's global concurrency-control read lock while it waits for I/O that the same
    /// pool performs; with a transaction queued for the write lock, concurrent flushes can
    /// occupy the pool and deadlock it.
    pub(crate) async fn flush(&self) -> Result<()> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || db.flush())
            .await
            .map_err(|e| {
                kv_core::Error::new(kv_core::ErrorKind::Backend, "sled: the flush task failed")
                    .with_source(e)
            })?
            .map(drop)
            .map_err(map_sled)
    }

    fn publish(&self, revision: Option<i64>) {
        if let Some(rev) = revision {
            self.published.send_if_modified(|current| {
                let newer = rev > *current;
                if newer {
                    *current = rev;
                }
                newer
            });
        }
    }

    /// Commits `plan` as one sled transaction over the four trees; returns the revision
    /// after it (the next revision when `plan.events` is `Some`).
    pub(crate) fn commit(&self, w: &mut Writer, plan: Plan, commits: &mut Commits) -> Result<i64> {
        let current = self.revision();
        let rev = if plan.events.is_some() {
            current + 1
        } else {
            current
        };
        let record = plan
            .events
            .as_deref()
            .map(|events| encode_events(events, &plan.deleted));
        let t = &self.trees;
        {
            let _gate = self.gate.write().unwrap_or_else(PoisonError::into_inner);
            let res: TransactionResult<()> =
                (&t.data, &t.meta, &t.log, &t.leases).transaction(|(data, meta, log, leases)| {
                    for write in &plan.data {
                        match write {
                            PhysicalWrite::Put { key, value } => {
                                data.insert(key.as_slice(), value.as_slice())?;
                            }
                            PhysicalWrite::Delete { key } => {
                                data.remove(key.as_slice())?;
                            }
                        }
                    }
                    for (key, value) in &plan.leases {
                        match value {
                            Some(value) => leases.insert(key.as_slice(), value.as_slice())?,
                            None => leases.remove(key.as_slice())?,
                        };
                    }
                    for (key, value) in &plan.meta {
                        meta.insert(*key, value.as_slice())?;
                    }
                    if let Some(record) = &record {
                        log.insert(&be(rev), record.as_slice())?;
                    }
                    Ok(())
                });
            res.map_err(map_txn)?;
            self.revision.store(rev, Ordering::Release);
        }
        commits.wrote = true;
        if plan.events.is_some() {
            commits.revision = Some(rev);
            self.prune(w, PRUNE_BATCH)?;
        }
        Ok(rev)
    }

    /// Removes log records below the retained history once at least `batch` of them
    /// accumulate. They are already invisible; removing them is not part of any transaction.
    pub(crate) fn prune(&self, w: &mut Writer, batch: i64) -> Result<()> {
        let oldest = self.oldest();
        while oldest - w.log_floor >= batch.max(1) {
            let to = oldest.min(w.log_floor + 4096);
            let mut remove = sled::Batch::default();
            for rev in w.log_floor..to {
                remove.remove(&be(rev));
            }
            self.trees.log.apply_batch(remove).map_err(map_sled)?;
            w.log_floor = to;
        }
        Ok(())
    }
}
