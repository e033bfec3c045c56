//! Reads: single keys and paged ranges, straight from sled's ordered iteration.

use super::codec::decode_entry;
use super::error::map_sled;
use super::inner::Inner;
use kv_core::{Continuation, Entry, RangeOptions, RangeResult, Result, validate_key};
use std::sync::PoisonError;

pub(crate) fn get(inner: &Inner, key: &[u8]) -> Result<Option<Entry>> {
    validate_key(key)?;
    inner
        .trees
        .data
        .get(key)
        .map_err(map_sled)?
        .map(|bytes| decode_entry(key, &bytes, false))
        .transpose()
}

pub(crate) fn range(inner: &Inner, opts: &RangeOptions) -> Result<RangeResult> {
    opts.validate()?;
    // `bounds()` starts at 0x01 at the lowest: the reserved collection keys are never read.
    let (start, end) = opts.effective_bounds();
    let _gate = inner.gate.read().unwrap_or_else(PoisonError::into_inner);
    let revision = inner.revision();
    let empty = RangeResult {
        entries: Vec::new(),
        count: 0,
        next: None,
        revision,
    };
    if end.as_ref().is_some_and(|end| *end <= start) {
        return Ok(empty);
    }
    let data = &inner.trees.data;
    let mut iter = match &end {
        Some(end) => data.range::<&[u8], _>(start.as_slice()..end.as_slice()),
        None => data.range::<&[u8], _>(start.as_slice()..),
    };
    if opts.count_only {
        let mut count = 0u64;
        for kv in iter {
            kv.map_err(map_sled)?;
            count += 1;
        }
        return Ok(RangeResult { count, ..empty });
    }
    let limit = opts.limit.unwrap_or(usize::MAX);
    let mut entries = Vec::new();
    let mut next = None;
    for kv in iter.by_ref() {
        let (key, value) = kv.map_err(map_sled)?;
        if entries.len() == limit {
            next = entries
                .last()
                .map(|last: &Entry| Continuation::after_key(&last.key));
            break;
        }
        entries.push(decode_entry(&key, &value, opts.keys_only)?);
    }
    Ok(RangeResult {
        count: entries.len() as u64,
        entries,
        next,
        revision,
    })
}
