//! The cost of layers: a `MemStore` get (an existing key, and a missing one) bare, and
//! through retry + timeout + tracing (no subscriber) + metrics (no recorder), in the same
//! run, interleaved in rounds of 1,000 calls; the table gives the median ns per call of each
//! and their difference (the stack's cost per operation). Measured on a current-thread and on
//! the default multi-thread runtime.
//!
//! `cargo bench -p keyplane-tests --bench layers` (`KV_BENCH_QUICK=1` takes fewer rounds).

use keyplane_core::layer::{MetricsLayer, RetryLayer, StoreExt, TimeoutLayer, TracingLayer};
use keyplane_core::{PutOptions, Store};
use keyplane_mem::MemStore;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CALLS: u32 = 1_000;

fn rounds() -> usize {
    if std::env::var_os("KV_BENCH_QUICK").is_some() {
        50
    } else {
        400
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn per_call(store: &dyn Store, key: &[u8]) -> f64 {
    let started = Instant::now();
    for _ in 0..CALLS {
        std::hint::black_box(store.get(key).await.unwrap());
    }
    started.elapsed().as_secs_f64() * 1e9 / f64::from(CALLS)
}

async fn measure(runtime: &str) {
    let inner = Arc::new(MemStore::new());
    inner
        .put(b"cfg/app/db", &[7u8; 100], PutOptions::default())
        .await
        .unwrap();
    let bare: Arc<dyn Store> = inner.clone();
    let stack: Arc<dyn Store> = Arc::new(
        inner
            .layer(MetricsLayer)
            .layer(TracingLayer)
            .layer(TimeoutLayer::new(Duration::from_secs(5)))
            .layer(RetryLayer::default()),
    );
    for (what, key) in [("hit", &b"cfg/app/db"[..]), ("miss", b"cfg/app/none")] {
        let (mut b, mut s) = (Vec::new(), Vec::new());
        for _ in 0..rounds() {
            b.push(per_call(bare.as_ref(), key).await);
            s.push(per_call(stack.as_ref(), key).await);
        }
        let (mb, ms) = (median(b), median(s));
        println!(
            "layers/get {what:<5} {runtime:<15} bare {mb:>7.0} ns  stack {ms:>7.0} ns  \
             cost {:>6.0} ns per call  ({:.2}x)",
            ms - mb,
            ms / mb
        );
    }
}

fn main() {
    // Criterion-style arguments (`--bench`) are accepted and ignored.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(measure("current-thread"));
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(measure("multi-thread"));
}
