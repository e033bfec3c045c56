//! Distributed locks over any [`Store`], built on a lease and transactions as etcd's
//! concurrency recipe is.
//!
//! Each contender creates the key `<name>/<lease id in hex>` attached to its lease, in a txn
//! guarded by `Compare::absent`. Contenders are queued by the create revision of their keys:
//! the holder is the key with the smallest one, and every waiter watches the deletion of the
//! key just before it (no polling, no thundering herd). A crashed holder's key is deleted when
//! its lease expires, which hands the lock on.

use crate::entry::{Entry, LeaseId, validate_key};
use crate::error::{Error, ErrorKind, Result};
use crate::range::{KeyRange, RangeOptions};
use crate::store::Store;
use crate::txn::{Compare, CompareOp, OpResult, Txn, TxnOp};
use crate::watch::{Event, WatchOptions, WatchStream};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A named lock on a store. Cheap to create; [`Lock::lock`] acquires it.
///
/// ```
/// # #[tokio::main] async fn main() -> keyplane_core::Result<()> {
/// use keyplane_core::{Compare, CompareOp, LeaseKeeper, Lock, Store, Txn, TxnOp};
/// use std::{sync::Arc, time::Duration};
///
/// let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
/// let keeper = LeaseKeeper::grant(store.clone(), Duration::from_secs(10)).await?;
/// let lock = Lock::new(store.clone(), "cronix/locks/nightly")?;
/// let guard = lock.lock(keeper.id()).await?;
/// // Write only while still holding the lock: the fencing token is the lock key's
/// // create revision, which changes whenever the lock changes hands.
/// let fenced = Txn::new()
///     .when([Compare::create_revision(guard.key(), CompareOp::Equal, guard.fencing_token())])
///     .and_then([TxnOp::put("cronix/last-run", "2026-01-01")]);
/// assert!(store.txn(fenced).await?.succeeded);
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Lock {
    store: Arc<dyn Store>,
    prefix: Vec<u8>,
}

impl Lock {
    /// The lock called `name`; its contenders' keys live under `<name>/`.
    ///
    /// # Errors
    /// `InvalidKey` when `name` is not a valid key.
    pub fn new(store: Arc<dyn Store>, name: impl AsRef<[u8]>) -> Result<Self> {
        let name = name.as_ref();
        validate_key(name)?;
        let mut prefix = name.to_vec();
        prefix.push(b'/');
        validate_key(&prefix)?;
        Ok(Lock { store, prefix })
    }

    /// The lock's name (its keys' prefix without the trailing `/`).
    pub fn name(&self) -> &[u8] {
        &self.prefix[..self.prefix.len() - 1]
    }

    /// Acquires the lock for `lease`, waiting for the contenders queued before it.
    ///
    /// The lock is held until [`LockGuard::unlock`], until the guard is dropped, or until
    /// `lease` ends (revoked or expired); [`LockGuard::lost`] tells when that happens without
    /// an unlock. Dropping this future while it waits leaves the queue.
    ///
    /// # Errors
    /// `LeaseNotFound` when the lease does not exist; `AlreadyExists` when this lease already
    /// holds or waits for this lock; `LockLost` when the lease ended while waiting; backend
    /// errors.
    pub async fn lock(&self, lease: LeaseId) -> Result<LockGuard> {
        let entry = self.enqueue(lease).await?;
        loop {
            let (ahead, revision) = self.ahead_of(&entry).await?;
            let Some(ahead) = ahead else {
                return Ok(entry.into_guard(revision));
            };
            self.wait_for_delete(&ahead.key, &entry.key, revision)
                .await?;
        }
    }

    /// Acquires the lock for `lease` only if no other contender holds or waits for it.
    ///
    /// # Errors
    /// As [`Lock::lock`].
    pub async fn try_lock(&self, lease: LeaseId) -> Result<Option<LockGuard>> {
        let entry = self.enqueue(lease).await?;
        match self.ahead_of(&entry).await? {
            (None, revision) => Ok(Some(entry.into_guard(revision))),
            // Dropping `entry` leaves the queue.
            (Some(_), _) => Ok(None),
        }
    }

    /// Creates this contender's key, attached to `lease`.
    ///
    /// # Errors
    /// `AlreadyExists` when the key exists: this lease already holds or waits for the lock.
    async fn enqueue(&self, lease: LeaseId) -> Result<Pending> {
        let mut key = self.prefix.clone();
        key.extend_from_slice(lease.to_string().as_bytes());
        let resp = self
            .store
            .txn(
                Txn::new()
                    .when([Compare::absent(&key)])
                    .and_then([TxnOp::put_with_lease(&key, b"", lease)]),
            )
            .await?;
        if !resp.succeeded {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                "this lease already holds or waits for this lock",
            )
            .with_context("key", crate::escape_bytes(&key)));
        }
        Ok(Pending {
            store: self.store.clone(),
            key,
            token: resp.revision,
            lease,
            armed: true,
        })
    }

    /// The contender queued just before `me` (the greatest create revision below its token),
    /// and the revision the queue was read at.
    ///
    /// # Errors
    /// `LockLost` when `me`'s key is gone (its lease ended).
    async fn ahead_of(&self, me: &Pending) -> Result<(Option<Entry>, i64)> {
        let mut opts = RangeOptions::prefix(&self.prefix).keys_only().limit(256);
        let mut ahead: Option<Entry> = None;
        let mut found_me = false;
        let mut first_revision = None;
        loop {
            let page = self.store.range(opts.clone()).await?;
            first_revision.get_or_insert(page.revision);
            // Only direct children named by a lease id are contenders: the keys of a lock
            // named `<name>/sub` share the prefix but are not in this queue.
            let contenders = page.entries.into_iter().filter(|e| {
                let id = &e.key[self.prefix.len()..];
                !id.is_empty() && id.iter().all(u8::is_ascii_hexdigit)
            });
            for e in contenders {
                if e.key == me.key {
                    found_me = e.create_revision == me.token;
                } else if e.create_revision < me.token
                    && ahead
                        .as_ref()
                        .is_none_or(|a| a.create_revision < e.create_revision)
                {
                    ahead = Some(e);
                }
            }
            match page.next {
                Some(next) => opts = opts.after(next),
                None => break,
            }
        }
        if !found_me {
            return Err(lost(&me.key, "the lock key was deleted while waiting"));
        }
        Ok((ahead, first_revision.unwrap_or_default()))
    }

    /// Waits until `ahead` is deleted after `revision`, or fails when `me` is.
    async fn wait_for_delete(&self, ahead: &[u8], me: &[u8], revision: i64) -> Result<()> {
        let from = |k: &[u8]| WatchOptions::key(k).from_revision(revision + 1);
        let mut ahead_watch = self.store.watch(from(ahead)).await?;
        let mut my_watch = self.store.watch(from(me)).await?;
        loop {
            tokio::select! {
                item = ahead_watch.next() => match deleted(item) {
                    Watched::Deleted | Watched::Recheck => return Ok(()),
                    Watched::Other => {}
                    Watched::Failed(e) => return Err(e),
                },
                item = my_watch.next() => match deleted(item) {
                    Watched::Deleted => {
                        return Err(lost(me, "the lock key was deleted while waiting"));
                    }
                    Watched::Recheck => return Ok(()),
                    Watched::Other => {}
                    Watched::Failed(e) => return Err(e),
                },
            }
        }
    }
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("name", &crate::escape_bytes(self.name()))
            .finish()
    }
}

/// What a watch item says about the watched key.
enum Watched {
    Deleted,
    Other,
    /// The history is no longer retained: read the queue again.
    Recheck,
    Failed(Error),
}

fn deleted(item: Option<Result<crate::WatchBatch>>) -> Watched {
    match item {
        Some(Ok(batch)) => {
            if batch
                .events
                .iter()
                .any(|e| matches!(e, Event::Delete { .. }))
            {
                Watched::Deleted
            } else {
                Watched::Other
            }
        }
        Some(Err(e)) if matches!(e.kind(), ErrorKind::Compacted { .. }) => Watched::Recheck,
        Some(Err(e)) => Watched::Failed(e),
        None => Watched::Failed(Error::new(
            ErrorKind::Unavailable,
            "the watch ended without an error",
        )),
    }
}

fn lost(key: &[u8], message: &str) -> Error {
    Error::new(ErrorKind::LockLost, message).with_context("key", crate::escape_bytes(key))
}

/// Deletes `key` if it still has create revision `token`: releases exactly this holder's
/// claim, never a later one.
async fn release(store: &dyn Store, key: &[u8], token: i64) -> Result<bool> {
    let resp = store
        .txn(
            Txn::new()
                .when([Compare::create_revision(key, CompareOp::Equal, token)])
                .and_then([TxnOp::delete(key)]),
        )
        .await?;
    Ok(resp.succeeded && matches!(resp.results[..], [OpResult::Delete { deleted: 1 }]))
}

/// Releases `key` from a spawned task, when a runtime is available (otherwise the lease's
/// expiry releases it).
fn release_in_background(store: &Arc<dyn Store>, key: &[u8], token: i64) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        let (store, key) = (store.clone(), key.to_vec());
        handle.spawn(async move {
            if let Err(e) = release(&*store, &key, token).await {
                tracing::warn!(key = %crate::escape_bytes(&key), error = %e, "lock release failed");
            }
        });
    }
}

/// A contender's key while it waits; leaves the queue when dropped.
struct Pending {
    store: Arc<dyn Store>,
    key: Vec<u8>,
    token: i64,
    lease: LeaseId,
    armed: bool,
}

impl Pending {
    fn into_guard(mut self, revision: i64) -> LockGuard {
        self.armed = false;
        let (tx, rx) = watch::channel(false);
        let monitor = tokio::spawn(monitor(
            self.store.clone(),
            self.key.clone(),
            self.token,
            revision,
            tx,
        ));
        tracing::debug!(key = %crate::escape_bytes(&self.key), "lock acquired");
        LockGuard {
            store: self.store.clone(),
            key: std::mem::take(&mut self.key),
            token: self.token,
            lease: self.lease,
            lost: rx,
            monitor,
            released: false,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.armed {
            release_in_background(&self.store, &self.key, self.token);
        }
    }
}

/// Watches the lock key from `revision + 1` and reports when it is deleted or recreated.
async fn monitor(
    store: Arc<dyn Store>,
    key: Vec<u8>,
    token: i64,
    mut revision: i64,
    lost: watch::Sender<bool>,
) {
    loop {
        let watch = WatchOptions::key(&key).from_revision(revision + 1);
        if let Ok(mut stream) = store.watch(watch).await
            && ended(&mut stream, token).await
        {
            lost.send_replace(true);
            return;
        }
        // The watch failed: confirm by reading the key, then watch again from there.
        match store
            .range(RangeOptions::new(KeyRange::Key(key.clone())))
            .await
        {
            Ok(page)
                if page
                    .entries
                    .first()
                    .is_some_and(|e| e.create_revision == token) =>
            {
                revision = page.revision;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            _ => {
                lost.send_replace(true);
                return;
            }
        }
    }
}

/// Reads the stream until the key is deleted or recreated (`true`) or the stream fails
/// (`false`).
async fn ended(stream: &mut WatchStream, token: i64) -> bool {
    while let Some(Ok(batch)) = stream.next().await {
        for event in batch.events {
            match event {
                Event::Delete { .. } => return true,
                Event::Put { entry, .. } if entry.create_revision != token => return true,
                Event::Put { .. } | Event::Collection(_) => {}
            }
        }
    }
    false
}

/// A held lock. Released by [`LockGuard::unlock`], or in the background when dropped.
pub struct LockGuard {
    store: Arc<dyn Store>,
    key: Vec<u8>,
    token: i64,
    lease: LeaseId,
    lost: watch::Receiver<bool>,
    monitor: JoinHandle<()>,
    released: bool,
}

impl LockGuard {
    /// The lock key this holder created: `<name>/<lease id in hex>`.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The fencing token: the lock key's create revision. It grows with every new holder, and
    /// `Compare::create_revision(guard.key(), Equal, token)` in a txn makes a write conditional
    /// on still holding the lock.
    pub fn fencing_token(&self) -> i64 {
        self.token
    }

    /// The lease the lock is held with.
    pub fn lease(&self) -> LeaseId {
        self.lease
    }

    /// Whether the lock has been lost (its key deleted, for instance because the lease ended).
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Resolves when the lock is lost without an unlock: its key was deleted (the lease was
    /// revoked or expired, or someone deleted the key). Returns a `LockLost` error describing
    /// it.
    pub async fn lost(&self) -> Error {
        let mut rx = self.lost.clone();
        // The monitor only stops after reporting, or when the guard is gone.
        let _ = rx.wait_for(|lost| *lost).await;
        lost(&self.key, "the lock key was deleted")
    }

    /// Releases the lock.
    ///
    /// # Errors
    /// `LockLost` when the lock had already been lost; backend errors.
    pub async fn unlock(mut self) -> Result<()> {
        self.monitor.abort();
        self.released = true;
        if release(&*self.store, &self.key, self.token).await? {
            Ok(())
        } else {
            Err(lost(&self.key, "the lock was lost before unlock"))
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        self.monitor.abort();
        if !self.released {
            release_in_background(&self.store, &self.key, self.token);
        }
    }
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("key", &crate::escape_bytes(&self.key))
            .field("fencing_token", &self.token)
            .field("lease", &self.lease)
            .field("lost", &self.is_lost())
            .finish()
    }
}
