//! `RedisStore`: the connection, the layout under the internal prefix, and the `Store` impl.

use crate::config::RedisConfig;
use crate::decode::{array, corrupted, int};
use crate::error::map_redis_error;
use crate::reconcile::ReconcileReport;
use crate::scripts::Scripts;
use kv_core::{
    Capabilities, Entry, Error, ForeignWrites, KeyRange, LeaseGrant, LeaseId, LeaseInfo,
    PutOptions, PutResult, RangeOptions, RangeResult, Result, Retention, Store, Support, Txn,
    TxnResponse, WatchOptions, WatchStream,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, Script, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The largest value the store accepts (Redis takes up to 512 MiB; larger values would stall
/// the single-threaded server inside a script).
const MAX_VALUE_BYTES: usize = 16 << 20;

/// The kv-core [`Store`] on Redis, with native strings, sets, hashes and lists.
///
/// Every transaction is one Lua script; per-key revisions live in a metadata hash, an ordered
/// index serves ranges, a stream is the event log that watches read, and leases are a deadline
/// sorted set swept by a background task of every client. The layout is described in the
/// crate documentation.
pub struct RedisStore {
    inner: Arc<Inner>,
    sweeper: JoinHandle<()>,
    /// The background reconciler, when the configuration has roots.
    reconciler: Option<JoinHandle<()>>,
    /// This store's id in the reconciler's leader election.
    id: String,
}

/// What the store's operations and its background tasks share.
pub(crate) struct Inner {
    pub(crate) con: ConnectionManager,
    pub(crate) client: redis::Client,
    pub(crate) config: RedisConfig,
    pub(crate) caps: Capabilities,
    pub(crate) scripts: Scripts,
    pub(crate) prefix: Vec<u8>,
    /// The metadata hash, `prefix` + `meta`, read directly by `get`.
    pub(crate) meta_key: Vec<u8>,
    /// Wakes the lease sweeper when a lease is granted.
    pub(crate) sweeper_wake: Arc<Notify>,
    /// The database index, which keyspace notification channels name.
    pub(crate) db: i64,
}

impl RedisStore {
    /// Connects to the Redis server of `config` and starts the lease sweeper.
    ///
    /// # Errors
    /// `Config` for a bad configuration; `Unavailable`, `Timeout` or `Unauthorized` when the
    /// server cannot be reached or refuses the credentials.
    pub async fn connect(config: RedisConfig) -> Result<Self> {
        let info = config.connection_info()?;
        let db = info.redis_settings().db();
        let client = redis::Client::open(info).map_err(|e| map_redis_error(e, "connect"))?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout()))
            .set_response_timeout(Some(config.response_timeout()))
            .set_number_of_retries(3);
        let con = client
            .get_connection_manager_with_config(manager_config)
            .await
            .map_err(|e| map_redis_error(e, "connect"))?;
        let caps = Capabilities {
            backend: "redis",
            max_txn_ops: config.max_txn_ops,
            max_value_bytes: MAX_VALUE_BYTES,
            ttl_granularity: Duration::from_millis(1),
            watch_retention: Retention::Revisions(config.watch_retention),
            txn: Support::Native,
            leases: Support::Emulated,
            watch: Support::Emulated,
            collections: Support::Native,
            persistent: config.persistent,
            foreign_writes: ForeignWrites::Reconciled {
                interval: config.reconcile_interval(),
            },
        };
        let inner = Arc::new(Inner {
            con,
            client,
            prefix: config.internal_prefix.as_bytes().to_vec(),
            meta_key: [config.internal_prefix.as_bytes(), b"meta"].concat(),
            config,
            caps,
            scripts: Scripts::new(),
            sweeper_wake: Arc::new(Notify::new()),
            db,
        });
        let sweeper = tokio::spawn(crate::lease::sweep_loop(
            Arc::downgrade(&inner),
            inner.sweeper_wake.clone(),
        ));
        let id = format!("{:016x}", rand_id());
        let reconciler = (!inner.config.reconcile_roots.is_empty())
            .then(|| tokio::spawn(crate::reconciler::run(Arc::downgrade(&inner), id.clone())));
        Ok(RedisStore {
            inner,
            sweeper,
            reconciler,
            id,
        })
    }

    /// Brings what other programs wrote, changed or deleted under `prefix` into the store's
    /// index and event log now, as the background reconciler does for its roots: strings
    /// written without the store are adopted (a put event each), tracked strings that
    /// another program overwrote get a put event with the next version, tracked strings
    /// that it deleted get a delete event, and foreign collections are tracked so that
    /// prefix deletes find them. All changes found in one batch of keys are one revision;
    /// keys that already match the store's metadata produce no event, so running it twice,
    /// or beside the background reconciler, repeats nothing.
    ///
    /// It `SCAN`s the whole database with a `MATCH` on the prefix (`reconcile_scan_count`
    /// keys per step), then checks the keys the store tracks under the prefix: its cost
    /// grows with the database, not with the prefix. An empty prefix covers every key
    /// outside the internal prefix.
    ///
    /// # Errors
    /// `InvalidKey` for a prefix under the internal prefix; backend errors (what was
    /// reconciled before the error stays reconciled).
    pub async fn reconcile(&self, prefix: &[u8]) -> Result<ReconcileReport> {
        self.inner.check_key(prefix)?;
        crate::reconcile::reconcile_prefix(&self.inner, prefix).await
    }

    /// Connects to `url` with the default configuration.
    ///
    /// # Errors
    /// As [`RedisStore::connect`].
    pub async fn open(url: &str) -> Result<Self> {
        Self::connect(RedisConfig::new(url)).await
    }

    /// The configuration the store was connected with.
    pub fn config(&self) -> &RedisConfig {
        &self.inner.config
    }
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        self.sweeper.abort();
        if let Some(reconciler) = self.reconciler.take() {
            reconciler.abort();
            // Hands the leader key over at once rather than after it expires.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                let script = self.inner.scripts.resign.clone();
                let (key, id) = (self.inner.internal("reconciler"), self.id.clone());
                let mut con = self.inner.con.clone();
                runtime.spawn(async move {
                    let _: redis::RedisResult<i64> =
                        script.key(key).arg(id).invoke_async(&mut con).await;
                });
            }
        }
    }
}

/// A random 64-bit id (the std hasher's random keys, no extra dependency).
fn rand_id() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// The event log's state when a watch or a pinned read starts.
pub(crate) struct LogStart {
    /// The store revision.
    pub(crate) current: i64,
    /// The first revision the log still holds (0 when it is empty).
    pub(crate) first: i64,
    /// The compaction floor (0 when never compacted).
    pub(crate) compacted: i64,
    /// The log entries read, from the revision asked for on.
    pub(crate) entries: Vec<Value>,
}

impl Inner {
    /// The name of an internal key: the prefix and `name`.
    pub(crate) fn internal(&self, name: &str) -> Vec<u8> {
        let mut key = self.prefix.clone();
        key.extend_from_slice(name.as_bytes());
        key
    }

    /// Whether a reconciler root covers `key` (never one under the internal prefix).
    pub(crate) fn in_roots(&self, key: &[u8]) -> bool {
        !key.starts_with(&self.prefix)
            && self
                .config
                .reconcile_roots
                .iter()
                .any(|root| key.starts_with(root.as_bytes()))
    }

    /// Rejects user keys under the internal prefix.
    pub(crate) fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.starts_with(&self.prefix) {
            return Err(
                Error::invalid_key("keys under the store's internal prefix are reserved")
                    .with_context("key", kv_core::escape_bytes(key))
                    .with_context("prefix", kv_core::escape_bytes(&self.prefix)),
            );
        }
        Ok(())
    }

    /// Rejects a single-key range under the internal prefix (prefixes and intervals only ever
    /// see user keys, since the index holds nothing else).
    pub(crate) fn check_range(&self, range: &KeyRange) -> Result<()> {
        range.validate()?;
        match range {
            KeyRange::Key(key) => self.check_key(key),
            _ => Ok(()),
        }
    }

    /// Runs a script with the prefix as its first argument, then `args`.
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        script: &Script,
        args: &[&[u8]],
        op: &'static str,
    ) -> Result<T> {
        let mut invocation = script.prepare_invoke();
        invocation.arg(self.prefix.as_slice());
        for arg in args {
            invocation.arg(*arg);
        }
        let mut con = self.con.clone();
        invocation
            .invoke_async(&mut con)
            .await
            .map_err(|e| map_redis_error(e, op))
    }

    /// Runs a writing script: the prefix, the log retention, then `args`.
    pub(crate) async fn run_write<T: FromRedisValue>(
        &self,
        script: &Script,
        args: &[&[u8]],
        op: &'static str,
    ) -> Result<T> {
        let retention = self.config.watch_retention.to_string();
        let mut all: Vec<&[u8]> = Vec::with_capacity(args.len() + 1);
        all.push(retention.as_bytes());
        all.extend_from_slice(args);
        self.run(script, &all, op).await
    }

    /// Where the event log stands, read atomically with its entries from revision `from` on
    /// (at most `count`): see `scripts/watch_from.lua`.
    pub(crate) async fn log_start(
        &self,
        from: i64,
        count: usize,
        op: &'static str,
    ) -> Result<LogStart> {
        let (from, count) = (from.to_string(), count.to_string());
        let reply: Value = self
            .run(
                &self.scripts.watch_from,
                &[from.as_bytes(), count.as_bytes()],
                op,
            )
            .await?;
        let mut parts = array(reply)?.into_iter();
        let (Some(current), Some(first), Some(compacted), Some(entries)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(corrupted("a watch start reply has four parts"));
        };
        Ok(LogStart {
            current: int(current)?,
            first: int(first)?,
            compacted: int(compacted)?,
            entries: array(entries)?,
        })
    }

    pub(crate) async fn revision(&self) -> Result<i64> {
        let mut con = self.con.clone();
        let rev: Option<i64> = redis::cmd("GET")
            .arg(self.internal("rev"))
            .query_async(&mut con)
            .await
            .map_err(|e| map_redis_error(e, "revision"))?;
        Ok(rev.unwrap_or(0))
    }
}

#[kv_core::async_trait]
impl Store for RedisStore {
    fn capabilities(&self) -> &Capabilities {
        &self.inner.caps
    }

    async fn revision(&self) -> Result<i64> {
        self.inner.revision().await
    }

    async fn range(&self, opts: RangeOptions) -> Result<RangeResult> {
        crate::range::range(&self.inner, opts).await
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        crate::point::get(&self.inner, key).await
    }

    async fn put(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<PutResult> {
        crate::point::put(&self.inner, key, value, opts).await
    }

    async fn delete(&self, key: &[u8]) -> Result<Option<Entry>> {
        crate::point::delete(&self.inner, key).await
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        crate::txn::txn(&self.inner, txn).await
    }

    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        crate::lease::grant(&self.inner, ttl).await
    }

    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        crate::lease::keep_alive(&self.inner, id).await
    }

    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        crate::lease::revoke(&self.inner, id).await
    }

    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        crate::lease::time_to_live(&self.inner, id).await
    }

    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        crate::watch::watch(&self.inner, opts).await
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        let revision = revision.to_string();
        let _: i64 = self
            .inner
            .run_write(
                &self.inner.scripts.compact,
                &[revision.as_bytes()],
                "compact",
            )
            .await?;
        Ok(())
    }
}
