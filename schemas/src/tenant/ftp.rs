//! Adding and removing one FTP user, with the global uniqueness of usernames (§7.1, §7.5).

use super::contention::{Contention, DELETING, not_found};
use super::keys::{FtpConfigKey, FtpUserIndexKey, TenantMetaKey};
use super::model::invalid_segment;
use super::segments::FtpUsername;
use super::values::{FtpConfig, FtpUserIndex};
use keyplane_core::keyspace::TypedStore;
use keyplane_core::{CompareOp, Error, ErrorKind, OpResult, Result};

/// Adds one FTP user to an existing tenant: the `ftp/{username}` key and its
/// `_index/ftp-user/{username}` entry in one transaction, the index created only if absent.
/// Of two concurrent creators of one username, in one tenant or two, exactly one succeeds
/// (§7.5). Returns the revision of the write.
///
/// The transaction is guarded by the meta's mod revision (the meta itself is not written):
/// the index takes the tenant's current code and name, a concurrent change of the meta
/// makes it read again, and a tenant that [`delete_tenant`](super::delete_tenant) has marked
/// as being deleted takes no new user (`NotFound`), so no index entry outlives its tenant.
///
/// # Errors
/// `InvalidArgument` for a username outside `[a-zA-Z0-9._-]+` (§7.3); `NotFound` when the
/// tenant `config.tenantId` does not exist; `AlreadyExists` when the username is taken;
/// `ConditionFailed` (retryable) when the tenant kept changing; backend errors.
///
/// ```
/// use keyplane_schemas::tenant::{add_ftp_user, example_tenant, publish_tenant, remove_ftp_user};
/// use keyplane_core::keyspace::TypedStore;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_core::Result<()> {
/// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
/// let tenant = example_tenant();
/// publish_tenant(&typed, &tenant).await?;
///
/// let mut user = tenant.ftp_users[0].clone();
/// user.username = "backup.ftp".to_owned();
/// add_ftp_user(&typed, &user).await?;
/// let index = typed.store().get(b"jxt/tenants/_index/ftp-user/backup.ftp").await?;
/// assert!(index.is_some());
/// // Taken: by this tenant or any other.
/// let err = add_ftp_user(&typed, &user).await.unwrap_err();
/// assert_eq!(err.kind(), keyplane_core::ErrorKind::AlreadyExists);
///
/// assert!(remove_ftp_user(&typed, 1, "backup.ftp").await?);
/// let index = typed.store().get(b"jxt/tenants/_index/ftp-user/backup.ftp").await?;
/// assert!(index.is_none());
/// # Ok(())
/// # }
/// ```
pub async fn add_ftp_user(store: &TypedStore, config: &FtpConfig) -> Result<i64> {
    let username =
        FtpUsername::new(config.username.as_str()).map_err(|e| invalid_segment("username", e))?;
    let id = config.tenant_id;
    let meta_key = TenantMetaKey { id };
    let index_key = FtpUserIndexKey {
        username: username.clone(),
    };
    let mut contention = Contention::new("adding an FTP user");
    loop {
        contention.next().await?;
        let Some(meta) = store.get_versioned(&meta_key).await? else {
            return Err(not_found(id));
        };
        if meta.value.status == DELETING {
            return Err(not_found(id));
        }
        let index = FtpUserIndex {
            tenant_id: id,
            code: meta.value.code.clone(),
            name: meta.value.name.clone(),
        };
        let mut txn = store.txn();
        txn.when_mod_revision(&meta_key, CompareOp::Equal, meta.mod_revision)
            .create(&index_key, &index)
            .create(
                &FtpConfigKey {
                    id,
                    username: username.clone(),
                },
                config,
            );
        let owner = txn.get_on_failure(&index_key);
        let outcome = txn.commit().await?;
        if outcome.succeeded {
            return Ok(outcome.revision);
        }
        if let Some(owner) = outcome.read(&owner)? {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!(
                    "FTP username {username} already belongs to tenant {}",
                    owner.value.tenant_id
                ),
            )
            .with_context("username", &username));
        }
        // The meta changed, or an FTP key without its index exists: re-read.
        if store
            .exists(&FtpConfigKey {
                id,
                username: username.clone(),
            })
            .await?
        {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("tenant {id} already has the FTP user {username}"),
            ));
        }
    }
}

/// Removes one FTP user of a tenant: its `ftp/{username}` key and, when it points at this
/// tenant, its index entry, in one transaction. The tenant's `ftp/` directory is left empty
/// when it was the last user, with no placeholder (§7.1). Returns whether the user existed.
///
/// # Errors
/// `InvalidArgument` for a username outside `[a-zA-Z0-9._-]+`; `ConditionFailed` (retryable)
/// when the index kept changing; backend errors.
pub async fn remove_ftp_user(store: &TypedStore, tenant_id: u64, username: &str) -> Result<bool> {
    let username = FtpUsername::new(username).map_err(|e| invalid_segment("username", e))?;
    let index_key = FtpUserIndexKey {
        username: username.clone(),
    };
    let ftp_key = FtpConfigKey {
        id: tenant_id,
        username,
    };
    let mut contention = Contention::new("removing an FTP user");
    loop {
        contention.next().await?;
        let index = store.get_versioned(&index_key).await?;
        let mut txn = store.txn();
        match &index {
            Some(index) if index.value.tenant_id == tenant_id => {
                txn.when_mod_revision(&index_key, CompareOp::Equal, index.mod_revision)
                    .delete(&index_key);
            }
            // Absent, or another tenant's: guard that it did not become ours meanwhile.
            Some(index) => {
                txn.when_mod_revision(&index_key, CompareOp::Equal, index.mod_revision);
            }
            None => {
                txn.when_absent(&index_key);
            }
        }
        txn.delete(&ftp_key);
        let outcome = txn.commit().await?;
        if outcome.succeeded {
            let deleted = outcome.results().iter().rev().find_map(|r| match r {
                OpResult::Delete { deleted } => Some(*deleted),
                _ => None,
            });
            return Ok(deleted.unwrap_or(0) > 0);
        }
    }
}
