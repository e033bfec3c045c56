//! Failover: the jobs of a node whose registration went away move to live nodes, each move one
//! transaction guarded on the dead node's absence and the job's unchanged key, so that two
//! schedulers failing over the same node move each job exactly once.

use super::error::CronixError;
use super::fencing::{Fence, fenced_out, guard};
use super::keys::{JobKey, NodeJobsDir, NodeKey};
use super::segments::JobId;
use keyplane_core::CompareOp;
use keyplane_core::Result;
use keyplane_core::keyspace::{ListOptions, TypedStore};
use uuid::Uuid;

/// What [`fail_over`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailoverReport {
    /// The jobs this call moved, with the node each went to.
    pub moved: Vec<(JobId, Uuid)>,
    /// The jobs another writer moved, changed or removed first (another scheduler failing
    /// over the same node): left alone.
    pub taken: Vec<JobId>,
    /// The jobs no target could take (every target down, or holding a job of that id).
    pub stranded: Vec<JobId>,
}

/// Moves every job of the lost node `dead` to the live nodes `targets`, spread round-robin.
/// Each move is one transaction: `dead` is still unregistered, the job's key is unchanged
/// since it was read, the target is registered and has no job of that id; then the old key
/// is deleted and the same config written under the target. A target found down is skipped
/// for the remaining jobs.
///
/// Typically run on each [`NodeEvent::Lost`](super::NodeEvent::Lost) of a
/// [`LiveCluster`](super::LiveCluster), with its view's other nodes as targets.
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
/// let lost = register_node(&store, &node(a), Duration::from_secs(10)).await?;
/// let _alive = register_node(&store, &node(b), Duration::from_secs(10)).await?;
/// let config = JobConfig {
///     name: "backup".into(), cron: "0 2 * * *".into(), command: "backup.sh".into(),
///     timeout_seconds: 0, retry: RetryPolicy { max_retries: 0, interval_seconds: 0 },
/// };
/// let job = JobId::new("nightly-backup")?;
/// assign_job(&store, a, &job, &config).await?;
/// lost.deregister().await?;
/// let report = fail_over(&store, a, &[b]).await?;
/// assert_eq!(report.moved, vec![(job.clone(), b)]);
/// assert_eq!(store.get(&JobKey { node: b, job }).await?, Some(config));
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`CronixError::Invalid`] for no target or `dead` among them; [`CronixError::NodeExists`]
/// when `dead` is registered (again): nothing more moves; the store's errors.
pub async fn fail_over(store: &TypedStore, dead: Uuid, targets: &[Uuid]) -> Result<FailoverReport> {
    run(store, dead, targets, None).await
}

/// [`fail_over`], with each move fenced when a dispatcher makes it.
pub(super) async fn run(
    store: &TypedStore,
    dead: Uuid,
    targets: &[Uuid],
    fence: Option<&Fence<'_>>,
) -> Result<FailoverReport> {
    if targets.is_empty() || targets.contains(&dead) {
        return Err(CronixError::Invalid {
            what: "failover",
            reason: "the targets are the live nodes other than the lost one".into(),
        }
        .into());
    }
    let dead_key = NodeKey { node: dead };
    let mut live: Vec<Uuid> = targets.to_vec();
    let mut report = FailoverReport::default();
    let mut next = 0usize;
    let mut opts = ListOptions::limit(256);
    loop {
        let page = store
            .list(&NodeJobsDir { node: dead }, opts.clone())
            .await?;
        'job: for (old, current) in page.items {
            let mut tried = 0;
            loop {
                if live.is_empty() {
                    report.stranded.push(old.job);
                    continue 'job;
                }
                let to = live[next % live.len()];
                let new = JobKey {
                    node: to,
                    job: old.job.clone(),
                };
                let target = NodeKey { node: to };
                let mut txn = store.txn();
                let fenced = guard(&mut txn, fence);
                txn.when_absent(&dead_key)
                    .when_mod_revision(&old, CompareOp::Equal, current.mod_revision)
                    .when_exists(&target)
                    .when_absent(&new)
                    .delete(&old)
                    .put(&new, &current.value);
                let dead_read = txn.get_on_failure(&dead_key);
                let old_read = txn.get_on_failure(&old);
                let target_read = txn.get_on_failure(&target);
                let outcome = txn.commit().await?;
                if outcome.succeeded {
                    report.moved.push((old.job, to));
                    next += 1;
                    continue 'job;
                }
                fenced_out(&outcome, fenced)?;
                if outcome.read(&dead_read)?.is_some() {
                    return Err(CronixError::NodeExists(dead).into());
                }
                if outcome
                    .read(&old_read)?
                    .is_none_or(|v| v.mod_revision != current.mod_revision)
                {
                    report.taken.push(old.job);
                    continue 'job;
                }
                if outcome.read(&target_read)?.is_none() {
                    // The target went down: no more jobs for it.
                    live.retain(|n| *n != to);
                } else {
                    // The target has a job of that id: try the next one, once each.
                    next += 1;
                    tried += 1;
                    if tried >= live.len() {
                        report.stranded.push(old.job);
                        continue 'job;
                    }
                }
            }
        }
        match page.next {
            Some(after) => opts = ListOptions::limit(256).after(after),
            None => return Ok(report),
        }
    }
}
