//! Reads: single keys and paged ranges, straight from sled's ordered iteration; at a past
//! revision, the current entries rewound through the event log.

use crate::core::Core;
use crate::core::TreeState;
use crate::core::codec::{be, decode_entry, decode_log_record};
use crate::error::map_error;
use keyplane_contract::raw::emulation::{
    Touched, check_revision, list_collections, merge_page, rewind, rewind_with_collections,
};
use keyplane_contract::{Entry, RangeOptions, RangeResult, Result};
use std::sync::PoisonError;
use std::sync::atomic::Ordering;

/// The entry of `key` (checked by the contract's front).
pub(crate) fn get(inner: &Core, key: &[u8]) -> Result<Option<Entry>> {
    inner
        .trees
        .data
        .get(key)
        .map_err(|e| map_error("get", e))?
        .map(|bytes| decode_entry(key, &bytes, false))
        .transpose()
}

/// One page of `opts` (checked by the contract's front).
pub(crate) fn range(inner: &Core, opts: &RangeOptions) -> Result<RangeResult> {
    // Writers commit under the gate: the data, the log and the revision read below are of
    // one revision.
    let _gate = inner.gate.read().unwrap_or_else(PoisonError::into_inner);
    let current = inner.revision();
    let keys_only = opts.keys_only || opts.count_only;
    let revision = match opts.pinned_revision() {
        Some(r) if r != current => r,
        _ if opts.collections => {
            let per_source = opts.limit.filter(|_| !opts.count_only).map(|l| l + 1);
            let (entries, _) = entries(inner, opts, per_source, keys_only)?;
            let collections = list_collections(opts, &TreeState(&inner.trees.data), per_source)?;
            return Ok(merge_page(opts, current, entries, collections));
        }
        _ => return range_now(inner, opts, current),
    };
    let floor = inner.compact_floor.load(Ordering::Acquire);
    check_revision(revision, current, (inner.oldest() - 1).max(floor))?;
    let mut events = Vec::new();
    // Records are keyed by their last revision; the first may begin at or before `revision`.
    for record in inner.trees.log.range(be(revision + 1)..=be(current)) {
        let (key, record) = record.map_err(|e| map_error("range", e))?;
        events.extend(
            decode_log_record(&key, &record)?
                .into_iter()
                .filter(|logged| logged.revision > revision),
        );
    }
    let touched = Touched::new(opts, revision, &events);
    let fetch = touched.fetch_limit(opts);
    let (current, complete) = entries(inner, opts, fetch, keys_only)?;
    if opts.collections {
        let collections = list_collections(opts, &TreeState(&inner.trees.data), fetch)?;
        return rewind_with_collections(opts, revision, touched, current, collections);
    }
    Ok(rewind(opts, revision, touched, current, complete))
}

fn range_now(inner: &Core, opts: &RangeOptions, revision: i64) -> Result<RangeResult> {
    if opts.count_only {
        let (start, end) = opts.effective_bounds();
        let mut count = 0u64;
        if end.as_ref().is_none_or(|end| *end > start) {
            for kv in scan(inner, &start, end.as_deref()) {
                kv.map_err(|e| map_error("range", e))?;
                count += 1;
            }
        }
        return Ok(RangeResult::counted(count, revision));
    }
    let (entries, complete) = entries(inner, opts, opts.limit, opts.keys_only)?;
    Ok(RangeResult::page(entries, !complete, revision))
}

/// The data tree's keys in `[start, end)`; `bounds()` starts at 0x01 at the lowest, so the
/// reserved collection keys are never read.
fn scan(inner: &Core, start: &[u8], end: Option<&[u8]>) -> sled::Iter {
    let data = &inner.trees.data;
    match end {
        Some(end) => data.range::<&[u8], _>(start..end),
        None => data.range::<&[u8], _>(start..),
    }
}

/// The current entries of `opts`'s effective range, at most `limit`, and whether that was
/// all of them.
fn entries(
    inner: &Core,
    opts: &RangeOptions,
    limit: Option<usize>,
    keys_only: bool,
) -> Result<(Vec<Entry>, bool)> {
    let (start, end) = opts.effective_bounds();
    if end.as_ref().is_some_and(|end| *end <= start) {
        return Ok((Vec::new(), true));
    }
    let limit = limit.unwrap_or(usize::MAX);
    let mut entries = Vec::new();
    for kv in scan(inner, &start, end.as_deref()) {
        let (key, value) = kv.map_err(|e| map_error("range", e))?;
        if entries.len() == limit {
            return Ok((entries, false));
        }
        entries.push(decode_entry(&key, &value, keys_only)?);
    }
    Ok((entries, true))
}
