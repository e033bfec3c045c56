//! The Redis deployment under Sentinel that the harness starts: the sentinels agree on the
//! master, the replicas copy it, and a failover promotes a replica that takes writes.

use keyplane_tests::harness::RedisSentinel;

/// `INFO replication` of the server on `port`.
fn replication(port: u16) -> String {
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .and_then(|c| c.get_connection())
        .expect("a connection to the server");
    redis::cmd("INFO")
        .arg("replication")
        .query(&mut con)
        .expect("INFO replication")
}

/// Writes `key` on the server on `port` and waits until both replicas have it.
fn write_replicated(port: u16, key: &str, value: &str) {
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .and_then(|c| c.get_connection())
        .expect("a connection to the master");
    let () = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .query(&mut con)
        .expect("SET on the master");
    let acknowledged: i64 = redis::cmd("WAIT")
        .arg(2)
        .arg(10_000)
        .query(&mut con)
        .expect("WAIT");
    assert_eq!(acknowledged, 2, "both replicas acknowledge the write");
}

/// The value of `key` on the server on `port`.
fn read(port: u16, key: &str) -> Option<String> {
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .and_then(|c| c.get_connection())
        .expect("a connection");
    redis::cmd("GET").arg(key).query(&mut con).expect("GET")
}

#[test]
fn sentinels_follow_a_failover_to_a_replica_that_takes_writes() {
    let Some(deployment) = RedisSentinel::start() else {
        return;
    };
    let url = deployment.url();
    assert!(url.starts_with("redis+sentinel://127.0.0.1:"), "{url}");
    let old = deployment.master_port();
    assert!(replication(old).contains("connected_slaves:2"));
    write_replicated(old, "sentinel-test/before", "1");

    let new = deployment.fail_over();
    assert_ne!(new, old);
    assert!(replication(new).contains("role:master"));
    // The promoted replica holds what the old master acknowledged, and takes writes.
    assert_eq!(read(new, "sentinel-test/before").as_deref(), Some("1"));
    deployment.wait_for_replicas_of(new);
    write_replicated(new, "sentinel-test/after", "2");
    // The old master now replicates the new one.
    assert_eq!(read(old, "sentinel-test/after").as_deref(), Some("2"));
}

/// The store opened from `redis+sentinel://` writes with `wait_replicas = 1`; after a
/// failover it writes to the promoted replica, keeps every acknowledged write, its revisions
/// only grow, and an open watch delivers each revision once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_follows_a_failover() {
    use futures::StreamExt;
    use keyplane_core::{ErrorKind, Event, PutOptions, Store, WatchOptions};
    use keyplane_redis::{RedisConfig, RedisStore};
    use std::time::{Duration, Instant};

    let Some(deployment) = tokio::task::spawn_blocking(RedisSentinel::start)
        .await
        .unwrap()
    else {
        return;
    };
    let config = RedisConfig {
        wait_replicas: 1,
        ..RedisConfig::new(deployment.url())
    };
    let store = RedisStore::open(config)
        .await
        .expect("open through the sentinels");
    let through_facade = keyplane::open(&deployment.url())
        .await
        .expect("keyplane::open");
    let root = keyplane_tests::harness::key_root("sentinel");
    let key = |name: &str| format!("{root}{name}").into_bytes();
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    let mut acknowledged = Vec::new();
    for i in 0..5 {
        let put = store
            .put(&key(&format!("before-{i}")), b"v", PutOptions::default())
            .await
            .unwrap();
        acknowledged.push(put.revision);
    }
    let old = deployment.master_port();
    let new = tokio::task::block_in_place(|| deployment.fail_over());
    assert_ne!(old, new);

    // The first writes may meet the demoted master or a dropped connection: each is
    // refused with a retryable error, and the store moves to the new master.
    let deadline = Instant::now() + Duration::from_secs(30);
    for i in 0..5 {
        let name = key(&format!("after-{i}"));
        let put = loop {
            match store.put(&name, b"v", PutOptions::default()).await {
                Ok(put) => break put,
                Err(e) if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Timeout) => {
                    assert!(
                        Instant::now() < deadline,
                        "no write succeeded after the failover: {e}"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("a write after the failover: {e}"),
            }
        };
        acknowledged.push(put.revision);
    }
    assert!(
        acknowledged.windows(2).all(|w| w[0] < w[1]),
        "revisions only grow: {acknowledged:?}"
    );
    for i in 0..5 {
        for name in [format!("before-{i}"), format!("after-{i}")] {
            assert!(
                store.get(&key(&name)).await.unwrap().is_some(),
                "{name} kept"
            );
            assert!(
                through_facade.get(&key(&name)).await.unwrap().is_some(),
                "{name} kept"
            );
        }
    }
    // The watch delivers every revision once and in order, across the failover.
    let last = *acknowledged.last().unwrap();
    let mut seen = Vec::new();
    while seen.last().is_none_or(|&r| r < last) {
        let batch = tokio::time::timeout(Duration::from_secs(30), watch.next())
            .await
            .expect("the watch delivers within 30 s")
            .expect("the watch is open");
        let batch = match batch {
            Ok(batch) => batch,
            Err(e) => panic!("the watch failed across the failover: {e}"),
        };
        for event in &batch.events {
            if let Event::Put { entry, .. } = event {
                seen.push(entry.mod_revision);
            }
        }
    }
    let mut expected = acknowledged.clone();
    expected.sort_unstable();
    seen.retain(|r| expected.contains(r));
    assert_eq!(seen, expected, "each revision once, in order");
}
