//! Range reads over the ordered map: O(log N + M) for a page of M keys.

use super::state::State;
use kv_core::{Continuation, RangeOptions, RangeResult, Result};
use std::ops::Bound;

impl State {
    /// One page of `opts` (already validated).
    pub(crate) fn range(&self, opts: &RangeOptions) -> Result<RangeResult> {
        let (start, end) = opts.effective_bounds();
        let upper = match &end {
            Some(end) if end.as_slice() <= start.as_slice() => {
                return Ok(self.page(Vec::new(), 0, None));
            }
            Some(end) => Bound::Excluded(end.as_slice()),
            None => Bound::Unbounded,
        };
        let mut iter = self
            .kv
            .range::<[u8], _>((Bound::Included(start.as_slice()), upper));
        if opts.count_only {
            return Ok(self.page(Vec::new(), iter.count() as u64, None));
        }
        let limit = opts.limit.unwrap_or(usize::MAX);
        let entries: Vec<_> = iter
            .by_ref()
            .take(limit)
            .map(|(key, stored)| stored.entry(key, opts.keys_only))
            .collect();
        let next = match (entries.last(), iter.next()) {
            (Some(last), Some(_)) => Some(Continuation::after_key(&last.key)),
            _ => None,
        };
        let count = entries.len() as u64;
        Ok(self.page(entries, count, next))
    }

    fn page(
        &self,
        entries: Vec<kv_core::Entry>,
        count: u64,
        next: Option<Continuation>,
    ) -> RangeResult {
        RangeResult {
            entries,
            count,
            next,
            revision: self.revision,
        }
    }
}
