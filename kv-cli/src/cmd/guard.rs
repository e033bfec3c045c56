//! Guarded writes, as etcdctl's `txn` and redis-cli's `SET NX` give them: `put --create`,
//! `put --if-mod-revision N`, `put --lease-ttl 30s` and `rm --if-mod-revision N`, each one
//! transaction whose compare decides, so a guard that does not hold writes nothing.

use crate::error::{CliError, CliResult, code};
use keyplane::{Compare, CompareOp, Entry, LeaseId, OpResult, PutOptions, Store, Txn, TxnOp};
use std::time::Duration;

/// The guard of a write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Guard {
    /// Unconditional.
    #[default]
    None,
    /// Only when the key does not exist.
    Create,
    /// Only when the key's mod revision is this (0: the key does not exist, as in etcd).
    ModRevision(i64),
}

impl Guard {
    /// The guard of the flags `--create` and `--if-mod-revision`.
    ///
    /// # Errors
    /// Exit code 2 for a negative revision.
    pub(crate) fn of(create: bool, if_mod_revision: Option<i64>) -> CliResult<Self> {
        match (create, if_mod_revision) {
            (true, _) => Ok(Guard::Create),
            (false, Some(n)) if n < 0 => Err(CliError::invalid(format!(
                "--if-mod-revision {n}: a revision is 0 (the key does not exist) or more"
            ))),
            (false, Some(n)) => Ok(Guard::ModRevision(n)),
            (false, None) => Ok(Guard::None),
        }
    }

    fn compares(self, key: &[u8]) -> Vec<Compare> {
        match self {
            Guard::None => Vec::new(),
            Guard::Create => vec![Compare::absent(key)],
            Guard::ModRevision(n) => vec![Compare::mod_revision(key, CompareOp::Equal, n)],
        }
    }

    /// The error of a guard that did not hold, given what the key holds now.
    fn failed(self, key: &[u8], now: Option<&Entry>) -> CliError {
        let key = crate::keys::text(key);
        let state = match now {
            Some(e) => format!("it exists, mod revision {}", e.mod_revision),
            None => "it does not exist".to_owned(),
        };
        let message = match self {
            Guard::Create => format!(
                "key \"{key}\" already exists (mod revision {}): nothing written; drop --create to overwrite it",
                now.map_or(0, |e| e.mod_revision)
            ),
            Guard::ModRevision(n) => format!(
                "key \"{key}\" is not at mod revision {n} ({state}): nothing written; read it again (`kvctl get`) and retry with its revision"
            ),
            Guard::None => format!("the write of \"{key}\" was not applied ({state})"),
        };
        CliError::new(code::CONFLICT, message)
    }
}

/// What a guarded put did.
pub(crate) struct Written {
    pub(crate) revision: i64,
    pub(crate) lease: Option<(LeaseId, Duration)>,
}

/// Puts `value` under `key` if `guard` holds, attached to a new lease of `lease_ttl` when
/// given (granted first, revoked again when the guard does not hold).
///
/// # Errors
/// Exit code 4 when the guard does not hold (nothing written); store errors.
pub(crate) async fn put<K: AsRef<[u8]> + ?Sized>(
    store: &dyn Store,
    key: &K,
    value: &[u8],
    guard: Guard,
    lease_ttl: Option<Duration>,
) -> CliResult<Written> {
    let key = key.as_ref();
    let lease = match lease_ttl {
        Some(ttl) => {
            let grant = store.lease_grant(ttl).await?;
            Some((grant.id, grant.ttl))
        }
        None => None,
    };
    if guard == Guard::None && lease.is_none() {
        let done = store.put(key, value, PutOptions::default()).await?;
        return Ok(Written {
            revision: done.revision,
            lease: None,
        });
    }
    let op = match lease {
        Some((id, _)) => TxnOp::put_with_lease(key, value, id),
        None => TxnOp::put(key, value),
    };
    let txn = Txn::new()
        .when(guard.compares(key))
        .and_then([op])
        .or_else([TxnOp::get(key)]);
    let response = match store.txn(txn).await {
        Ok(response) => response,
        Err(e) => {
            revoke(store, lease).await;
            return Err(e.into());
        }
    };
    if !response.succeeded {
        revoke(store, lease).await;
        return Err(guard.failed(key, current(&response.results)));
    }
    Ok(Written {
        revision: response.revision,
        lease,
    })
}

/// Puts `value` under `key` if `guard` holds, attached to the existing lease `id`
/// (`put --lease ID`); returns the write's revision.
///
/// # Errors
/// Exit code 1 when the lease does not exist, 4 when the guard does not hold (nothing
/// written either way); store errors.
pub(crate) async fn put_on_lease<K: AsRef<[u8]> + ?Sized>(
    store: &dyn Store,
    key: &K,
    value: &[u8],
    guard: Guard,
    id: LeaseId,
) -> CliResult<i64> {
    let key = key.as_ref();
    let txn = Txn::new()
        .when(guard.compares(key))
        .and_then([TxnOp::put_with_lease(key, value, id)])
        .or_else([TxnOp::get(key)]);
    let response = store.txn(txn).await.map_err(|e| {
        if e.kind() == keyplane::ErrorKind::LeaseNotFound {
            CliError::not_found(format!(
                "lease {id} not found (expired or revoked): nothing written"
            ))
        } else {
            e.into()
        }
    })?;
    if !response.succeeded {
        return Err(guard.failed(key, current(&response.results)));
    }
    Ok(response.revision)
}

/// Deletes `key` if `guard` holds; returns whether it existed.
///
/// # Errors
/// Exit code 4 when the guard does not hold (nothing deleted); store errors.
pub(crate) async fn delete<K: AsRef<[u8]> + ?Sized>(
    store: &dyn Store,
    key: &K,
    guard: Guard,
) -> CliResult<bool> {
    let key = key.as_ref();
    let txn = Txn::new()
        .when(guard.compares(key))
        .and_then([TxnOp::delete(key)])
        .or_else([TxnOp::get(key)]);
    let response = store.txn(txn).await?;
    if !response.succeeded {
        return Err(guard.failed(key, current(&response.results)));
    }
    match response.results.first() {
        Some(OpResult::Delete { deleted }) => Ok(*deleted > 0),
        other => Err(CliError::from(keyplane::Error::internal(format!(
            "a delete returned {other:?}"
        )))),
    }
}

/// The entry the failure branch read.
fn current(results: &[OpResult]) -> Option<&Entry> {
    match results.first() {
        Some(OpResult::Get(entry)) => entry.as_ref(),
        _ => None,
    }
}

async fn revoke(store: &dyn Store, lease: Option<(LeaseId, Duration)>) {
    if let Some((id, _)) = lease
        && let Err(e) = store.lease_revoke(id).await
    {
        eprintln!("kvctl: the lease {id} granted for the write could not be revoked: {e}");
    }
}

/// Parses a duration: a number with a unit, `ms`, `s`, `m` or `h` (`30s`, `1m`, `500ms`);
/// a bare number is seconds.
///
/// # Errors
/// A message for clap.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 30s, 1m or 500ms"))?;
    let duration = match unit {
        "ms" => Duration::from_millis(n),
        "" | "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?}: use ms, s, m or h"
            ));
        }
    };
    if duration.is_zero() {
        return Err("a lease TTL must be more than zero".into());
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("3d").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn guards() {
        assert_eq!(Guard::of(true, None).unwrap(), Guard::Create);
        assert_eq!(Guard::of(false, Some(0)).unwrap(), Guard::ModRevision(0));
        assert!(Guard::of(false, Some(-1)).is_err());
        assert_eq!(Guard::of(false, None).unwrap(), Guard::None);
    }
}
