//! Publishing a whole tenant in one transaction.

use super::keys::{
    CodeIndexKey, DatabaseConfigKey, DomainAliasesKey, FtpConfigKey, FtpUserIndexKey, HostIndexKey,
    InternalDomainKey, NameIndexKey, PrimaryDomainKey, StorageConfigKey, TenantMetaKey,
};
use super::model::{Tenant, ValidTenant};
use super::values::{CodeIndex, FtpUserIndex, HostIndex, NameIndex};
use keyplane_core::keyspace::{Key, TxnRead, TypedStore, TypedTxn};
use keyplane_core::{Error, ErrorKind, Result};

impl ValidTenant<'_> {
    /// The code index entry.
    pub(crate) fn code_index(&self) -> (CodeIndexKey, CodeIndex) {
        let meta = &self.tenant.meta;
        let value = CodeIndex {
            id: meta.id,
            code: meta.code.clone(),
            name: meta.name.clone(),
        };
        (
            CodeIndexKey {
                code: self.code.clone(),
            },
            value,
        )
    }

    /// The name index entry; `""` as the primary domain when there is none (§7.6).
    pub(crate) fn name_index(&self) -> (NameIndexKey, NameIndex) {
        let meta = &self.tenant.meta;
        let value = NameIndex {
            id: meta.id,
            code: meta.code.clone(),
            primary_domain: self.tenant.domains.primary.clone().unwrap_or_default(),
        };
        (
            NameIndexKey {
                name: self.name.clone(),
            },
            value,
        )
    }

    /// The value of every FTP-user index entry of this tenant.
    pub(crate) fn ftp_user_index(&self) -> FtpUserIndex {
        let meta = &self.tenant.meta;
        FtpUserIndex {
            tenant_id: meta.id,
            code: meta.code.clone(),
            name: meta.name.clone(),
        }
    }

    /// Success ops of the publishing transaction.
    fn publish_ops(&self) -> usize {
        let t = self.tenant;
        let domains = usize::from(t.domains.primary.is_some())
            + usize::from(!t.domains.aliases.is_empty())
            + usize::from(t.domains.internal.is_some());
        // meta, code and name indexes, storage, then one key per item (two per FTP user).
        3 + domains
            + usize::from(t.storage.is_some())
            + t.databases.len()
            + 2 * t.ftp_users.len()
            + t.hosts.len()
    }
}

/// The keys whose existence makes a publication fail, read in the failure branch.
struct Conflicts {
    meta: TxnRead<TenantMetaKey>,
    code: TxnRead<CodeIndexKey>,
    name: TxnRead<NameIndexKey>,
    ftp: Vec<TxnRead<FtpUserIndexKey>>,
    hosts: Vec<TxnRead<HostIndexKey>>,
}

/// Publishes a new tenant: meta, domains, database configurations, FTP users, storage and
/// the four indexes (code, name, FTP user, host), in one transaction. Returns the revision
/// of the write.
///
/// The transaction creates the meta and every index entry only if absent, so a tenant id,
/// code, name, FTP username or host already taken makes it write nothing; in particular of
/// two tenants claiming one FTP username at once, exactly one is published (§7.5).
///
/// # Errors
/// `InvalidArgument` when [`Tenant::validate`] fails (nothing is sent); `TxnTooLarge` when
/// the tenant needs more operations than the backend takes in one transaction
/// ([`Capabilities::max_txn_ops`](keyplane_core::Capabilities::max_txn_ops)): it is never split;
/// `AlreadyExists` naming every key already taken; backend errors.
///
/// ```
/// use keyplane_schemas::tenant::{example_tenant, publish_tenant, tenant_by_ftp_user, FtpUsername};
/// use keyplane_core::keyspace::TypedStore;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// publish_tenant(&typed, &example_tenant()).await?;
/// let owner = tenant_by_ftp_user(&typed, &FtpUsername::new("sales_ftp").unwrap()).await?;
/// assert_eq!(owner.unwrap().code, "default");
///
/// let err = publish_tenant(&typed, &example_tenant()).await.unwrap_err();
/// assert_eq!(err.kind(), keyplane_core::ErrorKind::AlreadyExists);
/// # Ok(())
/// # }
/// ```
pub async fn publish_tenant(store: &TypedStore, tenant: &Tenant) -> Result<i64> {
    let valid = tenant.checked()?;
    let max = store.store().capabilities().max_txn_ops;
    let needed = valid.publish_ops();
    if needed > max {
        return Err(Error::new(
            ErrorKind::TxnTooLarge,
            format!(
                "publishing tenant {} takes {needed} operations in one transaction; the backend takes at most {max}",
                tenant.id()
            ),
        ));
    }
    let mut txn = store.txn();
    let conflicts = add_publish(&mut txn, &valid);
    let outcome = txn.commit().await?;
    if outcome.succeeded {
        return Ok(outcome.revision);
    }
    let mut taken = Vec::new();
    let mut note = |present: bool, key: String| {
        if present {
            taken.push(key);
        }
    };
    let id = tenant.id();
    note(
        outcome.read(&conflicts.meta)?.is_some(),
        TenantMetaKey { id }.encode(),
    );
    note(
        outcome.read(&conflicts.code)?.is_some(),
        valid.code_index().0.encode(),
    );
    note(
        outcome.read(&conflicts.name)?.is_some(),
        valid.name_index().0.encode(),
    );
    for (read, user) in conflicts.ftp.iter().zip(&valid.ftp_users) {
        let key = FtpUserIndexKey {
            username: user.clone(),
        };
        note(outcome.read(read)?.is_some(), key.encode());
    }
    for (read, host) in conflicts.hosts.iter().zip(&valid.hosts) {
        let key = HostIndexKey { host: host.clone() };
        note(outcome.read(read)?.is_some(), key.encode());
    }
    Err(Error::new(
        ErrorKind::AlreadyExists,
        format!(
            "cannot publish tenant {id}: {} already exist",
            taken.join(", ")
        ),
    )
    .with_context("tenant", id))
}

/// Adds the creation of `valid` to `txn`: creates for the meta and the indexes, puts for the
/// rest; failure-branch reads of every created key.
fn add_publish(txn: &mut TypedTxn, valid: &ValidTenant<'_>) -> Conflicts {
    let t = valid.tenant;
    let id = t.id();
    let meta = TenantMetaKey { id };
    txn.create(&meta, &t.meta);
    if let Some(primary) = &t.domains.primary {
        txn.put(&PrimaryDomainKey { id }, primary);
    }
    if !t.domains.aliases.is_empty() {
        txn.put(&DomainAliasesKey { id }, &t.domains.aliases);
    }
    if let Some(internal) = &t.domains.internal {
        txn.put(&InternalDomainKey { id }, internal);
    }
    for (db, service) in t.databases.iter().zip(&valid.services) {
        let key = DatabaseConfigKey {
            id,
            service: service.clone(),
        };
        txn.put(&key, db);
    }
    for (ftp, user) in t.ftp_users.iter().zip(&valid.ftp_users) {
        txn.put(
            &FtpConfigKey {
                id,
                username: user.clone(),
            },
            ftp,
        );
    }
    if let Some(storage) = &t.storage {
        txn.put(&StorageConfigKey { id }, storage);
    }
    let (code_key, code_value) = valid.code_index();
    txn.create(&code_key, &code_value);
    let (name_key, name_value) = valid.name_index();
    txn.create(&name_key, &name_value);
    let ftp_index = valid.ftp_user_index();
    let mut ftp = Vec::with_capacity(valid.ftp_users.len());
    for user in &valid.ftp_users {
        let key = FtpUserIndexKey {
            username: user.clone(),
        };
        txn.create(&key, &ftp_index);
        ftp.push(key);
    }
    let mut hosts = Vec::with_capacity(valid.hosts.len());
    for (binding, host) in t.hosts.iter().zip(&valid.hosts) {
        let key = HostIndexKey { host: host.clone() };
        let value = HostIndex {
            tenant_id: id,
            code: t.meta.code.clone(),
            host_type: binding.host_type.clone(),
        };
        txn.create(&key, &value);
        hosts.push(key);
    }
    Conflicts {
        meta: txn.get_on_failure(&meta),
        code: txn.get_on_failure(&code_key),
        name: txn.get_on_failure(&name_key),
        ftp: ftp.iter().map(|k| txn.get_on_failure(k)).collect(),
        hosts: hosts.iter().map(|k| txn.get_on_failure(k)).collect(),
    }
}
