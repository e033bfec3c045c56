//! What an operation observably returned, normalised so that a store and the model can be
//! compared: keys relative to the root, revisions as the ordinal of the write that made them,
//! leases as the ordinal of their grant.

use super::bytes::Bytes;
use super::ops::{LeaseRef, RevRef};
use keyplane_core::{CollectionResult, ErrorKind};

/// An entry as observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The key, relative to the root.
    pub key: Bytes,
    /// The value.
    pub value: Bytes,
    /// The ordinal (from 1) of the put-bearing write that created the key.
    pub create: i64,
    /// The ordinal of the put-bearing write that last wrote it.
    pub modified: i64,
    /// Writes since creation.
    pub version: i64,
    /// The ordinal (from 0) of the lease it is attached to.
    pub lease: Option<usize>,
}

/// One page of a range read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// Its entries.
    pub entries: Vec<Seen>,
    /// Its `count`.
    pub count: u64,
    /// Whether another page follows.
    pub more: bool,
}

/// The result of one txn op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepResult {
    /// A get.
    Get(Option<Seen>),
    /// A put.
    Put,
    /// A delete or prefix delete: how many keys (collections count one each).
    Deleted(u64),
    /// A collection op.
    Coll(CollectionResult),
}

/// The observable result of one operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A put, with the previous entry when asked for.
    Put(Option<Seen>),
    /// A get.
    Get(Option<Seen>),
    /// The pages of a range read.
    Pages(Vec<Page>),
    /// A count-only range read.
    Count(u64),
    /// A delete: the previous entry.
    Deleted(Option<Seen>),
    /// A prefix delete: how many keys.
    DeletedPrefix(u64),
    /// A txn.
    Txn {
        /// Whether the success branch ran.
        succeeded: bool,
        /// The results of the branch that ran.
        results: Vec<StepResult>,
    },
    /// A lease was granted: its ordinal.
    Granted(usize),
    /// A lease op that succeeded.
    LeaseOk,
    /// A time-to-live: the lease's keys, relative.
    LeaseKeys(Vec<Bytes>),
    /// A lease op before any lease was granted (not sent).
    NoLease,
    /// A collection op.
    Coll(CollectionResult),
    /// The op failed with this kind.
    Err(ErrorKind),
}

/// Resolves a lease reference against the number of leases granted so far.
pub fn lease_index(lease: LeaseRef, granted: usize) -> Option<usize> {
    (granted > 0).then(|| usize::from(lease.0) % granted)
}

/// Resolves a revision reference against the revisions of the put-bearing writes so far.
pub fn revision(rev: RevRef, puts: &[i64]) -> i64 {
    match rev {
        RevRef::Zero => 0,
        RevRef::Max => i64::MAX,
        RevRef::Put(_) if puts.is_empty() => 0,
        RevRef::Put(n) => puts[puts.len() - 1 - usize::from(n) % puts.len()],
    }
}

/// The ordinal (from 1) of `rev` among the put-bearing writes, or `-rev` when it is not one
/// of them (which then shows as a mismatch).
pub fn ordinal(rev: i64, puts: &[i64]) -> i64 {
    match puts.binary_search(&rev) {
        Ok(i) => i as i64 + 1,
        Err(_) => -rev,
    }
}
