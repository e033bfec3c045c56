//! EtcdStore under faults, with servers of its own: members killed during writes and during a
//! watch, compaction past a watcher, and the op limit checked before anything is sent.

use futures::StreamExt;
use keyplane_core::keyspace::{Bytes, Key, Prefix, TypedStore};
use keyplane_core::{ErrorKind, Event, PutOptions, RangeOptions, Store, Txn, TxnOp, WatchOptions};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_tests::harness::{EtcdCluster, EtcdServer, key_root};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::task::block_in_place;

/// A store on `endpoints` that keeps retrying through a member's restart.
async fn patient_store(endpoints: Vec<String>) -> EtcdStore {
    let mut config = EtcdConfig::new(endpoints);
    config.request_timeout = std::time::Duration::from_millis(5_000);
    config.retries = 40;
    EtcdStore::open(config).await.expect("connect to etcd")
}

/// The index of the current leader among the cluster's endpoints.
async fn leader_index(endpoints: &[String]) -> usize {
    for (i, endpoint) in endpoints.iter().enumerate() {
        let Ok(mut client) = etcd_client::Client::connect([endpoint], None).await else {
            continue;
        };
        if let Ok(status) = client.status().await
            && status.header().map(|h| h.member_id()) == Some(status.leader())
        {
            return i;
        }
    }
    panic!("no etcd member reports itself as leader");
}

/// Runs an idempotent operation until the cluster acknowledges it, retrying transient failures
/// (a leader election) a bounded number of times.
async fn settle<T, F, Fut>(mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = keyplane_core::Result<T>>,
{
    let mut last = None;
    for _ in 0..10 {
        match op().await {
            Ok(v) => return v,
            Err(e) if e.is_retryable() => last = Some(e),
            Err(e) => panic!("{e}"),
        }
    }
    panic!("the cluster did not recover: {last:?}");
}

/// Every key and value under `prefix`, read page by page.
async fn state(store: &dyn Store, prefix: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut opts = RangeOptions::prefix(prefix).limit(500);
    loop {
        let page = store.range(opts.clone()).await.unwrap();
        out.extend(page.entries.into_iter().map(|e| (e.key, e.value)));
        match page.next {
            Some(next) => opts = opts.after(next),
            None => return out,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_killing_the_leader() {
    let Some(mut cluster) = block_in_place(|| EtcdCluster::start(3)) else {
        return;
    };
    let store = patient_store(cluster.endpoints()).await;
    let root = key_root("kill");
    let mut acked: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut acked_after_kill = 0;
    let mut failed = 0;
    let mut i = 0;
    // Write until 100 writes are acknowledged after the leader dies (bounded).
    while acked_after_kill < 100 {
        assert!(
            i < 5_000,
            "writes did not resume after the kill ({failed} failures)"
        );
        if i == 100 {
            let leader = leader_index(&cluster.endpoints()).await;
            block_in_place(|| cluster.kill(leader));
        }
        let key = format!("{root}{i:05}").into_bytes();
        let value = format!("v{i}").into_bytes();
        match store.put(&key, &value, PutOptions::default()).await {
            Ok(_) => {
                if i >= 100 {
                    acked_after_kill += 1;
                }
                acked.insert(key, value);
            }
            Err(e) => {
                // An unacknowledged write may or may not have been applied: only transient
                // failures are acceptable.
                assert!(
                    matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Timeout),
                    "{e}"
                );
                failed += 1;
            }
        }
        i += 1;
    }
    let stored = state(&store, &root).await;
    for (key, value) in &acked {
        assert_eq!(
            stored.get(key),
            Some(value),
            "{}",
            String::from_utf8_lossy(key)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_survives_each_member_being_killed_and_restarted() {
    let Some(mut cluster) = block_in_place(|| EtcdCluster::start(3)) else {
        return;
    };
    let watcher = patient_store(cluster.endpoints()).await;
    let writer = patient_store(cluster.endpoints()).await;
    let root = key_root("wkill");
    let done = format!("{root}zz-done");
    let mut watch = watcher
        .watch(WatchOptions::prefix(&root).with_prev())
        .await
        .unwrap();
    let collector = tokio::spawn(async move {
        let mut batches = Vec::new();
        while let Some(item) = watch.next().await {
            let batch = item.expect("the watch ends only after retries are exhausted");
            let finished = batch.events.iter().any(|e| e.key() == done.as_bytes());
            batches.push(batch);
            if finished {
                return batches;
            }
        }
        panic!("the watch ended without an error");
    });

    let mut acked_revisions = Vec::new();
    let mut n = 0;
    let mut write_some = async |count: usize, acked: &mut Vec<i64>| {
        for _ in 0..count {
            let key = format!("{root}{n:05}");
            n += 1;
            if let Ok(r) = writer
                .put(key.as_bytes(), b"v", PutOptions::default())
                .await
            {
                acked.push(r.revision);
            }
        }
    };
    // Every member is killed once, so the one serving the watch certainly is.
    for member in 0..3 {
        write_some(20, &mut acked_revisions).await;
        block_in_place(|| cluster.kill(member));
        write_some(20, &mut acked_revisions).await;
        block_in_place(|| cluster.restart(member));
    }
    let last = writer
        .put(
            format!("{root}zz-done").as_bytes(),
            b"",
            PutOptions::default(),
        )
        .await
        .unwrap();
    acked_revisions.push(last.revision);

    let batches = collector.await.unwrap();
    let revisions: Vec<i64> = batches.iter().map(|b| b.revision).collect();
    assert!(
        revisions.windows(2).all(|w| w[0] < w[1]),
        "out of order or repeated: {revisions:?}"
    );
    for r in &acked_revisions {
        assert!(revisions.contains(r), "acknowledged revision {r} missing");
    }
    // Replaying the watch gives the store's state.
    let mut replay = BTreeMap::new();
    for batch in &batches {
        for event in &batch.events {
            match event {
                Event::Put { entry, .. } => {
                    replay.insert(entry.key.clone(), entry.value.clone());
                }
                Event::Delete { key, .. } => {
                    replay.remove(key);
                }
                Event::Collection(_) => unreachable!("the watch does not ask for collections"),
            }
        }
    }
    assert_eq!(replay, state(&writer, &root).await);
}

keyplane_core::text_segment!(
    FaultRoot,
    charset = "[a-z0-9-]",
    max_len = 63,
    policy = Reject
);
keyplane_core::text_segment!(Digits, charset = "[0-9]", max_len = 4, policy = Reject);

/// `{root}/{nn}`: the keys the compaction case writes.
#[derive(Key, Debug, Clone, PartialEq)]
#[kv(template = "{root}/{id}", value = Bytes)]
struct FaultKey {
    root: FaultRoot,
    id: Digits,
}

#[derive(Prefix, Debug, Clone, PartialEq)]
#[kv(template = "{root}/", key = FaultKey)]
struct FaultDir {
    root: FaultRoot,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_past_a_watcher_is_reported_and_the_mirror_recovers() {
    let Some(mut cluster) = block_in_place(|| EtcdCluster::start(3)) else {
        return;
    };
    let endpoints = cluster.endpoints();
    // The observer talks to member 0 only; the writer to the two others.
    let observer: Arc<dyn Store> = Arc::new(patient_store(vec![endpoints[0].clone()]).await);
    let writer = patient_store(endpoints[1..].to_vec()).await;
    let root = key_root("compact");
    for i in 0..10 {
        let key = format!("{root}{i:02}");
        writer
            .put(key.as_bytes(), b"1", PutOptions::default())
            .await
            .unwrap();
    }
    let dir = FaultDir {
        root: FaultRoot::new(root.trim_end_matches('/')).unwrap(),
    };
    let mirror = TypedStore::new(observer.clone())
        .mirror(&dir)
        .unwrap()
        .start()
        .await
        .unwrap();
    let mut watch = observer.watch(WatchOptions::prefix(&root)).await.unwrap();
    let before = writer.revision().await.unwrap();
    mirror.wait_for(before).await.unwrap();

    // While member 0 is down, the others move on and compact past the watchers' position.
    block_in_place(|| cluster.kill(0));
    // Member 0 may have been the leader: these idempotent writes are retried through the
    // election.
    for i in 5..15 {
        let key = format!("{root}{i:02}");
        settle(|| writer.put(key.as_bytes(), b"2", PutOptions::default())).await;
    }
    let deletes = Txn::new().and_then([
        TxnOp::delete(format!("{root}00")),
        TxnOp::delete(format!("{root}01")),
    ]);
    settle(|| writer.txn(deletes.clone())).await;
    let compacted = settle(|| writer.revision()).await;
    settle(|| async {
        match writer.compact(compacted).await {
            // A retry after an applied but unacknowledged compaction.
            Err(e) if e.compact_revision() == Some(compacted) => Ok(()),
            other => other,
        }
    })
    .await;
    block_in_place(|| cluster.restart(0));
    // A linearizable read through member 0 returns only once it has applied everything
    // committed before it, the compaction included.
    assert!(observer.revision().await.unwrap() >= compacted);

    let err = watch
        .next()
        .await
        .expect("an error item, not the end")
        .expect_err("history before the compaction is gone");
    assert_eq!(err.compact_revision(), Some(compacted), "{err}");
    assert!(watch.next().await.is_none(), "Compacted is the last item");

    let view = mirror.wait_for(compacted).await.unwrap();
    assert!(mirror.health().relists >= 1, "{:?}", mirror.health());
    let mirrored: BTreeMap<Vec<u8>, Vec<u8>> = view
        .iter()
        .map(|(k, v)| (k.encode().into_bytes(), v.value.clone()))
        .collect();
    assert_eq!(mirrored, state(&writer, &root).await);
    assert_eq!(mirrored.len(), 13);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn txn_over_the_limit_fails_before_it_is_sent() {
    let Some(mut server) = block_in_place(EtcdServer::start) else {
        return;
    };
    let mut config = EtcdConfig::new([server.endpoint()]);
    config.retries = 0;
    config.request_timeout = std::time::Duration::from_millis(2_000);
    let store = EtcdStore::open(config).await.unwrap();
    let root = key_root("limit");
    let ops = |n: usize| -> Vec<TxnOp> {
        (0..n)
            .map(|i| TxnOp::put(format!("{root}{i}"), "v"))
            .collect()
    };
    block_in_place(|| server.kill());
    // With the server gone, only a request that is never sent can fail with TxnTooLarge.
    let err = store.txn(Txn::new().and_then(ops(129))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TxnTooLarge, "{err}");
    let err = store.txn(Txn::new().and_then(ops(128))).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable | ErrorKind::Timeout),
        "a txn at the limit is sent: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_and_password_authentication() {
    let Some(server) = block_in_place(EtcdServer::start) else {
        return;
    };
    let mut admin = etcd_client::Client::connect([server.endpoint()], None)
        .await
        .unwrap();
    admin.role_add("root").await.unwrap();
    admin.user_add("root", "s3cret", None).await.unwrap();
    admin.user_grant_role("root", "root").await.unwrap();
    admin.auth_enable().await.unwrap();

    let store = EtcdStore::open(EtcdConfig::new([server.endpoint()]).auth("root", "s3cret"))
        .await
        .unwrap();
    store
        .put(b"authed", b"1", PutOptions::default())
        .await
        .unwrap();
    assert_eq!(store.get(b"authed").await.unwrap().unwrap().value, b"1");

    let err = EtcdStore::open(EtcdConfig::new([server.endpoint()]).auth("root", "wrong"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
    let anonymous = EtcdStore::open(EtcdConfig::new([server.endpoint()])).await;
    let err = anonymous.map(|_| ()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthorized, "{err}");
}
