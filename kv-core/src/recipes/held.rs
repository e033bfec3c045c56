//! [`LeaseHeld`]: what every lease-held handle answers (a lock, a leadership, a service
//! registration, a scheduler node): its key, lease, fencing revision and fence, and whether
//! and why it was lost. The state lives in one [`Hold`], which each handle embeds, so the
//! accessors are written once.

use crate::LeaseId;
use crate::{Compare, CompareOp, CompareTarget};
use crate::{Error, ErrorKind};
use std::fmt;
use std::future::Future;
use tokio::sync::watch;

/// Something held under a lease. Every accessor is provided from [`hold`](Self::hold).
///
/// The fencing revision is the one word for the number that orders holders: it grows with
/// every new holder of the same key, and [`fence`](Self::fence) is the compare that holds
/// only while this one still holds. Put it in a transaction to make a write conditional on
/// still holding.
///
/// ```
/// use keyplane_core::recipes::{LeaseHeld, Lock};
/// use keyplane_core::{Store, Txn, TxnOp};
/// use std::sync::Arc;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
/// let lease = store.lease_grant(std::time::Duration::from_secs(10)).await?;
/// let guard = Lock::new(store.clone(), "jobs/lock")?.lock(lease.id).await?;
/// assert_eq!(guard.lease(), lease.id);
/// assert!(!guard.is_lost());
///
/// let fenced = Txn::new().when([guard.fence()]).and_then([TxnOp::put("jobs/1", "run")]);
/// assert!(store.txn(fenced).await?.succeeded);
/// let entry = store.get(guard.key()).await?.unwrap();
/// assert_eq!(entry.create_revision, guard.revision());
/// # Ok(()) }
/// ```
pub trait LeaseHeld {
    /// The state every accessor reads.
    fn hold(&self) -> &Hold;

    /// The key whose presence is the hold (the lock key, the leader key, the instance's
    /// data file, the node key).
    fn key(&self) -> &[u8] {
        &self.hold().key
    }

    /// The lease the key is attached to.
    fn lease(&self) -> LeaseId {
        self.hold().lease
    }

    /// The fencing revision: the revision at which this hold was taken. It grows with every
    /// new holder of the same key.
    fn revision(&self) -> i64 {
        self.hold().revision
    }

    /// The compare that holds while this hold lasts; put it in a txn to make a write
    /// conditional on still holding.
    fn fence(&self) -> Compare {
        self.hold().fence.clone()
    }

    /// Whether the hold has been lost (its key deleted, its lease expired or revoked).
    fn is_lost(&self) -> bool {
        self.hold().is_lost()
    }

    /// Resolves when the hold is lost without a release, with why: `LockLost` when the key
    /// was deleted or renewals failed for a whole TTL, `LeaseNotFound` when the store no
    /// longer has the lease.
    fn lost(&self) -> impl Future<Output = Error> + Send + '_
    where
        Self: Sync,
    {
        self.hold().lost()
    }
}

/// The state of a lease-held handle: key, lease, fencing revision, fence and the signal of
/// its loss. A handle embeds one and implements [`LeaseHeld`] by returning it. Built by the
/// lock and election recipes, and by [`LeaseKeeper::hold`](super::LeaseKeeper::hold) for a
/// handle whose lease a keeper renews.
pub struct Hold {
    key: Vec<u8>,
    lease: LeaseId,
    revision: i64,
    fence: Compare,
    signal: Signal,
}

/// How a hold learns that it was lost.
enum Signal {
    /// A watch of the key itself: `true` once it was deleted or recreated by someone else.
    Key {
        lost: watch::Receiver<bool>,
        /// What the loss error says.
        message: &'static str,
    },
    /// A `LeaseKeeper`'s loss: its kind and reason.
    Lease(watch::Receiver<Option<(ErrorKind, String)>>),
}

impl Hold {
    /// A hold of `key`, created at `revision` (its create revision) and watched by a
    /// monitor that sets `lost` once the key is deleted or recreated. Fenced on the key's
    /// create revision.
    pub(crate) fn of_key(
        key: Vec<u8>,
        revision: i64,
        lease: LeaseId,
        lost: watch::Receiver<bool>,
        message: &'static str,
    ) -> Self {
        Hold {
            fence: Compare::create_revision(&key, CompareOp::Equal, revision),
            key,
            lease,
            revision,
            signal: Signal::Key { lost, message },
        }
    }

    /// A hold of `key`, written at `revision` attached to `lease`, lost when `lost` (a
    /// [`LeaseKeeper`](super::LeaseKeeper)'s loss signal) reports it. Fenced on the key still
    /// being attached to that lease.
    pub(crate) fn of_lease(
        key: Vec<u8>,
        revision: i64,
        lease: LeaseId,
        lost: watch::Receiver<Option<(ErrorKind, String)>>,
    ) -> Self {
        Hold {
            fence: Compare::new(&key, CompareOp::Equal, CompareTarget::Lease(lease.0)),
            key,
            lease,
            revision,
            signal: Signal::Lease(lost),
        }
    }

    fn is_lost(&self) -> bool {
        match &self.signal {
            Signal::Key { lost, .. } => *lost.borrow(),
            Signal::Lease(lost) => lost.borrow().is_some(),
        }
    }

    async fn lost(&self) -> Error {
        match &self.signal {
            Signal::Key { lost, message } => {
                let mut rx = lost.clone();
                // The monitor only stops after reporting, or when the holder is gone.
                let _ = rx.wait_for(|lost| *lost).await;
                Error::new(ErrorKind::LockLost, *message)
                    .with_context("key", crate::raw::escape_bytes(&self.key))
            }
            Signal::Lease(lost) => lease_lost(lost.clone(), self.lease).await,
        }
    }
}

impl LeaseHeld for Hold {
    fn hold(&self) -> &Hold {
        self
    }
}

impl fmt::Debug for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hold")
            .field("key", &crate::raw::escape_bytes(&self.key))
            .field("lease", &self.lease)
            .field("revision", &self.revision)
            .field("lost", &self.is_lost())
            .finish()
    }
}

/// The error of a lease lost as `lost` reports it: its kind and reason, or `LockLost` when
/// the renewals stopped without one (the keeper is gone).
pub(crate) async fn lease_lost(
    mut lost: watch::Receiver<Option<(ErrorKind, String)>>,
    lease: LeaseId,
) -> Error {
    let reason = match lost.wait_for(Option::is_some).await {
        Ok(reason) => reason.clone(),
        // The renewal task ended without a reason: it was stopped, which only happens when
        // the keeper itself is gone.
        Err(_) => None,
    };
    let (kind, message) =
        reason.unwrap_or((ErrorKind::LockLost, "the lease keeper stopped".into()));
    Error::new(kind, message).with_context("lease", lease)
}
