//! The one place where sled's errors become `keyplane_contract::Error`s.

use keyplane_contract::{Error, ErrorKind};
use sled::transaction::TransactionError;

/// Maps a sled error raised by operation `op` into the project's error, naming the operation
/// in its context and keeping sled's error as the `source()`.
///
/// sled reports a database directory locked by another process as an I/O error saying "could
/// not acquire lock"; that becomes a non-retryable `Unavailable` error naming the cause.
pub(crate) fn map_error(op: &'static str, err: sled::Error) -> Error {
    let mapped = match &err {
        sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => Error::new(
            ErrorKind::Unavailable,
            "the sled database directory is in use by another process (it holds the \
             directory's exclusive lock); stop that process or use another path",
        )
        .set_retryable(false)
        .with_source(err),
        sled::Error::Io(_) => {
            Error::new(ErrorKind::Backend, "sled: an I/O operation failed").with_source(err)
        }
        sled::Error::Corruption { .. } => {
            Error::new(ErrorKind::Corrupted, "sled detected corrupted data").with_source(err)
        }
        sled::Error::Unsupported(_) => {
            Error::new(ErrorKind::Unsupported, "sled: unsupported operation").with_source(err)
        }
        _ => Error::new(ErrorKind::Backend, "sled failed").with_source(err),
    };
    mapped.with_context("op", op)
}

/// Maps the error of a sled transaction that is never aborted by its closure, as
/// [`map_error`] does.
pub(crate) fn map_txn(op: &'static str, err: TransactionError<()>) -> Error {
    match err {
        TransactionError::Storage(err) => map_error(op, err),
        TransactionError::Abort(()) => Error::new(
            ErrorKind::Backend,
            "sled: a transaction that applies precomputed writes was aborted",
        )
        .with_context("op", op),
    }
}
