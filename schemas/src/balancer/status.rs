//! Writing key objects and changing a key's status, with the fan-out to every group's
//! active list through the reverse index.

use super::cache::{Balancer, list_push, list_remove, map_put};
use super::values::{API_KEY_FIELD, ApiKeyRecord, KeyStatus, STATUS_FIELD};
use kv_core::{Error, Result, Txn};

impl Balancer {
    /// Writes the object of API key `id`; when its status changes, the key also leaves (or
    /// rejoins) the active list of every group it belongs to, in the same transaction.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty `api_key` (nothing written); backend errors.
    pub async fn put_key(&self, id: u64, record: &ApiKeyRecord) -> Result<()> {
        if record.api_key.is_empty() {
            return Err(
                Error::invalid_argument("an API key's value must not be empty")
                    .with_context("id", id),
            );
        }
        self.write(id, Some(&record.api_key), record.status).await
    }

    /// Changes the status of API key `id`. From `active` to `disabled` the key is removed
    /// from the active list of every group of its reverse index (`key:{id}:groups`), and
    /// back to `active` it is appended to each of them again: the status field and every
    /// list change are one transaction. Setting the status it already has changes nothing.
    ///
    /// The groups are read just before the transaction; changes of one key's status or
    /// links are expected from one writer at a time (the admin service), as in the
    /// document's system.
    ///
    /// # Errors
    /// `NotFound` when the key is not cached (nothing written); backend errors.
    pub async fn set_status(&self, id: u64, status: KeyStatus) -> Result<()> {
        self.write(id, None, status).await
    }

    async fn write(&self, id: u64, api_key: Option<&str>, status: KeyStatus) -> Result<()> {
        let state = self.read_state(id).await?;
        if api_key.is_none() && state.status.is_none() {
            return Err(self.not_found(id));
        }
        let object = self.object_key(id);
        let mut ops = Vec::with_capacity(2 + state.groups.len());
        if let Some(api_key) = api_key {
            ops.push(map_put(&object, API_KEY_FIELD, api_key));
        }
        if state.status != Some(status) {
            ops.push(map_put(&object, STATUS_FIELD, status.as_str()));
            // The lists hold a key exactly when it is active, so a transition moves it.
            let was_active = state.status == Some(KeyStatus::Active);
            for group in &state.groups {
                let list = self.active_key(*group);
                match (was_active, status) {
                    (true, KeyStatus::Disabled) => ops.push(list_remove(&list, id)),
                    (false, KeyStatus::Active) => ops.push(list_push(&list, id)),
                    _ => {}
                }
            }
        }
        if ops.is_empty() {
            return Ok(());
        }
        self.typed.store().txn(Txn::new().and_then(ops)).await?;
        Ok(())
    }
}
