//! Node registration under a lease kept alive in the background.

use super::error::{CronixError, Result};
use super::keys::{NodeKey, NodesDir};
use super::values::NodeInfo;
use keyplane_core::keyspace::{ListOptions, Skipped, TypedStore, Versioned};
use keyplane_core::recipes::LeaseKeeper;
use keyplane_core::{ErrorKind, LeaseId};
use std::time::Duration;
use uuid::Uuid;

/// A registered node: `/Cronix/node/<uuid>` attached to a lease that a [`LeaseKeeper`] renews.
///
/// [`NodeRegistration::deregister`] is the normal way offline (the key is deleted at once);
/// when the node fails, renewals stop and the key goes when the lease expires. The lease can
/// also carry the node's process keys ([`record_process`](super::record_process)), so that
/// they vanish with the node.
#[derive(Debug)]
pub struct NodeRegistration {
    node: Uuid,
    keeper: LeaseKeeper,
}

/// Registers a node under a lease of `ttl` (rounded up to the backend's granularity): one
/// transaction creates `/Cronix/node/<info.uuid>` attached to the lease, provided no node of
/// that UUID is registered.
///
/// # Errors
/// [`CronixError::NodeExists`] (nothing is written, the lease is revoked);
/// [`CronixError::Store`].
pub async fn register_node(
    store: &TypedStore,
    info: &NodeInfo,
    ttl: Duration,
) -> Result<NodeRegistration> {
    let keeper = LeaseKeeper::grant(store.store().clone(), ttl).await?;
    let key = NodeKey { node: info.uuid };
    let mut txn = store.txn();
    txn.when_absent(&key).put_leased(&key, info, keeper.id());
    let succeeded = match txn.commit().await {
        Ok(outcome) => outcome.succeeded,
        Err(e) => {
            let _ = keeper.revoke().await;
            return Err(e.into());
        }
    };
    if !succeeded {
        let _ = keeper.revoke().await;
        return Err(CronixError::NodeExists(info.uuid));
    }
    Ok(NodeRegistration {
        node: info.uuid,
        keeper,
    })
}

/// Registers a node that restarted with its old UUID while its old registration is still
/// alive (the previous process died without deregistering, and its lease has not expired
/// yet): the old lease is revoked, which deletes the old node key and every key attached to
/// it (its process keys), then the node registers as [`register_node`] does, without
/// waiting for the expiry. With no old registration it is [`register_node`].
///
/// The registration taken over is the one read: if another process registers the UUID in
/// between, this one fails with [`CronixError::NodeExists`] rather than revoke it too.
///
/// # Errors
/// [`CronixError::NodeExists`] as above (nothing written); [`CronixError::Store`].
pub async fn take_over_node(
    store: &TypedStore,
    info: &NodeInfo,
    ttl: Duration,
) -> Result<NodeRegistration> {
    let key = NodeKey { node: info.uuid };
    if let Some(old) = store.get_versioned(&key).await? {
        match old.lease {
            Some(lease) => match store.store().lease_revoke(lease).await {
                Err(e) if e.kind() != ErrorKind::LeaseNotFound => return Err(e.into()),
                _ => {}
            },
            // A node key without a lease (another program's): replace it only if unchanged.
            None => {
                let mut txn = store.txn();
                txn.when_mod_revision(&key, keyplane_core::CompareOp::Equal, old.mod_revision)
                    .delete(&key);
                if !txn.commit().await?.succeeded {
                    return Err(CronixError::NodeExists(info.uuid));
                }
            }
        }
    }
    register_node(store, info, ttl).await
}

impl NodeRegistration {
    /// The node's UUID.
    pub fn node(&self) -> Uuid {
        self.node
    }

    /// The node's lease.
    pub fn lease(&self) -> LeaseId {
        self.keeper.id()
    }

    /// Whether the lease has been lost: the node is no longer registered.
    pub fn is_lost(&self) -> bool {
        self.keeper.is_lost()
    }

    /// Resolves when the lease is lost, with the reason.
    pub async fn lost(&self) -> keyplane_core::Error {
        self.keeper.lost().await
    }

    /// How many times the node's lease has been renewed (see [`LeaseKeeper::renewals`]).
    pub fn renewals(&self) -> u64 {
        self.keeper.renewals()
    }

    /// Waits until the node's lease has been renewed at least `n` times, or is lost.
    ///
    /// # Errors
    /// The loss, when the lease is lost first.
    pub async fn renewed(&self, n: u64) -> keyplane_core::Result<()> {
        self.keeper.renewed(n).await
    }

    /// Takes the node offline: revokes its lease, deleting its node key and every other key
    /// attached to the lease.
    ///
    /// # Errors
    /// [`CronixError::Store`]; a lease that already ended is not an error.
    pub async fn deregister(self) -> Result<()> {
        match self.keeper.revoke().await {
            Err(e) if e.kind() != ErrorKind::LeaseNotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}

/// Every registered node, read page by page at one revision: the nodes with their
/// revisions, and the node keys whose key or JSON did not decode (reported, not dropped).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeListing {
    /// The nodes, by UUID, with the revisions of their keys.
    pub nodes: Vec<Versioned<NodeInfo>>,
    /// The node keys that did not parse or decode, with the reason.
    pub unreadable: Vec<Skipped>,
    /// The revision the listing was read at.
    pub revision: i64,
}

impl NodeListing {
    /// The nodes' infos alone.
    pub fn infos(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes.iter().map(|v| &v.value)
    }
}

/// Every registered node, read page by page at one revision.
///
/// # Errors
/// [`CronixError::Store`].
pub async fn list_nodes(store: &TypedStore) -> Result<NodeListing> {
    let mut listing = NodeListing {
        nodes: Vec::new(),
        unreadable: Vec::new(),
        revision: 0,
    };
    let mut opts = ListOptions::limit(256);
    loop {
        let page = store.list(&NodesDir {}, opts.clone()).await?;
        listing.revision = page.revision;
        listing
            .nodes
            .extend(page.items.into_iter().map(|(_, info)| info));
        listing.unreadable.extend(page.skipped);
        match page.next {
            Some(next) => opts = ListOptions::limit(256).after(next),
            None => return Ok(listing),
        }
    }
}
