//! Node registration under a lease kept alive in the background.

use super::error::CronixError;
use super::keys::{NodeKey, NodesDir};
use super::values::NodeInfo;
use crate::leased::commit_leased;
use keyplane_core::keyspace::{Key, ListOptions, Skipped, TypedStore, Versioned};
use keyplane_core::recipes::{Hold, LeaseHeld, LeaseKeeper};
use keyplane_core::{ErrorKind, Result};
use std::time::Duration;
use uuid::Uuid;

/// A registered node: `/Cronix/node/<uuid>` attached to a lease that a [`LeaseKeeper`] renews.
///
/// [`NodeRegistration::deregister`] is the normal way offline (the key is deleted at once);
/// when the node fails, renewals stop and the key goes when the lease expires. The lease can
/// also carry the node's process keys ([`record_process`](super::record_process)), so that
/// they vanish with the node.
#[derive(Debug)]
///
/// Its key, lease, fencing revision (the node key's create revision), fence and loss come
/// from [`LeaseHeld`].
pub struct NodeRegistration {
    node: Uuid,
    keeper: LeaseKeeper,
    hold: Hold,
}

impl LeaseHeld for NodeRegistration {
    fn hold(&self) -> &Hold {
        &self.hold
    }
}

/// Registers a node under a lease of `ttl` (rounded up to the backend's granularity): one
/// transaction creates `/Cronix/node/<info.uuid>` attached to the lease, provided no node of
/// that UUID is registered.
///
/// # Errors
/// [`CronixError::NodeExists`] (nothing is written, the lease is revoked);
/// The store's errors.
pub async fn register_node(
    store: &TypedStore,
    info: &NodeInfo,
    ttl: Duration,
) -> Result<NodeRegistration> {
    let keeper = LeaseKeeper::grant(store.store().clone(), ttl).await?;
    let key = NodeKey { node: info.uuid };
    let mut txn = store.txn();
    txn.when_absent(&key).put_leased(&key, info, keeper.id());
    let (keeper, revision) = commit_leased(keeper, &mut txn, || {
        CronixError::NodeExists(info.uuid).into()
    })
    .await?;
    Ok(NodeRegistration {
        node: info.uuid,
        hold: keeper.hold(key.encode(), revision),
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
/// [`CronixError::NodeExists`] as above (nothing written); the store's errors.
pub async fn take_over_node(
    store: &TypedStore,
    info: &NodeInfo,
    ttl: Duration,
) -> Result<NodeRegistration> {
    let key = NodeKey { node: info.uuid };
    if let Some(old) = store.get_versioned(&key).await? {
        match old.lease {
            Some(lease) => match store.store().lease_revoke(lease).await {
                Err(e) if e.kind() != ErrorKind::LeaseNotFound => return Err(e),
                _ => {}
            },
            // A node key without a lease (another program's): replace it only if unchanged.
            None => {
                let mut txn = store.txn();
                txn.when_mod_revision(&key, keyplane_core::CompareOp::Equal, old.mod_revision)
                    .delete(&key);
                if !txn.commit().await?.succeeded {
                    return Err(CronixError::NodeExists(info.uuid).into());
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
    /// The store's errors; a lease that already ended is not an error.
    pub async fn deregister(self) -> Result<()> {
        match self.keeper.revoke().await {
            Err(e) if e.kind() != ErrorKind::LeaseNotFound => Err(e),
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
/// The store's errors.
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
