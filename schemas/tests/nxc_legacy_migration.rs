//! `nxc-legacy` on every backend, and on Redis from data written with raw commands: every
//! legacy group, index and config string found by scanning, planned, applied twice,
//! verified, finalized, or rolled back; newer data in the new layout is never overwritten.

use keyplane_core::layer::Namespaced;
use keyplane_core::migrate::{Migrator, Phase};
use keyplane_core::{CollectionOp, CollectionResult, PutOptions, Store};
use keyplane_schemas::nxc::NxcLegacy;
use std::sync::Arc;

/// A store of its own under a random prefix, since the legacy layout has fixed keys.
fn isolated(store: Arc<dyn Store>) -> (Arc<dyn Store>, String) {
    let prefix = format!("t{}:", uuid::Uuid::new_v4().simple());
    (
        Arc::new(Namespaced::new(store, prefix.clone()).unwrap()),
        prefix,
    )
}

async fn hset(store: &dyn Store, key: &str, pairs: &[(&str, &str)]) {
    for (field, value) in pairs {
        store
            .collection(CollectionOp::MapPut {
                key: key.into(),
                field: (*field).into(),
                value: (*value).into(),
            })
            .await
            .unwrap();
    }
}

async fn sadd(store: &dyn Store, key: &str, members: &[&str]) {
    for m in members {
        store
            .collection(CollectionOp::SetAdd {
                key: key.into(),
                member: (*m).into(),
            })
            .await
            .unwrap();
    }
}

async fn set(store: &dyn Store, key: &str, value: &str) {
    store
        .put(key.as_bytes(), value.as_bytes(), PutOptions::default())
        .await
        .unwrap();
}

async fn members(store: &dyn Store, key: &str) -> Vec<String> {
    match store
        .collection(CollectionOp::SetMembers { key: key.into() })
        .await
        .unwrap()
    {
        CollectionResult::Members(m) => m
            .into_iter()
            .map(|m| String::from_utf8(m).unwrap())
            .collect(),
        other => panic!("{other:?}"),
    }
}

async fn fields(store: &dyn Store, key: &str) -> Vec<(String, String)> {
    match store
        .collection(CollectionOp::MapGetAll { key: key.into() })
        .await
        .unwrap()
    {
        CollectionResult::Fields(f) => f
            .into_iter()
            .map(|(f, v)| (String::from_utf8(f).unwrap(), String::from_utf8(v).unwrap()))
            .collect(),
        other => panic!("{other:?}"),
    }
}

async fn get(store: &dyn Store, key: &str) -> Option<String> {
    store
        .get(key.as_bytes())
        .await
        .unwrap()
        .map(|e| String::from_utf8(e.value).unwrap())
}

/// The legacy data of the document's §1: realm r1 on WeChat with a group, an index and two
/// config strings (one JSON, one ciphertext); realm r2 on Alipay with an index only; realm
/// r3 with an invalid id; realm r4 whose new map another service already wrote.
async fn legacy(store: &dyn Store) {
    hset(
        store,
        "nexus:config:group:WeChat:r1",
        &[("p_1", "1"), ("p_2", "1"), ("default", "p_2")],
    )
    .await;
    sadd(store, "nexus:config:index:WeChat:r1", &["p_2", "p_3"]).await;
    set(
        store,
        "nexus:config:WeChat:r1:p_1",
        r#"{"sub_mchid":"1900","sandbox":true}"#,
    )
    .await;
    set(store, "nexus:config:WeChat:r1:p_2", "ciphertext").await;
    sadd(store, "nexus:config:index:Alipay:r2", &["a_1"]).await;
    hset(store, "nexus:config:group:Alipay:r3", &[("bad id", "1")]).await;
    sadd(store, "nexus:config:index:Alipay:r4", &["a_9"]).await;
    sadd(store, "nxc:map:r4:Alipay", &["a_0"]).await;
}

async fn whole_legacy_layout_migrates(store: Arc<dyn Store>) {
    let (store, _) = isolated(store);
    legacy(&*store).await;
    let migrator = Migrator::new(store.clone(), Arc::new(NxcLegacy::new()));

    let plan = migrator.plan().await.unwrap();
    // Old items: 2 groups, 3 indexes (r1's merges into its group), 2 configs.
    assert_eq!(plan.old, 7, "{plan:?}");
    // Created: r1's map and marker, r1's p_1 instance, r2's map.
    assert_eq!(plan.created, 4, "{plan:?}");
    assert_eq!(plan.conflicts.len(), 1, "r4's newer map");
    assert_eq!(
        plan.unmappable.len(),
        2,
        "the ciphertext and the invalid id"
    );
    assert!(get(&*store, "nxc:map:r1:WeChat:default").await.is_none());

    let applied = migrator.apply().await.unwrap();
    assert_eq!(applied.created, 4);
    assert_eq!(
        members(&*store, "nxc:map:r1:WeChat").await,
        ["p_1", "p_2", "p_3"]
    );
    assert_eq!(
        get(&*store, "nxc:map:r1:WeChat:default").await.as_deref(),
        Some("p_2")
    );
    assert_eq!(
        fields(&*store, "nxc:inst:r1:WeChat:p_1").await,
        [
            ("sandbox".into(), "true".into()),
            ("sub_mchid".into(), "1900".into())
        ]
    );
    assert_eq!(members(&*store, "nxc:map:r2:Alipay").await, ["a_1"]);
    assert_eq!(
        members(&*store, "nxc:map:r4:Alipay").await,
        ["a_0"],
        "newer data is kept"
    );
    assert!(fields(&*store, "nxc:inst:r1:WeChat:p_2").await.is_empty());
    let again = migrator.apply().await.unwrap();
    assert_eq!((again.created, again.batches), (0, 0));

    let verified = migrator.verify().await.unwrap();
    assert_eq!((verified.missing.len(), verified.differs.len()), (0, 1));
    assert_eq!(verified.unmappable.len(), 2);
    // The legacy keys stay until finalize.
    assert_eq!(
        members(&*store, "nexus:config:index:WeChat:r1").await,
        ["p_2", "p_3"]
    );
    let finalized = migrator.finalize().await.unwrap();
    // r1's group, index and JSON config, and r2's index; kept: the ciphertext, r3's group
    // (unmappable) and r4's index (its map holds newer data).
    assert_eq!(finalized.deleted, 4, "{finalized:?}");
    assert_eq!(finalized.kept.len(), 3, "{finalized:?}");
    assert!(
        fields(&*store, "nexus:config:group:WeChat:r1")
            .await
            .is_empty()
    );
    assert!(
        members(&*store, "nexus:config:index:WeChat:r1")
            .await
            .is_empty()
    );
    assert!(get(&*store, "nexus:config:WeChat:r1:p_1").await.is_none());
    assert_eq!(
        get(&*store, "nexus:config:WeChat:r1:p_2").await.as_deref(),
        Some("ciphertext"),
        "what cannot be mapped stays"
    );
    assert_eq!(
        members(&*store, "nexus:config:index:Alipay:r4").await,
        ["a_9"]
    );
    assert_eq!(migrator.phase().await.unwrap(), Phase::Finalized);
}

async fn rollback_restores_the_new_layout(store: Arc<dyn Store>) {
    let (store, _) = isolated(store);
    legacy(&*store).await;
    let migrator = Migrator::new(store.clone(), Arc::new(NxcLegacy::new()));
    migrator.apply().await.unwrap();
    // A service adds a profile to a migrated map: that map is no longer the migration's.
    sadd(&*store, "nxc:map:r2:Alipay", &["a_2"]).await;
    let rolled = migrator.rollback().await.unwrap();
    assert_eq!(rolled.deleted, 3, "{rolled:?}");
    assert_eq!(rolled.kept, [b"nxc:map:r2:Alipay".to_vec()]);
    assert!(members(&*store, "nxc:map:r1:WeChat").await.is_empty());
    assert!(get(&*store, "nxc:map:r1:WeChat:default").await.is_none());
    assert!(fields(&*store, "nxc:inst:r1:WeChat:p_1").await.is_empty());
    assert_eq!(members(&*store, "nxc:map:r4:Alipay").await, ["a_0"]);
    assert_eq!(
        members(&*store, "nexus:config:index:WeChat:r1").await,
        ["p_2", "p_3"]
    );
    assert_eq!(migrator.phase().await.unwrap(), Phase::New);
}

keyplane_tests::on_every_backend!(
    whole_legacy_layout_migrates,
    rollback_restores_the_new_layout
);

/// Data the legacy C# service wrote with raw commands, migrated on Redis after a reconcile
/// of the legacy prefix: the new keys are native sets, strings and hashes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_redis_legacy_data_migrates() {
    let Some(server) = keyplane_tests::harness::shared_redis().await else {
        return;
    };
    let mut con = keyplane_tests::harness::redis_connection(&server.url()).await;
    let mut config = keyplane_redis::RedisConfig::new(server.url());
    config.internal_prefix = format!("__kvm{}:", uuid::Uuid::new_v4().simple());
    let redis = Arc::new(keyplane_redis::RedisStore::open(config).await.unwrap());
    let (store, prefix) = isolated(redis.clone());
    let k = |key: &str| format!("{prefix}{key}");
    for args in [
        vec![
            "HSET".to_owned(),
            k("nexus:config:group:WeChat:r1"),
            "p_1".into(),
            "1".into(),
            "default".into(),
            "p_1".into(),
        ],
        vec![
            "SADD".into(),
            k("nexus:config:index:WeChat:r1"),
            "p_2".into(),
        ],
        vec![
            "SET".into(),
            k("nexus:config:WeChat:r1:p_1"),
            r#"{"sub_mchid":"1900"}"#.into(),
        ],
    ] {
        let mut cmd = redis::cmd(&args[0]);
        for a in &args[1..] {
            cmd.arg(a);
        }
        let _: redis::Value = cmd.query_async(&mut con).await.unwrap();
    }
    redis
        .reconcile(k("nexus:config:").as_bytes())
        .await
        .unwrap();
    let migrator = Migrator::new(store.clone(), Arc::new(NxcLegacy::new()));
    let applied = migrator.apply().await.unwrap();
    assert_eq!(applied.created, 3, "{applied:?}");
    let raw = |args: &[String]| {
        let mut cmd = redis::cmd(&args[0]);
        for a in &args[1..] {
            cmd.arg(a);
        }
        cmd
    };
    let mut map: Vec<String> = raw(&["SMEMBERS".into(), k("nxc:map:r1:WeChat")])
        .query_async(&mut con)
        .await
        .unwrap();
    map.sort();
    assert_eq!(map, ["p_1", "p_2"]);
    let marker: String = raw(&["GET".into(), k("nxc:map:r1:WeChat:default")])
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(marker, "p_1");
    let inst: Vec<String> = raw(&["HGETALL".into(), k("nxc:inst:r1:WeChat:p_1")])
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(inst, ["sub_mchid", "1900"]);
    assert!(migrator.verify().await.unwrap().is_clean());
    let finalized = migrator.finalize().await.unwrap();
    assert_eq!(finalized.deleted, 3, "{finalized:?}");
    let left: i64 = raw(&[
        "EXISTS".into(),
        k("nexus:config:group:WeChat:r1"),
        k("nexus:config:index:WeChat:r1"),
        k("nexus:config:WeChat:r1:p_1"),
    ])
    .query_async(&mut con)
    .await
    .unwrap();
    assert_eq!(left, 0, "finalize deleted the raw legacy keys");
}
