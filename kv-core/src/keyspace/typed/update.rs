//! [`TypedStore::update`]: read, change, write back only if nobody wrote in between, and try
//! again if someone did (etcd's STM, Kubernetes' `GuaranteedUpdate`), typed.

use super::{TypedStore, ValueOf};
use crate::CompareOp;
use crate::keyspace::key::PlainKey;
use crate::retry::Backoff;
use crate::{Error, ErrorKind, Result};

impl TypedStore {
    /// Updates `key` with `change`, which gets the current value (`None` for an absent key)
    /// and returns the new one (`None` deletes the key; returning the current value writes
    /// nothing). The write is a transaction guarded by the mod revision that was read: when
    /// another writer got there first, `change` runs again on the newer value, with jittered
    /// backoff ([`Backoff::default`]). The key keeps its lease.
    ///
    /// Returns the revision of the write (or of the read, when nothing was written).
    ///
    /// ```
    /// use keyplane_core::keyspace::{Json, Key, TypedStore};
    ///
    /// #[derive(Key, Debug, Clone, PartialEq)]
    /// #[kv(template = "counters/{id}", value = Json<u64>)]
    /// struct Counter { id: u32 }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_core::Result<()> {
    /// let typed = TypedStore::new(std::sync::Arc::new(keyplane_mem::MemStore::new()));
    /// let hits = Counter { id: 1 };
    /// let mut tasks = Vec::new();
    /// for _ in 0..8 {
    ///     let (typed, hits) = (typed.clone(), hits.clone());
    ///     tasks.push(tokio::spawn(async move {
    ///         typed.update(&hits, |n| Ok(Some(n.copied().unwrap_or(0) + 1))).await
    ///     }));
    /// }
    /// for task in tasks {
    ///     task.await.unwrap()?;
    /// }
    /// assert_eq!(typed.get(&hits).await?, Some(8)); // no increment lost
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `change`'s errors (nothing is written); a retryable `ConditionFailed` when other
    /// writers kept winning until the backoff's deadline; as [`get`](Self::get) and
    /// [`put`](Self::put).
    pub async fn update<K: PlainKey>(
        &self,
        key: &K,
        change: impl FnMut(Option<&ValueOf<K>>) -> Result<Option<ValueOf<K>>>,
    ) -> Result<i64>
    where
        ValueOf<K>: PartialEq,
    {
        self.update_with(key, &Backoff::default(), change).await
    }

    /// [`update`](Self::update) with another retry policy.
    ///
    /// # Errors
    /// As [`update`](Self::update).
    pub async fn update_with<K: PlainKey>(
        &self,
        key: &K,
        policy: &Backoff,
        mut change: impl FnMut(Option<&ValueOf<K>>) -> Result<Option<ValueOf<K>>>,
    ) -> Result<i64>
    where
        ValueOf<K>: PartialEq,
    {
        let mut attempts = policy.start();
        loop {
            let current = self.get_versioned(key).await?;
            let next = change(current.as_ref().map(|v| &v.value))?;
            let read_at = current.as_ref().map_or(0, |v| v.mod_revision);
            let mut txn = self.txn();
            txn.when_mod_revision(key, CompareOp::Equal, read_at);
            match (&current, &next) {
                (None, None) => return self.revision().await,
                (Some(old), Some(new)) if old.value == *new => return self.revision().await,
                (_, None) => {
                    txn.delete(key);
                }
                (Some(old), Some(new)) => match old.lease {
                    Some(lease) => {
                        txn.put_leased(key, new, lease);
                    }
                    None => {
                        txn.put(key, new);
                    }
                },
                (None, Some(new)) => {
                    txn.put(key, new);
                }
            }
            let outcome = txn.commit().await?;
            if outcome.succeeded {
                return Ok(outcome.revision);
            }
            if !attempts.wait().await {
                return Err(attempts.exhausted(
                    Error::new(
                        ErrorKind::ConditionFailed,
                        "other writers kept changing the key while it was updated",
                    )
                    .with_context("key", key.encode())
                    .set_retryable(true),
                ));
            }
        }
    }
}
