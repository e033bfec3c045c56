//! [`Migrator::apply`]: the new items, written in batched transactions with the checkpoint.

use super::state::*;
use super::*;
use crate::Store;
use crate::retry::Backoff;
use crate::{Compare, CompareOp, Txn, TxnOp};
use crate::{Error, ErrorKind, Result};

impl Migrator {
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
                                .with_context("key", crate::raw::escape_bytes(&read.item.key)));
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
