//! Leases: persisted as wall-clock deadlines (they must survive restarts), expired by a
//! background task while the store is open, at open, and before every write transaction.

use crate::core::codec::{LEASE_SEQ_KEY, LeaseRecord};
use crate::core::tables::{LEASE_KEYS, LEASES, attached_keys};
use crate::core::{Core, Plan, Shared, now_ms, remove_lease};
use crate::error::RedbResult;
use keyplane_contract::{Error, LeaseGrant, LeaseId, LeaseInfo, Result};
use redb::ReadableTable;
use std::sync::{Arc, Weak};
use std::time::Duration;

fn ttl_ms(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 4)
}

pub(crate) async fn grant(core: &Core, ttl: Duration) -> Result<LeaseGrant> {
    let ttl = core.shared.caps.round_ttl(ttl)?;
    let grant = core
        .writer
        .write(move |s| {
            let id = s.w.lease_seq + 1;
            let record = LeaseRecord {
                ttl_ms: ttl_ms(ttl),
                deadline_ms: now_ms().saturating_add(ttl_ms(ttl)),
            };
            let mut plan = Plan::default();
            plan.leases.insert(id, Some(record));
            plan.meta.push((LEASE_SEQ_KEY, id));
            s.commit(plan)?;
            s.w.lease_seq = id;
            s.w.leases.insert(id, record);
            Ok(LeaseGrant {
                id: LeaseId(id),
                ttl,
            })
        })
        .await?;
    core.expiry_wake.notify_one();
    Ok(grant)
}

pub(crate) async fn keep_alive(core: &Core, id: LeaseId) -> Result<Duration> {
    let ttl = core
        .writer
        .write(move |s| {
            let mut record =
                s.w.leases
                    .get(id.0)
                    .ok_or_else(|| Error::lease_not_found(id))?;
            record.deadline_ms = now_ms().saturating_add(record.ttl_ms);
            let mut plan = Plan::default();
            plan.leases.insert(id.0, Some(record));
            s.commit(plan)?;
            s.w.leases.insert(id.0, record);
            Ok(Duration::from_millis(record.ttl_ms as u64))
        })
        .await?;
    core.expiry_wake.notify_one();
    Ok(ttl)
}

pub(crate) async fn revoke(core: &Core, id: LeaseId) -> Result<()> {
    core.writer
        .write(move |s| {
            if s.w.leases.get(id.0).is_none() {
                return Err(Error::lease_not_found(id));
            }
            remove_lease(s, id.0)
        })
        .await
}

pub(crate) fn time_to_live(shared: &Shared, id: LeaseId) -> Result<LeaseInfo> {
    let txn = shared.read("lease_time_to_live")?;
    let leases = txn.open_table(LEASES).redb("lease_time_to_live")?;
    let record = match leases.get(id.0).redb("lease_time_to_live")? {
        Some(bytes) => LeaseRecord::decode(bytes.value())?,
        None => return Err(Error::lease_not_found(id)),
    };
    let remaining = record.deadline_ms - now_ms();
    if remaining <= 0 {
        return Err(Error::lease_not_found(id));
    }
    let lease_keys = txn.open_table(LEASE_KEYS).redb("lease_time_to_live")?;
    Ok(LeaseInfo {
        id,
        granted_ttl: Duration::from_millis(record.ttl_ms as u64),
        remaining: Duration::from_millis(remaining as u64),
        keys: attached_keys(&lease_keys, id.0)?,
    })
}

/// The IDs of the leases whose deadline has not passed, ascending.
pub(crate) fn list(shared: &Shared) -> Result<Vec<LeaseId>> {
    let now = now_ms();
    let txn = shared.read("lease_list")?;
    let leases = txn.open_table(LEASES).redb("lease_list")?;
    let mut ids = Vec::new();
    for kv in leases.iter().redb("lease_list")? {
        let (id, record) = kv.redb("lease_list")?;
        if LeaseRecord::decode(record.value())?.deadline_ms > now {
            ids.push(LeaseId(id.value()));
        }
    }
    Ok(ids)
}

/// Starts the task that expires leases while the store is open. It holds the store weakly
/// and ends when the store is dropped.
pub(crate) fn spawn_expiry(core: &Arc<Core>, runtime: &tokio::runtime::Handle) {
    let weak: Weak<Core> = Arc::downgrade(core);
    let wake = core.expiry_wake.clone();
    runtime.spawn(async move {
        loop {
            // Queued while the store is held, awaited without it: the store closes when
            // its last handle goes, not after this task's write.
            let pending = {
                let Some(core) = weak.upgrade() else { return };
                // Every write transaction first expires the leases that are due.
                core.writer.submit(|s| Ok(s.w.leases.next_deadline()))
            };
            let next = match pending.await {
                Ok(next) => next,
                Err(_) if weak.strong_count() == 0 => return,
                Err(err) => {
                    tracing::warn!(error = %err, "redb store: expiring leases failed");
                    Some(now_ms() + 1000)
                }
            };
            match next {
                // Re-check at least every second: the deadlines follow the wall clock,
                // which may jump, while tokio's timer does not.
                Some(deadline) => {
                    let wait = (deadline - now_ms()).clamp(0, 1000) as u64;
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(wait)) => {}
                        () = wake.notified() => {}
                    }
                }
                None => wake.notified().await,
            }
        }
    });
}
