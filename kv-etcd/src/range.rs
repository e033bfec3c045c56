//! Reads: `get`, paged `range` (at the current or a pinned revision, with or without
//! collections), and the store revision.

use crate::core::{Core, header_revision};
use etcd_client::{GetOptions, GetResponse};
use keyplane_contract::raw::emulation::{list_collections, merge_page};
use keyplane_contract::raw::layout;
use keyplane_contract::raw::prefix_end;
use keyplane_contract::{
    CollectionKind, Entry, Error, ErrorKind, RangeOptions, RangeResult, Result,
};
use std::collections::BTreeMap;

pub(crate) async fn revision(core: &Core) -> Result<i64> {
    // A linearizable count of one reserved key: the cheapest read that returns the current
    // revision from the leader's view.
    let key = core.ns.key(&[0]);
    let resp = core
        .call("revision", true, || {
            let key = key.clone();
            let mut kv = core.kv.clone();
            async move { kv.get(key, Some(GetOptions::new().with_count_only())).await }
        })
        .await?;
    header_revision(resp.header())
}

/// The entry of `key` (checked by the contract's front).
pub(crate) async fn get(core: &Core, key: &[u8]) -> Result<Option<Entry>> {
    let physical = core.ns.key(key);
    let resp = core
        .call("get", true, || {
            let key = physical.clone();
            let mut kv = core.kv.clone();
            async move { kv.get(key, None).await }
        })
        .await?;
    Ok(resp.kvs().first().and_then(|kv| core.ns.entry(kv)))
}

/// One page of `opts` (checked by the contract's front).
pub(crate) async fn range(core: &Core, opts: RangeOptions) -> Result<RangeResult> {
    if opts.collections {
        range_with_collections(core, opts).await
    } else {
        range_plain(core, opts).await
    }
}

async fn range_plain(core: &Core, opts: RangeOptions) -> Result<RangeResult> {
    let (start, end) = opts.effective_bounds();
    let (key, range_end) = core.ns.range(&start, end.as_deref());
    if range_end != [0] && key >= range_end {
        // An empty interval (start == end): etcd would read the single key `start`.
        return Ok(RangeResult {
            collections: Vec::new(),
            entries: Vec::new(),
            count: 0,
            next: None,
            revision: match opts.pinned_revision() {
                Some(revision) => revision,
                None => revision(core).await?,
            },
            groups: None,
        });
    }
    let mut get = GetOptions::new().with_range(range_end);
    if let Some(limit) = opts.limit {
        get = get.with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
    }
    if opts.keys_only {
        get = get.with_keys_only();
    }
    if opts.count_only {
        get = get.with_count_only();
    }
    if let Some(revision) = opts.pinned_revision() {
        get = get.with_revision(revision);
    }
    let resp = core
        .call("range", true, || {
            let key = key.clone();
            let get = get.clone();
            let mut kv = core.kv.clone();
            async move { kv.get(key, Some(get)).await }
        })
        .await;
    let resp = match resp {
        Err(e) if matches!(e.kind(), ErrorKind::Compacted { .. }) => {
            // etcd's message does not say how far: ask.
            let oldest = core.compact_revision().await?;
            return Err(Error::compacted(oldest)
                .with_context("revision", opts.pinned_revision().unwrap_or(0)));
        }
        other => other?,
    };
    page(core, &opts, resp)
}

/// A page of plain entries and collections: the plain read fixes the revision (the pinned
/// one, or the current one), and the members of each kind of collection in the range are
/// read at that same revision (keys only) and grouped. Costs O(members) of the collections
/// in the page's span.
async fn range_with_collections(core: &Core, opts: RangeOptions) -> Result<RangeResult> {
    let per_source = opts.limit.filter(|_| !opts.count_only).map(|l| l + 1);
    let mut plain = opts.clone();
    plain.collections = false;
    plain.count_only = false;
    plain.keys_only = opts.keys_only || opts.count_only;
    plain.limit = per_source;
    let first = range_plain(core, plain).await?;
    let revision = first.revision;
    let (start, end) = opts.effective_bounds();
    let mut members: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for kind in CollectionKind::ALL {
        let tag = layout::kind_prefix(kind, b"");
        let lower = core.ns.key(&layout::kind_prefix(kind, &start));
        let upper = match &end {
            Some(end) => core.ns.key(&layout::kind_prefix(kind, end)),
            None => core.ns.key(&prefix_end(&tag).unwrap_or_else(|| vec![0xff])),
        };
        let get = GetOptions::new()
            .with_range(upper)
            .with_keys_only()
            .with_revision(revision);
        let resp = core
            .call("range", true, || {
                let (key, get) = (lower.clone(), get.clone());
                let mut kv = core.kv.clone();
                async move { kv.get(key, Some(get)).await }
            })
            .await?;
        for kv in resp.kvs() {
            if let Some(physical) = core.ns.strip(kv.key()) {
                members.insert(physical.to_vec(), Vec::new());
            }
        }
    }
    let collections = list_collections(&opts, &members, per_source)?;
    Ok(merge_page(&opts, revision, first.entries, collections))
}

fn page(core: &Core, opts: &RangeOptions, resp: GetResponse) -> Result<RangeResult> {
    // The header has the current revision; a pinned read was served at its own.
    let revision = match opts.pinned_revision() {
        Some(revision) => revision,
        None => header_revision(resp.header())?,
    };
    if opts.count_only {
        return Ok(RangeResult::counted(
            u64::try_from(resp.count()).unwrap_or(0),
            revision,
        ));
    }
    let entries: Vec<Entry> = resp
        .kvs()
        .iter()
        .filter_map(|kv| core.ns.entry(kv))
        .collect();
    Ok(RangeResult::page(entries, resp.more(), revision))
}
