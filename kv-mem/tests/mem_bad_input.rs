//! MemStore bad input: its configured limits and exact compaction revisions give typed errors
//! and leave the store unchanged.

use keyplane_contract::{
    CollectionOp, Entry, ErrorKind, PutOptions, RangeOptions, Result, Store, Txn, TxnOp,
    WatchOptions,
};
use keyplane_mem::{MemConfig, MemStore};

/// The revision, every plain entry, and a collection: what must not change.
async fn snapshot(store: &MemStore) -> (i64, Vec<Entry>, keyplane_contract::CollectionResult) {
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
    let store = MemStore::open(MemConfig::default().max_txn_ops(4).max_value_bytes(16))
        .await
        .unwrap();
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

/// The limits set in `MemConfig` (`max_value_bytes`, `max_txn_ops`) are enforced as typed
/// errors that change neither the revision nor any entry.
#[tokio::test]
async fn configured_limits_are_typed_errors_and_change_nothing() {
    let store = seeded().await;
    assert_eq!(store.capabilities().max_value_bytes, 16);
    assert_eq!(store.capabilities().max_txn_ops, 4);
    expect_unchanged(&store, ErrorKind::InvalidValue, async |s| {
        s.put(b"big", &[7u8; 17], PutOptions::default()).await
    })
    .await;
    expect_unchanged(&store, ErrorKind::TxnTooLarge, async |s| {
        let ops = (0..5).map(|i| TxnOp::put(format!("k{i}"), "v"));
        s.txn(Txn::new().and_then(ops)).await
    })
    .await;
}

/// A watch from before the compaction fails from `watch()` itself, naming exactly the
/// compacted revision.
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
}
