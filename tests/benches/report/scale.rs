//! Scale, on every backend: a range of 100 keys and a watch resumed 10,000 revisions back, in
//! a store of 10,000 keys against one of 1,000,000 keys (each store on its own server or
//! directory); and the 1,000,000-key bulk load and export in keys per second, against the
//! raw client (Redis pipelined `SET`s / `SCAN` + `MGET`, etcd 128-put transactions / paged
//! range reads, sled batches / a prefix scan, redb write transactions of 4,096 inserts / a
//! table range; and redb's file bytes per key against raw redb's). Redis's load is also set
//! against the floor of its data model (`floor::write`: each batch's commands without a
//! script).

use crate::measure::{Budget, Goal, Measure, Report, median, multi_thread};
use crate::single::{RANGE_PREFIX, VALUE, range_100};
use etcd_client::{GetOptions, KvClient, TxnOp as EtcdOp};
use futures::StreamExt;
use keyplane_core::recipes::BulkLoader;
use keyplane_core::{PutOptions, RangeOptions, Store, WatchOptions};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_mem::{MemConfig, MemStore};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_sled::{SledConfig, SledStore};
use keyplane_tests::harness::{EtcdServer, RedisServer, redis_connection};
use std::sync::Arc;
use std::time::Instant;

pub const SMALL: u64 = 10_000;
pub const LARGE: u64 = 1_000_000;
const REVISIONS: u64 = 10_000;
/// History kept by the stores of this section (the watch resumes 10,000 revisions back).
pub const RETENTION: u64 = 20_000;

pub fn key(i: u64) -> String {
    format!("bench/k/{i:07}")
}

/// What one store of one size gives.
pub struct Figures {
    pub load_keys_per_s: f64,
    pub range_us: f64,
    pub resume_ms: f64,
}

/// A store loaded with `n` keys and then 10,000 single-key revisions.
pub struct Loaded {
    pub store: Arc<dyn Store>,
    pub load_keys_per_s: f64,
    /// The first of the 10,000 revisions.
    first: i64,
}

/// Loads `n` keys, then writes 10,000 single-key revisions.
pub async fn load(store: Arc<dyn Store>, n: u64) -> Loaded {
    let started = Instant::now();
    BulkLoader::new(store.as_ref())
        .concurrency(8)
        .load((0..n).map(|i| (key(i).into_bytes(), VALUE.to_vec())))
        .await
        .expect("bulk load");
    let load_keys_per_s = n as f64 / started.elapsed().as_secs_f64();

    let first = store.revision().await.unwrap() + 1;
    futures::stream::iter(0..REVISIONS)
        .map(|i| {
            let store = store.clone();
            async move {
                let k = format!("bench/w/{}", i % 100);
                store
                    .put(k.as_bytes(), &VALUE, PutOptions::default())
                    .await
                    .unwrap();
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
    Loaded {
        store,
        load_keys_per_s,
        first,
    }
}

/// One sample of the range: µs per range of 100 keys, over 20 ranges.
async fn range_sample(loaded: &Loaded) -> f64 {
    let started = Instant::now();
    for _ in 0..20 {
        range_100(loaded.store.as_ref()).await;
    }
    started.elapsed().as_secs_f64() * 1e6 / 20.0
}

/// One sample of the resume: ms to read the 10,000 revisions from the first.
async fn resume_sample(loaded: &Loaded) -> f64 {
    let started = Instant::now();
    let mut watch = loaded
        .store
        .watch(WatchOptions::prefix("bench/w/").from_revision(loaded.first))
        .await
        .unwrap();
    let mut seen = 0u64;
    while seen < REVISIONS {
        let batch = watch
            .next()
            .await
            .expect("watch ended")
            .expect("watch failed");
        seen += batch.events.len() as u64;
    }
    started.elapsed().as_secs_f64() * 1e3
}

/// The range and the resume in the small and the large store, both loaded first and then
/// sampled in turn, like a paired comparison: sampling the small store before the large one
/// is loaded would compare a process that has just loaded 10^6 keys (its allocator's state,
/// the backend's background work) with a fresh one, not two store sizes.
pub async fn sizes(budget: Budget, small: &Loaded, large: &Loaded) -> (Figures, Figures) {
    let rounds = if budget.quick { 5 } else { 15 };
    let (mut ranges, mut resumes) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for round in 0..rounds {
        for (i, loaded) in [small, large].into_iter().enumerate() {
            ranges[i].push(range_sample(loaded).await);
            if round < rounds.min(7) {
                resumes[i].push(resume_sample(loaded).await);
            }
        }
    }
    let [small_ranges, large_ranges] = ranges;
    let [small_resumes, large_resumes] = resumes;
    let figures = |loaded: &Loaded, ranges, resumes| Figures {
        load_keys_per_s: loaded.load_keys_per_s,
        range_us: median(ranges),
        resume_ms: median(resumes),
    };
    (
        figures(small, small_ranges, small_resumes),
        figures(large, large_ranges, large_resumes),
    )
}

/// Reads every key under `bench/k/` through the store in pages of 10,000; keys per second.
pub async fn export(store: &dyn Store, n: u64) -> f64 {
    let started = Instant::now();
    let mut opts = RangeOptions::prefix("bench/k/").limit(10_000);
    let mut seen = 0u64;
    loop {
        let page = store.range(opts.clone()).await.unwrap();
        seen += page.entries.len() as u64;
        match page.next {
            Some(next) => opts = RangeOptions::prefix("bench/k/").limit(10_000).after(next),
            None => break,
        }
    }
    assert_eq!(seen, n);
    n as f64 / started.elapsed().as_secs_f64()
}

pub fn report_sizes(report: &mut Report, backend: &str, small: &Figures, large: &Figures) {
    report.add(Measure::new(
        format!("{backend} range of 100 keys: 10^6-key store vs 10^4"),
        large.range_us,
        small.range_us,
        "µs",
        Goal::AtMost(1.5),
    ));
    report.add(Measure::new(
        format!("{backend} watch resume 10,000 revisions back: 10^6-key store vs 10^4"),
        large.resume_ms,
        small.resume_ms,
        "ms",
        Goal::AtMost(1.5),
    ));
}

pub fn report_bulk(
    report: &mut Report,
    backend: &str,
    load: (f64, f64),
    export: (f64, f64),
    raw: &str,
) {
    report.add(
        Measure::new(
            format!("{backend} bulk load of 10^6 keys vs raw"),
            load.0,
            load.1,
            "keys/s",
            match backend {
                "redis" => Goal::AtLeast(0.5),
                "sled" | "redb" => Goal::AtLeast(0.8),
                _ => Goal::Info,
            },
        )
        .note(format!("BulkLoader, 8 batches in flight; raw: {raw}")),
    );
    report.add(Measure::new(
        format!("{backend} export of 10^6 keys vs raw"),
        export.0,
        export.1,
        "keys/s",
        Goal::Info,
    ));
}

pub fn run(budget: Budget, report: &mut Report) {
    let rt = multi_thread();
    rt.block_on(async {
        memory(budget, report).await;
        sled(budget, report).await;
        crate::redb_scale::run(budget, report).await;
        redis(budget, report).await;
        etcd(budget, report).await;
    });
}

async fn memory(budget: Budget, report: &mut Report) {
    let open = || async {
        let store = MemStore::open(MemConfig::default().history_retention(RETENTION)).await;
        Arc::new(store.unwrap()) as Arc<dyn Store>
    };
    let small = load(open().await, SMALL).await;
    let large_store = load(open().await, LARGE).await;
    let (small, large) = sizes(budget, &small, &large_store).await;
    report_sizes(report, "memory", &small, &large);
    let ours = export(large_store.store.as_ref(), LARGE).await;
    report.add(Measure::new(
        "memory bulk load of 10^6 keys",
        large.load_keys_per_s,
        f64::NAN,
        "keys/s",
        Goal::Info,
    ));
    report.add(Measure::new(
        "memory export of 10^6 keys",
        ours,
        f64::NAN,
        "keys/s",
        Goal::Info,
    ));
}

async fn sled(budget: Budget, report: &mut Report) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let open = |dir: std::path::PathBuf| async move {
        let config = SledConfig::new(dir).history_retention(RETENTION);
        Arc::new(SledStore::open(config).await.unwrap()) as Arc<dyn Store>
    };
    let small = load(open(a.path().to_owned()).await, SMALL).await;
    let large_store = load(open(b.path().to_owned()).await, LARGE).await;
    let (small, large) = sizes(budget, &small, &large_store).await;
    report_sizes(report, "sled", &small, &large);
    let ours_export = export(large_store.store.as_ref(), LARGE).await;
    drop(large_store);

    // Raw: batches of 4,096 inserts, flushed like the store's default durability.
    let raw_dir = tempfile::tempdir().unwrap();
    let raw = sled::Config::new().path(raw_dir.path()).open().unwrap();
    let started = Instant::now();
    for chunk in (0..LARGE).collect::<Vec<_>>().chunks(4096) {
        let mut batch = sled::Batch::default();
        for &i in chunk {
            batch.insert(key(i).as_bytes(), &VALUE[..]);
        }
        raw.apply_batch(batch).unwrap();
        raw.flush().unwrap();
    }
    let raw_load = LARGE as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    let n = raw.scan_prefix("bench/k/").count() as u64;
    assert_eq!(n, LARGE);
    let raw_export = LARGE as f64 / started.elapsed().as_secs_f64();
    // The same range in raw sled trees of both sizes: how much of the growth is sled's own.
    let small_raw_dir = tempfile::tempdir().unwrap();
    let small_raw = sled::Config::new()
        .path(small_raw_dir.path())
        .open()
        .unwrap();
    for i in 0..SMALL {
        small_raw.insert(key(i).as_bytes(), &VALUE[..]).unwrap();
    }
    let raw_range = |db: &sled::Db| {
        let mut rounds = Vec::new();
        for _ in 0..if budget.quick { 5 } else { 15 } {
            let started = Instant::now();
            for _ in 0..20 {
                let mut n = 0;
                for kv in db.scan_prefix(RANGE_PREFIX) {
                    let (k, v) = kv.unwrap();
                    std::hint::black_box((k.to_vec(), v.to_vec()));
                    n += 1;
                }
                assert_eq!(n, 100);
            }
            rounds.push(started.elapsed().as_secs_f64() * 1e6 / 20.0);
        }
        median(rounds)
    };
    report.add(
        Measure::new(
            "raw sled range of 100 keys: 10^6-key tree vs 10^4 (for comparison)",
            raw_range(&raw),
            raw_range(&small_raw),
            "µs",
            Goal::Info,
        )
        .note("Tree::scan_prefix, default page cache"),
    );
    report_bulk(
        report,
        "sled",
        (large.load_keys_per_s, raw_load),
        (ours_export, raw_export),
        "sled batches of 4,096, each flushed",
    );
}

async fn redis(budget: Budget, report: &mut Report) {
    let (Some(small_server), Some(large_server)) = (RedisServer::start(), RedisServer::start())
    else {
        return;
    };
    let open = async |server: &RedisServer| -> Arc<dyn Store> {
        let mut config = RedisConfig::new(server.url());
        config.history_retention = RETENTION;
        let store: Arc<dyn Store> = Arc::new(RedisStore::open(config).await.expect("connect"));
        store
    };
    let small = load(open(&small_server).await, SMALL).await;
    let large_store = load(open(&large_server).await, LARGE).await;
    let (small, large) = sizes(budget, &small, &large_store).await;
    report_sizes(report, "redis", &small, &large);
    let ours_export = export(large_store.store.as_ref(), LARGE).await;

    // Raw, on the small server under another prefix: pipelined SETs of 1,000 keys, 8 in
    // flight; the export lists the keys with SCAN and reads them with MGET.
    let con = redis_connection(&small_server.url()).await;
    let started = Instant::now();
    futures::stream::iter((0..LARGE).step_by(1000))
        .map(|from| {
            let mut con = con.clone();
            async move {
                let mut pipe = redis::pipe();
                for i in from..from + 1000 {
                    pipe.set(format!("bench/raw/{i:07}"), &VALUE[..]).ignore();
                }
                let _: () = pipe.query_async(&mut con).await.unwrap();
            }
        })
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
    let raw_load = LARGE as f64 / started.elapsed().as_secs_f64();
    // The floor: the commands of the loader's transactions (128 new keys each, one revision
    // and one log entry per batch) without a script, 8 in flight.
    let started = Instant::now();
    futures::stream::iter((0..LARGE).step_by(128))
        .map(|from| {
            let con = con.clone();
            async move {
                let keys: Vec<String> = (from..(from + 128).min(LARGE))
                    .map(|i| format!("bench/floor/{i:07}"))
                    .collect();
                let puts: Vec<(&str, bool)> = keys.iter().map(|k| (k.as_str(), true)).collect();
                crate::floor::write(&con, &puts, &VALUE).await;
            }
        })
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
    let floor_load = LARGE as f64 / started.elapsed().as_secs_f64();
    report.add(
        Measure::new(
            "redis bulk load of 10^6 keys vs the no-Lua floor",
            large.load_keys_per_s,
            floor_load,
            "keys/s",
            Goal::Info,
        )
        .note("floor: each batch's commands in one MULTI/EXEC, 128 keys per batch, 8 in flight"),
    );
    let started = Instant::now();
    let mut con = con.clone();
    let mut cursor = 0u64;
    let mut seen = 0u64;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("bench/raw/*")
            .arg("COUNT")
            .arg(10_000)
            .query_async(&mut con)
            .await
            .unwrap();
        if !keys.is_empty() {
            let values: Vec<Vec<u8>> = redis::cmd("MGET")
                .arg(&keys)
                .query_async(&mut con)
                .await
                .unwrap();
            seen += values.len() as u64;
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
    assert_eq!(seen, LARGE);
    let raw_export = LARGE as f64 / started.elapsed().as_secs_f64();
    report_bulk(
        report,
        "redis",
        (large.load_keys_per_s, raw_load),
        (ours_export, raw_export),
        "pipelined SETs, 1,000 per pipeline, 8 in flight",
    );
}

async fn etcd(budget: Budget, report: &mut Report) {
    let (Some(small_server), Some(large_server)) = (EtcdServer::start(), EtcdServer::start())
    else {
        return;
    };
    let open = async |server: &EtcdServer| -> Arc<dyn Store> {
        let store: Arc<dyn Store> = Arc::new(
            EtcdStore::open(EtcdConfig::new([server.endpoint()]))
                .await
                .expect("connect"),
        );
        store
    };
    let small = load(open(&small_server).await, SMALL).await;
    let large_store = load(open(&large_server).await, LARGE).await;
    let (small, large) = sizes(budget, &small, &large_store).await;
    report_sizes(report, "etcd", &small, &large);
    let ours_export = export(large_store.store.as_ref(), LARGE).await;

    // Raw, on the small server under another prefix: transactions of 128 puts, 8 in flight;
    // the export reads pages of 10,000 keys.
    let raw: KvClient = etcd_client::Client::connect([small_server.endpoint()], None)
        .await
        .unwrap()
        .kv_client();
    let started = Instant::now();
    futures::stream::iter((0..LARGE).step_by(128))
        .map(|from| {
            let mut raw = raw.clone();
            async move {
                let ops: Vec<EtcdOp> = (from..(from + 128).min(LARGE))
                    .map(|i| EtcdOp::put(format!("bench/raw/{i:07}"), VALUE.to_vec(), None))
                    .collect();
                raw.txn(etcd_client::Txn::new().and_then(ops))
                    .await
                    .unwrap();
            }
        })
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
    let raw_load = LARGE as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut from = b"bench/raw/".to_vec();
    let end = b"bench/raw0".to_vec();
    let mut seen = 0u64;
    let mut revision = 0;
    loop {
        let mut opts = GetOptions::new().with_range(end.clone()).with_limit(10_000);
        if revision > 0 {
            opts = opts.with_revision(revision);
        }
        let resp = raw.clone().get(from.clone(), Some(opts)).await.unwrap();
        revision = resp.header().map_or(0, |h| h.revision());
        seen += resp.kvs().len() as u64;
        if !resp.more() {
            break;
        }
        let last = resp.kvs().last().unwrap().key().to_vec();
        from = last;
        from.push(0);
    }
    assert_eq!(seen, LARGE);
    let raw_export = LARGE as f64 / started.elapsed().as_secs_f64();
    report_bulk(
        report,
        "etcd",
        (large.load_keys_per_s, raw_load),
        (ours_export, raw_export),
        "transactions of 128 puts, 8 in flight",
    );
}
