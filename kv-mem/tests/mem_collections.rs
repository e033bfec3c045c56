//! MemStore collections: sets, maps, lists with rotate; isolation from plain keys; txns.

use futures::StreamExt;
use kv_core::{
    CollectionOp, CollectionResult, ErrorKind, LeaseId, OpResult, PutOptions, RangeOptions, Store,
    Txn, TxnOp, WatchOptions,
};
use kv_mem::MemStore;

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

async fn run(store: &MemStore, op: CollectionOp) -> CollectionResult {
    store.collection(op).await.unwrap()
}

fn push(key: &str, value: &str) -> CollectionOp {
    CollectionOp::ListPush {
        key: b(key),
        value: b(value),
    }
}

fn all(key: &str) -> CollectionOp {
    CollectionOp::ListRange {
        key: b(key),
        start: 0,
        stop: -1,
    }
}

fn items(values: &[&str]) -> CollectionResult {
    CollectionResult::Items(values.iter().map(|v| b(v)).collect())
}

#[tokio::test]
async fn set_writes_bump_the_revision_only_when_they_change_something() {
    let store = MemStore::new();
    let add = CollectionOp::SetAdd {
        key: b("s"),
        member: b("m"),
    };
    let before = store.revision().await.unwrap();
    assert_eq!(
        run(&store, add.clone()).await,
        CollectionResult::Changed(true)
    );
    assert_eq!(store.revision().await.unwrap(), before + 1);
    assert_eq!(run(&store, add).await, CollectionResult::Changed(false));
    assert_eq!(store.revision().await.unwrap(), before + 1);
    let contains = CollectionOp::SetContains {
        key: b("s"),
        member: b("m"),
    };
    assert_eq!(
        run(&store, contains).await,
        CollectionResult::Contains(true)
    );
}

#[tokio::test]
async fn lists_rotate_head_to_tail() {
    let store = MemStore::new();
    let rotate = CollectionOp::ListRotate { key: b("q") };
    assert_eq!(
        run(&store, rotate.clone()).await,
        CollectionResult::Value(None)
    );
    for (i, v) in ["a", "b", "c"].into_iter().enumerate() {
        assert_eq!(
            run(&store, push("q", v)).await,
            CollectionResult::Count(i as u64 + 1)
        );
    }
    for (expected, order) in [
        ("a", ["b", "c", "a"]),
        ("b", ["c", "a", "b"]),
        ("c", ["a", "b", "c"]),
    ] {
        assert_eq!(
            run(&store, rotate.clone()).await,
            CollectionResult::Value(Some(b(expected)))
        );
        assert_eq!(run(&store, all("q")).await, items(&order));
    }
    let remove = CollectionOp::ListRemove {
        key: b("q"),
        value: b("b"),
    };
    assert_eq!(run(&store, remove).await, CollectionResult::Count(1));
    let len = CollectionOp::ListLen { key: b("q") };
    assert_eq!(run(&store, len).await, CollectionResult::Count(2));
}

#[tokio::test]
async fn maps_hold_fields() {
    let store = MemStore::new();
    let put = |f: &str, v: &str| CollectionOp::MapPut {
        key: b("h"),
        field: b(f),
        value: b(v),
    };
    assert_eq!(
        run(&store, put("z", "1")).await,
        CollectionResult::Changed(true)
    );
    assert_eq!(
        run(&store, put("a", "2")).await,
        CollectionResult::Changed(true)
    );
    assert_eq!(
        run(&store, put("a", "3")).await,
        CollectionResult::Changed(false)
    );
    assert_eq!(
        run(&store, CollectionOp::MapGetAll { key: b("h") }).await,
        CollectionResult::Fields(vec![(b("a"), b("3")), (b("z"), b("1"))])
    );
}

#[tokio::test]
async fn collections_are_invisible_to_ranges_and_watches_and_go_with_their_key() {
    let store = MemStore::new();
    let mut watch = store.watch(WatchOptions::prefix("")).await.unwrap();
    run(&store, push("c/list", "x")).await;
    let add = CollectionOp::SetAdd {
        key: b("c/set"),
        member: b("m"),
    };
    run(&store, add).await;
    let plain = store
        .put(b"c/plain", b"v", PutOptions::default())
        .await
        .unwrap();
    let whole = store.range(RangeOptions::prefix("")).await.unwrap();
    let keys: Vec<_> = whole.entries.iter().map(|e| e.key.clone()).collect();
    assert_eq!(keys, vec![b("c/plain")]);
    // The first batch the watch sees is the plain put: collection writes are not events.
    assert_eq!(
        watch.next().await.unwrap().unwrap().revision,
        plain.revision
    );

    // delete_prefix counts the plain key and each collection as one key.
    assert_eq!(store.delete_prefix(b"c/").await.unwrap().deleted, 3);
    assert_eq!(run(&store, all("c/list")).await, items(&[]));
    let members = CollectionOp::SetMembers { key: b("c/set") };
    assert_eq!(
        run(&store, members).await,
        CollectionResult::Members(vec![])
    );

    run(&store, push("k", "x")).await;
    store.delete(b"k").await.unwrap();
    let len = CollectionOp::ListLen { key: b("k") };
    assert_eq!(run(&store, len).await, CollectionResult::Count(0));
}

#[tokio::test]
async fn collection_ops_in_a_txn_are_atomic_with_the_rest() {
    let store = MemStore::new();
    run(&store, push("jobs", "a")).await;
    let resp = store
        .txn(Txn::new().and_then([
            TxnOp::Collection(CollectionOp::ListRotate { key: b("jobs") }),
            TxnOp::put("owner/a", "me"),
            TxnOp::Collection(CollectionOp::SetAdd {
                key: b("seen"),
                member: b("a"),
            }),
            TxnOp::Collection(CollectionOp::SetMembers { key: b("seen") }),
        ]))
        .await
        .unwrap();
    assert_eq!(
        resp.results[3],
        OpResult::Collection(CollectionResult::Members(vec![b("a")]))
    );
    let before = store.revision().await.unwrap();
    let failing = Txn::new().and_then([
        TxnOp::Collection(push("jobs", "b")),
        TxnOp::put_with_lease("owner/b", "me", LeaseId(987_654)),
    ]);
    let err = store.txn(failing).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseNotFound);
    assert_eq!(store.revision().await.unwrap(), before);
    assert_eq!(run(&store, all("jobs")).await, items(&["a"]));
}

#[tokio::test]
async fn set_scan_pages_every_member_once() {
    let store = MemStore::new();
    for i in 0..23 {
        let add = CollectionOp::SetAdd {
            key: b("big"),
            member: format!("m{i:02}").into_bytes(),
        };
        run(&store, add).await;
    }
    let mut after = None;
    let mut seen = Vec::new();
    loop {
        let scan = CollectionOp::SetScan {
            key: b("big"),
            after: after.take(),
            limit: 5,
        };
        let CollectionResult::Page { members, next } = run(&store, scan).await else {
            panic!("a scan returns pages");
        };
        assert!(members.len() <= 5);
        seen.extend(members);
        match next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let expected: Vec<_> = (0..23).map(|i| format!("m{i:02}").into_bytes()).collect();
    assert_eq!(seen, expected);
}
