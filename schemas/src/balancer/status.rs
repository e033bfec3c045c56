//! Writing key objects and changing a key's status, with the fan-out to every group's
//! active list through the reverse index.

use super::cache::Balancer;
use super::guard::Races;
use super::values::{API_KEY_FIELD, ApiKeyRecord, KeyStatus, STATUS_FIELD};
use keyplane_core::{Error, Result};

impl Balancer {
    /// Writes the object of API key `id`; when its status changes, the key also leaves (or
    /// rejoins) the active list of every group it belongs to, in the same transaction.
    ///
    /// Safe under concurrent writers, as [`set_status`](Self::set_status) is: the write
    /// applies to the status and groups it read, or is retried.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty `api_key` (nothing written); the errors of
    /// [`set_status`](Self::set_status) but `NotFound`.
    pub async fn put_key(&self, id: u64, record: &ApiKeyRecord) -> Result<()> {
        if record.api_key.is_empty() {
            return Err(
                Error::invalid_argument("an API key's value must not be empty")
                    .with_context("id", id),
            );
        }
        self.write(id, Some(&record.api_key), &record.status).await
    }

    /// Changes the status of API key `id`. From `active` to any other status (`disabled`,
    /// or one of [`KeyStatus::Other`]) the key is removed from the active list of every
    /// group of its reverse index (`key:{id}:groups`), and back to `active` it is inserted
    /// at the head of each of them again, where the document's `LPush` puts it (so it is
    /// handed out next): the status field and every list change are one transaction.
    /// Between two statuses that are not active only the field changes. Setting the status
    /// it already has changes nothing.
    ///
    /// Safe under concurrent writers (links, unlinks, other status changes, from any number
    /// of processes): the status and the groups are read, then the transaction writes only
    /// if the status is still the one read and the reverse index still holds exactly the
    /// groups read (its size and each group); otherwise it reads again and retries. So a
    /// key is never left listed in a group it has left, missing from one it has joined, or
    /// listed twice.
    ///
    /// # Errors
    /// `NotFound` when the key is not cached (nothing written); `TxnTooLarge` when the key
    /// belongs to more groups than one transaction of the backend takes (a change of
    /// activity needs two compares plus one compare and one list op per group, within
    /// `max_txn_ops`; etcd's emulated lists take several ops each; nothing written); a
    /// retryable `ConditionFailed` when concurrent writers kept changing the key's status or
    /// groups (nothing written); backend errors.
    pub async fn set_status(&self, id: u64, status: KeyStatus) -> Result<()> {
        self.write(id, None, &status).await
    }

    async fn write(&self, id: u64, api_key: Option<&str>, status: &KeyStatus) -> Result<()> {
        let object = self.object(id);
        let operation = if api_key.is_some() {
            "put_key"
        } else {
            "set_status"
        };
        let mut attempts = Races::new(operation, id);
        loop {
            let state = self.read_state(id).await?;
            if api_key.is_none() && state.status.is_none() {
                return Err(self.not_found(id));
            }
            // Whatever is written, the status read decides it: a put of the same status
            // writes no list, a change moves the key.
            let mut txn = self.typed.txn();
            self.when_status(&mut txn, id, state.status.as_ref());
            let mut writes = false;
            if let Some(api_key) = api_key {
                txn.map_put(&object, &API_KEY_FIELD.into(), &api_key.into());
                writes = true;
            }
            if state.status.as_ref() != Some(status) {
                txn.map_put(&object, &STATUS_FIELD.into(), &status.as_str().into());
                writes = true;
                // The lists hold a key exactly when it is active, so a transition moves it
                // in every group read, and only then do the groups matter.
                let was_active = state.status.as_ref().is_some_and(KeyStatus::is_active);
                if was_active != status.is_active() {
                    self.when_groups_are(&mut txn, id, &state.groups);
                    for group in &state.groups {
                        let list = self.active(*group);
                        if was_active {
                            txn.list_remove(&list, &id);
                        } else {
                            // The document's LPush: a re-activated key is handed out next.
                            txn.list_push_front(&list, &id);
                        }
                    }
                }
            }
            if !writes {
                return Ok(());
            }
            if self.commit_guarded(txn).await? {
                return Ok(());
            }
            attempts.lost(self).await?;
        }
    }
}
