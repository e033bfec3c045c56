//! The JSON values of the tenant keyspace, field names exactly as §2.2 writes them
//! (camelCase, §5.2).
//!
//! Each value describes itself as a JSON Schema ([`JsonSchema`]) that accepts what its
//! deserializer reads, integers bounded at their Rust types' ends.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `jxt/tenants/{id}/meta` (§2.2.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantMeta {
    /// The tenant id (the `{id}` of every key of the tenant).
    #[schemars(range(max = u64::MAX))]
    pub id: u64,
    /// The tenant code (§7.3: `[a-zA-Z0-9_]+`).
    pub code: String,
    /// The display name.
    pub name: String,
    /// The tenant's status, such as `active`.
    pub status: String,
    /// The billing plan, such as `enterprise`.
    pub billing_plan: String,
}

/// `jxt/tenants/{id}/database/{serviceCode}` (§2.2.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseConfig {
    /// The owning tenant's id.
    #[schemars(range(max = u64::MAX))]
    pub tenant_id: u64,
    /// The service code (the key's last segment).
    pub service_code: String,
    /// The database driver, such as `mysql`.
    pub driver: String,
    /// The database host.
    pub host: String,
    /// The database port.
    pub port: u16,
    /// The database (schema) name.
    pub database: String,
    /// The user the service connects as.
    pub username: String,
    /// The TLS mode, such as `disable`.
    pub ssl_mode: String,
    /// Most open connections.
    #[schemars(range(max = u32::MAX))]
    pub max_open_conns: u32,
    /// Most idle connections.
    #[schemars(range(max = u32::MAX))]
    pub max_idle_conns: u32,
    /// Whether the configuration is in use.
    pub enabled: bool,
}

/// `jxt/tenants/{id}/ftp/{username}` (§2.2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FtpConfig {
    /// The owning tenant's id.
    #[schemars(range(max = u64::MAX))]
    pub tenant_id: u64,
    /// The FTP username (the key's last segment; §7.3: `[a-zA-Z0-9._-]+`).
    pub username: String,
    /// The password's bcrypt hash.
    pub password_hash: String,
    /// A description.
    pub description: String,
    /// The user's status, such as `active`.
    pub status: String,
    /// The user's home directory.
    pub home_directory: String,
    /// Whether the user may write.
    pub write_permission: bool,
}

/// `jxt/tenants/{id}/storage` (§2.2.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageConfig {
    /// The owning tenant's id.
    #[schemars(range(max = u64::MAX))]
    pub tenant_id: u64,
    /// Upload quota, in GB.
    #[schemars(range(max = u64::MAX))]
    pub upload_quota_gb: u64,
    /// Largest file, in MB.
    #[schemars(range(max = u64::MAX))]
    pub max_file_size_mb: u64,
    /// Most concurrent uploads.
    #[schemars(range(max = u32::MAX))]
    pub max_concurrent_uploads: u32,
}

/// `jxt/tenants/_index/by-code/{code}` (§2.2.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeIndex {
    /// The tenant id.
    #[schemars(range(max = u64::MAX))]
    pub id: u64,
    /// The tenant code.
    pub code: String,
    /// The tenant name.
    pub name: String,
}

/// `jxt/tenants/_index/by-name/{name}` (§2.2.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NameIndex {
    /// The tenant id.
    #[schemars(range(max = u64::MAX))]
    pub id: u64,
    /// The tenant code.
    pub code: String,
    /// The primary domain; `""` when the tenant has none (§7.6).
    pub primary_domain: String,
}

/// `jxt/tenants/_index/ftp-user/{username}` (§2.2.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FtpUserIndex {
    /// The owning tenant's id.
    #[schemars(range(max = u64::MAX))]
    pub tenant_id: u64,
    /// The owning tenant's code.
    pub code: String,
    /// The owning tenant's name.
    pub name: String,
}

/// `jxt/tenants/_index/host/{host}` (§2.2.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostIndex {
    /// The serving tenant's id.
    #[schemars(range(max = u64::MAX))]
    pub tenant_id: u64,
    /// The serving tenant's code.
    pub code: String,
    /// What the host serves, such as `frontend`.
    pub host_type: String,
}
