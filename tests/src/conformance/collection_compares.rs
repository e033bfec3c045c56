//! Transaction compares on collections: a set member, a map field's presence and value, the
//! number of equal list items, a collection's size and existence; evaluated atomically with
//! the transaction on every backend.

use super::support::{b, key, put, root, run};
use keyplane_core::{
    CollectionKind as Kind, CollectionOp as Op, Compare, CompareOp, OpResult, Store, Txn, TxnOp,
};
use std::sync::Arc;

/// Whether `compare` alone holds: the transaction's success branch runs.
async fn holds(store: &dyn Store, compare: Compare) -> bool {
    let described = format!("{compare:?}");
    store
        .txn(Txn::new().when([compare]))
        .await
        .unwrap_or_else(|e| panic!("{described}: {e}"))
        .succeeded
}

/// Every collection compare on a set, a map, a list and on absent collections.
pub async fn collection_compares(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    let (s, m, l, none) = (
        key(&root, "set"),
        key(&root, "map"),
        key(&root, "list"),
        key(&root, "none"),
    );
    run(
        st,
        Op::SetAdd {
            key: s.clone(),
            member: b("a"),
        },
    )
    .await;
    run(
        st,
        Op::MapPut {
            key: m.clone(),
            field: b("f"),
            value: b("5"),
        },
    )
    .await;
    for item in ["x", "y", "x"] {
        run(
            st,
            Op::ListPush {
                key: l.clone(),
                value: b(item),
            },
        )
        .await;
    }

    assert!(holds(st, Compare::set_contains(&s, "a")).await);
    assert!(!holds(st, Compare::set_contains(&s, "b")).await);
    assert!(holds(st, Compare::set_lacks(&s, "b")).await);
    assert!(!holds(st, Compare::set_lacks(&s, "a")).await);
    assert!(holds(st, Compare::size(&s, Kind::Set, CompareOp::Equal, 1)).await);

    assert!(holds(st, Compare::map_has(&m, "f")).await);
    assert!(holds(st, Compare::map_lacks(&m, "g")).await);
    assert!(holds(st, Compare::map_field(&m, "f", CompareOp::Equal, "5")).await);
    assert!(holds(st, Compare::map_field(&m, "f", CompareOp::Greater, "4")).await);
    assert!(!holds(st, Compare::map_field(&m, "f", CompareOp::NotEqual, "5")).await);
    assert!(
        !holds(st, Compare::map_field(&m, "g", CompareOp::NotEqual, "5")).await,
        "a compare on an absent field is false"
    );

    assert!(
        holds(
            st,
            Compare::member(&l, Kind::List, "x", CompareOp::Equal, 2)
        )
        .await
    );
    assert!(
        holds(
            st,
            Compare::member(&l, Kind::List, "z", CompareOp::Equal, 0)
        )
        .await
    );
    assert!(holds(st, Compare::size(&l, Kind::List, CompareOp::Equal, 3)).await);
    assert!(holds(st, Compare::size(&l, Kind::List, CompareOp::Greater, 2)).await);
    assert!(holds(st, Compare::collection_exists(&l, Kind::List)).await);

    assert!(holds(st, Compare::collection_absent(&none, Kind::Set)).await);
    assert!(holds(st, Compare::set_lacks(&none, "a")).await);
    assert!(holds(st, Compare::map_lacks(&none, "f")).await);
    assert!(!holds(st, Compare::map_field(&none, "f", CompareOp::NotEqual, "")).await);
    assert!(holds(st, Compare::size(&none, Kind::List, CompareOp::Equal, 0)).await);
    assert!(!holds(st, Compare::collection_exists(&none, Kind::Map)).await);

    // A removed last member leaves no collection behind.
    run(
        st,
        Op::SetRemove {
            key: s.clone(),
            member: b("a"),
        },
    )
    .await;
    assert!(holds(st, Compare::collection_absent(&s, Kind::Set)).await);
}

/// Collection compares combine with plain compares (all must hold), pick the branch, and a
/// failed one writes nothing of the success branch.
pub async fn collection_compares_pick_the_branch(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    let (members, plain, flag) = (
        key(&root, "members"),
        key(&root, "plain"),
        key(&root, "flag"),
    );
    put(st, &plain, "v").await;
    let guarded = |member: &str| {
        Txn::new()
            .when([
                Compare::value(&plain, CompareOp::Equal, "v"),
                Compare::set_lacks(&members, member),
            ])
            .and_then([
                TxnOp::Collection(Op::SetAdd {
                    key: members.clone(),
                    member: b(member),
                }),
                TxnOp::put(&flag, member),
            ])
            .or_else([TxnOp::Collection(Op::SetContains {
                key: members.clone(),
                member: b(member),
            })])
    };
    let first = st.txn(guarded("a")).await.unwrap();
    assert!(first.succeeded);
    let again = st.txn(guarded("a")).await.unwrap();
    assert!(!again.succeeded, "the member is there now");
    assert_eq!(
        again.results,
        [OpResult::Collection(
            keyplane_core::CollectionResult::Contains(true)
        )]
    );
    put(st, &plain, "w").await;
    let plain_fails = st.txn(guarded("b")).await.unwrap();
    assert!(!plain_fails.succeeded, "every compare must hold");
    assert_eq!(
        st.get(&flag).await.unwrap().unwrap().value,
        b"a",
        "no failed branch wrote"
    );
}

/// Concurrent writers guarded by collection compares: "add while the set has fewer than 3
/// members" never overshoots, and "claim a field while it is absent" has one winner.
pub async fn collection_compares_guard_concurrent_writers(store: Arc<dyn Store>) {
    let root = root();
    let (bounded, claims) = (key(&root, "bounded"), key(&root, "claims"));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (store, bounded, claims) = (store.clone(), bounded.clone(), claims.clone());
            tokio::spawn(async move {
                let add = Txn::new()
                    .when([Compare::size(&bounded, Kind::Set, CompareOp::Less, 3)])
                    .and_then([TxnOp::Collection(Op::SetAdd {
                        key: bounded.clone(),
                        member: format!("m{i}").into_bytes(),
                    })]);
                let claim = Txn::new()
                    .when([Compare::map_lacks(&claims, "owner")])
                    .and_then([TxnOp::Collection(Op::MapPut {
                        key: claims.clone(),
                        field: b("owner"),
                        value: format!("t{i}").into_bytes(),
                    })]);
                let added = store.txn(add).await.unwrap().succeeded;
                let claimed = store.txn(claim).await.unwrap().succeeded;
                (added, claimed)
            })
        })
        .collect();
    let mut added = 0;
    let mut claimed = 0;
    for task in tasks {
        let (a, c) = task.await.unwrap();
        added += usize::from(a);
        claimed += usize::from(c);
    }
    assert_eq!(added, 3, "exactly three adds saw fewer than three members");
    assert_eq!(claimed, 1, "exactly one claim saw the field absent");
    let size = store
        .txn(Txn::new().when([Compare::size(&bounded, Kind::Set, CompareOp::Equal, 3)]))
        .await
        .unwrap();
    assert!(size.succeeded, "the set holds three members");
}
