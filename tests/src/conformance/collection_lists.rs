//! Lists: push, pop, range, push to the front, several writes in one transaction, and an
//! atomic rotation under concurrency.

use super::collections::{items, list_all, list_push, map_put};
use super::support::{b, key, root, run};
use keyplane_core::{
    CollectionOp as Op, CollectionResult as R, Compare, OpResult, Store, Txn, TxnOp,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// List push/remove/range/len/rotate with Redis semantics (negative indexes from the tail).
pub async fn list_operations(store: Arc<dyn Store>) {
    let root = root();
    let l = key(&root, "list");
    let st = &*store;
    assert_eq!(
        run(st, Op::ListRotate { key: l.clone() }).await,
        R::Value(None)
    );
    for (i, v) in ["a", "b", "c"].iter().enumerate() {
        assert_eq!(run(st, list_push(&l, v)).await, R::Count(i as u64 + 1));
    }
    assert_eq!(run(st, list_all(&l)).await, items(&["a", "b", "c"]));
    let range = |start, stop| Op::ListRange {
        key: l.clone(),
        start,
        stop,
    };
    assert_eq!(run(st, range(-2, -1)).await, items(&["b", "c"]));
    assert_eq!(run(st, range(1, 1)).await, items(&["b"]));
    assert_eq!(run(st, range(2, 1)).await, items(&[]));
    assert_eq!(run(st, range(0, 100)).await, items(&["a", "b", "c"]));
    assert_eq!(
        run(st, Op::ListRotate { key: l.clone() }).await,
        R::Value(Some(b("a")))
    );
    assert_eq!(run(st, list_all(&l)).await, items(&["b", "c", "a"]));
    assert_eq!(run(st, list_push(&l, "b")).await, R::Count(4));
    let remove = |v: &str| Op::ListRemove {
        key: l.clone(),
        value: b(v),
    };
    assert_eq!(run(st, remove("b")).await, R::Count(2));
    assert_eq!(run(st, remove("zz")).await, R::Count(0));
    assert_eq!(run(st, list_all(&l)).await, items(&["c", "a"]));
    assert_eq!(run(st, Op::ListLen { key: l.clone() }).await, R::Count(2));
}

/// `ListPushFront` inserts at the head (Redis `LPUSH`), alone, between tail pushes and
/// rotations, and in a transaction with other list writes; watches report it as its own
/// change, and a listing at a past revision sees the list's size then.
pub async fn list_push_front_inserts_at_the_head(store: Arc<dyn Store>) {
    let root = root();
    let l = key(&root, "list");
    let st = &*store;
    let front = |v: &str| Op::ListPushFront {
        key: l.clone(),
        value: b(v),
    };
    let mut watch = st
        .watch(keyplane_core::WatchOptions::prefix(&root).with_collections())
        .await
        .unwrap();
    assert_eq!(run(st, front("a")).await, R::Count(1));
    let batch = super::support::next_batch(&mut watch).await;
    assert!(
        matches!(&batch.events[..], [keyplane_core::Event::Collection(e)]
            if e.change == keyplane_core::CollectionChange::ListPushFront { item: b("a") }),
        "{batch:?}"
    );
    let before = batch.revision;
    assert_eq!(run(st, list_push(&l, "b")).await, R::Count(2));
    assert_eq!(run(st, front("c")).await, R::Count(3));
    assert_eq!(run(st, list_all(&l)).await, items(&["c", "a", "b"]));
    assert_eq!(
        run(st, Op::ListRotate { key: l.clone() }).await,
        R::Value(Some(b("c")))
    );
    assert_eq!(run(st, front("d")).await, R::Count(4));
    assert_eq!(run(st, list_all(&l)).await, items(&["d", "a", "b", "c"]));
    let txn = keyplane_core::Txn::new().and_then([
        keyplane_core::TxnOp::Collection(front("e")),
        keyplane_core::TxnOp::Collection(list_push(&l, "f")),
        keyplane_core::TxnOp::Collection(front("g")),
    ]);
    assert!(st.txn(txn).await.unwrap().succeeded);
    assert_eq!(
        run(st, list_all(&l)).await,
        items(&["g", "e", "d", "a", "b", "c", "f"])
    );
    let past = st
        .range(
            keyplane_core::RangeOptions::prefix(&root)
                .with_collections()
                .at_revision(before),
        )
        .await
        .unwrap();
    assert_eq!(past.collections.len(), 1);
    assert_eq!(
        past.collections[0].size, 1,
        "the list at the first push's revision"
    );
    let err = st
        .collection(Op::ListPushFront {
            key: l.clone(),
            value: vec![0; st.capabilities().max_value_bytes + 1],
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), keyplane_core::ErrorKind::InvalidValue, "{err}");
    assert_eq!(run(st, Op::ListLen { key: l.clone() }).await, R::Count(7));
}

/// One branch may write one list several times: pushes, a rotation and a removal apply in
/// op order, each seeing the list the previous one left, and later reads in the branch see
/// them all.
pub async fn several_list_writes_in_one_txn(store: Arc<dyn Store>) {
    let root = root();
    let l = key(&root, "queue");
    let st = &*store;
    assert_eq!(run(st, list_push(&l, "x")).await, R::Count(1));
    let ops = [
        list_push(&l, "a"),
        list_push(&l, "b"),
        list_push(&l, "c"),
        Op::ListRotate { key: l.clone() },
        Op::ListRemove {
            key: l.clone(),
            value: b("b"),
        },
        list_all(&l),
        Op::ListLen { key: l.clone() },
    ];
    let resp = st
        .txn(Txn::new().and_then(ops.map(TxnOp::Collection)))
        .await
        .unwrap();
    assert!(resp.succeeded);
    let results: Vec<R> = [
        R::Count(2),
        R::Count(3),
        R::Count(4),
        R::Value(Some(b("x"))),
        R::Count(1),
        items(&["a", "c", "x"]),
        R::Count(3),
    ]
    .into();
    assert_eq!(
        resp.results,
        results
            .into_iter()
            .map(OpResult::Collection)
            .collect::<Vec<_>>()
    );
    assert_eq!(run(st, list_all(&l)).await, items(&["a", "c", "x"]));
    // The same in a failure branch, on a list that does not exist yet.
    let fresh = key(&root, "fresh");
    let pushes = ["1", "2", "1"].map(|v| TxnOp::Collection(list_push(&fresh, v)));
    let resp = st
        .txn(
            Txn::new()
                .when([Compare::exists(key(&root, "absent"))])
                .or_else(pushes)
                .or_else([TxnOp::Collection(Op::ListRemove {
                    key: fresh.clone(),
                    value: b("1"),
                })]),
        )
        .await
        .unwrap();
    assert!(!resp.succeeded);
    let counts: Vec<OpResult> = [1, 2, 3, 2]
        .map(|n| OpResult::Collection(R::Count(n)))
        .into();
    assert_eq!(resp.results, counts);
    assert_eq!(run(st, list_all(&fresh)).await, items(&["2"]));
}

/// N concurrent rotations of a K-item list (N a multiple of K) return each item N/K times and
/// leave the list in its original order.
pub async fn list_rotate_is_atomic_under_concurrency(store: Arc<dyn Store>) {
    let root = root();
    let l = key(&root, "ring");
    let original = ["k0", "k1", "k2", "k3"];
    for v in original {
        run(&*store, list_push(&l, v)).await;
    }
    let rounds = 5;
    let n = original.len() * rounds;
    let mut tasks = Vec::new();
    for _ in 0..n {
        let store = store.clone();
        let l = l.clone();
        tasks.push(tokio::spawn(async move {
            run(&*store, Op::ListRotate { key: l }).await
        }));
    }
    let mut counts: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
    for t in tasks {
        match t.await.unwrap() {
            R::Value(Some(item)) => *counts.entry(item).or_default() += 1,
            other => panic!("rotate of a non-empty list: {other:?}"),
        }
    }
    let expected: BTreeMap<Vec<u8>, usize> = original.iter().map(|v| (b(v), rounds)).collect();
    assert_eq!(counts, expected, "each item rotated exactly N/K times");
    assert_eq!(run(&*store, list_all(&l)).await, items(&original));
}

/// The rotation that reads its moved item's map (`ListRotateGet`, the balancer's pick): the
/// item, and the field of the map at prefix + item + suffix, in one step; an absent map or
/// field reads `None`; an empty list moves nothing. Items and keys with bytes that patterns
/// and hash tags give meaning to (`*`, `?`, `{`, `}`, `%`, spaces) are plain bytes. Watches
/// report the rotation as a plain `ListRotate`, and the map is never written.
pub async fn list_rotate_get_reads_the_moved_items_map(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    let l = key(&root, "ring");
    let prefix = key(&root, "obj {*?}%:");
    let suffix = b(":meta");
    let get = |field: &str| Op::ListRotateGet {
        key: l.clone(),
        map_prefix: prefix.clone(),
        map_suffix: suffix.clone(),
        field: b(field),
    };
    let rotated = |item: Option<&str>, value: Option<&str>| R::Rotated {
        item: item.map(b),
        value: value.map(b),
    };
    assert_eq!(run(st, get("status")).await, rotated(None, None));
    let map = |item: &str| [&prefix[..], item.as_bytes(), &suffix].concat();
    for (item, status) in [("a b", "active"), ("{x}", "disabled"), ("*", "active")] {
        run(st, list_push(&l, item)).await;
        run(st, map_put(&map(item), "status", status)).await;
    }
    run(st, list_push(&l, "no map")).await;
    let mut watch = st
        .watch(keyplane_core::WatchOptions::prefix(&root).with_collections())
        .await
        .unwrap();
    assert_eq!(
        run(st, get("status")).await,
        rotated(Some("a b"), Some("active"))
    );
    let batch = super::support::next_batch(&mut watch).await;
    assert!(
        matches!(&batch.events[..], [keyplane_core::Event::Collection(e)]
            if e.key == l && e.change == keyplane_core::CollectionChange::ListRotate { item: b("a b") }),
        "{batch:?}"
    );
    assert_eq!(
        run(st, get("status")).await,
        rotated(Some("{x}"), Some("disabled"))
    );
    assert_eq!(run(st, get("nofield")).await, rotated(Some("*"), None));
    assert_eq!(run(st, get("status")).await, rotated(Some("no map"), None));
    assert_eq!(
        run(st, list_all(&l)).await,
        items(&["a b", "{x}", "*", "no map"])
    );
    // In a transaction with a compare and other ops, the map as the branch's earlier ops
    // left it.
    let resp = st
        .txn(
            Txn::new()
                .when([Compare::size(
                    l.clone(),
                    keyplane_core::CollectionKind::List,
                    keyplane_core::CompareOp::Equal,
                    4,
                )])
                .and_then([
                    TxnOp::Collection(map_put(&map("a b"), "status", "cooling")),
                    TxnOp::Collection(get("status")),
                ]),
        )
        .await
        .unwrap();
    assert!(resp.succeeded);
    assert_eq!(
        resp.results[1],
        OpResult::Collection(rotated(Some("a b"), Some("cooling")))
    );
    // A one-item list is its own rotation.
    let one = key(&root, "one");
    run(st, list_push(&one, "solo")).await;
    run(st, map_put(&map("solo"), "status", "active")).await;
    let solo = Op::ListRotateGet {
        key: one.clone(),
        map_prefix: prefix.clone(),
        map_suffix: suffix.clone(),
        field: b("status"),
    };
    assert_eq!(run(st, solo).await, rotated(Some("solo"), Some("active")));
    // The maps were only read.
    assert_eq!(
        run(st, Op::MapGetAll { key: map("{x}") }).await,
        R::Fields(vec![(b("status"), b("disabled"))])
    );
}

/// A branch that writes a list and then rotates it with `ListRotateGet` is refused (the map
/// read is the one the list's head names before the branch runs), as is a map prefix a key
/// cannot hold; nothing is written.
pub async fn list_rotate_get_rejects_bad_input(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    let l = key(&root, "ring");
    run(st, list_push(&l, "a")).await;
    run(st, list_push(&l, "b")).await;
    let get = |prefix: Vec<u8>| Op::ListRotateGet {
        key: l.clone(),
        map_prefix: prefix,
        map_suffix: Vec::new(),
        field: b("status"),
    };
    let txn = Txn::new().and_then([
        TxnOp::Collection(list_push(&l, "c")),
        TxnOp::Collection(get(key(&root, "obj:"))),
    ]);
    super::support::expect_kind(st.txn(txn).await, keyplane_core::ErrorKind::TxnConflict);
    let txn = Txn::new().and_then([
        TxnOp::delete_prefix(root.clone()),
        TxnOp::Collection(get(key(&root, "obj:"))),
    ]);
    super::support::expect_kind(st.txn(txn).await, keyplane_core::ErrorKind::TxnConflict);
    let bad = [&root[..], b"obj\0:"].concat();
    super::support::expect_kind(
        st.collection(get(bad)).await,
        keyplane_core::ErrorKind::InvalidKey,
    );
    assert_eq!(run(st, list_all(&l)).await, items(&["a", "b"]));
}

/// N concurrent `ListRotateGet`s of a K-item list (N a multiple of K) while other writers
/// flip the maps' fields: each item is moved N/K times, the list keeps its order, and each
/// value read is one the map held (never a torn or foreign value).
pub async fn list_rotate_get_is_atomic_under_concurrency(store: Arc<dyn Store>) {
    let root = root();
    let l = key(&root, "ring");
    let prefix = key(&root, "obj:");
    let original = ["k0", "k1", "k2", "k3"];
    for v in original {
        run(&*store, list_push(&l, v)).await;
        let map = [&prefix[..], v.as_bytes()].concat();
        run(&*store, map_put(&map, "status", &format!("{v}-0"))).await;
    }
    let rounds = 5;
    let n = original.len() * rounds;
    let flips = {
        let store = store.clone();
        let prefix = prefix.clone();
        tokio::spawn(async move {
            for round in 1..=10 {
                for v in original {
                    let map = [&prefix[..], v.as_bytes()].concat();
                    run(&*store, map_put(&map, "status", &format!("{v}-{round}"))).await;
                }
            }
        })
    };
    let mut tasks = Vec::new();
    for _ in 0..n {
        let (store, l, prefix) = (store.clone(), l.clone(), prefix.clone());
        tasks.push(tokio::spawn(async move {
            let op = Op::ListRotateGet {
                key: l,
                map_prefix: prefix,
                map_suffix: Vec::new(),
                field: b("status"),
            };
            loop {
                match store.collection(op.clone()).await {
                    Err(e) if e.is_retryable() => continue,
                    other => break other.unwrap(),
                }
            }
        }));
    }
    let mut counts: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
    for t in tasks {
        match t.await.unwrap() {
            R::Rotated {
                item: Some(item),
                value: Some(value),
            } => {
                let text = String::from_utf8(value).unwrap();
                let item_text = String::from_utf8(item.clone()).unwrap();
                let (owner, round) = text.split_once('-').unwrap();
                assert_eq!(owner, item_text, "the value of the moved item's own map");
                assert!(round.parse::<u32>().unwrap() <= 10);
                *counts.entry(item).or_default() += 1;
            }
            other => panic!("rotate of a non-empty list: {other:?}"),
        }
    }
    flips.await.unwrap();
    let expected: BTreeMap<Vec<u8>, usize> = original.iter().map(|v| (b(v), rounds)).collect();
    assert_eq!(counts, expected, "each item rotated exactly N/K times");
    assert_eq!(run(&*store, list_all(&l)).await, items(&original));
}
