//! The task that keeps a [`Mirror`] current: list, watch, apply, confirm, resync, relist.

use super::{
    Handle, Indexer, Mirror, MirrorBatch, MirrorBuilder, MirrorCause, MirrorSnapshot, Shared,
    Stats, Typer,
};
use crate::error::{Error, Result};
use crate::keyspace::TypedEvent;
use crate::range::RangeOptions;
use crate::store::Store;
use crate::watch::{Event, WatchOptions, WatchStream};
use arc_swap::ArcSwap;
use futures::StreamExt;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};
use tokio::time::{Interval, MissedTickBehavior};

/// How long a confirmation waits for a watch batch that may already be on its way.
const CONFIRM_GRACE: Duration = Duration::from_millis(20);

/// Confirmations that find the view behind, with no batch arriving in between, before the
/// mirror takes the store's listing instead.
const MISMATCHES_BEFORE_RELIST: u32 = 3;

pub(super) async fn start<K, V>(b: MirrorBuilder<K, V>) -> Result<Mirror<K, V>>
where
    K: Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    let names: Arc<[&'static str]> = b.indexers.iter().map(|i| i.name).collect();
    let lister = Lister {
        store: b.store,
        range: b.range,
        page_size: b.page_size,
        typer: b.typer,
        indexers: b.indexers,
        names,
    };
    // A listing whose revision is compacted before the watch starts is listed again.
    let mut relists = 0;
    let (view, watch) = loop {
        let view = lister.list(None).await?;
        match lister.watch(view.revision).await {
            Ok(watch) => break (view, watch),
            Err(error) if error.compact_revision().is_some() && relists < 3 => relists += 1,
            Err(error) => return Err(error),
        }
    };
    let revision = view.revision;
    let shared = Arc::new(Shared {
        current: ArcSwap::from_pointee(view),
        revision: watch::channel(revision).0,
        subscribers: Mutex::new(Vec::new()),
        health: Mutex::new(Stats {
            store_revision: revision,
            current_at: Instant::now(),
            relists,
            resyncs: 0,
            repaired: 0,
            last_error: None,
        }),
    });
    let (confirm, requests) = mpsc::unbounded_channel();
    let worker = Worker {
        lister,
        shared: Arc::clone(&shared),
        watch,
        requests,
        pending: None,
        retry_at: None,
        mismatches: 0,
        resync: b.resync_every.map(interval),
        heartbeat: b.heartbeat.map(interval),
    };
    let task = tokio::spawn(worker.run());
    Ok(Mirror {
        handle: Arc::new(Handle {
            shared,
            confirm,
            task,
        }),
    })
}

fn interval(period: Duration) -> Interval {
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    interval
}

async fn tick(interval: &mut Option<Interval>) {
    match interval {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

async fn until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Lists and watches the range.
struct Lister<K, V> {
    store: Arc<dyn Store>,
    range: Vec<u8>,
    page_size: usize,
    typer: Typer<K, V>,
    indexers: Vec<Indexer<K, V>>,
    names: Arc<[&'static str]>,
}

impl<K: Clone, V: Clone> Lister<K, V> {
    /// The range as one view, every page read at one revision (`at`, or the store's current
    /// one).
    async fn list(&self, at: Option<i64>) -> Result<MirrorSnapshot<K, V>> {
        let mut opts = RangeOptions::prefix(&self.range).limit(self.page_size);
        if let Some(revision) = at {
            opts = opts.at_revision(revision);
        }
        let mut view = None;
        loop {
            let page = self.store.range(opts.clone()).await?;
            let view = view.get_or_insert_with(|| {
                MirrorSnapshot::empty(page.revision, Arc::clone(&self.names))
            });
            for entry in page.entries {
                view.apply(
                    Event::Put { entry, prev: None },
                    &self.typer,
                    &self.indexers,
                );
            }
            match page.next {
                Some(next) => opts = opts.after(next),
                None => break,
            }
        }
        view.ok_or_else(|| Error::internal("a listing without a first page"))
    }

    /// The mod revision of every key of the range at `revision`.
    async fn mod_revisions(&self, revision: i64) -> Result<BTreeMap<Vec<u8>, i64>> {
        let mut opts = RangeOptions::prefix(&self.range)
            .limit(self.page_size)
            .keys_only()
            .at_revision(revision);
        let mut keys = BTreeMap::new();
        loop {
            let page = self.store.range(opts.clone()).await?;
            keys.extend(page.entries.into_iter().map(|e| (e.key, e.mod_revision)));
            match page.next {
                Some(next) => opts = opts.after(next),
                None => return Ok(keys),
            }
        }
    }

    async fn watch(&self, after: i64) -> Result<WatchStream> {
        let opts = WatchOptions::prefix(&self.range).from_revision(after + 1);
        self.store.watch(opts).await
    }
}

struct Worker<K, V> {
    lister: Lister<K, V>,
    shared: Arc<Shared<K, V>>,
    watch: WatchStream,
    requests: mpsc::UnboundedReceiver<i64>,
    /// The highest revision a `wait_for` waits for that the view does not reflect yet.
    pending: Option<i64>,
    /// When to check the pending revision again.
    retry_at: Option<tokio::time::Instant>,
    mismatches: u32,
    resync: Option<Interval>,
    heartbeat: Option<Interval>,
}

impl<K, V> Worker<K, V>
where
    K: Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    async fn run(mut self) {
        loop {
            tokio::select! {
                item = self.watch.next() => match item {
                    Some(Ok(batch)) => {
                        self.mismatches = 0;
                        let mut next = self.view().as_ref().clone();
                        let mut events = Vec::with_capacity(batch.events.len());
                        for event in batch.events {
                            let change =
                                next.apply(event, &self.lister.typer, &self.lister.indexers);
                            events.extend(change);
                        }
                        next.revision = batch.revision;
                        self.publish(next, MirrorCause::Watch, events);
                    }
                    Some(Err(error)) => self.relist(Some(error)).await,
                    None => self.relist(None).await,
                },
                request = self.requests.recv() => match request {
                    Some(revision) => {
                        if revision > self.view().revision() {
                            self.pending = Some(self.pending.map_or(revision, |p| p.max(revision)));
                            self.retry_at.get_or_insert(tokio::time::Instant::now() + CONFIRM_GRACE);
                        }
                    }
                    // Every handle is gone.
                    None => return,
                },
                () = until(self.retry_at) => {
                    self.retry_at = None;
                    self.confirm().await;
                }
                () = tick(&mut self.resync) => self.resync_now().await,
                () = tick(&mut self.heartbeat) => self.beat().await,
            }
            if self.pending.is_some_and(|p| p <= self.view().revision()) {
                self.pending = None;
                self.retry_at = None;
            }
        }
    }

    fn view(&self) -> Arc<MirrorSnapshot<K, V>> {
        self.shared.current.load_full()
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, Stats> {
        self.shared.health.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Swaps `view` in, wakes the waiters and sends `events` to the subscribers.
    fn publish(
        &mut self,
        view: MirrorSnapshot<K, V>,
        cause: MirrorCause,
        events: Vec<TypedEvent<K, V>>,
    ) {
        let revision = view.revision;
        self.shared.current.store(Arc::new(view));
        self.shared.revision.send_replace(revision);
        if events.is_empty() {
            return;
        }
        let batch = MirrorBatch {
            revision,
            cause,
            events,
        };
        let mut subscribers = self
            .shared
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        subscribers.retain(|tx| tx.send(batch.clone()).is_ok());
    }

    /// The store's revision, noted in the health.
    async fn store_revision(&mut self) -> Option<i64> {
        match self.lister.store.revision().await {
            Ok(revision) => {
                let mut stats = self.stats();
                stats.store_revision = revision;
                if revision == self.shared.current.load().revision() {
                    stats.current_at = Instant::now();
                }
                Some(revision)
            }
            Err(error) => {
                self.stats().last_error = Some(error);
                None
            }
        }
    }

    /// Checks whether the view already reflects the store's revision (nothing changed in the
    /// range since the view's revision): then it is published at that revision. Otherwise a
    /// batch is on its way, or the view drifted: after a few checks without one, the store's
    /// listing replaces the view.
    async fn confirm(&mut self) {
        let Some(target) = self.pending else { return };
        let view = self.view();
        if view.revision() >= target {
            return;
        }
        let Some(store_revision) = self.store_revision().await else {
            self.retry_later();
            return;
        };
        if store_revision <= view.revision() {
            // `target` is beyond the store's revision: a batch will reach it.
            return;
        }
        let listed = match self.lister.mod_revisions(store_revision).await {
            Ok(listed) => listed,
            Err(error) => {
                self.stats().last_error = Some(error);
                self.retry_later();
                return;
            }
        };
        let same = listed.len() == view.raw_len()
            && view
                .mod_revisions()
                .all(|(key, revision)| listed.get(key) == Some(&revision));
        if same {
            let mut next = view.as_ref().clone();
            next.revision = store_revision;
            self.stats().current_at = Instant::now();
            self.publish(next, MirrorCause::Watch, Vec::new());
            return;
        }
        self.mismatches += 1;
        if self.mismatches >= MISMATCHES_BEFORE_RELIST {
            self.relist(None).await;
        } else {
            self.retry_later();
        }
    }

    fn retry_later(&mut self) {
        let wait = crate::raw::backoff(self.mismatches + 3);
        self.retry_at = Some(tokio::time::Instant::now() + wait);
    }

    /// An idle mirror confirms it is current when the store's revision is its own.
    async fn beat(&mut self) {
        let Some(store_revision) = self.store_revision().await else {
            return;
        };
        if store_revision > self.view().revision() && self.pending.is_none() {
            self.pending = Some(store_revision);
            self.retry_at
                .get_or_insert(tokio::time::Instant::now() + CONFIRM_GRACE);
        }
    }

    /// Lists the range at the view's revision and repairs any difference.
    async fn resync_now(&mut self) {
        let view = self.view();
        match self.lister.list(Some(view.revision())).await {
            Ok(listed) => {
                let repair = view.diff(&listed, &self.lister.typer);
                {
                    let mut stats = self.stats();
                    stats.resyncs += 1;
                    stats.repaired += repair.len() as u64;
                }
                if !repair.is_empty() {
                    self.publish(listed, MirrorCause::Resync, repair);
                }
            }
            // The view's revision is compacted away: list at the current one.
            Err(error) if error.compact_revision().is_some() => self.relist(Some(error)).await,
            Err(error) => self.stats().last_error = Some(error),
        }
    }

    /// Lists the range again and watches from there, retrying until both succeed; the
    /// subscribers get the difference.
    async fn relist(&mut self, cause: Option<Error>) {
        {
            let mut stats = self.stats();
            stats.relists += 1;
            if let Some(error) = cause {
                stats.last_error = Some(error);
            }
        }
        let mut attempt = 0;
        let (listed, watch) = loop {
            let next = async {
                let listed = self.lister.list(None).await?;
                let watch = self.lister.watch(listed.revision).await?;
                Ok::<_, Error>((listed, watch))
            };
            match next.await {
                Ok(next) => break next,
                Err(error) => {
                    self.stats().last_error = Some(error);
                    tokio::time::sleep(crate::raw::backoff(attempt)).await;
                    attempt = attempt.saturating_add(1);
                }
            }
        };
        self.watch = watch;
        self.mismatches = 0;
        let changes = self.view().diff(&listed, &self.lister.typer);
        {
            let mut stats = self.stats();
            stats.current_at = Instant::now();
            stats.store_revision = stats.store_revision.max(listed.revision);
        }
        self.publish(listed, MirrorCause::Relist, changes);
    }
}
