//! Keeping a lease alive in the background, and learning when it is lost.

use super::held::Hold;
use crate::LeaseGrant;
use crate::LeaseId;
use crate::Store;
use crate::{Error, ErrorKind, Result};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Why a kept lease was lost: the kind and message of the error that ended it.
type LostReason = Option<(ErrorKind, String)>;

/// Owns a lease and renews it every third of its TTL from a background task, as etcd's
/// `KeepAlive` does.
///
/// The lease is *lost* when the store says it no longer exists (`LeaseNotFound`: revoked
/// elsewhere or expired) or when no renewal has succeeded for a whole TTL (the backend was
/// unreachable for that long, so the lease may have expired there). [`LeaseKeeper::lost`]
/// resolves then. Dropping the keeper stops the renewals, so the lease expires after its TTL;
/// [`LeaseKeeper::revoke`] ends it at once.
///
/// ```
/// # #[tokio::main] async fn main() -> keyplane_core::Result<()> {
/// use keyplane_core::{PutOptions, Store};
/// use keyplane_core::recipes::{LeaseKeeper};
/// use std::{sync::Arc, time::Duration};
///
/// let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
/// let keeper = LeaseKeeper::grant(store.clone(), Duration::from_secs(10)).await?;
/// store
///     .put(b"registry/nodes/a", b"10.0.0.1", PutOptions::default().lease(keeper.id()))
///     .await?;
/// assert!(!keeper.is_lost());
/// keeper.revoke().await?; // deletes registry/nodes/a
/// assert!(store.get(b"registry/nodes/a").await?.is_none());
/// # Ok(()) }
/// ```
pub struct LeaseKeeper {
    store: Arc<dyn Store>,
    grant: LeaseGrant,
    lost: watch::Receiver<LostReason>,
    renewals: watch::Receiver<u64>,
    task: JoinHandle<()>,
}

impl LeaseKeeper {
    /// Grants a lease of `ttl` (rounded up by the backend) and starts keeping it alive.
    ///
    /// # Errors
    /// `InvalidArgument` for a zero TTL; backend errors.
    pub async fn grant(store: Arc<dyn Store>, ttl: Duration) -> Result<Self> {
        let grant = store.lease_grant(ttl).await?;
        Ok(Self::keep(store, grant))
    }

    /// Starts keeping an already granted lease alive. Must be called inside a tokio runtime.
    pub fn keep(store: Arc<dyn Store>, grant: LeaseGrant) -> Self {
        let (tx, rx) = watch::channel(None);
        let (renewed, renewals) = watch::channel(0);
        let task = tokio::spawn(renew(store.clone(), grant, tx, renewed));
        LeaseKeeper {
            store,
            grant,
            lost: rx,
            renewals,
            task,
        }
    }

    /// The kept lease.
    pub fn id(&self) -> LeaseId {
        self.grant.id
    }

    /// The TTL the lease was granted with.
    pub fn ttl(&self) -> Duration {
        self.grant.ttl
    }

    /// Whether the lease has been lost.
    pub fn is_lost(&self) -> bool {
        self.lost.borrow().is_some()
    }

    /// Resolves when the lease is lost, with the reason: a
    /// [`LeaseNotFound`](ErrorKind::LeaseNotFound) error when the store no longer has it, or
    /// a [`LockLost`](ErrorKind::LockLost) error when renewals failed for a whole TTL.
    pub async fn lost(&self) -> Error {
        super::held::lease_lost(self.lost.clone(), self.grant.id).await
    }

    /// The [`Hold`] of `key`, written at `revision` attached to this keeper's lease: for a
    /// handle that embeds it and implements [`LeaseHeld`](crate::recipes::LeaseHeld). It is lost when
    /// this keeper loses the lease, and fenced on the key still being attached to it.
    pub fn hold(&self, key: impl Into<Vec<u8>>, revision: i64) -> Hold {
        Hold::of_lease(key.into(), revision, self.grant.id, self.lost.clone())
    }

    /// How many times the lease has been renewed so far (a health signal: it grows every
    /// third of the TTL while the backend answers).
    pub fn renewals(&self) -> u64 {
        *self.renewals.borrow()
    }

    /// Waits until the lease has been renewed at least `n` times in all, or is lost.
    ///
    /// # Errors
    /// The loss (as [`LeaseKeeper::lost`]) when the lease is lost first.
    pub async fn renewed(&self, n: u64) -> Result<()> {
        let mut renewals = self.renewals.clone();
        let mut lost = self.lost.clone();
        let reached = tokio::select! {
            done = renewals.wait_for(|&count| count >= n) => done.is_ok(),
            _ = lost.wait_for(Option::is_some) => false,
        };
        if reached {
            Ok(())
        } else {
            Err(self.lost().await)
        }
    }

    /// A receiver that changes from `None` to `Some((kind, message))` when the lease is lost,
    /// for use in `select!` loops or by other tasks.
    pub fn subscribe(&self) -> watch::Receiver<Option<(ErrorKind, String)>> {
        self.lost.clone()
    }

    /// Stops the renewals and revokes the lease, deleting every key attached to it.
    ///
    /// # Errors
    /// `LeaseNotFound` when it was already lost; backend errors.
    pub async fn revoke(self) -> Result<()> {
        self.task.abort();
        self.store.lease_revoke(self.grant.id).await
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for LeaseKeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseKeeper")
            .field("lease", &self.grant.id)
            .field("ttl", &self.grant.ttl)
            .field("lost", &*self.lost.borrow())
            .finish()
    }
}

/// Renews `grant` every third of its TTL until the store says it is gone or renewals have
/// failed for a whole TTL. Transient failures are retried sooner (every tenth of the TTL).
async fn renew(
    store: Arc<dyn Store>,
    grant: LeaseGrant,
    lost: watch::Sender<LostReason>,
    renewed_count: watch::Sender<u64>,
) {
    let period = (grant.ttl / 3).max(Duration::from_millis(1));
    let retry = (grant.ttl / 10).max(Duration::from_millis(1));
    let mut renewed = Instant::now();
    let mut next = renewed + period;
    loop {
        tokio::time::sleep_until(next).await;
        match store.lease_keep_alive(grant.id).await {
            Ok(_) => {
                renewed = Instant::now();
                next = renewed + period;
                renewed_count.send_modify(|count| *count += 1);
            }
            Err(e) if e.kind() == ErrorKind::LeaseNotFound => {
                lost.send_replace(Some((e.kind(), e.message().to_owned())));
                return;
            }
            Err(e) => {
                if renewed.elapsed() >= grant.ttl {
                    let message = format!("no renewal succeeded for a whole TTL: {e}");
                    lost.send_replace(Some((ErrorKind::LockLost, message)));
                    return;
                }
                tracing::warn!(lease = %grant.id, error = %e, "lease renewal failed, retrying");
                next = Instant::now() + retry;
            }
        }
    }
}
