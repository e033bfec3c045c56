//! nxc's cluster variant: the document's templates with the realm (and, for pools, the
//! profile) as Redis Cluster hash tag, checked by the schema checker and the invariant
//! harness (whose hash-tag property puts every key of a group in one slot), and run on the
//! harness's 3-master, 3-replica cluster: a profile created in one transaction with its
//! realm's map, marker and instance, read back and deleted, its pool secret in a group of its
//! own, and `redis-cli -c` reading what the store wrote.

use keyplane_core::keyspace::Key;
use keyplane_core::keyspace::{
    EncryptionKey, Keyring, Keyspace, TypedStore, assert_key_invariants,
    assert_keyspace_invariants, check_keyspace,
};
use keyplane_core::raw::redis_key_slot;
use keyplane_core::{ErrorKind, Store};
use keyplane_redis::RedisStore;
use keyplane_schemas::nxc::*;
use keyplane_tests::harness::shared_redis_cluster;
use std::sync::Arc;

fn realm(name: &str) -> RealmId {
    RealmId::new(name).unwrap()
}
fn provider() -> ProviderName {
    ProviderName::new("Alipay").unwrap()
}
fn profile(name: &str) -> ProfileId {
    ProfileId::new(name).unwrap()
}

#[test]
fn cluster_keys_are_the_documents_with_the_group_as_hash_tag() {
    let map = ClusterProfileMapKey::new(&realm("shop-1"), &provider());
    let cases: Vec<(NxcClusterKeyspace, &str)> = vec![
        (map.clone().into(), "nxc:map:{shop-1}:Alipay"),
        (
            map.default_marker().into(),
            "nxc:map:{shop-1}:Alipay:default",
        ),
        (
            map.instance(&profile("app_001")).into(),
            "nxc:inst:{shop-1}:Alipay:app_001",
        ),
        (
            ClusterPoolKey::new(&provider(), &profile("app_001")).into(),
            "nxc:pool:Alipay:{app_001}",
        ),
    ];
    for (key, raw) in &cases {
        assert_eq!(key.encode(), *raw);
        assert_eq!(NxcClusterKeyspace::parse(raw).as_ref(), Ok(key));
    }
    // A realm's keys share its slot.
    let slot = redis_key_slot(b"shop-1");
    for raw in [
        "nxc:map:{shop-1}:Alipay",
        "nxc:inst:{shop-1}:Alipay:app_001",
    ] {
        assert_eq!(redis_key_slot(raw.as_bytes()), slot);
    }
    // The single-server layout is not the cluster's, and neither parses the other's keys.
    assert!(NxcClusterKeyspace::parse("nxc:map:shop-1:Alipay").is_err());
    assert!(NxcKeyspace::parse("nxc:map:{shop-1}:Alipay").is_err());
}

#[test]
fn the_checker_and_the_invariant_harness_pass() {
    let findings = check_keyspace::<NxcClusterKeyspace>();
    assert!(findings.is_empty(), "{findings:#?}");
    assert_keyspace_invariants::<NxcClusterKeyspace>();
    assert_key_invariants::<ClusterProfileMapKey>();
    assert_key_invariants::<ClusterDefaultProfileKey>();
    assert_key_invariants::<ClusterInstanceKey>();
    assert_key_invariants::<ClusterPoolKey>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_realm_lives_in_one_group_of_the_cluster() {
    let Some(cluster) = shared_redis_cluster().await else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(RedisStore::from_url(&cluster.url()).await.unwrap());
    let ring = Arc::new(Keyring::new("pool-1", EncryptionKey::generate()).unwrap());
    let typed = TypedStore::new(store.clone()).with_codec_state(ring);
    let shop = realm(&format!("shop-{}", uuid::Uuid::new_v4().simple()));
    let map = ClusterProfileMapKey::new(&shop, &provider());
    let app = profile("app_001");

    // Creating a profile: the realm's map, marker and instance in one transaction.
    let instance = typed.map_at(&map.instance(&app));
    let mut txn = typed.txn();
    txn.map_put(
        &instance,
        &"sub_mchid".to_string(),
        &"1900000109".to_string(),
    );
    txn.set_add(&typed.set_at(&map), &app);
    txn.put(&map.default_marker(), &app);
    txn.commit().await.unwrap();
    assert_eq!(
        typed.get(&map.default_marker()).await.unwrap(),
        Some(app.clone())
    );
    assert!(typed.set_at(&map).contains(&app).await.unwrap());
    assert_eq!(
        instance.get(&"sub_mchid".to_string()).await.unwrap(),
        Some("1900000109".to_string())
    );

    // The pool secret is its own group's, written alone.
    let pool = ClusterPoolKey::new(&provider(), &app);
    typed
        .put(&pool, &"-----BEGIN KEY-----".to_string())
        .await
        .unwrap();
    assert_eq!(
        typed.get(&pool).await.unwrap().as_deref(),
        Some("-----BEGIN KEY-----")
    );
    // Writing it together with the realm's keys spans two groups: refused, nothing sent.
    let mut txn = typed.txn();
    txn.put(&pool, &"other".to_string());
    txn.put(&map.default_marker(), &profile("app_002"));
    let err = txn.commit().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err:?}");
    assert_eq!(
        typed.get(&map.default_marker()).await.unwrap(),
        Some(app.clone())
    );

    // Another program reads the native types with redis-cli -c.
    let mut con = redis::cluster::ClusterClient::new(vec![cluster.node_urls()[0].clone()])
        .unwrap()
        .get_async_connection()
        .await
        .unwrap();
    let members: Vec<String> = redis::cmd("SMEMBERS")
        .arg(map.encode())
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(members, vec!["app_001".to_string()]);
    let marker: String = redis::cmd("GET")
        .arg(map.default_marker().encode())
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(marker, "app_001");

    // Deleting the profile: one transaction of the realm's group.
    let mut txn = typed.txn();
    txn.set_remove(&typed.set_at(&map), &app);
    txn.delete(&map.instance(&app));
    txn.delete(&map.default_marker());
    txn.commit().await.unwrap();
    assert_eq!(typed.get(&map.default_marker()).await.unwrap(), None);
    assert!(!typed.set_at(&map).contains(&app).await.unwrap());
}
