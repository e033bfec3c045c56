//! `RedisStore`: the public handle around the shared [`Core`], its constructors and
//! accessors, the background tasks it owns (lease sweeper, reconciler), and the `Store` impl,
//! whose every method is one call into an op file.

use crate::config::RedisConfig;
use crate::core::Core;
use crate::core::reconcile::ReconcileReport;
use keyplane_core::{
    Capabilities, DeleteResult, Entry, LeaseGrant, LeaseId, LeaseInfo, PutOptions, PutResult,
    RangeOptions, RangeResult, Result, Store, Txn, TxnResponse, WatchOptions, WatchStream,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// The keyplane-core [`Store`] on Redis, with native strings, sets, hashes and lists.
///
/// Every transaction is one Lua script; per-key revisions live in a metadata hash, an ordered
/// index serves ranges, a stream is the event log that watches read, and leases are a deadline
/// sorted set swept by a background task of every client. The layout is described in the
/// crate documentation.
pub struct RedisStore {
    core: Arc<Core>,
    sweeper: JoinHandle<()>,
    /// The background reconciler, when the configuration has roots.
    reconciler: Option<JoinHandle<()>>,
    /// This store's id in the reconciler's leader election.
    id: String,
}

impl RedisStore {
    /// Connects to the Redis server of `config` and starts the lease sweeper.
    ///
    /// # Errors
    /// `Config` for a bad configuration; `Unavailable`, `Timeout` or `Unauthorized` when the
    /// server cannot be reached or refuses the credentials.
    pub async fn connect(config: RedisConfig) -> Result<Self> {
        let core = Arc::new(Core::connect(config).await?);
        let sweeper = tokio::spawn(crate::lease::sweep_loop(
            Arc::downgrade(&core),
            core.sweeper_wake.clone(),
        ));
        let id = format!("{:016x}", rand_id());
        let reconciler = (!core.config.reconcile_roots.is_empty())
            .then(|| tokio::spawn(crate::reconciler::run(Arc::downgrade(&core), id.clone())));
        Ok(RedisStore {
            core,
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
        crate::core::reconcile::reconcile(&self.core, prefix).await
    }

    /// Connects to `url` (`redis://host:port/db`, `rediss://...`) with the default
    /// configuration.
    ///
    /// # Errors
    /// As [`RedisStore::connect`].
    pub async fn from_url(url: &str) -> Result<Self> {
        Self::connect(RedisConfig::new(url)).await
    }

    /// The configuration the store was connected with.
    pub fn config(&self) -> &RedisConfig {
        &self.core.config
    }
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        self.sweeper.abort();
        if let Some(reconciler) = self.reconciler.take() {
            reconciler.abort();
            // Hands the leader key over at once rather than after it expires.
            crate::reconciler::resign(&self.core, &self.id);
        }
    }
}

/// A random 64-bit id (the std hasher's random keys, no extra dependency).
fn rand_id() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

#[keyplane_core::async_trait]
impl Store for RedisStore {
    fn capabilities(&self) -> &Capabilities {
        &self.core.caps
    }

    async fn revision(&self) -> Result<i64> {
        crate::range::revision(&self.core).await
    }

    async fn range(&self, opts: RangeOptions) -> Result<RangeResult> {
        crate::range::range(&self.core, opts).await
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        crate::range::get(&self.core, key).await
    }

    async fn put(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<PutResult> {
        crate::txn::put(&self.core, key, value, opts).await
    }

    async fn delete(&self, key: &[u8]) -> Result<DeleteResult> {
        crate::txn::delete(&self.core, key).await
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        crate::txn::txn(&self.core, txn).await
    }

    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        crate::lease::grant(&self.core, ttl).await
    }

    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        crate::lease::keep_alive(&self.core, id).await
    }

    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        crate::lease::revoke(&self.core, id).await
    }

    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        crate::lease::time_to_live(&self.core, id).await
    }

    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        crate::watch::watch(&self.core, opts).await
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        crate::watch::compact(&self.core, revision).await
    }
}
