//! Single operations, one caller, against the raw client on the same server: Redis get (many
//! keys and one hot key), put (overwrites and new keys), a 10-op transaction and a 100-key
//! range; etcd get, put, a 10-put transaction and a 100-key range. Each is measured on a
//! multi-thread and on a current-thread runtime, each with its own connections; the worse
//! ratio of the two is reported.

use crate::measure::{
    Budget, Goal, MIN_ROUNDS, Measure, Pair, Report, multi_thread, on_both_runtimes, paired_us,
};
use etcd_client::{GetOptions, KvClient, Txn as EtcdTxn, TxnOp as EtcdOp};
use keyplane_core::recipes::BulkLoader;
use keyplane_core::{PutOptions, RangeOptions, Store, Txn, TxnOp};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{EtcdServer, RedisServer, redis_connection};
use redis::aio::MultiplexedConnection;
use std::future::Future;

/// Keys loaded for the reads.
pub const KEYS: u64 = 10_000;
pub const VALUE: [u8; 64] = [b'v'; 64];

pub fn key(i: u64) -> String {
    format!("bench/k/{:07}", i % KEYS)
}

/// A key among the loaded ones, spread over the key space.
pub fn spread(i: u64) -> String {
    key(i.wrapping_mul(7919))
}

/// The 100 keys of one range: `bench/k/00050xx`.
pub const RANGE_PREFIX: &str = "bench/k/00050";

/// Reads the 100 keys under [`RANGE_PREFIX`] through `store`.
pub async fn range_100(store: &dyn Store) {
    let page = store
        .range(RangeOptions::prefix(RANGE_PREFIX))
        .await
        .unwrap();
    assert_eq!(page.entries.len(), 100);
}

/// Overwrites the key [`spread`]`(i)` with [`VALUE`] through `store`.
pub async fn put_spread<S: Store + ?Sized>(store: &S, i: u64) {
    store
        .put(spread(i).as_bytes(), &VALUE, PutOptions::default())
        .await
        .unwrap();
}

/// A transaction of 10 puts through `store`: keys `{prefix}/{i % 100}/0..10`.
async fn txn_of_10(store: &dyn Store, prefix: &str, i: u64) {
    let ops = (0..10).map(|j| TxnOp::put(format!("{prefix}/{}/{j}", i % 100), VALUE));
    store.txn(Txn::new().and_then(ops)).await.unwrap();
}

/// The raw counterpart of [`txn_of_10`] on Redis: MULTI, 10 SETs, EXEC.
async fn multi_exec_of_10(con: &MultiplexedConnection, prefix: &str, i: u64) {
    let mut pipe = redis::pipe();
    pipe.atomic();
    for j in 0..10 {
        pipe.set(format!("{prefix}/{}/{j}", i % 100), &VALUE[..])
            .ignore();
    }
    let _: () = pipe.query_async(&mut con.clone()).await.unwrap();
}

/// Loads `bench/k/0000000..KEYS` through `store`.
pub async fn load(store: &dyn Store) {
    BulkLoader::new(store)
        .concurrency(8)
        .load((0..KEYS).map(|i| (key(i).into_bytes(), VALUE.to_vec())))
        .await
        .expect("load");
}

/// A raw `SET` of [`VALUE`] at `key`.
pub async fn raw_set(con: &MultiplexedConnection, key: String) {
    let () = redis::cmd("SET")
        .arg(key)
        .arg(&VALUE[..])
        .query_async(&mut con.clone())
        .await
        .unwrap();
}

pub async fn redis_store(server: &RedisServer) -> RedisStore {
    RedisStore::open(RedisConfig::new(server.url()))
        .await
        .expect("connect")
}

pub fn redis(budget: Budget, report: &mut Report) {
    let Some(server) = RedisServer::start() else {
        return;
    };
    multi_thread().block_on(async { load(&redis_store(&server).await).await });
    let server = &server;
    on_both_runtimes(report, |runtime| async move {
        let store = redis_store(server).await;
        let con = redis_connection(&server.url()).await;
        redis_ops(budget, &store, &con, runtime).await
    });
    multi_thread().block_on(redis_cpu(budget, report, server));
}

/// The Redis server's CPU time (user and system, as `INFO cpu` reports it), in µs.
pub async fn server_cpu_us(con: &mut MultiplexedConnection) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(con)
        .await
        .unwrap();
    let field = |name: &str| -> f64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .expect("a cpu field in INFO")
    };
    (field("used_cpu_user:") + field("used_cpu_sys:")) * 1e6
}

/// Server CPU per operation of `op`, run `n` times by 16 tasks at once.
async fn cpu_per_op<F, Fut>(con: &MultiplexedConnection, n: u64, op: &F) -> f64
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = ()>,
{
    use futures::StreamExt;
    let before = server_cpu_us(&mut con.clone()).await;
    futures::stream::iter(0..n)
        .map(op)
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
    (server_cpu_us(&mut con.clone()).await - before) / n as f64
}

/// [`cpu_per_op`] of `ours` and of `raw` in alternating rounds of `n` operations each.
async fn cpu_pair<F, Fut, G, Gut>(con: &MultiplexedConnection, n: u64, ours: F, raw: G) -> Pair
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = ()>,
    G: Fn(u64) -> Gut,
    Gut: Future<Output = ()>,
{
    let (mut o, mut r) = (Vec::new(), Vec::new());
    for round in 0..MIN_ROUNDS {
        if round % 2 == 0 {
            o.push(cpu_per_op(con, n, &ours).await);
            r.push(cpu_per_op(con, n, &raw).await);
        } else {
            r.push(cpu_per_op(con, n, &raw).await);
            o.push(cpu_per_op(con, n, &ours).await);
        }
    }
    Pair::of(o, r)
}

/// Where the time of a Redis operation goes on the server: its CPU per get, put and 10-put
/// transaction, ours against raw (16 callers at once, so the figures are not dominated by
/// one round trip per call), in alternating rounds.
async fn redis_cpu(budget: Budget, report: &mut Report, server: &RedisServer) {
    let store = redis_store(server).await;
    let con = redis_connection(&server.url()).await;
    let n = if budget.quick { 1_000 } else { 4_000 };
    let (store, con) = (&store, &con);
    let get = cpu_pair(
        con,
        n,
        async |i| {
            store.get(spread(i).as_bytes()).await.unwrap().unwrap();
        },
        async |i| {
            let _: Vec<u8> = redis::cmd("GET")
                .arg(spread(i))
                .query_async(&mut con.clone())
                .await
                .unwrap();
        },
    )
    .await;
    let put = cpu_pair(
        con,
        n,
        async |i| {
            let k = format!("bench/cpu/ours/{}", i % 1000);
            store
                .put(k.as_bytes(), &VALUE, PutOptions::default())
                .await
                .unwrap();
        },
        async |i| raw_set(con, format!("bench/cpu/raw/{}", i % 1000)).await,
    )
    .await;
    let txn = cpu_pair(
        con,
        n / 10,
        async |i| txn_of_10(store, "bench/cpu/ours", i).await,
        async |i| multi_exec_of_10(con, "bench/cpu/raw", i).await,
    )
    .await;
    for (name, pair) in [
        ("get vs GET", get),
        ("put vs SET", put),
        ("txn of 10 puts vs MULTI/EXEC", txn),
    ] {
        report.add(
            Measure::paired(
                format!("redis server CPU per {name}"),
                pair,
                "µs",
                Goal::Info,
            )
            .note("INFO cpu (user + system) per operation, 16 callers at once"),
        );
    }
}

async fn redis_ops(
    budget: Budget,
    store: &RedisStore,
    con: &MultiplexedConnection,
    runtime: &'static str,
) -> Vec<Measure> {
    let at_most = |name: &str, pair: Pair, target: f64| {
        Measure::paired(format!("redis {name}"), pair, "µs", Goal::AtMost(target)).note(runtime)
    };
    let info = |name: &str, pair: Pair| {
        Measure::paired(format!("redis {name}"), pair, "µs", Goal::Info).note(runtime)
    };
    let raw_get = async |k: String| {
        let v: Vec<u8> = redis::cmd("GET")
            .arg(k)
            .query_async(&mut con.clone())
            .await
            .unwrap();
        assert!(!v.is_empty());
    };
    let raw_set = async |k: String| raw_set(con, k).await;
    let put = async |k: String| {
        store
            .put(k.as_bytes(), &VALUE, PutOptions::default())
            .await
            .unwrap();
    };
    let mut out = Vec::new();
    let get = paired_us(
        budget,
        async |i| {
            store.get(spread(i).as_bytes()).await.unwrap().unwrap();
        },
        async |i| raw_get(spread(i)).await,
    )
    .await;
    out.push(at_most("get vs GET (10,000 keys)", get, 1.1));
    let hot = paired_us(
        budget,
        async |_| {
            store.get(key(4242).as_bytes()).await.unwrap().unwrap();
        },
        async |_| raw_get(key(4242)).await,
    )
    .await;
    out.push(at_most("get vs GET (one hot key)", hot, 1.1));
    // The floor of a get in this data model: its two reads (the metadata's `HGET` and the
    // value's `GET`) sent raw in one pipeline, with no decoding and no check.
    let two_reads = paired_us(
        budget,
        async |i| {
            store.get(spread(i).as_bytes()).await.unwrap().unwrap();
        },
        async |i| crate::floor::get(con.clone(), &spread(i)).await,
    )
    .await;
    out.push(info(
        "get vs its two reads raw (HGET + GET pipeline, 10,000 keys)",
        two_reads,
    ));
    let floor_vs_get = paired_us(
        budget,
        async |i| crate::floor::get(con.clone(), &spread(i)).await,
        async |i| raw_get(spread(i)).await,
    )
    .await;
    out.push(info(
        "raw HGET + GET pipeline (a get's two reads) vs raw GET (10,000 keys)",
        floor_vs_get,
    ));
    let overwrite = paired_us(
        budget,
        async |i| put(format!("bench/put/ours/{}", i % 1000)).await,
        async |i| raw_set(format!("bench/put/raw/{}", i % 1000)).await,
    )
    .await;
    out.push(at_most(
        "put vs SET (overwrites, 1,000 keys)",
        overwrite,
        1.5,
    ));
    let floor = paired_us(
        budget,
        async |i| put(format!("bench/put/ours/{}", i % 1000)).await,
        async |i| {
            let key = format!("bench/put/floor/{runtime}/{}", i % 1000);
            crate::floor::put(con, &key, &VALUE, i < 1000).await;
        },
    )
    .await;
    out.push(info(
        "put vs the no-Lua floor (overwrites, 1,000 keys)",
        floor,
    ));
    // The floor against `SET`: what the data model's four writes cost a lone put by
    // themselves.
    let floor_vs_set = paired_us(
        budget,
        async |i| {
            let key = format!("bench/put/floor-set/{runtime}/{}", i % 1000);
            crate::floor::put(con, &key, &VALUE, i < 1000).await;
        },
        async |i| raw_set(format!("bench/put/raw/{}", i % 1000)).await,
    )
    .await;
    out.push(info(
        "no-Lua put floor vs SET (overwrites, 1,000 keys)",
        floor_vs_set,
    ));
    let fresh = paired_us(
        budget,
        async |i| put(format!("bench/new/ours/{runtime}/{i}")).await,
        async |i| raw_set(format!("bench/new/raw/{runtime}/{i}")).await,
    )
    .await;
    out.push(at_most("put vs SET (new keys)", fresh, 1.5));
    let txn = paired_us(
        budget,
        async |i| txn_of_10(store, "bench/txn/ours", i).await,
        async |i| multi_exec_of_10(con, "bench/txn/raw", i).await,
    )
    .await;
    out.push(at_most("txn of 10 puts vs MULTI/EXEC", txn, 1.5));
    let txn_floor = paired_us(
        budget,
        async |i| txn_of_10(store, "bench/txn/ours", i).await,
        async |i| {
            let keys: Vec<String> = (0..10)
                .map(|j| format!("bench/txn/floor/{runtime}/{}/{j}", i % 100))
                .collect();
            let puts: Vec<(&str, bool)> = keys.iter().map(|k| (k.as_str(), i < 100)).collect();
            crate::floor::write(con, &puts, &VALUE).await;
        },
    )
    .await;
    out.push(info("txn of 10 puts vs the no-Lua floor", txn_floor));
    let range = paired_us(
        budget,
        async |_| range_100(store).await,
        async |_| {
            // The raw way to read 100 keys of a known prefix: list them, then MGET.
            let keys =
                keyplane_tests::harness::redis_scan(&mut con.clone(), &format!("{RANGE_PREFIX}*"))
                    .await;
            assert_eq!(keys.len(), 100);
            let values: Vec<Vec<u8>> = redis::cmd("MGET")
                .arg(&keys)
                .query_async(&mut con.clone())
                .await
                .unwrap();
            assert_eq!(values.len(), 100);
        },
    )
    .await;
    out.push(info("range of 100 keys vs SCAN MATCH + MGET", range));
    out
}

pub async fn etcd_clients(server: &EtcdServer) -> (EtcdStore, KvClient) {
    let store = EtcdStore::open(EtcdConfig::new([server.endpoint()]))
        .await
        .expect("connect");
    let raw = etcd_client::Client::connect([server.endpoint()], None)
        .await
        .expect("connect the raw client")
        .kv_client();
    (store, raw)
}

pub fn etcd(budget: Budget, report: &mut Report) {
    let Some(server) = EtcdServer::start() else {
        return;
    };
    multi_thread().block_on(async { load(&etcd_clients(&server).await.0).await });
    let server = &server;
    on_both_runtimes(report, |runtime| async move {
        let (store, raw) = etcd_clients(server).await;
        etcd_ops(budget, &store, &raw, runtime).await
    });
}

async fn etcd_ops(
    budget: Budget,
    store: &EtcdStore,
    raw: &KvClient,
    runtime: &'static str,
) -> Vec<Measure> {
    let at_most = |name: &str, pair: Pair| {
        Measure::paired(format!("etcd {name}"), pair, "µs", Goal::AtMost(1.10)).note(runtime)
    };
    let mut out = Vec::new();
    let get = paired_us(
        budget,
        async |i| {
            store.get(spread(i).as_bytes()).await.unwrap().unwrap();
        },
        async |i| {
            let resp = raw.clone().get(spread(i), None).await.unwrap();
            assert!(!resp.kvs().is_empty());
        },
    )
    .await;
    out.push(at_most("get vs raw get", get));
    let put = paired_us(
        budget,
        async |i| {
            let k = format!("bench/put/ours/{}", i % 1000);
            store
                .put(k.as_bytes(), &VALUE, PutOptions::default())
                .await
                .unwrap();
        },
        async |i| {
            let k = format!("bench/put/raw/{}", i % 1000);
            raw.clone().put(k, VALUE.to_vec(), None).await.unwrap();
        },
    )
    .await;
    out.push(at_most("put vs raw put", put));
    let txn = paired_us(
        budget,
        async |i| txn_of_10(store, "bench/txn/ours", i).await,
        async |i| {
            let ops: Vec<EtcdOp> = (0..10)
                .map(|j| {
                    EtcdOp::put(
                        format!("bench/txn/raw/{}/{j}", i % 100),
                        VALUE.to_vec(),
                        None,
                    )
                })
                .collect();
            raw.clone().txn(EtcdTxn::new().and_then(ops)).await.unwrap();
        },
    )
    .await;
    out.push(at_most("txn of 10 puts vs raw txn", txn));
    let range = paired_us(
        budget,
        async |_| range_100(store).await,
        async |_| {
            let resp = raw
                .clone()
                .get(RANGE_PREFIX, Some(GetOptions::new().with_prefix()))
                .await
                .unwrap();
            assert_eq!(resp.kvs().len(), 100);
        },
    )
    .await;
    out.push(at_most("range of 100 keys vs raw prefix get", range));
    out
}
