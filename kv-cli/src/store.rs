//! Store URLs: `mem://`, `sled://PATH`, `etcd://host:port[,host:port...]`,
//! `redis://host:port/db` and `rediss://...`, each opened as an `Arc<dyn Store>`.

use crate::error::{CliError, CliResult, code};
use keyplane::redis::RedisStore;
use keyplane::{Backend, ErrorKind, OpenOptions, Store};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long a network store may take to answer the first request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// The default store: a sled database in the user's data directory
/// (`$XDG_DATA_HOME/kvctl`, else `~/.local/share/kvctl`).
pub(crate) fn default_url() -> CliResult<String> {
    let base = match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home).join(".local").join("share"),
            None => {
                return Err(CliError::invalid(
                    "no default store: neither XDG_DATA_HOME nor HOME is set; pass --store",
                ));
            }
        },
    };
    Ok(format!("sled://{}", base.join("kvctl").display()))
}

/// Opens the store of `url` and checks that it answers.
///
/// # Errors
/// Exit code 2 for a URL of no known form, 3 when the store cannot be reached within
/// [`CONNECT_TIMEOUT`].
pub(crate) async fn open(url: &str) -> CliResult<Arc<dyn Store>> {
    Ok(open_any(url).await?.0)
}

/// Opens the store of `url` for a listing of `prefix`. On Redis, keys that other programs
/// wrote reach ranges once reconciled: the prefix is reconciled first (a `SCAN` of the
/// database), so the listing shows them.
///
/// # Errors
/// As [`open`]; backend errors of the reconcile.
pub(crate) async fn open_for_listing(url: &str, prefix: &str) -> CliResult<Arc<dyn Store>> {
    let (store, redis) = open_any(url).await?;
    if let Some(redis) = redis {
        redis.reconcile(prefix.as_bytes()).await?;
    }
    Ok(store)
}

/// The store of `url`, and the same store as a `RedisStore` when it is one.
async fn open_any(url: &str) -> CliResult<(Arc<dyn Store>, Option<Arc<RedisStore>>)> {
    let options = OpenOptions::default().connect_timeout(CONNECT_TIMEOUT);
    let backend = within(url, Backend::open_with(url, &options))
        .await?
        .map_err(|e| {
            if e.kind() == ErrorKind::Config {
                CliError::invalid(e.message().to_string())
            } else {
                failed(url, &e)
            }
        })?;
    let redis = match &backend {
        Backend::Redis(store) => Some(store.clone()),
        _ => None,
    };
    let store = backend.into_store();
    // Both network clients may connect lazily: one request proves the store answers.
    within(url, store.revision())
        .await?
        .map_err(|e| failed(url, &e))?;
    Ok((store, redis))
}

/// Runs `work` for at most twice [`CONNECT_TIMEOUT`].
///
/// # Errors
/// Exit code 3 when it takes longer.
async fn within<T>(url: &str, work: impl Future<Output = T>) -> CliResult<T> {
    tokio::time::timeout(CONNECT_TIMEOUT * 2, work)
        .await
        .map_err(|_| unreachable(url, "no answer in time", code::UNREACHABLE))
}

/// The error of a store that answered with `e` while being opened.
fn failed(url: &str, e: &keyplane::Error) -> CliError {
    unreachable(url, &brief(e), crate::error::exit_code(&e.kind()))
}

fn unreachable(url: &str, why: &str, code: u8) -> CliError {
    // Anything but a configuration error means the store is not usable from here.
    let code = if code == code::INVALID {
        code
    } else {
        code::UNREACHABLE
    };
    CliError::new(code, format!("store {url} unreachable: {why}"))
}

/// The kind and message of a connection error, without the client's nested details.
fn brief(e: &keyplane_core::Error) -> String {
    format!("{}: {}", e.kind(), e.message())
}
