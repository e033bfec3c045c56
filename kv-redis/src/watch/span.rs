//! Watches on Redis Cluster: a group's watch tagged with its group, and a watch spanning
//! groups that follows every group it may reach (and each group that appears later).

use crate::core::cluster::{DISCOVERY, Groups, tag_start};
use crate::error::unavailable;
use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use keyplane_contract::{Error, Result, WatchBatch, WatchOptions, WatchStream};
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::mpsc;

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
    let stream = super::watch(&groups.core(tag), group_opts).await?;
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
