//! Store URLs: `mem://`, `sled://PATH`, `etcd://host:port[,host:port...]`,
//! `redis://host:port/db` and `rediss://...`, each opened as an `Arc<dyn Store>`.

use crate::error::{CliError, CliResult, code};
use keyplane::layer::{RetryLayer, StoreExt, TimeoutLayer, TracingLayer};
use keyplane::redis::RedisStore;
use keyplane::retry::Backoff;
use keyplane::{Backend, ErrorKind, OpenOptions, Store};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The deadline of each store operation (`--timeout`).
static DEADLINE: OnceLock<Duration> = OnceLock::new();

/// Sets the deadline of each store operation, once, before any store is opened.
pub(crate) fn set_deadline(deadline: Duration) {
    let _ = DEADLINE.set(deadline);
}

/// `store` as every command uses it: each operation traced (shown with `--trace`), bounded
/// by the `--timeout` deadline, and retried within it when the store is unreachable (reads,
/// and writes that never reached it; a write whose outcome is unknown is reported, not
/// repeated).
fn layered(store: Arc<dyn Store>) -> Arc<dyn Store> {
    let deadline = *DEADLINE.get_or_init(|| Duration::from_secs(30));
    let retry = Backoff::default()
        .initial(Duration::from_millis(20))
        .max_delay(Duration::from_millis(500))
        .deadline(Some(deadline));
    Arc::new(
        store
            .layer(TracingLayer)
            .layer(TimeoutLayer::new(deadline))
            .layer(RetryLayer::new(retry)),
    )
}

/// How long a network store may take to answer the first request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a command waits for a sled store that another process holds open.
///
/// sled lets one process at a time open a database (an exclusive lock on its directory).
/// kvctl shares the default store between terminals by holding it only while a command
/// works: `get`, `put` and the rest hold it for milliseconds, and `kvctl watch` opens it
/// for each poll and closes it between polls ([`SLED_POLL`]). A command that finds it held
/// tries again until this much time has passed.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(5);

/// How often `kvctl watch` on a sled store opens it and reads the events published since
/// the last poll; the store is closed in between, so other kvctl processes can write.
pub(crate) const SLED_POLL: Duration = Duration::from_millis(200);

/// Whether `url` names a sled store (shared between processes by short opens).
pub(crate) fn is_sled(url: &str) -> bool {
    url.starts_with("sled://")
}

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
    // The reconciler does not run on Redis Cluster.
    if let Some(redis) = redis.filter(|r| !r.config().is_cluster()) {
        redis.reconcile(prefix.as_bytes()).await?;
    }
    Ok(store)
}

/// The store of `url`, and the same store as a `RedisStore` when it is one.
pub(crate) async fn open_any(url: &str) -> CliResult<(Arc<dyn Store>, Option<Arc<RedisStore>>)> {
    let backend = open_backend(url).await?;
    let redis = match &backend {
        Backend::Redis(store) => Some(store.clone()),
        _ => None,
    };
    let store = layered(backend.into_store());
    // Both network clients may connect lazily: one request proves the store answers. A
    // store sharded into groups has no one revision: a read of one key proves it instead.
    let probe = async {
        if store.capabilities().sharding == keyplane_core::Sharding::Unsharded {
            store.revision().await.map(drop)
        } else {
            store.get(b"{kvctl}:probe").await.map(drop)
        }
    };
    within(url, probe).await?.map_err(|e| failed(url, &e))?;
    Ok((store, redis))
}

/// Opens the backend of `url`, waiting up to [`LOCK_WAIT`] for a sled store that another
/// process holds.
async fn open_backend(url: &str) -> CliResult<Backend> {
    let options = OpenOptions::default().connect_timeout(CONNECT_TIMEOUT);
    let started = Instant::now();
    // Short pauses: the holder is most often a kvctl command that is about to finish.
    let pauses = Backoff::requests()
        .initial(Duration::from_millis(5))
        .max_delay(Duration::from_millis(50));
    let mut attempt = 0;
    loop {
        match within(url, Backend::open_with(url, &options)).await? {
            Ok(backend) => return Ok(backend),
            Err(e) if e.kind() == ErrorKind::Config => {
                return Err(CliError::invalid(e.message().to_string()));
            }
            Err(e) if is_sled(url) && held_by_another_process(&e) => {
                if started.elapsed() >= LOCK_WAIT {
                    return Err(CliError::new(
                        code::UNREACHABLE,
                        format!(
                            "store {} is in use: another process has held it open for more \
                             than {} s. kvctl commands share a sled store by opening it only \
                             while they work (`kvctl watch` between polls too), so the holder is \
                             likely a program using SledStore, which keeps it for as long as it \
                             runs: stop it, or let that program and kvctl share the data through \
                             etcd or Redis (--store etcd://... or redis://...)",
                            keyplane_core::raw::redact_url(url),
                            LOCK_WAIT.as_secs()
                        ),
                    ));
                }
                tokio::time::sleep(pauses.delay(attempt)).await;
                attempt += 1;
            }
            Err(e) => return Err(failed(url, &e)),
        }
    }
}

/// Whether sled refused to open because another process holds the database's lock, or an
/// earlier open in this process is still closing.
fn held_by_another_process(e: &keyplane::Error) -> bool {
    e.kind() == ErrorKind::Unavailable
        && (e.message().contains("in use by another process")
            // This process's previous open, still closing: the watch task of a poll that
            // just ended (`kvctl watch`, `kvctl ui`) lets go of it within milliseconds.
            || e.message().contains("already open in this process"))
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

/// The error of a store that cannot be used from here; the URL is shown with its passwords
/// hidden.
fn unreachable(url: &str, why: &str, code: u8) -> CliError {
    // Anything but a configuration error means the store is not usable from here.
    let code = if code == code::INVALID {
        code
    } else {
        code::UNREACHABLE
    };
    CliError::new(
        code,
        format!(
            "store {} unreachable: {why}",
            keyplane_core::raw::redact_url(url)
        ),
    )
}

/// The kind and message of a connection error, without the client's nested details.
fn brief(e: &keyplane_core::Error) -> String {
    format!("{}: {}", e.kind(), e.message())
}
