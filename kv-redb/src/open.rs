//! [`RedbStore`]: the handle of an open redb database file, its constructors and accessors.

use crate::config::RedbConfig;
use crate::core::{Core, Shared, open, writer};
use crate::{check, lease};
use keyplane_contract::{Capabilities, Error, ErrorKind, Result, Retention, Support};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// Most compares, and most ops per branch, in one transaction.
const MAX_TXN_OPS: usize = 4096;
/// Largest value accepted.
const MAX_VALUE_BYTES: usize = 16 << 20;

/// The embedded, persistent store: the whole [`Store`](keyplane_contract::Store) contract on
/// one redb database file.
///
/// Entries, the event log, leases and the store's counters live in tables of one file, and
/// every write is part of one redb write transaction, so a crash never leaves half of one.
/// One thread writes: the writes queued while it commits run together in the next
/// transaction, each with its own compares, results and revision. Reads run concurrently,
/// each on a snapshot of one committed state. The event log is in the file: a watch resumes
/// after a restart from any revision still retained ([`RedbConfig::history_retention`]).
/// Leases are stored as wall-clock deadlines and expire while the store is open (a
/// background task) and when it is reopened. With the default
/// [`Durability::FlushOnCommit`](crate::Durability::FlushOnCommit) a write is acknowledged
/// once its transaction is durable, and a read sees only durable writes.
///
/// Cloning is cheap and shares the open database. redb locks the file while it is open: a
/// second open, from this or another process, fails with `Unavailable`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_contract::Result<()> {
/// use keyplane_contract::{PutOptions, Store};
/// use keyplane_redb::{RedbConfig, RedbStore};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("store.redb");
/// let store = RedbStore::open(RedbConfig::new(&path)).await?;
/// let put = store.put(b"app/config", b"v1", PutOptions::default()).await?;
/// assert_eq!(put.revision, 1);
/// drop(store);
///
/// let store = RedbStore::open(RedbConfig::new(&path)).await?;
/// assert_eq!(store.get(b"app/config").await?.unwrap().value, b"v1");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedbStore {
    pub(crate) inner: Arc<Core>,
}

impl RedbStore {
    /// Opens (or creates) the database file `config.path`, and the directories above it that
    /// are missing, and starts the lease expiry task.
    /// Leases that expired while the store was closed are expired before this returns. The
    /// opening runs on Tokio's blocking threads.
    ///
    /// # Errors
    /// `Config` for an invalid configuration or when called outside a Tokio runtime;
    /// `Unavailable` when the file is open in another store, of this process or another;
    /// `Corrupted` when the file was written with an incompatible layout version or is not a
    /// store's database; `Backend` for I/O errors.
    pub async fn open(config: RedbConfig) -> Result<Self> {
        Self::start_blocking(config, None).await
    }

    /// A store with the default configuration in a new temporary directory, which is removed
    /// once the last clone is dropped and the database closed: for tests.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_contract::Result<()> {
    /// use keyplane_contract::{PutOptions, Store};
    ///
    /// let store = keyplane_redb::RedbStore::temporary().await?;
    /// store.put(b"k", b"v", PutOptions::default()).await?;
    /// let file = store.config().path.clone();
    /// drop(store);
    /// assert!(!file.exists());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Backend` when the directory cannot be created; as [`RedbStore::open`] otherwise.
    pub async fn temporary() -> Result<Self> {
        Self::temporary_with(|config| config).await
    }

    /// As [`RedbStore::temporary`], with the configuration `configure` makes of the defaults
    /// (the file stays the temporary one, whatever path it sets): for tests of a store
    /// configured as in production, such as buffered durability.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> keyplane_contract::Result<()> {
    /// use keyplane_redb::{Durability, RedbStore};
    /// use std::time::Duration;
    ///
    /// let store = RedbStore::temporary_with(|config| {
    ///     config.durability(Durability::Buffered { flush_interval: Duration::from_millis(50) })
    /// })
    /// .await?;
    /// assert!(matches!(store.config().durability, Durability::Buffered { .. }));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Backend` when the directory cannot be created; as [`RedbStore::open`] otherwise.
    pub async fn temporary_with(configure: impl FnOnce(RedbConfig) -> RedbConfig) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("kv-redb-")
            .tempdir()
            .map_err(|e| {
                Error::new(ErrorKind::Backend, "cannot create a temporary directory").with_source(e)
            })?;
        let path = dir.path().join("store.redb");
        let mut config = configure(RedbConfig::new(&path));
        config.path = path;
        Self::start_blocking(config, Some(dir)).await
    }

    /// [`RedbStore::start`] on Tokio's blocking threads, which keep the runtime's context.
    async fn start_blocking(
        config: RedbConfig,
        temp_dir: Option<tempfile::TempDir>,
    ) -> Result<Self> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::new(
                ErrorKind::Config,
                "a redb store is opened inside a Tokio runtime (it starts the lease expiry task)",
            )
        })?;
        let runtime = handle.clone();
        let store = handle
            .spawn_blocking(move || Self::start(config, temp_dir))
            .await
            .map_err(|e| {
                Error::new(ErrorKind::Backend, "opening the redb store failed").with_source(e)
            })??;
        lease::spawn_expiry(&store.inner, &runtime);
        // Leases that expired while the store was closed go now, before anyone reads.
        store.inner.writer.write(|_| Ok(())).await?;
        Ok(store)
    }

    fn start(config: RedbConfig, temp_dir: Option<tempfile::TempDir>) -> Result<Self> {
        config.validate()?;
        let db = open::open_db(&config)?;
        let w = open::recover(&db)?;
        let caps = Capabilities {
            backend: "redb",
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
        let shared = Arc::new(Shared {
            db,
            config,
            caps,
            revision: AtomicI64::new(w.revision),
            compact_floor: AtomicI64::new(w.compact_floor),
            published: watch::Sender::new(w.revision),
            #[cfg(test)]
            commits: std::sync::atomic::AtomicU64::new(0),
            #[cfg(test)]
            deadline_hold_us: std::sync::atomic::AtomicU64::new(0),
        });
        let writer = writer::Handle::start(shared.clone(), w)?;
        Ok(RedbStore {
            inner: Arc::new(Core {
                shared,
                writer,
                expiry_wake: Arc::new(Notify::new()),
                _temp_dir: temp_dir,
            }),
        })
    }

    /// The configuration the store was opened with.
    pub fn config(&self) -> &RedbConfig {
        &self.inner.shared.config
    }

    /// Checks that the entries, the event log, the leases and the counters agree: every
    /// entry's metadata lies within the store's revision and its last write is in the
    /// retained log, every leased key is listed under a live lease and vice versa, and the
    /// log is contiguous up to the current revision. Reads one snapshot; writers go on.
    ///
    /// # Errors
    /// `Corrupted` naming the first violation; backend errors.
    pub fn check_consistency(&self) -> Result<()> {
        check::check(&self.inner.shared)
    }

    /// Makes every write committed so far durable (useful with buffered durability).
    ///
    /// # Errors
    /// `Backend` for I/O errors.
    pub async fn flush(&self) -> Result<()> {
        self.inner.writer.flush().await
    }
}

impl fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedbStore")
            .field("config", &self.inner.shared.config)
            .field("revision", &self.inner.shared.revision())
            .finish()
    }
}
