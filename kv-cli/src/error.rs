//! The command's failure: a one-line message and the process exit code it maps to.

use keyplane::{Error, ErrorKind};
use std::fmt;

/// Exit codes, documented in the README and in `kvctl --help`.
pub(crate) mod code {
    /// The key (or anything asked for) does not exist.
    pub(crate) const NOT_FOUND: u8 = 1;
    /// Bad usage or invalid input: URL, key, segment, value.
    pub(crate) const INVALID: u8 = 2;
    /// The store cannot be reached, timed out or refused the credentials.
    pub(crate) const UNREACHABLE: u8 = 3;
    /// A conflict: the key exists, a condition failed, a lock is held.
    pub(crate) const CONFLICT: u8 = 4;
    /// Any other store or internal error.
    pub(crate) const OTHER: u8 = 5;
    /// A check found something: a migration that does not verify.
    pub(crate) const FOUND: u8 = 6;
}

/// A failed command.
#[derive(Debug)]
pub(crate) struct CliError {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl CliError {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Self {
        CliError {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(code::INVALID, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(code::NOT_FOUND, message)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, whatever the source said.
        let line = self.message.replace('\n', " ");
        f.write_str(&line)
    }
}

/// The exit code of a store error's kind.
pub(crate) fn exit_code(kind: &ErrorKind) -> u8 {
    match kind {
        ErrorKind::NotFound | ErrorKind::LeaseNotFound => code::NOT_FOUND,
        ErrorKind::InvalidKey
        | ErrorKind::InvalidValue
        | ErrorKind::InvalidArgument
        | ErrorKind::Codec
        | ErrorKind::Config
        | ErrorKind::TxnTooLarge
        | ErrorKind::WrongType
        | ErrorKind::ReadOnly => code::INVALID,
        ErrorKind::Unavailable
        | ErrorKind::Timeout
        | ErrorKind::Unauthorized
        | ErrorKind::PermissionDenied => code::UNREACHABLE,
        ErrorKind::AlreadyExists
        | ErrorKind::ConditionFailed
        | ErrorKind::TxnConflict
        | ErrorKind::LockLost => code::CONFLICT,
        _ => code::OTHER,
    }
}

impl From<Error> for CliError {
    fn from(err: Error) -> Self {
        CliError::new(exit_code(&err.kind()), err.chain())
    }
}

pub(crate) type CliResult<T> = Result<T, CliError>;
