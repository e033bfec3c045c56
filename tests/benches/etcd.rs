//! EtcdStore against raw `etcd-client` calls on the same harness-started etcd, in the same run:
//! `get`, `put`, a 10-put transaction and a 100-key prefix range; then a bulk load of 100,000
//! keys through `BulkLoader` against sequential single puts (a 2,000-key sample, extrapolated
//! to keys per second).
//!
//! Target: at most 1.05x the raw client for the single operations.

use criterion::Criterion;
use etcd_client::{GetOptions, KvClient, Txn as EtcdTxn, TxnOp as EtcdOp};
use keyplane_core::{PutOptions, RangeOptions, Store, Txn, TxnOp};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_tests::harness::EtcdServer;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

const VALUE: [u8; 64] = [b'v'; 64];
const RANGE_PREFIX: &str = "bench/range/";

fn point_ops(c: &mut Criterion, rt: &Runtime, store: &EtcdStore, raw: &KvClient) {
    let mut group = c.benchmark_group("etcd/get");
    group.bench_function("EtcdStore", |b| {
        b.to_async(rt).iter(|| async {
            store.get(b"bench/get").await.unwrap().unwrap();
        })
    });
    group.bench_function("raw etcd-client", |b| {
        b.to_async(rt).iter(|| async {
            let resp = raw.clone().get("bench/get", None).await.unwrap();
            assert!(!resp.kvs().is_empty());
        })
    });
    group.finish();

    let mut group = c.benchmark_group("etcd/put");
    group.bench_function("EtcdStore", |b| {
        b.to_async(rt).iter(|| async {
            store
                .put(b"bench/put/store", &VALUE, PutOptions::default())
                .await
                .unwrap();
        })
    });
    group.bench_function("raw etcd-client", |b| {
        b.to_async(rt).iter(|| async {
            raw.clone()
                .put("bench/put/raw", VALUE.to_vec(), None)
                .await
                .unwrap();
        })
    });
    group.finish();

    let mut group = c.benchmark_group("etcd/txn10");
    group.bench_function("EtcdStore", |b| {
        b.to_async(rt).iter(|| async {
            let ops = (0..10).map(|i| TxnOp::put(format!("bench/txn/store/{i}"), VALUE));
            store.txn(Txn::new().and_then(ops)).await.unwrap();
        })
    });
    group.bench_function("raw etcd-client", |b| {
        b.to_async(rt).iter(|| async {
            let ops: Vec<EtcdOp> = (0..10)
                .map(|i| EtcdOp::put(format!("bench/txn/raw/{i}"), VALUE.to_vec(), None))
                .collect();
            let resp = raw.clone().txn(EtcdTxn::new().and_then(ops)).await.unwrap();
            assert_eq!(resp.op_responses().len(), 10);
        })
    });
    group.finish();

    let mut group = c.benchmark_group("etcd/range100");
    group.bench_function("EtcdStore", |b| {
        b.to_async(rt).iter(|| async {
            let page = store
                .range(RangeOptions::prefix(RANGE_PREFIX))
                .await
                .unwrap();
            assert_eq!(page.entries.len(), 100);
        })
    });
    group.bench_function("raw etcd-client", |b| {
        b.to_async(rt).iter(|| async {
            let resp = raw
                .clone()
                .get(RANGE_PREFIX, Some(GetOptions::new().with_prefix()))
                .await
                .unwrap();
            assert_eq!(resp.kvs().len(), 100);
        })
    });
    group.finish();
}

/// Bulk load of 100,000 keys against sequential single puts, printed as keys per second.
fn bulk(rt: &Runtime, store: &EtcdStore) {
    const BULK: usize = 100_000;
    const SEQUENTIAL_SAMPLE: usize = 2_000;
    let items: Vec<(Vec<u8>, Vec<u8>)> = (0..BULK)
        .map(|i| (format!("bench/bulk/{i:07}").into_bytes(), VALUE.to_vec()))
        .collect();
    let report = rt.block_on(async {
        keyplane_core::BulkLoader::new(store)
            .concurrency(8)
            .load(items)
            .await
            .expect("bulk load")
    });
    let sequential = rt.block_on(async {
        let started = Instant::now();
        for i in 0..SEQUENTIAL_SAMPLE {
            let key = format!("bench/seq/{i:07}");
            store
                .put(key.as_bytes(), &VALUE, PutOptions::default())
                .await
                .unwrap();
        }
        SEQUENTIAL_SAMPLE as f64 / started.elapsed().as_secs_f64()
    });
    println!(
        "etcd/bulk-load: {} keys in {} transactions, {:.2?}: {:.0} keys/s",
        report.keys,
        report.batches,
        report.elapsed,
        report.keys_per_second()
    );
    println!(
        "etcd/sequential-put: {SEQUENTIAL_SAMPLE} single puts (extrapolated): {sequential:.0} keys/s; \
         bulk load is {:.1}x faster",
        report.keys_per_second() / sequential
    );
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let Some(server) = EtcdServer::start() else {
        return;
    };
    let rt = Runtime::new().unwrap();
    let (store, raw) = rt.block_on(async {
        let store = EtcdStore::connect(EtcdConfig::new([server.endpoint()]))
            .await
            .expect("connect");
        let raw = etcd_client::Client::connect([server.endpoint()], None)
            .await
            .expect("connect the raw client")
            .kv_client();
        store
            .put(b"bench/get", &VALUE, PutOptions::default())
            .await
            .unwrap();
        let ops = (0..100).map(|i| TxnOp::put(format!("{RANGE_PREFIX}{i:03}"), VALUE));
        store.txn(Txn::new().and_then(ops)).await.unwrap();
        (store, raw)
    });
    point_ops(&mut c, &rt, &store, &raw);
    bulk(&rt, &store);
    c.final_summary();
}
