//! Derived example schemas of the seed layouts, shared by the derive tests: the tenant
//! configuration keyspace (`jxt/`), the service registry (`/registry/`) and the three-layer
//! Redis model (`nxc:`, hash-tagged by realm).

#![allow(dead_code)]

use keyplane_core::keyspace::{Empty, Json, Key, Keyspace, Prefix, Text};
use std::net::Ipv4Addr;

keyplane_core::text_segment!(
    /// A lowercase code: service codes, groups, realms, providers.
    pub Code, charset = "[a-z0-9_-]", max_len = 63, policy = Reject
);
keyplane_core::text_segment!(
    /// A host name or FTP user, percent-escaped like Go's `url.PathEscape`.
    pub Name, max_len = 253, policy = Escape
);

pub fn code(s: &str) -> Code {
    Code::new(s).unwrap()
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/meta", value = Json<serde_json::Value>)]
pub struct TenantMetaKey {
    pub id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/database/{service}", value = Json<serde_json::Value>)]
pub struct TenantDatabaseKey {
    pub id: u64,
    pub service: Code,
}

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/database/", key = TenantDatabaseKey)]
pub struct TenantDatabases {
    pub id: u64,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/{id}/ftp/{username}", value = Json<serde_json::Value>)]
pub struct FtpUserKey {
    pub id: u64,
    pub username: Name,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/tenants/_index/host/{host}", value = Text)]
pub struct HostIndexKey {
    pub host: Name,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "jxt/platform/configs/{key}", value = Text)]
pub struct PlatformConfigKey {
    pub key: Code,
}

/// The tenant configuration schema.
#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(naming = "[a-z0-9_-]")]
pub enum TenantSchema {
    Meta(TenantMetaKey),
    Database(TenantDatabaseKey),
    Ftp(FtpUserKey),
    HostIndex(HostIndexKey),
    Platform(PlatformConfigKey),
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/registry/{group}/{service}/{ip}:{port}/status", value = Text)]
pub struct InstanceStatusKey {
    pub group: Code,
    pub service: Code,
    pub ip: Ipv4Addr,
    pub port: u16,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "/registry/{group}/{service}/{ip}:{port}/config", value = Json<serde_json::Value>)]
pub struct InstanceConfigKey {
    pub group: Code,
    pub service: Code,
    pub ip: Ipv4Addr,
    pub port: u16,
}

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "/registry/{group}/{service}/", key = InstanceStatusKey)]
pub struct ServiceInstances {
    pub group: Code,
    pub service: Code,
}

/// The service registry schema (`:` delimits address and port, so the naming rule allows it).
#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(naming = "[a-z0-9_:-]")]
pub enum RegistrySchema {
    Status(InstanceStatusKey),
    Config(InstanceConfigKey),
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "nxc:map:{realm}:{provider}", value = Empty, hash_tag = "realm")]
pub struct ProviderMapKey {
    pub realm: Code,
    pub provider: Code,
}

#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "nxc:inst:{realm}:{provider}:{profile}", value = Text, hash_tag = "realm")]
pub struct InstanceKey {
    pub realm: Code,
    pub provider: Code,
    pub profile: Code,
}

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "nxc:inst:{realm}:{provider}:", key = InstanceKey, hash_tag = "realm")]
pub struct ProviderInstances {
    pub realm: Code,
    pub provider: Code,
}

/// The three-layer Redis schema; every key of a realm hashes to one cluster slot.
#[derive(Keyspace, Debug, Clone, PartialEq)]
#[kv(naming = "[a-z0-9_-]")]
pub enum NxcSchema {
    Map(ProviderMapKey),
    Instance(InstanceKey),
}
