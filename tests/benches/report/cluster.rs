//! Redis Cluster: get and put throughput with 64 tasks spread over 64 co-location groups (one
//! hash tag per task), on the harness's 3-master, 3-replica cluster, against raw redis-rs
//! cluster calls on keys of the same groups, and against the store on one Redis. All of it
//! runs on this one machine, so the cluster against one Redis shows the cluster's overhead,
//! not its scaling.

use crate::measure::{Budget, Goal, Measure, Report, multi_thread, paired_throughput};
use crate::single::VALUE;
use keyplane_core::{PutOptions, Store};
use keyplane_redis::RedisStore;
use keyplane_tests::harness::{RedisCluster, RedisServer};
use redis::cluster_async::ClusterConnection;
use std::sync::Arc;

/// One call of a throughput loop.
type Op = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

const TASKS: usize = 64;
const KEYS_PER_GROUP: u64 = 100;

/// The key `i` of task `t`'s group, on `side` (`ours` or `raw`): `{g<t>}/<side>/<i>`.
fn key(side: &str, t: usize, i: u64) -> String {
    format!("{{g{t}}}/{side}/{}", i % KEYS_PER_GROUP)
}

/// Writes every key of every group through `store`, 64 tasks at a time.
async fn load(store: &Arc<RedisStore>) {
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..KEYS_PER_GROUP {
                store
                    .put(key("ours", t, i).as_bytes(), &VALUE, PutOptions::default())
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// The op `kind` of task `t` through `store`.
fn ours(
    store: Arc<RedisStore>,
    kind: &'static str,
) -> Arc<impl Fn(usize, u64) -> Op + Send + Sync> {
    Arc::new(move |t: usize, i: u64| {
        let store = store.clone();
        Box::pin(async move {
            let k = key("ours", t, i);
            if kind == "get" {
                store.get(k.as_bytes()).await.unwrap().unwrap();
            } else {
                store
                    .put(k.as_bytes(), &VALUE, PutOptions::default())
                    .await
                    .unwrap();
            }
        }) as Op
    })
}

/// The raw counterpart: `GET` or `SET` through a redis-rs cluster connection.
fn raw(con: ClusterConnection, kind: &'static str) -> Arc<impl Fn(usize, u64) -> Op + Send + Sync> {
    Arc::new(move |t: usize, i: u64| {
        let mut con = con.clone();
        Box::pin(async move {
            let k = key("raw", t, i);
            if kind == "get" {
                let v: Vec<u8> = redis::cmd("GET")
                    .arg(k)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                assert!(!v.is_empty());
            } else {
                let () = redis::cmd("SET")
                    .arg(k)
                    .arg(&VALUE[..])
                    .query_async(&mut con)
                    .await
                    .unwrap();
            }
        }) as Op
    })
}

pub fn run(budget: Budget, report: &mut Report) {
    let (Some(cluster), Some(single)) = (RedisCluster::start(), RedisServer::start()) else {
        return;
    };
    multi_thread().block_on(async {
        let on_cluster = Arc::new(RedisStore::from_url(&cluster.url()).await.unwrap());
        let on_single = Arc::new(RedisStore::from_url(&single.url()).await.unwrap());
        load(&on_cluster).await;
        load(&on_single).await;
        let con = redis::cluster::ClusterClient::new(cluster.node_urls()[..3].to_vec())
            .unwrap()
            .get_async_connection()
            .await
            .unwrap();
        for t in 0..TASKS {
            for i in 0..KEYS_PER_GROUP {
                let () = redis::cmd("SET")
                    .arg(key("raw", t, i))
                    .arg(&VALUE[..])
                    .query_async(&mut con.clone())
                    .await
                    .unwrap();
            }
        }
        for kind in ["get", "put"] {
            let pair = paired_throughput(
                budget,
                TASKS,
                ours(on_cluster.clone(), kind),
                raw(con.clone(), kind),
            )
            .await;
            report.add(
                Measure::paired(
                    format!(
                        "redis cluster {kind} throughput, 64 tasks over 64 groups vs raw cluster"
                    ),
                    pair,
                    "ops/s",
                    Goal::Info,
                )
                .note("3 masters and 3 replicas on this machine; multi-thread runtime"),
            );
            let pair = paired_throughput(
                budget,
                TASKS,
                ours(on_cluster.clone(), kind),
                ours(on_single.clone(), kind),
            )
            .await;
            report.add(
                Measure::paired(
                    format!(
                        "redis cluster {kind} throughput, 64 tasks over 64 groups vs one Redis"
                    ),
                    pair,
                    "ops/s",
                    Goal::Info,
                )
                .note("the store on the cluster against the store on one server, same machine"),
            );
        }
    });
}
