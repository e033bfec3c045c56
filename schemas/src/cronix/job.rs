//! Jobs: assigning them to nodes, removing them, and moving them between nodes.

use super::error::CronixError;
use super::fencing::{Fence, fenced_out, guard};
use super::keys::{JobKey, NodeKey};
use super::segments::JobId;
use super::values::JobConfig;
use keyplane_core::CompareOp;
use keyplane_core::Result;
use keyplane_core::keyspace::TypedStore;
use uuid::Uuid;

fn validate(config: &JobConfig) -> Result<()> {
    config.validate().map_err(|reason| {
        CronixError::Invalid {
            what: "job config",
            reason,
        }
        .into()
    })
}

/// Assigns (or rewrites) job `job` on `node`, in one transaction that requires the node to
/// be registered.
///
/// # Errors
/// [`CronixError::Invalid`] for a bad config and [`CronixError::NodeDown`] when the node is
/// not registered (nothing is written); the store's errors.
pub async fn assign_job(
    store: &TypedStore,
    node: Uuid,
    job: &JobId,
    config: &JobConfig,
) -> Result<i64> {
    assign(store, node, job, config, None).await
}

/// [`assign_job`], with the writes fenced when a dispatcher makes them.
pub(super) async fn assign(
    store: &TypedStore,
    node: Uuid,
    job: &JobId,
    config: &JobConfig,
    fence: Option<&Fence<'_>>,
) -> Result<i64> {
    validate(config)?;
    let mut txn = store.txn();
    let fenced = guard(&mut txn, fence);
    txn.when_exists(&NodeKey { node }).put(
        &JobKey {
            node,
            job: job.clone(),
        },
        config,
    );
    let outcome = txn.commit().await?;
    if !outcome.succeeded {
        fenced_out(&outcome, fenced)?;
        return Err(CronixError::NodeDown(node).into());
    }
    Ok(outcome.revision)
}

/// Removes job `job` from `node`; returns whether it was assigned there.
///
/// # Errors
/// The store's errors.
pub async fn remove_job(store: &TypedStore, node: Uuid, job: &JobId) -> Result<bool> {
    remove(store, node, job, None).await
}

/// [`remove_job`], with the delete fenced when a dispatcher makes it.
pub(super) async fn remove(
    store: &TypedStore,
    node: Uuid,
    job: &JobId,
    fence: Option<&Fence<'_>>,
) -> Result<bool> {
    let key = JobKey {
        node,
        job: job.clone(),
    };
    if fence.is_none() {
        return Ok(store.delete(&key).await?.existed());
    }
    let mut txn = store.txn();
    let fenced = guard(&mut txn, fence);
    let existed = txn.get(&key);
    txn.delete(&key);
    let outcome = txn.commit().await?;
    if !outcome.succeeded {
        fenced_out(&outcome, fenced)?;
        return Err(keyplane_core::Error::internal(
            "a fenced delete failed without its fence",
        ));
    }
    Ok(outcome.read(&existed)?.is_some())
}

/// Moves job `job` from node `from` (typically a failed one) to node `to` in one
/// transaction: it holds only if the old key is unchanged since it was read (same mod
/// revision), `to` is registered and has no job of that id; it then deletes the old key and
/// puts the same config under the new one. Returns the revision of the move.
///
/// Of two schedulers moving the same job at once, exactly one succeeds; the other gets
/// [`CronixError::JobChanged`] or [`CronixError::JobNotFound`].
///
/// # Errors
/// [`CronixError::Invalid`] when `from == to`; [`CronixError::JobNotFound`],
/// [`CronixError::JobChanged`], [`CronixError::NodeDown`] (the target),
/// [`CronixError::JobExists`] (on the target), all writing nothing; the store's errors.
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use keyplane_schemas::cronix::*;
/// use std::{sync::Arc, time::Duration};
///
/// let store = keyplane_core::keyspace::TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let node = |uuid| NodeInfo {
///     uuid, ip: "10.0.0.1".parse().unwrap(), port: 9527, status: NodeStatus::Online,
///     hostname: "w".into(), started_at: 0,
/// };
/// let (a, b) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
/// let failed = register_node(&store, &node(a), Duration::from_secs(10)).await?;
/// let _alive = register_node(&store, &node(b), Duration::from_secs(10)).await?;
/// let job = JobId::new("nightly-backup")?;
/// let config = JobConfig {
///     name: "backup".into(), cron: "0 2 * * *".into(), command: "backup.sh".into(),
///     timeout_seconds: 0, retry: RetryPolicy { max_retries: 0, interval_seconds: 0 },
/// };
/// assign_job(&store, a, &job, &config).await?;
/// failed.deregister().await?;
/// move_job(&store, &job, a, b).await?;
/// assert_eq!(store.get(&JobKey { node: b, job: job.clone() }).await?, Some(config));
/// let err = move_job(&store, &job, a, b).await.unwrap_err();
/// assert!(matches!(CronixError::of(&err), Some(CronixError::JobNotFound { .. })));
/// # Ok(()) }
/// ```
pub async fn move_job(store: &TypedStore, job: &JobId, from: Uuid, to: Uuid) -> Result<i64> {
    move_to(store, job, from, to, None).await
}

/// [`move_job`], with the move fenced when a dispatcher makes it.
pub(super) async fn move_to(
    store: &TypedStore,
    job: &JobId,
    from: Uuid,
    to: Uuid,
    fence: Option<&Fence<'_>>,
) -> Result<i64> {
    if from == to {
        return Err(CronixError::Invalid {
            what: "job move",
            reason: "the source and target nodes are the same".into(),
        }
        .into());
    }
    let old = JobKey {
        node: from,
        job: job.clone(),
    };
    let new = JobKey {
        node: to,
        job: job.clone(),
    };
    let target = NodeKey { node: to };
    let Some(current) = store.get_versioned(&old).await? else {
        return Err(CronixError::JobNotFound {
            node: from,
            job: job.clone(),
        }
        .into());
    };
    let mut txn = store.txn();
    let fenced = guard(&mut txn, fence);
    txn.when_mod_revision(&old, CompareOp::Equal, current.mod_revision)
        .when_exists(&target)
        .when_absent(&new)
        .delete(&old)
        .put(&new, &current.value);
    let old_read = txn.get_on_failure(&old);
    let target_read = txn.get_on_failure(&target);
    let outcome = txn.commit().await?;
    if outcome.succeeded {
        return Ok(outcome.revision);
    }
    // Say which condition failed, from the failure branch's reads (same revision).
    fenced_out(&outcome, fenced)?;
    if outcome.read(&old_read)?.is_none() {
        return Err(CronixError::JobNotFound {
            node: from,
            job: job.clone(),
        }
        .into());
    }
    if outcome
        .read(&old_read)?
        .is_some_and(|v| v.mod_revision != current.mod_revision)
    {
        return Err(CronixError::JobChanged {
            node: from,
            job: job.clone(),
        }
        .into());
    }
    if outcome.read(&target_read)?.is_none() {
        return Err(CronixError::NodeDown(to).into());
    }
    Err(CronixError::JobExists {
        node: to,
        job: job.clone(),
    }
    .into())
}
