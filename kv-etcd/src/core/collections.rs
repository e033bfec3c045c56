//! Transactions with set, map and list ops: keyplane-core's emulation, made atomic on etcd with
//! optimistic concurrency.
//!
//! 1. Every physical range the collection ops (and the collection part of `delete`) read,
//!    and the [stamp](crate::core::stamp_key) of every collection involved, are read in one etcd
//!    transaction, so at one revision.
//! 2. Both branches are planned on that snapshot through an [`Overlay`]: collection results
//!    are known, and their physical writes become plain etcd puts and deletes, plus a rewrite
//!    of the stamp of every collection written.
//! 3. One etcd transaction is sent: an outer level of *guards* (every stamp read still has the
//!    mod revision it had, so no collection read has changed), whose success is the user's
//!    transaction (the user's compares, then the planned branches). A failed guard means a
//!    concurrent writer won: the whole thing is planned again on a fresh snapshot, a bounded
//!    number of times.
//!
//! `delete_prefix` stays native (a keys-only read to count the collections, then range
//! deletes, inside the same transaction); later ops of the branch see its effect through the
//! overlay.

use crate::core::plan::{Branch, Slot, UserTxn, flatten, shape, unexpected};
use crate::core::{Core, Namespace, header_revision, stamp_key};
use etcd_client::{
    Compare as EtcdCompare, CompareOp as EtcdCompareOp, GetOptions, Txn as EtcdTxn,
    TxnOp as EtcdOp, TxnOpResponse, TxnResponse as EtcdTxnResponse,
};
use keyplane_contract::raw::emulation::{
    Overlay, PhysicalRange, PhysicalWrite, collection_ranges_for_key, collection_ranges_for_prefix,
    compare_reads, emptiness_probes, evaluate_compare, members_range, reads,
};
use keyplane_contract::raw::{encode_changes, layout};
use keyplane_contract::retry::Backoff;
use keyplane_contract::{
    CollectionChange, CollectionKind, CollectionOp, Compare, Error, ErrorKind, OpResult, Result,
    Txn, TxnOp, TxnResponse,
};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How many times a transaction is planned again after losing a race.
const OPTIMISTIC_ATTEMPTS: u32 = 16;

/// The pauses between the plans of a transaction that lost a race: the backend's request
/// policy, no pause longer than 200 ms, at most [`OPTIMISTIC_ATTEMPTS`] plans.
fn optimistic_policy() -> Backoff {
    Backoff::requests()
        .max_delay(Duration::from_millis(200))
        .max_attempts(OPTIMISTIC_ATTEMPTS)
}

/// Physical state read at one revision.
struct Snapshot {
    revision: i64,
    values: BTreeMap<Vec<u8>, Vec<u8>>,
    mod_revisions: BTreeMap<Vec<u8>, i64>,
}

/// What the planning reads: physical ranges (stamps included), the first members of the
/// collections whose members are removed (to know whether the removals empty them), and the
/// stamps to guard.
#[derive(Debug)]
struct ReadSet {
    ranges: Vec<PhysicalRange>,
    probes: Vec<(PhysicalRange, usize)>,
    stamps: BTreeSet<Vec<u8>>,
}

/// Whether `txn` takes this path: it has a collection op or a collection compare.
pub(crate) fn has_collections(txn: &Txn) -> bool {
    txn.success
        .iter()
        .chain(&txn.failure)
        .any(|op| matches!(op, TxnOp::Collection(_)))
        || txn
            .compares
            .iter()
            .any(|c| c.target.collection_kind().is_some())
}

/// A transaction with collection ops or compares (see [`has_collections`]), planned on a
/// snapshot and committed under guards. `txn` was checked by the contract's front.
pub(crate) async fn txn(core: &Core, txn: Txn) -> Result<TxnResponse> {
    let ns = &core.ns;
    let max = core.caps.max_txn_ops;
    let mut read_set = ReadSet::of(&txn);
    let policy = optimistic_policy();
    let mut attempts = policy.start_at_failure();
    for attempt in 0..OPTIMISTIC_ATTEMPTS {
        if read_set.stamps.len() >= max {
            return Err(too_many_collections(read_set.stamps.len(), max));
        }
        let snap = read_snapshot(core, &read_set.ranges, &read_set.probes).await?;
        // A rotation that reads its moved item's map learns which map from the list's head:
        // a map not read yet is added to the reads (and guarded), and the snapshot read
        // again.
        if read_set.add_rotated_maps(&txn, &snap) {
            attempts.record_failure();
            continue;
        }
        let success = plan(ns, &txn.success, &snap)?;
        let failure = plan(ns, &txn.failure, &snap)?;
        // Collection compares hold or not on the snapshot; the guards below make that true
        // at commit time too. Plain compares stay native.
        let mut collections_hold = true;
        for compare in txn.compares.iter().filter(|c| is_collection(c)) {
            collections_hold &= evaluate_compare(compare, &snap.values)?;
        }
        let mut compares: Vec<Compare> = txn
            .compares
            .iter()
            .filter(|c| !is_collection(c))
            .cloned()
            .collect();
        if compares.is_empty() {
            // The branch is decided now; without writes, the snapshot is the answer.
            let chosen = if collections_hold { &success } else { &failure };
            if chosen.ops.is_empty() {
                return Ok(TxnResponse {
                    succeeded: collections_hold,
                    revision: snap.revision,
                    results: chosen.results(ns, &[])?,
                });
            }
        }
        if !collections_hold {
            // A compare that never holds sends etcd down the failure branch.
            compares = vec![Compare::version(
                NEVER,
                keyplane_contract::CompareOp::Less,
                0,
            )];
        }
        let guards: Vec<EtcdCompare> = read_set
            .stamps
            .iter()
            .map(|stamp| {
                let seen = snap.mod_revisions.get(stamp).copied().unwrap_or(0);
                EtcdCompare::mod_revision(ns.key(stamp), EtcdCompareOp::Equal, seen)
            })
            .collect();
        // The guard level holds the guards and one op (the user's transaction), which gets
        // the rest of etcd's per-level budget.
        let user_budget = max - guards.len().max(1);
        let user = UserTxn::new(ns, &compares, success, failure, user_budget)?;
        let request = EtcdTxn::new()
            .when(guards)
            .and_then(vec![EtcdOp::txn(user.etcd_txn())]);
        let resp = core
            .call("txn", false, || {
                let t = request.clone();
                let mut kv = core.kv.clone();
                async move { kv.txn(t).await }
            })
            .await?;
        let revision = header_revision(resp.header())?;
        if let Some(inner) = unwrap(resp)? {
            return user.response(ns, &inner, revision);
        }
        tracing::debug!(
            attempt,
            "collection transaction lost a race; planning again"
        );
        if !attempts.wait().await {
            break;
        }
    }
    Err(Error::new(
        ErrorKind::ConditionFailed,
        "concurrent writers kept changing the collections this transaction reads",
    )
    .with_context("attempts", OPTIMISTIC_ATTEMPTS)
    .set_retryable(true))
}

/// A reserved key (user keys never contain NUL) that a never-true compare names.
const NEVER: &[u8] = b"\0never";

fn is_collection(compare: &Compare) -> bool {
    compare.target.collection_kind().is_some()
}

fn too_many_collections(n: usize, max: usize) -> Error {
    Error::new(
        ErrorKind::TxnTooLarge,
        "the transaction involves more collections than etcd takes compares",
    )
    .with_context("collections", n)
    .with_context("max_txn_ops", max)
}

impl ReadSet {
    fn of(txn: &Txn) -> Self {
        let mut ranges = Vec::new();
        let mut stamps = BTreeSet::new();
        for compare in &txn.compares {
            if let Some(kind) = compare.target.collection_kind() {
                ranges.extend(compare_reads(compare));
                stamps.insert(stamp_key(kind, &compare.key));
            }
        }
        for op in txn.success.iter().chain(&txn.failure) {
            match op {
                TxnOp::Collection(c) => {
                    ranges.extend(reads(c));
                    stamps.insert(stamp_key(c.kind(), c.key()));
                }
                TxnOp::Delete { key } => {
                    for kind in CollectionKind::ALL {
                        ranges.push(members_range(kind, key));
                        stamps.insert(stamp_key(kind, key));
                    }
                }
                TxnOp::DeletePrefix { .. } | TxnOp::Get { .. } | TxnOp::Put { .. } => {}
            }
        }
        ranges.extend(stamps.iter().cloned().map(PhysicalRange::key));
        let collection_ops = txn
            .success
            .iter()
            .chain(&txn.failure)
            .filter_map(|op| match op {
                TxnOp::Collection(c) => Some(c),
                _ => None,
            });
        ReadSet {
            ranges: merge(ranges),
            probes: emptiness_probes(collection_ops),
            stamps,
        }
    }
}

impl ReadSet {
    /// Adds the field of the map that each `ListRotateGet` of `txn` reads, named by its
    /// list's head in `snap` (no earlier op of its branch writes the list, so the head is
    /// the item it moves), with the map's stamp; whether any was not read yet.
    fn add_rotated_maps(&mut self, txn: &Txn, snap: &Snapshot) -> bool {
        let mut added = false;
        for op in txn.success.iter().chain(&txn.failure) {
            let TxnOp::Collection(CollectionOp::ListRotateGet {
                key,
                map_prefix,
                map_suffix,
                field,
            }) = op
            else {
                continue;
            };
            let list = members_range(CollectionKind::List, key);
            let Some((_, head)) = snap.values.range(list.start..list.end).next() else {
                continue;
            };
            let map = [&map_prefix[..], head, map_suffix].concat();
            let member = layout::member_key(CollectionKind::Map, &map, field);
            if self.ranges.iter().any(|r| r.contains(&member)) {
                continue;
            }
            self.ranges.push(PhysicalRange::key(member));
            let stamp = stamp_key(CollectionKind::Map, &map);
            self.ranges.push(PhysicalRange::key(stamp.clone()));
            self.stamps.insert(stamp);
            added = true;
        }
        if added {
            self.ranges = merge(std::mem::take(&mut self.ranges));
        }
        added
    }
}

/// Sorts ranges and merges those that overlap or touch.
fn merge(mut ranges: Vec<PhysicalRange>) -> Vec<PhysicalRange> {
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
async fn read_snapshot(
    core: &Core,
    ranges: &[PhysicalRange],
    probes: &[(PhysicalRange, usize)],
) -> Result<Snapshot> {
    let ns = &core.ns;
    let get = |r: &PhysicalRange, limit: Option<usize>| {
        let mut opts = GetOptions::new().with_range(ns.key(&r.end));
        if let Some(limit) = limit {
            opts = opts.with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
        }
        EtcdOp::get(ns.key(&r.start), Some(opts))
    };
    let ops: Vec<EtcdOp> = ranges
        .iter()
        .map(|r| get(r, None))
        .chain(probes.iter().map(|(r, limit)| get(r, Some(*limit))))
        .collect();
    let (request, depth, _) = shape(Vec::new(), ops, Vec::new(), core.caps.max_txn_ops)?;
    let resp = core
        .call("txn_read", true, || {
            let t = request.clone();
            let mut kv = core.kv.clone();
            async move { kv.txn(t).await }
        })
        .await?;
    let mut snap = Snapshot {
        revision: header_revision(resp.header())?,
        values: BTreeMap::new(),
        mod_revisions: BTreeMap::new(),
    };
    for r in flatten(resp.op_responses(), depth)? {
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
/// collection part of `delete`) run through the overlay, whose final writes are appended with
/// the stamps they imply.
fn plan(ns: &Namespace, ops: &[TxnOp], snap: &Snapshot) -> Result<Branch> {
    let mut overlay = Overlay::new(&snap.values);
    let mut branch = Branch::default();
    // Stamps of collections deleted whole by `delete(K)`.
    let mut wiped: BTreeSet<Vec<u8>> = BTreeSet::new();
    // Physical ranges deleted natively by `delete_prefix`.
    let mut native: Vec<PhysicalRange> = Vec::new();
    for op in ops {
        match op {
            TxnOp::Collection(c) => {
                let result = overlay.apply(c)?;
                branch.slots.push(Slot::Ready(OpResult::Collection(result)));
            }
            TxnOp::Delete { key } => {
                let plain = branch.push(EtcdOp::delete(ns.key(key), None));
                let collections = overlay.delete_collections(&collection_ranges_for_key(key))?;
                wiped.extend(CollectionKind::ALL.map(|kind| stamp_key(kind, key)));
                branch.slots.push(Slot::DeleteWith { plain, collections });
            }
            TxnOp::DeletePrefix { prefix } => {
                branch.plain(ns, op);
                let ranges = collection_ranges_for_prefix(prefix);
                overlay.delete_collections(&ranges)?;
                native.extend(ranges);
            }
            TxnOp::Get { .. } | TxnOp::Put { .. } => branch.plain(ns, op),
        }
    }
    let natively_deleted = |key: &[u8]| native.iter().any(|r| r.contains(key));
    // Every collection the branch changes gets its stamp rewritten (so that guards see the
    // change) with the branch's changes to it as the value, which is what watches report;
    // a collection left empty loses its stamp (a watch reports `Deleted`).
    let events = overlay.collection_events()?;
    for write in overlay.into_writes() {
        if natively_deleted(write.key()) {
            continue;
        }
        branch.push(match write {
            PhysicalWrite::Put { key, value } => EtcdOp::put(ns.key(&key), value, None),
            PhysicalWrite::Delete { key } => EtcdOp::delete(ns.key(&key), None),
        });
    }
    let mut changes: BTreeMap<Vec<u8>, Vec<CollectionChange>> = BTreeMap::new();
    for event in events {
        changes
            .entry(stamp_key(event.kind, &event.key))
            .or_default()
            .push(event.change);
    }
    for stamp in wiped {
        changes.entry(stamp).or_default();
    }
    for (stamp, changes) in changes {
        if natively_deleted(&stamp) {
            continue;
        }
        match changes.last() {
            None | Some(CollectionChange::Deleted) => {
                if snap.values.contains_key(&stamp) {
                    branch.push(EtcdOp::delete(ns.key(&stamp), None));
                }
            }
            Some(_) => {
                branch.push(EtcdOp::put(ns.key(&stamp), encode_changes(&changes), None));
            }
        }
    }
    Ok(branch)
}

/// The user-level response inside the guard level, or `None` when a guard failed.
fn unwrap(resp: EtcdTxnResponse) -> Result<Option<EtcdTxnResponse>> {
    if !resp.succeeded() {
        return Ok(None);
    }
    match resp.op_responses().into_iter().next() {
        Some(TxnOpResponse::Txn(inner)) => Ok(Some(inner)),
        other => Err(unexpected(other.as_ref())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keyplane_contract::CollectionOp;

    #[test]
    fn read_set_merges_ranges_and_collects_stamps() {
        let txn = Txn::new().and_then([
            TxnOp::Collection(CollectionOp::SetMembers { key: b"s".to_vec() }),
            TxnOp::Collection(CollectionOp::SetAdd {
                key: b"s".to_vec(),
                member: b"m".to_vec(),
            }),
            TxnOp::put("plain", "v"),
        ]);
        let set = ReadSet::of(&txn);
        assert_eq!(set.ranges.len(), 1, "{set:?}");
        assert!(set.ranges[0].contains(b"\0ss\0m"));
        assert!(set.ranges[0].contains(b"\0ss"));
        assert_eq!(set.stamps.len(), 1);
        let txn = Txn::new().and_then([TxnOp::delete("k")]);
        assert_eq!(ReadSet::of(&txn).stamps.len(), 3);
    }
}
