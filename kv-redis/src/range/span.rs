//! A range spanning co-location groups on Redis Cluster: served by every group it may reach
//! and merged in key order.

use crate::core::cluster::{Groups, tag_start};
use futures::StreamExt;
use keyplane_contract::raw::GroupRevisions;
use keyplane_contract::raw::emulation::cut_page;
use keyplane_contract::{Continuation, Error, RangeOptions, RangeResult, Result};

/// Group ranges read at once by a range spanning groups.
const CONCURRENT_GROUPS: usize = 16;

/// A range over several groups: every group it may reach (those in the registry when the
/// first page is read, each at its current revision; on a later page, the same groups at the
/// same revisions) read from the same start, merged in key order and cut at the limit.
/// `opts` is validated by the caller.
pub(crate) async fn range(groups: &Groups, opts: RangeOptions) -> Result<RangeResult> {
    if opts.revision.is_some() {
        return Err(Error::invalid_argument(
            "a range spanning co-location groups is read at each group's revision: it cannot \
             be pinned to one (pin a range within one group)",
        ));
    }
    let pinned = opts
        .after
        .as_ref()
        .and_then(|c| c.group_revisions().cloned());
    if pinned.is_none() && opts.after.as_ref().is_some_and(|c| c.revision().is_some()) {
        return Err(Error::invalid_argument(
            "this continuation is not of a range spanning co-location groups",
        ));
    }
    let tags: Vec<(Vec<u8>, Option<i64>)> = match &pinned {
        // A group empty when the first page was read stays empty for this listing.
        Some(revisions) => revisions
            .iter()
            .filter(|(_, r)| **r > 0)
            .map(|(t, r)| (t.clone(), Some(*r)))
            .collect(),
        None => {
            let start = tag_start(&opts.range);
            groups
                .registered("range")
                .await?
                .into_iter()
                .filter(|t| t.starts_with(start))
                .map(|t| (t, None))
                .collect()
        }
    };
    let start = opts.effective_bounds().0;
    let reads = futures::stream::iter(tags.into_iter().map(|(tag, revision)| {
        let core = groups.core(&tag);
        let mut group_opts = opts.clone();
        group_opts.after = Some(match revision {
            Some(r) => Continuation::starting_at(start.clone()).at_revision(r),
            None => Continuation::starting_at(start.clone()),
        });
        async move {
            let page = super::range(&core, group_opts).await;
            page.map(|page| (tag, page))
        }
    }))
    .buffer_unordered(CONCURRENT_GROUPS)
    .collect::<Vec<_>>()
    .await;
    let mut revisions = pinned.unwrap_or_default();
    let mut pages = Vec::with_capacity(reads.len());
    for read in reads {
        let (tag, page) = read?;
        revisions.insert(tag, page.revision);
        pages.push(page);
    }
    Ok(merge(&opts, pages, revisions))
}

/// One page from the groups' pages, each complete up to its last key: in key order, cut
/// after the `limit`-th key. Every key up to the cut is in some group's page (a group with
/// more keys returned `limit` of them, all at or after the cut).
fn merge(opts: &RangeOptions, pages: Vec<RangeResult>, revisions: GroupRevisions) -> RangeResult {
    let more = pages.iter().any(RangeResult::more);
    let mut result = RangeResult {
        entries: Vec::new(),
        collections: Vec::new(),
        count: 0,
        next: None,
        revision: 0,
        groups: None,
    };
    for page in pages {
        result.count += page.count;
        result.entries.extend(page.entries);
        result.collections.extend(page.collections);
    }
    if !opts.count_only {
        result.entries.sort_by(|a, b| a.key.cmp(&b.key));
        // One key holds one Redis type: no two collections share a key.
        result.collections.sort_by(|a, b| a.key.cmp(&b.key));
        let cut = cut_page(
            opts.limit,
            more,
            &mut result.entries,
            &mut result.collections,
        );
        result.next =
            cut.map(|cut| Continuation::after_key(&cut).at_group_revisions(revisions.clone()));
        result.count = (result.entries.len() + result.collections.len()) as u64;
    }
    result.groups = Some(revisions);
    result
}
