//! Reads: single keys and paged ranges, each on one read transaction (a snapshot of one
//! committed revision) straight from the `kv` table's ordered scan; at a past revision, the
//! current entries rewound through the event log.

use crate::core::Shared;
use crate::core::codec::{REVISION_KEY, decode_entry, decode_events};
use crate::core::tables::{KV, KvState, LOG, META, meta_i64};
use crate::error::RedbResult;
use keyplane_contract::raw::emulation::{
    Touched, check_revision, list_collections, merge_page, rewind, rewind_with_collections,
};
use keyplane_contract::{Entry, RangeOptions, RangeResult, Result};
use redb::ReadOnlyTable;
use std::sync::atomic::Ordering;

type KvTable = ReadOnlyTable<&'static [u8], &'static [u8]>;

/// Room made for a page's entries before reading them.
const INITIAL_PAGE: usize = 128;

/// The entry of `key` (checked by the contract's front).
pub(crate) fn get(shared: &Shared, key: &[u8]) -> Result<Option<Entry>> {
    let txn = shared.read("get")?;
    let kv = txn.open_table(KV).redb("get")?;
    let value = kv.get(key).redb("get")?;
    value
        .map(|bytes| decode_entry(key, bytes.value(), false))
        .transpose()
}

/// One page of `opts` (checked by the contract's front).
pub(crate) fn range(shared: &Shared, opts: &RangeOptions) -> Result<RangeResult> {
    let txn = shared.read("range")?;
    let kv = txn.open_table(KV).redb("range")?;
    // The snapshot's own revision: the entries and the log read below are of it.
    let current = meta_i64(&txn.open_table(META).redb("range")?, REVISION_KEY)?.unwrap_or(0);
    let keys_only = opts.keys_only || opts.count_only;
    let revision = match opts.pinned_revision() {
        Some(r) if r != current => r,
        _ if opts.collections => {
            let per_source = opts.limit.filter(|_| !opts.count_only).map(|l| l + 1);
            let (entries, _) = entries(&kv, opts, per_source, keys_only)?;
            let collections = list_collections(opts, &KvState(&kv), per_source)?;
            return Ok(merge_page(opts, current, entries, collections));
        }
        _ => return range_now(&kv, opts, current),
    };
    let floor = shared.compact_floor.load(Ordering::Acquire);
    let oldest = crate::core::oldest(current, floor, shared.config.history_retention);
    check_revision(revision, current, (oldest - 1).max(floor))?;
    let log = txn.open_table(LOG).redb("range")?;
    let mut events = Vec::new();
    for record in log.range(revision + 1..=current).redb("range")? {
        let (rev, record) = record.redb("range")?;
        events.push(decode_events(rev.value(), record.value())?);
    }
    let touched = Touched::new(opts, revision, &events);
    let fetch = touched.fetch_limit(opts);
    let (current, complete) = entries(&kv, opts, fetch, keys_only)?;
    if opts.collections {
        let collections = list_collections(opts, &KvState(&kv), fetch)?;
        return rewind_with_collections(opts, revision, touched, current, collections);
    }
    Ok(rewind(opts, revision, touched, current, complete))
}

fn range_now(kv: &KvTable, opts: &RangeOptions, revision: i64) -> Result<RangeResult> {
    if opts.count_only {
        let (start, end) = opts.effective_bounds();
        let count = match end {
            Some(end) if end <= start => 0,
            Some(end) => KvState(kv).count_span(&start, Some(&end))?,
            None => KvState(kv).count_span(&start, None)?,
        };
        return Ok(RangeResult::counted(count, revision));
    }
    let (entries, complete) = entries(kv, opts, opts.limit, opts.keys_only)?;
    Ok(RangeResult::page(entries, !complete, revision))
}

/// The current entries of `opts`'s effective range, at most `limit`, and whether that was
/// all of them. The effective range starts at 0x01 at the lowest, so the reserved collection
/// keys are never read.
fn entries(
    kv: &KvTable,
    opts: &RangeOptions,
    limit: Option<usize>,
    keys_only: bool,
) -> Result<(Vec<Entry>, bool)> {
    let (start, end) = opts.effective_bounds();
    let scan = match &end {
        Some(end) if *end <= start => return Ok((Vec::new(), true)),
        Some(end) => kv.range::<&[u8]>(start.as_slice()..end.as_slice()),
        None => kv.range::<&[u8]>(start.as_slice()..),
    }
    .redb("range")?;
    let limit = limit.unwrap_or(usize::MAX);
    // Sized for a typical page up front: growing a vector of entries moves them all.
    let mut entries = Vec::with_capacity(limit.min(INITIAL_PAGE));
    for kv in scan {
        let (key, value) = kv.redb("range")?;
        if entries.len() == limit {
            return Ok((entries, false));
        }
        entries.push(decode_entry(key.value(), value.value(), keys_only)?);
    }
    Ok((entries, true))
}
