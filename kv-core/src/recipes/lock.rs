//! Distributed locks over any [`Store`], built on a lease and transactions as etcd's
//! concurrency recipe is.
//!
//! Each contender creates the key `<name>/<lease id in hex>` attached to its lease, in a txn
//! guarded by `Compare::absent`. Contenders are queued by the create revision of their keys:
//! the holder is the key with the smallest one, and every waiter watches the deletion of the
//! key just before it (no polling, no thundering herd). A crashed holder's key is deleted when
//! its lease expires, which hands the lock on.

use super::held::{Hold, LeaseHeld};
use super::queue::{Held, Queue};
use crate::LeaseId;
use crate::Result;
use crate::Store;
use crate::raw::validate_key;
use std::sync::Arc;

/// A named lock on a store. Cheap to create; [`Lock::lock`] acquires it.
///
/// ```
/// # #[tokio::main] async fn main() -> keyplane_core::Result<()> {
/// use keyplane_core::{Compare, CompareOp, Store, Txn, TxnOp};
/// use keyplane_core::recipes::{LeaseHeld, LeaseKeeper, Lock};
/// use std::{sync::Arc, time::Duration};
///
/// let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
/// let keeper = LeaseKeeper::grant(store.clone(), Duration::from_secs(10)).await?;
/// let lock = Lock::new(store.clone(), "cronix/locks/nightly")?;
/// let guard = lock.lock(keeper.id()).await?;
/// // Write only while still holding the lock: the fencing revision is the lock key's
/// // create revision, which changes whenever the lock changes hands.
/// let fenced = Txn::new()
///     .when([Compare::create_revision(guard.key(), CompareOp::Equal, guard.revision())])
///     .and_then([TxnOp::put("cronix/last-run", "2026-01-01")]);
/// assert!(store.txn(fenced).await?.succeeded);
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Lock {
    queue: Queue,
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
        Ok(Lock {
            queue: Queue::new(store, prefix)?,
        })
    }

    /// The lock's name (its keys' prefix without the trailing `/`).
    pub fn name(&self) -> &[u8] {
        &self.queue.prefix[..self.queue.prefix.len() - 1]
    }

    /// Acquires the lock for `lease`, waiting for the contenders queued before it.
    ///
    /// The lock is held until [`LockGuard::unlock`], until the guard is dropped, or until
    /// `lease` ends (revoked or expired); [`lost`](crate::recipes::LeaseHeld::lost) tells when that happens without
    /// an unlock. Dropping this future while it waits leaves the queue.
    ///
    /// # Errors
    /// `LeaseNotFound` when the lease does not exist; `AlreadyExists` when this lease already
    /// holds or waits for this lock; `LockLost` when the lease ended while waiting; backend
    /// errors.
    pub async fn lock(&self, lease: LeaseId) -> Result<LockGuard> {
        let held = self.queue.join_and_wait(lease, b"").await?;
        tracing::debug!(key = %crate::raw::escape_bytes(&held.key), "lock acquired");
        Ok(LockGuard::new(held))
    }

    /// Acquires the lock for `lease` only if no other contender holds or waits for it.
    ///
    /// # Errors
    /// As [`Lock::lock`].
    pub async fn try_lock(&self, lease: LeaseId) -> Result<Option<LockGuard>> {
        Ok(self.queue.try_join(lease, b"").await?.map(LockGuard::new))
    }
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("name", &crate::raw::escape_bytes(self.name()))
            .finish()
    }
}

/// A held lock. Released by [`LockGuard::unlock`], or in the background when dropped.
///
/// Its key (`<name>/<lease id in hex>`), lease, fencing revision (the lock key's create
/// revision, which grows with every new holder), fence and loss come from [`LeaseHeld`].
pub struct LockGuard {
    held: Held,
    hold: Hold,
}

impl LeaseHeld for LockGuard {
    fn hold(&self) -> &Hold {
        &self.hold
    }
}

impl LockGuard {
    fn new(held: Held) -> Self {
        let hold = held.hold("the lock key was deleted");
        LockGuard { held, hold }
    }

    /// Releases the lock.
    ///
    /// # Errors
    /// `LockLost` when the lock had already been lost; backend errors.
    pub async fn unlock(self) -> Result<()> {
        self.held.release("the lock was lost before unlock").await
    }
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("key", &crate::raw::escape_bytes(self.key()))
            .field("revision", &self.revision())
            .field("lease", &self.lease())
            .field("lost", &self.is_lost())
            .finish()
    }
}
