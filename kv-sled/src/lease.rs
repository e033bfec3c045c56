//! Leases: persisted as wall-clock deadlines (they must survive restarts), expired by a
//! background task while the store is open, at open, and before every write.

use crate::core::codec::{LEASE_SEQ_KEY, LeaseRecord, be, lease_key, read_be};
use crate::core::{Core, Plan, attached_keys, now_ms, remove};
use crate::error::map_error;
use keyplane_contract::{Error, LeaseGrant, LeaseId, LeaseInfo, Result};
use std::sync::{Arc, Weak};
use std::time::Duration;

fn ttl_ms(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 4)
}

pub(crate) async fn grant(inner: &Core, ttl: Duration) -> Result<LeaseGrant> {
    let ttl = inner.caps.round_ttl(ttl)?;
    let grant = inner
        .write(|inner, w, commits| {
            let id = w.lease_seq + 1;
            let record = LeaseRecord {
                ttl_ms: ttl_ms(ttl),
                deadline_ms: now_ms().saturating_add(ttl_ms(ttl)),
            };
            let mut plan = Plan::default();
            plan.leases.insert(lease_key(id), Some(record.encode()));
            plan.meta.push((LEASE_SEQ_KEY, be(id).to_vec()));
            inner.commit(w, plan, commits)?;
            w.lease_seq = id;
            w.leases.insert(id, record);
            Ok(LeaseGrant {
                id: LeaseId(id),
                ttl,
            })
        })
        .await?;
    inner.expiry_wake.notify_one();
    Ok(grant)
}

pub(crate) async fn keep_alive(inner: &Core, id: LeaseId) -> Result<Duration> {
    let ttl = inner
        .write(|inner, w, commits| {
            let mut record = w
                .leases
                .get(id.0)
                .ok_or_else(|| Error::lease_not_found(id))?;
            record.deadline_ms = now_ms().saturating_add(record.ttl_ms);
            let mut plan = Plan::default();
            plan.leases.insert(lease_key(id.0), Some(record.encode()));
            inner.commit(w, plan, commits)?;
            w.leases.insert(id.0, record);
            Ok(Duration::from_millis(record.ttl_ms as u64))
        })
        .await?;
    inner.expiry_wake.notify_one();
    Ok(ttl)
}

pub(crate) async fn revoke(inner: &Core, id: LeaseId) -> Result<()> {
    inner
        .write(|inner, w, commits| {
            if w.leases.get(id.0).is_none() {
                return Err(Error::lease_not_found(id));
            }
            remove(inner, w, commits, id.0)
        })
        .await
}

pub(crate) fn time_to_live(inner: &Core, id: LeaseId) -> Result<LeaseInfo> {
    let t = &inner.trees;
    let record = t
        .leases
        .get(lease_key(id.0))
        .map_err(|e| map_error("lease_time_to_live", e))?
        .ok_or_else(|| Error::lease_not_found(id))
        .and_then(|bytes| LeaseRecord::decode(&bytes))?;
    let remaining = record.deadline_ms - now_ms();
    if remaining <= 0 {
        return Err(Error::lease_not_found(id));
    }
    Ok(LeaseInfo {
        id,
        granted_ttl: Duration::from_millis(record.ttl_ms as u64),
        remaining: Duration::from_millis(remaining as u64),
        keys: attached_keys(inner, id.0)?,
    })
}

/// The IDs of the leases whose deadline has not passed, ascending (the lease records' keys
/// are the big-endian IDs, which sort as the IDs do: they are positive).
pub(crate) fn list(inner: &Core) -> Result<Vec<LeaseId>> {
    let now = now_ms();
    let mut ids = Vec::new();
    for kv in inner.trees.leases.scan_prefix(b"L") {
        let (key, value) = kv.map_err(|e| map_error("lease_list", e))?;
        if LeaseRecord::decode(&value)?.deadline_ms > now {
            ids.push(LeaseId(read_be(&key[1..])?));
        }
    }
    Ok(ids)
}

/// Starts the task that expires leases while the store is open. It holds the store weakly
/// and ends when the store is dropped.
pub(crate) fn spawn_expiry(inner: &Arc<Core>, runtime: &tokio::runtime::Handle) {
    let weak: Weak<Core> = Arc::downgrade(inner);
    let wake = inner.expiry_wake.clone();
    runtime.spawn(async move {
        loop {
            let next = {
                let Some(inner) = weak.upgrade() else { return };
                if let Err(err) = inner.write_unsettled(|_, _, _| Ok(())).await {
                    tracing::warn!(error = %err, "sled store: expiring leases failed");
                }
                inner.lock_writer().leases.next_deadline()
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
