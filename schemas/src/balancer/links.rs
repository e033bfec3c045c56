//! Linking and unlinking API keys and groups (M:N).

use super::cache::Balancer;
use super::guard::Races;
use keyplane_core::Result;

impl Balancer {
    /// Links API key `id` to group `group`: the group joins the key's reverse index and, when
    /// the key is active, the key joins the end of the group's active list, in one
    /// transaction. Returns whether the link is new (linking twice changes nothing).
    ///
    /// Safe under concurrent writers: the key's status and links are read, then the
    /// transaction writes only if the status is still the one read and the group is still
    /// absent from the reverse index; otherwise it reads again and retries. Of concurrent
    /// links of one key to one group exactly one reports a new link, and the key is listed
    /// once.
    ///
    /// # Errors
    /// `NotFound` when the key is not cached (nothing written); a retryable
    /// `ConditionFailed` when concurrent writers kept changing the key's status or links
    /// (nothing written); backend errors.
    pub async fn link(&self, id: u64, group: u64) -> Result<bool> {
        let reverse = self.groups(id);
        let mut attempts = Races::new("link", id);
        loop {
            let state = self.read_state(id).await?;
            let Some(status) = state.status else {
                return Err(self.not_found(id));
            };
            if state.groups.contains(&group) {
                return Ok(false);
            }
            let mut txn = self.typed.txn();
            self.when_status(&mut txn, id, Some(&status));
            txn.when_set_lacks(&reverse, &group)
                .set_add(&reverse, &group);
            if status.is_active() {
                txn.list_push(&self.active(group), &id);
            }
            if self.commit_guarded(txn).await? {
                return Ok(true);
            }
            attempts.lost(self).await?;
        }
    }

    /// Unlinks API key `id` from group `group`: the group leaves the key's reverse index and
    /// every occurrence of the key leaves the group's active list, in one transaction that
    /// reads nothing first. Returns whether the key was linked.
    ///
    /// Safe under concurrent writers without a guard: whatever the key's status, an unlinked
    /// key belongs in none of the group's list, and the operations that write from what they
    /// read ([`link`](Self::link), [`set_status`](Self::set_status),
    /// [`put_key`](Self::put_key)) see the changed reverse index and retry.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn unlink(&self, id: u64, group: u64) -> Result<bool> {
        let mut txn = self.typed.txn();
        let linked = txn.set_contains(&self.groups(id), &group);
        txn.set_remove(&self.groups(id), &group)
            .list_remove(&self.active(group), &id);
        txn.commit().await?.collection(&linked)
    }
}
