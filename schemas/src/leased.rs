//! Writing a holder's keys under a fresh lease: the step every lease-held handle of the
//! schemas (a registration, a node, a lock) starts with.

use keyplane_core::keyspace::TypedTxn;
use keyplane_core::recipes::LeaseKeeper;
use keyplane_core::{Error, Result};

/// Commits `txn`, whose writes are attached to `keeper`'s lease, and returns the keeper with
/// the transaction's revision. When the commit fails, or its compares do not hold (the error
/// `refused` builds), the lease is revoked first, so that a refused holder leaves nothing
/// behind.
///
/// # Errors
/// `refused()` when the compares do not hold; the store's errors.
pub(crate) async fn commit_leased(
    keeper: LeaseKeeper,
    txn: &mut TypedTxn,
    refused: impl FnOnce() -> Error,
) -> Result<(LeaseKeeper, i64)> {
    let error = match txn.commit().await {
        Ok(outcome) if outcome.succeeded => return Ok((keeper, outcome.revision)),
        Ok(_) => refused(),
        Err(e) => e,
    };
    // The refusal or the failure is what the caller needs; a failed revoke only leaves the
    // lease to expire.
    let _ = keeper.revoke().await;
    Err(error)
}
