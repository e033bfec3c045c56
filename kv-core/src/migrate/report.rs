//! What each phase of a [`Migrator`](super::Migrator) reports, and where a migration stands.

use serde::{Deserialize, Serialize};

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
            .field("key", &crate::raw::escape_bytes(&self.key))
            .field("reason", &self.reason)
            .finish()
    }
}

/// Escaped keys, for the reports' `Debug`.
struct Keys<'a>(&'a [Vec<u8>]);

impl std::fmt::Debug for Keys<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|k| crate::raw::escape_bytes(k)))
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
            .field("old", &crate::raw::escape_bytes(&self.old))
            .field("new", &crate::raw::escape_bytes(&self.new))
            .finish()
    }
}

/// What [`Migrator::plan`](super::Migrator::plan) or
/// [`Migrator::apply`](super::Migrator::apply) found and did.
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

/// What [`Migrator::verify`](super::Migrator::verify) found.
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

/// What [`Migrator::finalize`](super::Migrator::finalize) did.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct FinalizeReport {
    /// Old items deleted.
    pub deleted: usize,
    /// Old items kept: changed while finalizing, unmappable, or with twins that do not
    /// verify.
    pub kept: Vec<Vec<u8>>,
}

/// What [`Migrator::rollback`](super::Migrator::rollback) did.
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
