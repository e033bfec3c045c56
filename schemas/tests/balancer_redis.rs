//! On Redis the balancer's cache is native: `TYPE` says hash / list / set for the key
//! object, the group's active list and the reverse index, and plain Redis commands read
//! what the document shows.

use keyplane_core::keyspace::TypedStore;
use keyplane_schemas::balancer::*;
use keyplane_tests::harness::redis_lrange;

async fn query<T: redis::FromRedisValue>(
    con: &mut redis::aio::MultiplexedConnection,
    cmd: &str,
    key: &str,
) -> T {
    redis::cmd(cmd).arg(key).query_async(con).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balancer_keys_are_native_redis_types() {
    let Some((store, mut con)) = keyplane_tests::backends::redis_with_connection().await else {
        return;
    };
    let root = BalancerRoot::new(format!("bal{}", uuid::Uuid::new_v4().simple())).unwrap();
    let cache = Balancer::with_root(&TypedStore::new(store), root.clone()).unwrap();
    write_example(&cache).await.unwrap();

    let object = format!("{root}:key:4");
    let active = format!("{root}:group:2:keys:active");
    let reverse = format!("{root}:key:4:groups");
    for (key, expected) in [(&object, "hash"), (&active, "list"), (&reverse, "set")] {
        let t: String = query(&mut con, "TYPE", key).await;
        assert_eq!(t, expected, "{key}");
    }
    // HGETALL key:{id} → api_key, status
    let mut fields: Vec<(String, String)> = query(&mut con, "HGETALL", &object).await;
    fields.sort();
    assert_eq!(
        fields,
        [
            ("api_key".to_string(), "sk-demo-0004".to_string()),
            ("status".to_string(), "active".to_string()),
        ]
    );
    // LRANGE group:{id}:keys:active 0 -1 → the group's key ids in rotation order
    assert_eq!(
        redis_lrange(&mut con, &active).await,
        ["4", "5", "6", "7", "8"]
    );
    // SMEMBERS key:{id}:groups → the key's groups
    let mut groups: Vec<String> = query(&mut con, "SMEMBERS", &reverse).await;
    groups.sort();
    assert_eq!(groups, ["1", "2"]);

    // A pick is an LMOVE: the head goes to the tail.
    assert_eq!(cache.pick(2).await.unwrap(), Some(4));
    assert_eq!(
        redis_lrange(&mut con, &active).await,
        ["5", "6", "7", "8", "4"]
    );

    // Disabling key 4 fans out to both of its groups' lists.
    cache.set_status(4, KeyStatus::Disabled).await.unwrap();
    let status: String = redis::cmd("HGET")
        .arg(&object)
        .arg("status")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(status, "disabled");
    assert_eq!(redis_lrange(&mut con, &active).await, ["5", "6", "7", "8"]);
    assert_eq!(
        redis_lrange(&mut con, &format!("{root}:group:1:keys:active")).await,
        ["1", "2", "3", "5"]
    );
}

/// Without a root, the cache is the document's bytes exactly: after the example, `SCAN`
/// finds `key:{id}`, `key:{id}:groups` and `group:{id}:keys:active` and nothing else of the
/// balancer's, and a cache the Go service wrote there is read as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_root_the_keys_are_the_documents_bytes() {
    let Some((store, mut con)) = keyplane_tests::backends::redis_with_connection().await else {
        return;
    };
    let cache = Balancer::new(TypedStore::new(store));
    write_example(&cache).await.unwrap();
    let mut scanned = Vec::new();
    for pattern in ["key:*", "group:*"] {
        scanned.extend(keyplane_tests::harness::redis_scan(&mut con, pattern).await);
    }
    scanned.sort();
    let mut expected: Vec<String> = (1..=11)
        .flat_map(|id| [format!("key:{id}"), format!("key:{id}:groups")])
        .chain((1..=3).map(|g| format!("group:{g}:keys:active")))
        .collect();
    expected.sort();
    assert_eq!(scanned, expected);
    let t: String = query(&mut con, "TYPE", "key:1").await;
    assert_eq!(t, "hash");
    assert_eq!(
        redis_lrange(&mut con, "group:3:keys:active").await,
        ["7", "8", "9", "10", "11"]
    );
    assert_eq!(cache.active_keys(3).await.unwrap(), [7, 8, 9, 10, 11]);
}

/// Corruption another program leaves with raw commands (a duplicate `RPUSH`, a disabled
/// key pushed, an `LREM` of a linked key) is found and fixed by `repair`, as `LRANGE`
/// then shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_fixes_raw_redis_corruption() {
    let Some((store, mut con)) = keyplane_tests::backends::redis_with_connection().await else {
        return;
    };
    let root = BalancerRoot::new(format!("bal{}", uuid::Uuid::new_v4().simple())).unwrap();
    let cache = Balancer::with_root(&TypedStore::new(store), root.clone()).unwrap();
    write_example(&cache).await.unwrap();
    cache.set_status(11, KeyStatus::Disabled).await.unwrap();
    let group = |g: u64| format!("{root}:group:{g}:keys:active");
    for (cmd, key, value) in [
        ("RPUSH", group(1), "2"),
        ("RPUSH", group(3), "11"),
        ("RPUSH", group(3), "11"),
    ] {
        let _: i64 = redis::cmd(cmd)
            .arg(&key)
            .arg(value)
            .query_async(&mut con)
            .await
            .unwrap();
    }
    let _: i64 = redis::cmd("LREM")
        .arg(group(2))
        .arg(0)
        .arg("6")
        .query_async(&mut con)
        .await
        .unwrap();
    let report = cache.repair().await.unwrap();
    assert_eq!(report.duplicates, [(1, 2)]);
    assert_eq!(report.strays, [(3, 11)]);
    assert_eq!(report.missing, [(2, 6)]);
    assert_eq!(
        redis_lrange(&mut con, &group(1)).await,
        ["1", "2", "3", "4", "5"]
    );
    assert_eq!(
        redis_lrange(&mut con, &group(2)).await,
        ["4", "5", "7", "8", "6"]
    );
    assert_eq!(
        redis_lrange(&mut con, &group(3)).await,
        ["7", "8", "9", "10"]
    );
    assert!(cache.repair().await.unwrap().clean());
}
