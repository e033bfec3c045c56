//! The one public error type of the project.

use std::fmt;
use std::sync::Arc;

/// What went wrong, independent of the backend.
///
/// Backends map their client's errors into these kinds; callers match on the kind, never on a
/// backend's error type.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The key, lease or object does not exist.
    NotFound,
    /// The key or object already exists (a `create` lost the race).
    AlreadyExists,
    /// An operation built on compares gave up: its condition did not hold, or it lost the race
    /// against concurrent writers more often than its retry budget allows (then it is
    /// retryable, and nothing was written).
    ///
    /// A transaction whose compares do not hold is *not* an error: [`Store::txn`] answers
    /// `Ok` with [`TxnResponse::succeeded`] false and the failure branch's results, and the
    /// typed facade's `commit` likewise. This kind is for the operations layered on top
    /// (locks, schema operations with optimistic retries) that must report a failed
    /// condition as a failure.
    ///
    /// [`Store::txn`]: crate::Store::txn
    /// [`TxnResponse::succeeded`]: crate::TxnResponse::succeeded
    ConditionFailed,
    /// A key, prefix or segment is malformed (empty, reserved, too long, bad charset).
    InvalidKey,
    /// A value is malformed or too large.
    InvalidValue,
    /// An argument other than a key or value is out of range (a zero TTL, a zero limit...).
    InvalidArgument,
    /// A transaction has more operations than the backend accepts; it was not sent.
    TxnTooLarge,
    /// A transaction writes one key twice, or puts inside a prefix it deletes.
    TxnConflict,
    /// The requested revision is no longer retained. Revisions from `compact_revision` on are.
    Compacted {
        /// The oldest revision the store still retains history for.
        compact_revision: i64,
    },
    /// The lease does not exist, was revoked or has expired.
    LeaseNotFound,
    /// A lock or lease that was held has been lost.
    LockLost,
    /// A watch's reader fell so far behind that the store stopped queueing batches for it
    /// (the store's documented buffer, such as `MemConfig::watch_buffer`), and the watch
    /// ended. Every batch before the error was delivered; resuming from the revision after
    /// the last one read (which keyplane-core's `RetryLayer` does) loses
    /// nothing while the store retains that history. Retryable.
    Lagged,
    /// The caller could not be authenticated (wrong or missing credentials), or may not
    /// access this object (an ownership check failed).
    Unauthorized,
    /// The backend's access control refuses the operation to the authenticated user: a key
    /// outside an etcd role's ranges, a key pattern or command a Redis ACL user lacks. It was
    /// refused before anything was written.
    PermissionDenied,
    /// A write to a key or store that is read-only: an old layout's key
    /// (a read-only template of keyplane-core's keyspace), or a store opened
    /// read-only. It was refused before reaching the backend; nothing was written.
    ReadOnly,
    /// The backend cannot be reached or is overloaded; worth retrying.
    Unavailable,
    /// The operation timed out; it may or may not have been applied.
    Timeout,
    /// The backend does not support this operation or option.
    Unsupported,
    /// A value could not be encoded or decoded by its codec.
    Codec,
    /// A key holds a value of another type than the operation expects.
    WrongType,
    /// The store's data is inconsistent or written by an incompatible format version.
    Corrupted,
    /// Configuration is invalid (a bad URL, a missing field).
    Config,
    /// Any other backend failure.
    Backend,
    /// A broken invariant of this library (an operation got a result its own request cannot
    /// produce): a bug to report, not a problem with the backend or the input.
    Internal,
}

impl ErrorKind {
    /// A short, stable name for the kind (used in messages and by `kvctl`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not found",
            ErrorKind::AlreadyExists => "already exists",
            ErrorKind::ConditionFailed => "condition failed",
            ErrorKind::InvalidKey => "invalid key",
            ErrorKind::InvalidValue => "invalid value",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::TxnTooLarge => "transaction too large",
            ErrorKind::TxnConflict => "conflicting transaction operations",
            ErrorKind::Compacted { .. } => "revision compacted",
            ErrorKind::LeaseNotFound => "lease not found",
            ErrorKind::LockLost => "lock lost",
            ErrorKind::Lagged => "watch lagged",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::PermissionDenied => "permission denied",
            ErrorKind::ReadOnly => "read-only",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Codec => "codec error",
            ErrorKind::WrongType => "wrong type",
            ErrorKind::Corrupted => "corrupted",
            ErrorKind::Config => "invalid configuration",
            ErrorKind::Backend => "backend error",
            ErrorKind::Internal => "internal error",
        }
    }

    /// A stable `snake_case` identifier of the kind, for metric labels and log fields
    /// (`"not_found"`, `"condition_failed"`, `"read_only"`, `"unavailable"`...).
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::AlreadyExists => "already_exists",
            ErrorKind::ConditionFailed => "condition_failed",
            ErrorKind::InvalidKey => "invalid_key",
            ErrorKind::InvalidValue => "invalid_value",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::TxnTooLarge => "txn_too_large",
            ErrorKind::TxnConflict => "txn_conflict",
            ErrorKind::Compacted { .. } => "compacted",
            ErrorKind::LeaseNotFound => "lease_not_found",
            ErrorKind::LockLost => "lock_lost",
            ErrorKind::Lagged => "lagged",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::ReadOnly => "read_only",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Codec => "codec",
            ErrorKind::WrongType => "wrong_type",
            ErrorKind::Corrupted => "corrupted",
            ErrorKind::Config => "config",
            ErrorKind::Backend => "backend",
            ErrorKind::Internal => "internal",
        }
    }

    /// Whether an operation failing with this kind is, by default, worth retrying.
    pub fn is_retryable_by_default(self) -> bool {
        matches!(
            self,
            ErrorKind::Unavailable | ErrorKind::Timeout | ErrorKind::Lagged
        )
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Compacted { compact_revision } => {
                write!(
                    f,
                    "revision compacted (oldest retained: {compact_revision})"
                )
            }
            other => f.write_str(other.name()),
        }
    }
}

/// The error of every fallible operation in this project.
///
/// It carries a [`ErrorKind`], a message, whether retrying may help, key/value context pairs
/// (the operation, the key...) and the underlying cause as [`std::error::Error::source`].
///
/// `Display` shows the kind, the message and the context, not the cause: a reporter that
/// walks [`source`](std::error::Error::source) (`anyhow`, `eyre`, or [`Error::chain`]) shows
/// each cause once. An error made of a typed condition ([`Error::from_condition`]: a key
/// that breaks its template, a schema's refusal) shows the condition's text as its message
/// and keeps the condition itself beside the cause, in [`Error::condition`], so that no
/// reporter shows that text twice. Errors are cheap to clone; clones share the cause.
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    retryable: bool,
    unapplied: bool,
    context: Vec<(&'static str, String)>,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
    /// The typed condition whose text is the message, if the error was made of one.
    condition: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

/// `Result` with this project's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of `kind` with a message; retryability follows the kind's default.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            retryable: kind.is_retryable_by_default(),
            unapplied: false,
            context: Vec::new(),
            source: None,
            condition: None,
        }
    }

    /// An error of `kind` that is `condition`: its message is the condition's text, and the
    /// condition is kept, typed, for [`Error::condition`] (a caller matches on it with
    /// `downcast_ref`). The condition is not the error's cause, which would show its text
    /// twice to a reporter of the causes; its own cause, if any, is the error's
    /// [`source`](std::error::Error::source).
    ///
    /// ```
    /// use keyplane_contract::{Error, ErrorKind};
    /// #[derive(Debug, PartialEq)]
    /// struct Taken(&'static str);
    /// impl std::fmt::Display for Taken {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         write!(f, "name {} is taken", self.0)
    ///     }
    /// }
    /// impl std::error::Error for Taken {}
    ///
    /// let err = Error::from_condition(ErrorKind::AlreadyExists, Taken("web"));
    /// assert_eq!(err.chain(), "already exists: name web is taken");
    /// let condition = err.condition().and_then(|c| c.downcast_ref::<Taken>());
    /// assert_eq!(condition, Some(&Taken("web")));
    /// ```
    pub fn from_condition(
        kind: ErrorKind,
        condition: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        let mut err = Self::new(kind, condition.to_string());
        err.condition = Some(Arc::new(condition));
        err
    }

    /// The typed condition this error was made of ([`Error::from_condition`]), if any.
    pub fn condition(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.condition
            .as_ref()
            .map(|c| c.as_ref() as &(dyn std::error::Error + 'static))
    }

    /// Shorthand for an [`ErrorKind::InvalidKey`] error.
    pub fn invalid_key(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidKey, message)
    }

    /// Shorthand for an [`ErrorKind::InvalidArgument`] error.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// The [`ErrorKind::LeaseNotFound`] error of every backend for lease `id`.
    pub fn lease_not_found(id: crate::lease::LeaseId) -> Self {
        Self::new(
            ErrorKind::LeaseNotFound,
            "the lease does not exist, was revoked or has expired",
        )
        .with_context("lease", id)
    }

    /// Shorthand for an [`ErrorKind::Internal`] error: a result this library's own request
    /// cannot produce.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// Shorthand for an [`ErrorKind::Compacted`] error.
    pub fn compacted(compact_revision: i64) -> Self {
        Self::new(
            ErrorKind::Compacted { compact_revision },
            format!("revisions before {compact_revision} are no longer retained"),
        )
    }

    /// Attaches the underlying cause, returned by `source()`.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// Adds a context pair, such as `("key", "jxt/tenants/1/meta")` or `("op", "put")`.
    pub fn with_context(mut self, name: &'static str, value: impl fmt::Display) -> Self {
        self.context.push((name, value.to_string()));
        self
    }

    /// Overrides whether the failed operation is worth retrying.
    pub fn set_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Marks whether the request certainly never reached the backend (refused before it was
    /// sent, or no connection could be made), so that it changed nothing. Such a failure of
    /// a write may be retried without risking applying the write twice; any other failure
    /// of a write (a timeout, a connection lost while waiting for the answer) leaves its
    /// outcome unknown.
    pub fn set_unapplied(mut self, unapplied: bool) -> Self {
        self.unapplied = unapplied;
        self
    }

    /// Whether the request certainly never reached the backend (see
    /// [`set_unapplied`](Self::set_unapplied)): nothing was written.
    pub fn is_unapplied(&self) -> bool {
        self.unapplied
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, without context.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The context pairs, in the order they were added.
    pub fn context(&self) -> &[(&'static str, String)] {
        &self.context
    }

    /// Whether retrying the same operation may succeed.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }

    /// This error's message, then each cause's, joined by `": "`: the whole story in one
    /// line, for a program that prints errors without walking their sources.
    pub fn chain(&self) -> String {
        let mut out = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            out.push_str(": ");
            out.push_str(&c.to_string());
            cause = c.source();
        }
        out
    }

    /// The oldest retained revision when this is a [`ErrorKind::Compacted`] error.
    pub fn compact_revision(&self) -> Option<i64> {
        match self.kind {
            ErrorKind::Compacted { compact_revision } => Some(compact_revision),
            _ => None,
        }
    }
}

impl Error {
    /// Whether two errors say the same thing: the same kind, message and context (causes
    /// are not compared). Used by the `PartialEq` of values that carry an error.
    pub fn same_as(&self, other: &Error) -> bool {
        self.kind == other.kind && self.message == other.message && self.context == other.context
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        for (name, value) in &self.context {
            write!(f, ", {name}: {value}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind)
            .field("message", &self.message)
            .field("retryable", &self.retryable);
        if self.unapplied {
            d.field("unapplied", &true);
        }
        if !self.context.is_empty() {
            d.field("context", &self.context);
        }
        if let Some(condition) = &self.condition {
            d.field("condition", condition);
        }
        if let Some(source) = &self.source {
            d.field("source", source);
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.source {
            Some(source) => Some(source.as_ref() as &(dyn std::error::Error + 'static)),
            // The condition is the message; what caused it is the error's cause.
            None => self.condition.as_ref().and_then(|c| c.source()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_has_kind_message_context_and_source() {
        let io = std::io::Error::other("socket closed");
        let err = Error::new(ErrorKind::Unavailable, "etcd unreachable")
            .with_context("op", "get")
            .with_source(io);
        assert!(err.is_retryable());
        // The cause is the source, not part of the message.
        assert_eq!(err.to_string(), "unavailable: etcd unreachable, op: get");
        assert_eq!(
            std::error::Error::source(&err).unwrap().to_string(),
            "socket closed"
        );
        assert_eq!(
            err.chain(),
            "unavailable: etcd unreachable, op: get: socket closed"
        );
        let clone = err.clone();
        assert_eq!(clone.chain(), err.chain());
        assert!(!Error::invalid_key("empty").is_retryable());
        assert_eq!(Error::compacted(7).compact_revision(), Some(7));
    }
}
