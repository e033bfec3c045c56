//! Network partitions through the harness's proxies: what each store acknowledges, and what
//! it reads, while part of its deployment cannot reach the rest.

use futures::StreamExt;
use keyplane_core::{PutOptions, Store, WatchBatch, WatchOptions};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::chaos::faults::etcd_leader;
use keyplane_tests::harness::{CLIENT, EtcdCluster, RedisSentinel, key_root};
use std::time::{Duration, Instant};
use tokio::task::block_in_place;

/// Calls `f` until it succeeds, for up to 30 s.
async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = keyplane_core::Result<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match f().await {
            Ok(v) => return v,
            Err(e) if Instant::now() < deadline => {
                assert!(e.is_retryable(), "{what}: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{what} did not succeed within 30 s: {e}"),
        }
    }
}

/// The watch's next item, within 30 s.
async fn next(watch: &mut keyplane_core::WatchStream) -> keyplane_core::Result<WatchBatch> {
    tokio::time::timeout(Duration::from_secs(30), watch.next())
        .await
        .expect("the watch answers within 30 s")
        .expect("a watch never just ends")
}

/// A 3-member cluster behind a network, a key of the test's own, and the leader.
async fn partitionable_etcd() -> Option<(EtcdCluster, Vec<u8>, usize)> {
    let cluster = block_in_place(|| EtcdCluster::start_partitionable(3))?;
    let key = format!("{}k", key_root("partition")).into_bytes();
    let leader = etcd_leader(&cluster.direct_endpoints())
        .await
        .expect("a leader");
    Some((cluster, key, leader))
}

/// A store on one member only, through its proxy.
async fn store_on(cluster: &EtcdCluster, member: usize) -> EtcdStore {
    let mut config = EtcdConfig::new(vec![cluster.endpoints()[member].clone()]);
    config.connect_timeout = std::time::Duration::from_millis(1000);
    config.request_timeout = std::time::Duration::from_millis(1500);
    EtcdStore::open(config).await.expect("open on one member")
}

/// The member the others elect once `old` is cut off (asked around the proxies).
async fn new_leader(cluster: &EtcdCluster, old: usize) -> usize {
    let endpoints = cluster.direct_endpoints();
    let others: Vec<String> = (0..cluster.len())
        .filter(|&i| i != old)
        .map(|i| endpoints[i].clone())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(i) = etcd_leader(&others).await {
            return if i >= old { i + 1 } else { i };
        }
        assert!(Instant::now() < deadline, "no new leader within 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The leader cut off from the other two members, its clients still reaching it: the
/// others elect a leader and take writes, while the old leader acknowledges no write and
/// returns no stale read; once healed it serves the majority's data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_etcd_leader_on_the_minority_side_acknowledges_nothing_and_reads_nothing_stale() {
    let Some((cluster, key, leader)) = partitionable_etcd().await else {
        return;
    };
    let net = cluster.network().expect("a partitionable cluster");
    let on_leader = store_on(&cluster, leader).await;
    on_leader
        .put(&key, b"before", PutOptions::default())
        .await
        .unwrap();

    let others: Vec<&str> = (0..3)
        .filter(|&i| i != leader)
        .map(|i| cluster.name(i))
        .collect();
    net.cut(&[cluster.name(leader)], &others);
    let elected = new_leader(&cluster, leader).await;
    assert_ne!(elected, leader);
    let on_majority = store_on(&cluster, elected).await;
    let written = eventually("a write on the majority side", || {
        on_majority.put(&key, b"after", PutOptions::default())
    })
    .await;

    let refused = on_leader.put(&key, b"lost", PutOptions::default()).await;
    assert!(
        refused.is_err(),
        "the old leader acknowledged a write it cannot commit"
    );
    match on_leader.get(&key).await {
        Ok(entry) => panic!("the old leader answered a read while cut off: {entry:?}"),
        Err(e) => assert!(e.is_retryable(), "{e}"),
    }

    net.heal();
    let entry = eventually("a read after the heal", || on_leader.get(&key)).await;
    let entry = entry.expect("the key");
    // The write refused on the minority side may still commit once its proposal reaches
    // the others after the heal; the majority's write is never lost behind it.
    assert!(entry.mod_revision >= written.revision, "{entry:?}");
    assert!(
        entry.value == b"after" || entry.value == b"lost",
        "{:?}",
        String::from_utf8_lossy(&entry.value)
    );
}

/// A follower cut off from the others: the cluster goes on, and the follower's clients get
/// errors, not stale reads, until it heals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_etcd_follower_cut_off_returns_errors_then_catches_up() {
    let Some((cluster, key, leader)) = partitionable_etcd().await else {
        return;
    };
    let net = cluster.network().expect("a partitionable cluster");
    let follower = (leader + 1) % 3;
    let on_follower = store_on(&cluster, follower).await;
    let on_leader = store_on(&cluster, leader).await;
    on_follower
        .put(&key, b"before", PutOptions::default())
        .await
        .unwrap();
    let others: Vec<&str> = (0..3)
        .filter(|&i| i != follower)
        .map(|i| cluster.name(i))
        .collect();
    net.cut(&[cluster.name(follower)], &others);
    let written = eventually("a write on the majority side", || {
        on_leader.put(&key, b"after", PutOptions::default())
    })
    .await;
    match on_follower.get(&key).await {
        Ok(Some(entry)) if entry.value == b"after" => {}
        Ok(entry) => panic!("a cut-off follower answered a stale read: {entry:?}"),
        Err(e) => assert!(e.is_retryable(), "{e}"),
    }
    net.heal();
    let entry = eventually("a read after the heal", || on_follower.get(&key))
        .await
        .expect("the key");
    assert_eq!(entry.mod_revision, written.revision);
    assert_eq!(entry.value, b"after");
}

/// The client cut off from its only member: calls fail within the request timeout, with a
/// retryable error, and work again once it heals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_etcd_client_cut_off_from_its_member_fails_then_recovers() {
    let Some(cluster) = block_in_place(|| EtcdCluster::start_partitionable(3)) else {
        return;
    };
    let net = cluster.network().expect("a partitionable cluster");
    let key = format!("{}k", key_root("partition")).into_bytes();
    let store = store_on(&cluster, 0).await;
    store.put(&key, b"1", PutOptions::default()).await.unwrap();
    net.cut(&[CLIENT], &[cluster.name(0)]);
    let began = Instant::now();
    let err = store
        .put(&key, b"2", PutOptions::default())
        .await
        .expect_err("a write through a cut link succeeded");
    assert!(err.is_retryable(), "{err}");
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "the call hung for {:?}",
        began.elapsed()
    );
    net.heal();
    let third = eventually("a write after the heal", || {
        store.put(&key, b"3", PutOptions::default())
    })
    .await;
    let entry = store.get(&key).await.unwrap().expect("the key");
    if entry.value == b"2" {
        // A write that failed other than unapplied has an unknown outcome: the proxy held
        // its request, which reached the member after the heal, after the write that
        // followed it.
        assert!(!err.is_unapplied(), "a write said unapplied was applied");
        assert!(entry.mod_revision > third.revision, "{entry:?}");
    } else {
        assert_eq!(entry.value, b"3");
        assert!(entry.mod_revision >= third.revision, "{entry:?}");
    }
}

/// The Redis master cut off from its replicas and the sentinels while its clients still
/// reach it: the sentinels promote a replica; the old master still takes writes, but a
/// store with `wait_replicas = 1` acknowledges none of them, while a store without it
/// does, and those writes are lost when the heal makes the old master a replica of the new
/// one; a watch that read them ends with `Compacted`. Writes acknowledged with
/// `wait_replicas` before the cut are all kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_master_cut_off_loses_only_the_writes_not_waited_for() {
    let Some(deployment) = block_in_place(RedisSentinel::start_partitionable) else {
        return;
    };
    let net = deployment.network().expect("a partitionable deployment");
    let open = |wait_replicas| {
        let mut config = RedisConfig::new(deployment.url());
        config.wait_replicas = wait_replicas;
        config.wait_timeout = std::time::Duration::from_millis(500);
        config.request_timeout = std::time::Duration::from_millis(2000);
        RedisStore::open(config)
    };
    let waited = open(1).await.expect("open with wait_replicas = 1");
    let unwaited = open(0).await.expect("open without wait_replicas");
    let root = key_root("partition");
    let key = |name: &str| format!("{root}{name}").into_bytes();
    for i in 0..5 {
        waited
            .put(&key(&format!("kept-{i}")), b"v", PutOptions::default())
            .await
            .unwrap();
    }

    let mut watch = unwaited.watch(WatchOptions::prefix(&root)).await.unwrap();
    let old = deployment.master_port();
    let old_name = deployment
        .node_name(old)
        .expect("the master's node")
        .to_string();
    let rest: Vec<String> = deployment
        .server_names()
        .into_iter()
        .chain(deployment.sentinel_names())
        .filter(|n| *n != old_name)
        .collect();
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    net.cut(&[&old_name], &rest);
    // Before the sentinels can promote a replica (their down-after is a second), the
    // store knows no other master: the write runs on the old one, no replica acknowledges
    // it, and it is refused.
    let refused = waited
        .put(&key("unacknowledged"), b"v", PutOptions::default())
        .await;
    let err = refused.expect_err("a write acknowledged by no replica was acknowledged");
    assert!(err.is_retryable(), "{err}");
    let new = block_in_place(|| deployment.wait_for_new_master(old));
    assert_ne!(new, old);

    // The old master still answers its clients.
    let lost = unwaited
        .put(&key("lost"), b"v", PutOptions::default())
        .await
        .expect("the old master takes a write it cannot replicate");
    // A waited write now is refused on the old master, or acknowledged by the new one's
    // replica once a refused write (this one, or the lease sweeper's) has sent the store
    // to the master the sentinels name: then it must survive the heal.
    let moved = waited.put(&key("moved"), b"v", PutOptions::default()).await;
    if let Err(err) = &moved {
        assert!(err.is_retryable(), "{err}");
    }
    // The watch, on the old master's side, delivers the write that will be lost. On a
    // loaded machine it may instead have followed the store to the new master already (a
    // blocking read that timed out asks the sentinels again): the new master lacks the
    // refused write the watch read, so there it ends with `Compacted` at once.
    let mut ended = false;
    loop {
        match next(&mut watch).await {
            Ok(batch) if batch.revision >= lost.revision => break,
            Ok(_) => {}
            Err(e) => {
                assert!(e.compact_revision().is_some(), "{e}");
                ended = true;
                break;
            }
        }
    }

    net.heal();
    // Once the old master is demoted, the new one lacks what the watch read, and reissues
    // those revisions to other writes: the watch ends with `Compacted` rather than go on
    // as if nothing had happened.
    while !ended {
        match next(&mut watch).await {
            Ok(batch) => assert!(
                batch.revision > lost.revision,
                "after the failover the watch delivered revision {} again",
                batch.revision
            ),
            Err(e) => {
                assert!(e.compact_revision().is_some(), "{e}");
                ended = true;
            }
        }
    }
    block_in_place(|| deployment.wait_for_replicas_of(new));
    for store in [&waited, &unwaited] {
        for i in 0..5 {
            let kept = key(&format!("kept-{i}"));
            let entry = eventually("a read after the heal", || store.get(&kept)).await;
            assert!(
                entry.is_some(),
                "kept-{i}: an acknowledged, waited write was lost"
            );
        }
        if let Ok(moved) = &moved {
            let moved_key = key("moved");
            let entry = eventually("a read after the heal", || store.get(&moved_key)).await;
            assert_eq!(
                entry.map(|e| e.mod_revision),
                Some(moved.revision),
                "a waited write acknowledged after the failover was lost"
            );
        }
        let lost_key = key("lost");
        let after = eventually("a read after the heal", || store.get(&lost_key)).await;
        assert!(
            after.is_none(),
            "the write not waited for (revision {}) survived the old master's demotion",
            lost.revision
        );
    }
    let after = key("after");
    eventually("a waited write after the heal", || {
        waited.put(&after, b"v", PutOptions::default())
    })
    .await;
}
