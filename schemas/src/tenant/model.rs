//! [`Tenant`]: everything published for one tenant, its validation (§7.3) and the §6.1
//! example.

use super::segments::{FtpUsername, HostName, ServiceCode, TenantCode, TenantName};
use super::values::{DatabaseConfig, FtpConfig, StorageConfig, TenantMeta};
use keyplane_core::keyspace::SegmentError;
use keyplane_core::{Error, Result};
use std::collections::BTreeSet;

/// A tenant's domains (§2.2.4). A domain that is not configured is `None` (or an empty
/// alias list) and has no key; the name index then holds `""` as the primary domain (§7.6).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Domains {
    /// `domain/primary`.
    pub primary: Option<String>,
    /// `domain/aliases`, written only when not empty.
    pub aliases: Vec<String>,
    /// `domain/internal`.
    pub internal: Option<String>,
}

impl Domains {
    /// Every configured domain: the primary, the aliases, the internal one.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        self.primary
            .iter()
            .chain(&self.aliases)
            .chain(&self.internal)
            .map(String::as_str)
    }
}

/// One host of the host index (§2.2.6): a domain of the tenant and what it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostBinding {
    /// The host; one of the tenant's [`Domains`], so that deleting the tenant finds its host
    /// index entries from the domain keys (§7.2).
    pub host: String,
    /// What the host serves (`hostType`), such as `frontend`.
    pub host_type: String,
}

/// Everything published for one tenant: meta, domains, database configurations, FTP users,
/// storage, and the hosts of the host index. The code, name and FTP-user indexes are derived
/// from these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    /// `meta` (its `id` is the tenant id of every key).
    pub meta: TenantMeta,
    /// `domain/primary`, `domain/aliases`, `domain/internal`.
    pub domains: Domains,
    /// `database/{serviceCode}`, one per service.
    pub databases: Vec<DatabaseConfig>,
    /// `ftp/{username}`, one per user.
    pub ftp_users: Vec<FtpConfig>,
    /// `storage`, when configured.
    pub storage: Option<StorageConfig>,
    /// `_index/host/{host}`, one per host.
    pub hosts: Vec<HostBinding>,
}

/// A [`Tenant`] whose every segment and cross-reference was checked.
#[derive(Debug)]
pub(crate) struct ValidTenant<'a> {
    pub(crate) tenant: &'a Tenant,
    pub(crate) code: TenantCode,
    pub(crate) name: TenantName,
    pub(crate) services: Vec<ServiceCode>,
    pub(crate) ftp_users: Vec<FtpUsername>,
    pub(crate) hosts: Vec<HostName>,
}

/// `InvalidArgument` naming the field and the offending value.
pub(crate) fn invalid(field: &'static str, value: &str, reason: impl Into<String>) -> Error {
    Error::invalid_argument(reason)
        .with_context("field", field)
        .with_context("value", value)
}

/// `InvalidArgument` for a segment value that breaks its type's rule.
pub(crate) fn invalid_segment(field: &'static str, err: SegmentError) -> Error {
    invalid(field, err.raw(), err.reason().to_owned()).with_source(err)
}

fn check_tenant_id(field: &'static str, id: u64, tenant: u64) -> Result<()> {
    if id == tenant {
        return Ok(());
    }
    Err(invalid(
        field,
        &id.to_string(),
        format!("belongs to tenant {id}, not to tenant {tenant}"),
    ))
}

fn check_unique<'v>(
    seen: &mut BTreeSet<&'v str>,
    field: &'static str,
    value: &'v str,
) -> Result<()> {
    if seen.insert(value) {
        return Ok(());
    }
    Err(invalid(field, value, "listed twice"))
}

impl Tenant {
    /// The tenant id.
    pub fn id(&self) -> u64 {
        self.meta.id
    }

    /// Checks the tenant before anything is written: the code (`[a-zA-Z0-9_]+`), name,
    /// service codes and FTP usernames (`[a-zA-Z0-9._-]+`) follow §7.3; domains are not
    /// empty; every `tenantId` is the tenant's id and every key segment matches its value's
    /// field; services, FTP users and hosts are each listed once; every host is one of the
    /// tenant's domains.
    ///
    /// # Errors
    /// `InvalidArgument` naming the field and value.
    pub fn validate(&self) -> Result<()> {
        self.checked().map(|_| ())
    }

    pub(crate) fn checked(&self) -> Result<ValidTenant<'_>> {
        let id = self.meta.id;
        let code = TenantCode::new(self.meta.code.as_str())
            .map_err(|e| invalid_segment("meta.code", e))?;
        let name = TenantName::new(self.meta.name.as_str())
            .map_err(|e| invalid_segment("meta.name", e))?;

        let mut domains = BTreeSet::new();
        for domain in self.domains.all() {
            HostName::new(domain).map_err(|e| invalid_segment("domains", e))?;
            check_unique(&mut domains, "domains", domain)?;
        }

        let mut seen = BTreeSet::new();
        let mut services = Vec::with_capacity(self.databases.len());
        for db in &self.databases {
            check_tenant_id("databases.tenantId", db.tenant_id, id)?;
            let service = ServiceCode::new(db.service_code.as_str())
                .map_err(|e| invalid_segment("databases.serviceCode", e))?;
            check_unique(&mut seen, "databases.serviceCode", &db.service_code)?;
            services.push(service);
        }

        let mut seen = BTreeSet::new();
        let mut ftp_users = Vec::with_capacity(self.ftp_users.len());
        for ftp in &self.ftp_users {
            check_tenant_id("ftpUsers.tenantId", ftp.tenant_id, id)?;
            let user = FtpUsername::new(ftp.username.as_str())
                .map_err(|e| invalid_segment("ftpUsers.username", e))?;
            check_unique(&mut seen, "ftpUsers.username", &ftp.username)?;
            ftp_users.push(user);
        }

        if let Some(storage) = &self.storage {
            check_tenant_id("storage.tenantId", storage.tenant_id, id)?;
        }

        let mut seen = BTreeSet::new();
        let mut hosts = Vec::with_capacity(self.hosts.len());
        for binding in &self.hosts {
            let host =
                HostName::new(binding.host.as_str()).map_err(|e| invalid_segment("hosts", e))?;
            check_unique(&mut seen, "hosts", &binding.host)?;
            if !domains.contains(binding.host.as_str()) {
                return Err(invalid(
                    "hosts",
                    &binding.host,
                    "a host of the host index must be one of the tenant's domains",
                ));
            }
            hosts.push(host);
        }

        Ok(ValidTenant {
            tenant: self,
            code,
            name,
            services,
            ftp_users,
            hosts,
        })
    }
}

/// The example tenant of §6.1 of the design document: tenant `1`, code `default`, name
/// `默认租户`, primary domain `example.com` with the alias `api.example.com` (the one host
/// of the host index, `frontend`) and an internal domain, the database configurations of
/// `evidence-command`, `evidence-query` and `file-storage`, the FTP users `default_ftp` and
/// `sales_ftp`, and storage limits. Values are those of §2.2.
///
/// Published, it has exactly the fifteen keys §6.1 lists (the name index escaped, §7.3).
pub fn example_tenant() -> Tenant {
    let id = 1;
    let database = |service: &str, host: &str, suffix: &str, user: &str| DatabaseConfig {
        tenant_id: id,
        service_code: service.to_owned(),
        driver: "mysql".to_owned(),
        host: host.to_owned(),
        port: 3306,
        database: format!("tenant_default_{suffix}"),
        username: user.to_owned(),
        ssl_mode: "disable".to_owned(),
        max_open_conns: 100,
        max_idle_conns: 20,
        enabled: true,
    };
    let ftp = |username: &str, description: &str, write: bool| FtpConfig {
        tenant_id: id,
        username: username.to_owned(),
        password_hash: "$2a$10$...".to_owned(),
        description: description.to_owned(),
        status: "active".to_owned(),
        home_directory: format!("/tenants/{id}"),
        write_permission: write,
    };
    Tenant {
        meta: TenantMeta {
            id,
            code: "default".to_owned(),
            name: "默认租户".to_owned(),
            status: "active".to_owned(),
            billing_plan: "enterprise".to_owned(),
        },
        domains: Domains {
            primary: Some("example.com".to_owned()),
            aliases: vec!["api.example.com".to_owned()],
            internal: Some("default.internal.example.com".to_owned()),
        },
        databases: vec![
            database(
                "evidence-command",
                "mysql-command",
                "evidence_command",
                "tenant_default_cmd",
            ),
            database(
                "evidence-query",
                "mysql-query",
                "evidence_query",
                "tenant_default_query",
            ),
            database(
                "file-storage",
                "mysql-storage",
                "file_storage",
                "tenant_default_file",
            ),
        ],
        ftp_users: vec![
            ftp("default_ftp", "默认FTP配置", true),
            ftp("sales_ftp", "销售部FTP配置", false),
        ],
        storage: Some(StorageConfig {
            tenant_id: id,
            upload_quota_gb: 1000,
            max_file_size_mb: 2048,
            max_concurrent_uploads: 20,
        }),
        hosts: vec![HostBinding {
            host: "api.example.com".to_owned(),
            host_type: "frontend".to_owned(),
        }],
    }
}
