//! Distributed locks: `/Cronix/lock/<key>` with an empty value, attached to the holder's
//! lease. The key's presence is the lock.

use super::error::CronixError;
use super::keys::LockKey;
use super::segments::LockName;
use futures::StreamExt;
use keyplane_core::Result;
use keyplane_core::keyspace::{Key, TypedStore};
use keyplane_core::recipes::{Hold, LeaseHeld, LeaseKeeper};
use keyplane_core::{ErrorKind, Event, LeaseId, WatchOptions};
use std::time::Duration;

/// A held lock: the lock key attached to a lease a [`LeaseKeeper`] renews.
///
/// [`CronixLock::unlock`] releases it. If the holder dies (or drops the lock without
/// unlocking), renewals stop and the lock is released when the lease expires: the lock is
/// lost then, which [`CronixLock::lost`] reports to a holder still running.
#[derive(Debug)]
///
/// Its lease, fencing revision (the lock key's create revision, which changes whenever the
/// lock changes hands), fence and loss come from [`LeaseHeld`].
pub struct CronixLock {
    key: LockKey,
    keeper: LeaseKeeper,
    hold: Hold,
}

impl LeaseHeld for CronixLock {
    fn hold(&self) -> &Hold {
        &self.hold
    }
}

impl CronixLock {
    fn new(key: LockKey, keeper: LeaseKeeper, revision: i64) -> Self {
        let hold = keeper.hold(key.encode(), revision);
        CronixLock { key, keeper, hold }
    }
}

/// Takes the lock `name` if it is free: one transaction creates `/Cronix/lock/<name>`
/// attached to a new lease of `ttl`, provided the key is absent.
///
/// # Errors
/// [`CronixError::LockHeld`] when someone holds it (nothing is written, the lease is
/// revoked); the store's errors.
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use keyplane_schemas::cronix::*;
/// use std::{sync::Arc, time::Duration};
///
/// let store = keyplane_core::keyspace::TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let name = LockName::new("scheduler.dispatch")?;
/// let held = try_lock(&store, &name, Duration::from_secs(10)).await?;
/// let raw = store.store().get(b"/Cronix/lock/scheduler.dispatch").await?.unwrap();
/// assert_eq!(raw.value, b""); // presence is the lock
/// let err = try_lock(&store, &name, Duration::from_secs(10)).await.unwrap_err();
/// assert!(matches!(CronixError::of(&err), Some(CronixError::LockHeld(_))));
/// held.unlock().await?;
/// try_lock(&store, &name, Duration::from_secs(10)).await?.unlock().await?;
/// # Ok(()) }
/// ```
pub async fn try_lock(store: &TypedStore, name: &LockName, ttl: Duration) -> Result<CronixLock> {
    let keeper = LeaseKeeper::grant(store.store().clone(), ttl).await?;
    let key = LockKey { name: name.clone() };
    match attempt(store, &key, keeper.id()).await {
        Ok(Ok(token)) => Ok(CronixLock::new(key, keeper, token)),
        Ok(Err(_)) => {
            let _ = keeper.revoke().await;
            Err(CronixError::LockHeld(name.clone()).into())
        }
        Err(e) => {
            let _ = keeper.revoke().await;
            Err(e)
        }
    }
}

/// Takes the lock `name`, waiting while someone else holds it: after a failed attempt it
/// watches the lock key from the attempt's revision and tries again when the key is deleted
/// (released, or its holder's lease expired). No polling.
///
/// # Errors
/// The store's errors, including a watch that ends with an error.
pub async fn lock(store: &TypedStore, name: &LockName, ttl: Duration) -> Result<CronixLock> {
    let keeper = LeaseKeeper::grant(store.store().clone(), ttl).await?;
    let key = LockKey { name: name.clone() };
    let result = wait_for(store, &key, keeper.id()).await;
    match result {
        Ok(token) => Ok(CronixLock::new(key, keeper, token)),
        Err(e) => {
            let _ = keeper.revoke().await;
            Err(e)
        }
    }
}

async fn wait_for(store: &TypedStore, key: &LockKey, lease: LeaseId) -> Result<i64> {
    loop {
        let seen = match attempt(store, key, lease).await? {
            Ok(token) => return Ok(token),
            Err(revision) => revision,
        };
        let opts = WatchOptions::key(key.encode()).from_revision(seen + 1);
        let mut watch = store.store().watch(opts).await?;
        'wait: loop {
            match watch.next().await {
                Some(Ok(batch)) => {
                    if batch
                        .events
                        .iter()
                        .any(|e| matches!(e, Event::Delete { .. }))
                    {
                        break 'wait;
                    }
                }
                Some(Err(e)) => return Err(e),
                None => {
                    return Err(keyplane_core::Error::new(
                        ErrorKind::Unavailable,
                        "the watch ended",
                    ));
                }
            }
        }
    }
}

/// One attempt: `Ok(token)` when taken (the key's create revision), `Err(revision)` of the
/// failed transaction when held.
async fn attempt(store: &TypedStore, key: &LockKey, lease: LeaseId) -> Result<Result<i64, i64>> {
    let mut txn = store.txn();
    txn.when_absent(key).put_leased(key, &(), lease);
    let outcome = txn.commit().await?;
    Ok(if outcome.succeeded {
        Ok(outcome.revision)
    } else {
        Err(outcome.revision)
    })
}

impl CronixLock {
    /// The lock key, typed ([`LeaseHeld::key`] gives its bytes).
    pub fn lock_key(&self) -> &LockKey {
        &self.key
    }

    /// Releases the lock: revokes its lease, which deletes the lock key (waiters see the
    /// delete). A lock already lost with its lease is not an error.
    ///
    /// # Errors
    /// The store's errors.
    pub async fn unlock(self) -> Result<()> {
        match self.keeper.revoke().await {
            Err(e) if e.kind() != ErrorKind::LeaseNotFound => Err(e),
            _ => Ok(()),
        }
    }
}
