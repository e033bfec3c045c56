//! The contract's front: every [`Driver`] is a [`Store`] through it. Each call's keys,
//! prefixes, values, options and transactions are checked here, once, and reach the driver
//! as [`Checked`] requests; a request that fails its check never reaches the driver, so
//! nothing is written.
//!
//! The front adds no allocation: a checked call hands back the driver's own future, and
//! only a refused call boxes a ready error.

use crate::capabilities::{Capabilities, Sharding};
use crate::collections::{CollectionOp, CollectionResult};
use crate::driver::{Checked, Driver, PutRequest};
use crate::entry::Entry;
use crate::error::Result;
use crate::lease::{LeaseGrant, LeaseId, LeaseInfo};
use crate::range::{KeyRange, RangeOptions, RangeResult};
use crate::raw::{validate_key, validate_prefix};
use crate::status::ServerStatus;
use crate::store::{DeletePrefixResult, DeleteResult, PutOptions, PutResult, Store, StoreFuture};
use crate::txn::{Txn, TxnResponse};
use crate::watch::{WatchOptions, WatchStream};
use std::time::Duration;

/// A single key: the contract's rules, then the driver's.
fn key<D: Driver + ?Sized>(driver: &D, key: &[u8]) -> Result<()> {
    validate_key(key)?;
    driver.check_key(key)
}

/// A range's key, when it names one (prefixes and intervals are checked by
/// [`KeyRange::validate`]; a backend's reserved keys are never listed under one).
fn range_key<D: Driver + ?Sized>(driver: &D, range: &KeyRange) -> Result<()> {
    match range {
        KeyRange::Key(k) => driver.check_key(k),
        _ => Ok(()),
    }
}

fn range<D: Driver + ?Sized>(driver: &D, opts: RangeOptions) -> Result<Checked<RangeOptions>> {
    opts.validate()?;
    range_key(driver, &opts.range)?;
    Ok(Checked::new(opts))
}

fn txn<D: Driver + ?Sized>(driver: &D, txn: Txn) -> Result<Checked<Txn>> {
    txn.validate(driver.capabilities())?;
    txn.keys().try_for_each(|k| driver.check_key(k))?;
    Ok(Checked::new(txn))
}

fn watch<D: Driver + ?Sized>(driver: &D, opts: WatchOptions) -> Result<Checked<WatchOptions>> {
    opts.range.validate()?;
    range_key(driver, &opts.range)?;
    opts.check_starts(driver.capabilities().sharding != Sharding::Unsharded)?;
    Ok(Checked::new(opts))
}

fn put<'a, D: Driver + ?Sized>(
    driver: &D,
    k: &'a [u8],
    value: &'a [u8],
    opts: PutOptions,
) -> Result<Checked<PutRequest<'a>>> {
    key(driver, k)?;
    driver.capabilities().validate_value(value)?;
    Ok(Checked::new(PutRequest {
        key: k,
        value,
        opts,
    }))
}

fn prefix<'a, D: Driver + ?Sized>(driver: &D, prefix: &'a [u8]) -> Result<Checked<&'a [u8]>> {
    validate_prefix(prefix, false)?;
    driver.check_key(prefix)?;
    Ok(Checked::new(prefix))
}

fn collection<D: Driver + ?Sized>(driver: &D, op: CollectionOp) -> Result<Checked<CollectionOp>> {
    // The checks of a one-op transaction branch, without building the transaction.
    op.validate(driver.capabilities())?;
    driver.check_key(op.key())?;
    if let Some(other) = op.other_prefix() {
        driver.check_key(other)?;
    }
    Ok(Checked::new(op))
}

/// The driver's future for a checked request, or the check's error.
fn then<'f, C, T: Send + 'f>(
    checked: Result<C>,
    call: impl FnOnce(C) -> StoreFuture<'f, T>,
) -> StoreFuture<'f, T> {
    match checked {
        Ok(checked) => call(checked),
        Err(error) => Box::pin(std::future::ready(Err(error))),
    }
}

/// Every driver is a store: each method checks its request, then calls the driver's.
impl<D: Driver> Store for D {
    fn capabilities(&self) -> &Capabilities {
        Driver::capabilities(self)
    }
    fn revision<'s, 'f>(&'s self) -> StoreFuture<'f, i64>
    where
        's: 'f,
        Self: 'f,
    {
        Driver::revision(self)
    }
    fn range<'s, 'f>(&'s self, opts: RangeOptions) -> StoreFuture<'f, RangeResult>
    where
        's: 'f,
        Self: 'f,
    {
        then(range(self, opts), |opts| Driver::range(self, opts))
    }
    fn txn<'s, 'f>(&'s self, t: Txn) -> StoreFuture<'f, TxnResponse>
    where
        's: 'f,
        Self: 'f,
    {
        then(txn(self, t), |t| Driver::txn(self, t))
    }
    fn lease_grant<'s, 'f>(&'s self, ttl: Duration) -> StoreFuture<'f, LeaseGrant>
    where
        's: 'f,
        Self: 'f,
    {
        Driver::lease_grant(self, ttl)
    }
    fn lease_keep_alive<'s, 'f>(&'s self, id: LeaseId) -> StoreFuture<'f, Duration>
    where
        's: 'f,
        Self: 'f,
    {
        Driver::lease_keep_alive(self, id)
    }
    fn lease_revoke<'s, 'f>(&'s self, id: LeaseId) -> StoreFuture<'f, ()>
    where
        's: 'f,
        Self: 'f,
    {
        Driver::lease_revoke(self, id)
    }
    fn lease_time_to_live<'s, 'f>(&'s self, id: LeaseId) -> StoreFuture<'f, LeaseInfo>
    where
        's: 'f,
        Self: 'f,
    {
        Driver::lease_time_to_live(self, id)
    }
    fn lease_list<'s, 'f>(&'s self) -> StoreFuture<'f, Vec<LeaseId>>
    where
        's: 'f,
        Self: 'f,
    {
        Driver::lease_list(self)
    }
    fn server_status<'s, 'f>(&'s self) -> StoreFuture<'f, ServerStatus>
    where
        's: 'f,
        Self: 'f,
    {
        Driver::server_status(self)
    }
    fn watch<'s, 'f>(&'s self, opts: WatchOptions) -> StoreFuture<'f, WatchStream>
    where
        's: 'f,
        Self: 'f,
    {
        then(watch(self, opts), |opts| Driver::watch(self, opts))
    }
    fn compact<'s, 'f>(&'s self, revision: i64) -> StoreFuture<'f, ()>
    where
        's: 'f,
        Self: 'f,
    {
        Driver::compact(self, revision)
    }
    fn get<'s, 'k, 'f>(&'s self, k: &'k [u8]) -> StoreFuture<'f, Option<Entry>>
    where
        's: 'f,
        'k: 'f,
        Self: 'f,
    {
        then(key(self, k).map(|()| Checked::new(k)), |k| {
            Driver::get(self, k)
        })
    }
    fn put<'s, 'k, 'v, 'f>(
        &'s self,
        k: &'k [u8],
        value: &'v [u8],
        opts: PutOptions,
    ) -> StoreFuture<'f, PutResult>
    where
        's: 'f,
        'k: 'f,
        'v: 'f,
        Self: 'f,
    {
        then(put(self, k, value, opts), |put| Driver::put(self, put))
    }
    fn delete<'s, 'k, 'f>(&'s self, k: &'k [u8]) -> StoreFuture<'f, DeleteResult>
    where
        's: 'f,
        'k: 'f,
        Self: 'f,
    {
        then(key(self, k).map(|()| Checked::new(k)), |k| {
            Driver::delete(self, k)
        })
    }
    fn delete_prefix<'s, 'k, 'f>(&'s self, p: &'k [u8]) -> StoreFuture<'f, DeletePrefixResult>
    where
        's: 'f,
        'k: 'f,
        Self: 'f,
    {
        then(prefix(self, p), |p| Driver::delete_prefix(self, p))
    }
    fn collection<'s, 'f>(&'s self, op: CollectionOp) -> StoreFuture<'f, CollectionResult>
    where
        's: 'f,
        Self: 'f,
    {
        then(collection(self, op), |op| Driver::collection(self, op))
    }
}

#[cfg(test)]
#[path = "front_tests.rs"]
mod tests;
