//! Guarded writes: the compares that pin what an operation read, the commit that tells a
//! lost race from an error, and the bounded, jittered retry after a lost race.

use super::cache::{Balancer, bytes, id_bytes};
use super::keys::{KeyGroupsKey, KeyObjectKey};
use super::values::{KeyStatus, STATUS_FIELD};
use kv_core::keyspace::Key;
use kv_core::{CollectionKind, Compare, CompareOp, Error, ErrorKind, Result, Txn};
use std::time::Duration;

/// How many times an operation reads again and retries after a concurrent writer changed
/// what it read.
const ATTEMPTS: u32 = 32;

/// The longest pause between two attempts, in microseconds; its bound doubles from 200µs
/// up to it, and each is drawn uniformly below its bound so that racing writers spread out.
const MAX_BACKOFF_US: u64 = 8_000;

/// Holds when the key object's status is `status`, or when it has none (`None`).
pub(crate) fn status_is(object: &KeyObjectKey, status: Option<KeyStatus>) -> Compare {
    match status {
        Some(status) => Compare::map_field(
            bytes(object),
            STATUS_FIELD,
            CompareOp::Equal,
            status.as_str(),
        ),
        None => Compare::map_lacks(bytes(object), STATUS_FIELD),
    }
}

/// Holds when the reverse index holds exactly `groups`: its size, and each group.
pub(crate) fn groups_are(reverse: &KeyGroupsKey, groups: &[u64]) -> Vec<Compare> {
    let key = bytes(reverse);
    let size = i64::try_from(groups.len()).unwrap_or(i64::MAX);
    let mut compares = Vec::with_capacity(1 + groups.len());
    compares.push(Compare::size(
        &key,
        CollectionKind::Set,
        CompareOp::Equal,
        size,
    ));
    compares.extend(
        groups
            .iter()
            .map(|g| Compare::set_contains(&key, id_bytes(*g))),
    );
    compares
}

/// Holds when group `group` is not in the reverse index.
pub(crate) fn group_absent(reverse: &KeyGroupsKey, group: u64) -> Compare {
    Compare::set_lacks(bytes(reverse), id_bytes(group))
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

impl Balancer {
    /// Commits a guarded transaction: `true` when its compares held and it wrote, `false`
    /// when a concurrent writer changed what they pin (nothing was written; the backend's
    /// own retryable `ConditionFailed` means the same).
    ///
    /// # Errors
    /// Other backend errors, returned as they are.
    pub(crate) async fn commit_guarded(&self, txn: Txn) -> Result<bool> {
        match self.typed.store().txn(txn).await {
            Ok(response) => Ok(response.succeeded),
            Err(e) if e.kind() == ErrorKind::ConditionFailed && e.is_retryable() => Ok(false),
            Err(e) => Err(e),
        }
    }
}
