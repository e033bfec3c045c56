//! Scale, on every backend: a range of 100 keys and a watch resumed 10,000 revisions back, in
//! a store of 10,000 keys against one of 1,000,000 keys (each store on its own server or
//! directory); and the 1,000,000-key bulk load and export in keys per second, against the
//! raw client on a server or in a directory of its own (Redis pipelined `SET`s / `SCAN` + `MGET`, etcd 128-put transactions / paged
//! range reads, sled batches / a prefix scan, redb write transactions of 4,096 inserts / a
//! table range; and redb's file bytes per key against raw redb's). Redis's load is also set
//! against the floor of its data model (`floor::write`: each batch's commands without a
//! script).
//!
//! Every ratio comes from alternating rounds: the 10^6 keys are loaded a fifth at a time, the
//! raw client loading the same fifth its own way in the same round; the export reads all 10^6
//! keys once per side and round; the range and the resume alternate the two stores.

use crate::measure::{Budget, Goal, MIN_ROUNDS, Measure, Pair, Report, multi_thread};
use crate::single::{VALUE, range_100};
use etcd_client::{GetOptions, KvClient, TxnOp as EtcdOp};
use futures::future::LocalBoxFuture;
use futures::{FutureExt, StreamExt};
use keyplane_core::recipes::BulkLoader;
use keyplane_core::{PutOptions, RangeOptions, Store, WatchOptions};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_mem::{MemConfig, MemStore};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{EtcdServer, RedisServer, redis_connection};
use std::ops::Range;
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

/// A raw client's load of keys `range` of the 10^6 (under a prefix of its own, or into a
/// database of its own).
pub type RawLoad<'a> = Box<dyn FnMut(Range<u64>) -> LocalBoxFuture<'a, ()> + 'a>;

/// A store loaded with keys and then 10,000 single-key revisions.
pub struct Loaded {
    pub store: Arc<dyn Store>,
    /// Keys per second of each round of the bulk load.
    pub load_rates: Vec<f64>,
    /// The first of the 10,000 revisions.
    first: i64,
}

/// Loads keys `keys` through the store's bulk loader, 8 batches in flight.
async fn bulk(store: &dyn Store, keys: Range<u64>) {
    BulkLoader::new(store)
        .concurrency(8)
        .load(keys.map(|i| (key(i).into_bytes(), VALUE.to_vec())))
        .await
        .expect("bulk load");
}

/// Writes 10,000 single-key revisions after the load.
async fn revisions(store: Arc<dyn Store>, load_rates: Vec<f64>) -> Loaded {
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
        load_rates,
        first,
    }
}

/// Loads `n` keys, then writes 10,000 single-key revisions.
pub async fn load(store: Arc<dyn Store>, n: u64) -> Loaded {
    let started = Instant::now();
    bulk(store.as_ref(), 0..n).await;
    let rate = n as f64 / started.elapsed().as_secs_f64();
    revisions(store, vec![rate]).await
}

/// Loads the 10^6 keys into `store` in [`MIN_ROUNDS`] rounds of a fifth each; in every round
/// each raw side loads the same fifth its own way, the sides taking turns at going first.
/// Then the 10,000 revisions. Also returns each raw side's keys per second, round by round.
pub async fn load_large(
    store: Arc<dyn Store>,
    mut raws: Vec<RawLoad<'_>>,
) -> (Loaded, Vec<Vec<f64>>) {
    let sides = raws.len() + 1;
    let mut rates = vec![Vec::new(); sides];
    let share = LARGE / MIN_ROUNDS as u64;
    for round in 0..MIN_ROUNDS {
        let from = round as u64 * share;
        let keys = from..if round + 1 == MIN_ROUNDS {
            LARGE
        } else {
            from + share
        };
        for turn in 0..sides {
            let side = (round + turn) % sides;
            let started = Instant::now();
            match side {
                0 => bulk(store.as_ref(), keys.clone()).await,
                raw => raws[raw - 1](keys.clone()).await,
            }
            let n = (keys.end - keys.start) as f64;
            rates[side].push(n / started.elapsed().as_secs_f64());
        }
    }
    let ours = rates.remove(0);
    (revisions(store, ours).await, rates)
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

/// The range and the resume in the large store against the small one: both loaded first,
/// then sampled in turn, like a paired comparison (sampling the small store before the large
/// one is loaded would compare a process that has just loaded 10^6 keys, its allocator's
/// state and the backend's background work, with a fresh one, not two store sizes).
pub struct Sizes {
    pub range: Pair,
    pub resume: Pair,
}

pub async fn sizes(budget: Budget, small: &Loaded, large: &Loaded) -> Sizes {
    let rounds = if budget.quick { MIN_ROUNDS } else { 15 };
    let (mut ranges, mut resumes) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for round in 0..rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let loaded = [small, large][i];
            ranges[i].push(range_sample(loaded).await);
            if round < 7 {
                resumes[i].push(resume_sample(loaded).await);
            }
        }
    }
    let [small_ranges, large_ranges] = ranges;
    let [small_resumes, large_resumes] = resumes;
    Sizes {
        range: Pair::of(large_ranges, small_ranges),
        resume: Pair::of(large_resumes, small_resumes),
    }
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

/// The export of the 10^6 keys through the store and through the raw client, in keys per
/// second: a whole export per side in each of [`MIN_ROUNDS`] alternating rounds. `raw` reads
/// every raw key once and returns how many it read.
pub async fn exports(store: &dyn Store, mut raw: impl AsyncFnMut() -> u64) -> Pair {
    let (mut ours, mut raws) = (Vec::new(), Vec::new());
    for round in 0..MIN_ROUNDS {
        if round % 2 == 0 {
            ours.push(export(store, LARGE).await);
            raws.push(raw_export(&mut raw).await);
        } else {
            raws.push(raw_export(&mut raw).await);
            ours.push(export(store, LARGE).await);
        }
    }
    Pair::of(ours, raws)
}

/// Keys per second of one raw export, which must read all 10^6 keys.
async fn raw_export(raw: &mut impl AsyncFnMut() -> u64) -> f64 {
    let started = Instant::now();
    assert_eq!(raw().await, LARGE, "the raw export read every key");
    LARGE as f64 / started.elapsed().as_secs_f64()
}

/// Runs `write` on each batch of `size` keys of `keys`, 8 batches in flight: the raw loads.
async fn in_batches<F: Future<Output = ()>>(
    keys: Range<u64>,
    size: u64,
    write: impl Fn(Range<u64>) -> F,
) {
    let end = keys.end;
    futures::stream::iter(keys.step_by(size as usize))
        .map(|from| write(from..(from + size).min(end)))
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
}

pub fn report_sizes(report: &mut Report, backend: &str, sizes: Sizes) {
    report.add(Measure::paired(
        format!("{backend} range of 100 keys: 10^6-key store vs 10^4"),
        sizes.range,
        "µs",
        Goal::AtMost(1.5),
    ));
    report.add(Measure::paired(
        format!("{backend} watch resume 10,000 revisions back: 10^6-key store vs 10^4"),
        sizes.resume,
        "ms",
        Goal::AtMost(1.5),
    ));
}

pub fn report_bulk(report: &mut Report, backend: &str, load: Pair, export: Pair, raw: &str) {
    report.add(
        Measure::paired(
            format!("{backend} bulk load of 10^6 keys vs raw"),
            load,
            "keys/s",
            match backend {
                "redis" => Goal::AtLeast(0.5),
                "sled" | "redb" => Goal::AtLeast(0.8),
                _ => Goal::Info,
            },
        )
        .note(format!("BulkLoader, 8 batches in flight; raw: {raw}")),
    );
    report.add(Measure::paired(
        format!("{backend} export of 10^6 keys vs raw"),
        export,
        "keys/s",
        Goal::Info,
    ));
}

pub fn run(budget: Budget, report: &mut Report) {
    let rt = multi_thread();
    rt.block_on(async {
        memory(budget, report).await;
        crate::sled_scale::run(budget, report).await;
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
    let (large, _) = load_large(open().await, Vec::new()).await;
    report_sizes(report, "memory", sizes(budget, &small, &large).await);
    let ours = export(large.store.as_ref(), LARGE).await;
    report.add(Measure::new(
        "memory bulk load of 10^6 keys",
        crate::measure::median(large.load_rates.clone()),
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

async fn redis(budget: Budget, report: &mut Report) {
    let (Some(small_server), Some(large_server), Some(raw_server)) = (
        RedisServer::start(),
        RedisServer::start(),
        RedisServer::start(),
    ) else {
        return;
    };
    let open = async |server: &RedisServer| -> Arc<dyn Store> {
        let mut config = RedisConfig::new(server.url());
        config.history_retention = RETENTION;
        let store: Arc<dyn Store> = Arc::new(RedisStore::open(config).await.expect("connect"));
        store
    };
    let small = load(open(&small_server).await, SMALL).await;
    // Raw, on a server of its own, under prefixes of their own: pipelined SETs of 1,000 keys,
    // 8 in flight; and the floor, the commands of the loader's transactions (128 new keys
    // each, one revision and one log entry per batch) without a script, 8 in flight.
    let con = redis_connection(&raw_server.url()).await;
    let raw: RawLoad<'_> = Box::new(|keys| redis_sets(con.clone(), keys).boxed_local());
    let floor: RawLoad<'_> = Box::new(|keys| redis_floor(con.clone(), keys).boxed_local());
    let (large, raws) = load_large(open(&large_server).await, vec![raw, floor]).await;
    let [raw_load, floor_load] = <[Vec<f64>; 2]>::try_from(raws).expect("two raw sides");
    report_sizes(report, "redis", sizes(budget, &small, &large).await);
    report.add(
        Measure::paired(
            "redis bulk load of 10^6 keys vs the no-Lua floor",
            Pair::of(large.load_rates.clone(), floor_load),
            "keys/s",
            Goal::Info,
        )
        .note("floor: each batch's commands in one MULTI/EXEC, 128 keys per batch, 8 in flight"),
    );
    let export = exports(large.store.as_ref(), async || {
        redis_export(con.clone()).await
    })
    .await;
    report_bulk(
        report,
        "redis",
        Pair::of(large.load_rates.clone(), raw_load),
        export,
        "pipelined SETs, 1,000 per pipeline, 8 in flight",
    );
}

/// Raw: keys `keys` under `bench/raw/` in pipelines of 1,000 `SET`s, 8 in flight.
async fn redis_sets(con: redis::aio::MultiplexedConnection, keys: Range<u64>) {
    in_batches(keys, 1000, |batch| {
        let mut con = con.clone();
        async move {
            let mut pipe = redis::pipe();
            for i in batch {
                pipe.set(format!("bench/raw/{i:07}"), &VALUE[..]).ignore();
            }
            let _: () = pipe.query_async(&mut con).await.unwrap();
        }
    })
    .await;
}

/// The floor: keys `keys` under `bench/floor/`, 128 new keys per `floor::write`, 8 in flight.
async fn redis_floor(con: redis::aio::MultiplexedConnection, keys: Range<u64>) {
    in_batches(keys, 128, |batch| {
        let con = con.clone();
        async move {
            let keys: Vec<String> = batch.map(|i| format!("bench/floor/{i:07}")).collect();
            let puts: Vec<(&str, bool)> = keys.iter().map(|k| (k.as_str(), true)).collect();
            crate::floor::write(&con, &puts, &VALUE).await;
        }
    })
    .await;
}

/// Raw: lists the keys under `bench/raw/` with `SCAN` and reads them with `MGET`; how many
/// it read.
async fn redis_export(mut con: redis::aio::MultiplexedConnection) -> u64 {
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
    seen
}

async fn etcd(budget: Budget, report: &mut Report) {
    let (Some(small_server), Some(large_server), Some(raw_server)) = (
        EtcdServer::start(),
        EtcdServer::start(),
        EtcdServer::start(),
    ) else {
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
    // Raw, on a server of its own (a watch on the small server resumes through every
    // revision written there since): transactions of 128 puts, 8 in flight; the export reads
    // pages of 10,000 keys.
    let raw: KvClient = etcd_client::Client::connect([raw_server.endpoint()], None)
        .await
        .unwrap()
        .kv_client();
    let raw_load: RawLoad<'_> = Box::new(|keys| etcd_txns(raw.clone(), keys).boxed_local());
    let (large, raws) = load_large(open(&large_server).await, vec![raw_load]).await;
    report_sizes(report, "etcd", sizes(budget, &small, &large).await);
    let export = exports(large.store.as_ref(), async || {
        etcd_export(raw.clone()).await
    })
    .await;
    report_bulk(
        report,
        "etcd",
        Pair::of(large.load_rates.clone(), raws.concat()),
        export,
        "transactions of 128 puts, 8 in flight",
    );
}

/// Raw: keys `keys` under `bench/raw/` in transactions of 128 puts, 8 in flight.
async fn etcd_txns(raw: KvClient, keys: Range<u64>) {
    in_batches(keys, 128, |batch| {
        let mut raw = raw.clone();
        async move {
            let ops: Vec<EtcdOp> = batch
                .map(|i| EtcdOp::put(format!("bench/raw/{i:07}"), VALUE.to_vec(), None))
                .collect();
            raw.txn(etcd_client::Txn::new().and_then(ops))
                .await
                .unwrap();
        }
    })
    .await;
}

/// Raw: reads the keys under `bench/raw/` in pages of 10,000 at one revision; how many it
/// read.
async fn etcd_export(raw: KvClient) -> u64 {
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
    seen
}
