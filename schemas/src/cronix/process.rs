//! Job processes: recorded while they run, removed when they end.

use super::error::{CronixError, Result};
use super::keys::{JobProcsDir, ProcKey};
use super::values::ProcInfo;
use keyplane_core::LeaseId;
use keyplane_core::keyspace::{ListOptions, TypedStore};

/// Records a running process at `/Cronix/proc/<node>/<job>/<pid>`, attached to `lease` (the
/// node's, or one of the process's own) so that it vanishes when the process or node dies.
///
/// # Errors
/// [`CronixError::Invalid`] when `info`'s pid or job id differ from the key's;
/// [`CronixError::Store`] (`LeaseNotFound` for a lease that has ended).
pub async fn record_process(
    store: &TypedStore,
    key: &ProcKey,
    info: &ProcInfo,
    lease: LeaseId,
) -> Result<i64> {
    if info.pid != key.pid || info.job_id != key.job.as_str() {
        return Err(CronixError::Invalid {
            what: "process info",
            reason: format!(
                "pid {} / job {:?} differ from the key's {} / {:?}",
                info.pid,
                info.job_id,
                key.pid,
                key.job.as_str()
            ),
        });
    }
    Ok(store.put_leased(key, info, lease).await?)
}

/// Removes a process that ended; returns whether it was recorded.
///
/// # Errors
/// [`CronixError::Store`].
pub async fn end_process(store: &TypedStore, key: &ProcKey) -> Result<bool> {
    Ok(store.delete(key).await?.existed())
}

/// The processes of a job on a node, read page by page.
///
/// # Errors
/// [`CronixError::Store`].
pub async fn job_processes(
    store: &TypedStore,
    dir: &JobProcsDir,
) -> Result<Vec<(ProcKey, ProcInfo)>> {
    let mut out = Vec::new();
    let mut opts = ListOptions::limit(256);
    loop {
        let page = store.list(dir, opts.clone()).await?;
        out.extend(page.items.into_iter().map(|(key, info)| (key, info.value)));
        match page.next {
            Some(next) => opts = ListOptions::limit(256).after(next),
            None => return Ok(out),
        }
    }
}
