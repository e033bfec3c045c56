//! [`RegistryError`]: why a registry operation failed.

use super::keys::{InstanceId, ServiceId};
use super::segments::GroupName;

/// Why a registry operation failed. Nothing is written when an operation fails, except where
/// its docs say otherwise.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A value breaks the document's rules; nothing was written.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// Which value.
        what: &'static str,
        /// The rule it breaks.
        reason: String,
    },
    /// The group has no info file: define it first.
    #[error("group {0} is not defined")]
    UnknownGroup(GroupName),
    /// The service has no info file: define it first.
    #[error("service {0} is not defined")]
    UnknownService(ServiceId),
    /// The instance is not registered, or its registration belongs to another lease now.
    #[error("instance {0} is not registered under this lease")]
    NotRegistered(InstanceId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] keyplane_core::Error),
}

/// The result of a registry operation.
pub type Result<T, E = RegistryError> = std::result::Result<T, E>;
