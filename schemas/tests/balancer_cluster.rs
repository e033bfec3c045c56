//! The balancer's cache on Redis Cluster ([`Balancer::with_cluster_root`]): the whole cache
//! is one co-location group, tagged by its root (`{root}:key:4`), so that the M:N operations
//! stay single transactions: the example loads, a pick rotates, disabling a key fans out to
//! every group's list, removing it cleans every list and its reverse index, and another
//! program reads the native types with a cluster client.

use keyplane_core::Store;
use keyplane_core::keyspace::TypedStore;
use keyplane_core::raw::redis_key_slot;
use keyplane_redis::RedisStore;
use keyplane_schemas::balancer::*;
use keyplane_tests::harness::{redis_lrange, shared_redis_cluster};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_is_one_group_in_one_slot() {
    let Some(cluster) = shared_redis_cluster().await else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(RedisStore::from_url(&cluster.url()).await.unwrap());
    let root = BalancerRoot::new(format!("bal{}", uuid::Uuid::new_v4().simple())).unwrap();
    let cache = Balancer::with_cluster_root(&TypedStore::new(store), root.clone()).unwrap();
    write_example(&cache).await.unwrap();

    let mut con = redis::cluster::ClusterClient::new(vec![cluster.node_urls()[0].clone()])
        .unwrap()
        .get_async_connection()
        .await
        .unwrap();
    let active = format!("{{{root}}}:group:2:keys:active");
    assert_eq!(
        redis_lrange(&mut con, &active).await,
        ["4", "5", "6", "7", "8"]
    );
    let status: String = redis::cmd("HGET")
        .arg(format!("{{{root}}}:key:4"))
        .arg("status")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(status, "active");

    // A pick rotates the group's list.
    assert_eq!(cache.pick(2).await.unwrap(), Some(4));
    assert_eq!(
        redis_lrange(&mut con, &active).await,
        ["5", "6", "7", "8", "4"]
    );

    // Disabling key 4 fans out to both of its groups' lists, in one transaction.
    cache.set_status(4, KeyStatus::Disabled).await.unwrap();
    assert_eq!(redis_lrange(&mut con, &active).await, ["5", "6", "7", "8"]);
    assert_eq!(
        redis_lrange(&mut con, &format!("{{{root}}}:group:1:keys:active")).await,
        ["1", "2", "3", "5"]
    );
    // Removing key 5: every list, the reverse index and the object.
    assert!(cache.remove_key(5).await.unwrap());
    assert_eq!(redis_lrange(&mut con, &active).await, ["6", "7", "8"]);
    assert_eq!(cache.key(5).await.unwrap(), None);
    assert!(cache.groups_of(5).await.unwrap().is_empty());

    // Every key of the cache is in the root's slot.
    let slot = redis_key_slot(root.to_string().as_bytes());
    let mut found = 0;
    for url in &cluster.node_urls()[..3] {
        let mut node = redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let keys = keyplane_tests::harness::redis_scan(&mut node, &format!("{{{root}}}:*")).await;
        for key in &keys {
            assert_eq!(redis_key_slot(key.as_bytes()), slot, "{key}");
        }
        found += keys.len();
    }
    // 10 objects and 10 reverse indexes remain (key 5 is gone), and the 3 groups' lists.
    assert_eq!(found, 23);
}
