//! Revisions and entry metadata: one revision per write transaction, etcd's
//! create/mod revision and version rules.

use super::support::{describe_batch, expect_quiet, key, next_batch, put, root};
use keyplane_core::{Compare, OpResult, Store, Txn, TxnOp, WatchOptions};
use std::sync::Arc;

/// Every write transaction bumps the revision once: all its writes share that revision (a read
/// after them in the txn sees them at it), the next write has a greater one, and the store's
/// revision is at least the last one seen.
pub async fn revision_bumps_once_per_write_txn(store: Arc<dyn Store>) {
    let root = root();
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    let before = put(&*store, &key(&root, "first"), "v").await;
    let resp = store
        .txn(Txn::new().and_then([
            TxnOp::put(key(&root, "a"), "1"),
            TxnOp::put(key(&root, "b"), "2"),
            TxnOp::delete(key(&root, "first")),
            TxnOp::get(key(&root, "a")),
        ]))
        .await
        .unwrap();
    assert!(resp.succeeded);
    assert!(resp.revision > before, "a write txn gets a new revision");
    match &resp.results[3] {
        OpResult::Get(Some(a)) => assert_eq!(
            (a.value.as_slice(), a.mod_revision),
            (&b"1"[..], resp.revision),
            "a txn's read sees its own earlier write"
        ),
        other => panic!("the txn's get of its own put: {other:?}"),
    }
    for k in ["a", "b"] {
        let e = store.get(&key(&root, k)).await.unwrap().unwrap();
        assert_eq!(
            e.mod_revision, resp.revision,
            "every write of a txn shares its revision"
        );
        assert_eq!(e.create_revision, resp.revision);
    }
    let after = put(&*store, &key(&root, "c"), "3").await;
    assert!(after > resp.revision);
    assert!(store.revision().await.unwrap() >= after);

    let first = next_batch(&mut watch).await;
    assert_eq!(first.revision, before);
    let second = next_batch(&mut watch).await;
    assert_eq!(
        second.revision, resp.revision,
        "one batch for the whole txn"
    );
    assert_eq!(
        describe_batch(&root, &second),
        ["put a=1", "put b=2", "delete first"]
    );
    let third = next_batch(&mut watch).await;
    assert_eq!(third.revision, after);
}

/// A transaction that writes nothing (only reads, or a delete of a missing key, in a txn or by
/// `delete`) creates no revision: watchers see nothing and later writes still number after
/// earlier ones.
pub async fn read_only_txn_keeps_revision(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    let written = put(&*store, &k, "v").await;
    let mut watch = store
        .watch(WatchOptions::prefix(&root).from_revision(written + 1))
        .await
        .unwrap();
    let read = store
        .txn(Txn::new().and_then([TxnOp::get(&k)]))
        .await
        .unwrap();
    assert!(read.revision >= written);
    assert!(matches!(&read.results[..], [OpResult::Get(Some(e))] if e.mod_revision == written));
    let failed = store
        .txn(
            Txn::new()
                .when([Compare::absent(&k)])
                .and_then([TxnOp::put(&k, "never")])
                .or_else([TxnOp::get(&k)]),
        )
        .await
        .unwrap();
    assert!(!failed.succeeded);
    let noop = store
        .txn(Txn::new().and_then([TxnOp::delete(key(&root, "missing"))]))
        .await
        .unwrap();
    assert!(matches!(
        &noop.results[..],
        [OpResult::Delete { deleted: 0 }]
    ));
    let missing = store.delete(&key(&root, "missing")).await.unwrap();
    assert!(!missing.existed());
    assert!(missing.revision >= written);
    expect_quiet(&*store, &mut watch, &key(&root, "end")).await;
    let e = store.get(&k).await.unwrap().unwrap();
    assert_eq!(
        (e.mod_revision, e.version),
        (written, 1),
        "nothing was written"
    );
}

/// Entry metadata evolves like etcd's: version counts writes since creation, create_revision
/// stays until the key is deleted, mod_revision follows each write; a recreated key starts
/// over.
pub async fn entry_metadata_evolves_like_etcd(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    let r1 = put(&*store, &k, "1").await;
    let r2 = put(&*store, &k, "2").await;
    let r3 = store
        .txn(Txn::new().and_then([TxnOp::put(&k, "3")]))
        .await
        .unwrap()
        .revision;
    assert!(r1 < r2 && r2 < r3);
    let e = store.get(&k).await.unwrap().unwrap();
    assert_eq!(
        (e.create_revision, e.mod_revision, e.version),
        (r1, r3, 3),
        "after three writes"
    );
    // Writing the same value again is still a write.
    let r4 = put(&*store, &k, "3").await;
    let e = store.get(&k).await.unwrap().unwrap();
    assert_eq!((e.create_revision, e.mod_revision, e.version), (r1, r4, 4));
    store.delete(&k).await.unwrap();
    let r6 = put(&*store, &k, "again").await;
    assert!(r6 > r4 + 1, "the delete had its own revision");
    let e = store.get(&k).await.unwrap().unwrap();
    assert_eq!((e.create_revision, e.mod_revision, e.version), (r6, r6, 1));
}
