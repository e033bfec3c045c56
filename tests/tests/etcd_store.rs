//! EtcdStore behaviour beyond the conformance suite, on a harness-started etcd: namespaces,
//! the bulk loader, packed and guarded transactions, watch batching, and the op limit.

use futures::StreamExt;
use keyplane_core::{
    CollectionOp, CollectionResult, ErrorKind, OpResult, PutOptions, RangeOptions, Store, Txn,
    TxnOp, WatchOptions,
};
use keyplane_etcd::{EtcdConfig, EtcdStore};
use keyplane_tests::harness::{key_root, shared_etcd};

async fn connect(config: EtcdConfig) -> EtcdStore {
    EtcdStore::open(config).await.expect("connect to etcd")
}

/// A store on the shared server with no namespace, and its endpoint.
async fn root_store() -> Option<(EtcdStore, String)> {
    let server = shared_etcd().await?;
    let endpoint = server.endpoint();
    Some((connect(EtcdConfig::new([endpoint.clone()])).await, endpoint))
}

#[tokio::test]
async fn namespaced_store_stays_inside_its_root() {
    let Some((root, endpoint)) = root_store().await else {
        return;
    };
    let base = key_root("ns");
    let inside = format!("{base}a/");
    let ns = connect(EtcdConfig::new([endpoint]).namespace(inside.clone())).await;

    // Keys around the root, written without a namespace.
    for (k, v) in [
        (format!("{base}b/k"), "outside"),
        (format!("{base}a"), "sibling"),
        (format!("{base}a0/k"), "neighbour"),
        (format!("{inside}k"), "inside"),
    ] {
        root.put(k.as_bytes(), v.as_bytes(), PutOptions::default())
            .await
            .unwrap();
    }

    // Reading: the namespaced store sees exactly its root, stripped of it.
    let all = ns.range(RangeOptions::prefix("")).await.unwrap();
    let keys: Vec<&[u8]> = all.entries.iter().map(|e| e.key.as_slice()).collect();
    assert_eq!(keys, [&b"k"[..]]);
    assert_eq!(ns.get(b"k").await.unwrap().unwrap().value, b"inside");
    assert!(ns.get(b"../b/k").await.unwrap().is_none());

    // Writing: puts, deletes and prefix deletes land inside the root only.
    ns.put(b"new", b"1", PutOptions::default()).await.unwrap();
    let got = root.get(format!("{inside}new").as_bytes()).await.unwrap();
    assert_eq!(got.unwrap().value, b"1");
    assert!(root.get(b"new").await.unwrap().is_none());
    assert_eq!(ns.delete_prefix(b"k").await.unwrap().deleted, 1);
    for k in [
        format!("{base}b/k"),
        format!("{base}a"),
        format!("{base}a0/k"),
    ] {
        assert!(root.get(k.as_bytes()).await.unwrap().is_some(), "{k}");
    }

    // Compares are confined too: the outside key is not what `../b/k` names.
    let txn = Txn::new()
        .when([keyplane_core::Compare::exists("../b/k")])
        .and_then([TxnOp::put("won", "1")]);
    assert!(!ns.txn(txn).await.unwrap().succeeded);

    // Collections live under the root's reserved layout and vanish with its prefix.
    ns.collection(CollectionOp::SetAdd {
        key: b"set".to_vec(),
        member: b"m".to_vec(),
    })
    .await
    .unwrap();
    let members = root
        .collection(CollectionOp::SetMembers {
            key: format!("{inside}set").into_bytes(),
        })
        .await
        .unwrap();
    assert_eq!(members, CollectionResult::Members(Vec::new()));

    // Watches see only the root.
    let mut watch = ns.watch(WatchOptions::prefix("")).await.unwrap();
    root.put(format!("{base}b/k").as_bytes(), b"2", PutOptions::default())
        .await
        .unwrap();
    root.put(format!("{inside}w").as_bytes(), b"3", PutOptions::default())
        .await
        .unwrap();
    let batch = watch.next().await.unwrap().unwrap();
    assert_eq!(batch.events.len(), 1);
    assert_eq!(batch.events[0].key(), b"w");
}

#[tokio::test]
async fn many_deletes_are_packed_into_one_atomic_txn() {
    let Some((store, _)) = root_store().await else {
        return;
    };
    let root = key_root("pack");
    // 128 deletes expand to 512 physical ops (the key and its set, map and list), more than
    // etcd takes per level: they are packed into nested transactions.
    let mut load = Vec::new();
    for i in 0..128 {
        load.push(TxnOp::put(format!("{root}{i:03}"), "v"));
    }
    store.txn(Txn::new().and_then(load)).await.unwrap();
    store
        .collection(CollectionOp::SetAdd {
            key: format!("{root}005").into_bytes(),
            member: b"m".to_vec(),
        })
        .await
        .unwrap();
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    let deletes: Vec<TxnOp> = (0..128)
        .map(|i| TxnOp::delete(format!("{root}{i:03}")))
        .collect();
    let resp = store.txn(Txn::new().and_then(deletes)).await.unwrap();
    assert!(resp.succeeded);
    // One revision for the whole transaction.
    let batch = watch.next().await.unwrap().unwrap();
    assert_eq!(batch.revision, resp.revision);
    assert_eq!(batch.events.len(), 128);
    assert_eq!(resp.results[5], OpResult::Delete { deleted: 2 });
    assert_eq!(resp.results[6], OpResult::Delete { deleted: 1 });
    let left = store
        .range(RangeOptions::prefix(&root).count_only())
        .await
        .unwrap();
    assert_eq!(left.count, 0);
}

#[tokio::test]
async fn concurrent_collection_writers_all_land() {
    let Some((store, _)) = root_store().await else {
        return;
    };
    let root = key_root("race");
    let key = format!("{root}set").into_bytes();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let (store, key) = (store.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            for j in 0..5 {
                // Reads the whole set and adds to it in one txn: every writer conflicts with
                // every other, so the guarded retries are exercised.
                let resp = store
                    .txn(Txn::new().and_then([
                        TxnOp::Collection(CollectionOp::SetMembers { key: key.clone() }),
                        TxnOp::Collection(CollectionOp::SetAdd {
                            key: key.clone(),
                            member: format!("{i}-{j}").into_bytes(),
                        }),
                    ]))
                    .await
                    .unwrap();
                let OpResult::Collection(CollectionResult::Members(before)) = &resp.results[0]
                else {
                    panic!("{resp:?}");
                };
                assert!(!before.contains(&format!("{i}-{j}").into_bytes()));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let all = store
        .collection(CollectionOp::SetMembers { key })
        .await
        .unwrap();
    let CollectionResult::Members(all) = all else {
        panic!("{all:?}")
    };
    assert_eq!(all.len(), 40);
}

#[tokio::test]
async fn a_large_txn_is_one_watch_batch() {
    let Some((store, _)) = root_store().await else {
        return;
    };
    let root = key_root("batch");
    let mut watch = store
        .watch(WatchOptions::prefix(&root).with_prev())
        .await
        .unwrap();
    let ops: Vec<TxnOp> = (0..100)
        .map(|i| TxnOp::put(format!("{root}{i:03}"), "v"))
        .collect();
    let first = store.txn(Txn::new().and_then(ops)).await.unwrap();
    let second = store
        .txn(Txn::new().and_then([TxnOp::delete_prefix(&root)]))
        .await
        .unwrap();
    assert_eq!(second.results, [OpResult::Delete { deleted: 100 }]);
    let batch = watch.next().await.unwrap().unwrap();
    assert_eq!(batch.revision, first.revision);
    assert_eq!(batch.events.len(), 100);
    let batch = watch.next().await.unwrap().unwrap();
    assert_eq!(batch.revision, second.revision);
    assert_eq!(batch.events.len(), 100);
    assert!(matches!(
        &batch.events[0],
        keyplane_core::Event::Delete { prev: Some(p), .. } if p.value == b"v"
    ));
}

#[tokio::test]
async fn txn_over_the_configured_limit_fails_before_it_is_sent() {
    let Some((_, endpoint)) = root_store().await else {
        return;
    };
    let mut config = EtcdConfig::new([endpoint]);
    config.max_txn_ops = 4;
    let store = connect(config).await;
    let root = key_root("limit");
    let ops = |n: usize| -> Vec<TxnOp> {
        (0..n)
            .map(|i| TxnOp::put(format!("{root}{i}"), "v"))
            .collect()
    };
    let err = store.txn(Txn::new().and_then(ops(5))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TxnTooLarge);
    assert!(
        store
            .get(format!("{root}0").as_bytes())
            .await
            .unwrap()
            .is_none()
    );
    store.txn(Txn::new().and_then(ops(4))).await.unwrap();
}

#[tokio::test]
async fn url_form_connects_with_a_namespace() {
    let Some((root, endpoint)) = root_store().await else {
        return;
    };
    let base = key_root("url");
    let host = endpoint.trim_start_matches("http://");
    let url = format!("etcd://{host}?namespace={base}&request_timeout=5s");
    let store = EtcdStore::from_url(&url).await.unwrap();
    store.put(b"k", b"v", PutOptions::default()).await.unwrap();
    let got = root.get(format!("{base}k").as_bytes()).await.unwrap();
    assert_eq!(got.unwrap().value, b"v");
    let bad = EtcdStore::from_url("etcd://nohostport").await.unwrap_err();
    assert_eq!(bad.kind(), ErrorKind::Config);
}

#[tokio::test]
async fn one_revision_larger_than_a_default_message_is_one_batch() {
    let Some((store, _)) = root_store().await else {
        return;
    };
    let root = key_root("big");
    let value = vec![b'x'; 60_000];
    for chunk in 0..5 {
        let ops = (0..20).map(|i| TxnOp::put(format!("{root}{chunk}-{i:02}"), &value));
        store.txn(Txn::new().and_then(ops)).await.unwrap();
    }
    let mut watch = store
        .watch(WatchOptions::prefix(&root).with_prev())
        .await
        .unwrap();
    // 100 deletes with 60 kB previous values: about 6 MB of events in one revision, more than
    // gRPC's default 4 MiB message limit.
    assert_eq!(
        store.delete_prefix(root.as_bytes()).await.unwrap().deleted,
        100
    );
    let batch = watch.next().await.unwrap().unwrap();
    assert_eq!(batch.events.len(), 100);
    assert!(batch.events.iter().all(|e| matches!(
        e,
        keyplane_core::Event::Delete { prev: Some(p), .. } if p.value.len() == 60_000
    )));
}
