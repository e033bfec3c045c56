//! The one mapping of redis-rs errors into [`keyplane_contract::Error`].

use keyplane_contract::{Error, ErrorKind};
use redis::{RedisError, ServerErrorKind};

/// Maps a redis-rs error (including the typed error replies of this crate's scripts, whose
/// codes start with `KV`) into a [`keyplane_contract::Error`] with the error as its source.
pub(crate) fn map_error(op: &'static str, err: RedisError) -> Error {
    let mut code = err.code().map(str::to_owned);
    let mut detail = err.detail().unwrap_or_default().to_owned();
    // A MULTI/EXEC aborted by a refused command: the refusal is the error.
    if err.kind() == redis::ErrorKind::Server(ServerErrorKind::ExecAbort)
        && let Some(errors) = err.clone().into_server_errors()
        && let Some((_, refused)) = errors
            .iter()
            .find(|(_, e)| e.kind() == Some(ServerErrorKind::NoPerm))
    {
        code = Some("NOPERM".to_owned());
        detail = refused.details().unwrap_or_default().to_owned();
    }
    let (kind, message) = match code.as_deref() {
        Some("KVWRONGTYPE") => (
            ErrorKind::WrongType,
            format!("transaction op {detail}, another type than the op expects"),
        ),
        Some("WRONGTYPE") => (ErrorKind::WrongType, detail),
        Some("NOPERM") => (
            ErrorKind::PermissionDenied,
            format!("Redis refused the ACL user: {detail}"),
        ),
        Some("KVLEASE") => (ErrorKind::LeaseNotFound, detail),
        Some("KVINVALID") => (ErrorKind::InvalidArgument, detail),
        Some("KVTOOLARGE") => (
            ErrorKind::TxnTooLarge,
            format!(
                "transaction op {detail} (RedisConfig::max_prefix_delete_keys); nothing was \
                 deleted: delete_prefix_in_batches removes a larger prefix in atomic batches"
            ),
        ),
        Some("KVCOMPACTED") => {
            let compact_revision = detail.trim().parse().unwrap_or(0);
            return Error::compacted(compact_revision).with_context("op", op);
        }
        // A command or key inside a script that the ACL user may not use: Redis 7.0 says the
        // user "can't" access or run it, later versions "ACL failure in script" (as
        // `acl_refusal` in `scripts/lib.lua` reads them).
        _ if script_acl_refusal(&err.to_string()) => (
            ErrorKind::PermissionDenied,
            format!("Redis refused the ACL user: {err}"),
        ),
        _ => classify(&err),
    };
    // A refused connection carried no request; every other failure may have.
    let unapplied = err.is_connection_refusal();
    Error::new(kind, message)
        .set_unapplied(unapplied)
        .with_context("op", op)
        .with_source(err)
}

/// Whether `text` is the error of a command a script ran that the ACL user may not run.
fn script_acl_refusal(text: &str) -> bool {
    text.contains("user executing the script can't") || text.contains("ACL failure in script")
}

fn classify(err: &RedisError) -> (ErrorKind, String) {
    let kind = if err.is_timeout() {
        ErrorKind::Timeout
    } else if err.is_io_error() || err.is_connection_dropped() || err.is_connection_refusal() {
        ErrorKind::Unavailable
    } else {
        match err.kind() {
            redis::ErrorKind::AuthenticationFailed => ErrorKind::Unauthorized,
            redis::ErrorKind::InvalidClientConfig => ErrorKind::Config,
            // No connection to a node (a cluster whose connections an operator killed, a
            // sentinel that does not know the master yet): the client reconnects, and the
            // command runs again once it has.
            redis::ErrorKind::ClusterConnectionNotFound
            | redis::ErrorKind::MasterNameNotFoundBySentinel
            | redis::ErrorKind::NoValidReplicasFoundBySentinel => ErrorKind::Unavailable,
            // A cluster request whose connection went away before its answer came back.
            redis::ErrorKind::Client
                if err
                    .to_string()
                    .contains("wasn't handled due to internal failure") =>
            {
                ErrorKind::Unavailable
            }
            // A slot that moved (a failover, a resharding) past the client's redirections:
            // the command was not run, and runs once the client knows the new slot map.
            redis::ErrorKind::Server(
                ServerErrorKind::BusyLoading
                | ServerErrorKind::Moved
                | ServerErrorKind::Ask
                | ServerErrorKind::TryAgain
                | ServerErrorKind::MasterDown
                | ServerErrorKind::ReadOnly
                | ServerErrorKind::ClusterDown,
            ) => ErrorKind::Unavailable,
            redis::ErrorKind::Server(ServerErrorKind::NoPerm) => ErrorKind::PermissionDenied,
            _ => ErrorKind::Backend,
        }
    };
    let message = match kind {
        ErrorKind::Unavailable => "Redis is unreachable",
        ErrorKind::Timeout => "Redis did not answer in time",
        ErrorKind::Unauthorized => "Redis refused the credentials",
        ErrorKind::PermissionDenied => "Redis refused the ACL user this command or key",
        ErrorKind::Config => "the Redis client configuration is invalid",
        _ => "Redis failed",
    };
    (kind, message.to_owned())
}

/// Connection failures of a watch are retried; a restarting server answers LOADING, which is
/// retried too.
pub(crate) fn unavailable(err: Error) -> Error {
    match err.kind() {
        ErrorKind::Unavailable | ErrorKind::Timeout => err.set_retryable(true),
        _ => err,
    }
}

#[cfg(test)]
mod tests {
    use super::map_error;
    use keyplane_contract::ErrorKind;

    /// The error a server reply `resp` (RESP bytes) becomes.
    fn reply_error(resp: &[u8]) -> keyplane_contract::Error {
        let redis::Value::ServerError(e) = redis::parse_redis_value(resp).unwrap() else {
            panic!("not an error reply");
        };
        map_error("watch", e.into())
    }

    #[test]
    fn a_moved_slot_is_unavailable_and_retryable() {
        for resp in [
            &b"-MOVED 352 127.0.0.1:7000\r\n"[..],
            b"-ASK 352 127.0.0.1:7000\r\n",
            b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
        ] {
            let err = reply_error(resp);
            assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
            assert!(err.is_retryable());
        }
        assert_eq!(
            reply_error(b"-ERR syntax error\r\n").kind(),
            ErrorKind::Backend
        );
    }

    #[test]
    fn a_script_command_the_acl_refuses_is_permission_denied() {
        for resp in [
            &b"-ERR The user executing the script can't access at least one of the keys \
               mentioned in the command arguments script: kp_put, on @user_function:1.\r\n"[..],
            b"-ERR ACL failure in script: No permissions to access a key script: kp_put, on \
              @user_function:1.\r\n",
        ] {
            let err = reply_error(resp);
            assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err:?}");
        }
    }

    #[test]
    fn a_lost_node_connection_is_unavailable_and_retryable() {
        for err in [
            redis::RedisError::from((
                redis::ErrorKind::ClusterConnectionNotFound,
                "No connections found",
            )),
            redis::RedisError::from((
                redis::ErrorKind::MasterNameNotFoundBySentinel,
                "Master with given name not found in sentinel",
            )),
            redis::RedisError::from((
                redis::ErrorKind::Client,
                "request wasn't handled due to internal failure",
            )),
        ] {
            let err = map_error("put", err);
            assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
            assert!(err.is_retryable());
        }
        let other = map_error(
            "put",
            redis::RedisError::from((redis::ErrorKind::Client, "Missing slot coverage x")),
        );
        assert_eq!(other.kind(), ErrorKind::Backend);
    }
}
