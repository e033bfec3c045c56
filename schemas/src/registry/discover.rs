//! Discovering a service's instances.

use super::error::Result;
use super::keys::{InstanceId, RegistryKeyspace, ServiceId};
use super::values::{InstanceConfig, InstanceData, InstanceStatus};
use keyplane_core::keyspace::{Codec, Json, Keyspace, Skipped, TypedStore};
use keyplane_core::raw::escape_bytes;
use keyplane_core::{Entry, Error, LeaseId, RangeOptions};
use std::collections::BTreeMap;

/// One registered instance of a service, as read from its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// The instance.
    pub id: InstanceId,
    /// Its `data` file.
    pub data: InstanceData,
    /// Its `status` file, if present.
    pub status: Option<InstanceStatus>,
    /// Its `config` file, if present.
    pub config: Option<InstanceConfig>,
    /// The lease its data file is attached to.
    pub lease: Option<LeaseId>,
}

/// A service's instances at a revision.
#[derive(Debug)]
pub struct Discovery {
    /// The instances, by address.
    pub instances: Vec<Instance>,
    /// Keys in the service's directory that are not registry files, or whose values do not
    /// decode: reported, not dropped.
    pub skipped: Vec<Skipped>,
    /// The revision of the first read: [`watch_instances`](super::watch_instances) from
    /// `revision + 1` misses no change.
    pub revision: i64,
}

/// The files found for one instance.
#[derive(Default)]
pub(crate) struct Parts {
    pub(crate) data: Option<(InstanceData, Option<LeaseId>)>,
    pub(crate) status: Option<InstanceStatus>,
    pub(crate) config: Option<InstanceConfig>,
}

/// The instances among `parts`: status and config files without a data file are not
/// instances.
pub(crate) fn instances(parts: BTreeMap<InstanceId, Parts>) -> Vec<Instance> {
    parts
        .into_iter()
        .filter_map(|(id, p)| {
            let (data, lease) = p.data?;
            Some(Instance {
                id,
                data,
                status: p.status,
                config: p.config,
                lease,
            })
        })
        .collect()
}

/// Lists the instances registered under `service`, reading its directory page by page.
/// Status and config files without a data file are not instances and are left out.
///
/// # Errors
/// [`RegistryError::Store`](super::RegistryError::Store).
pub async fn discover(store: &TypedStore, service: &ServiceId) -> Result<Discovery> {
    const PAGE: usize = 512;
    let prefix = keyplane_core::keyspace::Prefix::encode(&service.dir()).into_bytes();
    let mut parts: BTreeMap<InstanceId, Parts> = BTreeMap::new();
    let mut skipped = Vec::new();
    let mut opts = RangeOptions::prefix(&prefix).limit(PAGE);
    let mut revision = None;
    loop {
        let page = store.store().range(opts.clone()).await?;
        revision.get_or_insert(page.revision);
        for entry in &page.entries {
            if let Err(error) = collect(entry, &mut parts) {
                skipped.push(Skipped {
                    key: entry.key.clone(),
                    error,
                });
            }
        }
        match page.next {
            Some(next) => opts = RangeOptions::prefix(&prefix).limit(PAGE).after(next),
            None => break,
        }
    }
    Ok(Discovery {
        instances: instances(parts),
        skipped,
        revision: revision.unwrap_or_default(),
    })
}

fn collect(entry: &Entry, parts: &mut BTreeMap<InstanceId, Parts>) -> Result<(), Error> {
    let key = parse(&entry.key)?;
    let Some(id) = key.instance() else {
        return Ok(()); // the service's own info file
    };
    let part = parts.entry(id).or_default();
    match key {
        RegistryKeyspace::InstanceData(_) => {
            part.data = Some((decode::<InstanceData>(entry)?, entry.lease));
        }
        RegistryKeyspace::InstanceStatus(_) => part.status = Some(decode(entry)?),
        RegistryKeyspace::InstanceConfig(_) => part.config = Some(decode(entry)?),
        _ => {}
    }
    Ok(())
}

/// Parses a raw key of the registry.
pub(crate) fn parse(raw: &[u8]) -> Result<RegistryKeyspace, Error> {
    let text = std::str::from_utf8(raw).map_err(|e| {
        Error::invalid_key("the key is not UTF-8")
            .with_context("key", escape_bytes(raw))
            .with_source(e)
    })?;
    Ok(RegistryKeyspace::parse(text)?)
}

/// Decodes an entry's JSON value.
pub(crate) fn decode<T>(entry: &Entry) -> Result<T, Error>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    Json::<T>::default()
        .decode(&entry.value)
        .map_err(|e| e.with_context("key", escape_bytes(&entry.key)))
}
