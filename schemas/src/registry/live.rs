//! [`LiveRegistry`]: service discovery that costs no round trip. Every key under
//! `/registry/` lives in a [`Mirror`] kept current by a watch; a service's instances, with
//! their status and config, are read from one immutable view.

use super::discover::{Instance, Parts, instances};
use super::error::Result;
use super::keys::{InstanceId, RegistryKeyspace, ServiceId};
use super::values::{GroupInfo, InstanceConfig, InstanceData, InstanceStatus, ServiceInfo};
use keyplane_core::keyspace::{Prefix, TypedStore};
use keyplane_core::mirror::{Mirror, MirrorHealth, MirrorSnapshot};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The decoded value of a registry file.
#[derive(Debug, Clone, PartialEq)]
pub enum RegistryValue {
    /// A group's `info`.
    Group(GroupInfo),
    /// A service's `info`.
    Service(ServiceInfo),
    /// An instance's `data`.
    Data(InstanceData),
    /// An instance's `status`.
    Status(InstanceStatus),
    /// An instance's `config`.
    Config(InstanceConfig),
}

fn decode(key: &RegistryKeyspace, bytes: &[u8]) -> keyplane_core::Result<RegistryValue> {
    use super::keys::{
        GroupInfoKey, InstanceConfigKey, InstanceDataKey, InstanceStatusKey, ServiceInfoKey,
    };
    use crate::decode_as;
    Ok(match key {
        RegistryKeyspace::GroupInfo(_) => RegistryValue::Group(decode_as::<GroupInfoKey>(bytes)?),
        RegistryKeyspace::ServiceInfo(_) => {
            RegistryValue::Service(decode_as::<ServiceInfoKey>(bytes)?)
        }
        RegistryKeyspace::InstanceData(_) => {
            RegistryValue::Data(decode_as::<InstanceDataKey>(bytes)?)
        }
        RegistryKeyspace::InstanceStatus(_) => {
            RegistryValue::Status(decode_as::<InstanceStatusKey>(bytes)?)
        }
        RegistryKeyspace::InstanceConfig(_) => {
            RegistryValue::Config(decode_as::<InstanceConfigKey>(bytes)?)
        }
    })
}

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
#[derive(Debug, Clone)]
pub struct LiveRegistry {
    mirror: Mirror<RegistryKeyspace, RegistryValue>,
}

impl LiveRegistry {
    /// Mirrors `/registry/` through `store`.
    ///
    /// # Errors
    /// [`RegistryError::Store`](super::RegistryError::Store): the first listing's or the
    /// watch's errors.
    pub async fn start(store: &TypedStore) -> Result<Self> {
        let mirror = store
            .mirror_keyspace::<RegistryKeyspace>()
            .decode_with(decode)
            .start()
            .await?;
        Ok(LiveRegistry { mirror })
    }

    /// The current view.
    pub fn view(&self) -> RegistryView {
        RegistryView(self.mirror.snapshot())
    }

    /// The view once it reflects `revision`.
    ///
    /// # Errors
    /// [`RegistryError::Store`](super::RegistryError::Store) when the mirror has stopped.
    pub async fn wait_for(&self, revision: i64) -> Result<RegistryView> {
        Ok(RegistryView(self.mirror.wait_for(revision).await?))
    }

    /// The mirror's health.
    pub fn health(&self) -> MirrorHealth {
        self.mirror.health()
    }

    /// The mirror underneath, for subscriptions.
    pub fn mirror(&self) -> &Mirror<RegistryKeyspace, RegistryValue> {
        &self.mirror
    }
}

/// One consistent view of the registry at [`revision`](Self::revision).
#[derive(Debug, Clone)]
pub struct RegistryView(Arc<MirrorSnapshot<RegistryKeyspace, RegistryValue>>);

impl RegistryView {
    /// The store revision the view reflects.
    pub fn revision(&self) -> i64 {
        self.0.revision()
    }

    /// The registered instances of `service`, by address, as [`discover`](super::discover)
    /// returns them: status and config files without a data file are not instances.
    pub fn instances(&self, service: &ServiceId) -> Vec<Instance> {
        let prefix = service.dir().encode().into_bytes();
        let mut parts: BTreeMap<InstanceId, Parts> = BTreeMap::new();
        for (key, value) in self.0.iter_prefix(&prefix) {
            let Some(id) = key.instance() else { continue };
            let part = parts.entry(id).or_default();
            match &value.value {
                RegistryValue::Data(data) => part.data = Some((data.clone(), value.lease)),
                RegistryValue::Status(status) => part.status = Some(*status),
                RegistryValue::Config(config) => part.config = Some(config.clone()),
                _ => {}
            }
        }
        instances(parts)
    }

    /// The services with at least one registered instance.
    pub fn services(&self) -> Vec<ServiceId> {
        let mut services: Vec<ServiceId> = self
            .0
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
        let key = keyplane_core::keyspace::Key::encode(&service.info_key());
        match &self.0.get_raw(key.as_bytes())?.1.value {
            RegistryValue::Service(info) => Some(info.clone()),
            _ => None,
        }
    }
}
