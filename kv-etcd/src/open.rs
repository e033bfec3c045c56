//! [`EtcdStore`]: the public handle around the shared [`Core`], its constructors and
//! accessors.

use crate::config::EtcdConfig;
use crate::core::Core;
use keyplane_contract::Result;
use std::sync::Arc;

/// The keyplane-core store contract on etcd.
///
/// Transactions are etcd transactions, leases are etcd leases, watches are etcd watches with
/// previous values that reconnect and resume after a lost connection; sets, maps and lists use
/// keyplane-core's emulation layout inside one etcd transaction. Cloning is cheap and shares the
/// connection.
#[derive(Clone)]
pub struct EtcdStore {
    pub(crate) core: Arc<Core>,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore")
            .field("config", &self.core.config)
            .finish_non_exhaustive()
    }
}

impl EtcdStore {
    /// Opens the store on the cluster described by `config`: connects (and authenticates,
    /// when a user is set), then waits for a member to answer.
    ///
    /// # Errors
    /// `Config` for an invalid config; `Unavailable` when no endpoint answers;
    /// `Unauthorized` for bad credentials.
    pub async fn open(config: EtcdConfig) -> Result<Self> {
        let core = Core::connect(config).await?;
        // A first request proves that a member answers (connecting is lazy).
        crate::range::revision(&core).await?;
        Ok(EtcdStore {
            core: Arc::new(core),
        })
    }

    /// Opens the store of the URL form `etcd://host1:2379,host2:2379?namespace=...`
    /// (see [`EtcdConfig::from_url`]).
    ///
    /// # Errors
    /// As [`EtcdConfig::from_url`] and [`EtcdStore::open`].
    pub async fn from_url(url: &str) -> Result<Self> {
        Self::open(EtcdConfig::from_url(url)?).await
    }

    /// The config the store was opened with.
    pub fn config(&self) -> &EtcdConfig {
        &self.core.config
    }
}
