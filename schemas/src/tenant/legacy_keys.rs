//! The old layout of §3, declared read-only: the fifteen old templates, doubled separator
//! included, as typed keys of [`TenantLegacyKeyspace`]. The old Go client's `buildKey`
//! joined the namespace `jxt/` with keys that began with `/` (§4.1), hence `jxt//`.
//!
//! They parse and encode exactly as the old client wrote them, so `kvctl get`, `ls` and
//! `watch` show the old data typed, and [`TenantLegacy`](super::TenantLegacy) maps each
//! variant to its new key; the typed store refuses every write to them
//! (`ErrorKind::ReadOnly`): nothing writes the old layout any more.
//!
//! Segments are the new layout's: an old index key whose segment the new layout would not
//! write (a host or name not escaped as §7.3 says) is not a key of either layout, and the
//! migration reports it. Values are read as the old client wrote them: JSON documents whose
//! fields the migration checks against the new value types, or text.

use super::keys::JsonDocument;
use super::segments::{
    FtpUsername, HostName, PlatformConfigName, ServiceCode, TenantCode, TenantName,
};
use keyplane_core::keyspace::{Json, Key, Keyspace, Prefix, Text};

/// `jxt//jxt/config/tenants/{id}/services/{code}/database`: a service's database config
/// (→ `jxt/tenants/{id}/database/{code}`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(
    template = "jxt//jxt/config/tenants/{id}/services/{code}/database",
    value = Json<JsonDocument>,
    read_only
)]
pub struct LegacyDatabaseKey {
    /// The tenant id.
    pub id: u64,
    /// The service code.
    pub code: ServiceCode,
}

/// `jxt//tenants/{id}/meta` (→ `jxt/tenants/{id}/meta`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//tenants/{id}/meta", value = Json<JsonDocument>, read_only)]
pub struct LegacyMetaKey {
    /// The tenant id.
    pub id: u64,
}

/// `jxt//tenants/{id}/domain/primary` (→ `jxt/tenants/{id}/domain/primary`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//tenants/{id}/domain/primary", value = Text, read_only)]
pub struct LegacyPrimaryDomainKey {
    /// The tenant id.
    pub id: u64,
}

/// `jxt//tenants/{id}/domain/aliases` (→ `jxt/tenants/{id}/domain/aliases`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//tenants/{id}/domain/aliases", value = Json<JsonDocument>, read_only)]
pub struct LegacyDomainAliasesKey {
    /// The tenant id.
    pub id: u64,
}

/// `jxt//tenants/{id}/domain/internal` (→ `jxt/tenants/{id}/domain/internal`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//tenants/{id}/domain/internal", value = Text, read_only)]
pub struct LegacyInternalDomainKey {
    /// The tenant id.
    pub id: u64,
}

/// `jxt//tenants/{id}/ftp`: every FTP user of the tenant in one JSON array, bare or as
/// `{"ftpConfigs": [...]}` (→ one `jxt/tenants/{id}/ftp/{username}` per user).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//tenants/{id}/ftp", value = Json<JsonDocument>, read_only)]
pub struct LegacyFtpArrayKey {
    /// The tenant id.
    pub id: u64,
}

/// `jxt//tenants/{id}/storage` (→ `jxt/tenants/{id}/storage`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//tenants/{id}/storage", value = Json<JsonDocument>, read_only)]
pub struct LegacyStorageKey {
    /// The tenant id.
    pub id: u64,
}

/// `jxt//tenants/by-code/{code}` (→ `jxt/tenants/_index/by-code/{code}`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//tenants/by-code/{code}", value = Json<JsonDocument>, read_only)]
pub struct LegacyCodeIndexKey {
    /// The tenant code.
    pub code: TenantCode,
}

/// `jxt//tenants/by-name/{name}` (→ `jxt/tenants/_index/by-name/{name}`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//tenants/by-name/{name}", value = Json<JsonDocument>, read_only)]
pub struct LegacyNameIndexKey {
    /// The tenant name.
    pub name: TenantName,
}

/// `jxt//ftp-users/{username}` (→ `jxt/tenants/_index/ftp-user/{username}`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//ftp-users/{username}", value = Json<JsonDocument>, read_only)]
pub struct LegacyFtpUserIndexKey {
    /// The FTP username.
    pub username: FtpUsername,
}

/// `jxt//hosts/{host}` (→ `jxt/tenants/_index/host/{host}`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//hosts/{host}", value = Json<JsonDocument>, read_only)]
pub struct LegacyHostIndexKey {
    /// The host name.
    pub host: HostName,
}

/// `jxt//common/resolver` (→ `jxt/common/resolver`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//common/resolver", value = Json<JsonDocument>, read_only)]
pub struct LegacyResolverConfigKey {}

/// `jxt//common/storage-directory` (→ `jxt/common/storage-directory`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//common/storage-directory", value = Json<JsonDocument>, read_only)]
pub struct LegacyStorageDirectoryConfigKey {}

/// `jxt//_health/sentinel` (→ `jxt/_health/sentinel`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//_health/sentinel", value = Text, read_only)]
pub struct LegacyHealthSentinelKey {}

/// `jxt//platform/configs/{key}` (→ `jxt/platform/configs/{key}`).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//platform/configs/{key}", value = Json<JsonDocument>, read_only)]
pub struct LegacyPlatformConfigKey {
    /// The configuration's name.
    pub key: PlatformConfigName,
}

/// `jxt//tenants/{id}/`: one tenant's directory in the old layout.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt//tenants/{id}/", key = LegacyMetaKey, read_only)]
pub struct LegacyTenantDir {
    /// The tenant id.
    pub id: u64,
}

/// Every key of the old layout (§3), one variant per row, all read-only.
///
/// The naming rule is the new layout's; the empty segment of the doubled separator is the
/// only exception, which read-only templates allow.
#[derive(Keyspace, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(naming = "[a-z0-9_-]")]
pub enum TenantLegacyKeyspace {
    /// `jxt//jxt/config/tenants/{id}/services/{code}/database`
    Database(LegacyDatabaseKey),
    /// `jxt//tenants/{id}/meta`
    Meta(LegacyMetaKey),
    /// `jxt//tenants/{id}/domain/primary`
    PrimaryDomain(LegacyPrimaryDomainKey),
    /// `jxt//tenants/{id}/domain/aliases`
    DomainAliases(LegacyDomainAliasesKey),
    /// `jxt//tenants/{id}/domain/internal`
    InternalDomain(LegacyInternalDomainKey),
    /// `jxt//tenants/{id}/ftp` (one JSON array)
    FtpArray(LegacyFtpArrayKey),
    /// `jxt//tenants/{id}/storage`
    Storage(LegacyStorageKey),
    /// `jxt//tenants/by-code/{code}`
    CodeIndex(LegacyCodeIndexKey),
    /// `jxt//tenants/by-name/{name}`
    NameIndex(LegacyNameIndexKey),
    /// `jxt//ftp-users/{username}`
    FtpUserIndex(LegacyFtpUserIndexKey),
    /// `jxt//hosts/{host}`
    HostIndex(LegacyHostIndexKey),
    /// `jxt//common/resolver`
    Resolver(LegacyResolverConfigKey),
    /// `jxt//common/storage-directory`
    StorageDirectory(LegacyStorageDirectoryConfigKey),
    /// `jxt//_health/sentinel`
    HealthSentinel(LegacyHealthSentinelKey),
    /// `jxt//platform/configs/{key}`
    PlatformConfig(LegacyPlatformConfigKey),
}
