//! RedisStore on Redis Cluster: the harness's 3-master, 3-replica cluster on loopback.

use keyplane_tests::harness::RedisCluster;

/// What `CLUSTER INFO` or `CLUSTER NODES` says on node `url`.
fn ask(url: &str, what: &str) -> String {
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("CLUSTER").arg(what).query(&mut con).unwrap()
}

#[test]
fn the_harness_forms_a_cluster_whose_replica_takes_over_a_killed_master() {
    let Some(mut cluster) = RedisCluster::start() else {
        return;
    };
    let urls = cluster.node_urls();
    assert!(cluster.url().starts_with("redis+cluster://127.0.0.1:"));
    for url in &urls {
        assert!(ask(url, "INFO").contains("cluster_state:ok"), "{url}");
    }
    let nodes = ask(&urls[1], "NODES");
    assert_eq!(nodes.lines().filter(|l| l.contains("master")).count(), 3);
    assert_eq!(nodes.lines().filter(|l| l.contains("slave")).count(), 3);

    cluster.fail_over(0);
    let nodes = ask(&urls[1], "NODES");
    let replica_port = urls[3].rsplit(':').next().unwrap();
    let promoted = nodes
        .lines()
        .find(|l| l.contains(&format!("127.0.0.1:{replica_port}@")))
        .unwrap();
    assert!(promoted.contains("master"), "{nodes}");
    assert!(promoted.contains("0-5460"), "{nodes}");
}

/// The whole conformance suite on stores of one co-location group each
/// ([`RedisStore::group`](keyplane_redis::RedisStore::group)), every key under the group's
/// hash tag.
mod group_conformance {
    keyplane_tests::conformance_suite!(keyplane_tests::backends::redis_cluster_group);
}

use keyplane_core::raw::redis_key_slot;
use keyplane_core::{
    ErrorKind, KeyRange, PutOptions, RangeOptions, Sharding, Store, Txn, TxnOp, WatchOptions,
};
use keyplane_redis::RedisStore;
use keyplane_tests::harness::shared_redis_cluster;

/// Every key `SCAN` finds on the node of `url`.
fn scan_node(url: &str) -> Vec<Vec<u8>> {
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, page): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(1000)
            .query(&mut con)
            .unwrap();
        keys.extend(page);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

/// Keys of several groups through one store: each group's data and internal keys sit in its
/// tag's slot, in the grouped layout (`__kv:{tag}:rev`, `meta`, `ixd`, `log`), on the master
/// that serves the slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_group_keeps_its_layout_in_its_own_slot() {
    let Some(cluster) = shared_redis_cluster().await else {
        return;
    };
    let store = RedisStore::from_url(&cluster.url()).await.unwrap();
    let run = uuid::Uuid::new_v4().simple().to_string();
    let realms: Vec<String> = (0..6).map(|i| format!("{run}-{i}")).collect();
    for realm in &realms {
        for provider in ["aws", "gcp"] {
            let key = format!("nxc:map:{{{realm}}}:{provider}");
            store
                .put(key.as_bytes(), provider.as_bytes(), PutOptions::default())
                .await
                .unwrap();
        }
        let key = format!("nxc:map:{{{realm}}}:aws");
        let entry = store.get(key.as_bytes()).await.unwrap().unwrap();
        assert_eq!((entry.value.as_slice(), entry.version), (&b"aws"[..], 1));
        // Each group counts its own revisions.
        assert_eq!(entry.mod_revision, 1);
    }
    let mut seen = Vec::new();
    for url in &cluster.node_urls()[..3] {
        seen.extend(scan_node(url));
    }
    for realm in &realms {
        let slot = redis_key_slot(realm.as_bytes());
        let mine: Vec<&Vec<u8>> = seen
            .iter()
            .filter(|k| k.windows(realm.len()).any(|w| w == realm.as_bytes()))
            .collect();
        for key in &mine {
            assert_eq!(
                redis_key_slot(key),
                slot,
                "{}",
                String::from_utf8_lossy(key)
            );
        }
        let names: Vec<String> = mine
            .iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        for expected in [
            format!("nxc:map:{{{realm}}}:aws"),
            format!("nxc:map:{{{realm}}}:gcp"),
            format!("__kv:{{{realm}}}:rev"),
            format!("__kv:{{{realm}}}:meta"),
            format!("__kv:{{{realm}}}:ixd"),
            format!("__kv:{{{realm}}}:log"),
        ] {
            assert!(names.contains(&expected), "{expected} not in {names:?}");
        }
    }
}

/// What the store refuses on a cluster, before sending anything: a key without a hash tag, a
/// transaction over two groups, a read spanning groups pinned to one revision, and the
/// store-wide operations (which a group's store offers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_over_more_than_one_group_are_refused() {
    let Some(cluster) = shared_redis_cluster().await else {
        return;
    };
    let store = RedisStore::from_url(&cluster.url()).await.unwrap();
    assert_eq!(store.capabilities().sharding, Sharding::HashTagGroups);
    let run = uuid::Uuid::new_v4().simple().to_string();
    let (a, b) = (format!("{{{run}a}}/k"), format!("{{{run}b}}/k"));

    let err = store
        .put(b"untagged", b"v", PutOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidKey, "{err:?}");

    let txn = Txn::new().and_then([
        TxnOp::put(a.as_bytes(), b"1"),
        TxnOp::put(b.as_bytes(), b"2"),
    ]);
    let err = store.txn(txn).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err:?}");
    assert_eq!(
        store.get(a.as_bytes()).await.unwrap(),
        None,
        "nothing was written"
    );

    // One group's transaction and range work.
    let txn = Txn::new().and_then([
        TxnOp::put(a.as_bytes(), b"1"),
        TxnOp::put(format!("{{{run}a}}/j").as_bytes(), b"2"),
    ]);
    assert!(store.txn(txn).await.unwrap().succeeded);
    let page = store
        .range(RangeOptions::prefix(format!("{{{run}a}}/")))
        .await
        .unwrap();
    assert_eq!(page.entries.len(), 2);

    for err in [
        store.revision().await.unwrap_err(),
        store
            .lease_grant(std::time::Duration::from_secs(5))
            .await
            .unwrap_err(),
        store.compact(1).await.unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err:?}");
    }
    // Reads spanning groups cannot be pinned to one revision, nor watched from one.
    let spanning = format!("{{{run}");
    let err = store
        .range(RangeOptions::prefix(&spanning).at_revision(1))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err:?}");
    let err = store
        .watch(WatchOptions::prefix(&spanning).from_revision(1))
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err:?}");
    let err = store
        .range(RangeOptions::new(KeyRange::Key(b"untagged".to_vec())))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidKey, "{err:?}");

    // A group's store offers them, on its own keys only.
    let group = store.group(format!("{run}a").as_bytes()).unwrap();
    assert_eq!(group.capabilities().sharding, Sharding::Unsharded);
    assert_eq!(group.revision().await.unwrap(), 1);
    let err = group
        .put(b.as_bytes(), b"x", PutOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidKey, "{err:?}");
    assert!(store.group(b"").is_err());
    assert!(store.group(b"a}b").is_err());
}

/// The master of a group's slot is killed between writes, with a watch open: its replica takes
/// over, the store and the watch find it, every write acknowledged with `WAIT` (one replica)
/// is there, and the watch delivers every revision once, in order, before and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_takes_over_and_the_watch_resumes_without_gap_or_duplicate() {
    use futures::StreamExt;
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let store = RedisStore::open(
        keyplane_redis::RedisConfig::new(cluster.url())
            .wait_replicas(1)
            .wait_timeout(std::time::Duration::from_millis(2000)),
    )
    .await
    .unwrap();
    // A group whose slot the third master serves, which also serves the registry of groups
    // (`__kv:groups`, slot 14921): the spanning watch's reads of the registry fail during the
    // takeover too.
    assert!(redis_key_slot(b"__kv:groups") >= 10923);
    let tag = (0..)
        .map(|i| format!("failover-{i}"))
        .find(|t| redis_key_slot(t.as_bytes()) >= 10923)
        .unwrap();
    let group = store.group(tag.as_bytes()).unwrap();
    let prefix = format!("{{{tag}}}/");
    let mut watch = group
        .watch(keyplane_core::WatchOptions::prefix(&prefix))
        .await
        .unwrap();
    // A watch spanning groups too, on the cluster's store: it finds the group through the
    // registry, and follows it through the takeover.
    let mut spanning = store
        .watch(keyplane_core::WatchOptions::prefix(""))
        .await
        .unwrap();

    let key = |i: u64| format!("{prefix}k{}", i % 7);
    let mut acked = Vec::new();
    for i in 0..40u64 {
        let put = group
            .put(
                key(i).as_bytes(),
                i.to_string().as_bytes(),
                PutOptions::default(),
            )
            .await
            .unwrap();
        acked.push((i, put.revision));
    }
    let cluster = tokio::task::spawn_blocking(move || {
        let mut cluster = cluster;
        cluster.fail_over(2);
        // Back as the new master's replica, so that writes can be acknowledged again.
        cluster.restart(2);
        cluster
    })
    .await
    .unwrap();
    for i in 40..80u64 {
        // The first writes after the takeover may meet the dead master until the client has
        // learnt the new slot map; nothing was written then, or the retry writes it again.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let put = loop {
            match group
                .put(
                    key(i).as_bytes(),
                    i.to_string().as_bytes(),
                    PutOptions::default(),
                )
                .await
            {
                Ok(put) => break put,
                Err(e) if std::time::Instant::now() < deadline => {
                    assert!(e.is_retryable(), "{e:?}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(e) => panic!("no write after the takeover: {e:?}"),
            }
        };
        acked.push((i, put.revision));
    }

    // Every acknowledged write is there: each key holds its last value.
    for k in 0..7u64 {
        let last = acked.iter().rev().find(|(i, _)| i % 7 == k).unwrap();
        let entry = group.get(key(k).as_bytes()).await.unwrap().unwrap();
        assert_eq!(entry.value, last.0.to_string().into_bytes());
        assert_eq!(entry.mod_revision, last.1);
    }
    // The watch delivers each revision once, in order, up to the last.
    let last = acked.last().unwrap().1;
    let mut seen = Vec::new();
    while seen.last().copied().unwrap_or(0) < last {
        let batch = tokio::time::timeout(std::time::Duration::from_secs(30), watch.next())
            .await
            .expect("the watch goes on after the takeover")
            .expect("the watch does not end")
            .expect("the watch reports no error");
        seen.push(batch.revision);
    }
    let revisions: Vec<i64> = acked.iter().map(|(_, r)| *r).collect();
    assert!(
        revisions.windows(2).all(|w| w[0] < w[1]),
        "revisions go on growing across the takeover: {revisions:?}"
    );
    let mut ordered = seen.clone();
    ordered.dedup();
    assert_eq!(ordered.len(), seen.len(), "no duplicate: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order: {seen:?}");
    for revision in &revisions {
        assert!(
            seen.contains(revision),
            "revision {revision} missing: {seen:?}"
        );
    }
    // So does the spanning watch, each batch of the group's.
    let mut across = Vec::new();
    while across.last().copied().unwrap_or(0) < last {
        let batch = tokio::time::timeout(std::time::Duration::from_secs(30), spanning.next())
            .await
            .expect("the spanning watch goes on after the takeover")
            .expect("the spanning watch does not end")
            .expect("the spanning watch reports no error");
        assert_eq!(batch.group.as_deref(), Some(tag.as_bytes()));
        across.push(batch.revision);
    }
    assert_eq!(across, seen, "the same revisions, once each, in order");
    // The replica that took over is the master, the old master its replica.
    let nodes = ask(&cluster.node_urls()[5], "NODES");
    assert!(
        nodes
            .lines()
            .any(|l| l.contains("myself,master") && l.contains("10923-16383")),
        "{nodes}"
    );
}

/// The model-based property test on a group's store: random operation sequences give the
/// reference model's results.
#[test]
fn group_sequences_match_the_reference_model() {
    keyplane_tests::model::check(keyplane_tests::backends::redis_cluster_group, 128);
}

/// Writes `keys` (each `(group, name)`) as `{root}/{group}/name` = `name`, each group in its
/// own transaction; returns the keys written, in key order.
async fn write_in_groups(store: &RedisStore, root: &str, keys: &[(&str, &str)]) -> Vec<String> {
    let mut written = Vec::new();
    for (group, name) in keys {
        let key = format!("{root}/{{{root}-{group}}}/{name}");
        store
            .put(key.as_bytes(), name.as_bytes(), PutOptions::default())
            .await
            .unwrap();
        written.push(key);
    }
    written.sort();
    written
}

fn keys_of(page: &keyplane_core::RangeResult) -> Vec<String> {
    page.entries
        .iter()
        .map(|e| String::from_utf8(e.key.clone()).unwrap())
        .collect()
}

/// A range spanning groups: every group's keys merged in key order, paged by the limit, each
/// group read at its own revision (named in `groups`), and every later page at the first
/// page's revisions, so writes between pages (in a listed group or in a new one) stay out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_spanning_groups_is_merged_in_key_order_and_paged_consistently() {
    let Some(cluster) = shared_redis_cluster().await else {
        return;
    };
    let store = RedisStore::from_url(&cluster.url()).await.unwrap();
    let root = format!("span{}", uuid::Uuid::new_v4().simple());
    let mut spec = Vec::new();
    let names: Vec<String> = (0..20).map(|i| format!("k{i:02}")).collect();
    for (i, name) in names.iter().enumerate() {
        spec.push((["a", "b", "c", "d", "e"][i % 5], name.as_str()));
    }
    let expected = write_in_groups(&store, &root, &spec).await;
    // A key outside the range, in a group of its own.
    store
        .put(
            format!("{root}x/{{{root}-a}}/z").as_bytes(),
            b"out",
            PutOptions::default(),
        )
        .await
        .unwrap();

    let prefix = format!("{root}/");
    let all = store.range(RangeOptions::prefix(&prefix)).await.unwrap();
    assert_eq!(keys_of(&all), expected);
    assert!(!all.more());
    let groups = all
        .groups
        .clone()
        .expect("a spanning read names its groups");
    for g in ["a", "b", "c", "d", "e"] {
        // Four keys per group, one per revision; the group `a` also holds the key outside.
        let expected_rev = if g == "a" { 5 } else { 4 };
        assert_eq!(
            groups.get(format!("{root}-{g}").as_bytes()),
            Some(&expected_rev),
            "{groups:?}"
        );
    }
    let counted = store
        .range(RangeOptions::prefix(&prefix).count_only())
        .await
        .unwrap();
    assert_eq!(counted.count, 20);

    // Paged by 3: the first page fixes each group's revision.
    let first = store
        .range(RangeOptions::prefix(&prefix).limit(3))
        .await
        .unwrap();
    assert_eq!(keys_of(&first), expected[..3]);
    // Written between pages: an overwrite, a new key in a listed group, a new group.
    store
        .put(expected[10].as_bytes(), b"changed", PutOptions::default())
        .await
        .unwrap();
    write_in_groups(&store, &root, &[("b", "k05a"), ("new", "k07a")]).await;
    let mut paged = keys_of(&first);
    let mut next = first.next.clone();
    while let Some(after) = next {
        let page = store
            .range(RangeOptions::prefix(&prefix).limit(3).after(after))
            .await
            .unwrap();
        assert!(page.entries.len() <= 3);
        assert_eq!(
            page.groups, first.groups,
            "every page reads the same groups"
        );
        for e in &page.entries {
            assert_eq!(e.value, e.key.rsplit(|&b| b == b'/').next().unwrap());
        }
        paged.extend(keys_of(&page));
        next = page.next;
    }
    assert_eq!(paged, expected, "one consistent view across pages");

    // A read from scratch sees them, keys only.
    let now = store
        .range(RangeOptions::prefix(&prefix).keys_only())
        .await
        .unwrap();
    assert_eq!(now.entries.len(), 22);
    assert!(now.entries.iter().all(|e| e.value.is_empty()));
    assert!(
        now.groups
            .unwrap()
            .contains_key(format!("{root}-new").as_bytes())
    );

    // Collections of every group are listed too.
    store
        .collection(keyplane_core::CollectionOp::SetAdd {
            key: format!("{root}/{{{root}-c}}/set").into_bytes(),
            member: b"m".to_vec(),
        })
        .await
        .unwrap();
    let listed = store
        .range(RangeOptions::prefix(&prefix).with_collections().limit(100))
        .await
        .unwrap();
    assert_eq!(listed.collections.len(), 1);
    assert_eq!(listed.entries.len(), 22);
    assert_eq!(listed.count, 23);
}

/// Waits for the next batch of `watch`.
async fn next_batch(watch: &mut keyplane_core::WatchStream) -> keyplane_core::WatchBatch {
    use futures::StreamExt;
    tokio::time::timeout(std::time::Duration::from_secs(20), watch.next())
        .await
        .expect("a batch in time")
        .expect("the watch goes on")
        .expect("no error")
}

/// A watch spanning groups, from a listing's position: every later change of every group
/// (and of a group that appears after the watch opened), each batch tagged with its group at
/// that group's revision, in each group's order; resumed from the position its batches
/// moved, it delivers exactly what came after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_spanning_groups_tags_each_batch_and_resumes_per_group() {
    use keyplane_core::WatchPosition;
    let Some(cluster) = shared_redis_cluster().await else {
        return;
    };
    let store = RedisStore::from_url(&cluster.url()).await.unwrap();
    let root = format!("wspan{}", uuid::Uuid::new_v4().simple());
    let prefix = format!("{root}/");
    write_in_groups(&store, &root, &[("a", "1"), ("b", "1"), ("a", "2")]).await;
    let listed = store.range(RangeOptions::prefix(&prefix)).await.unwrap();
    let mut position = WatchPosition::after_range(&listed);
    assert_eq!(position.group(format!("{root}-a").as_bytes()), Some(3));

    // Written after the listing, before the watch: still delivered.
    write_in_groups(&store, &root, &[("b", "2")]).await;
    let mut watch = store
        .watch(WatchOptions::prefix(&prefix).from_position(&position))
        .await
        .unwrap();
    // After the watch opened: a listed group, and a group the registry did not have.
    write_in_groups(&store, &root, &[("a", "3"), ("c", "1"), ("c", "2")]).await;
    let mut seen: Vec<(String, i64, String)> = Vec::new();
    while seen.len() < 4 {
        let batch = next_batch(&mut watch).await;
        position.record(&batch);
        let group = String::from_utf8(batch.group.clone().expect("tagged")).unwrap();
        for event in &batch.events {
            let key = String::from_utf8(event.key().to_vec()).unwrap();
            seen.push((group.clone(), batch.revision, key));
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec![
            (format!("{root}-a"), 3, format!("{root}/{{{root}-a}}/3")),
            (format!("{root}-b"), 2, format!("{root}/{{{root}-b}}/2")),
            (format!("{root}-c"), 1, format!("{root}/{{{root}-c}}/1")),
            (format!("{root}-c"), 2, format!("{root}/{{{root}-c}}/2")),
        ]
    );
    // Each group's order holds within the merged stream.
    let cs: Vec<i64> = seen
        .iter()
        .filter(|s| s.0.ends_with("-c"))
        .map(|s| s.1)
        .collect();
    assert_eq!(cs, vec![1, 2]);
    drop(watch);

    // Resumed from where the batches left it: only what came since, once.
    write_in_groups(&store, &root, &[("c", "3"), ("d", "1"), ("a", "4")]).await;
    let mut resumed = store
        .watch(WatchOptions::prefix(&prefix).from_position(&position))
        .await
        .unwrap();
    let mut again = Vec::new();
    while again.len() < 3 {
        let batch = next_batch(&mut resumed).await;
        let group = String::from_utf8(batch.group.clone().unwrap()).unwrap();
        again.push((group, batch.revision));
    }
    again.sort();
    assert_eq!(
        again,
        vec![
            (format!("{root}-a"), 4),
            (format!("{root}-c"), 3),
            (format!("{root}-d"), 1),
        ]
    );
}

/// A spanning watch from now sees the changes of every group after it opened, a group new
/// since included; through the retry layer too (which finds each group's position by a count
/// of the range, since the store has no one revision).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spanning_watch_from_now_finds_new_groups_through_the_retry_layer() {
    use keyplane_core::layer::RetryLayer;
    use keyplane_core::layer::StoreExt;
    let Some(cluster) = shared_redis_cluster().await else {
        return;
    };
    let store = RedisStore::from_url(&cluster.url()).await.unwrap();
    let root = format!("wnow{}", uuid::Uuid::new_v4().simple());
    let prefix = format!("{root}/");
    write_in_groups(&store, &root, &[("a", "old")]).await;
    let layered = RedisStore::from_url(&cluster.url())
        .await
        .unwrap()
        .layer(RetryLayer::default());
    let mut plain = store.watch(WatchOptions::prefix(&prefix)).await.unwrap();
    let mut retried = layered.watch(WatchOptions::prefix(&prefix)).await.unwrap();
    write_in_groups(&store, &root, &[("a", "new"), ("fresh", "one")]).await;
    for watch in [&mut plain, &mut retried] {
        let mut got = Vec::new();
        while got.len() < 2 {
            let batch = next_batch(watch).await;
            got.push((
                String::from_utf8(batch.group.unwrap()).unwrap(),
                batch.revision,
            ));
        }
        got.sort();
        assert_eq!(
            got,
            vec![(format!("{root}-a"), 2), (format!("{root}-fresh"), 1)]
        );
    }
}

/// A watch or range within one group on the cluster store names its group too, and its
/// position resumes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_within_one_group_names_it() {
    use keyplane_core::WatchPosition;
    let Some(cluster) = shared_redis_cluster().await else {
        return;
    };
    let store = RedisStore::from_url(&cluster.url()).await.unwrap();
    let root = format!("one{}", uuid::Uuid::new_v4().simple());
    write_in_groups(&store, &root, &[("a", "1"), ("a", "2")]).await;
    let prefix = format!("{root}/{{{root}-a}}/");
    let listed = store.range(RangeOptions::prefix(&prefix)).await.unwrap();
    assert_eq!(listed.revision, 2);
    let tag = format!("{root}-a").into_bytes();
    assert_eq!(listed.groups, Some([(tag.clone(), 2)].into()));
    let position = WatchPosition::after_range(&listed);
    write_in_groups(&store, &root, &[("a", "3")]).await;
    let mut watch = store
        .watch(WatchOptions::prefix(&prefix).from_position(&position))
        .await
        .unwrap();
    let batch = next_batch(&mut watch).await;
    assert_eq!((batch.group, batch.revision), (Some(tag), 3));
}

/// What another program writes straight to a cluster (`redis-cli -c SET`, `SADD`): point reads
/// see it at once, and a `get` adopts a string into its group's index, after which ranges
/// list it; a collection is read natively; a key of the store's that it deletes is never
/// listed again, by a range within the group or one spanning groups; deletes remove what it
/// wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_programs_keys_are_read_and_deleted_on_a_cluster() {
    let Some(cluster) = shared_redis_cluster().await else {
        return;
    };
    let store = RedisStore::from_url(&cluster.url()).await.unwrap();
    let run = uuid::Uuid::new_v4().simple().to_string();
    let prefix = format!("raw:{{{run}}}:");
    let (plain, set) = (format!("{prefix}plain"), format!("{prefix}set"));
    let mut raw = redis::cluster::ClusterClient::new(vec![cluster.node_urls()[0].clone()])
        .unwrap()
        .get_async_connection()
        .await
        .unwrap();
    let () = redis::cmd("SET")
        .arg(&plain)
        .arg("from-go")
        .query_async(&mut raw)
        .await
        .unwrap();
    let _: i64 = redis::cmd("SADD")
        .arg(&set)
        .arg("m1")
        .query_async(&mut raw)
        .await
        .unwrap();

    let entry = store.get(plain.as_bytes()).await.unwrap().unwrap();
    assert_eq!(entry.value, b"from-go");
    let page = store.range(RangeOptions::prefix(&prefix)).await.unwrap();
    assert_eq!(page.entries.len(), 1, "adopted by the get: {page:?}");
    let mine = format!("{prefix}mine");
    store
        .put(mine.as_bytes(), b"v", PutOptions::default())
        .await
        .unwrap();
    let _: i64 = redis::cmd("DEL")
        .arg(&mine)
        .query_async(&mut raw)
        .await
        .unwrap();
    let spanning = store
        .range(RangeOptions::prefix(format!("raw:{{{run}")))
        .await
        .unwrap();
    assert_eq!(
        keys_of(&spanning),
        std::slice::from_ref(&plain),
        "spanning groups"
    );
    let counted = store
        .range(RangeOptions::prefix(&prefix).count_only())
        .await
        .unwrap();
    assert_eq!(counted.count, 1, "within the group");
    let members = store
        .collection(keyplane_core::CollectionOp::SetMembers {
            key: set.clone().into_bytes(),
        })
        .await
        .unwrap();
    assert_eq!(
        members,
        keyplane_core::CollectionResult::Members(vec![b"m1".to_vec()])
    );

    assert!(store.delete(plain.as_bytes()).await.unwrap().existed());
    store.delete(set.as_bytes()).await.unwrap();
    let exists: i64 = redis::cmd("EXISTS")
        .arg(&plain)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(exists, 0);
    let exists: i64 = redis::cmd("EXISTS")
        .arg(&set)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(exists, 0);
}

/// A least-privilege ACL user on every node (`RedisConfig::acl_rules` for a cluster: the
/// key patterns, the internal prefix, the store's commands and `CLUSTER SLOTS`) runs the
/// store on the cluster, spanning reads and `WAIT` included; a key outside its patterns is
/// refused with nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_least_privilege_user_runs_the_store_on_a_cluster() {
    use futures::StreamExt;
    let Some(cluster) = shared_redis_cluster().await else {
        return;
    };
    let run = uuid::Uuid::new_v4().simple().to_string();
    let user = format!("app{run}");
    let url = cluster.url();
    let rules = keyplane_redis::RedisConfig::new(url.clone()).acl_rules(&["acl:*"]);
    for node in cluster.node_urls() {
        let mut con = redis::Client::open(node).unwrap().get_connection().unwrap();
        let mut setuser = redis::cmd("ACL");
        setuser.arg("SETUSER").arg(&user).arg("on").arg(">pw");
        for rule in rules.split(' ') {
            setuser.arg(rule);
        }
        let () = setuser.query(&mut con).unwrap();
    }
    let store = RedisStore::open(
        keyplane_redis::RedisConfig::new(url)
            .username(user.clone())
            .password("pw".to_owned())
            .wait_replicas(1)
            .wait_timeout(std::time::Duration::from_millis(2000)),
    )
    .await
    .unwrap();
    let prefix = format!("acl:{run}/");
    let mut watch = store.watch(WatchOptions::prefix(&prefix)).await.unwrap();
    for group in ["a", "b"] {
        let key = format!("{prefix}{{{run}{group}}}/k");
        store
            .put(key.as_bytes(), b"v", PutOptions::default())
            .await
            .unwrap();
    }
    let page = store.range(RangeOptions::prefix(&prefix)).await.unwrap();
    assert_eq!(page.entries.len(), 2);
    for _ in 0..2 {
        let batch = tokio::time::timeout(std::time::Duration::from_secs(20), watch.next())
            .await
            .expect("a batch")
            .expect("the watch goes on")
            .expect("no error");
        assert!(batch.group.is_some());
    }
    let outside = format!("other:{{{run}a}}/k");
    let err = store
        .put(outside.as_bytes(), b"v", PutOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err:?}");
    let group = store.group(format!("{run}a").as_bytes()).unwrap();
    assert_eq!(group.revision().await.unwrap(), 1, "nothing was written");
}
