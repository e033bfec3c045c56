//! `EtcdStore`: the public handle around the shared [`Core`], its constructors and accessors,
//! and the `Store` impl, whose every method is one call into an operation module.

use crate::config::EtcdConfig;
use crate::core::Core;
use keyplane_core::{
    Capabilities, Entry, LeaseGrant, LeaseId, LeaseInfo, PutOptions, PutResult, RangeOptions,
    RangeResult, Result, Store, Txn, TxnResponse, WatchOptions, WatchStream,
};
use std::sync::Arc;
use std::time::Duration;

/// The keyplane-core store contract on etcd.
///
/// Transactions are etcd transactions, leases are etcd leases, watches are etcd watches with
/// previous values that reconnect and resume after a lost connection; sets, maps and lists use
/// keyplane-core's emulation layout inside one etcd transaction. Cloning is cheap and shares the
/// connection.
#[derive(Clone)]
pub struct EtcdStore {
    core: Arc<Core>,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore")
            .field("config", &self.core.config)
            .finish_non_exhaustive()
    }
}

impl EtcdStore {
    /// Connects to the cluster described by `config` (and authenticates, when a user is set).
    ///
    /// # Errors
    /// `Config` for an invalid config; `Unavailable` when no endpoint answers;
    /// `Unauthorized` for bad credentials.
    pub async fn connect(config: EtcdConfig) -> Result<Self> {
        let core = Core::connect(config).await?;
        // A first request proves that a member answers (connecting is lazy).
        crate::range::revision(&core).await?;
        Ok(EtcdStore {
            core: Arc::new(core),
        })
    }

    /// Connects from the URL form `etcd://host1:2379,host2:2379?namespace=...`
    /// (see [`EtcdConfig::from_url`]).
    ///
    /// # Errors
    /// As [`EtcdConfig::from_url`] and [`EtcdStore::connect`].
    pub async fn from_url(url: &str) -> Result<Self> {
        Self::connect(EtcdConfig::from_url(url)?).await
    }

    /// The config the store was connected with.
    pub fn config(&self) -> &EtcdConfig {
        &self.core.config
    }
}

#[keyplane_core::raw::async_trait]
impl Store for EtcdStore {
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

    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        // Transactions with collection ops or compares take the optimistic emulation path.
        if crate::collections::has_collections(&txn) {
            crate::collections::txn(&self.core, txn).await
        } else {
            crate::txn::txn(&self.core, txn).await
        }
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
