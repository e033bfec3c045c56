//! What a backend implements: the [`Driver`] trait. Every [`Store`](crate::Store) call on a
//! driver first goes through the contract's front (`front.rs`), which checks the keys,
//! prefixes, options and transactions once; the driver receives them as [`Checked`] values,
//! which only the front can make, so a backend cannot be handed an unchecked request and has
//! nothing to re-validate.
//!
//! The trait lives in this module rather than at the crate root: a type is both a `Driver`
//! and a [`Store`](crate::Store), with methods of the same names, so only the code that
//! implements a driver should bring the trait into scope.

use crate::capabilities::Capabilities;
use crate::collections::{CollectionOp, CollectionResult};
use crate::entry::Entry;
use crate::error::Result;
use crate::lease::{LeaseGrant, LeaseId, LeaseInfo};
use crate::range::{KeyRange, RangeOptions, RangeResult};
use crate::status::ServerStatus;
use crate::store::{DeletePrefixResult, DeleteResult, PutOptions, PutResult};
use crate::txn::{OpResult, Txn, TxnOp, TxnResponse, unexpected};
use crate::watch::{WatchOptions, WatchStream};
use async_trait::async_trait;
use std::ops::Deref;
use std::time::Duration;

/// A request the contract's front has checked: its keys obey
/// [`validate_key`](crate::raw::validate_key) and the driver's own [`Driver::check_key`], its
/// prefixes [`validate_prefix`](crate::raw::validate_prefix), its values fit
/// [`Capabilities::max_value_bytes`], its options and transactions passed
/// [`RangeOptions::validate`], [`Txn::validate`] and [`WatchOptions::check_starts`].
///
/// Only the front makes one, so a [`Driver`] method that takes a `Checked` request can rely on
/// it without checking again. Read it through `Deref`, or take it apart with
/// [`into_inner`](Checked::into_inner).
///
/// Code outside the contract cannot make one, so it cannot hand a driver an unchecked key:
///
/// ```compile_fail
/// let key = keyplane_contract::driver::Checked(&b""[..]);
/// ```
///
/// ```compile_fail
/// let key = keyplane_contract::driver::Checked::new(&b""[..]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked<T>(T);

impl<T> Checked<T> {
    /// Marks `value` as checked. Only the front (and the driver defaults, which derive one
    /// checked request from another) may do this.
    pub(crate) fn new(value: T) -> Self {
        Checked(value)
    }

    /// The checked request itself.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Checked<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// The arguments of one [`Store::put`](crate::Store::put), as a [`Driver`] receives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PutRequest<'a> {
    /// The key written.
    pub key: &'a [u8],
    /// Its new value.
    pub value: &'a [u8],
    /// The lease and whether the previous entry is wanted.
    pub opts: PutOptions,
}

/// What a backend implements; every driver is a [`Store`](crate::Store) through the
/// contract's front, which checks each request once before the driver sees it.
///
/// The methods mirror [`Store`](crate::Store)'s and have the same contract (see there for
/// each one's errors), with the checked requests in place of the raw ones. A driver
/// implements the required ones; the single-key operations and collections are provided in
/// terms of [`Driver::range`] and [`Driver::txn`], and a driver overrides them where a native
/// call is cheaper.
///
/// A wrapper around another store (a layer) implements [`Store`](crate::Store) directly and
/// forwards: the store it wraps checks.
#[async_trait]
pub trait Driver: Send + Sync + 'static {
    /// The backend's features and limits; the front checks values and transaction sizes
    /// against them.
    fn capabilities(&self) -> &Capabilities;

    /// The backend's own rule for a key (or a prefix deleted), beyond the contract's: the
    /// front applies it to every key a call names. The default accepts every key; Redis
    /// refuses keys under its internal prefix.
    ///
    /// # Errors
    /// `InvalidKey` for a key the backend refuses.
    fn check_key(&self, key: &[u8]) -> Result<()> {
        let _ = key;
        Ok(())
    }

    /// See [`Store::revision`](crate::Store::revision).
    ///
    /// # Errors
    /// Backend errors.
    async fn revision(&self) -> Result<i64>;

    /// See [`Store::range`](crate::Store::range).
    ///
    /// # Errors
    /// Backend errors.
    async fn range(&self, opts: Checked<RangeOptions>) -> Result<RangeResult>;

    /// See [`Store::txn`](crate::Store::txn).
    ///
    /// # Errors
    /// `TxnConflict`, `LeaseNotFound`, `WrongType`; backend errors.
    async fn txn(&self, txn: Checked<Txn>) -> Result<TxnResponse>;

    /// See [`Store::lease_grant`](crate::Store::lease_grant).
    ///
    /// # Errors
    /// `InvalidArgument` for a zero TTL; backend errors.
    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant>;

    /// See [`Store::lease_keep_alive`](crate::Store::lease_keep_alive).
    ///
    /// # Errors
    /// `LeaseNotFound`; backend errors.
    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration>;

    /// See [`Store::lease_revoke`](crate::Store::lease_revoke).
    ///
    /// # Errors
    /// `LeaseNotFound`; backend errors.
    async fn lease_revoke(&self, id: LeaseId) -> Result<()>;

    /// See [`Store::lease_time_to_live`](crate::Store::lease_time_to_live).
    ///
    /// # Errors
    /// `LeaseNotFound`; backend errors.
    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo>;

    /// See [`Store::lease_list`](crate::Store::lease_list).
    ///
    /// # Errors
    /// Backend errors.
    async fn lease_list(&self) -> Result<Vec<LeaseId>>;

    /// See [`Store::watch`](crate::Store::watch).
    ///
    /// # Errors
    /// `Compacted`; backend errors.
    async fn watch(&self, opts: Checked<WatchOptions>) -> Result<WatchStream>;

    /// See [`Store::compact`](crate::Store::compact).
    ///
    /// # Errors
    /// `InvalidArgument` for a revision in the future; `Compacted`; backend errors.
    async fn compact(&self, revision: i64) -> Result<()>;

    /// See [`Store::server_status`](crate::Store::server_status).
    ///
    /// # Errors
    /// Backend errors.
    async fn server_status(&self) -> Result<ServerStatus>;

    /// See [`Store::get`](crate::Store::get).
    ///
    /// # Errors
    /// Backend errors.
    async fn get(&self, key: Checked<&[u8]>) -> Result<Option<Entry>> {
        // A checked key is a checked single-key range.
        let opts = RangeOptions::new(KeyRange::Key(key.to_vec()));
        let mut page = self.range(Checked::new(opts)).await?;
        Ok(page.entries.pop())
    }

    /// See [`Store::put`](crate::Store::put).
    ///
    /// # Errors
    /// `LeaseNotFound`; backend errors.
    async fn put(&self, put: Checked<PutRequest<'_>>) -> Result<PutResult> {
        let PutRequest { key, value, opts } = put.into_inner();
        let mut ops = Vec::with_capacity(2);
        if opts.prev {
            ops.push(TxnOp::get(key));
        }
        ops.push(TxnOp::Put {
            key: key.to_vec(),
            value: value.to_vec(),
            lease: opts.lease,
        });
        // A checked key and value make a valid branch: one read and one write of the key.
        let mut resp = self.txn(Checked::new(Txn::new().and_then(ops))).await?;
        let prev = match resp.results.first_mut() {
            Some(OpResult::Get(prev)) if opts.prev => prev.take(),
            _ => None,
        };
        Ok(PutResult {
            revision: resp.revision,
            prev,
        })
    }

    /// See [`Store::delete`](crate::Store::delete).
    ///
    /// # Errors
    /// Backend errors.
    async fn delete(&self, key: Checked<&[u8]>) -> Result<DeleteResult> {
        let txn = Txn::new().and_then([TxnOp::get(*key), TxnOp::delete(*key)]);
        let resp = self.txn(Checked::new(txn)).await?;
        match resp.results.into_iter().next() {
            Some(OpResult::Get(prev)) => Ok(DeleteResult {
                revision: resp.revision,
                prev,
            }),
            other => Err(unexpected("delete", other)),
        }
    }

    /// See [`Store::delete_prefix`](crate::Store::delete_prefix).
    ///
    /// # Errors
    /// Backend errors.
    async fn delete_prefix(&self, prefix: Checked<&[u8]>) -> Result<DeletePrefixResult> {
        let txn = Txn::new().and_then([TxnOp::delete_prefix(*prefix)]);
        let resp = self.txn(Checked::new(txn)).await?;
        match resp.results.into_iter().next() {
            Some(OpResult::Delete { deleted }) => Ok(DeletePrefixResult {
                revision: resp.revision,
                deleted,
            }),
            other => Err(unexpected("delete_prefix", other)),
        }
    }

    /// See [`Store::collection`](crate::Store::collection).
    ///
    /// # Errors
    /// `WrongType`; backend errors.
    async fn collection(&self, op: Checked<CollectionOp>) -> Result<CollectionResult> {
        let txn = Txn::new().and_then([TxnOp::Collection(op.into_inner())]);
        let resp = self.txn(Checked::new(txn)).await?;
        match resp.results.into_iter().next() {
            Some(OpResult::Collection(result)) => Ok(result),
            other => Err(unexpected("collection", other)),
        }
    }
}
