//! The bulk loader: many keys in transactions of at most `max_txn_ops` puts, several in
//! flight, with progress reports.

use crate::range::header_revision;
use crate::store::EtcdStore;
use etcd_client::{Txn as EtcdTxn, TxnOp as EtcdOp};
use futures::{StreamExt, TryStreamExt};
use kv_core::{Error, ErrorKind, Result, validate_key};
use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Progress of a running load, passed to the callback after each batch is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkProgress {
    /// Keys acknowledged so far.
    pub written: u64,
    /// Keys in the whole load.
    pub total: u64,
    /// Batches acknowledged so far.
    pub batches: u64,
}

/// The outcome of a finished load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BulkReport {
    /// Keys written.
    pub keys: u64,
    /// Transactions sent.
    pub batches: u64,
    /// The highest revision among the batches (every key is visible from it on).
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

/// Writes many keys quickly, for imports and migrations. Built by [`EtcdStore::bulk_loader`].
///
/// Keys are written in etcd transactions of at most [`BulkLoader::batch_size`] puts (by default
/// the store's `max_txn_ops`), [`BulkLoader::concurrency`] of them in flight. Each batch is
/// atomic; the load as a whole is not: when a batch fails, the batches acknowledged before it
/// stay written, and the error says how many keys that is.
///
/// ```no_run
/// # async fn load(store: kv_etcd::EtcdStore) -> kv_core::Result<()> {
/// let items = (0..10_000).map(|i| (format!("import/{i:06}").into_bytes(), b"v".to_vec()));
/// let report = store
///     .bulk_loader()
///     .concurrency(8)
///     .on_progress(|p| eprintln!("{}/{} keys", p.written, p.total))
///     .load(items)
///     .await?;
/// assert_eq!(report.keys, 10_000);
/// # Ok(()) }
/// ```
pub struct BulkLoader {
    store: EtcdStore,
    batch_size: usize,
    concurrency: usize,
    progress: Option<ProgressFn>,
}

impl fmt::Debug for BulkLoader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkLoader")
            .field("batch_size", &self.batch_size)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

impl EtcdStore {
    /// A bulk loader writing through this store (and its namespace).
    pub fn bulk_loader(&self) -> BulkLoader {
        BulkLoader {
            store: self.clone(),
            batch_size: self.inner.caps.max_txn_ops,
            concurrency: 4,
            progress: None,
        }
    }
}

impl BulkLoader {
    /// Puts per transaction, at most the store's `max_txn_ops` (larger values are capped).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.clamp(1, self.store.inner.caps.max_txn_ops);
        self
    }

    /// Transactions in flight at once (at least 1). Default: 4.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Calls `f` after each acknowledged batch.
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
    /// first failing batch's error otherwise, with context `written` (keys acknowledged).
    pub async fn load(
        self,
        items: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
    ) -> Result<BulkReport> {
        let items: Vec<(Vec<u8>, Vec<u8>)> = items.into_iter().collect();
        let caps = &self.store.inner.caps;
        let mut seen = HashSet::with_capacity(items.len());
        for (key, value) in &items {
            validate_key(key)?;
            caps.validate_value(value)?;
            if !seen.insert(key.as_slice()) {
                return Err(
                    Error::new(ErrorKind::TxnConflict, "a bulk load gives one key twice")
                        .with_context("key", kv_core::escape_bytes(key)),
                );
            }
        }
        drop(seen);
        let started = Instant::now();
        let total = items.len() as u64;
        let ns = &self.store.inner.ns;
        let batches: Vec<EtcdTxn> = items
            .chunks(self.batch_size)
            .map(|chunk| {
                let ops: Vec<EtcdOp> = chunk
                    .iter()
                    .map(|(k, v)| EtcdOp::put(ns.key(k), v.clone(), None))
                    .collect();
                EtcdTxn::new().and_then(ops)
            })
            .collect();
        let batch_count = batches.len() as u64;
        let written = AtomicU64::new(0);
        let done = AtomicU64::new(0);
        let store = &self.store;
        let progress = self.progress.as_deref();
        let sizes: Vec<u64> = items
            .chunks(self.batch_size)
            .map(|c| c.len() as u64)
            .collect();
        let revision = futures::stream::iter(batches.into_iter().zip(sizes))
            .map(|(batch, size)| {
                let (written, done) = (&written, &done);
                async move {
                    // Re-putting the same values is harmless, so a batch is retried like a read.
                    let resp = store
                        .call("bulk_load", true, || {
                            let t = batch.clone();
                            let mut kv = store.inner.kv.clone();
                            async move { kv.txn(t).await }
                        })
                        .await
                        .map_err(|e| e.with_context("written", written.load(Ordering::SeqCst)))?;
                    let p = BulkProgress {
                        written: written.fetch_add(size, Ordering::SeqCst) + size,
                        total,
                        batches: done.fetch_add(1, Ordering::SeqCst) + 1,
                    };
                    if let Some(f) = progress {
                        f(p);
                    }
                    header_revision(resp.header())
                }
            })
            .buffer_unordered(self.concurrency)
            .try_fold(0i64, |max, rev| async move { Ok(max.max(rev)) })
            .await?;
        Ok(BulkReport {
            keys: total,
            batches: batch_count,
            revision,
            elapsed: started.elapsed(),
        })
    }
}
