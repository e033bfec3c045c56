//! MemStore bad input: each gets its typed error and leaves the store unchanged.

use kv_core::{
    CollectionOp, Entry, ErrorKind, PutOptions, RangeOptions, Result, Store, Txn, TxnOp,
    WatchOptions,
};
use kv_mem::{MemConfig, MemStore};
use std::time::Duration;

/// The revision, every plain entry, and a collection: what must not change.
async fn snapshot(store: &MemStore) -> (i64, Vec<Entry>, kv_core::CollectionResult) {
    let revision = store.revision().await.unwrap();
    let entries = store.range(RangeOptions::prefix("")).await.unwrap().entries;
    let list = store
        .collection(CollectionOp::ListRange {
            key: b"list".to_vec(),
            start: 0,
            stop: -1,
        })
        .await
        .unwrap();
    (revision, entries, list)
}

async fn seeded() -> MemStore {
    let store = MemStore::with_config(MemConfig {
        max_txn_ops: 4,
        max_value_bytes: 16,
        ..MemConfig::default()
    });
    store.put(b"a", b"1", PutOptions::default()).await.unwrap();
    store
        .put(b"b/1", b"2", PutOptions::default())
        .await
        .unwrap();
    store
        .collection(CollectionOp::ListPush {
            key: b"list".to_vec(),
            value: b"x".to_vec(),
        })
        .await
        .unwrap();
    store
}

async fn expect_unchanged<T>(
    store: &MemStore,
    kind: ErrorKind,
    attempt: impl AsyncFnOnce(&MemStore) -> Result<T>,
) {
    let before = snapshot(store).await;
    let Err(err) = attempt(store).await else {
        panic!("bad input must fail");
    };
    assert_eq!(err.kind(), kind, "{err}");
    assert_eq!(snapshot(store).await, before);
}

#[tokio::test(start_paused = true)]
async fn every_bad_input_is_a_typed_error_and_changes_nothing() {
    let store = seeded().await;
    let none = PutOptions::default();
    expect_unchanged(&store, ErrorKind::InvalidKey, async |s| s.get(b"").await).await;
    expect_unchanged(&store, ErrorKind::InvalidKey, async |s| {
        s.put(b"", b"v", none).await
    })
    .await;
    expect_unchanged(&store, ErrorKind::InvalidKey, async |s| {
        s.put(b"a\0b", b"v", none).await
    })
    .await;
    expect_unchanged(&store, ErrorKind::InvalidKey, async |s| s.delete(b"").await).await;
    expect_unchanged(&store, ErrorKind::InvalidKey, async |s| {
        s.delete_prefix(b"").await
    })
    .await;
    expect_unchanged(&store, ErrorKind::InvalidValue, async |s| {
        s.put(b"big", &[7u8; 17], none).await
    })
    .await;
    expect_unchanged(&store, ErrorKind::TxnConflict, async |s| {
        s.txn(Txn::new().and_then([TxnOp::put("a", "1"), TxnOp::delete("a")]))
            .await
    })
    .await;
    expect_unchanged(&store, ErrorKind::TxnConflict, async |s| {
        s.txn(Txn::new().and_then([TxnOp::delete_prefix("b/"), TxnOp::put("b/2", "v")]))
            .await
    })
    .await;
    expect_unchanged(&store, ErrorKind::TxnTooLarge, async |s| {
        let ops = (0..5).map(|i| TxnOp::put(format!("k{i}"), "v"));
        s.txn(Txn::new().and_then(ops)).await
    })
    .await;
    expect_unchanged(&store, ErrorKind::InvalidArgument, async |s| {
        s.range(RangeOptions::prefix("a").limit(0)).await
    })
    .await;
    expect_unchanged(&store, ErrorKind::InvalidArgument, async |s| {
        s.lease_grant(Duration::ZERO).await
    })
    .await;
    expect_unchanged(&store, ErrorKind::InvalidArgument, async |s| {
        s.compact(1_000).await
    })
    .await;
    expect_unchanged(&store, ErrorKind::InvalidArgument, async |s| {
        s.collection(CollectionOp::SetScan {
            key: b"set".to_vec(),
            after: None,
            limit: 0,
        })
        .await
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn keep_alive_of_a_revoked_lease_is_lease_not_found() {
    let store = seeded().await;
    let lease = store.lease_grant(Duration::from_secs(10)).await.unwrap();
    store.lease_revoke(lease.id).await.unwrap();
    expect_unchanged(&store, ErrorKind::LeaseNotFound, async |s| {
        s.lease_keep_alive(lease.id).await
    })
    .await;
}

#[tokio::test]
async fn a_watch_from_a_compacted_revision_is_compacted() {
    let store = seeded().await;
    let current = store.revision().await.unwrap();
    store.compact(current).await.unwrap();
    expect_unchanged(
        &store,
        ErrorKind::Compacted {
            compact_revision: current,
        },
        async |s| {
            s.watch(WatchOptions::key("a").from_revision(current - 1))
                .await
        },
    )
    .await;
    // Compacting below the compacted revision again is itself a Compacted error.
    expect_unchanged(
        &store,
        ErrorKind::Compacted {
            compact_revision: current,
        },
        async |s| s.compact(current - 1).await,
    )
    .await;
}
