//! RedisStore against raw redis-rs on the same harness-started server, in the same run:
//! `get` vs GET, `put` vs SET, a 10-op transaction vs a MULTI/EXEC pipeline of 10 SETs, a
//! 100-key prefix range vs SCAN MATCH; and the same 100-key range in a 10,000-key store vs a
//! 1,000,000-key store (each on its own server).
//!
//! Each pair is measured interleaved (see `paired`), so both sides see the same load.
//!
//! Targets: `get` at most 1.15x raw GET, `put` at most 1.5x raw SET, the range in the 1M store
//! at most 1.5x the range in the 10k store.

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use futures::StreamExt;
use keyplane_core::{PutOptions, RangeOptions, Store, Txn, TxnOp};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::RedisServer;
use redis::aio::MultiplexedConnection;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

const VALUE: [u8; 64] = [b'v'; 64];

fn key(i: usize) -> String {
    format!("bench/k/{i:07}")
}

/// Loads `bench/k/0000000..n` through the store: concurrent 128-put transactions, pipelined
/// over the multiplexed connection.
async fn load(store: &RedisStore, n: usize) {
    futures::stream::iter((0..n).step_by(128))
        .map(|from| async move {
            let ops = (from..(from + 128).min(n)).map(|i| TxnOp::put(key(i), VALUE));
            store.txn(Txn::new().and_then(ops)).await.expect("load");
        })
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
}

async fn open(server: &RedisServer) -> RedisStore {
    let mut config = RedisConfig::new(server.url());
    // The loads write a million keys; the log needs no more history than the bench reads.
    config.history_retention = 1000;
    RedisStore::connect(config).await.expect("connect")
}

/// The 100 keys of one range: `bench/k/00050xx`.
const RANGE_PREFIX: &str = "bench/k/00050";

/// Benchmarks `measured`, running `other` untimed after each timed call. Both sides of a
/// comparison are benchmarked this way (each once as `measured`), so they run under the same
/// interleaved load and their ratio is not skewed by whatever else the machine does meanwhile.
fn paired(
    group: &mut BenchmarkGroup<'_, WallTime>,
    rt: &Runtime,
    name: &str,
    measured: &impl AsyncFn(),
    other: &impl AsyncFn(),
) {
    group.bench_function(name, |b| {
        b.to_async(rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                measured().await;
                total += start.elapsed();
                other().await;
            }
            total
        })
    });
}

/// Benchmarks a RedisStore operation against its raw redis-rs counterpart, paired.
fn compare(
    c: &mut Criterion,
    rt: &Runtime,
    group: &str,
    store_op: impl AsyncFn(),
    raw_name: &str,
    raw_op: impl AsyncFn(),
) {
    let mut group = c.benchmark_group(group);
    paired(&mut group, rt, "RedisStore", &store_op, &raw_op);
    paired(&mut group, rt, raw_name, &raw_op, &store_op);
    group.finish();
}

fn point_ops(c: &mut Criterion, rt: &Runtime, store: &RedisStore, con: &MultiplexedConnection) {
    compare(
        c,
        rt,
        "redis/get",
        async || {
            store.get(key(4242).as_bytes()).await.unwrap().unwrap();
        },
        "raw GET",
        async || {
            let mut con = con.clone();
            let v: Vec<u8> = redis::cmd("GET")
                .arg(key(4242))
                .query_async(&mut con)
                .await
                .unwrap();
            assert!(!v.is_empty());
        },
    );
    compare(
        c,
        rt,
        "redis/put",
        async || {
            store
                .put(b"bench/put/store", &VALUE, PutOptions::default())
                .await
                .unwrap();
        },
        "raw SET",
        async || {
            let mut con = con.clone();
            let _: () = redis::cmd("SET")
                .arg("bench/put/raw")
                .arg(&VALUE[..])
                .query_async(&mut con)
                .await
                .unwrap();
        },
    );
    compare(
        c,
        rt,
        "redis/txn10",
        async || {
            let ops = (0..10).map(|i| TxnOp::put(format!("bench/txn/store/{i}"), VALUE));
            store.txn(Txn::new().and_then(ops)).await.unwrap();
        },
        "raw MULTI/EXEC",
        async || {
            let mut con = con.clone();
            let mut pipe = redis::pipe();
            pipe.atomic();
            for i in 0..10 {
                pipe.set(format!("bench/txn/raw/{i}"), &VALUE[..]).ignore();
            }
            let _: () = pipe.query_async(&mut con).await.unwrap();
        },
    );
    compare(
        c,
        rt,
        "redis/range100",
        async || range_100(store).await,
        "raw SCAN MATCH",
        async || {
            let mut con = con.clone();
            let mut found = 0;
            let mut cursor = 0u64;
            loop {
                let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(format!("{RANGE_PREFIX}*"))
                    .arg("COUNT")
                    .arg(1000)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                found += keys.len();
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            assert_eq!(found, 100);
        },
    );
}

async fn range_100(store: &RedisStore) {
    let page = store
        .range(RangeOptions::prefix(RANGE_PREFIX))
        .await
        .unwrap();
    assert_eq!(page.entries.len(), 100);
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let Some(small_server) = RedisServer::start() else {
        return;
    };
    let rt = Runtime::new().unwrap();
    let (small, con) = rt.block_on(async {
        let store = open(&small_server).await;
        load(&store, 10_000).await;
        (
            store,
            keyplane_tests::harness::redis_connection(&small_server.url()).await,
        )
    });
    point_ops(&mut c, &rt, &small, &con);

    let Some(large_server) = RedisServer::start() else {
        return;
    };
    let large = rt.block_on(async {
        let store = open(&large_server).await;
        load(&store, 1_000_000).await;
        store
    });
    let mut group = c.benchmark_group("redis/range100-by-store-size");
    let (in_small, in_large) = (
        async || range_100(&small).await,
        async || range_100(&large).await,
    );
    paired(&mut group, &rt, "10000", &in_small, &in_large);
    paired(&mut group, &rt, "1000000", &in_large, &in_small);
    group.finish();
    c.final_summary();
}
