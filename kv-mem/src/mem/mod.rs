//! [`MemStore`]: the in-process reference backend.

mod config;
mod lease;
mod range;
mod state;
mod txn;
mod watch;

pub use config::MemConfig;

use kv_core::{
    Capabilities, Entry, Error, ErrorKind, LeaseGrant, LeaseId, LeaseInfo, RangeOptions,
    RangeResult, Result, Store, Txn, TxnResponse, WatchOptions, WatchStream, async_trait,
};
use state::State;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The in-process store: an ordered map with etcd's revisions, leases on tokio time, a
/// bounded event history for watches, and collections in the reserved layout.
///
/// Exact and deterministic: it is the reference every other backend is measured against.
/// Cloning gives another handle to the same store.
///
/// ```
/// use kv_core::{RangeOptions, Store, PutOptions};
/// use kv_mem::MemStore;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> kv_core::Result<()> {
/// let store = MemStore::new();
/// store.put(b"app/a", b"1", PutOptions::default()).await?;
/// let page = store.range(RangeOptions::prefix("app/")).await?;
/// assert_eq!(page.entries[0].version, 1);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct MemStore {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for MemStore {
    /// Shows the configuration and size, never the data.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("MemStore");
        if let Ok(state) = self.shared.state.try_lock() {
            d.field("revision", &state.revision)
                .field("keys", &state.kv.len());
        }
        d.field("capabilities", &self.shared.caps)
            .finish_non_exhaustive()
    }
}

/// What every handle of one store shares.
pub(crate) struct Shared {
    /// The state, behind a std `Mutex` rather than tokio's: every critical section is short,
    /// synchronous and never held across an `.await`, which is the case the std mutex serves
    /// best (as mini-redis explains for its `Db`). Watch channels are unbounded, so delivering
    /// events under the lock never waits on a reader either.
    state: Mutex<State>,
    caps: Capabilities,
    /// Wakes the lease expiry task when a deadline may have moved earlier or the store goes.
    wake: Arc<Notify>,
    /// The lease expiry task, started with the first lease inside the caller's runtime.
    expiry: Mutex<Option<JoinHandle<()>>>,
}

impl Shared {
    /// The locked state, without expiring leases.
    pub(crate) fn lock(&self) -> Result<MutexGuard<'_, State>> {
        self.state.lock().map_err(|_| {
            Error::new(
                ErrorKind::Corrupted,
                "the memory store's state is unusable: an operation panicked while holding it",
            )
        })
    }

    /// The locked state after expiring every lease due now, so that each operation sees
    /// leases exactly as the clock says.
    fn state(&self) -> Result<MutexGuard<'_, State>> {
        let mut state = self.lock()?;
        state.expire_due(Instant::now());
        Ok(state)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Ok(state) = self.state.get_mut() {
            state.history.close();
        }
        self.wake.notify_one();
    }
}

impl Default for MemStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemStore {
    /// An empty store with the default [`MemConfig`].
    pub fn new() -> Self {
        Self::with_config(MemConfig::default())
    }

    /// An empty store with `config`.
    pub fn with_config(config: MemConfig) -> Self {
        MemStore {
            shared: Arc::new(Shared {
                state: Mutex::new(State::new(config.history)),
                caps: config.capabilities(),
                wake: Arc::new(Notify::new()),
                expiry: Mutex::new(None),
            }),
        }
    }

    /// Starts the lease expiry task in the current runtime unless one is running.
    fn ensure_expiry_task(&self) {
        let mut task = match self.shared.expiry.lock() {
            Ok(task) => task,
            Err(poisoned) => poisoned.into_inner(),
        };
        // A task whose runtime shut down is finished: start another in this one. Outside a
        // tokio runtime there is none, and leases still expire on the next operation.
        if task.as_ref().is_none_or(JoinHandle::is_finished)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let weak = Arc::downgrade(&self.shared);
            let wake = Arc::clone(&self.shared.wake);
            *task = Some(runtime.spawn(lease::run_expiry(weak, wake)));
        }
    }
}

#[async_trait]
impl Store for MemStore {
    fn capabilities(&self) -> &Capabilities {
        &self.shared.caps
    }

    async fn revision(&self) -> Result<i64> {
        Ok(self.shared.state()?.revision)
    }

    async fn range(&self, opts: RangeOptions) -> Result<RangeResult> {
        opts.validate()?;
        self.shared.state()?.range(&opts)
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        kv_core::validate_key(key)?;
        let state = self.shared.state()?;
        Ok(state.kv.get(key).map(|stored| stored.entry(key, false)))
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        txn.validate(&self.shared.caps)?;
        self.shared.state()?.txn(&txn)
    }

    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        let ttl = self.shared.caps.round_ttl(ttl)?;
        let id = self.shared.state()?.leases.grant(ttl, Instant::now());
        self.ensure_expiry_task();
        self.shared.wake.notify_one();
        Ok(LeaseGrant { id, ttl })
    }

    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        self.shared.state()?.leases.keep_alive(id, Instant::now())
    }

    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        self.shared.state()?.revoke_lease(id)
    }

    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        self.shared.state()?.leases.info(id, Instant::now())
    }

    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        opts.range.validate()?;
        let mut state = self.shared.state()?;
        let current = state.revision;
        state.history.watch(&opts, current)
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        let mut state = self.shared.state()?;
        let current = state.revision;
        state.history.compact(revision, current)
    }
}
