//! The chaos checks find what they look for: a store that serves stale reads fails the
//! linearizability check, one whose watches drop batches fails the watch properties, and
//! an honest MemStore passes both, all through the same driver `cargo xtask chaos` uses.

use futures::StreamExt;
use keyplane_core::raw::async_trait;
use keyplane_core::{
    Capabilities, LeaseGrant, LeaseId, LeaseInfo, RangeOptions, RangeResult, Result, ServerStatus,
    Store, Txn, TxnResponse, WatchOptions, WatchStream,
};
use keyplane_mem::MemStore;
use keyplane_tests::chaos::check::Analysis;
use keyplane_tests::chaos::history::Recorder;
use keyplane_tests::chaos::run::{Settings, exercise, workload};
use keyplane_tests::harness::key_root;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A MemStore with a bug on purpose.
struct Broken {
    inner: MemStore,
    /// Every fifth plain read is served from five revisions ago.
    stale_reads: bool,
    /// Every watch drops its 10th batch.
    drop_batches: bool,
    reads: AtomicU64,
}

#[async_trait]
impl Store for Broken {
    fn capabilities(&self) -> &Capabilities {
        self.inner.capabilities()
    }
    async fn revision(&self) -> Result<i64> {
        self.inner.revision().await
    }
    async fn range(&self, mut opts: RangeOptions) -> Result<RangeResult> {
        if self.stale_reads && self.reads.fetch_add(1, Ordering::Relaxed).is_multiple_of(5) {
            let now = self.inner.revision().await?;
            opts.revision = Some((now - 5).max(1));
        }
        self.inner.range(opts).await
    }
    async fn txn(&self, txn: Txn) -> Result<TxnResponse> {
        self.inner.txn(txn).await
    }
    async fn lease_grant(&self, ttl: Duration) -> Result<LeaseGrant> {
        self.inner.lease_grant(ttl).await
    }
    async fn lease_keep_alive(&self, id: LeaseId) -> Result<Duration> {
        self.inner.lease_keep_alive(id).await
    }
    async fn lease_revoke(&self, id: LeaseId) -> Result<()> {
        self.inner.lease_revoke(id).await
    }
    async fn lease_time_to_live(&self, id: LeaseId) -> Result<LeaseInfo> {
        self.inner.lease_time_to_live(id).await
    }
    async fn lease_list(&self) -> Result<Vec<LeaseId>> {
        self.inner.lease_list().await
    }
    async fn server_status(&self) -> Result<ServerStatus> {
        self.inner.server_status().await
    }
    async fn watch(&self, opts: WatchOptions) -> Result<WatchStream> {
        let stream = self.inner.watch(opts).await?;
        if !self.drop_batches {
            return Ok(stream);
        }
        Ok(stream
            .enumerate()
            .filter(|(i, _)| std::future::ready(*i != 9))
            .map(|(_, item)| item)
            .boxed())
    }
    async fn compact(&self, revision: i64) -> Result<()> {
        self.inner.compact(revision).await
    }
}

async fn run(stale_reads: bool, drop_batches: bool) -> Analysis {
    let store = Arc::new(Broken {
        inner: MemStore::new(),
        stale_reads,
        drop_batches,
        reads: AtomicU64::new(0),
    });
    let settings = Settings {
        duration: Duration::from_secs(3),
        clients: 4,
        seed: 7,
        budget: 2_000_000,
    };
    let work = workload(
        &key_root("chaos"),
        Duration::from_secs(5),
        Duration::from_millis(2),
    );
    let no_faults = |until: Instant| tokio::time::sleep_until(until.into());
    exercise(
        "broken",
        store,
        work,
        &settings,
        Arc::new(Recorder::new()),
        no_faults,
    )
    .await
    .analysis
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_store_passes() {
    let a = run(false, false).await;
    assert!(a.operations > 100, "{a:?}");
    assert_eq!(a.anomalies, Vec::<String>::new());
    assert_eq!(a.inconclusive, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_reads_are_not_linearizable() {
    let a = run(true, false).await;
    assert!(
        a.anomalies.iter().any(|x| x.starts_with("linearizability")),
        "{:?}",
        a.anomalies
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_that_drops_batches_is_not_reliable() {
    let a = run(false, true).await;
    assert!(
        a.anomalies.iter().any(|x| x.starts_with("watch reliable")),
        "{:?}",
        a.anomalies
    );
}
