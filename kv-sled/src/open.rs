//! [`SledStore`]: the handle of an open sled database, its constructors and accessors.

use crate::config::SledConfig;
use crate::core::Core;
use crate::{check, core, lease};
use keyplane_contract::Result;
use std::fmt;
use std::sync::Arc;

/// The embedded, persistent store: the whole [`Store`](keyplane_contract::Store) contract on a
/// sled database directory.
///
/// Data, metadata, the event log and leases live in four sled trees, and every write
/// transaction is one sled transaction across them, so a crash never leaves half of one.
/// Writers are serialized, and transactions submitted concurrently are committed in groups:
/// one sled transaction and one flush for all of them, each keeping its own compares,
/// results and revision. Reads run concurrently. The event log is on disk: a watch resumes
/// after a restart from any revision still retained
/// ([`SledConfig::history_retention`]). Leases are stored as wall-clock deadlines and
/// expire while the store is open (a background task) and when it is reopened. With the
/// default [`Durability::FlushOnCommit`](crate::Durability::FlushOnCommit) an acknowledged
/// write survives `kill -9`, and so does every value a read returned: a read that runs while
/// a write is committed but not yet flushed flushes before it answers.
///
/// Cloning is cheap and shares the open database. The directory is locked while open: a
/// second open, from this or another process, fails with `Unavailable`. sled releases the
/// lock from its I/O threads a moment after the last clone is dropped; `SledStore::open`
/// waits for that, while a program opening the directory with sled itself must retry.
///
/// So a `SledStore` belongs to one process at a time, for as long as it is open: processes
/// that share live data use etcd or Redis. `kvctl` shares a sled store between its own
/// processes (a `watch` in one terminal, `put`s in another) by holding it only while a
/// command works and following the event log between short opens; a program that keeps the
/// store open holds it exclusively, and `kvctl` then says so.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> keyplane_contract::Result<()> {
/// use keyplane_contract::{PutOptions, Store};
/// use keyplane_sled::{SledConfig, SledStore};
///
/// let dir = tempfile::tempdir().unwrap();
/// let store = SledStore::open(SledConfig::new(dir.path())).await?;
/// let put = store.put(b"app/config", b"v1", PutOptions::default()).await?;
/// assert_eq!(put.revision, 1);
/// drop(store);
///
/// let store = SledStore::open(SledConfig::new(dir.path())).await?;
/// assert_eq!(store.get(b"app/config").await?.unwrap().value, b"v1");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SledStore {
    pub(crate) inner: Arc<Core>,
    /// Marks the store as closing once the last clone is dropped.
    _handle: Arc<core::claim::OpenHandle>,
}

impl SledStore {
    /// Opens (or creates) the database in `config.path` and starts the lease expiry task.
    /// Leases that expired while the store was closed are expired before this returns. The
    /// opening (which may wait for the directory's lock) runs on Tokio's blocking threads.
    ///
    /// # Errors
    /// `Config` for an invalid configuration or when called outside a Tokio runtime;
    /// `Unavailable` when another process holds the directory (after waiting up to a second,
    /// the time sled may take to release the lock of a store this process just closed) or
    /// when it is already open in this process;
    /// `Corrupted` when the directory was written with an incompatible layout version or is
    /// not a store's database; `Backend` for I/O errors.
    pub async fn open(config: SledConfig) -> Result<Self> {
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
    /// let store = keyplane_sled::SledStore::temporary().await?;
    /// store.put(b"k", b"v", PutOptions::default()).await?;
    /// let dir = store.config().path.clone();
    /// drop(store);
    /// assert!(!dir.exists());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `Backend` when the directory cannot be created; as [`SledStore::open`] otherwise.
    pub async fn temporary() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("kv-sled-")
            .tempdir()
            .map_err(|e| {
                keyplane_contract::Error::new(
                    keyplane_contract::ErrorKind::Backend,
                    "cannot create a temporary directory",
                )
                .with_source(e)
            })?;
        let config = SledConfig::new(dir.path());
        Self::start_blocking(config, Some(dir)).await
    }

    /// [`SledStore::start`] on Tokio's blocking threads, which keep the runtime's context.
    async fn start_blocking(
        config: SledConfig,
        temp_dir: Option<tempfile::TempDir>,
    ) -> Result<Self> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            keyplane_contract::Error::new(
                keyplane_contract::ErrorKind::Config,
                "a sled store is opened inside a Tokio runtime",
            )
        })?;
        handle
            .spawn_blocking(move || Self::start(config, temp_dir))
            .await
            .map_err(|e| {
                keyplane_contract::Error::new(
                    keyplane_contract::ErrorKind::Backend,
                    "opening the sled store failed",
                )
                .with_source(e)
            })?
    }

    fn start(config: SledConfig, temp_dir: Option<tempfile::TempDir>) -> Result<Self> {
        let (inner, runtime) = core::open::open(config, temp_dir)?;
        lease::spawn_expiry(&inner, &runtime);
        let handle = Arc::new(inner._claim.handle());
        Ok(SledStore {
            inner,
            _handle: handle,
        })
    }

    /// The configuration the store was opened with.
    pub fn config(&self) -> &SledConfig {
        &self.inner.config
    }

    /// Checks that the data, metadata, event log and leases agree: every entry's metadata
    /// lies within the store's revision, its last write is in the retained log, every leased
    /// key is listed under a live lease and vice versa, and the log is contiguous up to the
    /// current revision. Writers wait while it runs.
    ///
    /// # Errors
    /// `Corrupted` naming the first violation; backend errors.
    pub fn check_consistency(&self) -> Result<()> {
        check::check(&self.inner)
    }

    /// Flushes every write to disk (useful with buffered durability).
    ///
    /// # Errors
    /// `Backend` for I/O errors.
    pub async fn flush(&self) -> Result<()> {
        self.inner.flush().await
    }
}

impl fmt::Debug for SledStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SledStore")
            .field("config", &self.inner.config)
            .field("revision", &self.inner.revision())
            .finish()
    }
}
