//! Store URLs: `mem://`, `sled://PATH`, `etcd://host:port[,host:port...]`,
//! `redis://host:port/db` and `rediss://...`, each opened as an `Arc<dyn Store>`.

use crate::error::{CliError, CliResult, code};
use keyplane::layer::{Call, Interceptor};
use keyplane::layer::{FaultLayer, RetryLayer, StoreExt, TimeoutLayer, TracingLayer};
use keyplane::redis::RedisStore;
use keyplane::retry::Backoff;
use keyplane::{Backend, ErrorKind, OpenOptions, Store};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

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

/// How long a network store may take to answer the first request, unless
/// `--connect-timeout` (or the URL's `connect_timeout=`) says otherwise.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How the store a command names is reached beyond its URL, set by
/// [`crate::connect`] once it has chosen the store.
#[derive(Clone)]
pub(crate) struct Session {
    /// The store's URL as commands see and show it: without the password.
    pub(crate) url: String,
    /// The user (`--user`) whose password is added to the URL when the store is opened:
    /// only then, so that commands that never open it never ask for it, and so that no
    /// message or page built from the URL can show it.
    pub(crate) user: Option<String>,
    /// Whether the store is the local default, not named by `--store`, `KVCTL_STORE` or the
    /// config file: writes to it are reported ([`implicit_writes`]).
    pub(crate) implicit: bool,
    /// How long connecting may take.
    pub(crate) connect_timeout: Duration,
}

/// The session of this run.
static SESSION: RwLock<Option<Session>> = RwLock::new(None);

/// The password of the session's user, once asked for.
static PASSWORD: RwLock<Option<String>> = RwLock::new(None);

/// Whether a write reached the session's store while it is the implicit one.
static WROTE: AtomicBool = AtomicBool::new(false);

/// Makes `session` the one every store opened from its URL uses.
pub(crate) fn set_session(session: Session) {
    WROTE.store(false, Ordering::SeqCst);
    *SESSION.write().unwrap_or_else(|e| e.into_inner()) = Some(session);
}

/// The session when `url` is its store's URL.
fn session_of(url: &str) -> Option<Session> {
    SESSION
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .filter(|s| s.url == url)
}

/// The connect timeout of the store of `url`: the session's for its store, else the URL's
/// own `connect_timeout=`, else [`CONNECT_TIMEOUT`].
fn connect_timeout(url: &str) -> Duration {
    session_of(url)
        .map(|s| s.connect_timeout)
        .or_else(|| url_connect_timeout(url))
        .unwrap_or(CONNECT_TIMEOUT)
}

/// The `connect_timeout=` of `url`, when it has a valid one.
pub(crate) fn url_connect_timeout(url: &str) -> Option<Duration> {
    let value = crate::params::value(url, "connect_timeout")?;
    crate::params::parse_duration(value).ok()
}

/// The implicit store's URL, when this run wrote to it: for the notice that says where the
/// writes went.
pub(crate) fn implicit_writes() -> Option<String> {
    let session = SESSION.read().unwrap_or_else(|e| e.into_inner()).clone()?;
    (session.implicit && WROTE.load(Ordering::SeqCst)).then_some(session.url)
}

/// Marks [`WROTE`] when a write reaches the store it watches.
struct WriteNotice;

#[keyplane::raw::async_trait]
impl Interceptor for WriteNotice {
    async fn after(&self, call: Call, succeeded: bool) -> keyplane::Result<()> {
        if call.is_write() && succeeded {
            WROTE.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// `url` as the store is opened with: the session's password added for its user.
///
/// # Errors
/// Exit code 2 when there is no password to be had (see [`crate::password::ask`]).
fn with_password(url: &str) -> CliResult<String> {
    let Some(user) = session_of(url).and_then(|s| s.user) else {
        return Ok(url.to_owned());
    };
    let known = PASSWORD.read().unwrap_or_else(|e| e.into_inner()).clone();
    let password = match known {
        Some(password) => password,
        None => {
            let password = crate::password::ask(&user)?;
            *PASSWORD.write().unwrap_or_else(|e| e.into_inner()) = Some(password.clone());
            password
        }
    };
    let mut full = url.to_owned();
    crate::params::append(&mut full, "password", &password, "KVCTL_PASSWORD")?;
    Ok(full)
}

/// `message` with the session's password, as typed and as escaped in a URL, hidden: a
/// backend's message may quote the URL it was given.
fn scrub(message: &str) -> String {
    let Some(password) = PASSWORD
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .filter(|p| !p.is_empty())
    else {
        return message.to_owned();
    };
    message
        .replace(&password, "***")
        .replace(&crate::params::escape(&password), "***")
}

/// How long a command waits for an embedded store that another process holds open.
///
/// redb and sled let one process at a time open a database (an exclusive lock on its file or
/// directory). kvctl shares the default store between terminals by holding it only while a
/// command works: `get`, `put` and the rest hold it for milliseconds, and `kvctl watch` opens
/// it for each poll and closes it between polls ([`EMBEDDED_POLL`]). A command that finds it
/// held tries again until this much time has passed.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(5);

/// How often `kvctl watch` on an embedded store opens it and reads the events published
/// since the last poll; the store is closed in between, so other kvctl processes can write.
pub(crate) const EMBEDDED_POLL: Duration = Duration::from_millis(200);

/// Whether `url` names an embedded store, redb or sled (shared between processes by short
/// opens).
pub(crate) fn is_embedded(url: &str) -> bool {
    url.starts_with("redb://") || url.starts_with("sled://")
}

/// The user's data directory for kvctl: `$XDG_DATA_HOME/kvctl`, else
/// `~/.local/share/kvctl`.
fn data_dir() -> CliResult<PathBuf> {
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
    Ok(base.join("kvctl"))
}

/// The default store: a redb database file in the user's data directory
/// (`$XDG_DATA_HOME/kvctl/store.redb`, else `~/.local/share/kvctl/store.redb`).
pub(crate) fn default_url() -> CliResult<String> {
    Ok(format!(
        "redb://{}",
        data_dir()?.join(DEFAULT_FILE).display()
    ))
}

/// The default store's file name in the data directory.
const DEFAULT_FILE: &str = "store.redb";

/// Refuses the command's store when it is the implicit default and does not exist yet but the
/// sled store of earlier kvctl versions does, at the data directory itself: opening would
/// create an empty store and hide the user's keys. The message says how to move them
/// (`kvctl copy`, which names its stores and so is never refused), or how to start afresh.
///
/// # Errors
/// Exit code 2 in that case.
pub(crate) fn refuse_default_over_old_sled(url: &str) -> CliResult<()> {
    if !session_of(url).is_some_and(|s| s.implicit) {
        return Ok(());
    }
    let Ok(dir) = data_dir() else {
        return Ok(());
    };
    let file = dir.join(DEFAULT_FILE);
    if url != format!("redb://{}", file.display()) || file.exists() {
        return Ok(());
    }
    // What a sled database directory holds: its `conf` and its `db` file.
    if !(dir.join("conf").is_file() && dir.join("db").is_file()) {
        return Ok(());
    }
    let dir = dir.display();
    let file = file.display();
    Err(CliError::invalid(format!(
        "the default store is now a redb file, {file}, which does not exist yet, and {dir} \
         holds a sled store, the default of earlier kvctl versions. Move its keys with \
         `kvctl copy --leases --from sled://{dir} --to redb://{file}` and go on with the \
         default, or keep using it with `--store sled://{dir}`; to start afresh instead, \
         move the sled files (conf, db, blobs, snap.*) out of {dir}"
    )))
}

/// Opens the store of `url` and checks that it answers.
///
/// # Errors
/// Exit code 2 for a URL of no known form, 3 when the store cannot be reached within
/// its connect timeout ([`CONNECT_TIMEOUT`] unless told otherwise).
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
    let mut store = backend.into_store();
    if session_of(url).is_some_and(|s| s.implicit) {
        // The core's hook around each call, with no fault rule: it only sees the writes.
        store = Arc::new(store.layer(FaultLayer::new(0).intercept(WriteNotice)));
    }
    let store = layered(store);
    // Both network clients may connect lazily: one request proves the store answers. A
    // store sharded into groups has no one revision: a read of one key proves it instead.
    let probe = async {
        if store.capabilities().sharding == keyplane::Sharding::Unsharded {
            store.revision().await.map(drop)
        } else {
            store.get(b"{kvctl}:probe").await.map(drop)
        }
    };
    within(url, probe).await?.map_err(|e| failed(url, &e))?;
    Ok((store, redis))
}

/// Opens the backend of `url`, waiting up to [`LOCK_WAIT`] for an embedded store that
/// another process holds.
async fn open_backend(url: &str) -> CliResult<Backend> {
    let options = OpenOptions::default().connect_timeout(connect_timeout(url));
    let full = with_password(url)?;
    // Short pauses: the holder is most often a kvctl command that is about to finish.
    let pauses = Backoff::requests()
        .initial(Duration::from_millis(5))
        .max_delay(Duration::from_millis(50))
        .deadline(Some(LOCK_WAIT));
    let mut attempts = pauses.start();
    loop {
        match within(url, Backend::open_with(&full, &options)).await? {
            Ok(backend) => return Ok(backend),
            Err(e) if e.kind() == ErrorKind::Config => {
                return Err(CliError::invalid(scrub(e.message())));
            }
            Err(e) if is_embedded(url) && held_by_another_process(&e) => {
                if !attempts.wait().await {
                    return Err(CliError::new(
                        code::UNREACHABLE,
                        format!(
                            "store {} is in use: another process has held it open for more \
                             than {} s. kvctl commands share an embedded store by opening it \
                             only while they work (`kvctl watch` between polls too), so the \
                             holder is likely a program using RedbStore or SledStore, which \
                             keeps it for as long as it runs: stop it, or let that program and kvctl share the data through \
                             etcd or Redis (--store etcd://... or redis://...)",
                            keyplane::raw::redact_url(url),
                            LOCK_WAIT.as_secs()
                        ),
                    ));
                }
            }
            Err(e) => return Err(failed(url, &e)),
        }
    }
}

/// Whether redb or sled refused to open because another process holds the database's lock,
/// or an earlier open in this process is still closing.
fn held_by_another_process(e: &keyplane::Error) -> bool {
    e.kind() == ErrorKind::Unavailable
        && (e.message().contains("in use by another process")
            // redb: the file's lock, held by another process or another store of this one.
            || e.message().contains("in use by another store")
            // This process's previous open, still closing: the watch task of a poll that
            // just ended (`kvctl watch`, `kvctl ui`) lets go of it within milliseconds.
            || e.message().contains("already open in this process"))
}

/// Runs `work` for at most twice the connect timeout of `url`.
///
/// # Errors
/// Exit code 3 when it takes longer.
async fn within<T>(url: &str, work: impl Future<Output = T>) -> CliResult<T> {
    tokio::time::timeout(connect_timeout(url) * 2, work)
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
            keyplane::raw::redact_url(url)
        ),
    )
}

/// The kind and message of a connection error, without the client's nested details.
fn brief(e: &keyplane::Error) -> String {
    scrub(&format!("{}: {}", e.kind(), e.message()))
}
