//! Guarded writes: the compares that pin what an operation read, the commit that tells a
//! lost race from an error, and the bounded, jittered retry after a lost race (the shared
//! [`Backoff`]).

use super::cache::Balancer;
use super::values::{KeyStatus, STATUS_FIELD};
use keyplane_core::keyspace::{Key, TypedTxn};
use keyplane_core::retry::Backoff;
use keyplane_core::{CompareOp, Error, ErrorKind, Result};
use std::time::Duration;

/// How many times an operation reads again and retries after a concurrent writer changed
/// what it read.
const ATTEMPTS: u32 = 32;

impl Balancer {
    /// Requires the status of API key `id` to be `status`, or absent (`None`).
    pub(crate) fn when_status(&self, txn: &mut TypedTxn, id: u64, status: Option<&KeyStatus>) {
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

/// How an operation that lost a race reads again: jittered backoff from 200 µs up to 8 ms,
/// at most 32 attempts within 10 s.
static RETRY: std::sync::LazyLock<Backoff> = std::sync::LazyLock::new(|| {
    Backoff::default()
        .initial(Duration::from_micros(200))
        .max_delay(Duration::from_millis(8))
        .max_attempts(ATTEMPTS)
});

/// What an operation that lost races works on: an API key, or a group's active list.
#[derive(Clone, Copy)]
pub(crate) enum Subject {
    Key(u64),
    Group(u64),
}

/// The races one operation on one key or group lost: the shared backoff's
/// [`Attempts`](keyplane_core::retry::Attempts), which count them, pause and give up, with
/// the operation and subject that the error it gives up with names. (Not a second kind of
/// attempts: the counting is the contract's; this adds the balancer's error.)
pub(crate) struct Races {
    operation: &'static str,
    subject: Subject,
    attempts: keyplane_core::retry::Attempts<'static>,
}

impl Races {
    /// The attempts of `operation` on API key `id`.
    pub(crate) fn new(operation: &'static str, id: u64) -> Self {
        Self::on(operation, Subject::Key(id))
    }

    /// The attempts of `operation` on `subject`.
    pub(crate) fn on(operation: &'static str, subject: Subject) -> Self {
        Races {
            operation,
            subject,
            attempts: RETRY.start(),
        }
    }

    /// Records a lost race and pauses before the next attempt.
    ///
    /// # Errors
    /// A retryable `ConditionFailed` once the backoff gives up (after [`ATTEMPTS`] races).
    pub(crate) async fn lost(&mut self, cache: &Balancer) -> Result<()> {
        if self.attempts.wait().await {
            return Ok(());
        }
        let (message, key) = match self.subject {
            Subject::Key(id) => (
                "concurrent writers kept changing the API key's status or groups; try again",
                cache.object_key(id).encode(),
            ),
            Subject::Group(id) => (
                "concurrent writers kept changing the group's active list; try again",
                cache.active_key(id).encode(),
            ),
        };
        Err(self.attempts.exhausted(
            Error::new(ErrorKind::ConditionFailed, message)
                .with_context("operation", self.operation)
                .with_context("key", key)
                .set_retryable(true),
        ))
    }
}
