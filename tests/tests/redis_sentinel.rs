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

/// The store opened from `redis+sentinel://` writes with `wait_replicas = 2`; after a
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
    // Both replicas: the old master goes on taking writes until the sentinels reconfigure
    // it, and only a write both replicas hold can be acknowledged then (see
    // `failover_under_concurrent_writes`).
    let config = RedisConfig::new(deployment.url()).wait_replicas(2);
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
            for reader in [&store as &dyn Store, &*through_facade] {
                // A read may still meet the demoted master until the sentinels reconfigure
                // it: then it fails, retryable, and the next goes to the new master.
                let entry = loop {
                    match reader.get(&key(&name)).await {
                        Ok(entry) => break entry,
                        Err(e) => {
                            assert!(e.is_retryable(), "{e}");
                            assert!(Instant::now() < deadline, "{name}: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                };
                assert!(entry.is_some(), "{name} kept");
            }
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

/// How the master goes away.
#[derive(Clone, Copy, Debug)]
enum Failover {
    /// `SENTINEL FAILOVER`: the master is demoted while it runs.
    Command,
    /// `kill -9` of the master: the sentinels find it down and promote a replica.
    Kill,
}

/// Four writers write while the master goes away `how`: every write acknowledged is kept,
/// each writer's revisions only grow, and an open watch delivers each revision once and in
/// order.
///
/// A killed master takes no more writes, and the sentinels promote the replica with the most
/// data, so `wait_replicas = 1` is enough. A master demoted by `SENTINEL FAILOVER` goes on
/// taking writes until the sentinels reconfigure it, seconds later, and the replica still
/// attached to it acknowledges them: with `wait_replicas = 1` those writes would be
/// acknowledged and then lost. The promoted replica leaves the old master at once, so with
/// `wait_replicas = 2` (every replica) the old master can acknowledge nothing more.
async fn failover_under_concurrent_writes(how: Failover) {
    use futures::StreamExt;
    use keyplane_core::{Event, PutOptions, Store, WatchOptions};
    use keyplane_redis::{RedisConfig, RedisStore};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    let Some(mut deployment) = tokio::task::spawn_blocking(RedisSentinel::start)
        .await
        .unwrap()
    else {
        return;
    };
    let config = RedisConfig::new(deployment.url()).wait_replicas(match how {
        Failover::Kill => 1,
        Failover::Command => 2,
    });
    let store = Arc::new(
        RedisStore::open(config)
            .await
            .expect("open through the sentinels"),
    );
    let root = keyplane_tests::harness::key_root("failover");
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (store, root, done) = (store.clone(), root.clone(), done.clone());
            tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_secs(60);
                let mut acknowledged = Vec::new();
                let mut i = 0u32;
                // Writes go on until the failover is over, then ten more.
                let mut after = 0;
                while after < 10 {
                    if done.load(Ordering::SeqCst) {
                        after += 1;
                    }
                    let key = format!("{root}w{w}/{i:05}").into_bytes();
                    match store.put(&key, b"v", PutOptions::default()).await {
                        Ok(put) => {
                            acknowledged.push((key, put.revision));
                            i += 1;
                        }
                        Err(e) => {
                            assert!(e.is_retryable(), "writer {w}: {e}");
                            assert!(Instant::now() < deadline, "writer {w} stuck: {e}");
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
                acknowledged
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let old = deployment.master_port();
    let new = tokio::task::block_in_place(|| match how {
        Failover::Command => deployment.fail_over(),
        Failover::Kill => {
            deployment.server(old).kill();
            deployment.wait_for_new_master(old)
        }
    });
    assert_ne!(old, new, "{how:?}");
    done.store(true, Ordering::SeqCst);
    let mut acknowledged = Vec::new();
    for writer in writers {
        let written = writer.await.unwrap();
        let revisions: Vec<i64> = written.iter().map(|(_, r)| *r).collect();
        assert!(
            revisions.windows(2).all(|w| w[0] < w[1]),
            "{how:?}: a writer's revisions only grow: {revisions:?}"
        );
        acknowledged.extend(written);
    }
    for (key, revision) in &acknowledged {
        let entry = store.get(key).await.unwrap();
        let entry = entry.unwrap_or_else(|| {
            panic!(
                "{how:?}: the write of {} acknowledged at {revision} was lost",
                String::from_utf8_lossy(key)
            )
        });
        assert!(entry.mod_revision >= *revision, "{how:?}");
    }
    // The watch: each revision once, in order, every acknowledged one among them with its
    // key. A master demoted while it runs may have logged writes it could not acknowledge,
    // which the watch read and the new master lacks (and gives their revisions to other
    // writes): then the watch ends with `Compacted`, never going on as if they stood, and is
    // reopened from the first acknowledged revision it has not seen.
    let expected: std::collections::BTreeMap<i64, Vec<u8>> = acknowledged
        .iter()
        .map(|(key, revision)| (*revision, key.clone()))
        .collect();
    let last = *expected.keys().next_back().unwrap();
    let mut seen: std::collections::BTreeMap<i64, Vec<Vec<u8>>> = Default::default();
    let mut segment: Vec<i64> = Vec::new();
    let mut reopened = 0;
    loop {
        let missing = expected.keys().find(|r| !seen.contains_key(r)).copied();
        let Some(missing) = missing else { break };
        if segment.last().is_some_and(|&r| r >= last) {
            panic!("{how:?}: revision {missing} not watched");
        }
        let batch = tokio::time::timeout(Duration::from_secs(30), watch.next())
            .await
            .expect("the watch delivers within 30 s")
            .expect("a watch never just ends");
        let batch = match batch {
            Ok(batch) => batch,
            Err(e) if e.compact_revision().is_some() && reopened < 3 => {
                reopened += 1;
                for r in seen
                    .keys()
                    .copied()
                    .filter(|r| *r >= missing)
                    .collect::<Vec<_>>()
                {
                    seen.remove(&r);
                }
                segment.clear();
                let options = WatchOptions::prefix(&root).from_revision(missing);
                watch = store.watch(options).await.unwrap();
                continue;
            }
            Err(e) => panic!("{how:?}: the watch failed across the failover: {e}"),
        };
        for event in &batch.events {
            if let Event::Put { entry, .. } = event {
                assert!(
                    segment.last().is_none_or(|&r| r < entry.mod_revision),
                    "{how:?}: each revision once, in order"
                );
                segment.push(entry.mod_revision);
                seen.entry(entry.mod_revision)
                    .or_default()
                    .push(entry.key.clone());
            }
        }
    }
    for (revision, key) in &expected {
        assert!(
            seen.get(revision).is_some_and(|keys| keys.contains(key)),
            "{how:?}: revision {revision} was watched with other keys: {:?}",
            seen.get(revision)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover_under_concurrent_writes_loses_no_acknowledged_write() {
    failover_under_concurrent_writes(Failover::Command).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_under_concurrent_writes_loses_no_acknowledged_write() {
    failover_under_concurrent_writes(Failover::Kill).await;
}

/// The reconciler under Sentinel: a key another program writes straight to the master
/// reaches the store's watch, before a failover and after it (the subscription follows the
/// master, whose notification setting the store turns on anew: configuration is not
/// replicated).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_writes_reach_the_watch_across_a_failover() {
    use futures::StreamExt;
    use keyplane_core::{Event, Store, WatchOptions};
    use keyplane_redis::{RedisConfig, RedisStore};
    use std::time::Duration;

    let Some(deployment) = tokio::task::spawn_blocking(RedisSentinel::start)
        .await
        .unwrap()
    else {
        return;
    };
    let root = keyplane_tests::harness::key_root("sentinel-foreign");
    let config = RedisConfig::new(deployment.url()).reconcile_roots(vec![root.clone()]);
    let store = RedisStore::open(config)
        .await
        .expect("open with a reconcile root");
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    let set_on_master = |port: u16, key: &str| {
        let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}"))
            .and_then(|c| c.get_connection())
            .expect("a connection to the master");
        let () = redis::cmd("SET")
            .arg(key)
            .arg("foreign")
            .query(&mut con)
            .expect("SET on the master");
    };
    // Waits for a put of `key`, skipping anything else; the watch may fail once across the
    // failover (retryable), and is then reopened after the last revision it delivered.
    async fn put_of(
        store: &RedisStore,
        watch: &mut keyplane_core::WatchStream,
        root: &str,
        key: &str,
        last: &mut i64,
    ) {
        let found = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                match watch.next().await.expect("a watch never just ends") {
                    Ok(batch) => {
                        *last = batch.revision;
                        if batch.events.iter().any(|e| {
                            matches!(e, Event::Put { entry, .. } if entry.key == key.as_bytes())
                        }) {
                            return;
                        }
                    }
                    Err(e) => {
                        assert!(e.is_retryable(), "{e}");
                        let options = WatchOptions::prefix(root).from_revision(*last + 1);
                        *watch = loop {
                            match store.watch(options.clone()).await {
                                Ok(w) => break w,
                                Err(e) if e.is_retryable() => {
                                    tokio::time::sleep(Duration::from_millis(100)).await;
                                }
                                Err(e) => panic!("reopening the watch: {e}"),
                            }
                        };
                    }
                }
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "the foreign write of {key} never reached the watch"
        );
    }
    let mut last = store.revision().await.unwrap();
    let before = format!("{root}before");
    tokio::task::block_in_place(|| set_on_master(deployment.master_port(), &before));
    put_of(&store, &mut watch, &root, &before, &mut last).await;

    let new = tokio::task::block_in_place(|| deployment.fail_over());
    let after = format!("{root}after");
    tokio::task::block_in_place(|| set_on_master(new, &after));
    put_of(&store, &mut watch, &root, &after, &mut last).await;
    let entry = store.get(after.as_bytes()).await.unwrap().expect("adopted");
    assert_eq!(entry.value, b"foreign");
}
