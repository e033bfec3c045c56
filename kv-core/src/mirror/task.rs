//! The task that keeps a [`Mirror`] current: load, watch, apply, confirm, resync, relist.

use super::batch::{MirrorBatch, MirrorCause};
use super::builder::MirrorBuilder;
use super::handle::{Handle, Mirror, Shared, Stats};
use super::snapshot::MirrorSnapshot;
use super::typer::{Indexer, Typer};
use crate::RangeOptions;
use crate::Store;
use crate::keyspace::TypedEvent;
use crate::{CollectionEvent, CollectionValue};
use crate::{CollectionKind, CollectionOp, CollectionResult};
use crate::{Error, ErrorKind, Result};
use crate::{Event, WatchBatch, WatchOptions, WatchStream};
use crate::{OpResult, Txn, TxnOp};
use arc_swap::ArcSwap;
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};
use tokio::time::{Interval, MissedTickBehavior};

/// How long a confirmation waits for a watch batch that may already be on its way.
const CONFIRM_GRACE: Duration = Duration::from_millis(20);
/// Between confirmations in a row that did not reach the pending revision: 400 ms doubling
/// up to 1 s, without end (the backend's request policy, from its fifth pause).
static CONFIRM_AGAIN: crate::retry::Backoff =
    crate::retry::Backoff::requests().initial(Duration::from_millis(400));

impl<K, V> MirrorBuilder<K, V>
where
    K: Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// Lists the range, publishes the first view and starts the task that keeps it current
    /// (on the current tokio runtime).
    ///
    /// # Errors
    /// The listing's or the watch's errors.
    pub async fn start(self) -> Result<Mirror<K, V>> {
        start(self).await
    }
}

async fn start<K, V>(b: MirrorBuilder<K, V>) -> Result<Mirror<K, V>>
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
        collections: b.collections,
    };
    // A listing whose revision is compacted before the watch starts is listed again.
    let mut relists = 0;
    let (view, watch) = loop {
        match lister.load().await {
            Ok(loaded) => break loaded,
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
        marking: false,
        attempts: CONFIRM_AGAIN.start_at_failure(),
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
    collections: bool,
}

impl<K: Clone, V: Clone> Lister<K, V> {
    /// A view of the range at one revision and the watch that continues from it.
    ///
    /// With collections: the listing at R names the collections, read-only transactions
    /// read their contents (each at some revision R' >= R), and a watch from R + 1 replays
    /// what happened since, each collection's changes from after the revision its contents
    /// were read at, until its progress mark: then every key and collection is at the
    /// mark's revision.
    async fn load(&self) -> Result<(MirrorSnapshot<K, V>, WatchStream)> {
        let (mut view, listed) = self.list(None).await?;
        if !self.collections {
            let watch = self.watch(view.revision, false).await?;
            return Ok((view, watch));
        }
        let mut read_at = HashMap::new();
        let chunk = self.store.capabilities().max_txn_ops.max(1);
        for ids in listed.chunks(chunk) {
            let reads = ids
                .iter()
                .map(|(key, kind)| TxnOp::Collection(CollectionOp::read_all(key.clone(), *kind)));
            let response = self.store.txn(Txn::new().and_then(reads)).await?;
            if response.results.len() != ids.len() {
                return Err(Error::internal("a read of collections lost results"));
            }
            for ((key, kind), result) in ids.iter().zip(response.results) {
                view.set_collection(key.clone(), contents(*kind, result)?, &self.typer);
                read_at.insert((key.clone(), *kind), response.revision);
            }
        }
        let mut watch = self.watch(view.revision, true).await?;
        loop {
            let batch = match watch.next().await {
                Some(batch) => batch?,
                None => return Err(Error::new(ErrorKind::Unavailable, "the watch ended")),
            };
            if batch.is_progress() {
                view.revision = view.revision.max(batch.revision);
                return Ok((view, watch));
            }
            for event in batch.events {
                match event {
                    Event::Collection(event) => {
                        let seen = read_at
                            .get(&(event.key.clone(), event.kind))
                            .is_some_and(|at| batch.revision <= *at);
                        if !seen {
                            view.apply_collection(&event, &self.typer)?;
                        }
                    }
                    event => {
                        view.apply(event, &self.typer, &self.indexers);
                    }
                }
            }
            view.revision = batch.revision;
        }
    }

    /// The range as one view, every page read at one revision (`at`, or the store's current
    /// one), with the collections it lists (their contents are not read).
    async fn list(
        &self,
        at: Option<i64>,
    ) -> Result<(MirrorSnapshot<K, V>, Vec<(Vec<u8>, CollectionKind)>)> {
        let mut opts = RangeOptions::prefix(&self.range).limit(self.page_size);
        if self.collections {
            opts = opts.with_collections();
        }
        if let Some(revision) = at {
            opts = opts.at_revision(revision);
        }
        let mut view = None;
        let mut listed = Vec::new();
        let mut collections = Vec::new();
        loop {
            let page = self.store.range(opts.clone()).await?;
            let view = view.get_or_insert_with(|| {
                MirrorSnapshot::empty(page.revision, Arc::clone(&self.names))
            });
            for entry in page.entries {
                view.load(entry, &self.typer, &self.indexers, &mut listed);
            }
            collections.extend(page.collections.into_iter().map(|c| (c.key, c.kind)));
            match page.next {
                Some(next) => opts = opts.after(next),
                None => break,
            }
        }
        let mut view = view.ok_or_else(|| Error::internal("a listing without a first page"))?;
        view.loaded(listed);
        Ok((view, collections))
    }

    /// A watch of the range from `after + 1`, with progress marks when asked.
    async fn watch(&self, after: i64, progress: bool) -> Result<WatchStream> {
        let mut opts = WatchOptions::prefix(&self.range).from_revision(after + 1);
        if self.collections {
            opts = opts.with_collections();
        }
        if progress {
            opts = opts.with_progress();
        }
        self.store.watch(opts).await
    }
}

/// The contents a [`CollectionOp::read_all`] returned.
fn contents(kind: CollectionKind, result: OpResult) -> Result<CollectionValue> {
    Ok(match (kind, result) {
        (CollectionKind::Set, OpResult::Collection(CollectionResult::Members(members))) => {
            CollectionValue::Set(members.into_iter().collect())
        }
        (CollectionKind::Map, OpResult::Collection(CollectionResult::Fields(fields))) => {
            CollectionValue::Map(fields.into_iter().collect())
        }
        (CollectionKind::List, OpResult::Collection(CollectionResult::Items(items))) => {
            CollectionValue::List(items)
        }
        (kind, other) => {
            return Err(Error::internal(format!(
                "a read of a {kind:?} returned {other:?}"
            )));
        }
    })
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
    /// Whether the watch was reopened with a progress mark that has not arrived yet.
    marking: bool,
    /// Confirmations in a row that did not reach the pending revision.
    attempts: crate::retry::Attempts<'static>,
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
                    Some(Ok(batch)) if batch.is_progress() => self.marked(batch.revision),
                    Some(Ok(batch)) => self.apply(batch).await,
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
                self.attempts.reset();
            }
        }
    }

    fn view(&self) -> Arc<MirrorSnapshot<K, V>> {
        self.shared.current.load_full()
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, Stats> {
        self.shared.health.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies one watch batch to a copy of the view and publishes it; a collection change
    /// that does not fit the contents held means the view drifted from the store (on Redis,
    /// another program's raw command): the mirror lists again.
    async fn apply(&mut self, batch: WatchBatch) {
        let view = self.view();
        if batch.revision <= view.revision() {
            // Changes that left no trace in the state a progress mark vouched for (on etcd,
            // a key created and deleted again before the mark): the view has their outcome.
            return;
        }
        let mut next = view.as_ref().clone();
        let mut events = Vec::with_capacity(batch.events.len());
        let mut collections = Vec::new();
        let mut drift = None;
        for event in batch.events {
            match event {
                Event::Collection(event) => {
                    if let Err(error) = next.apply_collection(&event, &self.lister.typer) {
                        drift.get_or_insert(error.with_context("revision", batch.revision));
                    }
                    collections.push(event);
                }
                event => {
                    let change = next.apply(event, &self.lister.typer, &self.lister.indexers);
                    events.extend(change);
                }
            }
        }
        next.revision = batch.revision;
        self.publish(next, MirrorCause::Watch, events, collections);
        if drift.is_some() {
            self.relist(drift).await;
        }
    }

    /// A progress mark: nothing in the range changed between the view's revision and
    /// `revision`, so the view reflects it.
    fn marked(&mut self, revision: i64) {
        self.marking = false;
        let view = self.view();
        {
            let mut stats = self.stats();
            stats.store_revision = stats.store_revision.max(revision);
            stats.current_at = Instant::now();
        }
        if revision > view.revision() {
            let mut next = view.as_ref().clone();
            next.revision = revision;
            self.publish(next, MirrorCause::Watch, Vec::new(), Vec::new());
        }
        if self.pending.is_some_and(|p| p > revision) {
            // Waiting for a revision the store had not reached: ask again later.
            self.retry_later();
        }
    }

    /// Swaps `view` in, wakes the waiters and sends the changes to the subscribers.
    fn publish(
        &mut self,
        view: MirrorSnapshot<K, V>,
        cause: MirrorCause,
        events: Vec<TypedEvent<K, V>>,
        collections: Vec<CollectionEvent>,
    ) {
        let revision = view.revision;
        self.shared.current.store(Arc::new(view));
        self.shared.revision.send_replace(revision);
        if events.is_empty() && collections.is_empty() {
            return;
        }
        let batch = MirrorBatch {
            revision,
            cause,
            events,
            collections,
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

    /// Makes sure the view reaches the pending revision even when nothing in the range
    /// changes: the watch is reopened from the view's revision with a progress mark, which
    /// arrives once every change up to the store's current revision has been delivered.
    async fn confirm(&mut self) {
        let Some(target) = self.pending else { return };
        let view = self.view();
        if view.revision() >= target || self.marking {
            return;
        }
        let Some(store_revision) = self.store_revision().await else {
            self.retry_later();
            return;
        };
        if store_revision <= view.revision() {
            // `target` is beyond the store's revision: a batch will reach it, or a later
            // confirmation.
            self.retry_later();
            return;
        }
        match self.lister.watch(view.revision(), true).await {
            Ok(watch) => {
                self.watch = watch;
                self.marking = true;
            }
            Err(error) if error.compact_revision().is_some() => self.relist(Some(error)).await,
            Err(error) => {
                self.stats().last_error = Some(error);
                self.retry_later();
            }
        }
    }

    fn retry_later(&mut self) {
        // The policy has no bound: there is always a next pause.
        let wait = self.attempts.next_delay().unwrap_or(Duration::from_secs(1));
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

    /// Compares the view with the store and repairs any difference. Plain keys are listed
    /// at the view's revision; a mirror with collections loads the range again instead (the
    /// contents of collections can only be read at the current revision), so its repair
    /// also carries the changes its watch had not delivered yet.
    async fn resync_now(&mut self) {
        let view = self.view();
        if self.lister.collections {
            match self.lister.load().await {
                Ok((loaded, watch)) => {
                    self.watch = watch;
                    self.marking = false;
                    let events = view.diff(&loaded, &self.lister.typer);
                    let collections = view.collection_diff(&loaded);
                    self.resynced(loaded, events, collections);
                }
                Err(error) => self.stats().last_error = Some(error),
            }
            return;
        }
        match self.lister.list(Some(view.revision())).await {
            Ok((listed, _)) => {
                let events = view.diff(&listed, &self.lister.typer);
                self.resynced(listed, events, Vec::new());
            }
            // The view's revision is compacted away: list at the current one.
            Err(error) if error.compact_revision().is_some() => self.relist(Some(error)).await,
            Err(error) => self.stats().last_error = Some(error),
        }
    }

    /// Counts a resync and publishes `view` with its repair, when there is one.
    fn resynced(
        &mut self,
        view: MirrorSnapshot<K, V>,
        events: Vec<TypedEvent<K, V>>,
        collections: Vec<CollectionEvent>,
    ) {
        {
            let mut stats = self.stats();
            stats.resyncs += 1;
            stats.repaired += (events.len() + collections.len()) as u64;
        }
        if events.is_empty() && collections.is_empty() {
            return;
        }
        self.publish(view, MirrorCause::Resync, events, collections);
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
        let policy = crate::retry::Backoff::requests();
        let mut attempts = policy.start_at_failure();
        let (listed, watch) = loop {
            match self.lister.load().await {
                Ok(loaded) => break loaded,
                Err(error) => {
                    self.stats().last_error = Some(error);
                    // The policy has no bound: this pauses and never gives up.
                    attempts.wait().await;
                }
            }
        };
        self.watch = watch;
        self.marking = false;
        let view = self.view();
        let changes = view.diff(&listed, &self.lister.typer);
        let collections = view.collection_diff(&listed);
        {
            let mut stats = self.stats();
            stats.current_at = Instant::now();
            stats.store_revision = stats.store_revision.max(listed.revision);
        }
        self.publish(listed, MirrorCause::Relist, changes, collections);
    }
}
