//! Updating a published tenant: any change to its meta, domains, hosts, storage, database
//! configurations or FTP users, as one transaction that writes exactly the keys whose
//! bytes change and moves the index entries with them.

use super::contention::{Contention, DELETING, not_found};
use super::keys::TenantValue;
use super::keys::{
    CodeIndexKey, DatabaseConfigKey, DomainAliasesKey, FtpConfigKey, FtpUserIndexKey, HostIndexKey,
    InternalDomainKey, NameIndexKey, PrimaryDomainKey, StorageConfigKey, TenantKeyspace,
    TenantMetaKey,
};
use super::lookup::load_tenant;
use super::model::{Domains, HostBinding, Tenant, ValidTenant, invalid_segment};
use super::segments::{FtpUsername, ServiceCode};
use super::values::{DatabaseConfig, FtpConfig, HostIndex, StorageConfig, TenantMeta};
use crate::encode_as;
use keyplane_core::keyspace::{CodecContext, KeyspaceValues};
use keyplane_core::keyspace::{Key, Keyspace, TypedStore};
use keyplane_core::{Compare, CompareOp, Entry, Error, ErrorKind, Result, Txn, TxnOp};
use std::collections::{BTreeMap, BTreeSet};

/// Every key the tenant's publication writes, with its bytes: the data keys and the index
/// entries (which carry the meta's code and name).
fn layout(valid: &ValidTenant<'_>) -> Result<BTreeMap<String, Vec<u8>>> {
    let t = valid.tenant;
    let id = t.id();
    let mut out = BTreeMap::new();
    out.insert(
        TenantMetaKey { id }.encode(),
        encode_as::<TenantMetaKey>(&t.meta)?,
    );
    if let Some(primary) = &t.domains.primary {
        out.insert(
            PrimaryDomainKey { id }.encode(),
            encode_as::<PrimaryDomainKey>(primary)?,
        );
    }
    if !t.domains.aliases.is_empty() {
        out.insert(
            DomainAliasesKey { id }.encode(),
            encode_as::<DomainAliasesKey>(&t.domains.aliases)?,
        );
    }
    if let Some(internal) = &t.domains.internal {
        out.insert(
            InternalDomainKey { id }.encode(),
            encode_as::<InternalDomainKey>(internal)?,
        );
    }
    for (db, service) in t.databases.iter().zip(&valid.services) {
        let key = DatabaseConfigKey {
            id,
            service: service.clone(),
        };
        out.insert(key.encode(), encode_as::<DatabaseConfigKey>(db)?);
    }
    let ftp_index = valid.ftp_user_index();
    for (ftp, user) in t.ftp_users.iter().zip(&valid.ftp_users) {
        let key = FtpConfigKey {
            id,
            username: user.clone(),
        };
        out.insert(key.encode(), encode_as::<FtpConfigKey>(ftp)?);
        let index = FtpUserIndexKey {
            username: user.clone(),
        };
        out.insert(index.encode(), encode_as::<FtpUserIndexKey>(&ftp_index)?);
    }
    if let Some(storage) = &t.storage {
        out.insert(
            StorageConfigKey { id }.encode(),
            encode_as::<StorageConfigKey>(storage)?,
        );
    }
    let (code_key, code) = valid.code_index();
    out.insert(code_key.encode(), encode_as::<CodeIndexKey>(&code)?);
    let (name_key, name) = valid.name_index();
    out.insert(name_key.encode(), encode_as::<NameIndexKey>(&name)?);
    for (binding, host) in t.hosts.iter().zip(&valid.hosts) {
        let value = HostIndex {
            tenant_id: id,
            code: t.meta.code.clone(),
            host_type: binding.host_type.clone(),
        };
        let key = HostIndexKey { host: host.clone() };
        out.insert(key.encode(), encode_as::<HostIndexKey>(&value)?);
    }
    Ok(out)
}

/// The tenant an index entry points at; `None` for data keys (always the tenant's own).
fn owner(key: &str, bytes: &[u8]) -> Option<u64> {
    let parsed = TenantKeyspace::parse(key).ok()?;
    match parsed.decode_value(bytes, &CodecContext::new()).ok()? {
        TenantValue::CodeIndex(v) => Some(v.id),
        TenantValue::NameIndex(v) => Some(v.id),
        TenantValue::FtpUserIndex(v) => Some(v.tenant_id),
        TenantValue::HostIndex(v) => Some(v.tenant_id),
        _ => None,
    }
}

fn is_index(key: &str) -> bool {
    key.starts_with("jxt/tenants/_index/")
}

/// Changes tenant `id` with `change` and writes the difference in one transaction: keys
/// whose bytes change are rewritten, keys the change drops are deleted, new keys created,
/// and the index entries follow (a changed code or name moves the code and name entries and
/// rewrites the FTP-user and host entries that carry them; a renamed FTP user moves its
/// index entry; a removed host leaves the host index). Every key written is guarded by the
/// mod revision it was read at (or its absence), and the meta by its own, so a concurrent
/// change makes the whole update read again and `change` run again; a new index entry that
/// another tenant holds fails the update with `AlreadyExists` and writes nothing. An update
/// that changes nothing writes nothing. Returns the revision of the write (the store's
/// current one when nothing changed).
///
/// Entries of the indexes that point at another tenant are never touched. A user added by
/// [`add_ftp_user`](super::add_ftp_user) while a change of code or name was committing gets
/// its index entry brought up to date before the update returns.
///
/// ```
/// use keyplane_schemas::tenant::{example_tenant, publish_tenant, update_tenant, tenant_by_code, TenantCode};
/// use keyplane_core::keyspace::TypedStore;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// publish_tenant(&typed, &example_tenant()).await?;
/// update_tenant(&typed, 1, |t| { t.meta.code = "acme".into(); Ok(()) }).await?;
/// assert!(tenant_by_code(&typed, &TenantCode::new("default").unwrap()).await?.is_none());
/// assert_eq!(tenant_by_code(&typed, &TenantCode::new("acme").unwrap()).await?.unwrap().id, 1);
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// `NotFound` when the tenant does not exist or is being deleted; `InvalidArgument` when the
/// changed tenant fails [`Tenant::validate`] or `change` changes its id (nothing written);
/// `AlreadyExists` naming an index entry another tenant holds; `TxnTooLarge` when the
/// update needs more compares or operations than one transaction of the backend takes;
/// `ConditionFailed` (retryable) when concurrent writers kept changing the tenant; an
/// error from `change`, as it is; backend errors.
pub async fn update_tenant(
    store: &TypedStore,
    id: u64,
    mut change: impl FnMut(&mut Tenant) -> Result<()>,
) -> Result<i64> {
    let mut contention = Contention::new("updating a tenant");
    loop {
        contention.next().await?;
        let Some(old) = load_tenant(store, id).await? else {
            return Err(not_found(id));
        };
        if old.meta.status == DELETING {
            return Err(being_deleted(id));
        }
        let mut new = old.clone();
        change(&mut new)?;
        if new.meta.id != id {
            return Err(
                Error::invalid_argument("an update cannot change the tenant id")
                    .with_context("tenant", id),
            );
        }
        let before = layout(&old.checked()?)?;
        let after = layout(&new.checked()?)?;
        match write_difference(store, id, &before, &after).await? {
            Written::Done(revision) => {
                if (old.meta.code != new.meta.code || old.meta.name != new.meta.name)
                    && revision.is_some()
                {
                    refresh_ftp_indexes(store, id).await?;
                }
                return match revision {
                    Some(revision) => Ok(revision),
                    None => store.revision().await,
                };
            }
            Written::Raced => {}
        }
    }
}

enum Written {
    /// Written at this revision, or nothing to write (`None`).
    Done(Option<i64>),
    /// A compare failed: read again.
    Raced,
}

/// Writes `after` over `before` in one guarded transaction.
async fn write_difference(
    store: &TypedStore,
    id: u64,
    before: &BTreeMap<String, Vec<u8>>,
    after: &BTreeMap<String, Vec<u8>>,
) -> Result<Written> {
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let meta = TenantMetaKey { id }.encode();
    let mut compares = Vec::new();
    let mut ops = Vec::new();
    let mut created = Vec::new();
    for key in keys {
        let desired = after.get(key);
        if before.get(key) == desired && key != &meta {
            continue;
        }
        let current: Option<Entry> = store.store().get(key.as_bytes()).await?;
        if let Some(current) = &current
            && is_index(key)
            && owner(key, &current.value).is_some_and(|o| o != id)
        {
            if desired.is_some() {
                return Err(Error::new(
                    ErrorKind::AlreadyExists,
                    format!(
                        "{key} belongs to tenant {}",
                        owner(key, &current.value).unwrap_or_default()
                    ),
                )
                .with_context("tenant", id));
            }
            // Another tenant's entry: not this tenant's to delete.
            continue;
        }
        if key == &meta {
            let Some(current) = &current else {
                return Ok(Written::Raced);
            };
            compares.push(Compare::mod_revision(
                key,
                CompareOp::Equal,
                current.mod_revision,
            ));
            if Some(&current.value) != desired
                && let Some(desired) = desired
            {
                ops.push(TxnOp::put(key, desired));
            }
            continue;
        }
        match (&current, desired) {
            (None, None) => {}
            (None, Some(desired)) => {
                compares.push(Compare::absent(key));
                ops.push(TxnOp::put(key, desired));
                created.push(key.clone());
            }
            (Some(current), None) => {
                compares.push(Compare::mod_revision(
                    key,
                    CompareOp::Equal,
                    current.mod_revision,
                ));
                ops.push(TxnOp::delete(key));
            }
            (Some(current), Some(desired)) => {
                compares.push(Compare::mod_revision(
                    key,
                    CompareOp::Equal,
                    current.mod_revision,
                ));
                if &current.value != desired {
                    ops.push(TxnOp::put(key, desired));
                }
            }
        }
    }
    if ops.is_empty() {
        return Ok(Written::Done(None));
    }
    let txn = Txn::new().when(compares).and_then(ops);
    txn.validate(store.store().capabilities())?;
    let response = store.store().txn(txn).await?;
    if response.succeeded {
        return Ok(Written::Done(Some(response.revision)));
    }
    // A new index entry taken by another tenant meanwhile is a conflict, not a race.
    for key in created.iter().filter(|k| is_index(k)) {
        if let Some(entry) = store.store().get(key.as_bytes()).await?
            && owner(key, &entry.value).is_some_and(|o| o != id)
        {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!(
                    "{key} belongs to tenant {}",
                    owner(key, &entry.value).unwrap_or_default()
                ),
            )
            .with_context("tenant", id));
        }
    }
    Ok(Written::Raced)
}

/// Brings every FTP-user index entry of tenant `id` to its meta's code and name (for a user
/// added while the meta changed), each guarded by the revision read.
async fn refresh_ftp_indexes(store: &TypedStore, id: u64) -> Result<()> {
    let mut contention = Contention::new("refreshing FTP-user indexes");
    loop {
        contention.next().await?;
        let Some(tenant) = load_tenant(store, id).await? else {
            return Ok(());
        };
        let valid = tenant.checked()?;
        let desired = encode_as::<FtpUserIndexKey>(&valid.ftp_user_index())?;
        let mut raced = false;
        for user in &valid.ftp_users {
            let key = FtpUserIndexKey {
                username: user.clone(),
            }
            .encode();
            let Some(current) = store.store().get(key.as_bytes()).await? else {
                continue;
            };
            if owner(&key, &current.value) != Some(id) || current.value == desired {
                continue;
            }
            let txn = Txn::new()
                .when([Compare::mod_revision(
                    &key,
                    CompareOp::Equal,
                    current.mod_revision,
                )])
                .and_then([TxnOp::put(&key, &desired)]);
            raced |= !store.store().txn(txn).await?.succeeded;
        }
        if !raced {
            return Ok(());
        }
    }
}

fn being_deleted(id: u64) -> Error {
    Error::new(ErrorKind::NotFound, format!("tenant {id} is being deleted"))
        .with_context("tenant", id)
}

/// Replaces tenant `meta.id`'s meta: a changed code or name moves the code and name index
/// entries and rewrites the FTP-user and host entries that carry them, in one transaction
/// ([`update_tenant`]).
///
/// # Errors
/// As [`update_tenant`].
pub async fn update_meta(store: &TypedStore, meta: &TenantMeta) -> Result<i64> {
    update_tenant(store, meta.id, |t| {
        t.meta = meta.clone();
        Ok(())
    })
    .await
}

/// Replaces tenant `id`'s domains and host bindings: domain keys written or deleted, host
/// index entries added, changed and removed, in one transaction ([`update_tenant`]). Every
/// host must be one of the domains.
///
/// # Errors
/// As [`update_tenant`].
pub async fn set_domains(
    store: &TypedStore,
    id: u64,
    domains: &Domains,
    hosts: &[HostBinding],
) -> Result<i64> {
    update_tenant(store, id, |t| {
        t.domains = domains.clone();
        t.hosts = hosts.to_vec();
        Ok(())
    })
    .await
}

/// Writes (`Some`) or deletes (`None`) tenant `id`'s storage configuration
/// ([`update_tenant`]).
///
/// # Errors
/// As [`update_tenant`].
pub async fn set_storage(
    store: &TypedStore,
    id: u64,
    storage: Option<&StorageConfig>,
) -> Result<i64> {
    update_tenant(store, id, |t| {
        t.storage = storage.cloned();
        Ok(())
    })
    .await
}

/// Removes tenant `id`'s database configuration of `service`; returns whether there was
/// one (nothing is written otherwise).
///
/// # Errors
/// `InvalidArgument` for a service code outside `[a-z0-9-]+`; as [`update_tenant`].
pub async fn remove_database_config(store: &TypedStore, id: u64, service: &str) -> Result<bool> {
    ServiceCode::new(service).map_err(|e| invalid_segment("serviceCode", e))?;
    let mut found = false;
    update_tenant(store, id, |t| {
        let before = t.databases.len();
        t.databases.retain(|db| db.service_code != service);
        found = t.databases.len() != before;
        Ok(())
    })
    .await?;
    Ok(found)
}

/// Writes tenant `id`'s database configuration for `config.serviceCode` (added or replaced)
/// through [`update_tenant`].
///
/// # Errors
/// As [`update_tenant`].
pub async fn set_database_config(
    store: &TypedStore,
    id: u64,
    config: &DatabaseConfig,
) -> Result<i64> {
    update_tenant(store, id, |t| {
        match t
            .databases
            .iter_mut()
            .find(|db| db.service_code == config.service_code)
        {
            Some(db) => *db = config.clone(),
            None => t.databases.push(config.clone()),
        }
        Ok(())
    })
    .await
}

/// Changes the password hash of tenant `id`'s FTP user `username` ([`update_tenant`]).
///
/// # Errors
/// `NotFound` when the tenant has no such user; as [`update_tenant`].
pub async fn change_ftp_password(
    store: &TypedStore,
    id: u64,
    username: &str,
    password_hash: &str,
) -> Result<i64> {
    update_tenant(store, id, |t| {
        let user = ftp_user(t, username)?;
        user.password_hash = password_hash.to_owned();
        Ok(())
    })
    .await
}

/// Renames tenant `id`'s FTP user `from` to `to`: the `ftp/{from}` key and its index entry
/// are deleted, `ftp/{to}` and its entry created, in one transaction ([`update_tenant`]).
/// Usernames stay unique across tenants: of concurrent renames to one name, exactly one
/// succeeds and the others fail with `AlreadyExists`.
///
/// # Errors
/// `InvalidArgument` for a name outside `[a-zA-Z0-9._-]+`; `NotFound` when the tenant has no
/// user `from`; `AlreadyExists` when `to` is taken (by this tenant or another); as
/// [`update_tenant`].
pub async fn rename_ftp_user(store: &TypedStore, id: u64, from: &str, to: &str) -> Result<i64> {
    FtpUsername::new(to).map_err(|e| invalid_segment("username", e))?;
    update_tenant(store, id, |t| {
        if t.ftp_users.iter().any(|u| u.username == to) {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("tenant {id} already has the FTP user {to}"),
            ));
        }
        ftp_user(t, from)?.username = to.to_owned();
        Ok(())
    })
    .await
}

fn ftp_user<'t>(t: &'t mut Tenant, username: &str) -> Result<&'t mut FtpConfig> {
    let id = t.id();
    t.ftp_users
        .iter_mut()
        .find(|u| u.username == username)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("tenant {id} has no FTP user {username}"),
            )
        })
}
