//! Bulk loading of many keys in batched transactions.

use super::cache::{Balancer, list_push, map_put, set_add};
use super::values::{API_KEY_FIELD, KeyStatus, LoadReport, LoadedKey, STATUS_FIELD};
use kv_core::{Error, Result, Txn, TxnOp};
use std::collections::BTreeSet;

/// The most ops a bulk-load transaction carries on backends without a tighter limit.
const MAX_BATCH_OPS: usize = 512;

impl Balancer {
    /// Loads many keys that are not cached yet (the document's `LoadAllKeysToStore`): each
    /// key's object, reverse index and, for active keys, its place at the end of each group's
    /// active list. Keys are packed into as few transactions as the backend takes
    /// (`max_txn_ops`, counting one more per collection for optimistic backends), each
    /// committed whole; the keys of one transaction appear in every list in input order.
    ///
    /// A transaction appends to one list at most once (the store contract writes a
    /// collection key once per branch), so a batch also closes when it would push a second
    /// key onto a list it already extends: loading `n` keys that share one group takes at
    /// least `n` transactions, while keys spread over many groups pack densely.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty `api_key` or a key id given twice (nothing written);
    /// backend errors, after which the batches already committed stay loaded.
    pub async fn load_keys(&self, keys: &[LoadedKey]) -> Result<LoadReport> {
        let mut seen = BTreeSet::new();
        for key in keys {
            if key.record.api_key.is_empty() {
                return Err(
                    Error::invalid_argument("an API key's value must not be empty")
                        .with_context("id", key.id),
                );
            }
            if !seen.insert(key.id) {
                return Err(Error::invalid_argument("a bulk load gives one key twice")
                    .with_context("id", key.id));
            }
        }
        let budget = self
            .typed
            .store()
            .capabilities()
            .max_txn_ops
            .clamp(8, MAX_BATCH_OPS);
        let mut report = LoadReport { keys: 0, txns: 0 };
        let mut batch = Batch::default();
        for key in keys {
            let (ops, lists) = self.ops_of(key);
            // Each op plus each collection it touches (etcd guards every collection).
            let cost = ops.len() * 2;
            let clash = lists.iter().any(|g| batch.lists.contains(g));
            if !batch.ops.is_empty() && (clash || batch.cost + cost > budget) {
                self.commit(&mut batch, &mut report).await?;
            }
            batch.cost += cost;
            batch.ops.extend(ops);
            batch.lists.extend(lists);
            batch.keys += 1;
        }
        if !batch.ops.is_empty() {
            self.commit(&mut batch, &mut report).await?;
        }
        Ok(report)
    }

    fn ops_of(&self, key: &LoadedKey) -> (Vec<TxnOp>, Vec<u64>) {
        let groups: BTreeSet<u64> = key.groups.iter().copied().collect();
        let object = self.object_key(key.id);
        let mut ops = vec![
            map_put(&object, API_KEY_FIELD, &key.record.api_key),
            map_put(&object, STATUS_FIELD, key.record.status.as_str()),
        ];
        let reverse = self.groups_key(key.id);
        ops.extend(groups.iter().map(|g| set_add(&reverse, *g)));
        let mut lists = Vec::new();
        if key.record.status == KeyStatus::Active {
            for group in &groups {
                ops.push(list_push(&self.active_key(*group), key.id));
                lists.push(*group);
            }
        }
        (ops, lists)
    }

    async fn commit(&self, batch: &mut Batch, report: &mut LoadReport) -> Result<()> {
        let batch = std::mem::take(batch);
        self.typed
            .store()
            .txn(Txn::new().and_then(batch.ops))
            .await?;
        report.txns += 1;
        report.keys += batch.keys;
        Ok(())
    }
}

#[derive(Default)]
struct Batch {
    ops: Vec<TxnOp>,
    lists: BTreeSet<u64>,
    cost: usize,
    keys: usize,
}
