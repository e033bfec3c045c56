//! [`RedisStore`]: the public handle around the store's cores, its constructors and
//! accessors, and the background tasks it owns (lease sweeper, reconciler).

use crate::config::RedisConfig;
use crate::core::Core;
use crate::core::cluster::Groups;
use crate::core::route::Router;
use crate::reconcile::ReconcileReport;
use keyplane_contract::raw::escape_bytes;
use keyplane_contract::{Error, ErrorKind, Result};
use std::sync::Arc;
use tokio::task::JoinHandle;

/// The keyplane-core [`Store`](keyplane_contract::Store) on Redis, with native strings, sets,
/// hashes and lists.
///
/// Every transaction is one Lua script; per-key revisions live in a metadata hash, an ordered
/// index serves ranges, a stream is the event log that watches read, and leases are a deadline
/// sorted set swept by a background task of every client. The layout is described in the
/// crate documentation.
pub struct RedisStore {
    /// The cores the store's operations go to.
    pub(crate) router: Router,
    /// The lease sweeper, on a store that offers leases (not the cluster's store, whose
    /// groups' stores sweep their own).
    sweeper: Option<JoinHandle<()>>,
    /// The background reconciler, when the configuration has roots.
    reconciler: Option<JoinHandle<()>>,
    /// This store's id in the reconciler's leader election.
    id: String,
}

impl RedisStore {
    /// Opens the store on the Redis server (or cluster) of `config`: connects and starts the
    /// lease sweeper (and the reconciler, when the configuration has roots).
    ///
    /// # Errors
    /// `Config` for a bad configuration; `Unavailable`, `Timeout` or `Unauthorized` when the
    /// server cannot be reached or refuses the credentials.
    pub async fn open(config: RedisConfig) -> Result<Self> {
        let core = Arc::new(Core::connect(config).await?);
        let cluster = core.config.is_cluster();
        if !cluster {
            upgrade_index(&core).await?;
        }
        let sweeper = (!cluster).then(|| sweep(&core));
        let id = format!("{:016x}", rand_id());
        let reconciler = crate::reconcile::start(&core, &id);
        Ok(RedisStore {
            router: Router {
                groups: cluster.then(|| Arc::new(Groups::new(Arc::clone(&core)))),
                core,
                bound: None,
            },
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
        // The reconciler, this method's body included, lives in `crate::reconcile`.
        crate::reconcile::reconcile(&self.router.core, prefix).await
    }

    /// Opens the store of `url` (`redis://host:port/db`, `rediss://...`,
    /// `redis+cluster://...`) with the default configuration.
    ///
    /// # Errors
    /// As [`RedisStore::open`].
    pub async fn from_url(url: &str) -> Result<Self> {
        Self::open(RedisConfig::new(url)).await
    }

    /// On a Redis Cluster, the store of the one co-location group whose hash tag is `tag`:
    /// the whole contract (ranges and watches of the group, transactions, leases, the
    /// group's revision and compaction) over the group's own revision sequence, metadata,
    /// index, event log and leases, all in the slot of `tag`. Every key it writes must carry
    /// the hash tag (`{tag}`); ranges and watches see the group's keys only.
    ///
    /// ```no_run
    /// # async fn demo() -> keyplane_contract::Result<()> {
    /// use keyplane_contract::{PutOptions, Store};
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
        if self.router.groups.is_none() {
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
        let core = self.router.core_of(Some(tag), "group")?;
        Ok(RedisStore {
            sweeper: Some(sweep(&core)),
            router: Router {
                core,
                groups: None,
                bound: Some(tag.to_vec()),
            },
            reconciler: None,
            id: format!("{:016x}", rand_id()),
        })
    }

    /// The configuration the store was opened with.
    pub fn config(&self) -> &RedisConfig {
        &self.router.core.config
    }
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        if let Some(sweeper) = &self.sweeper {
            sweeper.abort();
        }
        if let Some(reconciler) = self.reconciler.take() {
            reconciler.abort();
            // Hands the leader key over at once rather than after it expires.
            crate::reconcile::resign(&self.router.core, &self.id);
        }
    }
}

/// Moves an index of the layout before buckets (one sorted set) into buckets, one short
/// script run at a time (see `core/scripts/index.lua`); on a store already in buckets it
/// costs one run that only reads. (A cluster group's index, which is not read at open, is
/// moved by its writes and its lease sweeper, which takes a step each time: every layout
/// step is a valid index.)
async fn upgrade_index(core: &Core) -> Result<()> {
    loop {
        let more: i64 = core
            .run_write_unacked(&core.scripts.index_upgrade, "open")
            .await?;
        if more == 0 {
            return Ok(());
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
