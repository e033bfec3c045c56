//! The service registry keyspace (`/registry/`, etcd).
//!
//! ```text
//! /registry/                                       the registry's root directory
//! /registry/{group}/                               a service group
//! /registry/{group}/info                           GroupInfoKey        Json<GroupInfo>
//! /registry/{group}/{service}/                     a service
//! /registry/{group}/{service}/info                 ServiceInfoKey      Json<ServiceInfo>
//! /registry/{group}/{service}/{ip}:{port}/         an instance (its gRPC address)
//! /registry/{group}/{service}/{ip}:{port}/data     InstanceDataKey     Json<InstanceData>
//! /registry/{group}/{service}/{ip}:{port}/status   InstanceStatusKey   Json<InstanceStatus>
//! /registry/{group}/{service}/{ip}:{port}/config   InstanceConfigKey   Json<InstanceConfig>
//! ```
//!
//! The document's five rules hold by construction: every key starts with `/` (1); directories
//! are [`Prefix`](keyplane_core::keyspace::Prefix) types and end with `/` (2); files do not (3); no
//! path is both a file and a directory (4), because a service may not be called `info`
//! ([`ServiceName`]) and an instance directory always holds a `:`; everything lives under
//! `/registry/` (5). The schema checker and the invariant harness confirm it without any
//! declared exception.
//!
//! Segments: groups and services are `[a-zA-Z0-9._-]`, 1-64 bytes, stored verbatim; the
//! instance directory is an IPv4 address and a gRPC port (1-65535).
//!
//! Operations: [`define_group`], [`define_service`], [`register`] (a [`Registration`] kept
//! alive by a lease keeper; [`Registration::deregister`]), [`evict_instance`], [`discover`],
//! [`watch_instances`] ([`InstanceEvent`]: up, updated, status, config, down), and
//! [`write_example`] for a demo dataset.

mod admin;
mod discover;
mod error;
mod example;
mod keys;
mod live;
mod register;
mod segments;
mod values;
mod watch;

pub use admin::{define_group, define_service, evict_instance};
pub use discover::{Discovery, Instance, discover};
pub use error::{RegistryError, Result};
pub use example::{RegistryExample, write_example};
pub use keys::{
    GroupDir, GroupInfoKey, InstanceConfigKey, InstanceDataKey, InstanceDir, InstanceId,
    InstanceStatusKey, RegistryKeyspace, RegistryRoot, ServiceDir, ServiceId, ServiceInfoKey,
};
pub use live::{LiveRegistry, RegistryValue, RegistryView};
pub use register::{NewInstance, Registration, register};
pub use segments::{GroupName, GrpcPort, INFO, ServiceName};
pub use values::{
    GroupInfo, InstanceConfig, InstanceData, InstanceState, InstanceStatus, MAX_WEIGHT, ServiceInfo,
};
pub use watch::{InstanceBatch, InstanceEvent, InstanceWatch, watch_instances};

use crate::catalog::Schema;

/// The registry's catalog entry.
pub fn schema() -> Schema {
    Schema::of::<RegistryKeyspace>(
        "registry",
        "etcd",
        "service registry: groups, services and lease-bound instances under /registry/",
    )
}
