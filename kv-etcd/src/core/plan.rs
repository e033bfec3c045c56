//! Building etcd transactions from the contract's: how each user op's result is read back
//! ([`Slot`]), the physical ops of a branch ([`Branch`]), the user transaction's compares and
//! branches ([`UserTxn`]), and the packing of a branch larger than etcd takes per level into
//! nested transactions without compares (etcd >= 3.3), so that it stays one atomic request.
//! Both transaction paths (the plain one in `txn.rs` and the collection one in
//! `core/collections.rs`) build their requests with it.

use super::{Namespace, collection_span, stamp_of_member};
use etcd_client::{
    Compare as EtcdCompare, CompareOp as EtcdCompareOp, DeleteOptions, GetOptions,
    PutOptions as EtcdPutOptions, Txn as EtcdTxn, TxnOp as EtcdOp, TxnOpResponse,
    TxnResponse as EtcdTxnResponse,
};
use keyplane_contract::raw::emulation::{
    PhysicalRange, collection_ranges_for_prefix, delete_collections,
};
use keyplane_contract::{
    CollectionKind, Compare, CompareOp, CompareTarget, Error, ErrorKind, OpResult, Result, TxnOp,
    TxnResponse,
};
use std::collections::BTreeMap;

/// How the result of one user op is read from the etcd responses of its branch.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    /// A get at this physical op index.
    Get(usize),
    /// A put at this index.
    Put(usize),
    /// A plain delete at `plain`, and the deletes of the set, map and list at the key (each
    /// with its stamp).
    DeleteKey {
        plain: usize,
        collections: [usize; 3],
    },
    /// A plain prefix delete, and keys-only reads of the collections under the prefix taken
    /// just before they are deleted (to count them).
    DeletePrefix {
        plain: usize,
        scans: [usize; 3],
        ranges: Box<[PhysicalRange; 3]>,
    },
    /// A plain delete, plus collections removed through the emulation.
    DeleteWith { plain: usize, collections: u64 },
    /// A result known before sending (collection ops).
    Ready(OpResult),
}

/// The physical etcd ops of one branch and how to read the user results back.
#[derive(Debug, Default)]
pub(crate) struct Branch {
    pub(crate) ops: Vec<EtcdOp>,
    pub(crate) slots: Vec<Slot>,
}

impl Branch {
    pub(crate) fn push(&mut self, op: EtcdOp) -> usize {
        self.ops.push(op);
        self.ops.len() - 1
    }

    /// A plain delete of every physical key in `[start, end)`.
    pub(crate) fn delete_range(&mut self, start: Vec<u8>, end: Vec<u8>) -> usize {
        self.push(EtcdOp::delete(
            start,
            Some(DeleteOptions::new().with_range(end)),
        ))
    }

    /// Adds a plain (non-collection) op; collections at deleted keys are deleted natively.
    pub(crate) fn plain(&mut self, ns: &Namespace, op: &TxnOp) {
        let slot = match op {
            TxnOp::Get { key } => Slot::Get(self.push(EtcdOp::get(ns.key(key), None))),
            TxnOp::Put { key, value, lease } => {
                let opts = lease.map(|l| EtcdPutOptions::new().with_lease(l.0));
                Slot::Put(self.push(EtcdOp::put(ns.key(key), value.clone(), opts)))
            }
            TxnOp::Delete { key } => {
                let plain = self.push(EtcdOp::delete(ns.key(key), None));
                let collections = CollectionKind::ALL.map(|kind| {
                    let (start, end) = collection_span(kind, key);
                    self.delete_range(ns.key(&start), ns.key(&end))
                });
                Slot::DeleteKey { plain, collections }
            }
            TxnOp::DeletePrefix { prefix } => {
                let (start, end) = ns.prefix(prefix);
                let plain = self.delete_range(start, end);
                let ranges = collection_ranges_for_prefix(prefix);
                let scans = ranges.clone().map(|r| {
                    let get = GetOptions::new()
                        .with_range(ns.key(&r.end))
                        .with_keys_only();
                    let scan = self.push(EtcdOp::get(ns.key(&r.start), Some(get)));
                    self.delete_range(ns.key(&r.start), ns.key(&r.end));
                    scan
                });
                Slot::DeletePrefix {
                    plain,
                    scans,
                    ranges: Box::new(ranges),
                }
            }
            TxnOp::Collection(_) => unreachable!("collection ops take the emulation path"),
        };
        self.slots.push(slot);
    }

    /// The user results, from the flattened etcd responses of this branch.
    pub(crate) fn results(&self, ns: &Namespace, resps: &[TxnOpResponse]) -> Result<Vec<OpResult>> {
        let deleted = |i: usize| match resps.get(i) {
            Some(TxnOpResponse::Delete(d)) => Ok(u64::try_from(d.deleted()).unwrap_or(0)),
            other => Err(unexpected(other)),
        };
        self.slots
            .iter()
            .map(|slot| {
                Ok(match slot {
                    Slot::Get(i) => match resps.get(*i) {
                        Some(TxnOpResponse::Get(g)) => {
                            OpResult::Get(g.kvs().first().and_then(|kv| ns.entry(kv)))
                        }
                        other => return Err(unexpected(other)),
                    },
                    Slot::Put(i) => match resps.get(*i) {
                        Some(TxnOpResponse::Put(_)) => OpResult::Put,
                        other => return Err(unexpected(other)),
                    },
                    Slot::DeleteKey { plain, collections } => {
                        let mut n = deleted(*plain)?;
                        for c in collections {
                            // The stamp and at least one member: the collection existed.
                            n += u64::from(deleted(*c)? >= 2);
                        }
                        OpResult::Delete { deleted: n }
                    }
                    Slot::DeletePrefix {
                        plain,
                        scans,
                        ranges,
                    } => {
                        let mut keys = BTreeMap::new();
                        for s in scans {
                            let Some(TxnOpResponse::Get(g)) = resps.get(*s) else {
                                return Err(unexpected(resps.get(*s)));
                            };
                            for kv in g.kvs() {
                                if let Some(k) = ns.strip(kv.key())
                                    && stamp_of_member(k).is_some()
                                {
                                    keys.insert(k.to_vec(), Vec::new());
                                }
                            }
                        }
                        let collections = delete_collections(&keys, ranges.as_ref())?.collections;
                        OpResult::Delete {
                            deleted: deleted(*plain)? + collections,
                        }
                    }
                    Slot::DeleteWith { plain, collections } => OpResult::Delete {
                        deleted: deleted(*plain)? + collections,
                    },
                    Slot::Ready(result) => result.clone(),
                })
            })
            .collect()
    }
}

pub(crate) fn unexpected(got: Option<&TxnOpResponse>) -> Error {
    Error::new(
        ErrorKind::Backend,
        format!("etcd answered a transaction op with {got:?}"),
    )
}

/// The ops per level of one etcd transaction, chosen so that etcd accepts it.
///
/// etcd checks a transaction's level against its op budget (`--max-txn-ops`): the level's
/// compares, success ops and failure ops may each number at most the budget, and a nested
/// transaction gets the budget minus the largest of those three counts. A branch longer than
/// the level is split into nested transactions without compares (still one atomic request).
/// Returns the level's op count and the nested chunk size, or `None` when no split fits.
fn level_shape(compares: usize, branches: [usize; 2], budget: usize) -> Option<(usize, usize)> {
    let flat = compares.max(branches[0]).max(branches[1]).max(1);
    if flat <= budget {
        return Some((flat, budget - flat));
    }
    (compares.max(1)..=budget).find_map(|level| {
        let chunk = budget - level;
        let fits = |n: usize| n <= level || (chunk > 0 && n.div_ceil(chunk) <= level);
        (fits(branches[0]) && fits(branches[1])).then_some((level, chunk))
    })
}

/// Nests `ops` into chunks of `chunk` when they are more than `level`; returns the ops of the
/// level and whether they were nested.
fn nest(ops: Vec<EtcdOp>, level: usize, chunk: usize) -> (Vec<EtcdOp>, usize) {
    if ops.len() <= level {
        return (ops, 0);
    }
    let mut nested = Vec::with_capacity(ops.len().div_ceil(chunk));
    let mut rest = ops.into_iter().peekable();
    while rest.peek().is_some() {
        let part: Vec<EtcdOp> = rest.by_ref().take(chunk).collect();
        nested.push(EtcdOp::txn(EtcdTxn::new().and_then(part)));
    }
    (nested, 1)
}

/// A transaction of `compares` and two branches that etcd accepts within `budget` ops per
/// level; returns it with the nesting depth of each branch.
///
/// # Errors
/// `TxnTooLarge` when the physical ops cannot fit (the transaction is never split).
pub(crate) fn shape(
    compares: Vec<EtcdCompare>,
    success: Vec<EtcdOp>,
    failure: Vec<EtcdOp>,
    budget: usize,
) -> Result<(EtcdTxn, usize, usize)> {
    let Some((level, chunk)) = level_shape(compares.len(), [success.len(), failure.len()], budget)
    else {
        return Err(Error::new(
            ErrorKind::TxnTooLarge,
            "the transaction expands to more etcd operations than one request takes",
        )
        .with_context("physical_ops", success.len().max(failure.len()))
        .with_context("budget", budget));
    };
    let (s_ops, s_depth) = nest(success, level, chunk);
    let (f_ops, f_depth) = nest(failure, level, chunk);
    let txn = EtcdTxn::new().when(compares).and_then(s_ops).or_else(f_ops);
    Ok((txn, s_depth, f_depth))
}

/// The responses of a packed branch, unnested back to one per physical op.
pub(crate) fn flatten(resps: Vec<TxnOpResponse>, depth: usize) -> Result<Vec<TxnOpResponse>> {
    if depth == 0 {
        return Ok(resps);
    }
    let mut out = Vec::new();
    for resp in resps {
        match resp {
            TxnOpResponse::Txn(t) => out.extend(flatten(t.op_responses(), depth - 1)?),
            other => return Err(unexpected(Some(&other))),
        }
    }
    Ok(out)
}

pub(crate) fn compare(ns: &Namespace, c: &Compare) -> EtcdCompare {
    let op = match c.op {
        CompareOp::Equal => EtcdCompareOp::Equal,
        CompareOp::NotEqual => EtcdCompareOp::NotEqual,
        CompareOp::Greater => EtcdCompareOp::Greater,
        CompareOp::Less => EtcdCompareOp::Less,
    };
    let key = ns.key(&c.key);
    match &c.target {
        CompareTarget::Version(v) => EtcdCompare::version(key, op, *v),
        CompareTarget::CreateRevision(r) => EtcdCompare::create_revision(key, op, *r),
        CompareTarget::ModRevision(r) => EtcdCompare::mod_revision(key, op, *r),
        CompareTarget::Value(v) => EtcdCompare::value(key, op, v.clone()),
        CompareTarget::Lease(l) => EtcdCompare::lease(key, op, *l),
        // Collection compares are evaluated on the planning snapshot, under guards
        // (`collections::txn`), and never reach here; if one did, it is false, as it would
        // be on a plain key.
        CompareTarget::Member { .. } | CompareTarget::Field { .. } | CompareTarget::Size { .. } => {
            EtcdCompare::version(key, EtcdCompareOp::Less, 0)
        }
    }
}

/// The user-level transaction: the user's compares, then the two packed branches.
pub(crate) struct UserTxn {
    txn: EtcdTxn,
    success: (Branch, usize),
    failure: (Branch, usize),
}

impl UserTxn {
    pub(crate) fn new(
        ns: &Namespace,
        compares: &[Compare],
        mut success: Branch,
        mut failure: Branch,
        budget: usize,
    ) -> Result<Self> {
        let compares: Vec<EtcdCompare> = compares.iter().map(|c| compare(ns, c)).collect();
        let (txn, s_depth, f_depth) = shape(
            compares,
            std::mem::take(&mut success.ops),
            std::mem::take(&mut failure.ops),
            budget,
        )?;
        Ok(UserTxn {
            txn,
            success: (success, s_depth),
            failure: (failure, f_depth),
        })
    }

    /// The etcd transaction to send.
    pub(crate) fn etcd_txn(&self) -> EtcdTxn {
        self.txn.clone()
    }

    /// Reads the user's response from etcd's response to [`UserTxn::etcd_txn`].
    pub(crate) fn response(
        &self,
        ns: &Namespace,
        resp: &EtcdTxnResponse,
        revision: i64,
    ) -> Result<TxnResponse> {
        let succeeded = resp.succeeded();
        let (branch, depth) = if succeeded {
            &self.success
        } else {
            &self.failure
        };
        let resps = flatten(resp.op_responses(), *depth)?;
        Ok(TxnResponse {
            succeeded,
            revision,
            results: branch.results(ns, &resps)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_respect_etcds_nested_budget() {
        // Flat when it fits.
        assert_eq!(level_shape(3, [10, 0], 128), Some((10, 118)));
        // 512 ops: 5 nested chunks of 123 (5 + 123 = 128).
        assert_eq!(level_shape(0, [512, 0], 128), Some((5, 123)));
        // The compares take the level: chunks get what is left.
        assert_eq!(level_shape(100, [200, 0], 128), Some((100, 28)));
        // 128 compares leave nothing for nested ops.
        assert_eq!(level_shape(128, [129, 0], 128), None);
        let ops: Vec<EtcdOp> = (0..300u32)
            .map(|i| EtcdOp::get(i.to_be_bytes().to_vec(), None))
            .collect();
        let (txn, depth, _) = shape(Vec::new(), ops, Vec::new(), 128).unwrap();
        assert_eq!(depth, 1);
        drop(txn);
    }
}
