//! [`RegistryError`]: the registry's own conditions, carried inside [`keyplane_core::Error`].

use super::keys::{InstanceId, ServiceId};
use super::segments::GroupName;
use keyplane_core::{Error, ErrorKind};

/// Why the registry refused an operation. Nothing is written when an operation is refused,
/// except where its docs say otherwise.
///
/// Every registry operation returns [`keyplane_core::Error`], as every other schema and the
/// store do: its [`ErrorKind`] is the class (`InvalidArgument`, `NotFound`), and the
/// condition itself is carried as the error's
/// [`condition`](Error::condition), recovered with [`RegistryError::of`].
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RegistryError {
    /// A value breaks the document's rules (`InvalidArgument`).
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// Which value.
        what: &'static str,
        /// The rule it breaks.
        reason: String,
    },
    /// The group has no info file: define it first (`NotFound`).
    #[error("group {0} is not defined")]
    UnknownGroup(GroupName),
    /// The service has no info file: define it first (`NotFound`).
    #[error("service {0} is not defined")]
    UnknownService(ServiceId),
    /// The instance is not registered, or its registration belongs to another lease now
    /// (`NotFound`).
    #[error("instance {0} is not registered under this lease")]
    NotRegistered(InstanceId),
}

impl RegistryError {
    /// The kind of the [`keyplane_core::Error`] that carries this condition.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RegistryError::Invalid { .. } => ErrorKind::InvalidArgument,
            RegistryError::UnknownGroup(_)
            | RegistryError::UnknownService(_)
            | RegistryError::NotRegistered(_) => ErrorKind::NotFound,
        }
    }

    /// The registry condition `err` carries, if it carries one.
    pub fn of(err: &Error) -> Option<&RegistryError> {
        err.condition()
            .and_then(|condition| condition.downcast_ref())
    }
}

impl From<RegistryError> for Error {
    fn from(condition: RegistryError) -> Self {
        crate::condition_error(condition.kind(), condition)
    }
}
