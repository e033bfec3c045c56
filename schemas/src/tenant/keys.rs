//! Typed keys and directories of the tenant keyspace, one per template of §2, and the
//! keyspace enum [`TenantKeyspace`].

use super::segments::{
    FtpUsername, HostName, PlatformConfigName, ServiceCode, TenantCode, TenantName,
};
use super::values::{
    CodeIndex, DatabaseConfig, FtpConfig, FtpUserIndex, HostIndex, NameIndex, StorageConfig,
    TenantMeta,
};
use keyplane_core::keyspace::{Json, Key, Keyspace, Prefix, Text};

/// A JSON document whose shape the design document leaves open (common and platform
/// configuration).
pub type JsonDocument = serde_json::Value;

/// `Err` naming `field` when the value's `value` is not the key's `key`.
fn same<T: PartialEq + std::fmt::Display + ?Sized>(
    field: &str,
    value: &T,
    key: &T,
) -> Result<(), String> {
    if value == key {
        Ok(())
    } else {
        Err(format!("its `{field}` is {value}, the key says {key}"))
    }
}

/// A meta's `id` is its key's.
fn meta_agrees(key: &TenantMetaKey, meta: &TenantMeta) -> Result<(), String> {
    same("id", &meta.id, &key.id)
}

/// A database config's `tenantId` and `serviceCode` are its key's.
fn database_agrees(key: &DatabaseConfigKey, config: &DatabaseConfig) -> Result<(), String> {
    same("tenantId", &config.tenant_id, &key.id)?;
    same(
        "serviceCode",
        config.service_code.as_str(),
        key.service.as_str(),
    )
}

/// An FTP user's `tenantId` and `username` are its key's.
fn ftp_agrees(key: &FtpConfigKey, config: &FtpConfig) -> Result<(), String> {
    same("tenantId", &config.tenant_id, &key.id)?;
    same("username", config.username.as_str(), key.username.as_str())
}

/// A storage config's `tenantId` is its key's.
fn storage_agrees(key: &StorageConfigKey, config: &StorageConfig) -> Result<(), String> {
    same("tenantId", &config.tenant_id, &key.id)
}

/// `jxt/tenants/{id}/meta`: the tenant's metadata (§2.2.1).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/{id}/meta", value = Json<TenantMeta>, agrees = meta_agrees)]
pub struct TenantMetaKey {
    /// The tenant id.
    pub id: u64,
}

/// `jxt/tenants/{id}/domain/primary`: the primary domain, as plain text (§2.2.4).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/{id}/domain/primary", value = Text)]
pub struct PrimaryDomainKey {
    /// The tenant id.
    pub id: u64,
}

/// `jxt/tenants/{id}/domain/aliases`: the alias domains, a JSON array of strings (§2.2.4).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/{id}/domain/aliases", value = Json<Vec<String>>)]
pub struct DomainAliasesKey {
    /// The tenant id.
    pub id: u64,
}

/// `jxt/tenants/{id}/domain/internal`: the internal domain, as plain text (§2.2.4).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/{id}/domain/internal", value = Text)]
pub struct InternalDomainKey {
    /// The tenant id.
    pub id: u64,
}

/// `jxt/tenants/{id}/database/{serviceCode}`: one service's database configuration (§2.2.2).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(
    template = "jxt/tenants/{id}/database/{service}",
    value = Json<DatabaseConfig>,
    agrees = database_agrees
)]
pub struct DatabaseConfigKey {
    /// The tenant id.
    pub id: u64,
    /// The service code (`serviceCode` in the document).
    pub service: ServiceCode,
}

/// `jxt/tenants/{id}/ftp/{username}`: one FTP user of the tenant (§2.2.3).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/{id}/ftp/{username}", value = Json<FtpConfig>, agrees = ftp_agrees)]
pub struct FtpConfigKey {
    /// The tenant id.
    pub id: u64,
    /// The FTP username.
    pub username: FtpUsername,
}

/// `jxt/tenants/{id}/storage`: the tenant's storage limits (§2.2.5).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/{id}/storage", value = Json<StorageConfig>, agrees = storage_agrees)]
pub struct StorageConfigKey {
    /// The tenant id.
    pub id: u64,
}

/// `jxt/tenants/_index/by-code/{code}`: tenant by code (§2.2.6).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/_index/by-code/{code}", value = Json<CodeIndex>)]
pub struct CodeIndexKey {
    /// The tenant code.
    pub code: TenantCode,
}

/// `jxt/tenants/_index/by-name/{name}`: tenant by name, the name percent-escaped (§2.2.6,
/// §7.3).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/_index/by-name/{name}", value = Json<NameIndex>)]
pub struct NameIndexKey {
    /// The tenant name.
    pub name: TenantName,
}

/// `jxt/tenants/_index/ftp-user/{username}`: the tenant owning an FTP username; its
/// existence is what makes usernames unique across tenants (§2.2.6, §7.5).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/_index/ftp-user/{username}", value = Json<FtpUserIndex>)]
pub struct FtpUserIndexKey {
    /// The FTP username.
    pub username: FtpUsername,
}

/// `jxt/tenants/_index/host/{host}`: the tenant serving a host, the host percent-escaped
/// (§2.2.6, §7.3).
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/_index/host/{host}", value = Json<HostIndex>)]
pub struct HostIndexKey {
    /// The host name.
    pub host: HostName,
}

/// `jxt/common/resolver`: the resolver configuration (§2.2.7); the document does not fix its
/// shape.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/common/resolver", value = Json<JsonDocument>)]
pub struct ResolverConfigKey {}

/// `jxt/common/storage-directory`: the storage directory configuration (§2.2.7); the document
/// does not fix its shape.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/common/storage-directory", value = Json<JsonDocument>)]
pub struct StorageDirectoryConfigKey {}

/// `jxt/platform/configs/{key}`: one platform configuration (§2.1); the document does not
/// fix its shape.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/platform/configs/{key}", value = Json<JsonDocument>)]
pub struct PlatformConfigKey {
    /// The configuration's name.
    pub key: PlatformConfigName,
}

/// `jxt/_health/sentinel`: the health-check sentinel (§2.1), plain text.
#[derive(Key, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/_health/sentinel", value = Text)]
pub struct HealthSentinelKey {}

/// `jxt/tenants/{id}/`: everything of one tenant (§6.2 `etcdctl get jxt/tenants/1/ --prefix`).
/// Lists as [`TenantMetaKey`]; the other keys of the directory parse with
/// [`TenantKeyspace`].
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/{id}/", key = TenantMetaKey)]
pub struct TenantDir {
    /// The tenant id.
    pub id: u64,
}

/// `jxt/tenants/{id}/database/`: a tenant's database configurations.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/{id}/database/", key = DatabaseConfigKey)]
pub struct DatabaseConfigsDir {
    /// The tenant id.
    pub id: u64,
}

/// `jxt/tenants/{id}/ftp/`: a tenant's FTP users.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/{id}/ftp/", key = FtpConfigKey)]
pub struct FtpConfigsDir {
    /// The tenant id.
    pub id: u64,
}

/// `jxt/tenants/_index/by-code/`: every tenant, by code.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/_index/by-code/", key = CodeIndexKey)]
pub struct CodeIndexDir {}

/// `jxt/tenants/_index/ftp-user/`: every FTP username in use.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/_index/ftp-user/", key = FtpUserIndexKey)]
pub struct FtpUserIndexDir {}

/// `jxt/tenants/_index/host/`: every indexed host.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/tenants/_index/host/", key = HostIndexKey)]
pub struct HostIndexDir {}

/// `jxt/platform/configs/`: every platform configuration.
#[derive(Prefix, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(template = "jxt/platform/configs/", key = PlatformConfigKey)]
pub struct PlatformConfigsDir {}

/// Every key of the tenant configuration layout (§2.1), one variant per template.
///
/// Literals follow §5.1: lowercase kebab-case, `_` only as the prefix of special
/// directories (`_index`, `_health`). The layout needs no declared exception: `{id}` is an
/// integer, so `jxt/tenants/_index/...` never collides with a tenant's directory.
#[derive(Keyspace, Debug, Clone, PartialEq, Eq, Hash)]
#[kv(naming = "[a-z0-9_-]", value_enum = TenantValue)]
pub enum TenantKeyspace {
    /// `jxt/tenants/{id}/meta`
    Meta(TenantMetaKey),
    /// `jxt/tenants/{id}/domain/primary`
    PrimaryDomain(PrimaryDomainKey),
    /// `jxt/tenants/{id}/domain/aliases`
    DomainAliases(DomainAliasesKey),
    /// `jxt/tenants/{id}/domain/internal`
    InternalDomain(InternalDomainKey),
    /// `jxt/tenants/{id}/database/{serviceCode}`
    Database(DatabaseConfigKey),
    /// `jxt/tenants/{id}/ftp/{username}`
    Ftp(FtpConfigKey),
    /// `jxt/tenants/{id}/storage`
    Storage(StorageConfigKey),
    /// `jxt/tenants/_index/by-code/{code}`
    CodeIndex(CodeIndexKey),
    /// `jxt/tenants/_index/by-name/{name}`
    NameIndex(NameIndexKey),
    /// `jxt/tenants/_index/ftp-user/{username}`
    FtpUserIndex(FtpUserIndexKey),
    /// `jxt/tenants/_index/host/{host}`
    HostIndex(HostIndexKey),
    /// `jxt/common/resolver`
    Resolver(ResolverConfigKey),
    /// `jxt/common/storage-directory`
    StorageDirectory(StorageDirectoryConfigKey),
    /// `jxt/platform/configs/{key}`
    PlatformConfig(PlatformConfigKey),
    /// `jxt/_health/sentinel`
    HealthSentinel(HealthSentinelKey),
}
