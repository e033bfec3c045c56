//! The system-information flow: the scheduler turns a node's switch on, the node answers
//! with its figures under a 5-minute lease, the scheduler collects them and deletes the
//! switch.

use super::error::CronixError;
use super::keys::{SystemInfoKey, SystemSwitchKey};
use super::values::SystemInfo;
use keyplane_core::LeaseId;
use keyplane_core::Result;
use keyplane_core::keyspace::TypedStore;
use std::time::Duration;
use uuid::Uuid;

/// The lease of a node's system information: it is deleted 5 minutes after it is written,
/// so that it never goes stale.
pub const SYSTEM_INFO_TTL: Duration = Duration::from_secs(300);

/// The value the scheduler writes into a switch: the flag that asks for a report.
pub const SWITCH_ON: &str = "1";

/// Asks `node` for its system information: writes `/Cronix/system/switch/<node>`.
///
/// # Errors
/// The store's errors.
pub async fn request_system_info(store: &TypedStore, node: Uuid) -> Result<i64> {
    store
        .put(&SystemSwitchKey { node }, &SWITCH_ON.to_owned())
        .await
}

/// The node's answer: writes `/Cronix/system/get/<node>` attached to a new lease of
/// [`SYSTEM_INFO_TTL`], in one transaction that requires the switch to be on. Returns the
/// lease.
///
/// # Errors
/// [`CronixError::NoRequest`] when no switch is on for the node (nothing is written, the
/// lease is revoked); the store's errors.
pub async fn publish_system_info(
    store: &TypedStore,
    node: Uuid,
    info: &SystemInfo,
) -> Result<LeaseId> {
    let lease = store.store().lease_grant(SYSTEM_INFO_TTL).await?.id;
    let mut txn = store.txn();
    txn.when_exists(&SystemSwitchKey { node })
        .put_leased(&SystemInfoKey { node }, info, lease);
    match txn.commit().await {
        Ok(outcome) if outcome.succeeded => Ok(lease),
        other => {
            let _ = store.store().lease_revoke(lease).await;
            match other {
                Ok(_) => Err(CronixError::NoRequest(node).into()),
                Err(e) => Err(e),
            }
        }
    }
}

/// The scheduler's collection: in one transaction, when the node's information is there,
/// reads it and deletes the switch. `None` while the node has not answered (the switch
/// stays on).
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use keyplane_schemas::cronix::*;
/// use std::sync::Arc;
///
/// let store = keyplane_core::keyspace::TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let node = uuid::Uuid::new_v4();
/// request_system_info(&store, node).await?; // the scheduler
/// let info = SystemInfo {
///     cpu: CpuInfo { cores: 4, usage_percent: 3.5 },
///     memory: Usage { total_bytes: 8 << 30, used_bytes: 1 << 30 },
///     disk: Usage { total_bytes: 100 << 30, used_bytes: 20 << 30 },
///     collected_at: 0,
/// };
/// publish_system_info(&store, node, &info).await?; // the node, under a 5-minute lease
/// assert_eq!(collect_system_info(&store, node).await?, Some(info)); // switch deleted
/// assert!(!store.exists(&SystemSwitchKey { node }).await?);
/// # Ok(()) }
/// ```
///
/// # Errors
/// The store's errors.
pub async fn collect_system_info(store: &TypedStore, node: Uuid) -> Result<Option<SystemInfo>> {
    let info_key = SystemInfoKey { node };
    let mut txn = store.txn();
    txn.when_exists(&info_key);
    let read = txn.get(&info_key);
    txn.delete(&SystemSwitchKey { node });
    let outcome = txn.commit().await?;
    if !outcome.succeeded {
        return Ok(None);
    }
    Ok(outcome.read(&read)?.map(|v| v.value))
}

/// The system information a node last reported, if its lease has not expired.
///
/// # Errors
/// The store's errors.
pub async fn system_info(store: &TypedStore, node: Uuid) -> Result<Option<SystemInfo>> {
    store.get(&SystemInfoKey { node }).await
}
