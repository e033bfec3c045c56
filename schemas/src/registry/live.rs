//! [`LiveRegistry`]: service discovery that costs no round trip. Every key under
//! `/registry/` lives in a [`LiveReader`] kept current by a watch; a service's instances, with
//! their status and config, are read from one immutable view.

use super::discover::{Instance, Parts, instances};
use super::keys::{InstanceId, RegistryKeyspace, RegistryValue, ServiceId};
use super::values::ServiceInfo;
use crate::{LiveKeyspace, LiveReader, LiveView};
use keyplane_core::keyspace::Prefix;
use std::collections::BTreeMap;

impl LiveKeyspace for RegistryKeyspace {}

/// Service discovery on a mirror of `/registry/`: the same instances
/// [`discover`](super::discover) reads from the store, without a round trip. An instance
/// whose lease expires (its files are deleted) leaves the view with the transaction that
/// deleted it, and a service left without instances leaves [`RegistryView::services`].
/// Cheap to clone.
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use keyplane_schemas::registry::*;
/// use std::{sync::Arc, time::Duration};
///
/// let store = keyplane_core::keyspace::TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let live = LiveRegistry::start(&store).await?;
/// let group = GroupName::new("Common")?;
/// let example = write_example(&store, &group, Duration::from_secs(30)).await?;
/// let view = live.wait_for(store.revision().await?).await?;
/// assert_eq!(view.instances(&example.service).len(), 2);
/// assert!(view.services().contains(&example.service));
/// # Ok(()) }
/// ```
pub type LiveRegistry = LiveReader<RegistryKeyspace>;

/// One consistent view of the registry at [`revision`](LiveView::revision).
pub type RegistryView = LiveView<RegistryKeyspace>;

impl LiveView<RegistryKeyspace> {
    /// The registered instances of `service`, by address, as [`discover`](super::discover)
    /// returns them: status and config files without a data file are not instances.
    pub fn instances(&self, service: &ServiceId) -> Vec<Instance> {
        let prefix = service.dir().encode().into_bytes();
        let mut parts: BTreeMap<InstanceId, Parts> = BTreeMap::new();
        for (key, value) in self.entries(&prefix) {
            let Some(id) = key.instance() else { continue };
            let part = parts.entry(id).or_default();
            match &value.value {
                RegistryValue::InstanceData(data) => part.data = Some((data.clone(), value.lease)),
                RegistryValue::InstanceStatus(status) => part.status = Some(*status),
                RegistryValue::InstanceConfig(config) => part.config = Some(config.clone()),
                _ => {}
            }
        }
        instances(parts)
    }

    /// The services with at least one registered instance.
    pub fn services(&self) -> Vec<ServiceId> {
        let mut services: Vec<ServiceId> = self
            .snapshot()
            .iter()
            .filter_map(|(key, _)| match key {
                RegistryKeyspace::InstanceData(_) => key.instance().map(|i| i.service),
                _ => None,
            })
            .collect();
        services.dedup();
        services
    }

    /// The service's `info`, when it is defined.
    pub fn service_info(&self, service: &ServiceId) -> Option<ServiceInfo> {
        match self.value(&service.info_key())? {
            RegistryValue::ServiceInfo(info) => Some(info.clone()),
            _ => None,
        }
    }
}
