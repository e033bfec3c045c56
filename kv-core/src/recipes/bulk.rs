//! The bulk loader: many keys in transactions of at most `max_txn_ops` puts, several in
//! flight, with progress reports, on any [`Store`].

use crate::Entry;
use crate::RangeOptions;
use crate::Store;
use crate::raw::{escape_bytes, validate_key};
use crate::retry::Backoff;
use crate::{Compare, CompareOp, OpResult, Txn, TxnOp};
use crate::{Error, ErrorKind, Result};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

/// Progress of a running load, passed to the callback after each batch is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkProgress {
    /// Keys done so far (written, or left to a newer write: see [`BulkReport::superseded`]).
    pub written: u64,
    /// Keys in the whole load.
    pub total: u64,
    /// Batches done so far.
    pub batches: u64,
}

/// The outcome of a finished load.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkReport {
    /// Keys that hold the loaded value.
    pub keys: u64,
    /// Keys another writer changed after their batch was sent and before a retry could tell
    /// whether it had been applied; the loader left them as that writer made them. Empty
    /// unless a batch's answer was lost. Ascending.
    pub superseded: Vec<Vec<u8>>,
    /// Batches written.
    pub batches: u64,
    /// The highest revision among the batches (every loaded key is visible from it on).
    pub revision: i64,
    /// Wall time of the load.
    pub elapsed: Duration,
}

impl BulkReport {
    /// Keys written per second.
    pub fn keys_per_second(&self) -> f64 {
        self.keys as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }
}

type ProgressFn = Box<dyn Fn(BulkProgress) + Send + Sync>;

/// Writes many keys quickly, for imports and migrations, on any [`Store`].
///
/// The input is sorted by key and cut into transactions of at most
/// [`BulkLoader::batch_size`] puts (by default the store's `max_txn_ops`),
/// [`BulkLoader::concurrency`] of them in flight. Each batch is atomic; the load as a whole
/// is not: when a batch fails, the batches done before it stay written, and the error says
/// how many keys that is.
///
/// **Retries never overwrite a newer write.** A batch whose answer is lost (`Unavailable`,
/// `Timeout`) may or may not have been applied. Before retrying, the loader reads the
/// batch's keys: if they all hold the batch's values from one revision, it was applied and
/// is done. Otherwise the retry is guarded by compares, so that it only writes keys nobody
/// changed since the batch was first sent; a key another writer changed meanwhile is left
/// as that writer made it and reported in [`BulkReport::superseded`]. A key deleted by
/// another writer after an applied batch whose answer was lost is told apart from one never
/// written only while some key of the batch still holds the batch's value.
///
/// ```
/// use keyplane_core::recipes::BulkLoader;
/// use keyplane_mem::MemStore;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemStore::new();
/// let items = (0..1_000).map(|i| (format!("import/{i:06}").into_bytes(), b"v".to_vec()));
/// let report = BulkLoader::new(&store)
///     .concurrency(8)
///     .on_progress(|p| eprintln!("{}/{} keys", p.written, p.total))
///     .load(items)
///     .await?;
/// assert_eq!(report.keys, 1_000);
/// assert!(report.superseded.is_empty());
/// # Ok::<(), keyplane_core::Error>(()) }).unwrap();
/// ```
pub struct BulkLoader<'a, S: ?Sized> {
    store: &'a S,
    batch_size: usize,
    concurrency: usize,
    attempts: u32,
    progress: Option<ProgressFn>,
}

impl<S: ?Sized> fmt::Debug for BulkLoader<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkLoader")
            .field("batch_size", &self.batch_size)
            .field("concurrency", &self.concurrency)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// What became of one batch.
#[derive(Default)]
struct Done {
    /// Keys of the batch (holding the loaded value, or superseded).
    keys: u64,
    superseded: Vec<Vec<u8>>,
    revision: i64,
}

impl<'a, S: Store + ?Sized> BulkLoader<'a, S> {
    /// A loader writing through `store`: batches of the store's `max_txn_ops`, 4 in flight,
    /// each tried up to 5 times.
    pub fn new(store: &'a S) -> Self {
        BulkLoader {
            store,
            batch_size: store.capabilities().max_txn_ops.max(1),
            concurrency: 4,
            attempts: 5,
            progress: None,
        }
    }

    /// Puts per transaction, at most the store's `max_txn_ops` (larger values are capped).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.clamp(1, self.store.capabilities().max_txn_ops.max(1));
        self
    }

    /// Transactions in flight at once (at least 1). Default: 4.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// How many times a batch is sent when its answer is lost (at least 1). Default: 5.
    pub fn attempts(mut self, n: u32) -> Self {
        self.attempts = n.max(1);
        self
    }

    /// Calls `f` after each batch is done.
    pub fn on_progress(mut self, f: impl Fn(BulkProgress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Box::new(f));
        self
    }

    /// Writes every `(key, value)`.
    ///
    /// The whole input is checked before anything is sent: an invalid key or value, or a key
    /// given twice, fails the load with nothing written.
    ///
    /// # Errors
    /// `InvalidKey`, `InvalidValue`, `TxnConflict` (a duplicate key) before sending; the
    /// first failing batch's error otherwise, with context `written` (keys done by then).
    pub async fn load(
        self,
        items: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
    ) -> Result<BulkReport> {
        let mut items: Vec<(Vec<u8>, Vec<u8>)> = items.into_iter().collect();
        items.sort_by(|a, b| a.0.cmp(&b.0));
        let caps = self.store.capabilities();
        for pair in items.windows(2) {
            if pair[0].0 == pair[1].0 {
                return Err(
                    Error::new(ErrorKind::TxnConflict, "a bulk load gives one key twice")
                        .with_context("key", escape_bytes(&pair[0].0)),
                );
            }
        }
        for (key, value) in &items {
            validate_key(key)?;
            caps.validate_value(value)?;
        }
        let started = Instant::now();
        let total = items.len() as u64;
        let mut written = 0u64;
        let mut batches_done = 0u64;
        let mut revision = 0i64;
        let mut superseded = Vec::new();
        let mut chunks = items.chunks(self.batch_size);
        let mut in_flight = FuturesUnordered::new();
        loop {
            while in_flight.len() < self.concurrency {
                match chunks.next() {
                    Some(batch) => in_flight.push(self.write_batch(batch)),
                    None => break,
                }
            }
            let Some(done) = in_flight.next().await else {
                break;
            };
            let done = done.map_err(|e| {
                e.with_context("op", "bulk_load")
                    .with_context("written", written)
            })?;
            written += done.keys;
            batches_done += 1;
            revision = revision.max(done.revision);
            superseded.extend(done.superseded);
            if let Some(f) = &self.progress {
                f(BulkProgress {
                    written,
                    total,
                    batches: batches_done,
                });
            }
        }
        superseded.sort();
        Ok(BulkReport {
            keys: total - superseded.len() as u64,
            superseded,
            batches: batches_done,
            revision,
            elapsed: started.elapsed(),
        })
    }

    /// Writes one batch (ascending, distinct keys), resolving lost answers before retrying.
    async fn write_batch(&self, batch: &[(Vec<u8>, Vec<u8>)]) -> Result<Done> {
        let mut done = Done {
            keys: batch.len() as u64,
            ..Done::default()
        };
        // Whatever changes a key after this revision is someone's write the retries must
        // not undo (the batch's own, if it was applied, included).
        let baseline = self.retrying(|| self.store.revision()).await?;
        let mut pending: Vec<&(Vec<u8>, Vec<u8>)> = batch.iter().collect();
        let policy = self.policy();
        let mut attempts = policy.start_at_failure();
        loop {
            let puts = pending.iter().map(|(k, v)| TxnOp::put(k, v));
            let txn = if attempts.failed() == 0 {
                Txn::new().and_then(puts)
            } else {
                Txn::new()
                    .when(
                        pending
                            .iter()
                            .map(|(k, _)| Compare::mod_revision(k, CompareOp::Less, baseline + 1)),
                    )
                    .and_then(puts)
            };
            let in_doubt = match self.store.txn(txn).await {
                Ok(resp) if resp.succeeded => {
                    done.revision = done.revision.max(resp.revision);
                    return Ok(done);
                }
                // A guarded retry whose compares failed: someone wrote a pending key since
                // the baseline, and the batch is known not to be applied. It counts as an
                // attempt, without a pause: the keys are read again at once.
                Ok(_) => {
                    attempts.record_failure();
                    false
                }
                Err(e) if e.is_retryable() => {
                    if !attempts.wait().await {
                        return Err(e);
                    }
                    true
                }
                Err(e) => return Err(e),
            };
            pending = self.resolve(&mut done, pending, baseline, in_doubt).await?;
            if pending.is_empty() {
                return Ok(done);
            }
        }
    }

    /// After an attempt with an unknown (`in_doubt`) or failed outcome: reads the pending
    /// keys, settles those that hold the loaded value or a newer write, and returns the
    /// keys still to write.
    async fn resolve<'b>(
        &self,
        done: &mut Done,
        pending: Vec<&'b (Vec<u8>, Vec<u8>)>,
        baseline: i64,
        in_doubt: bool,
    ) -> Result<Vec<&'b (Vec<u8>, Vec<u8>)>> {
        let gets = Txn::new().and_then(pending.iter().map(|(k, _)| TxnOp::get(k)));
        let read = self.retrying(|| self.store.txn(gets.clone())).await?;
        done.revision = done.revision.max(read.revision);
        let current: Vec<Option<Entry>> = read
            .results
            .into_iter()
            .map(|r| match r {
                OpResult::Get(entry) => Ok(entry),
                other => Err(Error::internal(format!(
                    "bulk_load: unexpected read result {other:?}"
                ))),
            })
            .collect::<Result<_>>()?;
        if in_doubt && self.applied(&pending, &current, baseline).await? {
            for ((key, value), entry) in pending.iter().map(|p| (&p.0, &p.1)).zip(&current) {
                if entry.as_ref().is_none_or(|e| &e.value != value) {
                    done.superseded.push(key.clone());
                }
            }
            return Ok(Vec::new());
        }
        let mut rest = Vec::new();
        for (item, entry) in pending.into_iter().zip(current) {
            match entry {
                Some(e) if e.mod_revision > baseline => {
                    if e.value != item.1 {
                        done.superseded.push(item.0.clone());
                    }
                }
                _ => rest.push(item),
            }
        }
        Ok(rest)
    }

    /// Whether the attempt with keys `pending` was applied: some key holds its value from a
    /// revision after the baseline, and at that revision every key of the attempt did.
    async fn applied(
        &self,
        pending: &[&(Vec<u8>, Vec<u8>)],
        current: &[Option<Entry>],
        baseline: i64,
    ) -> Result<bool> {
        let mut candidates: Vec<i64> = pending
            .iter()
            .zip(current)
            .filter_map(|(item, entry)| match entry {
                Some(e) if e.mod_revision > baseline && e.value == item.1 => Some(e.mod_revision),
                _ => None,
            })
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        for revision in candidates {
            let at = self.read_at(pending, revision).await?;
            let all = pending.iter().all(|(k, v)| {
                at.get(k.as_slice())
                    .is_some_and(|e| e.mod_revision == revision && &e.value == v)
            });
            if all {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The entries of `pending`'s keys (ascending) as they were at `revision`.
    async fn read_at(
        &self,
        pending: &[&(Vec<u8>, Vec<u8>)],
        revision: i64,
    ) -> Result<HashMap<Vec<u8>, Entry>> {
        let (Some(first), Some(last)) = (pending.first(), pending.last()) else {
            return Ok(HashMap::new());
        };
        // Keys hold no NUL byte, so the first key after `last` is `last` then 0x01.
        let mut end = last.0.clone();
        end.push(1);
        let wanted: std::collections::HashSet<&[u8]> =
            pending.iter().map(|(k, _)| k.as_slice()).collect();
        let mut found = HashMap::new();
        let mut opts = RangeOptions::interval(&first.0, &end).at_revision(revision);
        loop {
            let page = self.retrying(|| self.store.range(opts.clone())).await?;
            found.extend(
                page.entries
                    .into_iter()
                    .filter(|e| wanted.contains(e.key.as_slice()))
                    .map(|e| (e.key.clone(), e)),
            );
            match page.next {
                Some(next) => opts = opts.after(next),
                None => return Ok(found),
            }
        }
    }

    /// Runs a read, retrying retryable failures up to the loader's attempts.
    async fn retrying<T, F, Fut>(&self, f: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let policy = self.policy();
        let mut attempts = policy.start_at_failure();
        loop {
            match f().await {
                Err(e) if e.is_retryable() => {
                    if !attempts.wait().await {
                        return Err(e);
                    }
                }
                other => return other,
            }
        }
    }

    /// The pauses between the attempts of a batch or a read: the backend's request policy
    /// from 50 ms, at most the loader's attempts.
    fn policy(&self) -> Backoff {
        Backoff::requests()
            .initial(Duration::from_millis(50))
            .max_attempts(self.attempts)
    }
}
