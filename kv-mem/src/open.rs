//! [`MemStore`]: the in-process reference backend's handle and its constructors.

use crate::config::MemConfig;
use crate::core::{Shared, State};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The in-process store: an ordered map with etcd's revisions, leases on tokio time, a
/// bounded event history for watches, and collections in the reserved layout.
///
/// Exact and deterministic: it is the reference every other backend is measured against.
/// Cloning gives another handle to the same store.
///
/// ```
/// use keyplane_contract::{RangeOptions, Store, PutOptions};
/// use keyplane_mem::MemStore;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> keyplane_contract::Result<()> {
/// let store = MemStore::new();
/// store.put(b"app/a", b"1", PutOptions::default()).await?;
/// let page = store.range(RangeOptions::prefix("app/")).await?;
/// assert_eq!(page.entries[0].version, 1);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct MemStore {
    pub(crate) shared: Arc<Shared>,
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
    /// An empty store with the default [`MemConfig`]: what `MemStore::open(MemConfig::default())`
    /// opens, without a runtime.
    pub fn new() -> Self {
        Self::with_checked(MemConfig::default())
    }

    /// Opens an empty store with `config`: async and fallible as every backend's `open`, so
    /// that code generic over backends opens each the same way.
    ///
    /// # Errors
    /// [`Config`](keyplane_contract::ErrorKind::Config) for a limit of zero (a store that could
    /// hold no history, no op per transaction, no value byte or no queued watch batch).
    pub async fn open(config: MemConfig) -> keyplane_contract::Result<Self> {
        config.validate()?;
        Ok(Self::with_checked(config))
    }

    fn with_checked(config: MemConfig) -> Self {
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
