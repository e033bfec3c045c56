//! Leases: a deadline sorted set on the server's clock, swept by every client.

use crate::core::Core;
use crate::core::decode::{array, byte_list, corrupted, int};
use keyplane_contract::{LeaseGrant, LeaseId, LeaseInfo, Result};
use redis::Value;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Notify;

/// The longest the sweeper sleeps, so that leases granted by other clients expire on time
/// even when this client granted none.
const MAX_SWEEP_INTERVAL: Duration = Duration::from_millis(200);

pub(crate) async fn grant(core: &Core, ttl: Duration) -> Result<LeaseGrant> {
    let ttl = core.caps.round_ttl(ttl)?;
    let ms = ttl.as_millis().to_string();
    let id: i64 = core
        .run_write(&core.scripts.lease_grant, &[ms.as_bytes()], "lease_grant")
        .await?;
    core.sweeper_wake.notify_one();
    Ok(LeaseGrant {
        id: LeaseId(id),
        ttl,
    })
}

pub(crate) async fn keep_alive(core: &Core, id: LeaseId) -> Result<Duration> {
    let id = id.0.to_string();
    let ms: u64 = core
        .run_write(
            &core.scripts.lease_keep_alive,
            &[id.as_bytes()],
            "lease_keep_alive",
        )
        .await?;
    Ok(Duration::from_millis(ms))
}

pub(crate) async fn revoke(core: &Core, id: LeaseId) -> Result<()> {
    let id = id.0.to_string();
    let _: i64 = core
        .run_write(&core.scripts.lease_revoke, &[id.as_bytes()], "lease_revoke")
        .await?;
    Ok(())
}

pub(crate) async fn time_to_live(core: &Core, id: LeaseId) -> Result<LeaseInfo> {
    let id_arg = id.0.to_string();
    let reply: Value = core
        .run_write(
            &core.scripts.lease_time_to_live,
            &[id_arg.as_bytes()],
            "lease_time_to_live",
        )
        .await?;
    let mut parts = array(reply)?.into_iter();
    let (Some(granted), Some(remaining), Some(keys)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(corrupted(
            "a lease reply has a TTL, a remaining time and keys",
        ));
    };
    let mut keys = byte_list(keys)?;
    keys.sort();
    Ok(LeaseInfo {
        id,
        granted_ttl: Duration::from_millis(int(granted)?.max(0) as u64),
        remaining: Duration::from_millis(int(remaining)?.max(0) as u64),
        keys,
    })
}

/// The IDs of the live leases, ascending (the server lists them by deadline).
pub(crate) async fn list(core: &Core) -> Result<Vec<LeaseId>> {
    let reply: Value = core
        .run_write(&core.scripts.lease_list, &[], "lease_list")
        .await?;
    let mut ids = byte_list(reply)?
        .into_iter()
        .map(|id| {
            std::str::from_utf8(&id)
                .ok()
                .and_then(|id| id.parse().ok())
                .map(LeaseId)
                .ok_or_else(|| corrupted("a lease id is not a number"))
        })
        .collect::<Result<Vec<_>>>()?;
    ids.sort_unstable();
    Ok(ids)
}

/// Expires due leases; returns how long until the next deadline, if any lease is live.
async fn sweep(core: &Core) -> Result<Option<Duration>> {
    let reply: Value = core
        .run_write(&core.scripts.lease_sweep, &[], "lease_sweep")
        .await?;
    let mut parts = array(reply)?.into_iter();
    let next = parts.nth(1).map(int).transpose()?.unwrap_or(-1);
    Ok((next >= 0).then(|| Duration::from_millis(next as u64)))
}

/// The background task of a store: sweeps expired leases until the store is dropped. It
/// holds only a weak reference, so it never keeps the store alive.
pub(crate) async fn sweep_loop(core: Weak<Core>, wake: Arc<Notify>) {
    loop {
        let delay = {
            let Some(core) = core.upgrade() else {
                return;
            };
            match sweep(&core).await {
                Ok(next) => next.map_or(MAX_SWEEP_INTERVAL, |d| d.min(MAX_SWEEP_INTERVAL)),
                Err(err) => {
                    tracing::debug!(%err, "lease sweep failed; retrying");
                    MAX_SWEEP_INTERVAL
                }
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(delay.max(Duration::from_millis(1))) => {}
            _ = wake.notified() => {}
        }
    }
}
