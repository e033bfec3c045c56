//! Bulk loading of many keys in batched transactions.

use super::cache::Balancer;
use super::values::{API_KEY_FIELD, LoadReport, LoadedKey, STATUS_FIELD};
use keyplane_core::keyspace::TypedTxn;
use keyplane_core::{Error, ErrorKind, Result};
use std::collections::BTreeSet;

/// The most ops a bulk-load transaction carries on backends without a tighter limit.
const MAX_BATCH_OPS: usize = 512;

impl Balancer {
    /// Loads many keys that are not cached yet (the document's `LoadAllKeysToStore`): each
    /// key's object, reverse index and, for active keys, its place at the end of each group's
    /// active list. Keys are packed into as few transactions as the backend takes
    /// (`max_txn_ops`, counting two more per collection for optimistic backends, which guard
    /// and rewrite a stamp per collection; a batch the backend still finds too large is split
    /// in two), each committed whole; keys join every list in input order.
    ///
    /// One transaction may push several keys onto one group's list (the pushes apply in op
    /// order), so keys that share a group pack as densely as keys spread over many groups.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty `api_key` or a key id given twice (nothing written);
    /// `TxnTooLarge` for one key with more groups than a transaction takes; backend errors, after which the batches already committed stay loaded.
    pub async fn load_keys(&self, keys: &[LoadedKey]) -> Result<LoadReport> {
        validate_keys(keys)?;
        let budget = self
            .typed
            .store()
            .capabilities()
            .max_txn_ops
            .clamp(8, MAX_BATCH_OPS);
        let mut report = LoadReport { keys: 0, txns: 0 };
        let mut batch = Batch::default();
        for key in keys {
            let planned = Planned::of(key);
            let mut cost = batch.cost_of(&planned);
            if !batch.keys.is_empty() && batch.cost + cost > budget {
                self.commit(&mut batch, &mut report).await?;
                cost = batch.cost_of(&planned);
            }
            batch.cost += cost;
            batch.lists.extend(planned.lists().iter().copied());
            batch.keys.push(planned);
        }
        if !batch.keys.is_empty() {
            self.commit(&mut batch, &mut report).await?;
        }
        Ok(report)
    }

    /// Adds the writes that load `planned` to `txn`.
    fn load_into(&self, txn: &mut TypedTxn, planned: &Planned<'_>) {
        let key = planned.key;
        let object = self.object(key.id);
        txn.map_put(&object, &API_KEY_FIELD.into(), &key.record.api_key)
            .map_put(
                &object,
                &STATUS_FIELD.into(),
                &key.record.status.as_str().into(),
            );
        let reverse = self.groups(key.id);
        for group in &planned.groups {
            txn.set_add(&reverse, group);
        }
        for group in planned.lists() {
            txn.list_push(&self.active(*group), &key.id);
        }
    }

    async fn commit(&self, batch: &mut Batch<'_>, report: &mut LoadReport) -> Result<()> {
        let batch = std::mem::take(batch);
        let mut pending = vec![batch.keys];
        // A batch the backend finds too large (its own accounting may count more than the
        // estimate) is split in two, keeping the keys' order.
        while let Some(keys) = pending.pop() {
            let mut txn = self.typed.txn();
            for planned in &keys {
                self.load_into(&mut txn, planned);
            }
            match txn.commit().await {
                Ok(_) => {
                    report.txns += 1;
                    report.keys += keys.len();
                }
                Err(e) if e.kind() == ErrorKind::TxnTooLarge && keys.len() > 1 => {
                    let mut first = keys;
                    let second = first.split_off(first.len() / 2);
                    pending.push(second);
                    pending.push(first);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Checks keys to load or rebuild from: no empty `api_key`, no id twice.
///
/// # Errors
/// `InvalidArgument` naming the key.
pub(crate) fn validate_keys(keys: &[LoadedKey]) -> Result<()> {
    let mut seen = BTreeSet::new();
    for key in keys {
        if key.record.api_key.is_empty() {
            return Err(
                Error::invalid_argument("an API key's value must not be empty")
                    .with_context("id", key.id),
            );
        }
        if !seen.insert(key.id) {
            return Err(
                Error::invalid_argument("one key is given twice").with_context("id", key.id)
            );
        }
    }
    Ok(())
}

/// One key to load, with its groups once each, ascending.
struct Planned<'a> {
    key: &'a LoadedKey,
    groups: Vec<u64>,
}

impl<'a> Planned<'a> {
    fn of(key: &'a LoadedKey) -> Self {
        let groups: BTreeSet<u64> = key.groups.iter().copied().collect();
        Planned {
            key,
            groups: groups.into_iter().collect(),
        }
    }

    /// The groups whose active list the key joins: all of its groups when it is active.
    fn lists(&self) -> &[u64] {
        if self.key.record.status.is_active() {
            &self.groups
        } else {
            &[]
        }
    }
}

/// The keys of one transaction.
#[derive(Default)]
struct Batch<'a> {
    keys: Vec<Planned<'a>>,
    /// The groups whose active list the batch already extends.
    lists: BTreeSet<u64>,
    cost: usize,
}

impl Batch<'_> {
    /// What adding `planned` costs: each of its ops (two object fields, one reverse index
    /// member per group, one push per list it joins), plus two per collection new to the
    /// batch (an optimistic backend guards and rewrites one stamp per collection): the
    /// key's own object and reverse index, and each group list the batch does not extend
    /// yet.
    fn cost_of(&self, planned: &Planned<'_>) -> usize {
        let lists = planned.lists();
        let ops = 2 + planned.groups.len() + lists.len();
        let new_lists = lists.iter().filter(|g| !self.lists.contains(g)).count();
        ops + 2 * (2 + new_lists)
    }
}
