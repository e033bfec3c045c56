//! [`Migration`]: what a migration declares, and what each old item becomes.

use super::*;
use crate::Result;
use crate::Store;
use crate::keyspace::Key;

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
