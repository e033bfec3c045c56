//! [`Migrator::finalize`]: the old items deleted, those unchanged and verified only.

use super::state::*;
use super::*;
use crate::Store;
use crate::{Compare, CompareOp, Txn, TxnOp};
use crate::{Error, ErrorKind, Result};

impl Migrator {
    /// Deletes the old items whose twins verify, each only if unchanged since read, and
    /// marks the migration finalized (no rollback after this). Every old item is checked
    /// before any is deleted, so mappings that read other old items decide as `apply` did.
    /// Old items that do not verify, cannot be mapped, or changed meanwhile are kept and
    /// listed.
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
}
