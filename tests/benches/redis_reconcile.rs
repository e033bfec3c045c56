//! RedisStore next to other programs, against raw redis-rs on the same harness-started
//! server in the same run:
//!
//! - `get` vs GET and `put` vs SET: one hot key and many distinct keys, overwrites and new
//!   keys, 1 task (median latency ratio) and 64 tasks (throughput ratio), on the default
//!   multi-thread runtime and on a current-thread one; the worst ratio is what counts.
//! - reconcile: the time of `RedisStore::reconcile` per 10,000 keys, adopting keys another
//!   program wrote and then checking them again with nothing to do.
//! - latency from another program's `SET` to the watch event: median and p99, with keyspace
//!   notifications and with the periodic scan alone.
//!
//! `cargo xtask bench criterion --bench redis_reconcile` (or `cargo bench -p keyplane-tests --bench
//! redis_reconcile`); `KV_BENCH_QUICK=1` takes fewer samples.

use futures::StreamExt;
use keyplane_core::{PutOptions, Store, WatchOptions};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::RedisServer;
use redis::aio::MultiplexedConnection;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const VALUE: [u8; 64] = [b'v'; 64];

fn quick() -> bool {
    std::env::var_os("KV_BENCH_QUICK").is_some()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Which keys a workload touches.
#[derive(Clone, Copy)]
enum Keys {
    /// One key, over and over.
    Hot,
    /// A key per operation, from a 10,000-key set written before (overwrites).
    Distinct,
    /// A new key per operation.
    New,
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Get,
    Put,
}

struct Ctx {
    store: RedisStore,
    con: MultiplexedConnection,
    counter: AtomicUsize,
    run: usize,
}

impl Ctx {
    fn key(&self, side: &str, keys: Keys) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        match keys {
            Keys::Hot => format!("b/{side}/hot"),
            Keys::Distinct => format!("b/{side}/d/{}", n % 10_000),
            Keys::New => format!("b/{side}/n/{}/{n}", self.run),
        }
    }

    async fn store_op(&self, op: Op, keys: Keys) {
        let key = self.key("s", keys);
        match op {
            Op::Get => {
                self.store.get(key.as_bytes()).await.unwrap().unwrap();
            }
            Op::Put => {
                self.store
                    .put(key.as_bytes(), &VALUE, PutOptions::default())
                    .await
                    .unwrap();
            }
        }
    }

    async fn raw_op(&self, op: Op, keys: Keys) {
        let key = self.key("r", keys);
        let mut con = self.con.clone();
        match op {
            Op::Get => {
                let v: Option<Vec<u8>> = redis::cmd("GET")
                    .arg(&key)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                assert!(v.is_some());
            }
            Op::Put => {
                let _: () = redis::cmd("SET")
                    .arg(&key)
                    .arg(&VALUE[..])
                    .query_async(&mut con)
                    .await
                    .unwrap();
            }
        }
    }
}

/// Writes the keys the reads and overwrites use, on both sides.
async fn seed(ctx: &Ctx) {
    for side in ["s", "r"] {
        for chunk in (0..10_000).collect::<Vec<_>>().chunks(500) {
            let mut pipe = redis::pipe();
            for i in chunk {
                pipe.cmd("SET")
                    .arg(format!("b/{side}/d/{i}"))
                    .arg(&VALUE[..])
                    .ignore();
            }
            pipe.cmd("SET")
                .arg(format!("b/{side}/hot"))
                .arg(&VALUE[..])
                .ignore();
            let _: () = pipe.query_async(&mut ctx.con.clone()).await.unwrap();
        }
    }
    // The store adopts what the pipeline wrote, so its reads measure the steady state.
    ctx.store.reconcile(b"b/s/").await.unwrap();
}

/// One task: the median latency of each side, measured interleaved.
async fn latency(ctx: &Ctx, op: Op, keys: Keys, n: usize) -> (Duration, Duration) {
    let (mut s, mut r) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let t = Instant::now();
        ctx.store_op(op, keys).await;
        s.push(t.elapsed());
        let t = Instant::now();
        ctx.raw_op(op, keys).await;
        r.push(t.elapsed());
    }
    (median(s), median(r))
}

/// 64 tasks: operations per second of each side, alternating rounds.
async fn throughput(ctx: &Arc<Ctx>, op: Op, keys: Keys, per_task: usize) -> (f64, f64) {
    let (mut s, mut r) = (Vec::new(), Vec::new());
    for round in 0..6 {
        let store_side = round % 2 == 0;
        let t = Instant::now();
        futures::future::join_all((0..64).map(|_| {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                for _ in 0..per_task {
                    if store_side {
                        ctx.store_op(op, keys).await;
                    } else {
                        ctx.raw_op(op, keys).await;
                    }
                }
            })
        }))
        .await;
        let rate = (64 * per_task) as f64 / t.elapsed().as_secs_f64();
        if store_side {
            s.push(rate)
        } else {
            r.push(rate)
        }
    }
    s.sort_by(f64::total_cmp);
    r.sort_by(f64::total_cmp);
    (s[1], r[1])
}

fn point_ops(server: &RedisServer, runtime: &tokio::runtime::Runtime, label: &str, run: usize) {
    let ctx = runtime.block_on(async {
        let ctx = Arc::new(Ctx {
            store: RedisStore::from_url(&server.url()).await.unwrap(),
            con: keyplane_tests::harness::redis_connection(&server.url()).await,
            counter: AtomicUsize::new(0),
            run,
        });
        seed(&ctx).await;
        ctx
    });
    let n = if quick() { 2_000 } else { 10_000 };
    let cases = [
        ("get", Op::Get, Keys::Hot, "hot key"),
        ("get", Op::Get, Keys::Distinct, "distinct keys"),
        ("put", Op::Put, Keys::Hot, "hot key"),
        ("put", Op::Put, Keys::Distinct, "overwrites"),
        ("put", Op::Put, Keys::New, "new keys"),
    ];
    for (name, op, keys, what) in cases {
        let (s, r) = runtime.block_on(latency(&ctx, op, keys, n));
        let (st, rt) = runtime.block_on(throughput(&ctx, op, keys, n / 64 + 20));
        println!(
            "{label:<15} {name} {what:<14} 1 task: {:>6.1} µs vs {:>6.1} µs = {:.2}x   \
             64 tasks: {:>7.0}/s vs {:>7.0}/s = {:.2}x of raw",
            s.as_secs_f64() * 1e6,
            r.as_secs_f64() * 1e6,
            s.as_secs_f64() / r.as_secs_f64(),
            st,
            rt,
            st / rt,
        );
    }
}

async fn reconcile_cost(server: &RedisServer) {
    let mut con = keyplane_tests::harness::redis_connection(&server.url()).await;
    let store = RedisStore::from_url(&server.url()).await.unwrap();
    let rounds = if quick() { 2 } else { 5 };
    let (mut adopt, mut again) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let root = format!("rc/{round}/");
        for chunk in (0..10_000).collect::<Vec<_>>().chunks(1000) {
            let mut pipe = redis::pipe();
            for i in chunk {
                pipe.cmd("SET")
                    .arg(format!("{root}{i}"))
                    .arg(&VALUE[..])
                    .ignore();
            }
            let _: () = pipe.query_async(&mut con).await.unwrap();
        }
        let t = Instant::now();
        let report = store.reconcile(root.as_bytes()).await.unwrap();
        adopt.push(t.elapsed());
        assert_eq!(report.adopted, 10_000);
        let t = Instant::now();
        let report = store.reconcile(root.as_bytes()).await.unwrap();
        again.push(t.elapsed());
        assert!(report.is_empty());
    }
    println!(
        "reconcile       10,000 foreign keys adopted: {:.1} ms (median of {rounds}); \
         10,000 tracked keys checked, nothing to do: {:.1} ms",
        median(adopt).as_secs_f64() * 1e3,
        median(again).as_secs_f64() * 1e3,
    );
}

async fn foreign_latency(server: &RedisServer, notifications: bool) {
    let root = format!("lat/{notifications}/");
    let mut config = RedisConfig::new(server.url());
    config.internal_prefix = format!("__kvlat{notifications}:");
    config.reconcile_roots = vec![root.clone()];
    config.keyspace_notifications = notifications;
    config.reconcile_interval =
        std::time::Duration::from_millis(if notifications { 60_000 } else { 100 });
    let store = RedisStore::open(config).await.unwrap();
    let mut con = keyplane_tests::harness::redis_connection(&server.url()).await;
    let mut watch = store
        .watch(WatchOptions::prefix(&root).from_revision(store.revision().await.unwrap() + 1))
        .await
        .unwrap();
    // Until the reconciler leads: a first key's event.
    let _: () = redis::cmd("SET")
        .arg(format!("{root}warm"))
        .arg("x")
        .query_async(&mut con)
        .await
        .unwrap();
    watch.next().await.unwrap().unwrap();
    let n = if quick() { 50 } else { 200 };
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let key = format!("{root}{i}");
        let t = Instant::now();
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg("x")
            .query_async(&mut con)
            .await
            .unwrap();
        loop {
            let batch = watch.next().await.unwrap().unwrap();
            if batch.events.iter().any(|e| e.key() == key.as_bytes()) {
                break;
            }
        }
        samples.push(t.elapsed());
    }
    println!(
        "foreign SET -> watch event, {:<27} median {:>7.2} ms, p99 {:>7.2} ms ({n} samples)",
        if notifications {
            "keyspace notifications:"
        } else {
            "periodic scan every 100 ms:"
        },
        median(samples.clone()).as_secs_f64() * 1e3,
        percentile(samples, 0.99).as_secs_f64() * 1e3,
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is ignored.
    let Some(server) = RedisServer::start() else {
        return;
    };
    let multi = tokio::runtime::Runtime::new().unwrap();
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    point_ops(&server, &multi, "multi-thread", 0);
    point_ops(&server, &current, "current-thread", 1);
    multi.block_on(async {
        reconcile_cost(&server).await;
        foreign_latency(&server, true).await;
        foreign_latency(&server, false).await;
    });
}
