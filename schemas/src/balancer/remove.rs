//! Removing an API key from the cache (the document's `removeStoreCacheForKey`).

use super::cache::Balancer;
use super::guard::Races;
use keyplane_core::Result;

impl Balancer {
    /// Removes API key `id` from the cache: from every group's active list its reverse index
    /// names, then the reverse index and the key object, in one transaction guarded by the
    /// reverse index it read (a concurrent link makes it read again, so no list keeps the
    /// key). Returns whether the key was cached.
    ///
    /// ```
    /// # use keyplane_core::keyspace::TypedStore;
    /// # use keyplane_schemas::balancer::*;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_core::Result<()> {
    /// let cache = Balancer::new(TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new())));
    /// write_example(&cache).await?;
    /// assert!(cache.remove_key(4).await?);
    /// assert_eq!(cache.active_keys(1).await?, [1, 2, 3, 5]);
    /// assert_eq!(cache.active_keys(2).await?, [5, 6, 7, 8]);
    /// assert_eq!((cache.key(4).await?, cache.groups_of(4).await?.len()), (None, 0));
    /// assert!(!cache.remove_key(4).await?);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A retryable `ConditionFailed` when concurrent writers kept changing the key's links
    /// (nothing written); backend errors.
    pub async fn remove_key(&self, id: u64) -> Result<bool> {
        let mut attempts = Races::new("remove", id);
        loop {
            let state = self.read_state(id).await?;
            if state.status.is_none() && state.groups.is_empty() {
                return Ok(false);
            }
            let mut txn = self.typed.txn();
            self.when_groups_are(&mut txn, id, &state.groups);
            for group in &state.groups {
                txn.list_remove(&self.active(*group), &id);
            }
            txn.delete(&self.groups_key(id))
                .delete(&self.object_key(id));
            if self.commit_guarded(txn).await? {
                return Ok(true);
            }
            attempts.lost(self).await?;
        }
    }
}
