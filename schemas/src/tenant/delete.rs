//! Deleting a tenant with all its indexes (§7.2).

use super::contention::{Contention, DELETING};
use super::keys::{
    CodeIndexKey, FtpUserIndexKey, HostIndexKey, NameIndexKey, TenantDir, TenantMetaKey,
};
use super::segments::{HostName, TenantCode, TenantName};
use super::snapshot::Snapshot;
use super::values::TenantMeta;
use keyplane_core::keyspace::{TypedStore, TypedTxn};
use keyplane_core::{CompareOp, Result};

/// What [`delete_tenant`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantDeletion {
    /// Whether anything of the tenant was left to delete.
    pub found: bool,
    /// How many index entries pointing at the tenant were deleted.
    pub indexes_deleted: usize,
    /// How many transactions committed (1 when everything fit in one).
    pub transactions: usize,
}

/// One index entry that points at the tenant, with the mod revision it was read at.
#[derive(Debug)]
enum OwnedIndex {
    Ftp(FtpUserIndexKey, i64),
    Host(HostIndexKey, i64),
    Code(CodeIndexKey, i64),
    Name(NameIndexKey, i64),
}

impl OwnedIndex {
    /// Deletes the entry in `txn`, if it is still the one read.
    fn add_delete(&self, txn: &mut TypedTxn) {
        fn guarded<K: keyplane_core::keyspace::PlainKey>(
            txn: &mut TypedTxn,
            key: &K,
            revision: i64,
        ) {
            txn.when_mod_revision(key, CompareOp::Equal, revision)
                .delete(key);
        }
        match self {
            OwnedIndex::Ftp(key, rev) => guarded(txn, key, *rev),
            OwnedIndex::Host(key, rev) => guarded(txn, key, *rev),
            OwnedIndex::Code(key, rev) => guarded(txn, key, *rev),
            OwnedIndex::Name(key, rev) => guarded(txn, key, *rev),
        }
    }
}

/// The index entries pointing at tenant `id`, in the order of §7.2: FTP users (from the
/// `ftp/` keys), hosts (from the domain keys), code and name (from the meta).
async fn owned_indexes(store: &TypedStore, id: u64, snap: &Snapshot) -> Result<Vec<OwnedIndex>> {
    let mut owned = Vec::new();
    for username in &snap.ftp_usernames {
        let key = FtpUserIndexKey {
            username: username.clone(),
        };
        if let Some(v) = store.get_versioned(&key).await?
            && v.value.tenant_id == id
        {
            owned.push(OwnedIndex::Ftp(key, v.mod_revision));
        }
    }
    for domain in snap.domains.all() {
        let Ok(host) = HostName::new(domain) else {
            continue;
        };
        let key = HostIndexKey { host };
        if let Some(v) = store.get_versioned(&key).await?
            && v.value.tenant_id == id
        {
            owned.push(OwnedIndex::Host(key, v.mod_revision));
        }
    }
    if let Some((meta, _)) = &snap.meta {
        if let Ok(code) = TenantCode::new(meta.code.as_str()) {
            let key = CodeIndexKey { code };
            if let Some(v) = store.get_versioned(&key).await?
                && v.value.id == id
            {
                owned.push(OwnedIndex::Code(key, v.mod_revision));
            }
        }
        if let Ok(name) = TenantName::new(meta.name.as_str()) {
            let key = NameIndexKey { name };
            if let Some(v) = store.get_versioned(&key).await?
                && v.value.id == id
            {
                owned.push(OwnedIndex::Name(key, v.mod_revision));
            }
        }
    }
    Ok(owned)
}

/// Adds the deletion of the tenant's directory to `txn`, guarded by its meta being the one
/// read (or still absent), so that a tenant changed meanwhile is read again.
fn add_data_delete(txn: &mut TypedTxn, id: u64, snap: &Snapshot) {
    let meta = TenantMetaKey { id };
    match &snap.meta {
        Some((_, revision)) => txn.when_mod_revision(&meta, CompareOp::Equal, *revision),
        None => txn.when_absent(&meta),
    };
    txn.delete_prefix(&TenantDir { id });
}

/// Deletes tenant `id`: every index entry that points at it (FTP users, hosts, code, name),
/// then all of `jxt/tenants/{id}/`.
///
/// The first transaction marks the tenant's meta with the status `deleting`: from then on
/// [`add_ftp_user`](super::add_ftp_user) and [`update_tenant`](super::update_tenant) refuse
/// the tenant, so the FTP users and domains read next are all there is to unindex.
///
/// Then, when everything fits in one transaction of the backend
/// ([`Capabilities::max_txn_ops`](keyplane_core::Capabilities::max_txn_ops)), it is one
/// transaction. Otherwise the indexes go first, in the order of §7.2 and in transactions of
/// at most that size, and the tenant's data last, in one transaction: the data that the
/// indexes are found from outlives them, so an interrupted deletion is finished by running it
/// again. Each index entry is deleted only if it still points at the tenant, unchanged since
/// it was read; the data only if the meta is unchanged; otherwise the tenant is read again.
///
/// Deleting a tenant that does not exist does nothing and reports `found: false`.
///
/// # Errors
/// `ConditionFailed` (retryable) when concurrent writers kept changing the tenant; `Codec`
/// when an index entry does not decode; backend errors.
///
/// ```
/// use keyplane_schemas::tenant::{delete_tenant, example_tenant, publish_tenant};
/// use keyplane_core::keyspace::TypedStore;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// publish_tenant(&typed, &example_tenant()).await?;
/// let done = delete_tenant(&typed, 1).await?;
/// // One transaction marks the tenant, one deletes it with its indexes.
/// assert_eq!((done.found, done.indexes_deleted, done.transactions), (true, 5, 2));
/// assert!(!delete_tenant(&typed, 1).await?.found);
/// # Ok(())
/// # }
/// ```
pub async fn delete_tenant(store: &TypedStore, id: u64) -> Result<TenantDeletion> {
    let max = store.store().capabilities().max_txn_ops.max(1);
    let mut out = TenantDeletion::default();
    let mut contention = Contention::new("deleting a tenant");
    'attempt: loop {
        contention.next().await?;
        let snap = Snapshot::read(store.store().as_ref(), id).await?;
        if snap.keys == 0 {
            return Ok(out);
        }
        out.found = true;
        // First mark the tenant as being deleted, so that no FTP user joins it while its
        // indexes are found and deleted (`add_ftp_user` refuses a tenant so marked).
        if let Some((meta, revision)) = &snap.meta
            && meta.status != DELETING
        {
            let key = TenantMetaKey { id };
            let marked = TenantMeta {
                status: DELETING.to_owned(),
                ..meta.clone()
            };
            let mut txn = store.txn();
            txn.when_mod_revision(&key, CompareOp::Equal, *revision)
                .put(&key, &marked);
            if txn.commit().await?.succeeded {
                out.transactions += 1;
            }
            continue;
        }
        let owned = owned_indexes(store, id, &snap).await?;
        if owned.len() < max {
            let mut txn = store.txn();
            owned.iter().for_each(|index| index.add_delete(&mut txn));
            add_data_delete(&mut txn, id, &snap);
            if txn.commit().await?.succeeded {
                out.transactions += 1;
                out.indexes_deleted += owned.len();
                return Ok(out);
            }
            continue;
        }
        for batch in owned.chunks(max) {
            let mut txn = store.txn();
            batch.iter().for_each(|index| index.add_delete(&mut txn));
            if !txn.commit().await?.succeeded {
                continue 'attempt;
            }
            out.transactions += 1;
            out.indexes_deleted += batch.len();
        }
        let mut txn = store.txn();
        add_data_delete(&mut txn, id, &snap);
        if txn.commit().await?.succeeded {
            out.transactions += 1;
            return Ok(out);
        }
    }
}
