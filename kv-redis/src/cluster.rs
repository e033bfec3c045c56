//! The cluster store's co-location groups: each group's [`Core`], made on first use; the
//! registry of groups (the set `{internal prefix}groups`, which every store adds a group to
//! before its first write there); and the reads that span groups: a range served by every
//! group it may reach and merged in key order, and a watch that follows every such group
//! (and each group that appears later) and tags each batch with its group.

use crate::core::Core;
use crate::error::{map_error, unavailable};
use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use keyplane_core::raw::GroupRevisions;
use keyplane_core::raw::emulation::cut_page;
use keyplane_core::{
    Continuation, Error, KeyRange, RangeOptions, RangeResult, Result, WatchBatch, WatchOptions,
    WatchStream,
};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// How often a watch spanning groups reads the registry for groups that appeared since.
/// A new group's changes are delivered from its first revision, so this bounds how late its
/// first events arrive, never whether they do.
pub(crate) const DISCOVERY: Duration = Duration::from_millis(200);

/// Group ranges read at once by a range spanning groups.
const CONCURRENT_GROUPS: usize = 16;

/// The co-location groups of a cluster store.
pub(crate) struct Groups {
    /// The store's own core, which the groups' cores are made from.
    base: Arc<Core>,
    /// The core of each group used so far, by hash tag.
    cores: Mutex<HashMap<Vec<u8>, Arc<Core>>>,
    /// The registry of groups.
    registry: Vec<u8>,
}

impl Groups {
    pub(crate) fn new(base: Arc<Core>) -> Self {
        Groups {
            registry: base.internal("groups"),
            base,
            cores: Mutex::new(HashMap::new()),
        }
    }

    /// The core of the group whose hash tag is `tag`.
    pub(crate) fn core(&self, tag: &[u8]) -> Arc<Core> {
        let mut cores = self.cores.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(
            cores
                .entry(tag.to_vec())
                .or_insert_with(|| Arc::new(self.base.group(tag))),
        )
    }

    /// Every group in the registry (a connection failure is retryable).
    async fn registered(&self, op: &'static str) -> Result<BTreeSet<Vec<u8>>> {
        let mut con = self.base.con.clone();
        let tags: Vec<Vec<u8>> = redis::cmd("SMEMBERS")
            .arg(self.registry.as_slice())
            .query_async(&mut con)
            .await
            .map_err(|e| unavailable(map_error(op, e)))?;
        Ok(tags.into_iter().collect())
    }

    /// How many groups the registry holds (a connection failure is retryable).
    async fn registered_count(&self, op: &'static str) -> Result<u64> {
        let mut con = self.base.con.clone();
        redis::cmd("SCARD")
            .arg(self.registry.as_slice())
            .query_async(&mut con)
            .await
            .map_err(|e| unavailable(map_error(op, e)))
    }
}

/// Which groups a range may reach: the keys of a group all hold `{tag}` at their first `{`,
/// so a range whose keys share a first `{` names the start of every tag it may reach.
fn tag_start(range: &KeyRange) -> &[u8] {
    let shared = range.shared_prefix();
    match shared.iter().position(|&b| b == b'{') {
        Some(open) => &shared[open + 1..],
        None => &[],
    }
}

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
            let page = crate::range::range(&core, group_opts).await;
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

/// A group's watch, each batch tagged with the group.
type Tagged = BoxStream<'static, Result<WatchBatch>>;

/// The watch of the one group `tag` that `opts` covers, from its start, tagging its batches.
pub(crate) async fn watch_group(
    groups: &Groups,
    tag: &[u8],
    opts: &WatchOptions,
) -> Result<Tagged> {
    open_group(groups, tag, opts, start_of(opts, tag)).await
}

/// Opens the watch of one group from `start` (`None`: from now), tagging its batches.
async fn open_group(
    groups: &Groups,
    tag: &[u8],
    opts: &WatchOptions,
    start: Option<i64>,
) -> Result<Tagged> {
    let mut group_opts = opts.clone();
    group_opts.start_revision = start;
    group_opts.group_starts = None;
    let stream = crate::watch::watch(&groups.core(tag), group_opts).await?;
    let tag = tag.to_vec();
    Ok(stream
        .map(move |item| item.map(|batch| batch.in_group(tag.clone())))
        .boxed())
}

/// Where a group's watch starts: its named start; with starts given, the first revision of
/// a group they do not name (it is new since they were taken); otherwise the start revision
/// (of a watch within the group) or now.
fn start_of(opts: &WatchOptions, tag: &[u8]) -> Option<i64> {
    match &opts.group_starts {
        Some(starts) => Some(starts.get(tag).copied().unwrap_or(1)),
        None => opts.start_revision,
    }
}

/// A watch over several groups: each group in the registry (and each one the starts name)
/// from its start, and every group that appears later from its first revision, merged as
/// their batches come. `opts` is validated by the caller.
pub(crate) async fn watch(groups: Arc<Groups>, opts: WatchOptions) -> Result<WatchStream> {
    if opts.start_revision.is_some() {
        return Err(Error::invalid_argument(
            "a watch spanning co-location groups starts from each group's position \
             (WatchOptions::from_position), or from now: each group counts its own revisions",
        ));
    }
    let prefix = tag_start(&opts.range).to_vec();
    // Counted before the listing: a group added in between is read again, never missed.
    let mut count = groups.registered_count("watch").await?;
    let mut known = groups.registered("watch").await?;
    if let Some(starts) = &opts.group_starts {
        known.extend(starts.keys().cloned());
    }
    known.retain(|t| t.starts_with(&prefix));
    let mut streams = SelectAll::new();
    for tag in &known {
        streams.push(open_group(&groups, tag, &opts, start_of(&opts, tag)).await?);
    }
    let (tx, rx) = mpsc::channel(64);
    let retries = groups.base.config.watch_retries;
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(DISCOVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failures = 0u32;
        loop {
            tokio::select! {
                _ = tx.closed() => return,
                Some(item) = streams.next(), if !streams.is_empty() => {
                    let failed = item.is_err();
                    if tx.send(item).await.is_err() || failed {
                        return;
                    }
                }
                _ = tick.tick() => {
                    match discover(&groups, &opts, &prefix, &mut known, &mut count, &mut streams)
                        .await
                    {
                        Ok(()) => failures = 0,
                        // The registry's master may be failing over: read it again at the
                        // next tick (what was not found yet is found then).
                        Err(err) if err.is_retryable() && failures < retries => {
                            failures += 1;
                            tracing::debug!(%err, failures, "group discovery failed; retrying");
                        }
                        Err(err) => {
                            let _ = tx.send(Err(err)).await;
                            return;
                        }
                    }
                }
            }
        }
    });
    Ok(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
    .boxed())
}

/// Adds to `streams` the watch of each group that appeared in the registry since it was last
/// read, each from its first revision (all of its changes came after the watch began). On an
/// error, the groups found so far are followed, and `count` stays, so that the next call
/// reads the registry again for the rest.
async fn discover(
    groups: &Groups,
    opts: &WatchOptions,
    prefix: &[u8],
    known: &mut BTreeSet<Vec<u8>>,
    count: &mut u64,
    streams: &mut SelectAll<Tagged>,
) -> Result<()> {
    let now = groups.registered_count("watch").await?;
    if now == *count {
        return Ok(());
    }
    for tag in groups.registered("watch").await? {
        if tag.starts_with(prefix) && !known.contains(&tag) {
            streams.push(
                open_group(groups, &tag, opts, Some(1))
                    .await
                    .map_err(unavailable)?,
            );
            known.insert(tag);
        }
    }
    *count = now;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_names_the_start_of_the_tags_it_may_reach() {
        assert_eq!(tag_start(&KeyRange::Prefix(b"nxc:map:".to_vec())), b"");
        assert_eq!(tag_start(&KeyRange::Prefix(b"nxc:map:{eu".to_vec())), b"eu");
        assert_eq!(
            tag_start(&KeyRange::Interval {
                start: b"a{x1".to_vec(),
                end: Some(b"a{x2".to_vec())
            }),
            b"x"
        );
        assert_eq!(
            tag_start(&KeyRange::Interval {
                start: b"a{x1".to_vec(),
                end: None
            }),
            b""
        );
    }
}
