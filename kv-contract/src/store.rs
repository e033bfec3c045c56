//! The `Store` trait: the one async contract every backend implements.

use crate::capabilities::Capabilities;
use crate::collections::{CollectionOp, CollectionResult};
use crate::entry::Entry;
use crate::error::Result;
use crate::lease::{LeaseGrant, LeaseId, LeaseInfo};
use crate::range::{KeyRange, RangeOptions, RangeResult};
use crate::status::ServerStatus;
use crate::txn::{OpResult, Txn, TxnOp, unexpected};
use crate::watch::{WatchOptions, WatchPosition, WatchStream};
use async_trait::async_trait;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Options of a single [`Store::put`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PutOptions {
    /// Attach the key to this lease.
    pub lease: Option<LeaseId>,
    /// Return the previous entry.
    pub prev: bool,
}

impl PutOptions {
    /// Attach the key to `lease`.
    pub fn lease(mut self, lease: LeaseId) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Return the previous entry in [`PutResult::prev`].
    pub fn with_prev(mut self) -> Self {
        self.prev = true;
        self
    }
}

/// The outcome of a [`Store::put`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    /// The revision of the write.
    pub revision: i64,
    /// The previous entry, when asked for and the key existed.
    pub prev: Option<Entry>,
}

/// The outcome of a [`Store::delete`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteResult {
    /// The store revision after the delete (the current one when there was nothing to
    /// delete: no revision is created then).
    pub revision: i64,
    /// The plain key's entry before the delete, when it existed.
    pub prev: Option<Entry>,
}

impl DeleteResult {
    /// Whether the plain key existed.
    pub fn existed(&self) -> bool {
        self.prev.is_some()
    }
}

/// The outcome of a [`Store::delete_prefix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeletePrefixResult {
    /// The store revision after the delete (the current one when there was nothing to
    /// delete: no revision is created then).
    pub revision: i64,
    /// How many keys were deleted (each collection counts as one key).
    pub deleted: u64,
}

/// A hierarchical key-value store: the contract every backend serves in full.
///
/// A backend implements [`Driver`](crate::driver::Driver) rather than this trait: every
/// driver is a `Store` through the contract's front, which checks each request once before
/// the driver sees it. A wrapper around another store (a layer) implements `Store` itself
/// and forwards, since the store it wraps checks.
///
/// Keys and values are bytes; keys obey [`validate_key`](crate::raw::validate_key). The store has
/// one revision that every write transaction bumps once. The trait is object safe:
/// `Arc<dyn Store>` swaps backends at run time.
///
/// Only [`Store::capabilities`], [`Store::range`], [`Store::txn`], the lease methods,
/// [`Store::watch`], [`Store::compact`], [`Store::revision`] and [`Store::server_status`] are
/// required; the single-key operations and collections are provided in terms of
/// [`Store::txn`], and wrappers override them to forward each to its own. The required
/// methods have no default on purpose: a wrapper that forgot to forward one would otherwise
/// answer for the store it wraps with a made-up value, and the compiler finds every such
/// wrapper instead.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The backend's features and limits.
    fn capabilities(&self) -> &Capabilities;

    /// The store's current revision.
    ///
    /// # Errors
    /// `Unavailable` when the backend cannot be reached.
    async fn revision(&self) -> Result<i64>;

    /// One page of the keys in a range, ascending.
    ///
    /// # Errors
    /// `InvalidKey` / `InvalidArgument` for bad options; backend errors.
    async fn range(&self, opts: RangeOptions) -> Result<RangeResult>;

    /// Runs a transaction atomically. It is validated first
    /// ([`Txn::validate`]) and never split.
    ///
    /// # Errors
    /// `TxnTooLarge`, `TxnConflict`, `InvalidKey`, `InvalidValue`, `LeaseNotFound` (a put with
    /// an unknown lease: nothing is written), `WrongType`; backend errors.
    async fn txn(&self, txn: Txn) -> Result<crate::TxnResponse>;

    /// Grants a lease of at least `ttl` (rounded up to the backend's granularity).
    ///
    /// # Errors
    /// `InvalidArgument` for a zero TTL.
    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant>;

    /// Renews a lease to its granted TTL; returns that TTL.
    ///
    /// # Errors
    /// `LeaseNotFound` when it was revoked or has expired.
    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration>;

    /// Revokes a lease, deleting every key attached to it (watchers see the deletes).
    ///
    /// # Errors
    /// `LeaseNotFound` when it was revoked or has expired.
    async fn lease_revoke(&self, id: LeaseId) -> Result<()>;

    /// What the store knows of a live lease.
    ///
    /// # Errors
    /// `LeaseNotFound` when it was revoked or has expired.
    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo>;

    /// The IDs of every live lease of the store, ascending, as `etcdctl lease list` shows
    /// them: IDs only, since a lease's TTL and keys cost a [`Store::lease_time_to_live`]
    /// each on etcd. A lease whose deadline has passed is not listed, even before the backend
    /// has deleted its keys (on etcd, whose leader revokes expired leases itself, the list
    /// is the server's, which drops a lease as soon as the leader revokes it, within about
    /// half a second of its deadline).
    ///
    /// # Errors
    /// `Unsupported` on a whole Redis Cluster store, whose leases are each group's (a store
    /// of one group lists its group's); backend errors.
    async fn lease_list(&self) -> Result<Vec<LeaseId>>;

    /// Watches a key or prefix from a revision.
    ///
    /// # Errors
    /// `InvalidKey` for a bad range; `Compacted` when the start revision is no longer retained
    /// (either here or as the stream's first item).
    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream>;

    /// Discards the history of revisions before `revision`: watches from an earlier revision
    /// then fail with `Compacted`.
    ///
    /// # Errors
    /// `InvalidArgument` for a revision in the future; `Compacted` when already compacted
    /// past it.
    async fn compact(&self, revision: i64) -> Result<()>;

    /// What the server behind the store says about itself: its version, its members and
    /// their roles, its data size (see [`ServerStatus`]); an embedded store answers with no
    /// version and no members. For operators (`kvctl status`), not for the data path: it
    /// may cost a few round trips.
    ///
    /// # Errors
    /// `Unavailable` when the server cannot be reached; backend errors.
    async fn server_status(&self) -> Result<ServerStatus>;

    /// The entry of one key.
    ///
    /// # Errors
    /// `InvalidKey`; backend errors.
    async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        crate::raw::validate_key(key)?;
        let mut page = self
            .range(RangeOptions::new(crate::KeyRange::Key(key.to_vec())))
            .await?;
        Ok(page.entries.pop())
    }

    /// Writes a value.
    ///
    /// # Errors
    /// `InvalidKey`, `InvalidValue`, `LeaseNotFound`; backend errors.
    async fn put(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<PutResult> {
        let mut ops = Vec::with_capacity(2);
        if opts.prev {
            ops.push(TxnOp::get(key));
        }
        ops.push(TxnOp::Put {
            key: key.to_vec(),
            value: value.to_vec(),
            lease: opts.lease,
        });
        let mut resp = self.txn(Txn::new().and_then(ops)).await?;
        let prev = match resp.results.first_mut() {
            Some(OpResult::Get(prev)) if opts.prev => prev.take(),
            _ => None,
        };
        Ok(PutResult {
            revision: resp.revision,
            prev,
        })
    }

    /// Deletes a key (and any collection at it); returns the write's revision and the
    /// previous entry of the plain key.
    ///
    /// # Errors
    /// `InvalidKey`; backend errors.
    async fn delete(&self, key: &[u8]) -> Result<DeleteResult> {
        let resp = self
            .txn(Txn::new().and_then([TxnOp::get(key), TxnOp::delete(key)]))
            .await?;
        match resp.results.into_iter().next() {
            Some(OpResult::Get(prev)) => Ok(DeleteResult {
                revision: resp.revision,
                prev,
            }),
            other => Err(unexpected("delete", other)),
        }
    }

    /// Deletes every key (and collection) under a non-empty prefix; returns the write's
    /// revision and how many keys went.
    ///
    /// # Errors
    /// `InvalidKey` for an empty prefix; backend errors.
    async fn delete_prefix(&self, prefix: &[u8]) -> Result<DeletePrefixResult> {
        crate::raw::validate_prefix(prefix, false)?;
        let resp = self
            .txn(Txn::new().and_then([TxnOp::delete_prefix(prefix)]))
            .await?;
        match resp.results.into_iter().next() {
            Some(OpResult::Delete { deleted }) => Ok(DeletePrefixResult {
                revision: resp.revision,
                deleted,
            }),
            other => Err(unexpected("delete_prefix", other)),
        }
    }

    /// Runs one collection operation.
    ///
    /// # Errors
    /// `InvalidKey`, `InvalidValue`, `WrongType`; backend errors.
    async fn collection(&self, op: CollectionOp) -> Result<CollectionResult> {
        let resp = self
            .txn(Txn::new().and_then([TxnOp::Collection(op)]))
            .await?;
        match resp.results.into_iter().next() {
            Some(OpResult::Collection(result)) => Ok(result),
            other => Err(unexpected("collection", other)),
        }
    }
}

/// The boxed future of every [`Store`] method (the shape `async_trait` gives them).
pub(crate) type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// An `Arc` of a store is the store: `Arc<dyn Store>` and `Arc<MemStore>` can be wrapped in
/// layers (keyplane-core's `layer`) and passed wherever a `Store` is expected. Each method hands back
/// the inner store's own future (no second allocation per call).
impl<S: Store + ?Sized> Store for Arc<S> {
    fn capabilities(&self) -> &Capabilities {
        (**self).capabilities()
    }
    fn revision<'s, 'f>(&'s self) -> StoreFuture<'f, i64>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).revision()
    }
    fn range<'s, 'f>(&'s self, opts: RangeOptions) -> StoreFuture<'f, RangeResult>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).range(opts)
    }
    fn txn<'s, 'f>(&'s self, txn: Txn) -> StoreFuture<'f, crate::TxnResponse>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).txn(txn)
    }
    fn lease_grant<'s, 'f>(&'s self, ttl: Duration) -> StoreFuture<'f, LeaseGrant>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).lease_grant(ttl)
    }
    fn lease_keep_alive<'s, 'f>(&'s self, id: LeaseId) -> StoreFuture<'f, Duration>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).lease_keep_alive(id)
    }
    fn lease_revoke<'s, 'f>(&'s self, id: LeaseId) -> StoreFuture<'f, ()>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).lease_revoke(id)
    }
    fn lease_time_to_live<'s, 'f>(&'s self, id: LeaseId) -> StoreFuture<'f, LeaseInfo>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).lease_time_to_live(id)
    }
    fn lease_list<'s, 'f>(&'s self) -> StoreFuture<'f, Vec<LeaseId>>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).lease_list()
    }
    fn server_status<'s, 'f>(&'s self) -> StoreFuture<'f, ServerStatus>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).server_status()
    }
    fn watch<'s, 'f>(&'s self, opts: WatchOptions) -> StoreFuture<'f, WatchStream>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).watch(opts)
    }
    fn compact<'s, 'f>(&'s self, revision: i64) -> StoreFuture<'f, ()>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).compact(revision)
    }
    fn get<'s, 'k, 'f>(&'s self, key: &'k [u8]) -> StoreFuture<'f, Option<Entry>>
    where
        's: 'f,
        'k: 'f,
        Self: 'f,
    {
        (**self).get(key)
    }
    fn put<'s, 'k, 'v, 'f>(
        &'s self,
        key: &'k [u8],
        value: &'v [u8],
        opts: PutOptions,
    ) -> StoreFuture<'f, PutResult>
    where
        's: 'f,
        'k: 'f,
        'v: 'f,
        Self: 'f,
    {
        (**self).put(key, value, opts)
    }
    fn delete<'s, 'k, 'f>(&'s self, key: &'k [u8]) -> StoreFuture<'f, DeleteResult>
    where
        's: 'f,
        'k: 'f,
        Self: 'f,
    {
        (**self).delete(key)
    }
    fn delete_prefix<'s, 'k, 'f>(&'s self, prefix: &'k [u8]) -> StoreFuture<'f, DeletePrefixResult>
    where
        's: 'f,
        'k: 'f,
        Self: 'f,
    {
        (**self).delete_prefix(prefix)
    }
    fn collection<'s, 'f>(&'s self, op: CollectionOp) -> StoreFuture<'f, CollectionResult>
    where
        's: 'f,
        Self: 'f,
    {
        (**self).collection(op)
    }
}

// Here rather than beside `WatchPosition`, so that the vocabulary of watches does not depend
// on the `Store` trait that uses it.
impl WatchPosition {
    /// Where a watch of `range` opened now starts: after the store's revision, or on a store
    /// sharded into groups, which has none, after each group's (read by a count of the
    /// range).
    ///
    /// # Errors
    /// The store's errors.
    pub async fn now(store: &dyn Store, range: &KeyRange) -> Result<Self> {
        if store.capabilities().sharding == crate::Sharding::Unsharded {
            return Ok(WatchPosition {
                next: Some(store.revision().await? + 1),
                groups: None,
            });
        }
        let read = store
            .range(RangeOptions::new(range.clone()).count_only())
            .await?;
        Ok(WatchPosition::after_range(&read))
    }
}
