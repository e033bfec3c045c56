//! A realistic example dataset written through the operations (used by `kvctl demo`).

use super::job::assign_job;
use super::keys::JobKey;
use super::lock::{CronixLock, try_lock};
use super::node::{NodeRegistration, register_node};
use super::segments::{JobId, LockName};
use super::values::{JobConfig, NodeInfo, NodeStatus, RetryPolicy};
use keyplane_core::Result;
use keyplane_core::keyspace::TypedStore;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;
use uuid::Uuid;

/// What [`write_example`] wrote: a node, a job assigned to it and a held lock. The node and
/// the lock live as long as these handles (dropping them lets their leases expire).
#[derive(Debug)]
pub struct CronixExample {
    /// The registered node.
    pub node: NodeRegistration,
    /// The job assigned to it.
    pub job: JobKey,
    /// The held lock.
    pub lock: CronixLock,
}

/// Registers node `node` (leases of `ttl`), assigns it the job `nightly-backup` and takes
/// the lock `nightly-backup.dispatch`.
///
/// # Errors
/// As [`register_node`], [`assign_job`] and [`try_lock`] (the lock is held: `LockHeld`).
pub async fn write_example(store: &TypedStore, node: Uuid, ttl: Duration) -> Result<CronixExample> {
    let info = NodeInfo {
        uuid: node,
        ip: IpAddr::V4(Ipv4Addr::new(10, 0, 3, 21)),
        port: 9527,
        status: NodeStatus::Online,
        hostname: "cron-worker-1".into(),
        started_at: 1_767_225_600_000,
    };
    let registration = register_node(store, &info, ttl).await?;
    let job = JobId::new("nightly-backup").expect("a valid literal job id");
    let config = JobConfig {
        name: "Nightly database backup".into(),
        cron: "0 30 2 * * *".into(),
        command: "/opt/backup/run.sh --full".into(),
        timeout_seconds: 3600,
        retry: RetryPolicy {
            max_retries: 2,
            interval_seconds: 300,
        },
    };
    assign_job(store, node, &job, &config).await?;
    let name =
        LockName::new(format!("{job}.dispatch-{}", node.simple())).expect("a valid lock name");
    let lock = try_lock(store, &name, ttl).await?;
    Ok(CronixExample {
        node: registration,
        job: JobKey { node, job },
        lock,
    })
}
