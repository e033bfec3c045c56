//! Collections through the store against the raw clients, on harness-started servers, in the
//! same run: a 100-member set add and a 10-field map put (one transaction each) against one
//! `SADD` / `HSET` on Redis and one raw transaction of the member keys on etcd; and the cost of
//! a collection compare (a put guarded by "the set holds this member") against the same put
//! unguarded.
//!
//! Each pair is measured interleaved, one call of each side per round; the table gives the
//! medians and their ratio. `cargo bench -p keyplane-tests --bench collections`
//! (`KV_BENCH_QUICK=1` takes fewer rounds).

use etcd_client::{KvClient, Txn as EtcdTxn, TxnOp as EtcdOp};
use keyplane_core::raw::layout;
use keyplane_core::{CollectionKind, CollectionOp, Compare, Store, Txn, TxnOp};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_redis::RedisStore;
use keyplane_tests::harness::{EtcdServer, RedisServer};
use redis::aio::MultiplexedConnection;
use std::time::{Duration, Instant};

fn rounds() -> usize {
    if std::env::var_os("KV_BENCH_QUICK").is_some() {
        50
    } else {
        300
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Runs `a` and `b` alternately for `rounds()` rounds (round `i` passed to both) and prints
/// their medians and the ratio `a / b`.
async fn pair(name: &str, a: impl AsyncFn(usize), b: impl AsyncFn(usize)) {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for i in 0..rounds() {
        let t = Instant::now();
        a(i).await;
        ta.push(t.elapsed());
        let t = Instant::now();
        b(i).await;
        tb.push(t.elapsed());
    }
    let (ma, mb) = (median(ta), median(tb));
    println!(
        "{name:<44} {:>8.1} µs vs {:>8.1} µs = {:.2}x",
        ma.as_secs_f64() * 1e6,
        mb.as_secs_f64() * 1e6,
        ma.as_secs_f64() / mb.as_secs_f64()
    );
}

fn set_adds(key: &str, n: usize) -> Txn {
    Txn::new().and_then((0..n).map(|m| {
        TxnOp::Collection(CollectionOp::SetAdd {
            key: key.as_bytes().to_vec(),
            member: format!("member-{m:03}").into_bytes(),
        })
    }))
}

fn map_puts(key: &str, n: usize) -> Txn {
    Txn::new().and_then((0..n).map(|f| {
        TxnOp::Collection(CollectionOp::MapPut {
            key: key.as_bytes().to_vec(),
            field: format!("field-{f}").into_bytes(),
            value: b"value-of-the-field".to_vec(),
        })
    }))
}

/// A put, optionally guarded by "the set `guard` holds `member-000`".
fn guarded_put(key: &str, guard: Option<&str>) -> Txn {
    let txn = Txn::new().and_then([TxnOp::put(key, "v")]);
    match guard {
        Some(set) => txn.when([Compare::set_contains(set, "member-000")]),
        None => txn,
    }
}

async fn redis(server: &RedisServer) {
    let store = RedisStore::from_url(&server.url()).await.unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let con: MultiplexedConnection = client.get_multiplexed_async_connection().await.unwrap();
    pair(
        "redis: 100-member set add vs SADD",
        async |i| {
            store
                .txn(set_adds(&format!("cb/s/{i}"), 100))
                .await
                .unwrap();
        },
        async |i| {
            let mut cmd = redis::cmd("SADD");
            cmd.arg(format!("cb/rs/{i}"));
            for m in 0..100 {
                cmd.arg(format!("member-{m:03}"));
            }
            let _: i64 = cmd.query_async(&mut con.clone()).await.unwrap();
        },
    )
    .await;
    pair(
        "redis: 10-field map put vs HSET",
        async |i| {
            store.txn(map_puts(&format!("cb/m/{i}"), 10)).await.unwrap();
        },
        async |i| {
            let mut cmd = redis::cmd("HSET");
            cmd.arg(format!("cb/rm/{i}"));
            for f in 0..10 {
                cmd.arg(format!("field-{f}")).arg("value-of-the-field");
            }
            let _: i64 = cmd.query_async(&mut con.clone()).await.unwrap();
        },
    )
    .await;
    store.txn(set_adds("cb/guard", 1)).await.unwrap();
    pair(
        "redis: put with a set compare vs without",
        async |_| {
            let done = store.txn(guarded_put("cb/g", Some("cb/guard"))).await;
            assert!(done.unwrap().succeeded);
        },
        async |_| {
            store.txn(guarded_put("cb/u", None)).await.unwrap();
        },
    )
    .await;
}

async fn etcd(server: &EtcdServer) {
    let store = EtcdStore::open(EtcdConfig::new([server.endpoint()]))
        .await
        .unwrap();
    let raw: KvClient = etcd_client::Client::connect([server.endpoint()], None)
        .await
        .unwrap()
        .kv_client();
    let raw_txn = |puts: Vec<(Vec<u8>, Vec<u8>)>| {
        EtcdTxn::new().and_then(
            puts.into_iter()
                .map(|(k, v)| EtcdOp::put(k, v, None))
                .collect::<Vec<_>>(),
        )
    };
    pair(
        "etcd: 100-member set add vs raw txn of 100",
        async |i| {
            store
                .txn(set_adds(&format!("cb/s/{i}"), 100))
                .await
                .unwrap();
        },
        async |i| {
            let key = format!("cb/rs/{i}");
            let puts = (0..100)
                .map(|m| {
                    let member = format!("member-{m:03}");
                    let physical =
                        layout::member_key(CollectionKind::Set, key.as_bytes(), member.as_bytes());
                    (physical, Vec::new())
                })
                .collect();
            raw.clone().txn(raw_txn(puts)).await.unwrap();
        },
    )
    .await;
    pair(
        "etcd: 10-field map put vs raw txn of 10",
        async |i| {
            store.txn(map_puts(&format!("cb/m/{i}"), 10)).await.unwrap();
        },
        async |i| {
            let key = format!("cb/rm/{i}");
            let puts = (0..10)
                .map(|f| {
                    let field = format!("field-{f}");
                    let physical =
                        layout::member_key(CollectionKind::Map, key.as_bytes(), field.as_bytes());
                    (physical, b"value-of-the-field".to_vec())
                })
                .collect();
            raw.clone().txn(raw_txn(puts)).await.unwrap();
        },
    )
    .await;
    store.txn(set_adds("cb/guard", 1)).await.unwrap();
    pair(
        "etcd: put with a set compare vs without",
        async |_| {
            let done = store.txn(guarded_put("cb/g", Some("cb/guard"))).await;
            assert!(done.unwrap().succeeded);
        },
        async |_| {
            store.txn(guarded_put("cb/u", None)).await.unwrap();
        },
    )
    .await;
}

fn main() {
    let (Some(redis_server), Some(etcd_server)) = (RedisServer::start(), EtcdServer::start())
    else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        redis(&redis_server).await;
        etcd(&etcd_server).await;
    });
}
