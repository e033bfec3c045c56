//! The Rust side of the reconcile script (`core/scripts/reconcile.lua`, in the function
//! library beside the other scripts): runs it on batches of keys and sums what it did into a
//! [`ReconcileReport`]. Reads (`get`, ranges) call it for the stale keys they meet; the
//! passes and the background task for what they scanned or were notified of.

use crate::core::Core;
use crate::core::decode::{array, corrupted, int};
use keyplane_contract::Result;
use redis::Value;

/// What one reconcile found and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Keys looked at: those `SCAN` returned and those the store's indexes held.
    pub scanned: u64,
    /// Strings another program wrote that the store now tracks (one put event each).
    pub adopted: u64,
    /// Tracked strings another program overwrote (one put event each).
    pub changed: u64,
    /// Tracked strings another program deleted or replaced by another type (one delete
    /// event each).
    pub deleted: u64,
}

impl ReconcileReport {
    pub(crate) fn add(&mut self, other: ReconcileReport) {
        self.scanned += other.scanned;
        self.adopted += other.adopted;
        self.changed += other.changed;
        self.deleted += other.deleted;
    }

    /// Whether anything changed.
    pub fn is_empty(&self) -> bool {
        self.adopted + self.changed + self.deleted == 0
    }
}

/// How a batch of keys is checked.
#[derive(Clone, Copy)]
pub(crate) enum Mode {
    /// Only keys without metadata (what `SCAN` finds that the store may not know).
    Adopt,
    /// Every key against its metadata too (what the indexes hold, what notifications name).
    Full,
}

/// Keys per script run: one run is one revision and blocks Redis while it runs.
const BATCH: usize = 500;

/// Reconciles `keys` in batches of [`BATCH`], each one script run and at most one revision.
pub(crate) async fn reconcile_keys(
    core: &Core,
    keys: &[Vec<u8>],
    mode: Mode,
) -> Result<ReconcileReport> {
    let mut report = ReconcileReport::default();
    let mode: &[u8] = match mode {
        Mode::Adopt => b"a",
        Mode::Full => b"f",
    };
    for chunk in keys.chunks(BATCH) {
        let mut args: Vec<&[u8]> = Vec::with_capacity(chunk.len() + 1);
        args.push(mode);
        args.extend(chunk.iter().map(Vec::as_slice));
        let reply: Value = core
            .run_write(&core.scripts.reconcile, &args, "reconcile")
            .await?;
        let mut parts = array(reply)?.into_iter();
        let mut next = || -> Result<u64> {
            let n = int(parts
                .next()
                .ok_or_else(|| corrupted("a reconcile reply has four numbers"))?)?;
            u64::try_from(n).map_err(|_| corrupted("a negative reconcile count"))
        };
        report.add(ReconcileReport {
            scanned: chunk.len() as u64,
            adopted: next()?,
            changed: next()?,
            deleted: next()?,
        });
    }
    Ok(report)
}
