//! Bad input: each gets its typed error and leaves the store unchanged.

use super::support::{EVENT_TIMEOUT, expect_kind, key, next_batch, put, root, snapshot};
use futures::StreamExt;
use keyplane_core::{
    CollectionOp, Compare, Entry, Error, ErrorKind, LeaseId, PutOptions, Store, Txn, TxnOp,
    WatchOptions,
};
use std::sync::Arc;
use std::time::Duration;

/// A root with a few keys, and its snapshot, to check that a rejected call changed nothing.
async fn seeded(store: &dyn Store) -> (Vec<u8>, Vec<Entry>) {
    let root = root();
    for k in ["a", "a/1", "a/2", "b"] {
        put(store, &key(&root, k), k).await;
    }
    let before = snapshot(store, &root).await;
    (root, before)
}

async fn assert_unchanged(store: &dyn Store, root: &[u8], before: &[Entry]) {
    assert_eq!(
        snapshot(store, root).await,
        before,
        "a rejected call changed the store"
    );
}

/// The empty key is `InvalidKey` for every operation that takes a key.
pub async fn empty_key_is_rejected(store: Arc<dyn Store>) {
    let (root, before) = seeded(&*store).await;
    expect_kind(store.get(b"").await, ErrorKind::InvalidKey);
    expect_kind(
        store.put(b"", b"v", PutOptions::default()).await,
        ErrorKind::InvalidKey,
    );
    expect_kind(store.delete(b"").await, ErrorKind::InvalidKey);
    expect_kind(
        store
            .txn(Txn::new().and_then([TxnOp::put(key(&root, "c"), "v"), TxnOp::put("", "v")]))
            .await,
        ErrorKind::InvalidKey,
    );
    expect_kind(
        store
            .txn(
                Txn::new()
                    .when([Compare::exists("")])
                    .and_then([TxnOp::put(key(&root, "c"), "v")]),
            )
            .await,
        ErrorKind::InvalidKey,
    );
    expect_kind(
        store
            .collection(CollectionOp::SetAdd {
                key: Vec::new(),
                member: b"m".to_vec(),
            })
            .await,
        ErrorKind::InvalidKey,
    );
    let watch = watch_error(&*store, WatchOptions::key("")).await;
    assert_eq!(watch.kind(), ErrorKind::InvalidKey, "{watch}");
    assert_unchanged(&*store, &root, &before).await;
}

/// A key containing a NUL byte (reserved for the backends' own layout) is `InvalidKey` for
/// `put` and `delete`, and nothing is written.
pub async fn nul_key_is_rejected(store: Arc<dyn Store>) {
    let (root, before) = seeded(&*store).await;
    let nul = key(&root, b"a\0b");
    expect_kind(
        store.put(&nul, b"v", PutOptions::default()).await,
        ErrorKind::InvalidKey,
    );
    expect_kind(store.delete(&nul).await, ErrorKind::InvalidKey);
    assert_unchanged(&*store, &root, &before).await;
}

/// `delete_prefix` of the empty prefix is `InvalidKey`, directly and inside a txn.
pub async fn empty_prefix_delete_is_rejected(store: Arc<dyn Store>) {
    let (root, before) = seeded(&*store).await;
    expect_kind(store.delete_prefix(b"").await, ErrorKind::InvalidKey);
    expect_kind(
        store
            .txn(Txn::new().and_then([TxnOp::put(key(&root, "c"), "v"), TxnOp::delete_prefix("")]))
            .await,
        ErrorKind::InvalidKey,
    );
    assert_unchanged(&*store, &root, &before).await;
}

/// A branch that writes one key twice (put/put, put/delete, one set member twice) is
/// `TxnConflict`, whichever branch it is in.
pub async fn txn_writing_a_key_twice_is_rejected(store: Arc<dyn Store>) {
    let (root, before) = seeded(&*store).await;
    let k = key(&root, "a");
    let twice = [
        vec![TxnOp::put(&k, "1"), TxnOp::put(&k, "2")],
        vec![TxnOp::put(&k, "1"), TxnOp::delete(&k)],
        vec![TxnOp::delete(&k), TxnOp::delete(&k)],
        vec![
            TxnOp::Collection(CollectionOp::SetAdd {
                key: k.clone(),
                member: b"m".to_vec(),
            }),
            TxnOp::Collection(CollectionOp::SetRemove {
                key: k.clone(),
                member: b"m".to_vec(),
            }),
        ],
    ];
    for ops in twice {
        expect_kind(
            store.txn(Txn::new().and_then(ops.clone())).await,
            ErrorKind::TxnConflict,
        );
        let in_failure = Txn::new().when([Compare::absent(&k)]).or_else(ops);
        expect_kind(store.txn(in_failure).await, ErrorKind::TxnConflict);
    }
    assert_unchanged(&*store, &root, &before).await;
}

/// A put or delete inside a prefix the same branch deletes is `TxnConflict`, in either order.
pub async fn txn_put_inside_deleted_prefix_is_rejected(store: Arc<dyn Store>) {
    let (root, before) = seeded(&*store).await;
    let dir = key(&root, "a/");
    let inside = key(&root, "a/3");
    let cases = [
        vec![TxnOp::delete_prefix(&dir), TxnOp::put(&inside, "v")],
        vec![TxnOp::put(&inside, "v"), TxnOp::delete_prefix(&dir)],
        vec![TxnOp::delete_prefix(&dir), TxnOp::delete(key(&root, "a/1"))],
        vec![TxnOp::delete_prefix(&root), TxnOp::delete_prefix(&dir)],
    ];
    for ops in cases {
        expect_kind(
            store.txn(Txn::new().and_then(ops)).await,
            ErrorKind::TxnConflict,
        );
    }
    assert_unchanged(&*store, &root, &before).await;
    // A put beside the prefix is fine.
    let ok = Txn::new().and_then([
        TxnOp::delete_prefix(&dir),
        TxnOp::put(key(&root, "a"), "new"),
    ]);
    assert!(store.txn(ok).await.unwrap().succeeded);
}

/// More compares or ops per branch than `capabilities().max_txn_ops` is `TxnTooLarge`; exactly
/// the limit is accepted.
pub async fn txn_over_the_op_limit_is_rejected(store: Arc<dyn Store>) {
    let (root, before) = seeded(&*store).await;
    let max = store.capabilities().max_txn_ops;
    assert!(max >= 1, "a transaction takes at least one op");
    // Building a transaction over a limit this large would only measure memory.
    assert!(max <= 1 << 20, "max_txn_ops {max} is not a real limit");
    let puts = |n: usize| {
        (0..n)
            .map(|i| TxnOp::put(key(&root, format!("n/{i}")), "v"))
            .collect::<Vec<_>>()
    };
    expect_kind(
        store.txn(Txn::new().and_then(puts(max + 1))).await,
        ErrorKind::TxnTooLarge,
    );
    expect_kind(
        store
            .txn(
                Txn::new()
                    .when([Compare::exists(key(&root, "x"))])
                    .or_else(puts(max + 1)),
            )
            .await,
        ErrorKind::TxnTooLarge,
    );
    let compares = (0..=max).map(|i| Compare::absent(key(&root, format!("n/{i}"))));
    expect_kind(
        store
            .txn(
                Txn::new()
                    .when(compares)
                    .and_then([TxnOp::put(key(&root, "c"), "v")]),
            )
            .await,
        ErrorKind::TxnTooLarge,
    );
    assert_unchanged(&*store, &root, &before).await;
    let resp = store.txn(Txn::new().and_then(puts(max))).await.unwrap();
    assert_eq!(resp.results.len(), max);
    assert_eq!(snapshot(&*store, &key(&root, "n/")).await.len(), max);
}

/// A lease TTL of zero is `InvalidArgument`.
pub async fn zero_lease_ttl_is_rejected(store: Arc<dyn Store>) {
    let (root, before) = seeded(&*store).await;
    expect_kind(
        store.lease_grant(Duration::ZERO).await,
        ErrorKind::InvalidArgument,
    );
    assert_unchanged(&*store, &root, &before).await;
}

/// The error of a watch that must fail at once: from `watch` itself or as its first item.
pub(crate) async fn watch_error(store: &dyn Store, opts: WatchOptions) -> Error {
    match store.watch(opts).await {
        Err(e) => e,
        Ok(mut stream) => match tokio::time::timeout(EVENT_TIMEOUT, stream.next()).await {
            Ok(Some(Err(e))) => {
                assert!(
                    tokio::time::timeout(EVENT_TIMEOUT, stream.next())
                        .await
                        .expect("stream ends")
                        .is_none(),
                    "an error is the last item of a watch"
                );
                e
            }
            other => panic!("expected a watch error, got {other:?}"),
        },
    }
}

/// A watch from a compacted revision is `Compacted { compact_revision }`.
pub async fn watch_from_compacted_revision_is_rejected(store: Arc<dyn Store>) {
    let (root, before) = seeded(&*store).await;
    let first = before[0].mod_revision;
    let current = store.revision().await.unwrap();
    assert!(current > first);
    store.compact(current).await.unwrap();
    let err = watch_error(&*store, WatchOptions::prefix(&root).from_revision(first)).await;
    expect_compacted_since(&err, current);
    assert_unchanged(&*store, &root, &before).await;
}

/// `err` is `Compacted`, naming a compaction at `current` or later.
fn expect_compacted_since(err: &keyplane_core::Error, current: i64) {
    let compact_revision = err
        .compact_revision()
        .unwrap_or_else(|| panic!("expected Compacted, got {err}"));
    assert!(
        compact_revision >= current,
        "compact revision {compact_revision} < {current}"
    );
}

/// `compact` of a future revision is `InvalidArgument` and compacts nothing; below the
/// compacted revision it is `Compacted { compact_revision }` naming the compaction.
pub async fn compact_rejects_future_and_compacted_revisions(store: Arc<dyn Store>) {
    let (root, before) = seeded(&*store).await;
    let first = before[0].mod_revision;
    let current = store.revision().await.unwrap();
    assert!(current > first);
    expect_kind(
        store.compact(current + 1_000_000).await,
        ErrorKind::InvalidArgument,
    );
    assert_unchanged(&*store, &root, &before).await;
    // Nothing was compacted: the history from the first seeded write still replays.
    let mut replay = store
        .watch(WatchOptions::prefix(&root).from_revision(first))
        .await
        .unwrap();
    assert_eq!(next_batch(&mut replay).await.revision, first);
    drop(replay);
    store.compact(current).await.unwrap();
    // etcd also rejects compacting at exactly the compacted revision: only below is portable.
    let err = store
        .compact(current - 1)
        .await
        .expect_err("compacting below the compacted revision");
    expect_compacted_since(&err, current);
    assert_unchanged(&*store, &root, &before).await;
}

/// Keep-alive, revoke and time-to-live of a revoked lease are `LeaseNotFound`, and so is a put
/// attached to it.
pub async fn keep_alive_of_revoked_lease_is_rejected(store: Arc<dyn Store>) {
    let (root, _) = seeded(&*store).await;
    let lease = store.lease_grant(Duration::from_secs(30)).await.unwrap();
    store.lease_revoke(lease.id).await.unwrap();
    let before = snapshot(&*store, &root).await;
    expect_kind(
        store.lease_keep_alive(lease.id).await,
        ErrorKind::LeaseNotFound,
    );
    expect_kind(store.lease_revoke(lease.id).await, ErrorKind::LeaseNotFound);
    expect_kind(
        store.lease_time_to_live(lease.id).await,
        ErrorKind::LeaseNotFound,
    );
    expect_kind(
        store
            .put(
                &key(&root, "c"),
                b"v",
                PutOptions::default().lease(lease.id),
            )
            .await,
        ErrorKind::LeaseNotFound,
    );
    assert_unchanged(&*store, &root, &before).await;
}

/// A txn whose branch puts with an unknown lease (revoked, or never granted) is
/// `LeaseNotFound` and writes none of its ops, collection ops included.
pub async fn put_with_unknown_lease_writes_nothing(store: Arc<dyn Store>) {
    let (root, before) = seeded(&*store).await;
    let list = key(&root, "list");
    for item in ["x", "y"] {
        store
            .collection(CollectionOp::ListPush {
                key: list.clone(),
                value: item.into(),
            })
            .await
            .unwrap();
    }
    let list_all = || CollectionOp::ListRange {
        key: list.clone(),
        start: 0,
        stop: -1,
    };
    let items = store.collection(list_all()).await.unwrap();
    let revoked = store.lease_grant(Duration::from_secs(30)).await.unwrap();
    store.lease_revoke(revoked.id).await.unwrap();
    // Drawn from 2^62 ids: far above the counters that number leases on most backends, and
    // colliding with one of etcd's (spread over 64 bits) only by negligible chance.
    let never_granted = LeaseId(rand::random_range(1 << 48..1 << 62));
    for lease in [revoked.id, never_granted] {
        let txn = Txn::new().and_then([
            TxnOp::put(key(&root, "c"), "v"),
            TxnOp::delete(key(&root, "b")),
            TxnOp::Collection(CollectionOp::ListPush {
                key: list.clone(),
                value: b"z".to_vec(),
            }),
            TxnOp::put_with_lease(key(&root, "d"), "v", lease),
        ]);
        expect_kind(store.txn(txn).await, ErrorKind::LeaseNotFound);
        assert_unchanged(&*store, &root, &before).await;
        assert_eq!(
            store.collection(list_all()).await.unwrap(),
            items,
            "a rejected txn pushed onto the list"
        );
    }
}
