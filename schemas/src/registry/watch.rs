//! Watching a service's instances come and go.

use super::discover::{decode, parse};
use super::keys::{InstanceId, RegistryKeyspace, ServiceId};
use super::values::{InstanceConfig, InstanceData, InstanceStatus};
use futures::StreamExt;
use futures::stream::BoxStream;
use keyplane_core::Result;
use keyplane_core::keyspace::{Prefix, TypedStore};
use keyplane_core::{Error, Event, WatchBatch, WatchOptions};

/// A change to a service's instances.
#[derive(Debug)]
pub enum InstanceEvent {
    /// An instance registered: its data file was created.
    Up {
        /// The instance.
        instance: InstanceId,
        /// Its data.
        data: InstanceData,
    },
    /// A registered instance's data file was rewritten (a restarted instance took over its
    /// address, or it changed its data).
    Updated {
        /// The instance.
        instance: InstanceId,
        /// Its new data.
        data: InstanceData,
    },
    /// An instance's status file was written.
    Status {
        /// The instance.
        instance: InstanceId,
        /// Its new status.
        status: InstanceStatus,
    },
    /// An instance's config file was written.
    Config {
        /// The instance.
        instance: InstanceId,
        /// Its new configuration.
        config: InstanceConfig,
    },
    /// An instance went away: its data file was deleted, by deregistration, eviction or the
    /// expiry of its lease.
    Down {
        /// The instance.
        instance: InstanceId,
    },
    /// A change in the service's directory that is not a registry file, or whose value does
    /// not decode: reported, not dropped.
    Unreadable {
        /// The raw key.
        key: Vec<u8>,
        /// Why it could not be read.
        error: Error,
    },
}

/// The instance events of one transaction.
#[derive(Debug)]
pub struct InstanceBatch {
    /// The transaction's revision.
    pub revision: i64,
    /// Its instance events (never empty).
    pub events: Vec<InstanceEvent>,
}

/// A stream of instance batches with the guarantees of the store's watch: ordered, gap-free,
/// one batch per transaction; an error (such as `Compacted`) is the last item.
pub type InstanceWatch = BoxStream<'static, keyplane_core::Result<InstanceBatch>>;

/// Watches `service`'s instances from `start_revision` (inclusive; `None` for changes after
/// now). Start from [`Discovery::revision`](super::Discovery::revision) `+ 1` to follow a
/// discovery without a gap.
///
/// Deleting a status or config file alone, and changes to the service's own `info` file, are
/// not instance events; transactions with no instance event produce no batch.
///
/// # Errors
/// The store's errors, such as `Compacted` when
/// `start_revision` is no longer retained.
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use futures::StreamExt;
/// use keyplane_schemas::registry::*;
/// use std::{sync::Arc, time::Duration};
///
/// let store = keyplane_core::keyspace::TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let service = write_example(&store, &GroupName::new("Common")?, Duration::from_secs(10)).await?;
/// let found = discover(&store, &service.service).await?;
/// let mut watch = watch_instances(&store, &service.service, Some(found.revision + 1)).await?;
/// let mut registrations = service.registrations;
/// registrations.pop().unwrap().deregister().await?;
/// let batch = watch.next().await.unwrap()?;
/// assert!(matches!(&batch.events[..], [InstanceEvent::Down { instance }] if instance.addr.to_string() == "192.168.0.2:11080"));
/// # Ok(()) }
/// ```
pub async fn watch_instances(
    store: &TypedStore,
    service: &ServiceId,
    start_revision: Option<i64>,
) -> Result<InstanceWatch> {
    let mut opts = WatchOptions::prefix(service.dir().encode());
    opts.start_revision = start_revision;
    let stream = store.store().watch(opts).await?;
    Ok(stream
        .filter_map(|item| async move {
            match item {
                Ok(batch) => typed(batch).map(Ok),
                Err(e) => Some(Err(e)),
            }
        })
        .boxed())
}

fn typed(batch: WatchBatch) -> Option<InstanceBatch> {
    let events: Vec<InstanceEvent> = batch.events.iter().filter_map(instance_event).collect();
    (!events.is_empty()).then_some(InstanceBatch {
        revision: batch.revision,
        events,
    })
}

fn instance_event(event: &Event) -> Option<InstanceEvent> {
    let unreadable = |error: Error| InstanceEvent::Unreadable {
        key: event.key().to_vec(),
        error,
    };
    let key = match parse(event.key()) {
        Ok(key) => key,
        Err(error) => return Some(unreadable(error)),
    };
    let instance = key.instance()?;
    let typed = match (event, key) {
        (Event::Put { entry, .. }, RegistryKeyspace::InstanceData(_)) => {
            decode(entry).map(|data| match entry.version {
                1 => InstanceEvent::Up { instance, data },
                _ => InstanceEvent::Updated { instance, data },
            })
        }
        (Event::Put { entry, .. }, RegistryKeyspace::InstanceStatus(_)) => {
            decode(entry).map(|status| InstanceEvent::Status { instance, status })
        }
        (Event::Put { entry, .. }, RegistryKeyspace::InstanceConfig(_)) => {
            decode(entry).map(|config| InstanceEvent::Config { instance, config })
        }
        (Event::Delete { .. }, RegistryKeyspace::InstanceData(_)) => {
            Ok(InstanceEvent::Down { instance })
        }
        _ => return None,
    };
    Some(typed.unwrap_or_else(unreadable))
}
