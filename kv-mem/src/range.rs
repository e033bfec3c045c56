//! Range reads over the ordered map: O(log N + M) for a page of M keys; at a past revision,
//! the current entries rewound through the retained history.

use crate::core::{Shared, State};
use keyplane_contract::driver::Checked;
use keyplane_contract::raw::emulation::{
    Touched, check_revision, list_collections, merge_page, rewind, rewind_with_collections,
};
use keyplane_contract::{Entry, RangeOptions, RangeResult, Result};
use std::ops::Bound;

/// The store's current revision.
pub(crate) fn revision(shared: &Shared) -> Result<i64> {
    Ok(shared.state()?.revision)
}

/// One page of a range.
pub(crate) fn range(shared: &Shared, opts: &Checked<RangeOptions>) -> Result<RangeResult> {
    shared.state()?.range(opts)
}

/// The entry of one key.
pub(crate) fn get(shared: &Shared, key: Checked<&[u8]>) -> Result<Option<Entry>> {
    let key = key.into_inner();
    let state = shared.state()?;
    Ok(state.kv.get(key).map(|stored| stored.entry(key, false)))
}

impl State {
    /// One page of `opts` (already validated), at its pinned revision or the current one.
    fn range(&self, opts: &RangeOptions) -> Result<RangeResult> {
        let keys_only = opts.keys_only || opts.count_only;
        let revision = match opts.pinned_revision() {
            Some(r) if r != self.revision => r,
            _ if opts.collections => {
                let per_source = opts.limit.filter(|_| !opts.count_only).map(|l| l + 1);
                let (entries, _) = self.entries(opts, per_source, keys_only);
                let collections = list_collections(opts, &self.members, per_source)?;
                return Ok(merge_page(opts, self.revision, entries, collections));
            }
            _ => return Ok(self.range_now(opts)),
        };
        check_revision(
            revision,
            self.revision,
            self.history.oldest_readable(self.revision),
        )?;
        let touched = Touched::new(opts, revision, &self.history.since(revision));
        let fetch = touched.fetch_limit(opts);
        let (entries, complete) = self.entries(opts, fetch, keys_only);
        if opts.collections {
            let collections = list_collections(opts, &self.members, fetch)?;
            return rewind_with_collections(opts, revision, touched, entries, collections);
        }
        Ok(rewind(opts, revision, touched, entries, complete))
    }

    fn range_now(&self, opts: &RangeOptions) -> RangeResult {
        if opts.count_only {
            let (start, end) = opts.effective_bounds();
            let count = match &end {
                Some(end) if end.as_slice() <= start.as_slice() => 0,
                Some(end) => self
                    .kv
                    .range::<[u8], _>((
                        Bound::Included(start.as_slice()),
                        Bound::Excluded(end.as_slice()),
                    ))
                    .count(),
                None => self
                    .kv
                    .range::<[u8], _>((Bound::Included(start.as_slice()), Bound::Unbounded))
                    .count(),
            };
            return RangeResult::counted(count as u64, self.revision);
        }
        let (entries, complete) = self.entries(opts, opts.limit, opts.keys_only);
        RangeResult::page(entries, !complete, self.revision)
    }

    /// The current entries of `opts`'s effective range, at most `limit`, and whether that was
    /// all of them.
    fn entries(
        &self,
        opts: &RangeOptions,
        limit: Option<usize>,
        keys_only: bool,
    ) -> (Vec<Entry>, bool) {
        let (start, end) = opts.effective_bounds();
        let upper = match &end {
            Some(end) if end.as_slice() <= start.as_slice() => return (Vec::new(), true),
            Some(end) => Bound::Excluded(end.as_slice()),
            None => Bound::Unbounded,
        };
        let mut iter = self
            .kv
            .range::<[u8], _>((Bound::Included(start.as_slice()), upper));
        let entries: Vec<Entry> = iter
            .by_ref()
            .take(limit.unwrap_or(usize::MAX))
            .map(|(key, stored)| stored.entry(key, keys_only))
            .collect();
        let complete = iter.next().is_none();
        (entries, complete)
    }
}
