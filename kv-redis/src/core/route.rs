//! Where an operation goes: on one server, to the store's one [`Core`]; on Redis Cluster, to
//! the core of the co-location group (hash tag) its keys name, refusing what would span
//! groups where the contract needs one revision sequence.

use crate::core::Core;
use crate::core::cluster::Groups;
use keyplane_contract::raw::escape_bytes;
use keyplane_contract::{Error, ErrorKind, KeyRange, Result, Txn};
use std::sync::Arc;

/// The cores a store's operations are sent to.
pub(crate) struct Router {
    /// The store's core: on one server, the only one; on a cluster, the one the groups'
    /// cores are made from (or, for a store of one group, that group's).
    pub(crate) core: Arc<Core>,
    /// On a cluster, the co-location groups.
    pub(crate) groups: Option<Arc<Groups>>,
    /// The hash tag of the one group a store from
    /// [`RedisStore::group`](crate::RedisStore::group) serves (its `core` is that group's).
    pub(crate) bound: Option<Vec<u8>>,
}

impl Router {
    /// The core that serves keys of `group` (`None`: the whole store): the store's own on one
    /// server; on a cluster, the group's, made on first use.
    ///
    /// # Errors
    /// On a cluster, `Unsupported` for an operation over the whole store (`group` `None`,
    /// named by `op`).
    pub(crate) fn core_of(&self, group: Option<&[u8]>, op: &'static str) -> Result<Arc<Core>> {
        let Some(groups) = &self.groups else {
            return Ok(Arc::clone(&self.core));
        };
        let Some(tag) = group else {
            return Err(on_cluster(op));
        };
        Ok(groups.core(tag))
    }

    /// The core of the group of `key` (on a cluster, its hash tag) for a single-key call
    /// (`get`, `put`, `delete`). The contract's front checked the key already (its rules
    /// and the internal prefix); this only routes it.
    ///
    /// # Errors
    /// `InvalidKey` on a cluster for a key without a hash tag (or, on a group's store,
    /// without the group's); nothing is sent.
    pub(crate) fn core_of_key(&self, key: &[u8]) -> Result<Arc<Core>> {
        if let Some(bound) = &self.bound {
            self.check_in_group(bound, key)?;
        }
        if self.groups.is_none() {
            return Ok(Arc::clone(&self.core));
        }
        let tag = group_tag(key).ok_or_else(|| untagged(key))?;
        self.core_of(Some(tag), "key")
    }

    /// Checks that `key` carries the hash tag `bound` of the group this store serves.
    fn check_in_group(&self, bound: &[u8], key: &[u8]) -> Result<()> {
        if group_tag(key) == Some(bound) {
            return Ok(());
        }
        Err(Error::invalid_key(
            "this store serves one co-location group: its keys carry the group's hash tag",
        )
        .with_context("key", escape_bytes(key))
        .with_context("group", escape_bytes(bound)))
    }

    /// On a cluster, where `range` reaches: the one group every key of it belongs to (a key
    /// with a hash tag, a prefix holding a whole hash tag, or an interval whose bounds share
    /// one), or `None` for a range that may span groups.
    ///
    /// # Errors
    /// `InvalidKey` for a single key without a hash tag.
    pub(crate) fn group_of_range(range: &KeyRange) -> Result<Option<&[u8]>> {
        let tag = group_tag(range.shared_prefix());
        match range {
            KeyRange::Key(key) if tag.is_none() => Err(untagged(key)),
            _ => Ok(tag),
        }
    }

    /// The core of the one group a transaction's keys belong to.
    ///
    /// # Errors
    /// On a cluster, `InvalidArgument` for a transaction over two groups or none, `InvalidKey`
    /// for a key without a hash tag; nothing is sent.
    pub(crate) fn core_of_txn(&self, txn: &Txn) -> Result<Arc<Core>> {
        if !self.core.config.is_cluster() {
            return Ok(Arc::clone(&self.core));
        }
        let mut group: Option<&[u8]> = None;
        for key in txn.keys() {
            if let Some(bound) = &self.bound {
                self.check_in_group(bound, key)?;
                continue;
            }
            let tag = group_tag(key).ok_or_else(|| untagged(key))?;
            match group {
                Some(g) if g != tag => {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        "on Redis Cluster a transaction stays within one co-location group \
                         (one hash tag); nothing was sent",
                    )
                    .with_context("group", escape_bytes(g))
                    .with_context("other_group", escape_bytes(tag)));
                }
                _ => group = Some(tag),
            }
        }
        if self.bound.is_some() {
            return Ok(Arc::clone(&self.core));
        }
        if group.is_none() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "on Redis Cluster a transaction needs a key, whose hash tag names its group",
            ));
        }
        self.core_of(group, "txn")
    }
}

/// The hash tag of `key`: what Redis Cluster hashes it by, when it has one.
fn group_tag(key: &[u8]) -> Option<&[u8]> {
    keyplane_contract::raw::redis_hash_tag(key)
}

/// The error of a key without a hash tag on a cluster.
fn untagged(key: &[u8]) -> Error {
    Error::invalid_key(
        "on Redis Cluster every key needs a hash tag (`{group}`) naming its co-location group; \
         a schema declares it beside the template",
    )
    .with_context("key", escape_bytes(key))
}

/// The error of an operation over the whole store, or over several groups, on a cluster.
pub(crate) fn on_cluster(op: &'static str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        "on Redis Cluster each co-location group (hash tag) counts its own revisions: \
         revisions, leases and compaction are each group's (RedisStore::group), and \
         reconciliation is not offered",
    )
    .with_context("op", op)
}
