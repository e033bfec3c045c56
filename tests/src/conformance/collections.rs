//! Collections: sets, maps and lists, alone and inside transactions.

use super::support::{
    b, expect_kind, expect_quiet, key, names, next_batch, put, root, run, snapshot,
};
use keyplane_core::{
    CollectionOp as Op, CollectionResult as R, Compare, ErrorKind, Event, OpResult, RangeOptions,
    Store, Txn, TxnOp, WatchOptions,
};
use std::sync::Arc;

pub(super) fn items(list: &[&str]) -> R {
    R::Items(list.iter().map(|s| b(s)).collect())
}

pub(super) fn set_add(key: &[u8], member: &str) -> Op {
    Op::SetAdd {
        key: key.to_vec(),
        member: b(member),
    }
}

pub(super) fn map_put(key: &[u8], field: &str, value: &str) -> Op {
    Op::MapPut {
        key: key.to_vec(),
        field: b(field),
        value: b(value),
    }
}

pub(super) fn list_push(key: &[u8], value: &str) -> Op {
    Op::ListPush {
        key: key.to_vec(),
        value: b(value),
    }
}

pub(super) fn list_all(key: &[u8]) -> Op {
    Op::ListRange {
        key: key.to_vec(),
        start: 0,
        stop: -1,
    }
}

/// Set add/remove/contains/members, with `Changed` saying whether the set changed.
pub async fn set_operations(store: Arc<dyn Store>) {
    let root = root();
    let s = key(&root, "set");
    let st = &*store;
    assert_eq!(
        run(st, Op::SetMembers { key: s.clone() }).await,
        R::Members(vec![])
    );
    assert_eq!(run(st, set_add(&s, "b")).await, R::Changed(true));
    assert_eq!(run(st, set_add(&s, "a")).await, R::Changed(true));
    assert_eq!(run(st, set_add(&s, "b")).await, R::Changed(false));
    let contains = |m: &str| Op::SetContains {
        key: s.clone(),
        member: b(m),
    };
    assert_eq!(run(st, contains("a")).await, R::Contains(true));
    assert_eq!(run(st, contains("z")).await, R::Contains(false));
    assert_eq!(
        run(st, Op::SetMembers { key: s.clone() }).await,
        R::Members(vec![b("a"), b("b")])
    );
    let remove = |m: &str| Op::SetRemove {
        key: s.clone(),
        member: b(m),
    };
    assert_eq!(run(st, remove("a")).await, R::Changed(true));
    assert_eq!(run(st, remove("a")).await, R::Changed(false));
    assert_eq!(
        run(st, Op::SetMembers { key: s.clone() }).await,
        R::Members(vec![b("b")])
    );
    // Another set is another collection.
    let other = key(&root, "set2");
    assert_eq!(
        run(
            st,
            Op::SetContains {
                key: other,
                member: b("b")
            }
        )
        .await,
        R::Contains(false)
    );
}

/// A paged set scan returns every member (each exactly once, in pages of at most the limit, on
/// ordered backends); a limit of zero is `InvalidArgument`.
pub async fn set_scan_pages_cover_the_set(store: Arc<dyn Store>) {
    let root = root();
    let s = key(&root, "set");
    let mut all: Vec<Vec<u8>> = (0..30).map(|i| b(&format!("m{i:02}"))).collect();
    all.sort();
    for m in &all {
        store
            .collection(Op::SetAdd {
                key: s.clone(),
                member: m.clone(),
            })
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut page_sizes = Vec::new();
    let mut after = None;
    for _ in 0..1000 {
        match run(
            &*store,
            Op::SetScan {
                key: s.clone(),
                after: after.take(),
                limit: 7,
            },
        )
        .await
        {
            R::Page { members, next } => {
                page_sizes.push(members.len());
                seen.extend(members);
                match next {
                    Some(c) => after = Some(c),
                    None => break,
                }
            }
            other => panic!("scan result: {other:?}"),
        }
    }
    assert!(after.is_none(), "the scan did not finish");
    if store.capabilities().collections == keyplane_core::Support::Emulated {
        assert_eq!(
            seen, all,
            "ordered backends return each member once, in order"
        );
        assert!(
            page_sizes.iter().all(|&n| n <= 7),
            "ordered backends keep pages within the limit: {page_sizes:?}"
        );
    } else {
        seen.sort();
        seen.dedup();
        assert_eq!(seen, all);
    }
    expect_kind(
        store
            .collection(Op::SetScan {
                key: s.clone(),
                after: None,
                limit: 0,
            })
            .await,
        ErrorKind::InvalidArgument,
    );
}

/// Map field put/get/delete and get-all, ascending by field.
pub async fn map_operations(store: Arc<dyn Store>) {
    let root = root();
    let m = key(&root, "map");
    let st = &*store;
    assert_eq!(run(st, map_put(&m, "f2", "v2")).await, R::Changed(true));
    assert_eq!(run(st, map_put(&m, "f1", "v1")).await, R::Changed(true));
    assert_eq!(run(st, map_put(&m, "f1", "v1b")).await, R::Changed(false));
    let get = |f: &str| Op::MapGet {
        key: m.clone(),
        field: b(f),
    };
    assert_eq!(run(st, get("f1")).await, R::Value(Some(b("v1b"))));
    assert_eq!(run(st, get("nope")).await, R::Value(None));
    assert_eq!(
        run(st, Op::MapGetAll { key: m.clone() }).await,
        R::Fields(vec![(b("f1"), b("v1b")), (b("f2"), b("v2"))])
    );
    let delete = |f: &str| Op::MapDelete {
        key: m.clone(),
        field: b(f),
    };
    assert_eq!(run(st, delete("f1")).await, R::Changed(true));
    assert_eq!(run(st, delete("f1")).await, R::Changed(false));
    assert_eq!(
        run(st, Op::MapGetAll { key: m.clone() }).await,
        R::Fields(vec![(b("f2"), b("v2"))])
    );
}

/// Collection ops run inside either branch of a txn, with their results in op order.
pub async fn collection_ops_in_txn_branches(store: Arc<dyn Store>) {
    let root = root();
    let (s, m, l, guard) = (
        key(&root, "s"),
        key(&root, "m"),
        key(&root, "l"),
        key(&root, "g"),
    );
    let branch = |tag: &str| {
        vec![
            TxnOp::Collection(set_add(&s, tag)),
            TxnOp::Collection(map_put(&m, "f", tag)),
            TxnOp::Collection(list_push(&l, tag)),
            TxnOp::Collection(Op::SetMembers { key: s.clone() }),
        ]
    };
    let txn = || {
        Txn::new()
            .when([Compare::exists(&guard)])
            .and_then(branch("yes"))
            .or_else(branch("no"))
    };
    let failed = store.txn(txn()).await.unwrap();
    assert!(!failed.succeeded);
    assert_eq!(
        failed.results,
        [
            OpResult::Collection(R::Changed(true)),
            OpResult::Collection(R::Changed(true)),
            OpResult::Collection(R::Count(1)),
            OpResult::Collection(R::Members(vec![b("no")])),
        ]
    );
    put(&*store, &guard, "").await;
    let succeeded = store.txn(txn()).await.unwrap();
    assert!(succeeded.succeeded);
    assert_eq!(
        succeeded.results,
        [
            OpResult::Collection(R::Changed(true)),
            OpResult::Collection(R::Changed(false)),
            OpResult::Collection(R::Count(2)),
            OpResult::Collection(R::Members(vec![b("no"), b("yes")])),
        ]
    );
    assert_eq!(run(&*store, list_all(&l)).await, items(&["no", "yes"]));
    assert_eq!(
        run(
            &*store,
            Op::MapGet {
                key: m.clone(),
                field: b("f")
            }
        )
        .await,
        R::Value(Some(b("yes")))
    );
}

/// `delete` removes the collection at a key and `delete_prefix` every collection under the
/// prefix, each counting as one key.
pub async fn delete_removes_collections(store: Arc<dyn Store>) {
    let root = root();
    let (s, m, l, p) = (
        key(&root, "c/s"),
        key(&root, "c/m"),
        key(&root, "c/l"),
        key(&root, "c/p"),
    );
    let st = &*store;
    run(st, set_add(&s, "x")).await;
    run(st, map_put(&m, "f", "v")).await;
    run(st, list_push(&l, "i")).await;
    put(st, &p, "plain").await;
    let outside = key(&root, "d/s");
    run(st, set_add(&outside, "x")).await;
    assert_eq!(
        store.delete(&s).await.unwrap().prev,
        None,
        "a set has no plain entry"
    );
    assert_eq!(
        run(st, Op::SetMembers { key: s.clone() }).await,
        R::Members(vec![])
    );
    assert_eq!(
        store
            .delete_prefix(&key(&root, "c/"))
            .await
            .unwrap()
            .deleted,
        3
    );
    assert_eq!(
        run(st, Op::MapGetAll { key: m.clone() }).await,
        R::Fields(vec![])
    );
    assert_eq!(run(st, Op::ListLen { key: l.clone() }).await, R::Count(0));
    assert_eq!(store.get(&p).await.unwrap(), None);
    assert_eq!(
        run(st, Op::SetMembers { key: outside }).await,
        R::Members(vec![b("x")]),
        "collections outside the prefix stay"
    );
}

/// Collections never appear in plain ranges or watches, of their prefix or of the whole
/// keyspace: no collection event and no reserved (NUL-led) key.
pub async fn collections_are_invisible_to_range(store: Arc<dyn Store>) {
    let root = root();
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    let mut everything = store.watch(WatchOptions::prefix("")).await.unwrap();
    run(&*store, set_add(&key(&root, "s"), "x")).await;
    run(&*store, map_put(&key(&root, "m"), "f", "v")).await;
    run(&*store, list_push(&key(&root, "l"), "i")).await;
    let first = store
        .range(RangeOptions::prefix("").keys_only().limit(1))
        .await
        .unwrap();
    assert!(
        first.entries.iter().all(|e| e.key.first() != Some(&0)),
        "a whole-keyspace range shows a reserved key: {:?}",
        first.entries
    );
    let end = key(&root, "end");
    expect_quiet(&*store, &mut watch, &end).await;
    // Other cases write to a shared server meanwhile: read up to this case's sentinel put.
    loop {
        let batch = next_batch(&mut everything).await;
        for event in &batch.events {
            assert!(
                !matches!(event, Event::Collection(_)),
                "a plain whole-keyspace watch reported {event:?}"
            );
            assert_ne!(
                event.key().first(),
                Some(&0),
                "a whole-keyspace watch reported a reserved key: {event:?}"
            );
        }
        if batch.events.iter().any(|e| e.key() == end.as_slice()) {
            break;
        }
    }
    put(&*store, &key(&root, "plain"), "v").await;
    assert_eq!(
        names(&root, &snapshot(&*store, &root).await),
        ["end", "plain"]
    );
    assert_eq!(store.get(&key(&root, "s")).await.unwrap(), None);
}

/// Many set adds in one transaction, some of members already there, across two sets and
/// around a remove: each reports whether it added its member.
pub async fn many_set_adds_in_one_txn(store: Arc<dyn Store>) {
    let root = root();
    let (a, other) = (key(&root, "a"), key(&root, "other"));
    let st = &*store;
    run(st, set_add(&a, "m2")).await;
    run(st, set_add(&a, "m9")).await;
    let mut ops: Vec<TxnOp> = ["m1", "m2", "m3"]
        .iter()
        .map(|m| TxnOp::Collection(set_add(&a, m)))
        .collect();
    ops.push(TxnOp::Collection(Op::SetRemove {
        key: a.clone(),
        member: b("m9"),
    }));
    ops.extend(
        ["m4", "m5"]
            .iter()
            .map(|m| TxnOp::Collection(set_add(&a, m))),
    );
    ops.extend(
        ["m1", "m2"]
            .iter()
            .map(|m| TxnOp::Collection(set_add(&other, m))),
    );
    let response = st.txn(Txn::new().and_then(ops)).await.unwrap();
    let changed: Vec<bool> = response
        .results
        .iter()
        .map(|r| match r {
            OpResult::Collection(R::Changed(c)) => *c,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        changed,
        [true, false, true, true, true, true, true, true],
        "m2 was there; the remove took m9"
    );
    let members = |k: &[u8]| Op::SetMembers { key: k.to_vec() };
    assert_eq!(
        run(st, members(&a)).await,
        R::Members(["m1", "m2", "m3", "m4", "m5"].map(b).to_vec())
    );
    assert_eq!(
        run(st, members(&other)).await,
        R::Members(["m1", "m2"].map(b).to_vec())
    );
}

pub use super::collection_lists::{
    list_operations, list_push_front_inserts_at_the_head,
    list_rotate_get_is_atomic_under_concurrency, list_rotate_get_reads_the_moved_items_map,
    list_rotate_get_rejects_bad_input, list_rotate_is_atomic_under_concurrency,
    several_list_writes_in_one_txn,
};
