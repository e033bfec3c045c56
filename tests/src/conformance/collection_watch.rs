//! Watches that report collection changes: one event per member change in the batch of its
//! transaction, `Deleted` for a collection left empty, opt-in and isolated by range,
//! resumable, and exact enough to replay every collection from an earlier read.

use super::support::{b, key, next_batch, put, rel, root, run};
use keyplane_core::{
    CollectionChange as Change, CollectionKind as Kind, CollectionOp as Op, Event, Store, Txn,
    TxnOp, WatchBatch, WatchOptions, WatchStream,
};
use std::sync::Arc;

pub(super) async fn watch(store: &dyn Store, root: &[u8]) -> WatchStream {
    store
        .watch(WatchOptions::prefix(root).with_collections())
        .await
        .expect("watch")
}

/// Adds `member` to the set at `key`.
pub(super) async fn add(store: &dyn Store, key: &[u8], member: &str) {
    run(
        store,
        Op::SetAdd {
            key: key.to_vec(),
            member: b(member),
        },
    )
    .await;
}

/// The collection events of a batch as `(relative key, kind, change)`.
pub(super) fn changes(root: &[u8], batch: &WatchBatch) -> Vec<(String, Kind, Change)> {
    batch
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Collection(c) => Some((rel(root, &c.key), c.kind, c.change.clone())),
            _ => None,
        })
        .collect()
}

/// The next batch, which must hold exactly one collection event.
pub(super) async fn one(stream: &mut WatchStream, root: &[u8]) -> (String, Kind, Change) {
    let batch = next_batch(stream).await;
    let mut all = changes(root, &batch);
    assert_eq!(all.len(), 1, "expected one collection event: {batch:?}");
    assert_eq!(batch.events.len(), 1, "{batch:?}");
    all.remove(0)
}

/// Puts a plain marker and checks that it is the next batch: nothing came before it.
pub(super) async fn marker(store: &dyn Store, stream: &mut WatchStream, root: &[u8], name: &str) {
    let rev = put(store, &key(root, name), "m").await;
    let batch = next_batch(stream).await;
    assert_eq!(
        batch.revision, rev,
        "an unexpected batch before {name}: {batch:?}"
    );
    assert!(
        matches!(&batch.events[..], [Event::Put { entry, .. }] if entry.key == key(root, name)),
        "{batch:?}"
    );
}

/// Every kind of change is reported once, at the revision of its write, with what a replay
/// needs; a write that changes nothing is not reported.
pub async fn collection_events_report_each_change(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    let mut w = watch(st, &root).await;
    let (s, m, l) = (key(&root, "s"), key(&root, "m"), key(&root, "l"));

    add(st, &s, "a").await;
    assert_eq!(
        one(&mut w, &root).await,
        ("s".into(), Kind::Set, Change::SetAdd { member: b("a") })
    );
    add(st, &s, "b").await;
    assert_eq!(
        one(&mut w, &root).await.2,
        Change::SetAdd { member: b("b") }
    );
    // Already there: no change, no event.
    add(st, &s, "a").await;
    run(
        st,
        Op::SetRemove {
            key: s.clone(),
            member: b("zz"),
        },
    )
    .await;
    marker(st, &mut w, &root, "mark1").await;
    run(
        st,
        Op::SetRemove {
            key: s.clone(),
            member: b("a"),
        },
    )
    .await;
    assert_eq!(
        one(&mut w, &root).await.2,
        Change::SetRemove { member: b("a") }
    );

    run(
        st,
        Op::MapPut {
            key: m.clone(),
            field: b("f"),
            value: b("1"),
        },
    )
    .await;
    assert_eq!(
        one(&mut w, &root).await,
        (
            "m".into(),
            Kind::Map,
            Change::MapPut {
                field: b("f"),
                value: b("1"),
                prev: None
            }
        )
    );
    run(
        st,
        Op::MapPut {
            key: m.clone(),
            field: b("g"),
            value: b("x"),
        },
    )
    .await;
    one(&mut w, &root).await;
    run(
        st,
        Op::MapPut {
            key: m.clone(),
            field: b("f"),
            value: b("2"),
        },
    )
    .await;
    assert_eq!(
        one(&mut w, &root).await.2,
        Change::MapPut {
            field: b("f"),
            value: b("2"),
            prev: Some(b("1"))
        }
    );
    // The same value again: no change.
    run(
        st,
        Op::MapPut {
            key: m.clone(),
            field: b("f"),
            value: b("2"),
        },
    )
    .await;
    run(
        st,
        Op::MapDelete {
            key: m.clone(),
            field: b("nope"),
        },
    )
    .await;
    marker(st, &mut w, &root, "mark2").await;
    run(
        st,
        Op::MapDelete {
            key: m.clone(),
            field: b("f"),
        },
    )
    .await;
    assert_eq!(
        one(&mut w, &root).await.2,
        Change::MapDelete {
            field: b("f"),
            prev: b("2")
        }
    );

    for item in ["x", "y", "x"] {
        run(
            st,
            Op::ListPush {
                key: l.clone(),
                value: b(item),
            },
        )
        .await;
        assert_eq!(
            one(&mut w, &root).await,
            ("l".into(), Kind::List, Change::ListPush { item: b(item) })
        );
    }
    run(st, Op::ListRotate { key: l.clone() }).await;
    assert_eq!(
        one(&mut w, &root).await.2,
        Change::ListRotate { item: b("x") }
    );
    run(
        st,
        Op::ListRemove {
            key: l.clone(),
            value: b("x"),
        },
    )
    .await;
    assert_eq!(
        one(&mut w, &root).await.2,
        Change::ListRemove {
            item: b("x"),
            count: 2
        }
    );
    // Removing what is not there, and rotating a one-item list, change nothing.
    run(
        st,
        Op::ListRemove {
            key: l.clone(),
            value: b("x"),
        },
    )
    .await;
    run(st, Op::ListRotate { key: l.clone() }).await;
    marker(st, &mut w, &root, "mark3").await;
}

/// A transaction's plain and collection events come in one batch at its revision: the plain
/// events first, then each collection's changes in op order.
pub async fn collection_events_share_the_txn_batch(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    let (s, m, l) = (key(&root, "s"), key(&root, "m"), key(&root, "l"));
    run(
        st,
        Op::ListPush {
            key: l.clone(),
            value: b("head"),
        },
    )
    .await;
    let mut w = watch(st, &root).await;
    let resp = st
        .txn(Txn::new().and_then([
            TxnOp::Collection(Op::SetAdd {
                key: s.clone(),
                member: b("a"),
            }),
            TxnOp::put(key(&root, "plain"), "v"),
            TxnOp::Collection(Op::ListPush {
                key: l.clone(),
                value: b("x"),
            }),
            TxnOp::Collection(Op::MapPut {
                key: m.clone(),
                field: b("f"),
                value: b("v"),
            }),
            TxnOp::Collection(Op::ListRotate { key: l.clone() }),
            TxnOp::Collection(Op::SetAdd {
                key: s.clone(),
                member: b("b"),
            }),
            TxnOp::Collection(Op::ListPush {
                key: l.clone(),
                value: b("y"),
            }),
        ]))
        .await
        .expect("txn");
    let batch = next_batch(&mut w).await;
    assert_eq!(batch.revision, resp.revision);
    assert!(
        matches!(&batch.events[0], Event::Put { entry, .. } if entry.key == key(&root, "plain")),
        "plain events come first: {batch:?}"
    );
    assert_eq!(batch.events.len(), 7, "{batch:?}");
    let all = changes(&root, &batch);
    let of = |name: &str| -> Vec<Change> {
        all.iter()
            .filter(|(k, _, _)| k == name)
            .map(|(_, _, c)| c.clone())
            .collect()
    };
    assert_eq!(
        of("s"),
        vec![
            Change::SetAdd { member: b("a") },
            Change::SetAdd { member: b("b") }
        ]
    );
    assert_eq!(
        of("l"),
        vec![
            Change::ListPush { item: b("x") },
            Change::ListRotate { item: b("head") },
            Change::ListPush { item: b("y") },
        ]
    );
    assert_eq!(
        of("m"),
        vec![Change::MapPut {
            field: b("f"),
            value: b("v"),
            prev: None
        }]
    );
}

/// A collection deleted, by key or by prefix, or emptied member by member, reports one
/// `Deleted`; deleting what is not there reports nothing; deleted and written again in one
/// transaction reports `Deleted` then the writes.
pub async fn emptied_and_deleted_collections_report_deleted(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    let (s, m, l) = (key(&root, "s"), key(&root, "m"), key(&root, "dir/l"));
    let dir_set = key(&root, "dir/s");
    for member in ["a", "b"] {
        add(st, &s, member).await;
        add(st, &dir_set, member).await;
    }
    run(
        st,
        Op::MapPut {
            key: m.clone(),
            field: b("f"),
            value: b("v"),
        },
    )
    .await;
    run(
        st,
        Op::ListPush {
            key: l.clone(),
            value: b("x"),
        },
    )
    .await;
    let mut w = watch(st, &root).await;

    // The last two members removed in one transaction.
    st.txn(Txn::new().and_then([
        TxnOp::Collection(Op::SetRemove {
            key: s.clone(),
            member: b("a"),
        }),
        TxnOp::Collection(Op::SetRemove {
            key: s.clone(),
            member: b("b"),
        }),
    ]))
    .await
    .expect("txn");
    assert_eq!(
        one(&mut w, &root).await,
        ("s".into(), Kind::Set, Change::Deleted)
    );

    // The last field deleted.
    run(
        st,
        Op::MapDelete {
            key: m.clone(),
            field: b("f"),
        },
    )
    .await;
    assert_eq!(
        one(&mut w, &root).await,
        ("m".into(), Kind::Map, Change::Deleted)
    );

    // Gone collections: deleting them again reports nothing.
    st.delete(&s).await.expect("delete");
    st.delete(&m).await.expect("delete");
    marker(st, &mut w, &root, "mark1").await;

    // Deleted by prefix: one Deleted per collection.
    let deleted = st
        .delete_prefix(&key(&root, "dir/"))
        .await
        .expect("delete_prefix")
        .deleted;
    assert_eq!(deleted, 2);
    let batch = next_batch(&mut w).await;
    let mut got = changes(&root, &batch);
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        got,
        vec![
            ("dir/l".into(), Kind::List, Change::Deleted),
            ("dir/s".into(), Kind::Set, Change::Deleted),
        ]
    );

    // Deleted and written again in one transaction.
    add(st, &s, "old").await;
    one(&mut w, &root).await;
    st.txn(Txn::new().and_then([
        TxnOp::delete(s.clone()),
        TxnOp::Collection(Op::SetAdd {
            key: s.clone(),
            member: b("new"),
        }),
    ]))
    .await
    .expect("txn");
    let batch = next_batch(&mut w).await;
    assert_eq!(
        changes(&root, &batch),
        vec![
            ("s".into(), Kind::Set, Change::Deleted),
            ("s".into(), Kind::Set, Change::SetAdd { member: b("new") }),
        ]
    );
    // Deleted whole by key.
    st.delete(&s).await.expect("delete");
    assert_eq!(
        one(&mut w, &root).await,
        ("s".into(), Kind::Set, Change::Deleted)
    );
}

/// Collection events are opt-in, and only for collections whose key is in the range.
pub async fn collection_events_are_opt_in_and_isolated(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    let dir = key(&root, "dir/");
    let mut plain_only = st.watch(WatchOptions::prefix(&dir)).await.expect("watch");
    let mut with = st
        .watch(WatchOptions::prefix(&dir).with_collections())
        .await
        .expect("watch");
    let mut one_key = st
        .watch(WatchOptions::key(key(&root, "dir/s")).with_collections())
        .await
        .expect("watch");
    // Outside the prefix, sharing its bytes; and a sibling of the watched key.
    add(st, &key(&root, "dir"), "x").await;
    add(st, &key(&root, "dirx/s"), "x").await;
    add(st, &key(&root, "dir/s2"), "x").await;
    add(st, &key(&root, "dir/s"), "x").await;
    let rev = put(st, &key(&root, "dir/plain"), "v").await;

    let batch = next_batch(&mut plain_only).await;
    assert_eq!(
        batch.revision, rev,
        "a plain watch sees plain keys only: {batch:?}"
    );

    let got: Vec<String> = [next_batch(&mut with).await, next_batch(&mut with).await]
        .iter()
        .flat_map(|b| b.events.iter().map(|e| rel(&root, e.key())))
        .collect();
    assert_eq!(got, vec!["dir/s2".to_string(), "dir/s".into()]);
    let batch = next_batch(&mut with).await;
    assert_eq!(batch.revision, rev);

    assert_eq!(
        one(&mut one_key, &root).await,
        ("dir/s".into(), Kind::Set, Change::SetAdd { member: b("x") })
    );
}

pub use super::collection_replay::collection_events_replay_exactly;
