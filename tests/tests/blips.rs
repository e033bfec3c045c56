//! [`watch_and_mirror_survive_a_dropped_connection`] on every backend: the store's
//! connections dropped as an operator or a network blip drops them (Redis: `CLIENT KILL` on
//! the server, on a single server, the master under Sentinel and every node of a Cluster;
//! etcd: every client connection of its member closed by a proxy in front of it), after
//! writes that concurrent writers issued at once.

use keyplane_core::Store;
use keyplane_redis::RedisStore;
use keyplane_tests::conformance::blip::{
    Blip, no_blip, watch_and_mirror_survive_a_dropped_connection,
};
use keyplane_tests::conformance::run_case;
use keyplane_tests::harness::{
    EtcdCluster, RedisCluster, RedisSentinel, own_redis_store, redis_connection,
};
use std::sync::Arc;

/// A blip that kills every client connection (commands and subscriptions) on each server of
/// `urls`, as `CLIENT KILL TYPE normal` and `TYPE pubsub` from an operator's `redis-cli`.
fn client_kill(urls: Vec<String>) -> Blip {
    let urls = Arc::new(urls);
    Arc::new(move || {
        let urls = Arc::clone(&urls);
        Box::pin(async move {
            for url in urls.iter() {
                let mut con = redis_connection(url).await;
                for kind in ["normal", "pubsub"] {
                    let _: i64 = redis::cmd("CLIENT")
                        .arg("KILL")
                        .arg("TYPE")
                        .arg(kind)
                        .query_async(&mut con)
                        .await
                        .expect("CLIENT KILL");
                }
            }
        })
    })
}

/// Checks that the case exercised what it is about, writes committed together: some entry of
/// the log under the internal `prefix` holds several revisions.
async fn assert_grouped(con: &mut impl redis::aio::ConnectionLike, prefix: &str) {
    let entries: i64 = redis::cmd("XLEN")
        .arg(format!("{prefix}log"))
        .query_async(&mut *con)
        .await
        .expect("XLEN");
    let revision: i64 = redis::cmd("GET")
        .arg(format!("{prefix}rev"))
        .query_async(&mut *con)
        .await
        .expect("GET");
    assert!(
        entries > 0 && entries < revision,
        "no write was committed in a group ({entries} log entries, revision {revision})"
    );
}

#[test]
fn memory() {
    run_case("blip_memory", async {
        let store: Arc<dyn Store> = Arc::new(keyplane_mem::MemStore::new());
        watch_and_mirror_survive_a_dropped_connection(store, no_blip()).await;
    });
}

#[test]
fn sled() {
    run_case("blip_sled", async {
        let store: Arc<dyn Store> = Arc::new(
            keyplane_sled::SledStore::temporary()
                .await
                .expect("a temporary sled store"),
        );
        watch_and_mirror_survive_a_dropped_connection(store, no_blip()).await;
    });
}

#[test]
fn etcd() {
    let Some(cluster) = EtcdCluster::start_partitionable(1) else {
        return;
    };
    let cluster = Arc::new(cluster);
    run_case("blip_etcd", async move {
        let store =
            keyplane_etcd::EtcdStore::open(keyplane_etcd::EtcdConfig::new(cluster.endpoints()))
                .await
                .expect("connect to etcd through its proxy");
        let member = cluster.name(0).to_string();
        let held = Arc::clone(&cluster);
        let blip: Blip = Arc::new(move || {
            let (cluster, member) = (Arc::clone(&held), member.clone());
            Box::pin(async move {
                cluster
                    .network()
                    .expect("a partitionable cluster has a network")
                    .drop_connections(&member);
            })
        });
        watch_and_mirror_survive_a_dropped_connection(Arc::new(store), blip).await;
    });
}

#[test]
fn redis() {
    run_case("blip_redis", async {
        let Some((server, store)) = own_redis_store().await else {
            return;
        };
        let url = server.url();
        watch_and_mirror_survive_a_dropped_connection(
            Arc::new(store),
            client_kill(vec![url.clone()]),
        )
        .await;
        let mut con = redis_connection(&url).await;
        assert_grouped(&mut con, "__kv:").await;
        drop(server);
    });
}

#[test]
fn redis_sentinel() {
    let Some(deployment) = RedisSentinel::start() else {
        return;
    };
    let deployment = Arc::new(deployment);
    run_case("blip_redis_sentinel", async move {
        let store = RedisStore::from_url(&deployment.url())
            .await
            .expect("connect through the sentinels");
        let master = format!("redis://127.0.0.1:{}", deployment.master_port());
        watch_and_mirror_survive_a_dropped_connection(
            Arc::new(store),
            client_kill(vec![master.clone()]),
        )
        .await;
        assert_grouped(&mut redis_connection(&master).await, "__kv:").await;
    });
}

#[test]
fn redis_cluster_group() {
    use keyplane_core::layer::{NamespaceLayer, StoreExt};
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let cluster = Arc::new(cluster);
    run_case("blip_redis_cluster", async move {
        let store = RedisStore::from_url(&cluster.url())
            .await
            .expect("connect to the cluster");
        let tag = uuid::Uuid::new_v4().simple().to_string();
        let group = store.group(tag.as_bytes()).expect("a group of the cluster");
        let namespace = NamespaceLayer::new(format!("{{{tag}}}/")).expect("a namespace");
        let store: Arc<dyn Store> = Arc::new(group.layer(namespace));
        watch_and_mirror_survive_a_dropped_connection(store, client_kill(cluster.node_urls()))
            .await;
        let mut con = redis::cluster::ClusterClient::new(cluster.node_urls())
            .expect("a cluster client")
            .get_async_connection()
            .await
            .expect("a cluster connection");
        assert_grouped(&mut con, &format!("__kv:{{{tag}}}:")).await;
    });
}

/// A watch replaying a backlog longer than one page reads the rest of it on the store's
/// shared connection; that connection dropped while the read is under way (held by a cut
/// in a proxy, then closed) is read through again, not the end of the watch.
#[test]
fn redis_a_watch_reading_its_backlog_survives_a_dropped_connection() {
    backlog_across_a_dropped_connection(true);
}

/// The same with no other watch: the store's follower of the log starts with the watch, and
/// its connection drops while it finds where the log ends; the watch waits for it, then
/// reads its backlog.
#[test]
fn redis_a_first_watch_survives_a_dropped_connection_while_the_follower_starts() {
    backlog_across_a_dropped_connection(false);
}

fn backlog_across_a_dropped_connection(follower_running: bool) {
    use futures::StreamExt;
    use keyplane_core::{PutOptions, WatchOptions};
    use keyplane_tests::harness::{CLIENT, Network, RedisServer};
    let Some(server) = RedisServer::start() else {
        return;
    };
    let net = Arc::new(Network::new());
    let port = net.proxy("redis", server.port());
    run_case("blip_redis_backlog", async move {
        let store = RedisStore::from_url(&format!("redis://127.0.0.1:{port}"))
            .await
            .expect("connect through the proxy");
        let root = keyplane_tests::harness::key_root("backlog");
        // A watch already running: the store's follower of the log is up, so the backlog
        // watch below reads what it missed itself, on the store's shared connection.
        let other = format!("{root}other/");
        let mut running = None;
        if follower_running {
            let mut watch = store
                .watch(WatchOptions::prefix(&other))
                .await
                .expect("a watch");
            store
                .put(format!("{other}k").as_bytes(), b"v", PutOptions::default())
                .await
                .expect("put");
            watch.next().await.expect("a batch").expect("no error");
            running = Some(watch);
        }
        let root = format!("{root}backlog/");
        let (mut first, mut last) = (i64::MAX, 0);
        // One after another: a log entry each, more than one page of them.
        for i in 0..600 {
            let key = format!("{root}k{i}");
            let revision = store
                .put(key.as_bytes(), b"v", PutOptions::default())
                .await
                .expect("put")
                .revision;
            (first, last) = (first.min(revision), last.max(revision));
        }
        let mut watch = store
            .watch(WatchOptions::prefix(&root).from_revision(first))
            .await
            .expect("a watch of the backlog");
        net.cut(&[CLIENT], &["redis"]);
        // The replay is one page: the rest is read once the watch has handed it over. The
        // batches of the page come from memory; then the watch stalls on its read, which the
        // cut holds.
        let mut seen = Vec::new();
        let quiet = std::time::Duration::from_millis(300);
        while let Ok(batch) = tokio::time::timeout(quiet, watch.next()).await {
            seen.push(batch.expect("a batch").expect("no error").revision);
        }
        assert!(
            *seen.last().unwrap_or(&0) < last,
            "the watch read past its first page through a cut link"
        );
        net.drop_connections("redis");
        net.heal();
        while *seen.last().unwrap_or(&0) < last {
            let batch = tokio::time::timeout(std::time::Duration::from_secs(20), watch.next())
                .await
                .expect("the next batch within 20 s")
                .expect("the watch goes on")
                .unwrap_or_else(|e| panic!("the watch ended after a dropped connection: {e}"));
            seen.push(batch.revision);
        }
        let expected: Vec<i64> = (first..=last).collect();
        assert_eq!(seen, expected, "each revision once, in order");
        drop((running, server));
    });
}
