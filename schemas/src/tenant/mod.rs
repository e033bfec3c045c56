//! The tenant configuration keyspace of `tenant-service` (etcd, design document v1.0).
//!
//! The layout of §2.1, every key typed ([`TenantKeyspace`]), byte for byte:
//!
//! ```text
//! jxt/
//! ├── tenants/
//! │   ├── {id}/
//! │   │   ├── meta                      TenantMetaKey            Json<TenantMeta>
//! │   │   ├── domain/
//! │   │   │   ├── primary               PrimaryDomainKey         Text
//! │   │   │   ├── aliases               DomainAliasesKey         Json<Vec<String>>
//! │   │   │   └── internal              InternalDomainKey        Text
//! │   │   ├── database/{serviceCode}    DatabaseConfigKey        Json<DatabaseConfig>
//! │   │   ├── ftp/{username}            FtpConfigKey             Json<FtpConfig>
//! │   │   └── storage                   StorageConfigKey         Json<StorageConfig>
//! │   └── _index/
//! │       ├── by-code/{code}            CodeIndexKey             Json<CodeIndex>
//! │       ├── by-name/{name}            NameIndexKey             Json<NameIndex>
//! │       ├── ftp-user/{username}       FtpUserIndexKey          Json<FtpUserIndex>
//! │       └── host/{host}               HostIndexKey             Json<HostIndex>
//! ├── common/
//! │   ├── resolver                      ResolverConfigKey        Json<JsonDocument>
//! │   └── storage-directory             StorageDirectoryConfigKey Json<JsonDocument>
//! ├── platform/
//! │   └── configs/{key}                 PlatformConfigKey        Json<JsonDocument>
//! └── _health/
//!     └── sentinel                      HealthSentinelKey        Text
//! ```
//!
//! Segments (§7.3): `{id}` is an unsigned integer; a tenant code is `[a-zA-Z0-9_]+`
//! ([`TenantCode`]) and an FTP username `[a-zA-Z0-9._-]+` ([`FtpUsername`]), both stored
//! verbatim; the free-text index values, tenant name ([`TenantName`]) and host
//! ([`HostName`]), are percent-escaped as Go's `url.PathEscape` does. §6.1 prints the
//! by-name key of `默认租户` unescaped for readability; by §7.3 it is
//! `jxt/tenants/_index/by-name/%E9%BB%98%E8%AE%A4%E7%A7%9F%E6%88%B7`. (§7.6's code sample
//! builds the by-name key from the tenant code; §2.2.6 and §6.1 use the name, as here.)
//!
//! Values are JSON with the field names of §2.2 (camelCase). The primary and internal
//! domains are plain text, the aliases a JSON array; the document leaves the shapes of the
//! common and platform configurations open ([`JsonDocument`]) and of the sentinel (text).
//!
//! Operations: [`publish_tenant`] (one transaction, never split), [`add_ftp_user`] and
//! [`remove_ftp_user`] (usernames unique across tenants, atomically), [`delete_tenant`]
//! (indexes first, data last, resumable), the lookups [`tenant_by_code`],
//! [`tenant_by_name`], [`tenant_by_host`], [`tenant_by_ftp_user`], [`database_config`]
//! (`None` when absent, §7.4), [`put_database_config`] and [`load_tenant`].
//!
//! Updates: [`update_tenant`] applies any change to a published tenant as one transaction
//! that writes only the keys whose bytes change, guarded by the revisions it read, with the
//! index entries moved alongside; [`update_meta`] (a new code or name moves the `by-code`
//! and `by-name` entries and rewrites the `ftp-user` and `host` entries that carry them),
//! [`set_domains`] (domain keys and `host` entries), [`set_storage`],
//! [`set_database_config`] / [`remove_database_config`], [`change_ftp_password`] (the
//! `ftp/{username}` key only) and [`rename_ftp_user`] (the `ftp/` key and the `ftp-user`
//! entry move; usernames stay unique under concurrent renames) are built on it. A tenant
//! that [`delete_tenant`] has marked (meta status `deleting`) takes no more changes.
//! [`example_tenant`] is the tenant of §6.1.
//!
//! Migration: the old layout of §3 (`jxt//...`) is declared read-only, doubled separator
//! included ([`TenantLegacyKeyspace`], one typed key per row, which the typed store never
//! writes); [`TenantLegacy`] moves it (the old FTP array split into one key per user) into
//! this one.
//!
//! The layout passes the schema checker as written, with no declared exception.

mod contention;
mod delete;
mod ftp;
mod keys;
mod legacy;
mod legacy_keys;
mod lookup;
mod model;
mod provider;
mod publish;
mod segments;
mod snapshot;
mod update;
mod values;

pub use delete::{TenantDeletion, delete_tenant};
pub use ftp::{add_ftp_user, remove_ftp_user};
pub use keys::TenantValue;
pub use keys::{
    CodeIndexDir, CodeIndexKey, DatabaseConfigKey, DatabaseConfigsDir, DomainAliasesKey,
    FtpConfigKey, FtpConfigsDir, FtpUserIndexDir, FtpUserIndexKey, HealthSentinelKey, HostIndexDir,
    HostIndexKey, InternalDomainKey, JsonDocument, NameIndexKey, PlatformConfigKey,
    PlatformConfigsDir, PrimaryDomainKey, ResolverConfigKey, StorageConfigKey,
    StorageDirectoryConfigKey, TenantDir, TenantKeyspace, TenantMetaKey,
};
pub use legacy::TenantLegacy;
pub use legacy_keys::{
    LegacyCodeIndexKey, LegacyDatabaseKey, LegacyDomainAliasesKey, LegacyFtpArrayKey,
    LegacyFtpUserIndexKey, LegacyHealthSentinelKey, LegacyHostIndexKey, LegacyInternalDomainKey,
    LegacyMetaKey, LegacyNameIndexKey, LegacyPlatformConfigKey, LegacyPrimaryDomainKey,
    LegacyResolverConfigKey, LegacyStorageDirectoryConfigKey, LegacyStorageKey, LegacyTenantDir,
    TenantLegacyKeyspace,
};
pub use lookup::{
    database_config, load_tenant, put_database_config, tenant_by_code, tenant_by_ftp_user,
    tenant_by_host, tenant_by_name,
};
pub use model::{Domains, HostBinding, Tenant, example_tenant};
pub use provider::{TenantProvider, TenantView};
pub use publish::publish_tenant;
pub use segments::{
    FtpUsername, HostName, KNOWN_SERVICES, PlatformConfigName, ServiceCode, TenantCode, TenantName,
};
pub use update::{
    change_ftp_password, remove_database_config, rename_ftp_user, set_database_config, set_domains,
    set_storage, update_meta, update_tenant,
};
pub use values::{
    CodeIndex, DatabaseConfig, FtpConfig, FtpUserIndex, HostIndex, NameIndex, StorageConfig,
    TenantMeta,
};

/// The catalog entry of the tenant keyspace.
pub fn schema() -> keyplane_core::keyspace::Schema {
    keyplane_core::keyspace::Schema::of::<TenantKeyspace>("tenant")
        .with_store("etcd")
        .with_summary("tenant-service configuration: meta, domains, databases, FTP users, storage and their indexes under jxt/")
}

/// The catalog entry of the old layout of §3 ([`TenantLegacyKeyspace`], read-only).
pub fn legacy_schema() -> keyplane_core::keyspace::Schema {
    keyplane_core::keyspace::Schema::read_only::<TenantLegacyKeyspace>("tenant-legacy")
        .with_store("etcd")
        .with_summary("the old tenant layout under jxt// (read-only; `kvctl migrate apply tenant-legacy` moves it)")
}
