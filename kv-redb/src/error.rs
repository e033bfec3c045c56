//! The one place where redb's errors become `keyplane_contract::Error`s.

use keyplane_contract::{Error, ErrorKind};

/// Maps a redb error raised by operation `op` into the project's error, naming the operation
/// in its context and keeping redb's error as the `source()`.
///
/// A database file another process (or another store of this process) has open becomes a
/// non-retryable `Unavailable` error naming the cause; a file redb finds corrupted, or one in
/// an older file format, becomes `Corrupted`.
pub(crate) fn map_error(op: &'static str, err: impl Into<redb::Error>) -> Error {
    let err: redb::Error = err.into();
    let mapped = match &err {
        redb::Error::DatabaseAlreadyOpen | redb::Error::LockProtocolMismatch => Error::new(
            ErrorKind::Unavailable,
            "the redb database file is in use by another store (it holds the file's lock); \
             close that store or use another path",
        )
        .set_retryable(false),
        redb::Error::Corrupted(_) => Error::new(ErrorKind::Corrupted, "redb found corrupted data"),
        redb::Error::UpgradeRequired(_) => Error::new(
            ErrorKind::Corrupted,
            "the redb database file is in an older file format; upgrade it with redb first",
        ),
        redb::Error::Io(_) => Error::new(ErrorKind::Backend, "redb: an I/O operation failed"),
        redb::Error::ValueTooLarge(_) => Error::new(
            ErrorKind::InvalidArgument,
            "redb: a value is too large to store",
        ),
        _ => Error::new(ErrorKind::Backend, "redb failed"),
    };
    mapped.with_source(err).with_context("op", op)
}

/// [`map_error`] as a method of redb's results: `txn.open_table(KV).redb("get")?`.
pub(crate) trait RedbResult<T> {
    /// The value, or redb's error mapped by [`map_error`] for operation `op`.
    fn redb(self, op: &'static str) -> keyplane_contract::Result<T>;
}

impl<T, E: Into<redb::Error>> RedbResult<T> for Result<T, E> {
    fn redb(self, op: &'static str) -> keyplane_contract::Result<T> {
        self.map_err(|e| map_error(op, e))
    }
}
