//! The service registry keyspace (`/registry/`, etcd).
//!
//! ```text
//! /registry/                                       the registry's root directory
//! /registry/{group}/                               a service group
//! /registry/{group}/info                           GroupInfoKey        Json<GroupInfo>
//! /registry/{group}/{service}/                     a service
//! /registry/{group}/{service}/info                 ServiceInfoKey      Json<ServiceInfo>
//! /registry/{group}/{service}/{addr}/              an instance (its gRPC address)
//! /registry/{group}/{service}/{addr}/data          InstanceDataKey     Json<InstanceData>
//! /registry/{group}/{service}/{addr}/status        InstanceStatusKey   Json<InstanceStatus>
//! /registry/{group}/{service}/{addr}/config        InstanceConfigKey   Json<InstanceConfig>
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
//! instance directory `{addr}` is the instance's gRPC address, a
//! [`HostPort`](keyplane_core::keyspace::HostPort) written as the document writes
//! `${ip}:${port}`:
//! - IPv4: `192.168.0.1:11080`, dotted decimal (the document's form, byte for byte);
//! - IPv6: `[2001:db8::1]:11080`, in brackets and in its RFC 5952 canonical form (lowercase
//!   hex, longest zero run as `::`);
//! - DNS: `api.internal:11080`, lowercase labels of `a-z 0-9 -`.
//!
//! The port is 1-65535 in canonical decimal. Any other spelling of an address (uppercase
//! hex, leading zeros, `[::ffff:…]` variants not in canonical form) is refused, so one
//! address has one key.
//!
//! Operations: [`define_group`], [`define_service`], [`register`] (a [`Registration`] kept
//! alive by a lease keeper; [`Registration::deregister`]; [`register_with`] and
//! [`RegisterOptions::keep_config`] for a config that outlives the lease), [`evict_instance`], [`discover`],
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
pub use error::RegistryError;
pub use example::{RegistryExample, write_example};
pub use keys::{
    GroupDir, GroupInfoKey, InstanceConfigKey, InstanceDataKey, InstanceDir, InstanceId,
    InstanceStatusKey, RegistryKeyspace, RegistryRoot, RegistryValue, ServiceDir, ServiceId,
    ServiceInfoKey,
};
pub use live::{LiveRegistry, RegistryView};
pub use register::{NewInstance, RegisterOptions, Registration, register, register_with};
pub use segments::{GroupName, INFO, ServiceName};
pub use values::{
    GroupInfo, InstanceConfig, InstanceData, InstanceState, InstanceStatus, MAX_WEIGHT, ServiceInfo,
};
pub use watch::{InstanceBatch, InstanceEvent, InstanceWatch, watch_instances};

use keyplane_core::keyspace::Schema;

/// The registry's catalog entry.
pub fn schema() -> Schema {
    Schema::of::<RegistryKeyspace>("registry")
        .with_store("etcd")
        .with_summary(
            "service registry: groups, services and lease-bound instances under /registry/",
        )
}
