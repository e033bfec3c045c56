//! Job processes: recorded while they run, removed when they end, and terminated on
//! request (the scheduler sets the process's `killed` flag; the node ends it and removes
//! the key).

use super::error::CronixError;
use super::keys::{JobProcsDir, NodeProcsDir, ProcKey};
use super::values::ProcInfo;
use futures::StreamExt;
use keyplane_core::LeaseId;
use keyplane_core::Result;
use keyplane_core::keyspace::{ListOptions, TypedEvent, TypedStore, TypedWatch};
use uuid::Uuid;

/// Records a running process at `/Cronix/proc/<node>/<job>/<pid>`, attached to `lease` (the
/// node's, or one of the process's own) so that it vanishes when the process or node dies.
///
/// # Errors
/// [`CronixError::Invalid`] when `info`'s pid or job id differ from the key's;
/// The store's errors (`LeaseNotFound` for a lease that has ended).
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
        }
        .into());
    }
    store.put_leased(key, info, lease).await
}

/// Removes a process that ended; returns whether it was recorded.
///
/// # Errors
/// The store's errors.
pub async fn end_process(store: &TypedStore, key: &ProcKey) -> Result<bool> {
    Ok(store.delete(key).await?.existed())
}

/// The processes of a job on a node, read page by page.
///
/// # Errors
/// The store's errors.
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

/// Asks the node running the process at `key` to terminate it: sets the process's `killed`
/// flag (the document's "是否终止"), keeping its lease, in a transaction guarded by the
/// revision read (again on conflict). The node sees the request through
/// [`termination_requests`], ends the process and removes the key with [`finish_process`]
/// ("任务终止时 Node 服务删除"). Asking again changes nothing. Returns the revision at which
/// the flag is set.
///
/// # Errors
/// [`CronixError::ProcessNotFound`] when no such process runs (nothing is written);
/// The store's errors.
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use keyplane_schemas::cronix::*;
/// use std::{sync::Arc, time::Duration};
///
/// let store = keyplane_core::keyspace::TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let node = uuid::Uuid::new_v4();
/// let key = ProcKey { node, job: JobId::new("backup")?, pid: 4242 };
/// let info = ProcInfo { pid: 4242, job_id: "backup".into(), killed: false, started_at: 1 };
/// let lease = store.store().lease_grant(Duration::from_secs(30)).await?.id;
/// record_process(&store, &key, &info, lease).await?;
///
/// let mut requests = termination_requests(&store, node).await?; // on the node
/// terminate_process(&store, &key).await?;                      // by the scheduler
/// let request = requests.next().await.unwrap()?;
/// assert_eq!(request.key, key);
/// assert!(finish_process(&store, &request.key, &info).await?); // the node removes it
/// # Ok(()) }
/// ```
pub async fn terminate_process(store: &TypedStore, key: &ProcKey) -> Result<i64> {
    let result = store
        .update(key, |current| match current {
            None => Err(keyplane_core::Error::new(
                keyplane_core::ErrorKind::NotFound,
                "no such process",
            )),
            Some(info) => Ok(Some(ProcInfo {
                killed: true,
                ..info.clone()
            })),
        })
        .await;
    let written = match result {
        Ok(revision) => revision,
        Err(e) if e.kind() == keyplane_core::ErrorKind::NotFound => {
            return Err(CronixError::ProcessNotFound(key.clone()).into());
        }
        Err(e) => return Err(e),
    };
    // The revision the flag was set at: the key's own (an earlier request's when the flag
    // was already set), or the write's when the process ended since.
    Ok(match store.get_versioned(key).await? {
        Some(current) if current.value.killed => current.mod_revision,
        _ => written,
    })
}

/// Removes the process at `key` only if it is still the one recorded with `info` (as
/// recorded, or with its `killed` flag set since): a process recorded later under the same
/// pid is left alone. Returns whether the key was removed. Each attempt is one transaction
/// comparing the whole value.
///
/// # Errors
/// The store's errors.
pub async fn finish_process(store: &TypedStore, key: &ProcKey, info: &ProcInfo) -> Result<bool> {
    for killed in [info.killed, !info.killed] {
        let recorded = ProcInfo {
            killed,
            ..info.clone()
        };
        let mut txn = store.txn();
        txn.when_value_equals(key, &recorded).delete(key);
        if txn.commit().await?.succeeded {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A request to terminate a process, as [`termination_requests`] delivers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminateRequest {
    /// The process's key.
    pub key: ProcKey,
    /// Its info, with `killed` set.
    pub info: ProcInfo,
    /// The revision the request was seen at.
    pub revision: i64,
}

/// The termination requests for one node's processes: those pending when it starts (a
/// listing at one revision), then each new one (a watch from the next revision). A request
/// is delivered at least once; processes whose info does not decode are left out.
pub struct TerminationRequests {
    pending: std::collections::VecDeque<TerminateRequest>,
    watch: TypedWatch<ProcKey, ProcInfo>,
}

impl std::fmt::Debug for TerminationRequests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminationRequests")
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

/// Starts following the termination requests for `node`'s processes.
///
/// # Errors
/// The store's errors.
pub async fn termination_requests(store: &TypedStore, node: Uuid) -> Result<TerminationRequests> {
    let dir = NodeProcsDir { node };
    let mut pending = std::collections::VecDeque::new();
    let mut opts = ListOptions::limit(256);
    let mut revision = None;
    loop {
        let page = store.list(&dir, opts.clone()).await?;
        revision.get_or_insert(page.revision);
        pending.extend(
            page.items
                .into_iter()
                .filter(|(_, info)| info.value.killed)
                .map(|(key, info)| TerminateRequest {
                    key,
                    revision: info.mod_revision,
                    info: info.value,
                }),
        );
        match page.next {
            Some(next) => opts = ListOptions::limit(256).after(next),
            None => break,
        }
    }
    let from = revision.unwrap_or_default() + 1;
    let watch = store.watch(&dir, Some(from)).await?;
    Ok(TerminationRequests { pending, watch })
}

impl TerminationRequests {
    /// The next request; `None` when the watch ended.
    ///
    /// # Errors
    /// The store's errors when the watch fails (for instance, its history was compacted:
    /// start again with [`termination_requests`]).
    pub async fn next(&mut self) -> Option<Result<TerminateRequest>> {
        loop {
            if let Some(request) = self.pending.pop_front() {
                return Some(Ok(request));
            }
            let batch = match self.watch.next().await? {
                Ok(batch) => batch,
                Err(e) => return Some(Err(e)),
            };
            for event in batch.events {
                if let TypedEvent::Put { key, value } = event
                    && value.value.killed
                {
                    self.pending.push_back(TerminateRequest {
                        key,
                        revision: value.mod_revision,
                        info: value.value,
                    });
                }
            }
        }
    }
}
