//! Registering an instance under a lease kept alive in the background, and deregistering it.

use super::error::{RegistryError, Result};
use super::keys::InstanceId;
use super::values::{InstanceConfig, InstanceData, InstanceStatus};
use keyplane_core::keyspace::TypedStore;
use keyplane_core::recipes::LeaseKeeper;
use keyplane_core::{ErrorKind, LeaseId};
use std::time::Duration;

/// What an instance registers: its data and status, and optionally its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewInstance {
    /// The `data` file.
    pub data: InstanceData,
    /// The `status` file.
    pub status: InstanceStatus,
    /// The `config` file, when the instance brings one.
    pub config: Option<InstanceConfig>,
}

/// How [`register_with`] writes an instance's files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegisterOptions {
    /// Write the `config` file without the lease, so that it outlives the registration (a
    /// deregistration, a crash, an eviction of data and status by expiry): an operator's
    /// configuration of the address survives restarts, and the next registration at the same
    /// address finds it. `false` by default: the config is on the lease, as data and status
    /// are, and goes with them. A kept config is not an instance: discovery lists an
    /// instance only while its `data` file exists; [`evict_instance`](super::evict_instance)
    /// removes a kept config too.
    pub keep_config: bool,
}

/// A live registration: the instance's files attached to a lease that a [`LeaseKeeper`]
/// renews every third of its TTL.
///
/// [`Registration::deregister`] revokes the lease, deleting the files at once. Dropping the
/// registration stops the renewals, so the files disappear when the lease expires: that is
/// what happens when the process dies, and watchers see the instance go down either way.
#[derive(Debug)]
pub struct Registration {
    store: TypedStore,
    instance: InstanceId,
    keeper: LeaseKeeper,
}

/// Registers `instance` with a lease of `ttl` (rounded up to the backend's granularity) kept
/// alive in the background.
///
/// One transaction writes the `data`, `status` and (if given) `config` files attached to the
/// lease, provided the service's `info` file exists. A registration already at the same
/// address is replaced: the restarted instance owns the files, and the old lease no longer
/// deletes them when it ends.
///
/// # Errors
/// [`RegistryError::Invalid`] for a bad value and [`RegistryError::UnknownService`] when the
/// service is not defined (nothing is written; the lease is revoked);
/// [`RegistryError::Store`].
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use keyplane_schemas::registry::*;
/// use std::{sync::Arc, time::Duration};
///
/// let store = keyplane_core::keyspace::TypedStore::new(Arc::new(keyplane_mem::MemStore::new()));
/// let group = GroupName::new("Common")?;
/// let service = ServiceId::new(group.clone(), ServiceName::new("VerifyCodeService")?);
/// define_group(&store, &group, &GroupInfo { description: "shared services".into() }).await?;
/// define_service(&store, &service, &ServiceInfo { description: "codes".into(), grpc_service: None }).await?;
///
/// let instance = service.instance("192.168.0.1:11080".parse()?);
/// let new = NewInstance {
///     data: InstanceData { version: "1.0.0".into(), http_port: None, secure_grpc_port: None,
///                          started_at: 0, metadata: Default::default() },
///     status: InstanceStatus { state: InstanceState::Serving, since: 0 },
///     config: None,
/// };
/// let registration = register(&store, &instance, &new, Duration::from_secs(10)).await?;
/// assert_eq!(discover(&store, &service).await?.instances.len(), 1);
/// registration.deregister().await?;
/// assert!(discover(&store, &service).await?.instances.is_empty());
/// # Ok(()) }
/// ```
pub async fn register(
    store: &TypedStore,
    instance: &InstanceId,
    new: &NewInstance,
    ttl: Duration,
) -> Result<Registration> {
    register_with(store, instance, new, ttl, RegisterOptions::default()).await
}

/// [`register`] with [`RegisterOptions`]: with `keep_config`, the `config` file is written
/// without the lease and outlives the registration.
///
/// # Errors
/// As [`register`].
pub async fn register_with(
    store: &TypedStore,
    instance: &InstanceId,
    new: &NewInstance,
    ttl: Duration,
    options: RegisterOptions,
) -> Result<Registration> {
    new.data
        .validate()
        .map_err(|reason| RegistryError::Invalid {
            what: "instance data",
            reason,
        })?;
    if let Some(config) = &new.config {
        config.validate().map_err(|reason| RegistryError::Invalid {
            what: "instance config",
            reason,
        })?;
    }
    let keeper = LeaseKeeper::grant(store.store().clone(), ttl).await?;
    let lease = keeper.id();
    let mut txn = store.txn();
    txn.when_exists(&instance.service.info_key())
        .put_leased(&instance.data_key(), &new.data, lease)
        .put_leased(&instance.status_key(), &new.status, lease);
    if let Some(config) = &new.config {
        if options.keep_config {
            txn.put(&instance.config_key(), config);
        } else {
            txn.put_leased(&instance.config_key(), config, lease);
        }
    }
    let outcome = match txn.commit().await {
        Ok(outcome) => outcome,
        Err(e) => {
            let _ = keeper.revoke().await;
            return Err(e.into());
        }
    };
    if !outcome.succeeded {
        let _ = keeper.revoke().await;
        return Err(RegistryError::UnknownService(instance.service.clone()));
    }
    Ok(Registration {
        store: store.clone(),
        instance: instance.clone(),
        keeper,
    })
}

impl Registration {
    /// The registered instance.
    pub fn instance(&self) -> &InstanceId {
        &self.instance
    }

    /// The lease the instance's files are attached to.
    pub fn lease(&self) -> LeaseId {
        self.keeper.id()
    }

    /// Whether the lease has been lost (expired or revoked elsewhere): the instance is no
    /// longer registered.
    pub fn is_lost(&self) -> bool {
        self.keeper.is_lost()
    }

    /// Resolves when the lease is lost, with the reason.
    pub async fn lost(&self) -> keyplane_core::Error {
        self.keeper.lost().await
    }

    /// Rewrites the instance's status, still attached to the lease, provided the data file is
    /// still this registration's (same lease).
    ///
    /// # Errors
    /// [`RegistryError::NotRegistered`] when the files are gone or belong to another lease
    /// now (nothing is written); [`RegistryError::Store`].
    pub async fn set_status(&self, status: &InstanceStatus) -> Result<i64> {
        let lease = self.keeper.id();
        let outcome = self
            .store
            .txn()
            .when_lease(&self.instance.data_key(), Some(lease))
            .put_leased(&self.instance.status_key(), status, lease)
            .commit()
            .await?;
        if !outcome.succeeded {
            return Err(RegistryError::NotRegistered(self.instance.clone()));
        }
        Ok(outcome.revision)
    }

    /// Deregisters the instance: revokes the lease, deleting its files in one step (watchers
    /// see the instance go down). Files that another registration has taken over stay.
    ///
    /// # Errors
    /// [`RegistryError::Store`]; a lease that has already ended is not an error (its files
    /// are already gone).
    pub async fn deregister(self) -> Result<()> {
        match self.keeper.revoke().await {
            Err(e) if e.kind() != ErrorKind::LeaseNotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}
