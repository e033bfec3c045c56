//! [`Migrator`]: its settings, and the reads every phase shares.

use crate::CollectionKind;
use crate::CollectionValue;
use crate::Continuation;
use crate::RangeOptions;
use crate::Store;
use crate::raw::validate_key;
use crate::{Compare, CompareOp, OpResult, Txn, TxnOp};
use crate::{Error, ErrorKind, Result};

use super::state::*;
use super::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Runs a [`Migration`] on a store.
#[derive(Clone)]
pub struct Migrator {
    pub(super) store: Arc<dyn Store>,
    pub(super) migration: Arc<dyn Migration>,
    pub(super) state_key: Vec<u8>,
    pub(super) max_batches: Option<usize>,
    pub(super) page: usize,
}

impl std::fmt::Debug for Migrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Migrator")
            .field("migration", &self.migration.name())
            .field("state_key", &crate::raw::escape_bytes(&self.state_key))
            .finish()
    }
}

impl Migrator {
    /// Runs `migration` on `store`, with its state at `keyplane/migrations/<name>`.
    pub fn new(store: Arc<dyn Store>, migration: Arc<dyn Migration>) -> Self {
        let state_key = format!("keyplane/migrations/{}", migration.name()).into_bytes();
        Migrator {
            store,
            migration,
            state_key,
            max_batches: None,
            page: 128,
        }
    }

    /// Keeps the state at `key` instead (its batch records under `<key>/batch/`).
    ///
    /// # Errors
    /// `InvalidKey` when `key` is not a valid key.
    pub fn with_state_key(mut self, key: impl Into<Vec<u8>>) -> Result<Self> {
        let key = key.into();
        validate_key(&key)?;
        self.state_key = key;
        Ok(self)
    }

    /// Reads at most `n` old items per batch (at least 1; 128 by default). A batch is also
    /// cut where its transaction would exceed the backend's `max_txn_ops`.
    pub fn page_size(mut self, n: usize) -> Self {
        self.page = n.max(1);
        self
    }

    /// Stops [`apply`](Self::apply) after `n` transactions (a later `apply` resumes).
    pub fn max_batches(mut self, n: usize) -> Self {
        self.max_batches = Some(n);
        self
    }

    /// The migration's current phase.
    ///
    /// # Errors
    /// Backend errors; `Codec` when the state key holds something else.
    pub async fn phase(&self) -> Result<Phase> {
        Ok(self.state().await?.0.phase)
    }

    pub(super) fn batch_key(&self, n: u64) -> Vec<u8> {
        let mut key = self.state_key.clone();
        key.extend_from_slice(format!("/batch/{n:016}").as_bytes());
        key
    }

    /// The checkpoint and its mod revision (0 when absent).
    pub(super) async fn state(&self) -> Result<(State, i64)> {
        match self.store.get(&self.state_key).await? {
            None => Ok((State::new(), 0)),
            Some(entry) => {
                let state = serde_json::from_slice(&entry.value).map_err(|e| {
                    Error::new(
                        ErrorKind::Codec,
                        format!("the migration state key holds no checkpoint: {e}"),
                    )
                    .with_context("key", crate::raw::escape_bytes(&self.state_key))
                })?;
                Ok((state, entry.mod_revision))
            }
        }
    }

    /// The next batch of old items after the cursor, which it advances; `None` when every
    /// source is done.
    pub(super) async fn scan(&self, cursor: &mut Cursor) -> Result<Option<Vec<Read>>> {
        let sources = self.migration.sources();
        while cursor.source < sources.len() {
            let prefix = &sources[cursor.source];
            let mut opts = RangeOptions::prefix(prefix)
                .with_collections()
                .limit(self.page);
            if let Some(after) = &cursor.after {
                opts = opts.after(Continuation::after_key(after));
            }
            let page = self.store.range(opts).await?;
            let mut keys: Vec<(Vec<u8>, Option<CollectionKind>)> = page
                .entries
                .iter()
                .map(|e| (e.key.clone(), None))
                .chain(
                    page.collections
                        .iter()
                        .map(|c| (c.key.clone(), Some(c.kind))),
                )
                .collect();
            keys.sort();
            if keys.is_empty() {
                cursor.source += 1;
                cursor.after = None;
                continue;
            }
            let plain: BTreeMap<&[u8], &crate::Entry> =
                page.entries.iter().map(|e| (e.key.as_slice(), e)).collect();
            let mut reads = Vec::with_capacity(keys.len());
            for (key, kind) in &keys {
                let (value, mod_revision) = match kind {
                    None => match plain.get(key.as_slice()) {
                        Some(e) => (Value::Plain(e.value.clone()), Some(e.mod_revision)),
                        None => continue,
                    },
                    Some(kind) => match Value::read(&*self.store, key, *kind).await? {
                        Some(value) => (value, None),
                        None => continue,
                    },
                };
                reads.push(Read {
                    source: cursor.source,
                    item: Item::new(key.clone(), value),
                    mod_revision,
                });
            }
            cursor.after = keys.last().map(|(k, _)| k.clone());
            if page.next.is_none() {
                cursor.source += 1;
                cursor.after = None;
            }
            if reads.is_empty() {
                continue;
            }
            return Ok(Some(reads));
        }
        Ok(None)
    }

    /// The new items `read` maps to; `None` (and a record in `unmapped`) when it cannot be
    /// mapped or is not part of the old layout.
    pub(super) async fn twins(
        &self,
        read: &Read,
        unmapped: &mut Vec<Unmapped>,
    ) -> Result<Option<Vec<Item>>> {
        let mapping = self.migration.map(&read.item, &*self.store).await?;
        Ok(self.twins_of(read, mapping, unmapped))
    }

    pub(super) fn twins_of(
        &self,
        read: &Read,
        mapping: Mapping,
        unmapped: &mut Vec<Unmapped>,
    ) -> Option<Vec<Item>> {
        match mapping {
            Mapping::To(items) => Some(items),
            Mapping::Unmappable(reason) => {
                unmapped.push(Unmapped {
                    key: read.item.key.clone(),
                    reason,
                });
                None
            }
            Mapping::NotOld => None,
        }
    }

    /// What becomes of each twin of `read`; counts `read` in `report.old` when it is part
    /// of the old layout.
    pub(super) async fn targets(
        &self,
        read: &Read,
        report: &mut ApplyReport,
    ) -> Result<Vec<Target>> {
        let mapping = self.migration.map(&read.item, &*self.store).await?;
        if mapping != Mapping::NotOld {
            report.old += 1;
        }
        let Some(twins) = self.twins_of(read, mapping, &mut report.unmappable) else {
            return Ok(Vec::new());
        };
        let mut targets = Vec::with_capacity(twins.len());
        for twin in twins {
            validate_key(&twin.key)?;
            if twin.value.size() == 0 {
                return Err(Error::invalid_argument(
                    "a migration maps to an empty collection, which cannot exist",
                )
                .with_context("key", crate::raw::escape_bytes(&twin.key)));
            }
            let target = match self.read_item(&twin.key, twin.value.kind()).await? {
                None => Target::Create(twin),
                Some((value, _)) if value == twin.value => Target::Already,
                Some(_) => Target::Conflict(Conflict {
                    old: read.item.key.clone(),
                    new: twin.key,
                }),
            };
            targets.push(target);
        }
        Ok(targets)
    }

    /// The contents at `key` for an item of `kind` (`None` for plain), with the plain
    /// key's mod revision; `None` when absent.
    pub(super) async fn read_item(
        &self,
        key: &[u8],
        kind: Option<CollectionKind>,
    ) -> Result<Option<(Value, Option<i64>)>> {
        match kind {
            None => Ok(self
                .store
                .get(key)
                .await?
                .map(|e| (Value::Plain(e.value), Some(e.mod_revision)))),
            Some(kind) => Ok(Value::read(&*self.store, key, kind)
                .await?
                .map(|v| (v, None))),
        }
    }

    /// Deletes the item at `key` if it holds exactly `value`, atomically.
    pub(super) async fn delete_unchanged(&self, key: &[u8], value: &Value) -> Result<bool> {
        let compares: Vec<Compare> = match value {
            Value::Plain(v) => vec![
                Compare::value(key, CompareOp::Equal, v),
                Compare::version(key, CompareOp::Equal, 1),
            ],
            Value::Collection(CollectionValue::Set(members)) => std::iter::once(Compare::size(
                key,
                CollectionKind::Set,
                CompareOp::Equal,
                members.len() as i64,
            ))
            .chain(members.iter().map(|m| Compare::set_contains(key, m)))
            .collect(),
            Value::Collection(CollectionValue::Map(fields)) => std::iter::once(Compare::size(
                key,
                CollectionKind::Map,
                CompareOp::Equal,
                fields.len() as i64,
            ))
            .chain(
                fields
                    .iter()
                    .map(|(f, v)| Compare::map_field(key, f, CompareOp::Equal, v)),
            )
            .collect(),
            Value::Collection(CollectionValue::List(items)) => {
                let mut counts: BTreeMap<&[u8], i64> = BTreeMap::new();
                for i in items {
                    *counts.entry(i).or_default() += 1;
                }
                std::iter::once(Compare::size(
                    key,
                    CollectionKind::List,
                    CompareOp::Equal,
                    items.len() as i64,
                ))
                .chain(counts.into_iter().map(|(i, n)| {
                    Compare::member(key, CollectionKind::List, i, CompareOp::Equal, n)
                }))
                .collect()
            }
        };
        let txn = Txn::new().when(compares).and_then([TxnOp::delete(key)]);
        let resp = self.store.txn(txn).await?;
        Ok(resp.succeeded && !matches!(resp.results[..], [OpResult::Delete { deleted: 0 }]))
    }
}
