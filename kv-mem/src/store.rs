//! [`MemStore`]: the in-process reference backend.

use crate::config::MemConfig;
use crate::core::{Shared, State};
use crate::{lease, range, txn, watch};
use keyplane_core::raw::async_trait;
use keyplane_core::{
    Capabilities, Entry, LeaseGrant, LeaseId, LeaseInfo, RangeOptions, RangeResult, Result, Store,
    Txn, TxnResponse, WatchOptions, WatchStream,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// The in-process store: an ordered map with etcd's revisions, leases on tokio time, a
/// bounded event history for watches, and collections in the reserved layout.
///
/// Exact and deterministic: it is the reference every other backend is measured against.
/// Cloning gives another handle to the same store.
///
/// ```
/// use keyplane_core::{RangeOptions, Store, PutOptions};
/// use keyplane_mem::MemStore;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> keyplane_core::Result<()> {
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
                state: Mutex::new(State::new(
                    usize::try_from(config.history_retention).unwrap_or(usize::MAX),
                    config.watch_buffer,
                )),
                caps: config.capabilities(),
                wake: Arc::new(Notify::new()),
                expiry: Mutex::new(None),
            }),
        }
    }
}

#[async_trait]
impl Store for MemStore {
    fn capabilities(&self) -> &Capabilities {
        &self.shared.caps
    }

    async fn revision(&self) -> Result<i64> {
        range::revision(&self.shared)
    }

    async fn range(&self, opts: RangeOptions) -> Result<RangeResult> {
        range::range(&self.shared, &opts)
    }

    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        range::get(&self.shared, key)
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        txn::txn(&self.shared, &txn)
    }

    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        lease::grant(&self.shared, ttl)
    }

    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        lease::keep_alive(&self.shared, id)
    }

    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        lease::revoke(&self.shared, id)
    }

    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        lease::time_to_live(&self.shared, id)
    }

    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        watch::watch(&self.shared, opts)
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        watch::compact(&self.shared, revision)
    }
}
