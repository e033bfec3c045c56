//! Fencing: how a dispatcher's writes carry a compare on its leadership, so that one that
//! lost it writes nothing (see `dispatch`), used by every write a dispatcher makes (`job`,
//! `once`, `failover`).

use super::error::CronixError;
use super::keys::LockKey;
use keyplane_core::Compare;
use keyplane_core::Result;
use keyplane_core::keyspace::{TxnOutcome, TxnRead, TypedTxn};

/// A dispatcher's fence on a transaction: the compare, and how to tell that it failed.
pub(super) struct Fence<'a> {
    lock: &'a LockKey,
    compare: Compare,
    revision: i64,
}

impl<'a> Fence<'a> {
    /// The fence of the holder of `lock` since `revision`, checked by `compare`.
    pub(super) fn new(lock: &'a LockKey, compare: Compare, revision: i64) -> Self {
        Fence {
            lock,
            compare,
            revision,
        }
    }
}

/// The failure-branch read that tells whether a fence failed.
pub(super) struct FenceCheck {
    read: TxnRead<LockKey>,
    revision: i64,
}

/// Adds `fence` (if any) to `txn`; check the outcome with [`fenced_out`].
pub(super) fn guard(txn: &mut TypedTxn, fence: Option<&Fence<'_>>) -> Option<FenceCheck> {
    let fence = fence?;
    txn.when(fence.compare.clone());
    Some(FenceCheck {
        read: txn.get_on_failure(fence.lock),
        revision: fence.revision,
    })
}

/// After a failed transaction: [`CronixError::NotDispatcher`] when its fence is what failed.
pub(super) fn fenced_out(outcome: &TxnOutcome, check: Option<FenceCheck>) -> Result<()> {
    let Some(check) = check else { return Ok(()) };
    let held = outcome
        .read(&check.read)?
        .is_some_and(|v| v.create_revision == check.revision);
    if held {
        Ok(())
    } else {
        Err(CronixError::NotDispatcher.into())
    }
}
