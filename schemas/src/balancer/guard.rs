//! Guarded writes: the compares that pin what an operation read, the commit that tells a
//! lost race from an error, and the bounded, jittered retry after a lost race.

use super::cache::Balancer;
use super::values::{KeyStatus, STATUS_FIELD};
use keyplane_core::keyspace::{Key, TypedTxn};
use keyplane_core::{CompareOp, Error, ErrorKind, Result};
use std::time::Duration;

/// How many times an operation reads again and retries after a concurrent writer changed
/// what it read.
const ATTEMPTS: u32 = 32;

/// The longest pause between two attempts, in microseconds; its bound doubles from 200µs
/// up to it, and each is drawn uniformly below its bound so that racing writers spread out.
const MAX_BACKOFF_US: u64 = 8_000;

impl Balancer {
    /// Requires the status of API key `id` to be `status`, or absent (`None`).
    pub(crate) fn when_status(&self, txn: &mut TypedTxn, id: u64, status: Option<KeyStatus>) {
        let object = self.object(id);
        let field = STATUS_FIELD.to_string();
        match status {
            Some(status) => txn.when_map_field_equals(&object, &field, &status.as_str().into()),
            None => txn.when_map_lacks(&object, &field),
        };
    }

    /// Requires the reverse index of API key `id` to hold exactly `groups`: its size, and
    /// each group.
    pub(crate) fn when_groups_are(&self, txn: &mut TypedTxn, id: u64, groups: &[u64]) {
        let reverse = self.groups(id);
        let size = i64::try_from(groups.len()).unwrap_or(i64::MAX);
        txn.when_set_len(&reverse, CompareOp::Equal, size);
        for group in groups {
            txn.when_set_contains(&reverse, group);
        }
    }

    /// Commits a guarded transaction: `true` when its compares held and it wrote, `false`
    /// when a concurrent writer changed what they pin (nothing was written; the backend's
    /// own retryable `ConditionFailed` means the same).
    ///
    /// # Errors
    /// Other errors, returned as they are.
    pub(crate) async fn commit_guarded(&self, mut txn: TypedTxn) -> Result<bool> {
        match txn.commit().await {
            Ok(outcome) => Ok(outcome.succeeded),
            Err(e) if e.kind() == ErrorKind::ConditionFailed && e.is_retryable() => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Counts the attempts of one operation on one key.
pub(crate) struct Attempts {
    operation: &'static str,
    id: u64,
    lost: u32,
}

impl Attempts {
    pub(crate) fn new(operation: &'static str, id: u64) -> Self {
        Attempts {
            operation,
            id,
            lost: 0,
        }
    }

    /// Records a lost race and pauses before the next attempt.
    ///
    /// # Errors
    /// A retryable `ConditionFailed` once the operation has lost [`ATTEMPTS`] races.
    pub(crate) async fn lost(&mut self, cache: &Balancer) -> Result<()> {
        self.lost += 1;
        if self.lost >= ATTEMPTS {
            return Err(Error::new(
                ErrorKind::ConditionFailed,
                "concurrent writers kept changing the API key's status or groups; try again",
            )
            .with_context("operation", self.operation)
            .with_context("key", cache.object_key(self.id).encode())
            .with_context("attempts", ATTEMPTS)
            .set_retryable(true));
        }
        let bound = (100u64 << self.lost.min(7)).min(MAX_BACKOFF_US);
        tokio::time::sleep(Duration::from_micros(rand::random_range(0..=bound))).await;
        Ok(())
    }
}
