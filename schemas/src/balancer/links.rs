//! Linking and unlinking API keys and groups (M:N).

use super::cache::{Balancer, list_push, list_remove, set_add, set_remove};
use super::values::KeyStatus;
use kv_core::{Result, Txn};

impl Balancer {
    /// Links API key `id` to group `group`: the group joins the key's reverse index and, when
    /// the key is active, the key joins the end of the group's active list, in one
    /// transaction. Returns whether the link is new (linking twice changes nothing).
    ///
    /// # Errors
    /// `NotFound` when the key is not cached (nothing written); backend errors.
    pub async fn link(&self, id: u64, group: u64) -> Result<bool> {
        let state = self.read_state(id).await?;
        let Some(status) = state.status else {
            return Err(self.not_found(id));
        };
        if state.groups.contains(&group) {
            return Ok(false);
        }
        let mut ops = vec![set_add(&self.groups_key(id), group)];
        if status == KeyStatus::Active {
            ops.push(list_push(&self.active_key(group), id));
        }
        self.typed.store().txn(Txn::new().and_then(ops)).await?;
        Ok(true)
    }

    /// Unlinks API key `id` from group `group`: the group leaves the key's reverse index and
    /// the key leaves the group's active list, in one transaction that reads nothing first.
    /// Returns whether the key was linked.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn unlink(&self, id: u64, group: u64) -> Result<bool> {
        let txn = Txn::new().and_then([
            set_remove(&self.groups_key(id), group),
            list_remove(&self.active_key(group), id),
        ]);
        let response = self.typed.store().txn(txn).await?;
        Ok(matches!(
            response.results.first(),
            Some(kv_core::OpResult::Collection(
                kv_core::CollectionResult::Changed(true)
            ))
        ))
    }
}
