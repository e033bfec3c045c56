//! Defining groups and services: their `info` files.

use super::error::RegistryError;
use super::keys::{GroupInfoKey, InstanceId, ServiceId};
use super::segments::GroupName;
use super::values::{GroupInfo, ServiceInfo};
use keyplane_core::Result;
use keyplane_core::keyspace::TypedStore;

/// Writes (or rewrites) a group's info file, `/registry/{group}/info`.
///
/// # Errors
/// The store's errors.
pub async fn define_group(store: &TypedStore, group: &GroupName, info: &GroupInfo) -> Result<i64> {
    let key = GroupInfoKey {
        group: group.clone(),
    };
    store.put(&key, info).await
}

/// Writes (or rewrites) a service's info file, `/registry/{group}/{service}/info`, in one
/// transaction that requires the group's info file.
///
/// # Errors
/// [`RegistryError::UnknownGroup`] when the group is not defined (nothing is written);
/// The store's errors.
pub async fn define_service(
    store: &TypedStore,
    service: &ServiceId,
    info: &ServiceInfo,
) -> Result<i64> {
    let group = GroupInfoKey {
        group: service.group.clone(),
    };
    let mut txn = store.txn();
    txn.when_exists(&group).put(&service.info_key(), info);
    let outcome = txn.commit().await?;
    if !outcome.succeeded {
        return Err(RegistryError::UnknownGroup(service.group.clone()).into());
    }
    Ok(outcome.revision)
}

/// Removes an instance's files (data, status, config) whoever registered it, in one delete
/// of its directory: the way an operator evicts an instance that cannot deregister itself.
/// Watchers see the instance go down. Returns whether anything was removed.
///
/// # Errors
/// The store's errors.
pub async fn evict_instance(store: &TypedStore, instance: &InstanceId) -> Result<bool> {
    Ok(store.delete_prefix(&instance.dir()).await?.deleted > 0)
}
