//! Opening a store's database: claiming the directory, opening sled (waiting briefly for a
//! lock this process is releasing), checking the layout version, and recovering the
//! revision, the log's floor and the leases.

use super::claim::{LOCK_POLL, PathClaim};
use super::codec::{
    COMPACT_KEY, FORMAT_KEY, FORMAT_VERSION, LEASE_SEQ_KEY, LeaseRecord, OLDEST_FORMAT_VERSION, be,
    corrupted, first_revision, read_be,
};
use super::{Core, LeaseIndex, Trees, Writer};
use crate::config::{Durability, SledConfig};
use crate::error::map_error;
use keyplane_contract::{Capabilities, Error, ErrorKind, Result, Retention, Support};
use std::sync::atomic::{AtomicI64, AtomicUsize};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// Most compares, and most ops per branch, in one transaction.
const MAX_TXN_OPS: usize = 4096;
/// Largest value accepted.
const MAX_VALUE_BYTES: usize = 16 << 20;

/// Opens the database in `config.path`, recovers the state and expires the leases that are
/// due; returns it with the runtime that is to run the lease expiry task.
pub(crate) fn open(
    config: SledConfig,
    temp_dir: Option<tempfile::TempDir>,
) -> Result<(Arc<Core>, tokio::runtime::Handle)> {
    config.validate()?;
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
        Error::new(
            ErrorKind::Config,
            "SledStore::open must be called inside a Tokio runtime (it starts the lease \
             expiry task)",
        )
    })?;
    let path = config.path.display().to_string();
    let flush_every = match config.durability {
        Durability::FlushOnCommit => 500,
        Durability::Buffered { flush_interval } => {
            u64::try_from(flush_interval.as_millis()).unwrap_or(u64::MAX)
        }
    };
    let claim = PathClaim::new(&config.path).map_err(|e| e.with_context("path", &path))?;
    let sled_config = sled::Config::new()
        .path(&config.path)
        .cache_capacity(config.cache_capacity)
        .flush_every_ms(Some(flush_every));
    let db = open_db(&sled_config).map_err(|e| e.with_context("path", &path))?;
    let tree = |name: &str| db.open_tree(name).map_err(|e| map_error("open", e));
    let trees = Trees {
        data: tree("kv.data")?,
        meta: tree("kv.meta")?,
        log: tree("kv.log")?,
        leases: tree("kv.leases")?,
    };
    check_format(&db, &trees).map_err(|e| e.with_context("path", &path))?;

    let revision = match trees.log.last().map_err(|e| map_error("open", e))? {
        Some((key, _)) => read_be(&key)?,
        None => 0,
    };
    let log_floor = match trees.log.first().map_err(|e| map_error("open", e))? {
        Some((key, record)) => first_revision(&key, &record)?,
        None => revision + 1,
    };
    let compact_floor = meta_i64(&trees, COMPACT_KEY)?
        .unwrap_or(1)
        .max(log_floor.min(revision))
        .max(1);
    let mut leases = LeaseIndex::default();
    for kv in trees.leases.scan_prefix(b"L") {
        let (key, value) = kv.map_err(|e| map_error("open", e))?;
        leases.insert(read_be(&key[1..])?, LeaseRecord::decode(&value)?);
    }
    let lease_seq = meta_i64(&trees, LEASE_SEQ_KEY)?.unwrap_or(0);

    let caps = Capabilities {
        backend: "sled",
        max_txn_ops: MAX_TXN_OPS,
        max_value_bytes: MAX_VALUE_BYTES,
        max_key_bytes: keyplane_contract::raw::MAX_KEY_LEN,
        ttl_granularity: Duration::from_millis(1),
        history_retention: Retention::Revisions(config.history_retention),
        txn: Support::Native,
        leases: Support::Native,
        watch: Support::Native,
        collections: Support::Emulated,
        persistent: true,
        foreign_writes: keyplane_contract::ForeignWrites::Immediate,
        sharding: keyplane_contract::Sharding::Unsharded,
    };
    let backlog = Arc::new(super::behind::Backlog::default());
    let flusher = match config.durability {
        Durability::FlushOnCommit => None,
        Durability::Buffered { .. } => Some(
            super::behind::Flusher::start(db.clone(), backlog.clone()).map_err(|e| {
                Error::new(ErrorKind::Backend, "sled: starting the flush thread failed")
                    .with_source(e)
            })?,
        ),
    };
    let inner = Arc::new(Core {
        _flusher: flusher,
        backlog,
        caps,
        db,
        trees,
        writer: Mutex::new(Writer {
            leases,
            lease_seq,
            room: None,
        }),
        group: Arc::default(),
        gate: RwLock::new(()),
        revision: AtomicI64::new(revision),
        compact_floor: AtomicI64::new(compact_floor),
        published: watch::Sender::new(revision),
        unflushed: AtomicUsize::new(0),
        expiry_wake: Arc::new(Notify::new()),
        log_floor: AtomicI64::new(log_floor),
        pruning: Mutex::new(()),
        config,
        _claim: claim,
        _temp_dir: temp_dir,
    });
    // Leases that expired while the store was closed go now, before anyone reads.
    inner.write_blocking(|_, _, _| Ok(()))?;
    Ok((inner, runtime))
}

/// How long an open waits for sled to release the lock of a database this process closed.
const LOCK_RELEASE_WAIT: Duration = Duration::from_secs(1);

/// Opens the sled database. sled releases the directory lock of a dropped database from its
/// I/O threads, a moment after the drop returns; the directory is not open in this process
/// any more (see [`PathClaim`]), so a lock held by this process is about to be released, and
/// one held by another process persists past the wait.
fn open_db(config: &sled::Config) -> Result<sled::Db> {
    let policy = LOCK_POLL.deadline(Some(LOCK_RELEASE_WAIT));
    let mut attempts = policy.start();
    loop {
        match config.open() {
            Ok(db) => return Ok(db),
            Err(err) => {
                let err = map_error("open", err);
                if err.kind() != ErrorKind::Unavailable || !attempts.wait_blocking() {
                    return Err(err);
                }
            }
        }
    }
}

fn meta_i64(trees: &Trees, key: &[u8]) -> Result<Option<i64>> {
    trees
        .meta
        .get(key)
        .map_err(|e| map_error("read_metadata", e))?
        .map(|v| read_be(&v))
        .transpose()
}

/// Checks the stored layout version, writing it into a new database and over an older one
/// this build reads.
fn check_format(db: &sled::Db, trees: &Trees) -> Result<()> {
    match meta_i64(trees, FORMAT_KEY)? {
        Some(version) if version == FORMAT_VERSION as i64 => Ok(()),
        // An older layout this build reads as it is: marked as the current one before
        // anything is written in it, so that an older build refuses it from then on.
        Some(version)
            if (OLDEST_FORMAT_VERSION as i64..FORMAT_VERSION as i64).contains(&version) =>
        {
            mark_current(db, trees)
        }
        Some(version) => Err(Error::new(
            ErrorKind::Corrupted,
            format!(
                "the sled database was written with layout version {version}; this build \
                 reads layout versions {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}"
            ),
        )),
        None => {
            let empty = [&trees.data, &trees.log, &trees.leases]
                .iter()
                .all(|t| t.is_empty());
            if !empty {
                return Err(corrupted(
                    "the database holds data but no layout version; it was not written by \
                     this store",
                ));
            }
            mark_current(db, trees)
        }
    }
}

/// Writes the current layout version, durably.
fn mark_current(db: &sled::Db, trees: &Trees) -> Result<()> {
    trees
        .meta
        .insert(FORMAT_KEY, &be(FORMAT_VERSION as i64))
        .map_err(|e| map_error("open", e))?;
    db.flush().map_err(|e| map_error("open", e))?;
    Ok(())
}
