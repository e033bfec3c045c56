//! One-shot triggers: `/Cronix/once/<job_id>`, written by the scheduler, cleaned up after
//! the run.

use super::error::{CronixError, Result};
use super::keys::OnceKey;
use super::segments::JobId;
use super::values::OnceTarget;
use keyplane_core::keyspace::TypedStore;

/// Triggers one run of `job` on `target` (a node, or every node): creates
/// `/Cronix/once/<job>` unless a trigger of the job is still pending.
///
/// # Errors
/// [`CronixError::AlreadyTriggered`] (nothing is written); [`CronixError::Store`].
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
/// assert!(matches!(trigger_once(&store, &job, OnceTarget::AllNodes).await,
///     Err(CronixError::AlreadyTriggered(_))));
/// assert!(finish_once(&store, &job).await?); // cleaned up after the run
/// # Ok(()) }
/// ```
pub async fn trigger_once(store: &TypedStore, job: &JobId, target: OnceTarget) -> Result<i64> {
    let mut txn = store.txn();
    txn.create(&OnceKey { job: job.clone() }, &target);
    let outcome = txn.commit().await?;
    if !outcome.succeeded {
        return Err(CronixError::AlreadyTriggered(job.clone()));
    }
    Ok(outcome.revision)
}

/// The pending trigger of `job`, if any.
///
/// # Errors
/// [`CronixError::Store`]; a `Codec` error for a value that is neither a UUID nor empty.
pub async fn pending_once(store: &TypedStore, job: &JobId) -> Result<Option<OnceTarget>> {
    Ok(store.get(&OnceKey { job: job.clone() }).await?)
}

/// Cleans up the trigger of `job` after its run; returns whether it was pending.
///
/// # Errors
/// [`CronixError::Store`].
pub async fn finish_once(store: &TypedStore, job: &JobId) -> Result<bool> {
    Ok(store.delete(&OnceKey { job: job.clone() }).await?.existed())
}
