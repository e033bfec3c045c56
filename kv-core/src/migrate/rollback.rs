//! [`Migrator::rollback`]: the created items deleted, before finalizing.

use super::state::*;
use super::*;
use crate::Store;
use crate::{Compare, CompareOp, Txn, TxnOp};
use crate::{Error, ErrorKind, Result};

impl Migrator {
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
}
