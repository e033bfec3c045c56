//! Deleting a prefix too large for one atomic step, in atomic batches.

use crate::RangeOptions;
use crate::raw::validate_prefix;
use crate::{DeletePrefixResult, Store};
use crate::{Error, ErrorKind, Result};
use crate::{OpResult, Txn, TxnOp};

/// How many listings in a row may find keys and delete none of them (other writers deleting
/// the same keys) before the deletion gives up.
const MAX_IDLE_ROUNDS: u32 = 16;

/// Deletes every key and collection under `prefix` in transactions of at most `batch_size`
/// deletes (and at most the store's `max_txn_ops`), for prefixes larger than one
/// [`Store::delete_prefix`] may remove at once (`RedisConfig::max_prefix_delete_keys`: a
/// Redis server serves no other client while one script runs).
///
/// Each batch is atomic; the deletion as a whole is not: a reader may see part of the prefix
/// deleted, a watcher sees one revision per batch, and when a batch fails the batches before
/// it stay done (run it again to finish: deleting is idempotent). Each round lists the
/// prefix from its start, so keys written under it while it runs are deleted too, until a
/// listing finds nothing. Returns the keys deleted and the revision of the last batch (the
/// store's revision when there was nothing to delete).
///
/// ```
/// use keyplane_core::{PutOptions, RangeOptions, Store};
/// use keyplane_core::recipes::{delete_prefix_in_batches};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = keyplane_mem::MemStore::new();
/// for i in 0..1_000 {
///     store.put(format!("jobs/{i:04}").as_bytes(), b"x", PutOptions::default()).await?;
/// }
/// let done = delete_prefix_in_batches(&store, b"jobs/", 100).await?;
/// assert_eq!(done.deleted, 1_000);
/// assert_eq!(store.range(RangeOptions::prefix("jobs/").count_only()).await?.count, 0);
/// # Ok::<(), keyplane_core::Error>(()) }).unwrap();
/// ```
///
/// # Errors
/// `InvalidKey` for an empty or malformed prefix, `InvalidArgument` for a zero
/// `batch_size`, and the store's errors (the batches done before stay deleted).
pub async fn delete_prefix_in_batches<S: Store + ?Sized>(
    store: &S,
    prefix: &[u8],
    batch_size: usize,
) -> Result<DeletePrefixResult> {
    validate_prefix(prefix, false)?;
    if batch_size == 0 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "a batch deletes at least one key",
        ));
    }
    let batch_size = batch_size.min(store.capabilities().max_txn_ops.max(1));
    let mut deleted = 0;
    let mut revision = None;
    let mut idle_rounds = 0;
    loop {
        let page = store
            .range(
                RangeOptions::prefix(prefix)
                    .keys_only()
                    .with_collections()
                    .limit(batch_size),
            )
            .await?;
        let mut keys: Vec<Vec<u8>> = page.entries.into_iter().map(|e| e.key).collect();
        keys.extend(page.collections.into_iter().map(|c| c.key));
        keys.sort();
        keys.dedup();
        keys.truncate(batch_size);
        if keys.is_empty() {
            let revision = match revision {
                Some(revision) => revision,
                None => store.revision().await?,
            };
            return Ok(DeletePrefixResult { revision, deleted });
        }
        let resp = store
            .txn(Txn::new().and_then(keys.into_iter().map(TxnOp::delete)))
            .await?;
        let removed: u64 = resp
            .results
            .iter()
            .map(|r| match r {
                OpResult::Delete { deleted } => *deleted,
                _ => 0,
            })
            .sum();
        if removed > 0 {
            revision = Some(resp.revision);
            deleted += removed;
            idle_rounds = 0;
        } else {
            idle_rounds += 1;
            if idle_rounds >= MAX_IDLE_ROUNDS {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    "keys listed under the prefix were gone each time a batch deleted them; \
                     other writers keep changing it",
                )
                .with_context("deleted", deleted.to_string()));
            }
        }
    }
}
