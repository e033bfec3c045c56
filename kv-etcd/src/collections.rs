//! Transactions with set, map and list ops: kv-core's emulation, made atomic on etcd with
//! optimistic concurrency.
//!
//! 1. Every physical range the collection ops (and the collection parts of deletes) read is
//!    read in one etcd transaction, so at one revision `R`.
//! 2. Both branches are planned on that snapshot through an [`Overlay`]: collection results
//!    are known, and their physical writes become plain etcd puts and deletes.
//! 3. One etcd transaction is sent: outer levels of *guards* (nothing read changed since `R`),
//!    whose success is the user's transaction (the user's compares, then the planned
//!    branches). A guard that fails means a concurrent writer won: the whole thing is planned
//!    again on a fresh snapshot, a bounded number of times.
//!
//! A guard over a single key is `mod_revision == m` (0 when absent). A guard over a scanned
//! range is `mod_revision < R + 1` over the whole range (no key written or created since) and
//! `mod_revision == m` for every key read in it (none deleted). Guards are split over nested
//! levels so that no level has more compares than etcd takes.

use crate::namespace::Namespace;
use crate::range::header_revision;
use crate::store::{EtcdStore, backoff};
use crate::txn::{Branch, Slot, UserTxn, pack, unexpected};
use etcd_client::{
    Compare as EtcdCompare, CompareOp as EtcdCompareOp, GetOptions, Txn as EtcdTxn,
    TxnOp as EtcdOp, TxnOpResponse, TxnResponse as EtcdTxnResponse,
};
use kv_core::emulation::{
    Overlay, PhysicalRange, PhysicalWrite, collection_ranges_for_key, collection_ranges_for_prefix,
    reads,
};
use kv_core::{Error, ErrorKind, OpResult, Result, Txn, TxnOp, TxnResponse};
use std::collections::BTreeMap;

/// How many times a transaction is planned again after losing a race.
const OPTIMISTIC_ATTEMPTS: u32 = 16;

/// Physical state read at one revision.
struct Snapshot {
    revision: i64,
    values: BTreeMap<Vec<u8>, Vec<u8>>,
    mod_revisions: BTreeMap<Vec<u8>, i64>,
}

pub(crate) async fn txn(store: &EtcdStore, txn: Txn) -> Result<TxnResponse> {
    let ns = &store.inner.ns;
    let max = store.inner.caps.max_txn_ops;
    let ranges = read_set(&txn);
    for attempt in 0..OPTIMISTIC_ATTEMPTS {
        let snap = read_snapshot(store, &ranges).await?;
        let success = plan(ns, &txn.success, &snap.values)?;
        let failure = plan(ns, &txn.failure, &snap.values)?;
        if txn.compares.is_empty() && success.ops.is_empty() {
            // Nothing to write and nothing to compare: the snapshot is the answer.
            return Ok(TxnResponse {
                succeeded: true,
                revision: snap.revision,
                results: success.results(ns, &[])?,
            });
        }
        let user = UserTxn::new(ns, &txn.compares, success, failure, max);
        let guards = guards(ns, &ranges, &snap);
        let (request, levels) = wrap(user.etcd_txn(), guards, max);
        let resp = store
            .call("txn", false, || {
                let t = request.clone();
                let mut kv = store.inner.kv.clone();
                async move { kv.txn(t).await }
            })
            .await?;
        let revision = header_revision(resp.header())?;
        if let Some(inner) = unwrap(resp, levels)? {
            return user.response(ns, &inner, revision);
        }
        tracing::debug!(
            attempt,
            "collection transaction lost a race; planning again"
        );
        tokio::time::sleep(backoff(attempt.min(3))).await;
    }
    Err(Error::new(
        ErrorKind::ConditionFailed,
        "concurrent writers kept changing the collections this transaction reads",
    )
    .with_context("attempts", OPTIMISTIC_ATTEMPTS)
    .set_retryable(true))
}

/// Every physical range the planning reads, sorted and merged.
fn read_set(txn: &Txn) -> Vec<PhysicalRange> {
    let mut ranges = Vec::new();
    for op in txn.success.iter().chain(&txn.failure) {
        match op {
            TxnOp::Collection(c) => ranges.extend(reads(c)),
            TxnOp::Delete { key } => ranges.extend(collection_ranges_for_key(key)),
            TxnOp::DeletePrefix { prefix } => ranges.extend(collection_ranges_for_prefix(prefix)),
            TxnOp::Get { .. } | TxnOp::Put { .. } => {}
        }
    }
    ranges.sort();
    let mut merged: Vec<PhysicalRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => {
                if r.end > last.end {
                    last.end = r.end;
                }
            }
            _ => merged.push(r),
        }
    }
    merged
}

/// Reads `ranges` in one etcd transaction (one revision).
async fn read_snapshot(store: &EtcdStore, ranges: &[PhysicalRange]) -> Result<Snapshot> {
    let ns = &store.inner.ns;
    let ops: Vec<EtcdOp> = ranges
        .iter()
        .map(|r| {
            EtcdOp::get(
                ns.key(&r.start),
                Some(GetOptions::new().with_range(ns.key(&r.end))),
            )
        })
        .collect();
    let (ops, depth) = pack(ops, store.inner.caps.max_txn_ops);
    let request = EtcdTxn::new().and_then(ops);
    let resp = store
        .call("txn_read", true, || {
            let t = request.clone();
            let mut kv = store.inner.kv.clone();
            async move { kv.txn(t).await }
        })
        .await?;
    let mut snap = Snapshot {
        revision: header_revision(resp.header())?,
        values: BTreeMap::new(),
        mod_revisions: BTreeMap::new(),
    };
    for r in crate::txn::flatten(resp.op_responses(), depth)? {
        let TxnOpResponse::Get(get) = r else {
            return Err(unexpected(Some(&r)));
        };
        for kv in get.kvs() {
            if let Some(key) = ns.strip(kv.key()) {
                snap.values.insert(key.to_vec(), kv.value().to_vec());
                snap.mod_revisions.insert(key.to_vec(), kv.mod_revision());
            }
        }
    }
    Ok(snap)
}

/// Plans one branch on the snapshot: plain ops stay native, collection ops (and the
/// collection part of deletes) run through the overlay, whose final writes are appended.
fn plan(ns: &Namespace, ops: &[TxnOp], snapshot: &BTreeMap<Vec<u8>, Vec<u8>>) -> Result<Branch> {
    let mut overlay = Overlay::new(snapshot);
    let mut branch = Branch::default();
    for op in ops {
        match op {
            TxnOp::Collection(c) => {
                let result = overlay.apply(c)?;
                branch.slots.push(Slot::Ready(OpResult::Collection(result)));
            }
            TxnOp::Delete { key } => {
                let plain = branch.push(EtcdOp::delete(ns.key(key), None));
                let collections = overlay.delete_collections(&collection_ranges_for_key(key))?;
                branch.slots.push(Slot::DeleteWith { plain, collections });
            }
            TxnOp::DeletePrefix { prefix } => {
                let (start, end) = ns.prefix(prefix);
                let plain = branch.delete_range(start, end);
                let collections =
                    overlay.delete_collections(&collection_ranges_for_prefix(prefix))?;
                branch.slots.push(Slot::DeleteWith { plain, collections });
            }
            TxnOp::Get { .. } | TxnOp::Put { .. } => branch.plain(ns, op),
        }
    }
    for write in overlay.into_writes() {
        branch.push(match write {
            PhysicalWrite::Put { key, value } => EtcdOp::put(ns.key(&key), value, None),
            PhysicalWrite::Delete { key } => EtcdOp::delete(ns.key(&key), None),
        });
    }
    Ok(branch)
}

/// Compares that hold exactly when nothing in `ranges` changed since the snapshot.
fn guards(ns: &Namespace, ranges: &[PhysicalRange], snap: &Snapshot) -> Vec<EtcdCompare> {
    let mut out = Vec::new();
    for r in ranges {
        let mut single = r.start.clone();
        single.push(0);
        if r.end == single {
            let m = snap.mod_revisions.get(&r.start).copied().unwrap_or(0);
            out.push(EtcdCompare::mod_revision(
                ns.key(&r.start),
                EtcdCompareOp::Equal,
                m,
            ));
            continue;
        }
        out.push(
            EtcdCompare::mod_revision(ns.key(&r.start), EtcdCompareOp::Less, snap.revision + 1)
                .with_range(ns.key(&r.end)),
        );
        let inside = snap.mod_revisions.range::<[u8], _>((
            std::ops::Bound::Included(r.start.as_slice()),
            std::ops::Bound::Excluded(r.end.as_slice()),
        ));
        for (key, m) in inside {
            out.push(EtcdCompare::mod_revision(
                ns.key(key),
                EtcdCompareOp::Equal,
                *m,
            ));
        }
    }
    out
}

/// Wraps the user's transaction in levels of guards, at most `max` compares per level;
/// returns the request and the number of levels.
fn wrap(user: EtcdTxn, guards: Vec<EtcdCompare>, max: usize) -> (EtcdTxn, usize) {
    let chunks: Vec<Vec<EtcdCompare>> = guards.chunks(max).map(<[_]>::to_vec).collect();
    let levels = chunks.len();
    let mut txn = user;
    for chunk in chunks.into_iter().rev() {
        txn = EtcdTxn::new().when(chunk).and_then(vec![EtcdOp::txn(txn)]);
    }
    (txn, levels)
}

/// The user-level response inside `levels` of guards, or `None` when a guard failed.
fn unwrap(mut resp: EtcdTxnResponse, levels: usize) -> Result<Option<EtcdTxnResponse>> {
    for _ in 0..levels {
        if !resp.succeeded() {
            return Ok(None);
        }
        resp = match resp.op_responses().into_iter().next() {
            Some(TxnOpResponse::Txn(inner)) => inner,
            other => return Err(unexpected(other.as_ref())),
        };
    }
    Ok(Some(resp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kv_core::CollectionOp;

    #[test]
    fn read_set_merges_overlapping_ranges() {
        let txn = Txn::new().and_then([
            TxnOp::Collection(CollectionOp::SetMembers { key: b"s".to_vec() }),
            TxnOp::Collection(CollectionOp::SetAdd {
                key: b"s".to_vec(),
                member: b"m".to_vec(),
            }),
            TxnOp::put("plain", "v"),
        ]);
        let ranges = read_set(&txn);
        assert_eq!(ranges.len(), 1, "{ranges:?}");
        assert!(ranges[0].contains(b"\0ss\0m"));
    }

    #[test]
    fn guards_are_split_into_levels() {
        let guards: Vec<EtcdCompare> = (0..300)
            .map(|i| EtcdCompare::version(vec![1, i as u8], EtcdCompareOp::Equal, 0))
            .collect();
        let (_, levels) = wrap(EtcdTxn::new(), guards, 128);
        assert_eq!(levels, 3);
        assert_eq!(wrap(EtcdTxn::new(), Vec::new(), 128).1, 0);
    }
}
