//! What every writer of a tenant shares: the retries of a write that lost a race with
//! another, the status of a tenant being deleted, and the error of a tenant that does not
//! exist.

use keyplane_core::retry::{Attempts, Backoff};
use keyplane_core::{Error, ErrorKind, Result};

/// The meta status a deletion writes first: a tenant being deleted takes no more changes.
pub(crate) const DELETING: &str = "deleting";

/// Retries of an operation that re-reads when a concurrent writer changed what it read: the
/// shared jittered backoff, within its deadline.
pub(crate) struct Contention {
    attempts: Attempts<'static>,
    started: bool,
    what: &'static str,
}

static POLICY: std::sync::LazyLock<Backoff> = std::sync::LazyLock::new(Backoff::default);

impl Contention {
    pub(crate) fn new(what: &'static str) -> Self {
        Contention {
            attempts: POLICY.start(),
            started: false,
            what,
        }
    }

    /// Before each attempt: waits after a lost one, or gives up with a retryable
    /// `ConditionFailed` when the backoff's deadline has passed.
    pub(crate) async fn next(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.started, true) && !self.attempts.wait().await {
            return Err(self.attempts.exhausted(
                Error::new(
                    ErrorKind::ConditionFailed,
                    format!(
                        "{}: concurrent writers kept changing the tenant; try again",
                        self.what
                    ),
                )
                .set_retryable(true),
            ));
        }
        Ok(())
    }
}

/// The error of tenant `id`, which does not exist (or is being deleted).
pub(crate) fn not_found(id: u64) -> Error {
    Error::new(ErrorKind::NotFound, format!("tenant {id} does not exist"))
        .with_context("tenant", id)
}
