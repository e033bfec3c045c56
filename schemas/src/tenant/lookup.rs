//! Lookups: by code, name, host and FTP user through the indexes; a service's database
//! configuration; a whole tenant.

use super::contention::not_found;
use super::keys::{
    CodeIndexKey, DatabaseConfigKey, FtpUserIndexKey, HostIndexKey, NameIndexKey, TenantMetaKey,
};
use super::model::{HostBinding, Tenant, invalid_segment};
use super::segments::{FtpUsername, HostName, ServiceCode, TenantCode, TenantName};
use super::snapshot::Snapshot;
use super::values::{CodeIndex, DatabaseConfig, FtpUserIndex, HostIndex, NameIndex};
use keyplane_core::Result;
use keyplane_core::keyspace::TypedStore;

/// The tenant with code `code`, from `_index/by-code/{code}`.
///
/// # Errors
/// `Codec` when the entry does not decode; backend errors.
pub async fn tenant_by_code(store: &TypedStore, code: &TenantCode) -> Result<Option<CodeIndex>> {
    store.get(&CodeIndexKey { code: code.clone() }).await
}

/// The tenant named `name`, from `_index/by-name/{name}` (the name percent-escaped in the
/// key, §7.3); its `primaryDomain` is `""` when the tenant has none (§7.6).
///
/// # Errors
/// `Codec` when the entry does not decode; backend errors.
pub async fn tenant_by_name(store: &TypedStore, name: &TenantName) -> Result<Option<NameIndex>> {
    store.get(&NameIndexKey { name: name.clone() }).await
}

/// The tenant serving `host`, from `_index/host/{host}`.
///
/// # Errors
/// `Codec` when the entry does not decode; backend errors.
pub async fn tenant_by_host(store: &TypedStore, host: &HostName) -> Result<Option<HostIndex>> {
    store.get(&HostIndexKey { host: host.clone() }).await
}

/// The tenant owning the FTP username, from `_index/ftp-user/{username}`.
///
/// # Errors
/// `Codec` when the entry does not decode; backend errors.
pub async fn tenant_by_ftp_user(
    store: &TypedStore,
    username: &FtpUsername,
) -> Result<Option<FtpUserIndex>> {
    store
        .get(&FtpUserIndexKey {
            username: username.clone(),
        })
        .await
}

/// The database configuration of service `service` of tenant `tenant_id`; `None` when the
/// service has none, whether or not the tenant has other configurations (§7.4).
///
/// # Errors
/// `Codec` when the entry does not decode; backend errors.
///
/// ```
/// use keyplane_schemas::tenant::{database_config, example_tenant, publish_tenant, ServiceCode};
/// use keyplane_core::keyspace::TypedStore;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// publish_tenant(&typed, &example_tenant()).await?;
/// let query = ServiceCode::new("evidence-query").unwrap();
/// assert_eq!(database_config(&typed, 1, &query).await?.unwrap().port, 3306);
/// let security = ServiceCode::new("security-management").unwrap();
/// assert_eq!(database_config(&typed, 1, &security).await?, None);
/// # Ok(())
/// # }
/// ```
pub async fn database_config(
    store: &TypedStore,
    tenant_id: u64,
    service: &ServiceCode,
) -> Result<Option<DatabaseConfig>> {
    let key = DatabaseConfigKey {
        id: tenant_id,
        service: service.clone(),
    };
    store.get(&key).await
}

/// Sets the database configuration of one service of an existing tenant (creating or
/// replacing it), in one transaction that requires the tenant's meta to exist. Returns the
/// revision of the write.
///
/// # Errors
/// `InvalidArgument` for a service code outside `[a-z0-9-]+`; `NotFound` when the tenant
/// does not exist; backend errors.
pub async fn put_database_config(store: &TypedStore, config: &DatabaseConfig) -> Result<i64> {
    let service = ServiceCode::new(config.service_code.as_str())
        .map_err(|e| invalid_segment("serviceCode", e))?;
    let id = config.tenant_id;
    let mut txn = store.txn();
    txn.when_exists(&TenantMetaKey { id })
        .put(&DatabaseConfigKey { id, service }, config);
    let outcome = txn.commit().await?;
    if outcome.succeeded {
        Ok(outcome.revision)
    } else {
        Err(not_found(id))
    }
}

/// Reads tenant `id` back whole, at one revision: its directory in pages (every page at the
/// first one's revision), then, at that same revision, the host index entry of each of its
/// domains that points at it. `None` when the tenant has no meta. A concurrent update is
/// seen whole or not at all.
///
/// Items come in key order (databases by service code, FTP users by username), hosts in
/// domain order (primary, aliases, internal).
///
/// # Errors
/// `InvalidKey` or `Codec` naming the first key of the directory that is not a key of the
/// layout or whose value does not decode; backend errors.
pub async fn load_tenant(store: &TypedStore, id: u64) -> Result<Option<Tenant>> {
    let mut snapshot = Snapshot::read(store.store().as_ref(), id).await?;
    if let Some(e) = snapshot.bad.drain(..).next() {
        return Err(e);
    }
    let Some((meta, _)) = snapshot.meta else {
        return Ok(None);
    };
    let mut hosts = Vec::new();
    for domain in snapshot.domains.all() {
        let Ok(host) = HostName::new(domain) else {
            continue;
        };
        if let Some(index) = host_index_at(store, &host, snapshot.revision).await?
            && index.tenant_id == id
        {
            hosts.push(HostBinding {
                host: domain.to_owned(),
                host_type: index.host_type,
            });
        }
    }
    Ok(Some(Tenant {
        meta,
        domains: snapshot.domains,
        databases: snapshot.databases,
        ftp_users: snapshot.ftp_users,
        storage: snapshot.storage,
        hosts,
    }))
}

/// The host index entry of `host` as it was at `revision`.
async fn host_index_at(
    store: &TypedStore,
    host: &HostName,
    revision: i64,
) -> Result<Option<HostIndex>> {
    let key = keyplane_core::keyspace::Key::encode(&HostIndexKey { host: host.clone() });
    let opts = keyplane_core::RangeOptions::new(keyplane_core::KeyRange::Key(key.into_bytes()))
        .at_revision(revision);
    let page = store.store().range(opts).await?;
    match page.entries.first() {
        Some(entry) => Ok(Some(
            crate::decode_as::<HostIndexKey>(&entry.value)
                .map_err(|e| e.with_context("key", keyplane_core::raw::escape_bytes(&entry.key)))?,
        )),
        None => Ok(None),
    }
}
