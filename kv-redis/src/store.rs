//! `RedisStore`: the public handle around the shared [`Core`], its constructors and
//! accessors, the background tasks it owns (lease sweeper, reconciler), and the `Store` impl,
//! whose every method is one call into an op file.

use crate::cluster::Groups;
use crate::config::RedisConfig;
use crate::core::Core;
use crate::core::reconcile::ReconcileReport;
use keyplane_core::raw::escape_bytes;
use keyplane_core::{
    Capabilities, DeleteResult, Entry, Error, ErrorKind, KeyRange, LeaseGrant, LeaseId, LeaseInfo,
    PutOptions, PutResult, RangeOptions, RangeResult, Result, Store, Txn, TxnResponse,
    WatchOptions, WatchStream,
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
    /// The store's core: on one server, the only one; on a cluster, the one the groups'
    /// cores are made from.
    core: Arc<Core>,
    /// On a cluster, the co-location groups.
    groups: Option<Arc<Groups>>,
    /// The hash tag of the one group a store from [`RedisStore::group`] serves (its `core`
    /// is that group's).
    bound: Option<Vec<u8>>,
    /// The lease sweeper, on a store that offers leases (not the cluster's store, whose
    /// groups' stores sweep their own).
    sweeper: Option<JoinHandle<()>>,
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
        let cluster = core.config.is_cluster();
        let sweeper = (!cluster).then(|| sweep(&core));
        let id = format!("{:016x}", rand_id());
        let reconciler = (!core.config.reconcile_roots.is_empty())
            .then(|| tokio::spawn(crate::reconciler::run(Arc::downgrade(&core), id.clone())));
        Ok(RedisStore {
            groups: cluster.then(|| Arc::new(Groups::new(Arc::clone(&core)))),
            core,
            bound: None,
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
        if self.core.config.is_cluster() {
            return Err(on_cluster("reconcile"));
        }
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

    /// On a Redis Cluster, the store of the one co-location group whose hash tag is `tag`:
    /// the whole contract (ranges and watches of the group, transactions, leases, the
    /// group's revision and compaction) over the group's own revision sequence, metadata,
    /// index, event log and leases, all in the slot of `tag`. Every key it writes must carry
    /// the hash tag (`{tag}`); ranges and watches see the group's keys only.
    ///
    /// ```no_run
    /// # async fn demo() -> keyplane_core::Result<()> {
    /// use keyplane_core::{PutOptions, Store};
    /// let cluster =
    ///     keyplane_redis::RedisStore::from_url("redis+cluster://10.0.0.5:7000,10.0.0.6:7000")
    ///         .await?;
    /// let eu = cluster.group(b"eu")?;
    /// eu.put(b"nxc:map:{eu}:aws", b"...", PutOptions::default()).await?;
    /// let revision = eu.revision().await?; // the group's revision
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `Unsupported` on a single server (whose store already serves everything), and on a
    /// store that is itself one group's; `InvalidKey` for an empty tag or one holding `}`.
    pub fn group(&self, tag: &[u8]) -> Result<RedisStore> {
        if self.groups.is_none() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "groups are a Redis Cluster store's; this store serves the whole server",
            ));
        }
        if tag.is_empty() || tag.contains(&b'}') {
            return Err(
                Error::invalid_key("a hash tag is non-empty and holds no `}`")
                    .with_context("tag", escape_bytes(tag)),
            );
        }
        let core = self.core_of(Some(tag), "group")?;
        Ok(RedisStore {
            sweeper: Some(sweep(&core)),
            core,
            groups: None,
            bound: Some(tag.to_vec()),
            reconciler: None,
            id: format!("{:016x}", rand_id()),
        })
    }

    /// The configuration the store was connected with.
    pub fn config(&self) -> &RedisConfig {
        &self.core.config
    }
}

impl RedisStore {
    /// The core that serves keys of `group` (`None`: the whole store): the store's own on one
    /// server; on a cluster, the group's, made on first use.
    ///
    /// # Errors
    /// On a cluster, `Unsupported` for an operation over the whole store (`group` `None`,
    /// named by `op`).
    fn core_of(&self, group: Option<&[u8]>, op: &'static str) -> Result<Arc<Core>> {
        let Some(groups) = &self.groups else {
            return Ok(Arc::clone(&self.core));
        };
        let Some(tag) = group else {
            return Err(on_cluster(op));
        };
        Ok(groups.core(tag))
    }

    /// The core of the group of `key` (on a cluster, its hash tag).
    ///
    /// # Errors
    /// On a cluster, `InvalidKey` for a key without a hash tag.
    fn core_of_key(&self, key: &[u8]) -> Result<Arc<Core>> {
        if let Some(bound) = &self.bound {
            self.check_in_group(bound, key)?;
        }
        if self.groups.is_none() {
            return Ok(Arc::clone(&self.core));
        }
        let tag = group_tag(key).ok_or_else(|| untagged(key))?;
        self.core_of(Some(tag), "key")
    }

    /// Checks that `key` carries the hash tag `bound` of the group this store serves.
    fn check_in_group(&self, bound: &[u8], key: &[u8]) -> Result<()> {
        if group_tag(key) == Some(bound) {
            return Ok(());
        }
        Err(Error::invalid_key(
            "this store serves one co-location group: its keys carry the group's hash tag",
        )
        .with_context("key", escape_bytes(key))
        .with_context("group", escape_bytes(bound)))
    }

    /// On a cluster, where `range` reaches: the one group every key of it belongs to (a key
    /// with a hash tag, a prefix holding a whole hash tag, or an interval whose bounds share
    /// one), or `None` for a range that may span groups.
    ///
    /// # Errors
    /// `InvalidKey` for a single key without a hash tag.
    fn group_of_range(range: &KeyRange) -> Result<Option<&[u8]>> {
        let tag = group_tag(range.shared_prefix());
        match range {
            KeyRange::Key(key) if tag.is_none() => Err(untagged(key)),
            _ => Ok(tag),
        }
    }

    /// The core of the one group a transaction's keys belong to.
    ///
    /// # Errors
    /// On a cluster, `InvalidArgument` for a transaction over two groups or none, `InvalidKey`
    /// for a key without a hash tag; nothing is sent.
    fn core_of_txn(&self, txn: &Txn) -> Result<Arc<Core>> {
        if !self.core.config.is_cluster() {
            return Ok(Arc::clone(&self.core));
        }
        let mut group: Option<&[u8]> = None;
        for key in txn.keys() {
            if let Some(bound) = &self.bound {
                self.check_in_group(bound, key)?;
                continue;
            }
            let tag = group_tag(key).ok_or_else(|| untagged(key))?;
            match group {
                Some(g) if g != tag => {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        "on Redis Cluster a transaction stays within one co-location group \
                         (one hash tag); nothing was sent",
                    )
                    .with_context("group", escape_bytes(g))
                    .with_context("other_group", escape_bytes(tag)));
                }
                _ => group = Some(tag),
            }
        }
        if self.bound.is_some() {
            return Ok(Arc::clone(&self.core));
        }
        if group.is_none() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "on Redis Cluster a transaction needs a key, whose hash tag names its group",
            ));
        }
        self.core_of(group, "txn")
    }
}

/// The hash tag of `key`: what Redis Cluster hashes it by, when it has one.
fn group_tag(key: &[u8]) -> Option<&[u8]> {
    keyplane_core::raw::redis_hash_tag(key)
}

/// The error of a key without a hash tag on a cluster.
fn untagged(key: &[u8]) -> Error {
    Error::invalid_key(
        "on Redis Cluster every key needs a hash tag (`{group}`) naming its co-location group; \
         a schema declares it beside the template",
    )
    .with_context("key", escape_bytes(key))
}

/// The error of an operation over the whole store, or over several groups, on a cluster.
fn on_cluster(op: &'static str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        "on Redis Cluster each co-location group (hash tag) counts its own revisions: \
         revisions, leases and compaction are each group's (RedisStore::group), and \
         reconciliation is not offered",
    )
    .with_context("op", op)
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        if let Some(sweeper) = &self.sweeper {
            sweeper.abort();
        }
        if let Some(reconciler) = self.reconciler.take() {
            reconciler.abort();
            // Hands the leader key over at once rather than after it expires.
            crate::reconciler::resign(&self.core, &self.id);
        }
    }
}

/// Starts the lease sweeper of `core`'s leases (it ends with the core).
fn sweep(core: &Arc<Core>) -> JoinHandle<()> {
    tokio::spawn(crate::lease::sweep_loop(
        Arc::downgrade(core),
        core.sweeper_wake.clone(),
    ))
}

/// A random 64-bit id (the std hasher's random keys, no extra dependency).
fn rand_id() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

#[keyplane_core::raw::async_trait]
impl Store for RedisStore {
    fn capabilities(&self) -> &Capabilities {
        &self.core.caps
    }

    async fn revision(&self) -> Result<i64> {
        crate::range::revision(&*self.core_of(None, "revision")?).await
    }

    async fn range(&self, opts: RangeOptions) -> Result<RangeResult> {
        let Some(groups) = &self.groups else {
            return crate::range::range(&self.core, opts).await;
        };
        opts.validate()?;
        match Self::group_of_range(&opts.range)?.map(<[u8]>::to_vec) {
            Some(tag) => {
                let mut page = crate::range::range(&groups.core(&tag), opts).await?;
                page.groups = Some([(tag, page.revision)].into());
                Ok(page)
            }
            None => crate::cluster::range(groups, opts).await,
        }
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        crate::range::get(&*self.core_of_key(key)?, key).await
    }

    async fn put(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<PutResult> {
        if opts.lease.is_some() && self.groups.is_some() {
            return Err(on_cluster("put with a lease"));
        }
        crate::txn::put(&*self.core_of_key(key)?, key, value, opts).await
    }

    async fn delete(&self, key: &[u8]) -> Result<DeleteResult> {
        crate::txn::delete(&*self.core_of_key(key)?, key).await
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        let core = self.core_of_txn(&txn)?;
        crate::txn::txn(&core, txn).await
    }

    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        crate::lease::grant(&*self.core_of(None, "lease_grant")?, ttl).await
    }

    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        crate::lease::keep_alive(&*self.core_of(None, "lease_keep_alive")?, id).await
    }

    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        crate::lease::revoke(&*self.core_of(None, "lease_revoke")?, id).await
    }

    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        crate::lease::time_to_live(&*self.core_of(None, "lease_time_to_live")?, id).await
    }

    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        let Some(groups) = &self.groups else {
            opts.check_starts(false)?;
            return crate::watch::watch(&self.core, opts).await;
        };
        opts.range.validate()?;
        opts.check_starts(true)?;
        match Self::group_of_range(&opts.range)? {
            Some(tag) => crate::cluster::watch_group(groups, tag, &opts).await,
            None => crate::cluster::watch(Arc::clone(groups), opts).await,
        }
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        crate::watch::compact(&*self.core_of(None, "compact")?, revision).await
    }
}
