//! [`CronixError`]: the scheduler's own conditions, carried inside [`keyplane_core::Error`].

use super::segments::{JobId, LockName};
use keyplane_core::{Error, ErrorKind};
use uuid::Uuid;

/// Why the scheduler refused an operation. A refused operation writes nothing.
///
/// Every cronix operation returns [`keyplane_core::Error`], as every other schema and the
/// store do: its [`ErrorKind`] is what a retry loop or a caller that only needs the class
/// looks at (`AlreadyExists`, `NotFound`, `ConditionFailed`, `LockLost`, `InvalidArgument`),
/// and the condition itself is carried as the error's
/// [`condition`](Error::condition), recovered with [`CronixError::of`].
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use keyplane_schemas::cronix::*;
/// use std::{sync::Arc, time::Duration};
///
/// let store = keyplane_core::keyspace::TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let name = LockName::new("scheduler.dispatch")?;
/// let _held = try_lock(&store, &name, Duration::from_secs(10)).await?;
/// let err = try_lock(&store, &name, Duration::from_secs(10)).await.unwrap_err();
/// assert_eq!(err.kind(), keyplane_core::ErrorKind::ConditionFailed);
/// assert!(matches!(CronixError::of(&err), Some(CronixError::LockHeld(_))));
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CronixError {
    /// A value breaks the document's rules (`InvalidArgument`).
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// Which value.
        what: &'static str,
        /// The rule it breaks.
        reason: String,
    },
    /// A node with this UUID is already registered (`AlreadyExists`).
    #[error("node {0} is already registered")]
    NodeExists(Uuid),
    /// The node is not registered: its lease expired, or it never registered (`NotFound`).
    #[error("node {0} is not registered")]
    NodeDown(Uuid),
    /// The job is not assigned to the node (`NotFound`).
    #[error("job {job} is not assigned to node {node}")]
    JobNotFound {
        /// The node.
        node: Uuid,
        /// The job.
        job: JobId,
    },
    /// The job was changed or moved by someone else since it was read
    /// (`ConditionFailed`).
    #[error("job {job} on node {node} changed concurrently")]
    JobChanged {
        /// The node.
        node: Uuid,
        /// The job.
        job: JobId,
    },
    /// The target node already has a job of that id (`AlreadyExists`).
    #[error("job {job} is already assigned to node {node}")]
    JobExists {
        /// The node.
        node: Uuid,
        /// The job.
        job: JobId,
    },
    /// A one-shot trigger of the job is pending, not cleaned up yet (`AlreadyExists`).
    #[error("a one-shot trigger of job {0} is already pending")]
    AlreadyTriggered(JobId),
    /// No process is recorded at this key (`NotFound`).
    #[error("no process is recorded at {}", keyplane_core::keyspace::Key::encode(.0))]
    ProcessNotFound(super::keys::ProcKey),
    /// The dispatcher lost its leadership (its lock key was deleted, or its lease ended):
    /// another instance dispatches now (`LockLost`).
    #[error("this scheduler instance is no longer the dispatcher")]
    NotDispatcher,
    /// Someone else holds the lock (`ConditionFailed`).
    #[error("lock {0} is held")]
    LockHeld(LockName),
    /// The node has no pending system-information request (`NotFound`).
    #[error("node {0} has no pending system-information request")]
    NoRequest(Uuid),
}

impl CronixError {
    /// The kind of the [`keyplane_core::Error`] that carries this condition.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CronixError::Invalid { .. } => ErrorKind::InvalidArgument,
            CronixError::NodeExists(_)
            | CronixError::JobExists { .. }
            | CronixError::AlreadyTriggered(_) => ErrorKind::AlreadyExists,
            CronixError::NodeDown(_)
            | CronixError::JobNotFound { .. }
            | CronixError::ProcessNotFound(_)
            | CronixError::NoRequest(_) => ErrorKind::NotFound,
            CronixError::JobChanged { .. } | CronixError::LockHeld(_) => ErrorKind::ConditionFailed,
            CronixError::NotDispatcher => ErrorKind::LockLost,
        }
    }

    /// The scheduler condition `err` carries, if it carries one.
    pub fn of(err: &Error) -> Option<&CronixError> {
        err.condition()
            .and_then(|condition| condition.downcast_ref())
    }
}

impl From<CronixError> for Error {
    fn from(condition: CronixError) -> Self {
        crate::condition_error(condition.kind(), condition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The condition is the error's message, shown once by a reporter of the causes, and
    /// still recovered typed.
    #[test]
    fn a_condition_is_shown_once_and_recovered() {
        let err = Error::from(CronixError::NotDispatcher);
        let text = CronixError::NotDispatcher.to_string();
        assert_eq!(err.chain().matches(&text).count(), 1, "{}", err.chain());
        assert_eq!(CronixError::of(&err), Some(&CronixError::NotDispatcher));
    }
}
