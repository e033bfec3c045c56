//! The shared state of an open store and the machinery every operation uses: opening a
//! database directory ([`open`]: sled's lock, the layout version, the state recovered from
//! the trees; [`claim`]: the directories open in this process); the path every write takes
//! (room for its write among the process's unflushed sled writes, see [`behind`]; then,
//! under the writer mutex, one sled transaction over the four trees, then the flush the
//! durability asks for, then publication to watchers), which first expires the leases that
//! are due, and after it removes log records past the retained history. Transactions take
//! that path in groups ([`group`], with their [`queue`]). The writer's state, the writes of
//! one transaction and the data tree as the emulation's ordered state are the vocabulary of
//! `writes`; the layout of the trees and the encoding of their records are in [`codec`].

pub(crate) mod behind;
pub(crate) mod claim;
pub(crate) mod codec;
pub(crate) mod group;
pub(crate) mod open;
pub(crate) mod queue;
mod writes;

pub(crate) use writes::{Commits, LeaseIndex, Plan, TreeState, Writer, Writes};

use crate::config::{Durability, SledConfig};
use crate::core::codec::{
    attachment_key, attachments_prefix, be, decode_entry, encode_events, lease_key,
};
use crate::error::{map_error, map_txn};
use behind::Room;
use keyplane_contract::raw::emulation::PhysicalWrite;
use keyplane_contract::{Capabilities, Event, LeaseId, Result};
use sled::Tree;
use sled::transaction::{TransactionResult, Transactional};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{Notify, watch};

/// Log records below the retained history are removed in batches of at least this many.
const PRUNE_BATCH: i64 = 256;
/// Most log records one pruning batch removes.
const PRUNE_STEP: i64 = 4096;

/// The four trees of the layout (see [`codec`]).
pub(crate) struct Trees {
    pub(crate) data: Tree,
    pub(crate) meta: Tree,
    pub(crate) log: Tree,
    pub(crate) leases: Tree,
}

/// An open store.
pub(crate) struct Core {
    /// The flushing thread of a buffered store. Declared first: it is joined (and its copy
    /// of the database handle dropped) before the database closes and the claim goes.
    pub(crate) _flusher: Option<behind::Flusher>,
    /// The store's sled writes that no finished flush covers yet.
    pub(crate) backlog: Arc<behind::Backlog>,
    pub(crate) config: SledConfig,
    pub(crate) caps: Capabilities,
    pub(crate) db: sled::Db,
    pub(crate) trees: Trees,
    pub(crate) writer: Mutex<Writer>,
    /// The transactions waiting for a group commit.
    pub(crate) group: Arc<queue::Queue>,
    /// Range reads hold it shared, commits exclusively, so a page never shows half a
    /// transaction (sled's own iteration is not isolated from transactions).
    pub(crate) gate: RwLock<()>,
    /// The latest committed revision.
    pub(crate) revision: AtomicI64,
    /// The oldest revision kept by explicit compaction (retention may keep fewer).
    pub(crate) compact_floor: AtomicI64,
    /// The latest revision watchers may see: committed and, under `FlushOnCommit`, durable.
    pub(crate) published: watch::Sender<i64>,
    /// Writer sections whose commits may not be on disk yet (counted from before their first
    /// sled transaction until after their flush): under `FlushOnCommit`, a read that may
    /// have seen one flushes before answering (see [`Core::settle`]).
    pub(crate) unflushed: AtomicUsize,
    /// Wakes the lease expiry task (a lease was granted or renewed, or the store closed).
    pub(crate) expiry_wake: Arc<Notify>,
    /// The log holds no record that ends below it (the first record may begin below it).
    pub(crate) log_floor: AtomicI64,
    /// Held while log records are removed.
    pub(crate) pruning: Mutex<()>,
    /// Released after the database is dropped.
    pub(crate) _claim: claim::PathClaim,
    /// The directory of a [`SledStore::temporary`](crate::SledStore::temporary) store,
    /// removed last.
    pub(crate) _temp_dir: Option<tempfile::TempDir>,
}

/// One writer section counted in [`Core::unflushed`] until dropped (after its flush).
struct Unflushed<'a>(&'a Core);

impl Drop for Unflushed<'_> {
    fn drop(&mut self) {
        self.0.unflushed.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        self.expiry_wake.notify_one();
    }
}

impl Core {
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
    /// once its commits are flushed (per the durability) and published: the path of the
    /// writes that are not transactions (leases, compaction). Transactions are committed in
    /// groups ([`group`]), serialized with these sections by the same mutex.
    pub(crate) async fn write<T>(
        &self,
        f: impl FnOnce(&Core, &mut Writer, &mut Commits) -> Result<T>,
    ) -> Result<T> {
        let (out, wrote) = self.write_unsettled(f).await?;
        if !wrote {
            // What the section read (compares, reads) may be another writer's commit that is
            // not on disk yet.
            self.settle().await?;
        }
        out
    }

    /// [`Core::write`] for a section whose result no caller reads (the lease expiry task):
    /// it does not wait for other writers' flushes. Also says whether it wrote.
    pub(crate) async fn write_unsettled<T>(
        &self,
        f: impl FnOnce(&Core, &mut Writer, &mut Commits) -> Result<T>,
    ) -> Result<(Result<T>, bool)> {
        let room = Room::take().await;
        let (out, commits) = self.write_locked(Some(room), f);
        let wrote = commits.wrote;
        self.finish(commits).await?;
        Ok((out, wrote))
    }

    /// Makes durable every write a read may have seen, before the read answers: under
    /// `FlushOnCommit`, when some writer section is between its commit and the end of its
    /// flush, the read flushes too (sled's flush writes out every commit made before it), so
    /// nothing a read returns can be lost by a crash. Otherwise free.
    pub(crate) async fn settle(&self) -> Result<()> {
        if self.config.durability == Durability::FlushOnCommit
            && self.unflushed.load(Ordering::SeqCst) > 0
        {
            self.flush().await
        } else {
            Ok(())
        }
    }

    /// [`Core::write`] for the synchronous open path.
    pub(crate) fn write_blocking<T>(
        &self,
        f: impl FnOnce(&Core, &mut Writer, &mut Commits) -> Result<T>,
    ) -> Result<T> {
        let (out, commits) = self.write_locked(None, f);
        let _unflushed = commits.counted.then(|| Unflushed(self));
        if commits.wrote && self.config.durability == Durability::FlushOnCommit {
            self.flush_blocking()?;
        }
        self.publish(commits.revision);
        out
    }

    fn write_locked<T>(
        &self,
        room: Option<Room>,
        f: impl FnOnce(&Core, &mut Writer, &mut Commits) -> Result<T>,
    ) -> (Result<T>, Commits) {
        let mut commits = Commits::default();
        let mut w = self.lock_writer();
        w.room = room;
        let out =
            expire_due(self, &mut w, &mut commits).and_then(|()| f(self, &mut w, &mut commits));
        // Room the section did not use goes back.
        w.room = None;
        (out, commits)
    }

    /// Flushes every write to disk on a blocking thread.
    ///
    /// Not `sled::Tree::flush_async`: it runs the flush on sled's own I/O pool, where a flush
    /// holds sled's global concurrency-control read lock while it waits for I/O that the same
    /// pool performs; with a transaction queued for the write lock, concurrent flushes can
    /// occupy the pool and deadlock it.
    pub(crate) async fn flush(&self) -> Result<()> {
        let (db, backlog) = (self.db.clone(), self.backlog.clone());
        // Counted on the blocking thread, so also when this future is dropped.
        tokio::task::spawn_blocking(move || backlog.flush(&db))
            .await
            .map_err(|e| {
                keyplane_contract::Error::new(
                    keyplane_contract::ErrorKind::Backend,
                    "sled: the flush task failed",
                )
                .with_source(e)
            })?
            .map_err(|e| map_error("flush", e))
    }

    /// [`Core::flush`] on the calling thread.
    pub(crate) fn flush_blocking(&self) -> Result<()> {
        self.backlog
            .flush(&self.db)
            .map_err(|e| map_error("flush", e))
    }

    pub(crate) fn publish(&self, revision: Option<i64>) {
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
        let log = match &plan.events {
            Some(events) => vec![(current + 1, encode_events(events, &plan.deleted))],
            None => Vec::new(),
        };
        let writes = Writes {
            data: plan.data,
            leases: plan.leases,
            meta: plan.meta,
            log,
        };
        self.apply(w, writes, commits)?;
        Ok(self.revision())
    }

    /// Applies `writes` as one sled transaction over the four trees and moves the revision
    /// to its last log record. The writer mutex is held (`w`); the transaction takes the
    /// room the section took for it, if any.
    fn apply(&self, w: &mut Writer, writes: Writes, commits: &mut Commits) -> Result<()> {
        if !commits.counted {
            // Counted before the commit can become visible to a reader.
            self.unflushed.fetch_add(1, Ordering::SeqCst);
            commits.counted = true;
        }
        if w.room.is_none() && self.backlog.unflushed() > 0 {
            // A write after the first of its section (leases that expire together, say)
            // has no room of its own: it waits for the disk first, so that a section of
            // many writes does not run ahead of it (see `behind`).
            self.flush_blocking()?;
        }
        let t = &self.trees;
        {
            let _gate = self.gate.write().unwrap_or_else(PoisonError::into_inner);
            let res: TransactionResult<()> =
                (&t.data, &t.meta, &t.log, &t.leases).transaction(|(data, meta, log, leases)| {
                    for write in &writes.data {
                        match write {
                            PhysicalWrite::Put { key, value } => {
                                data.insert(key.as_slice(), value.as_slice())?;
                            }
                            PhysicalWrite::Delete { key } => {
                                data.remove(key.as_slice())?;
                            }
                        }
                    }
                    for (key, value) in &writes.leases {
                        match value {
                            Some(value) => leases.insert(key.as_slice(), value.as_slice())?,
                            None => leases.remove(key.as_slice())?,
                        };
                    }
                    for (key, value) in &writes.meta {
                        meta.insert(*key, value.as_slice())?;
                    }
                    for (rev, record) in &writes.log {
                        log.insert(&be(*rev), record.as_slice())?;
                    }
                    Ok(())
                });
            res.map_err(|e| map_txn("txn", e))?;
            self.backlog.committed(w.room.take());
            if let Some(&(rev, _)) = writes.log.last() {
                self.revision.store(rev, Ordering::Release);
            }
        }
        commits.wrote = true;
        if let Some(&(rev, _)) = writes.log.last() {
            commits.revision = Some(rev);
            self.prune(PRUNE_BATCH)?;
        }
        Ok(())
    }

    /// Removes the log records that end below the retained history once at least `batch`
    /// revisions accumulate there, in batches of at most [`PRUNE_STEP`] revisions. They are
    /// already invisible; removing them is not part of any transaction. A record that ends
    /// inside the retained history stays whole. Called by writers (under the writer mutex,
    /// after their commit) and by compaction.
    pub(crate) fn prune(&self, batch: i64) -> Result<()> {
        let _pruning = self.pruning.lock().unwrap_or_else(PoisonError::into_inner);
        let oldest = self.oldest();
        let mut floor = self.log_floor.load(Ordering::Acquire);
        let mut first = true;
        while oldest - floor >= batch.max(1) {
            if !std::mem::take(&mut first) {
                // Batches wait for the disk between them, or a long compaction would run
                // ahead of it (see `behind`).
                self.flush_blocking()?;
            }
            let to = oldest.min(floor + PRUNE_STEP);
            let mut remove = sled::Batch::default();
            // Records are keyed by their last revision: these end below `to`.
            for key in self.trees.log.range(be(floor)..be(to)).keys() {
                remove.remove(key.map_err(|e| map_error("prune_history", e))?);
            }
            self.trees
                .log
                .apply_batch(remove)
                .map_err(|e| map_error("prune_history", e))?;
            self.backlog.committed(None);
            floor = to;
            self.log_floor.store(floor, Ordering::Release);
        }
        Ok(())
    }
}

/// The lease clock: Unix time in milliseconds.
pub(crate) fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

pub(crate) fn attached_keys(inner: &Core, id: i64) -> Result<Vec<Vec<u8>>> {
    let prefix = attachments_prefix(id);
    inner
        .trees
        .leases
        .scan_prefix(&prefix)
        .map(|kv| {
            kv.map(|(k, _)| k[prefix.len()..].to_vec())
                .map_err(|e| map_error("lease_keys", e))
        })
        .collect()
}

/// Removes a lease and deletes its keys, in one revision when it has keys.
pub(crate) fn remove(inner: &Core, w: &mut Writer, commits: &mut Commits, id: i64) -> Result<()> {
    let mut plan = Plan::default();
    let mut events = Vec::new();
    plan.leases.insert(lease_key(id), None);
    for key in attached_keys(inner, id)? {
        plan.leases.insert(attachment_key(id, &key), None);
        let Some(bytes) = inner
            .trees
            .data
            .get(&key)
            .map_err(|e| map_error("lease_expiry", e))?
        else {
            continue;
        };
        let prev = decode_entry(&key, &bytes, false)?;
        if prev.lease != Some(LeaseId(id)) {
            continue;
        }
        plan.data.push(PhysicalWrite::Delete { key: key.clone() });
        events.push(Event::Delete {
            key,
            prev: Some(prev),
        });
    }
    if !events.is_empty() {
        plan.events = Some(events);
    }
    inner.commit(w, plan, commits)?;
    w.leases.remove(id);
    Ok(())
}

/// Expires every lease whose deadline has passed, each in its own revision.
pub(crate) fn expire_due(inner: &Core, w: &mut Writer, commits: &mut Commits) -> Result<()> {
    for id in w.leases.due(now_ms()) {
        remove(inner, w, commits, id)?;
    }
    Ok(())
}
