//! Watches: etcd watches that reconnect and resume at the last seen revision + 1; and
//! compaction, which ends the history watches can resume from.
//!
//! etcd sends every event of one revision in one `WatchResponse` (it only splits a revision
//! across responses when the `fragment` option is set, which is never set here; etcd issue
//! 9294), so grouping a response's events by revision gives exactly one batch per
//! transaction. The store raises the client's message limit so that a large transaction's
//! events still fit in one response.

use crate::core::{Core, collection_of_stamp, header_revision};
use crate::error::map_error;
use etcd_client::{
    CompactionOptions, EventType, GetOptions, SortOrder, SortTarget,
    WatchOptions as EtcdWatchOptions, WatchResponse,
};
use futures::StreamExt;
use keyplane_contract::raw::decode_changes;
use keyplane_contract::raw::layout;
use keyplane_contract::retry::{Attempts, Backoff};
use keyplane_contract::{
    CollectionChange, CollectionEvent, CollectionKind, Error, ErrorKind, Event, KeyRange, Result,
    WatchBatch, WatchOptions, WatchStream,
};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A watch connection that lived this long before failing resets the failure count.
const HEALTHY_CONNECTION: Duration = Duration::from_secs(10);

/// How often a watch that owes a progress mark checks whether its range is quiet.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// A live etcd watch and what is needed to re-create it.
struct Watcher {
    core: Arc<Core>,
    key: Vec<u8>,
    range_end: Vec<u8>,
    prev: bool,
    /// The watched range, and whether collections are reported: then the etcd watch covers
    /// the stamps of the collections in the range too, and more, filtered here.
    range: KeyRange,
    collections: bool,
    /// The first revision not yet delivered.
    next_revision: i64,
    stream: Option<etcd_client::WatchStream>,
    /// With progress asked for: the revision the progress mark is owed for (the store's
    /// revision when the watch was opened), until it is sent.
    mark: Option<i64>,
    progress: bool,
    ready: VecDeque<WatchBatch>,
    /// Consecutive failures (of connecting, or of a connection soon after it was made),
    /// under the backend's request policy and its configured retries.
    failures: Attempts<'static>,
    /// When the current connection was confirmed.
    connected_at: Option<Instant>,
    done: bool,
    /// A stamp whose record did not decode: the watch ends with this error.
    corrupted: Option<Error>,
}

/// A watch of `opts` (checked by the contract's front).
pub(crate) async fn watch(core: &Arc<Core>, opts: WatchOptions) -> Result<WatchStream> {
    let (start, end) = opts.range.bounds();
    // Collection changes are recorded in the collections' stamps (`\0 tag K`, see
    // `core::stamp_key`), which sort before every user key: one etcd watch from the first stamp
    // of the range to the range's end sees the plain keys and the stamps in one revision
    // order. It also sees the keys between them, which are dropped here.
    let first = if opts.collections {
        layout::kind_prefix(CollectionKind::List, &start)
    } else {
        start
    };
    let (key, range_end) = core.ns.range(&first, end.as_deref());
    let mut watcher = Watcher {
        core: Arc::clone(core),
        key,
        range_end,
        prev: opts.prev,
        range: opts.range,
        collections: opts.collections,
        next_revision: opts.start_revision.unwrap_or(0),
        stream: None,
        mark: None,
        progress: opts.progress,
        ready: VecDeque::new(),
        failures: Backoff::requests()
            .max_attempts(core.config.retries.saturating_add(1))
            .into_attempts(),
        connected_at: None,
        done: false,
        corrupted: None,
    };
    // The first connection is made before returning, so that every change after `watch`
    // returns is delivered and an unreachable cluster is reported here.
    watcher.connect().await?;
    watcher.connected_at = Some(Instant::now());
    Ok(futures::stream::unfold(watcher, |mut w| async move {
        let item = w.next().await?;
        Some((item, w))
    })
    .boxed())
}

impl Watcher {
    /// Opens the etcd watch from `next_revision` (or from now, the first time without one)
    /// and waits for etcd to confirm it.
    async fn connect(&mut self) -> Result<()> {
        let mut opts = EtcdWatchOptions::new().with_range(self.range_end.clone());
        if self.prev {
            opts = opts.with_prev_key();
        }
        if self.next_revision > 0 {
            opts = opts.with_start_revision(self.next_revision);
        }
        let mut client = self.core.watch.clone();
        let timeout = self.core.config.request_timeout;
        let open = async {
            let mut stream = client.watch(self.key.clone(), Some(opts)).await?;
            let created = stream.message().await?;
            Ok::<_, etcd_client::Error>((stream, created))
        };
        let (stream, created) = tokio::time::timeout(timeout, open)
            .await
            .map_err(|_| Error::new(ErrorKind::Timeout, "etcd did not confirm the watch"))?
            .map_err(|e| map_error("watch", e))?;
        let Some(created) = created else {
            return Err(Error::new(
                ErrorKind::Unavailable,
                "etcd closed the watch stream",
            ));
        };
        let revision = header_revision(created.header())?;
        if self.next_revision == 0 {
            self.next_revision = revision + 1;
        }
        self.check_canceled(&created)?;
        if std::mem::take(&mut self.progress) {
            self.mark = Some(revision);
            self.owe_mark();
        }
        self.stream = Some(stream);
        Ok(())
    }

    /// A canceled response ends the watch with `Compacted`, or asks for a reconnect.
    fn check_canceled(&mut self, resp: &WatchResponse) -> Result<()> {
        if resp.compact_revision() > 0 {
            self.done = true;
            return Err(Error::compacted(resp.compact_revision())
                .with_context("from_revision", self.next_revision));
        }
        if resp.canceled() {
            self.stream = None;
            return Err(
                Error::new(ErrorKind::Unavailable, "etcd canceled the watch")
                    .with_context("reason", resp.cancel_reason()),
            );
        }
        Ok(())
    }

    /// The next item of the stream: a batch, or the final error.
    async fn next(&mut self) -> Option<Result<WatchBatch>> {
        loop {
            if let Some(batch) = self.ready.pop_front() {
                return Some(Ok(batch));
            }
            if let Some(e) = self.corrupted.take() {
                self.done = true;
                return Some(Err(e));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.poll_once().await {
                if matches!(e.kind(), ErrorKind::Compacted { .. }) {
                    self.done = true;
                    return Some(Err(e));
                }
                self.stream = None;
                // A connection that stayed up a while was healthy: only consecutive quick
                // failures count towards giving up.
                if self
                    .connected_at
                    .take()
                    .is_some_and(|at| at.elapsed() >= HEALTHY_CONNECTION)
                {
                    self.failures.reset();
                }
                let Some(delay) = self.failures.next_delay() else {
                    self.done = true;
                    let reconnects = self.failures.failed() - 1;
                    return Some(Err(e.with_context("reconnects", reconnects)));
                };
                tracing::debug!(error = %e, next = self.next_revision, "watch reconnecting");
                tokio::time::sleep(delay).await;
            }
        }
    }

    /// Receives one response (connecting first if needed) and queues its batches.
    async fn poll_once(&mut self) -> Result<()> {
        if self.stream.is_none() {
            self.connect().await?;
            self.connected_at = Some(Instant::now());
        }
        let Some(stream) = self.stream.as_mut() else {
            return Ok(());
        };
        let resp = if let Some(mark) = self.mark {
            // etcd's own progress notifications are not usable here: before 3.4.24 and
            // 3.5.8 they can overtake the history a new watch is still replaying (etcd issue
            // 15220), and later versions can leave a quiet new watch without one (etcd issue
            // 17507). The range's state tells instead.
            let core = Arc::clone(&self.core);
            let mut check = tokio::time::interval(PROGRESS_EVERY);
            loop {
                tokio::select! {
                    resp = stream.message() => break resp,
                    _ = check.tick() => {
                        let from = self.next_revision;
                        if let Some(revision) =
                            quiet_since(&core, &self.key, &self.range_end, from).await?
                            && revision >= mark
                        {
                            self.mark = None;
                            self.ready.push_back(WatchBatch::progress(revision));
                            return Ok(());
                        }
                    }
                }
            }
        } else {
            stream.message().await
        };
        let resp = resp
            .map_err(|e| map_error("watch", e))?
            .ok_or_else(|| Error::new(ErrorKind::Unavailable, "etcd closed the watch stream"))?;
        self.check_canceled(&resp)?;
        self.queue(&resp);
        self.owe_mark();
        Ok(())
    }

    /// Sends the progress mark once the batches delivered reach its revision.
    fn owe_mark(&mut self) {
        if self.mark.is_some_and(|mark| self.next_revision > mark) {
            self.mark = None;
            self.ready
                .push_back(WatchBatch::progress(self.next_revision - 1));
        }
    }

    /// Groups a response's events into one batch per revision (plain events first, then
    /// collection events), skipping revisions already delivered (a resumed watch never
    /// repeats one) and events outside the watched range.
    fn queue(&mut self, resp: &WatchResponse) {
        let core = Arc::clone(&self.core);
        let ns = &core.ns;
        let mut seen = None;
        let mut collection_events: Vec<Event> = Vec::new();
        let flush = |ready: &mut VecDeque<WatchBatch>, revision: i64, events: &mut Vec<Event>| {
            if events.is_empty() {
                return;
            }
            match ready.back_mut() {
                Some(batch) if batch.revision == revision => batch.events.append(events),
                _ => ready.push_back(WatchBatch::new(revision, std::mem::take(events))),
            }
        };
        for ev in resp.events() {
            let Some(kv) = ev.kv() else { continue };
            let revision = kv.mod_revision();
            if revision < self.next_revision {
                continue;
            }
            if let Some(previous) = seen
                && previous != revision
            {
                flush(&mut self.ready, previous, &mut collection_events);
            }
            seen = Some(revision);
            let Some(key) = ns.strip(kv.key()) else {
                continue;
            };
            if layout::is_reserved(key) {
                if self.collections
                    && let Some(events) = self.collection_events(key, ev.event_type(), kv.value())
                {
                    collection_events.extend(events);
                }
                if self.corrupted.is_some() {
                    // Nothing from this revision on: the error follows the revisions before.
                    self.ready.retain(|b| b.revision < revision);
                    return;
                }
                continue;
            }
            if !self.range.contains(key) {
                continue;
            }
            let prev = ev.prev_kv().and_then(|p| ns.entry(p));
            let event = match ev.event_type() {
                EventType::Put => match ns.entry(kv) {
                    Some(entry) => Event::Put { entry, prev },
                    None => continue,
                },
                EventType::Delete => Event::Delete {
                    key: key.to_vec(),
                    prev,
                },
            };
            match self.ready.back_mut() {
                Some(batch) if batch.revision == revision => batch.events.push(event),
                _ => self.ready.push_back(WatchBatch::new(revision, vec![event])),
            }
        }
        if let Some(last) = seen {
            flush(&mut self.ready, last, &mut collection_events);
            self.next_revision = self.next_revision.max(last + 1);
        }
    }

    /// The collection events a change to a reserved key stands for: the changes recorded in
    /// a stamp that was written, or `Deleted` for a stamp deleted; none for a member key or a
    /// collection outside the range. A record that does not decode is reported as an
    /// unreadable collection, never dropped silently: it ends the watch with `Corrupted`.
    fn collection_events(
        &mut self,
        physical: &[u8],
        kind: EventType,
        value: &[u8],
    ) -> Option<Vec<Event>> {
        let (kind_of, key) = collection_of_stamp(physical)?;
        if !self.range.contains(key) {
            return None;
        }
        let changes = match kind {
            EventType::Delete => vec![CollectionChange::Deleted],
            // A stamp written before stamps recorded changes.
            EventType::Put if value.is_empty() => return None,
            EventType::Put => match decode_changes(value) {
                Ok(changes) => changes,
                Err(e) => {
                    self.corrupted = Some(
                        e.with_context("stamp", keyplane_contract::raw::escape_bytes(physical)),
                    );
                    return None;
                }
            },
        };
        Some(
            changes
                .into_iter()
                .map(|change| {
                    Event::Collection(CollectionEvent {
                        key: key.to_vec(),
                        kind: kind_of,
                        change,
                    })
                })
                .collect(),
        )
    }
}

/// The store's current revision P when nothing in the physical range `key..range_end`
/// changed from revision `from` to P, `None` when something did (its changes are on their
/// way to the watch) or `from - 1` is compacted (the watch reports it).
///
/// Nothing changed when the range's newest key at P is older than `from` (no put) and the
/// range holds as many keys at P as at `from - 1` (then no delete either). A key created and
/// deleted again in between leaves no trace in either: its events may still arrive after
/// the progress mark, with revisions not above it.
async fn quiet_since(core: &Core, key: &[u8], range_end: &[u8], from: i64) -> Result<Option<i64>> {
    let newest = core
        .call("watch", true, || {
            let (key, opts) = (
                key.to_vec(),
                GetOptions::new()
                    .with_range(range_end.to_vec())
                    .with_keys_only()
                    .with_sort(SortTarget::Mod, SortOrder::Descend)
                    .with_limit(1),
            );
            let mut kv = core.kv.clone();
            async move { kv.get(key, Some(opts)).await }
        })
        .await?;
    let now = header_revision(newest.header())?;
    if newest
        .kvs()
        .first()
        .is_some_and(|kv| kv.mod_revision() >= from)
    {
        return Ok(None);
    }
    let count = |revision: i64| {
        let opts = GetOptions::new()
            .with_range(range_end.to_vec())
            .with_count_only()
            .with_revision(revision);
        core.call("watch", true, move || {
            let (key, opts) = (key.to_vec(), opts.clone());
            let mut kv = core.kv.clone();
            async move { kv.get(key, Some(opts)).await }
        })
    };
    let at_now = count(now).await?.count();
    let before = if from > 1 {
        match count(from - 1).await {
            Ok(resp) => resp.count(),
            Err(e) if e.compact_revision().is_some() => return Ok(None),
            Err(e) => return Err(e),
        }
    } else {
        0
    };
    Ok((at_now == before).then_some(now))
}

pub(crate) async fn compact(core: &Core, revision: i64) -> Result<()> {
    if revision <= 0 {
        return Err(Error::invalid_argument(
            "a compaction revision is at least 1",
        ));
    }
    let result = core
        .call("compact", false, || {
            let mut kv = core.kv.clone();
            async move { kv.compact(revision, Some(CompactionOptions::new())).await }
        })
        .await;
    match result {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.kind(), ErrorKind::Compacted { .. }) => {
            let oldest = core.compact_revision().await?;
            Err(Error::compacted(oldest).with_context("requested", revision))
        }
        Err(e) => Err(e),
    }
}
