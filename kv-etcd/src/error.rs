//! The one mapping from `etcd-client` errors into [`keyplane_contract::Error`].

use etcd_client::Error as EtcdError;
use keyplane_contract::{Error, ErrorKind};
use tonic::Code;

/// Maps an `etcd-client` error into the project's error, keeping it as the `source()`.
///
/// The etcd server reports most failures as a gRPC status whose message starts with
/// `etcdserver:` (or `mvcc:`); the kind is chosen from the code and that message.
pub(crate) fn map_error(op: &'static str, err: EtcdError) -> Error {
    let (kind, retryable, message) = classify(&err);
    Error::new(kind, message)
        .set_retryable(retryable)
        .set_unapplied(request_not_sent(&err))
        .with_context("op", op)
        .with_source(err)
}

/// Whether the request certainly never reached a member (no connection could be made), so
/// that even a write may be retried without risking applying it twice.
pub(crate) fn request_not_sent(err: &EtcdError) -> bool {
    let detail = match err {
        EtcdError::TransportError(_) => return true,
        // The Debug form includes the transport error the status was made from.
        EtcdError::GRpcStatus(status) if status.code() == Code::Unavailable => {
            format!("{status:?}")
        }
        _ => return false,
    };
    [
        "tcp connect error",
        "error trying to connect",
        "Connection refused",
        "connection refused",
        "dns error",
        "no available",
    ]
    .iter()
    .any(|s| detail.contains(s))
}

fn classify(err: &EtcdError) -> (ErrorKind, bool, String) {
    match err {
        EtcdError::GRpcStatus(status) => classify_status(status.code(), status.message()),
        EtcdError::TransportError(_) | EtcdError::IoError(_) => {
            (ErrorKind::Unavailable, true, "cannot reach etcd".to_owned())
        }
        EtcdError::InvalidArgs(m) => (ErrorKind::InvalidArgument, false, m.clone()),
        EtcdError::InvalidUri(_) | EtcdError::EndpointError(_) => {
            (ErrorKind::Config, false, "invalid etcd endpoint".to_owned())
        }
        EtcdError::LeaseKeepAliveError(m) if m.contains("not found") => {
            (ErrorKind::LeaseNotFound, false, m.clone())
        }
        EtcdError::LeaseKeepAliveError(m) | EtcdError::WatchError(m) => {
            (ErrorKind::Unavailable, true, m.clone())
        }
        other => (ErrorKind::Backend, false, other.to_string()),
    }
}

fn classify_status(code: Code, message: &str) -> (ErrorKind, bool, String) {
    let m = message.to_owned();
    let has = |s: &str| message.contains(s);
    let kind = if has("request is too large") {
        ErrorKind::TxnTooLarge
    } else if has("duplicate key given in txn request") {
        ErrorKind::TxnConflict
    } else if has("too many operations in txn request") {
        ErrorKind::TxnTooLarge
    } else if has("requested lease not found") || has("lease not found") {
        ErrorKind::LeaseNotFound
    } else if has("required revision has been compacted") {
        // The exact compact revision is not in the message; callers that know it replace it.
        ErrorKind::Compacted {
            compact_revision: 0,
        }
    } else if has("required revision is a future revision") {
        ErrorKind::InvalidArgument
    } else if has("key is not provided") || has("key is too long") {
        ErrorKind::InvalidKey
    } else if has("permission denied") {
        ErrorKind::PermissionDenied
    } else if has("authentication failed") || has("invalid auth token") || has("user name is empty")
    {
        ErrorKind::Unauthorized
    } else if has("too many requests") || has("no space") {
        return (ErrorKind::Unavailable, true, m);
    } else {
        match code {
            Code::Unavailable
            | Code::Aborted
            | Code::ResourceExhausted
            | Code::Cancelled
            | Code::Unknown
                if is_transient(message) || code == Code::Unavailable =>
            {
                return (ErrorKind::Unavailable, true, m);
            }
            Code::DeadlineExceeded => return (ErrorKind::Timeout, true, m),
            Code::Unauthenticated => ErrorKind::Unauthorized,
            Code::PermissionDenied => ErrorKind::PermissionDenied,
            Code::NotFound => ErrorKind::NotFound,
            Code::InvalidArgument | Code::OutOfRange | Code::FailedPrecondition => {
                ErrorKind::InvalidArgument
            }
            Code::Unimplemented => ErrorKind::Unsupported,
            _ => ErrorKind::Backend,
        }
    };
    (kind, kind.is_retryable_by_default(), m)
}

/// Server and transport conditions that pass: elections, leader loss, closed connections.
fn is_transient(message: &str) -> bool {
    [
        "leader changed",
        "no leader",
        "not leader",
        "request timed out",
        "timed out",
        "transport",
        "connection",
        "broken pipe",
        "stopped",
        "h2 protocol error",
        "error reading a body",
        // The transport dropped the request (a member went away mid-call).
        "operation was canceled",
    ]
    .iter()
    .any(|s| message.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(code: Code, msg: &str) -> (ErrorKind, bool) {
        let e = map_error("test", EtcdError::GRpcStatus(tonic::Status::new(code, msg)));
        (e.kind(), e.is_retryable())
    }

    #[test]
    fn etcd_server_errors_map_to_kinds() {
        let cases = [
            (
                Code::InvalidArgument,
                "etcdserver: request is too large",
                ErrorKind::TxnTooLarge,
                false,
            ),
            (
                Code::InvalidArgument,
                "etcdserver: duplicate key given in txn request",
                ErrorKind::TxnConflict,
                false,
            ),
            (
                Code::InvalidArgument,
                "etcdserver: too many operations in txn request",
                ErrorKind::TxnTooLarge,
                false,
            ),
            (
                Code::NotFound,
                "etcdserver: requested lease not found",
                ErrorKind::LeaseNotFound,
                false,
            ),
            (
                Code::OutOfRange,
                "etcdserver: mvcc: required revision has been compacted",
                ErrorKind::Compacted {
                    compact_revision: 0,
                },
                false,
            ),
            (
                Code::Unavailable,
                "etcdserver: leader changed",
                ErrorKind::Unavailable,
                true,
            ),
            (
                Code::Unavailable,
                "etcdserver: no leader",
                ErrorKind::Unavailable,
                true,
            ),
            (
                Code::Unknown,
                "transport is closing",
                ErrorKind::Unavailable,
                true,
            ),
            (
                Code::DeadlineExceeded,
                "context deadline exceeded",
                ErrorKind::Timeout,
                true,
            ),
            (
                Code::PermissionDenied,
                "etcdserver: permission denied",
                ErrorKind::PermissionDenied,
                false,
            ),
            (
                Code::Cancelled,
                "operation was canceled",
                ErrorKind::Unavailable,
                true,
            ),
            (Code::Internal, "boom", ErrorKind::Backend, false),
        ];
        for (code, msg, want, retry) in cases {
            assert_eq!(kind(code, msg), (want, retry), "{msg}");
        }
    }

    #[test]
    fn source_and_context_are_kept() {
        let e = map_error(
            "get",
            EtcdError::GRpcStatus(tonic::Status::unavailable("x")),
        );
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(e.context()[0], ("op", "get".to_owned()));
    }
}
