//! [`CronixError`]: why a cronix operation failed.

use super::segments::{JobId, LockName};
use uuid::Uuid;

/// Why a cronix operation failed. A failed operation writes nothing.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum CronixError {
    /// A value breaks the document's rules.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// Which value.
        what: &'static str,
        /// The rule it breaks.
        reason: String,
    },
    /// A node with this UUID is already registered.
    #[error("node {0} is already registered")]
    NodeExists(Uuid),
    /// The node is not registered (its lease expired, or it never registered).
    #[error("node {0} is not registered")]
    NodeDown(Uuid),
    /// The job is not assigned to the node.
    #[error("job {job} is not assigned to node {node}")]
    JobNotFound {
        /// The node.
        node: Uuid,
        /// The job.
        job: JobId,
    },
    /// The job was changed or moved by someone else since it was read.
    #[error("job {job} on node {node} changed concurrently")]
    JobChanged {
        /// The node.
        node: Uuid,
        /// The job.
        job: JobId,
    },
    /// The target node already has a job of that id.
    #[error("job {job} is already assigned to node {node}")]
    JobExists {
        /// The node.
        node: Uuid,
        /// The job.
        job: JobId,
    },
    /// A one-shot trigger of the job is pending (not cleaned up yet).
    #[error("a one-shot trigger of job {0} is already pending")]
    AlreadyTriggered(JobId),
    /// No process is recorded at this key.
    #[error("no process is recorded at {}", keyplane_core::keyspace::Key::encode(.0))]
    ProcessNotFound(super::keys::ProcKey),
    /// The dispatcher lost its leadership (its lock key was deleted, or its lease ended):
    /// another instance dispatches now.
    #[error("this scheduler instance is no longer the dispatcher")]
    NotDispatcher,
    /// Someone else holds the lock.
    #[error("lock {0} is held")]
    LockHeld(LockName),
    /// The node has no pending system-information request.
    #[error("node {0} has no pending system-information request")]
    NoRequest(Uuid),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] keyplane_core::Error),
}

/// The result of a cronix operation.
pub type Result<T, E = CronixError> = std::result::Result<T, E>;
