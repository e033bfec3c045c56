//! Migrations between key layouts, on any [`Store`].
//!
//! A [`Migration`] names the key ranges of an old layout and maps each old item (a plain key
//! or a set, map or list) to the items of the new layout it becomes. A [`Migrator`] runs it:
//!
//! - [`plan`](Migrator::plan) is a dry run: what would be created, what is already there,
//!   what conflicts with newer data, what cannot be mapped. It writes nothing.
//! - [`apply`](Migrator::apply) writes the new items in batched transactions. Each batch
//!   creates only new items that are absent (compares), requires the old items unchanged
//!   since they were read, and moves the progress checkpoint kept in the store, all in one
//!   transaction. A new item that already holds other data is never overwritten: it is
//!   reported as a conflict. Interrupted, `apply` resumes after the last batch; run again
//!   after completion, it finds nothing to do and writes nothing.
//! - [`verify`](Migrator::verify) checks that every old item has its new twins with the
//!   expected contents.
//! - [`finalize`](Migrator::finalize) deletes the old items, only when asked, and only
//!   those unchanged since they were read and whose twins verify.
//! - [`rollback`](Migrator::rollback), before finalizing, deletes the new items the
//!   migration created, except those changed since, and forgets the progress.
//!
//! The progress lives under a state key (by default `keyplane/migrations/<name>`): the
//! checkpoint, and one record per batch listing the items it created, which is what a
//! rollback undoes.
//!
//! The old layout is best declared as read-only typed keys (`#[kv(read_only)]`, doubled
//! separators allowed), which parse the old keys and which the typed store never writes;
//! [`Migration::rows`] declares which old template becomes which new one.
//!
//! ```
//! # #[tokio::main] async fn main() -> keyplane_core::Result<()> {
//! use keyplane_core::keyspace::{Key, Text};
//! use keyplane_core::migrate::{Item, Mapping, Migration, MigrationRow, Migrator};
//! use keyplane_core::{PutOptions, Result, Store};
//! use std::sync::Arc;
//!
//! /// The old layout, as another program wrote it.
//! #[derive(Key, Debug, Clone, PartialEq)]
//! #[kv(template = "old//users/{id}", value = Text, read_only)]
//! struct OldUser { id: u64 }
//!
//! #[derive(Key, Debug, Clone, PartialEq)]
//! #[kv(template = "users/{id}", value = Text)]
//! struct User { id: u64 }
//!
//! /// `old//users/{id}` becomes `users/{id}`, value unchanged.
//! struct Users;
//! #[keyplane_core::async_trait]
//! impl Migration for Users {
//!     fn name(&self) -> &str { "users" }
//!     fn sources(&self) -> Vec<Vec<u8>> { vec![b"old//users/".to_vec()] }
//!     fn rows(&self) -> Vec<MigrationRow> {
//!         vec![MigrationRow::of::<OldUser, User>("bytes kept")]
//!     }
//!     async fn map(&self, old: &Item, _: &dyn Store) -> Result<Mapping> {
//!         let Ok(key) = OldUser::parse(&String::from_utf8_lossy(&old.key)) else {
//!             return Ok(Mapping::Unmappable("not a key of the old layout".into()));
//!         };
//!         Ok(Mapping::To(vec![Item::new(User { id: key.id }.encode(), old.value.clone())]))
//!     }
//! }
//!
//! let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
//! store.put(b"old//users/7", b"ada", PutOptions::default()).await?;
//! let migrator = Migrator::new(store.clone(), Arc::new(Users));
//! assert_eq!(migrator.plan().await?.created, 1);
//! assert_eq!(migrator.apply().await?.created, 1);
//! assert_eq!(migrator.apply().await?.created, 0); // nothing left to do
//! assert!(migrator.verify().await?.is_clean());
//! assert_eq!(store.get(b"users/7").await?.unwrap().value, b"ada");
//! migrator.finalize().await?;
//! assert!(store.get(b"old//users/7").await?.is_none());
//! # Ok(()) }
//! ```

use crate::collections::{CollectionKind, CollectionOp, CollectionResult};
use crate::continuation::Continuation;
use crate::entry::validate_key;
use crate::error::{Error, ErrorKind, Result};
use crate::keyspace::Key;
use crate::range::RangeOptions;
use crate::retry::Backoff;
use crate::store::Store;
use crate::txn::{Compare, CompareOp, OpResult, Txn, TxnOp};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The contents of an item: a plain value, or a collection's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A plain key's value.
    Plain(Vec<u8>),
    /// A set's members (kept sorted and distinct).
    Set(Vec<Vec<u8>>),
    /// A map's fields and values (kept sorted by field, fields distinct).
    Map(Vec<(Vec<u8>, Vec<u8>)>),
    /// A list's items, in order.
    List(Vec<Vec<u8>>),
}

impl Value {
    /// A set of `members`, sorted and distinct.
    pub fn set(members: impl IntoIterator<Item = impl Into<Vec<u8>>>) -> Self {
        let mut members: Vec<Vec<u8>> = members.into_iter().map(Into::into).collect();
        members.sort();
        members.dedup();
        Value::Set(members)
    }

    /// A map of `fields`, sorted by field; a repeated field keeps its last value.
    pub fn map(fields: impl IntoIterator<Item = (impl Into<Vec<u8>>, impl Into<Vec<u8>>)>) -> Self {
        let fields: BTreeMap<Vec<u8>, Vec<u8>> = fields
            .into_iter()
            .map(|(f, v)| (f.into(), v.into()))
            .collect();
        Value::Map(fields.into_iter().collect())
    }

    /// The collection kind, `None` for a plain value.
    pub fn kind(&self) -> Option<CollectionKind> {
        match self {
            Value::Plain(_) => None,
            Value::Set(_) => Some(CollectionKind::Set),
            Value::Map(_) => Some(CollectionKind::Map),
            Value::List(_) => Some(CollectionKind::List),
        }
    }

    /// How many members, fields or items (1 for a plain value).
    pub fn size(&self) -> usize {
        match self {
            Value::Plain(_) => 1,
            Value::Set(m) | Value::List(m) => m.len(),
            Value::Map(f) => f.len(),
        }
    }

    /// Reads the whole collection of `kind` at `key` from `store`; `None` when it is empty
    /// (a collection without members does not exist).
    ///
    /// # Errors
    /// Backend errors; `Internal` for a result of another shape.
    pub async fn read(store: &dyn Store, key: &[u8], kind: CollectionKind) -> Result<Option<Self>> {
        let value = match store.collection(CollectionOp::read_all(key, kind)).await? {
            CollectionResult::Members(m) => Value::set(m),
            CollectionResult::Fields(f) => Value::map(f),
            CollectionResult::Items(i) => Value::List(i),
            other => {
                return Err(Error::internal(format!(
                    "a collection read answered {other:?}"
                )));
            }
        };
        Ok((value.size() > 0).then_some(value))
    }
}

/// A key with its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The key.
    pub key: Vec<u8>,
    /// Its contents.
    pub value: Value,
}

impl Item {
    /// The item `key` holding `value`.
    pub fn new(key: impl Into<Vec<u8>>, value: Value) -> Self {
        Item {
            key: key.into(),
            value,
        }
    }

    /// A plain key holding `value`.
    pub fn plain(key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Self {
        Item::new(key, Value::Plain(value.into()))
    }

    /// The compare that the item's key holds nothing of its kind (no plain value, or no
    /// collection of its kind).
    pub fn absent(&self) -> Compare {
        match self.value.kind() {
            None => Compare::absent(&self.key),
            Some(kind) => Compare::collection_absent(&self.key, kind),
        }
    }

    /// The transaction ops that write the item: a put, or one add, put or push per member,
    /// field or item.
    pub fn write_ops(&self) -> Vec<TxnOp> {
        let key = &self.key;
        match &self.value {
            Value::Plain(v) => vec![TxnOp::put(key, v)],
            Value::Set(members) => members
                .iter()
                .map(|m| {
                    TxnOp::Collection(CollectionOp::SetAdd {
                        key: key.clone(),
                        member: m.clone(),
                    })
                })
                .collect(),
            Value::Map(fields) => fields
                .iter()
                .map(|(f, v)| {
                    TxnOp::Collection(CollectionOp::MapPut {
                        key: key.clone(),
                        field: f.clone(),
                        value: v.clone(),
                    })
                })
                .collect(),
            Value::List(items) => items
                .iter()
                .map(|i| {
                    TxnOp::Collection(CollectionOp::ListPush {
                        key: key.clone(),
                        value: i.clone(),
                    })
                })
                .collect(),
        }
    }
}

/// What an old item becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapping {
    /// These new items (none: the old item has no twin, and is deleted on finalize).
    To(Vec<Item>),
    /// The old item cannot be mapped, for this reason: it is reported and left alone.
    Unmappable(String),
    /// The key is in a source range but not part of the old layout: left alone, not
    /// reported.
    NotOld,
}

/// A migration from an old key layout to a new one.
#[async_trait::async_trait]
pub trait Migration: Send + Sync {
    /// The migration's name, which names its state key.
    fn name(&self) -> &str;

    /// The prefixes the old layout's keys live under, scanned in this order.
    fn sources(&self) -> Vec<Vec<u8>>;

    /// The old templates and the new templates each becomes, with how the value changes:
    /// the migration's declaration, shown by tools (`kvctl migrate list`). Empty unless the
    /// migration declares it.
    fn rows(&self) -> Vec<MigrationRow> {
        Vec::new()
    }

    /// What the old item `old` becomes. `store` is there for mappings that merge several
    /// old items into one new one (they read the others); most ignore it. Called again for
    /// the same item by `plan`, `apply`, `verify` and `finalize`, so it must be
    /// deterministic.
    ///
    /// # Errors
    /// Backend errors of its reads; they stop the run.
    async fn map(&self, old: &Item, store: &dyn Store) -> Result<Mapping>;
}

/// One row of a migration's declaration: an old template, the new template it becomes and
/// how the value changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationRow {
    /// The old template as written (`jxt//tenants/{id}/meta`).
    pub old: &'static str,
    /// The new template as written (`jxt/tenants/{id}/meta`).
    pub new: &'static str,
    /// How the value changes, in words (`bytes kept`).
    pub change: &'static str,
}

impl MigrationRow {
    /// The row from key type `Old` (usually read-only) to key type `New`.
    pub fn of<Old: Key, New: Key>(change: &'static str) -> Self {
        MigrationRow {
            old: Old::TEMPLATE,
            new: New::TEMPLATE,
            change,
        }
    }
}

/// An old item that cannot be mapped.
#[derive(Clone, PartialEq, Eq)]
pub struct Unmapped {
    /// The old key.
    pub key: Vec<u8>,
    /// Why.
    pub reason: String,
}

/// A new item that already holds other contents than the migration would write: left as it
/// is (newer data written to the new layout wins).
#[derive(Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The old key.
    pub old: Vec<u8>,
    /// The new key.
    pub new: Vec<u8>,
}

impl std::fmt::Debug for Unmapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unmapped")
            .field("key", &crate::escape_bytes(&self.key))
            .field("reason", &self.reason)
            .finish()
    }
}

/// Escaped keys, for the reports' `Debug`.
struct Keys<'a>(&'a [Vec<u8>]);

impl std::fmt::Debug for Keys<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|k| crate::escape_bytes(k)))
            .finish()
    }
}

impl std::fmt::Debug for FinalizeReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinalizeReport")
            .field("deleted", &self.deleted)
            .field("kept", &Keys(&self.kept))
            .finish()
    }
}

impl std::fmt::Debug for RollbackReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RollbackReport")
            .field("deleted", &self.deleted)
            .field("kept", &Keys(&self.kept))
            .finish()
    }
}

impl std::fmt::Debug for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conflict")
            .field("old", &crate::escape_bytes(&self.old))
            .field("new", &crate::escape_bytes(&self.new))
            .finish()
    }
}

/// What [`Migrator::plan`] or [`Migrator::apply`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// Old items read (in this run: after the checkpoint for `apply`).
    pub old: usize,
    /// New items created (or, for a plan, to be created).
    pub created: usize,
    /// New items already holding exactly what the migration would write.
    pub already: usize,
    /// New items holding other contents, left alone.
    pub conflicts: Vec<Conflict>,
    /// Old items that cannot be mapped, left alone.
    pub unmappable: Vec<Unmapped>,
    /// Transactions written.
    pub batches: usize,
    /// Whether the whole old layout has been migrated (false when a batch limit stopped
    /// `apply` early; always true for a plan).
    pub complete: bool,
}

/// What [`Migrator::verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// New items checked.
    pub checked: usize,
    /// New items that are missing, with their old keys.
    pub missing: Vec<Conflict>,
    /// New items holding other contents than expected.
    pub differs: Vec<Conflict>,
    /// Old items that cannot be mapped.
    pub unmappable: Vec<Unmapped>,
}

impl VerifyReport {
    /// Whether every old item has its twins with the expected contents.
    pub fn is_clean(&self) -> bool {
        self.missing.is_empty() && self.differs.is_empty() && self.unmappable.is_empty()
    }
}

/// What [`Migrator::finalize`] did.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct FinalizeReport {
    /// Old items deleted.
    pub deleted: usize,
    /// Old items kept: changed while finalizing, unmappable, or with twins that do not
    /// verify.
    pub kept: Vec<Vec<u8>>,
}

/// What [`Migrator::rollback`] did.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RollbackReport {
    /// New items deleted.
    pub deleted: usize,
    /// New items the migration created but someone changed since: kept.
    pub kept: Vec<Vec<u8>>,
}

/// Where a migration stands, as its state key says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Never applied, or rolled back.
    New,
    /// Applied in part: `apply` resumes.
    Applying,
    /// Every old item was migrated.
    Applied,
    /// The old items were deleted: no rollback any more.
    Finalized,
}

/// The checkpoint kept at the state key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct State {
    phase: Phase,
    /// The source being scanned.
    source: usize,
    /// The last old key done in that source, in hex.
    after: Option<String>,
    /// Batch records written so far.
    batches: u64,
}

impl State {
    fn new() -> Self {
        State {
            phase: Phase::New,
            source: 0,
            after: None,
            batches: 0,
        }
    }
}

/// One new item a batch created: its key in hex and its contents' kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Created {
    key: String,
    /// The item, to tell an unchanged one on rollback.
    #[serde(with = "value_serde")]
    value: Value,
}

/// An old item as read: its contents, and for a plain key its mod revision.
#[derive(Debug, Clone)]
struct Read {
    source: usize,
    item: Item,
    mod_revision: Option<i64>,
}

/// What becomes of one new item in a batch.
enum Target {
    Create(Item),
    Already,
    Conflict(Conflict),
}

/// Runs a [`Migration`] on a store.
#[derive(Clone)]
pub struct Migrator {
    store: Arc<dyn Store>,
    migration: Arc<dyn Migration>,
    state_key: Vec<u8>,
    max_batches: Option<usize>,
    page: usize,
}

impl std::fmt::Debug for Migrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Migrator")
            .field("migration", &self.migration.name())
            .field("state_key", &crate::escape_bytes(&self.state_key))
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

    /// The dry run: what `apply` would do from the current checkpoint. Writes nothing.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn plan(&self) -> Result<ApplyReport> {
        let (state, _) = self.state().await?;
        let mut report = ApplyReport::default();
        let mut cursor = Cursor::from(&state)?;
        while let Some(batch) = self.scan(&mut cursor).await? {
            for read in &batch {
                for target in self.targets(read, &mut report).await? {
                    match target {
                        Target::Create(_) => report.created += 1,
                        Target::Already => report.already += 1,
                        Target::Conflict(c) => report.conflicts.push(c),
                    }
                }
            }
        }
        report.complete = true;
        Ok(report)
    }

    /// Migrates, from the checkpoint on.
    ///
    /// # Errors
    /// `InvalidArgument` once finalized, or for a mapping that breaks the rules (an invalid
    /// key, an empty collection); `TxnTooLarge` for one old item whose twins do not fit in
    /// one transaction; `ConditionFailed` when other writers kept changing the batch (or
    /// another run the checkpoint) past the retry policy; backend errors. A failed batch
    /// writes nothing; the batches before it stay applied, and the next `apply` resumes
    /// after them.
    pub async fn apply(&self) -> Result<ApplyReport> {
        let mut report = ApplyReport::default();
        let policy = Backoff::default();
        let mut attempts = policy.start();
        loop {
            let (state, state_revision) = self.state().await?;
            match state.phase {
                Phase::Finalized => {
                    return Err(Error::invalid_argument(
                        "the migration is finalized: its old items are gone",
                    ));
                }
                Phase::Applied => {
                    report.complete = true;
                    return Ok(report);
                }
                Phase::New | Phase::Applying => {}
            }
            if self.max_batches.is_some_and(|n| report.batches >= n) {
                return Ok(report);
            }
            let mut cursor = Cursor::from(&state)?;
            let page = self.scan(&mut cursor).await?;
            let mut batch = Batch::new(self.store.capabilities().max_txn_ops);
            let mut next = state.clone();
            match page {
                None => next.phase = Phase::Applied,
                Some(reads) => {
                    next.phase = Phase::Applying;
                    let total = reads.len();
                    for (i, read) in reads.into_iter().enumerate() {
                        let mut step = ApplyReport::default();
                        let targets = self.targets(&read, &mut step).await?;
                        if !batch.fits(&read, &targets) {
                            if batch.reads.is_empty() {
                                return Err(Error::new(
                                    ErrorKind::TxnTooLarge,
                                    "the new items of one old item do not fit in one transaction",
                                )
                                .with_context("key", crate::escape_bytes(&read.item.key)));
                            }
                            break;
                        }
                        let last = i + 1 == total;
                        if last {
                            next.source = cursor.source;
                            next.after = cursor.after.as_deref().map(hex);
                        } else {
                            next.source = read.source;
                            next.after = Some(hex(&read.item.key));
                        }
                        batch.add(read, targets, step);
                    }
                }
            }
            if self.commit(&state, state_revision, next, &batch).await? {
                report.batches += 1;
                report.old += batch.report.old;
                report.created += batch.creates.len();
                report.already += batch.report.already;
                report.conflicts.extend(batch.report.conflicts);
                report.unmappable.extend(batch.report.unmappable);
                attempts = policy.start();
            } else if !attempts.wait().await {
                return Err(attempts.exhausted(Error::new(
                    ErrorKind::ConditionFailed,
                    "other writers kept changing the migration's batch or its checkpoint",
                )));
            }
        }
    }

    /// Checks that every old item has its twins with the expected contents. Writes
    /// nothing.
    ///
    /// # Errors
    /// Backend errors.
    pub async fn verify(&self) -> Result<VerifyReport> {
        let mut report = VerifyReport::default();
        let mut cursor = Cursor::start();
        while let Some(batch) = self.scan(&mut cursor).await? {
            for read in &batch {
                let Some(twins) = self.twins(read, &mut report.unmappable).await? else {
                    continue;
                };
                for twin in twins {
                    report.checked += 1;
                    let pair = Conflict {
                        old: read.item.key.clone(),
                        new: twin.key.clone(),
                    };
                    match self.read_item(&twin.key, twin.value.kind()).await? {
                        None => report.missing.push(pair),
                        Some((value, _)) if value != twin.value => report.differs.push(pair),
                        Some(_) => {}
                    }
                }
            }
        }
        Ok(report)
    }

    /// Deletes the old items whose twins verify, each only if unchanged since read, and
    /// marks the migration finalized (no rollback after this). Every old item is checked
    /// before any is deleted, so mappings that read other old items decide as `apply` did. Old items that do not
    /// verify, cannot be mapped, or changed meanwhile are kept and listed.
    ///
    /// # Errors
    /// `InvalidArgument` before the migration was applied completely; backend errors.
    pub async fn finalize(&self) -> Result<FinalizeReport> {
        let (state, state_revision) = self.state().await?;
        match state.phase {
            Phase::Applied | Phase::Finalized => {}
            Phase::New | Phase::Applying => {
                return Err(Error::invalid_argument(
                    "apply the migration completely before finalizing it",
                ));
            }
        }
        // First decide for every old item, then delete: a mapping may read other old items
        // (merging several into one new item), so none is deleted before all are decided.
        let mut report = FinalizeReport::default();
        let mut cursor = Cursor::start();
        let mut unmapped = Vec::new();
        let mut verified_reads = Vec::new();
        while let Some(batch) = self.scan(&mut cursor).await? {
            for read in batch {
                let mapping = self.migration.map(&read.item, &*self.store).await?;
                if mapping == Mapping::NotOld {
                    continue;
                }
                let Some(twins) = self.twins_of(&read, mapping, &mut unmapped) else {
                    report.kept.push(read.item.key.clone());
                    continue;
                };
                let mut verified = true;
                for twin in &twins {
                    let current = self.read_item(&twin.key, twin.value.kind()).await?;
                    verified &= current.is_some_and(|(v, _)| v == twin.value);
                }
                if verified {
                    verified_reads.push(read);
                } else {
                    report.kept.push(read.item.key.clone());
                }
            }
        }
        for read in &verified_reads {
            if self.delete_old(read).await? {
                report.deleted += 1;
            } else {
                report.kept.push(read.item.key.clone());
            }
        }
        let mut done = state;
        done.phase = Phase::Finalized;
        let txn = Txn::new()
            .when([Compare::mod_revision(
                &self.state_key,
                CompareOp::Equal,
                state_revision,
            )])
            .and_then([TxnOp::put(&self.state_key, encode_state(&done)?)]);
        if !self.store.txn(txn).await?.succeeded {
            return Err(Error::new(
                ErrorKind::ConditionFailed,
                "the migration's state changed while finalizing; run finalize again",
            ));
        }
        Ok(report)
    }

    /// Undoes `apply`: deletes every new item the migration created, unless it changed
    /// since (then it is kept and listed), and forgets the progress.
    ///
    /// # Errors
    /// `InvalidArgument` once finalized; backend errors.
    pub async fn rollback(&self) -> Result<RollbackReport> {
        let (state, state_revision) = self.state().await?;
        if state.phase == Phase::Finalized {
            return Err(Error::invalid_argument(
                "the migration is finalized: its old items are gone, so it cannot be rolled back",
            ));
        }
        let mut report = RollbackReport::default();
        for n in 0..state.batches {
            let record_key = self.batch_key(n);
            let Some(record) = self.store.get(&record_key).await? else {
                continue;
            };
            let created: Vec<Created> = serde_json::from_slice(&record.value)
                .map_err(|e| Error::new(ErrorKind::Codec, format!("a batch record: {e}")))?;
            for c in created {
                let key = unhex(&c.key)?;
                if self.delete_unchanged(&key, &c.value).await? {
                    report.deleted += 1;
                } else {
                    report.kept.push(key);
                }
            }
            self.store.delete(&record_key).await?;
        }
        let txn = Txn::new()
            .when([Compare::mod_revision(
                &self.state_key,
                CompareOp::Equal,
                state_revision,
            )])
            .and_then([TxnOp::delete(&self.state_key)]);
        if !self.store.txn(txn).await?.succeeded {
            return Err(Error::new(
                ErrorKind::ConditionFailed,
                "the migration's state changed while rolling back; run rollback again",
            ));
        }
        Ok(report)
    }

    fn batch_key(&self, n: u64) -> Vec<u8> {
        let mut key = self.state_key.clone();
        key.extend_from_slice(format!("/batch/{n:016}").as_bytes());
        key
    }

    /// The checkpoint and its mod revision (0 when absent).
    async fn state(&self) -> Result<(State, i64)> {
        match self.store.get(&self.state_key).await? {
            None => Ok((State::new(), 0)),
            Some(entry) => {
                let state = serde_json::from_slice(&entry.value).map_err(|e| {
                    Error::new(
                        ErrorKind::Codec,
                        format!("the migration state key holds no checkpoint: {e}"),
                    )
                    .with_context("key", crate::escape_bytes(&self.state_key))
                })?;
                Ok((state, entry.mod_revision))
            }
        }
    }

    /// The next batch of old items after the cursor, which it advances; `None` when every
    /// source is done.
    async fn scan(&self, cursor: &mut Cursor) -> Result<Option<Vec<Read>>> {
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
    async fn twins(&self, read: &Read, unmapped: &mut Vec<Unmapped>) -> Result<Option<Vec<Item>>> {
        let mapping = self.migration.map(&read.item, &*self.store).await?;
        Ok(self.twins_of(read, mapping, unmapped))
    }

    fn twins_of(
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
    async fn targets(&self, read: &Read, report: &mut ApplyReport) -> Result<Vec<Target>> {
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
                .with_context("key", crate::escape_bytes(&twin.key)));
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
    async fn read_item(
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

    /// Writes one batch: the creates, guarded by the old items' revisions and the targets'
    /// absence, with the checkpoint and the batch record. `false` when a compare failed.
    async fn commit(
        &self,
        state: &State,
        state_revision: i64,
        mut next: State,
        batch: &Batch,
    ) -> Result<bool> {
        let mut compares = vec![Compare::mod_revision(
            &self.state_key,
            CompareOp::Equal,
            state_revision,
        )];
        for read in &batch.reads {
            if let Some(revision) = read.mod_revision {
                compares.push(Compare::mod_revision(
                    &read.item.key,
                    CompareOp::Equal,
                    revision,
                ));
            }
        }
        let mut ops = Vec::new();
        let mut created = Vec::new();
        for item in &batch.creates {
            compares.push(item.absent());
            ops.extend(item.write_ops());
            created.push(Created {
                key: hex(&item.key),
                value: item.value.clone(),
            });
        }
        if !created.is_empty() {
            ops.push(TxnOp::put(
                self.batch_key(state.batches),
                serde_json::to_vec(&created)
                    .map_err(|e| Error::internal(format!("a batch record: {e}")))?,
            ));
            next.batches = state.batches + 1;
        }
        ops.push(TxnOp::put(&self.state_key, encode_state(&next)?));
        let txn = Txn::new().when(compares).and_then(ops);
        txn.validate(self.store.capabilities())?;
        Ok(self.store.txn(txn).await?.succeeded)
    }

    /// Deletes the old item if it is unchanged since read.
    async fn delete_old(&self, read: &Read) -> Result<bool> {
        match read.mod_revision {
            Some(revision) => {
                let txn = Txn::new()
                    .when([Compare::mod_revision(
                        &read.item.key,
                        CompareOp::Equal,
                        revision,
                    )])
                    .and_then([TxnOp::delete(&read.item.key)]);
                Ok(self.store.txn(txn).await?.succeeded)
            }
            None => {
                self.delete_unchanged(&read.item.key, &read.item.value)
                    .await
            }
        }
    }

    /// Deletes the item at `key` if it holds exactly `value`, atomically.
    async fn delete_unchanged(&self, key: &[u8], value: &Value) -> Result<bool> {
        let compares: Vec<Compare> = match value {
            Value::Plain(v) => vec![
                Compare::value(key, CompareOp::Equal, v),
                Compare::version(key, CompareOp::Equal, 1),
            ],
            Value::Set(members) => std::iter::once(Compare::size(
                key,
                CollectionKind::Set,
                CompareOp::Equal,
                members.len() as i64,
            ))
            .chain(members.iter().map(|m| Compare::set_contains(key, m)))
            .collect(),
            Value::Map(fields) => std::iter::once(Compare::size(
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
            Value::List(items) => {
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

/// One transaction's worth of old items, their creates, and what was found.
struct Batch {
    limit: usize,
    reads: Vec<Read>,
    creates: Vec<Item>,
    report: ApplyReport,
    compares: usize,
    ops: usize,
}

impl Batch {
    fn new(limit: usize) -> Self {
        // The checkpoint takes a compare and a put, the batch record a put.
        Batch {
            limit,
            reads: Vec::new(),
            creates: Vec::new(),
            report: ApplyReport::default(),
            compares: 1,
            ops: 2,
        }
    }

    fn cost(read: &Read, targets: &[Target]) -> (usize, usize) {
        let creates = targets.iter().filter_map(|t| match t {
            Target::Create(item) => Some(item),
            _ => None,
        });
        let (mut compares, mut ops) = (usize::from(read.mod_revision.is_some()), 0);
        for item in creates {
            compares += 1;
            ops += item.value.size();
        }
        (compares, ops)
    }

    fn fits(&self, read: &Read, targets: &[Target]) -> bool {
        let (compares, ops) = Self::cost(read, targets);
        self.compares + compares <= self.limit && self.ops + ops <= self.limit
    }

    fn add(&mut self, read: Read, targets: Vec<Target>, step: ApplyReport) {
        let (compares, ops) = Self::cost(&read, &targets);
        self.compares += compares;
        self.ops += ops;
        self.report.old += step.old;
        self.report.unmappable.extend(step.unmappable);
        for target in targets {
            match target {
                Target::Create(item) => self.creates.push(item),
                Target::Already => self.report.already += 1,
                Target::Conflict(c) => self.report.conflicts.push(c),
            }
        }
        self.reads.push(read);
    }
}

/// Where a scan stands: the source, and the last key read in it.
#[derive(Debug, Clone)]
struct Cursor {
    source: usize,
    after: Option<Vec<u8>>,
}

impl Cursor {
    fn start() -> Self {
        Cursor {
            source: 0,
            after: None,
        }
    }

    fn from(state: &State) -> Result<Self> {
        Ok(Cursor {
            source: state.source,
            after: state.after.as_deref().map(unhex).transpose()?,
        })
    }
}

fn encode_state(state: &State) -> Result<Vec<u8>> {
    serde_json::to_vec(state).map_err(|e| Error::internal(format!("a migration state: {e}")))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Result<Vec<u8>> {
    let bad = || Error::new(ErrorKind::Codec, "a migration state holds a malformed key");
    if !text.len().is_multiple_of(2) {
        return Err(bad());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(bad)
        })
        .collect()
}

/// The batch records' encoding of a [`Value`]: a kind tag and hex strings.
mod value_serde {
    use super::{Value, hex, unhex};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(tag = "kind", content = "data", rename_all = "snake_case")]
    enum Repr {
        Plain(String),
        Set(Vec<String>),
        Map(Vec<(String, String)>),
        List(Vec<String>),
    }

    pub(super) fn serialize<S: Serializer>(value: &Value, s: S) -> Result<S::Ok, S::Error> {
        let all = |v: &Vec<Vec<u8>>| v.iter().map(|b| hex(b)).collect();
        match value {
            Value::Plain(v) => Repr::Plain(hex(v)),
            Value::Set(m) => Repr::Set(all(m)),
            Value::Map(f) => Repr::Map(f.iter().map(|(k, v)| (hex(k), hex(v))).collect()),
            Value::List(i) => Repr::List(all(i)),
        }
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        let one = |t: &String| unhex(t).map_err(serde::de::Error::custom);
        let all = |v: Vec<String>| v.iter().map(one).collect::<Result<Vec<_>, _>>();
        Ok(match Repr::deserialize(d)? {
            Repr::Plain(v) => Value::Plain(one(&v)?),
            Repr::Set(m) => Value::Set(all(m)?),
            Repr::Map(f) => Value::Map(
                f.iter()
                    .map(|(k, v)| Ok((one(k)?, one(v)?)))
                    .collect::<Result<_, D::Error>>()?,
            ),
            Repr::List(i) => Value::List(all(i)?),
        })
    }
}
