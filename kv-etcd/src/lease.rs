//! Leases: etcd leases, TTLs in whole seconds (rounded up).

use crate::core::Core;
use etcd_client::LeaseTimeToLiveOptions;
use keyplane_contract::{Error, ErrorKind, LeaseGrant, LeaseId, LeaseInfo, Result};
use std::time::Duration;

fn secs(s: i64) -> Duration {
    Duration::from_secs(u64::try_from(s).unwrap_or(0))
}

pub(crate) async fn grant(core: &Core, ttl: Duration) -> Result<LeaseGrant> {
    let ttl = core.caps.round_ttl(ttl)?;
    let ttl = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX);
    let resp = core
        .call("lease_grant", false, || {
            let mut lease = core.lease.clone();
            async move { lease.grant(ttl, None).await }
        })
        .await?;
    if !resp.error().is_empty() {
        return Err(Error::new(ErrorKind::Backend, resp.error().to_owned()));
    }
    // etcd raises TTLs below its minimum (about 2 s with default timing): report what it gave.
    Ok(LeaseGrant {
        id: LeaseId(resp.id()),
        ttl: secs(resp.ttl()),
    })
}

pub(crate) async fn keep_alive(core: &Core, id: LeaseId) -> Result<Duration> {
    let ttl = core
        .call("lease_keep_alive", true, || {
            let mut lease = core.lease.clone();
            async move {
                // One renewal over a short-lived keep-alive stream; the first response proves
                // the lease exists (etcd-client fails with "lease not found" otherwise).
                let (mut keeper, mut stream) = lease.keep_alive(id.0).await?;
                keeper.keep_alive().await?;
                Ok(stream.message().await?.map(|r| r.ttl()))
            }
        })
        .await?;
    match ttl {
        Some(ttl) if ttl > 0 => Ok(secs(ttl)),
        _ => Err(Error::lease_not_found(id)),
    }
}

pub(crate) async fn revoke(core: &Core, id: LeaseId) -> Result<()> {
    core.call("lease_revoke", false, || {
        let mut lease = core.lease.clone();
        async move { lease.revoke(id.0).await }
    })
    .await
    .map_err(|e| match e.kind() {
        ErrorKind::LeaseNotFound => Error::lease_not_found(id),
        _ => e,
    })?;
    Ok(())
}

pub(crate) async fn time_to_live(core: &Core, id: LeaseId) -> Result<LeaseInfo> {
    let resp = core
        .call("lease_time_to_live", true, || {
            let mut lease = core.lease.clone();
            async move {
                lease
                    .time_to_live(id.0, Some(LeaseTimeToLiveOptions::new().with_keys()))
                    .await
            }
        })
        .await?;
    // etcd answers -1 for a lease it does not know.
    if resp.ttl() < 0 {
        return Err(Error::lease_not_found(id));
    }
    let ns = &core.ns;
    let mut keys: Vec<Vec<u8>> = resp
        .keys()
        .iter()
        .filter_map(|k| ns.strip(k))
        .filter(|k| k.first().is_some_and(|b| *b != 0))
        .map(<[u8]>::to_vec)
        .collect();
    keys.sort();
    Ok(LeaseInfo {
        id,
        granted_ttl: secs(resp.granted_ttl()),
        remaining: secs(resp.ttl()),
        keys,
    })
}

/// Every lease etcd holds, ascending (etcd answers in no particular order). Leases are not
/// namespaced on etcd: a store under a namespace lists the server's leases too, as it can
/// revoke any of them.
pub(crate) async fn list(core: &Core) -> Result<Vec<LeaseId>> {
    let resp = core
        .call("lease_list", true, || {
            let mut lease = core.lease.clone();
            async move { lease.leases().await }
        })
        .await?;
    let mut ids: Vec<LeaseId> = resp.leases().iter().map(|l| LeaseId(l.id())).collect();
    ids.sort_unstable();
    Ok(ids)
}
