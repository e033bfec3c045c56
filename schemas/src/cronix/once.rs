//! One-shot triggers: `/Cronix/once/<job_id>`, written by the scheduler, cleaned up after
//! the run.

use super::error::CronixError;
use super::fencing::{Fence, fenced_out, guard};
use super::keys::OnceKey;
use super::segments::JobId;
use super::values::OnceTarget;
use keyplane_core::CompareOp;
use keyplane_core::Result;
use keyplane_core::keyspace::TypedStore;

/// Triggers one run of `job` on `target` (a node, or every node): creates
/// `/Cronix/once/<job>` unless a trigger of the job is still pending.
///
/// # Errors
/// [`CronixError::AlreadyTriggered`] (nothing is written); the store's errors.
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use keyplane_schemas::cronix::*;
/// use std::sync::Arc;
///
/// let store = keyplane_core::keyspace::TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let job = JobId::new("report")?;
/// trigger_once(&store, &job, OnceTarget::AllNodes).await?;
/// assert_eq!(store.store().get(b"/Cronix/once/report").await?.unwrap().value, b"");
/// let err = trigger_once(&store, &job, OnceTarget::AllNodes).await.unwrap_err();
/// assert!(matches!(CronixError::of(&err), Some(CronixError::AlreadyTriggered(_))));
/// let pending = pending_once(&store, &job).await?.unwrap();
/// assert!(finish_once(&store, &job, &pending).await?); // cleaned up after the run
/// # Ok(()) }
/// ```
pub async fn trigger_once(store: &TypedStore, job: &JobId, target: OnceTarget) -> Result<i64> {
    trigger(store, job, target, None).await
}

/// [`trigger_once`], with the write fenced when a dispatcher makes it.
pub(super) async fn trigger(
    store: &TypedStore,
    job: &JobId,
    target: OnceTarget,
    fence: Option<&Fence<'_>>,
) -> Result<i64> {
    let mut txn = store.txn();
    let fenced = guard(&mut txn, fence);
    txn.create(&OnceKey { job: job.clone() }, &target);
    let outcome = txn.commit().await?;
    if !outcome.succeeded {
        fenced_out(&outcome, fenced)?;
        return Err(CronixError::AlreadyTriggered(job.clone()).into());
    }
    Ok(outcome.revision)
}

/// A pending trigger as [`pending_once`] read it: its target and the revision it was
/// written at, which [`finish_once`] checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingOnce {
    /// Where the run goes.
    pub target: OnceTarget,
    /// The trigger's mod revision when it was read.
    pub revision: i64,
}

/// The pending trigger of `job`, if any.
///
/// # Errors
/// The store's errors; a `Codec` error for a value that is neither a UUID nor empty.
pub async fn pending_once(store: &TypedStore, job: &JobId) -> Result<Option<PendingOnce>> {
    Ok(store
        .get_versioned(&OnceKey { job: job.clone() })
        .await?
        .map(|v| PendingOnce {
            target: v.value,
            revision: v.mod_revision,
        }))
}

/// Cleans up the trigger of `job` after the run of `pending`: deletes it only if it is still
/// the trigger that was read (same revision), never a newer one written meanwhile. Returns
/// whether it deleted it.
///
/// # Errors
/// The store's errors.
pub async fn finish_once(store: &TypedStore, job: &JobId, pending: &PendingOnce) -> Result<bool> {
    let key = OnceKey { job: job.clone() };
    let mut txn = store.txn();
    txn.when_mod_revision(&key, CompareOp::Equal, pending.revision)
        .delete(&key);
    Ok(txn.commit().await?.succeeded)
}
