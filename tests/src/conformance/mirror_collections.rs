//! A [`Mirror`](keyplane_core::mirror::Mirror) with collections: sets, maps and lists
//! mirrored beside plain keys, on every backend.

use futures::StreamExt;
use keyplane_core::keyspace::{Key, Prefix};
use keyplane_core::mirror::MirrorSnapshot;
use keyplane_core::{
    CollectionChange, CollectionKind, CollectionOp, CollectionResult, CollectionValue,
    RangeOptions, Store, Txn, TxnOp,
};
use std::collections::BTreeMap;
use std::sync::Arc;

use super::mirror::{Case, ItemKey, timed};

/// The key of collection `id` of the case (it parses as an [`ItemKey`]).
fn collection_key(case: &Case, id: u64) -> Vec<u8> {
    case.key(id).encode().into_bytes()
}

/// A mirror with collections.
async fn collection_mirror(case: &Case) -> keyplane_core::mirror::Mirror<ItemKey, String> {
    case.typed
        .mirror(&case.dir())
        .unwrap()
        .with_collections()
        .start()
        .await
        .unwrap()
}

/// Every collection under the case's directory, read now (the store must be quiet): raw key
/// and kind → contents.
async fn read_collections(case: &Case) -> BTreeMap<(Vec<u8>, CollectionKind), CollectionValue> {
    let store = case.typed.store();
    let prefix = case.dir().encode().into_bytes();
    let page = store
        .range(RangeOptions::prefix(&prefix).with_collections())
        .await
        .unwrap();
    assert!(page.next.is_none(), "one page holds the case's keys");
    let mut all = BTreeMap::new();
    for c in page.collections {
        let contents = match c.kind {
            CollectionKind::Set => match store
                .collection(CollectionOp::SetMembers { key: c.key.clone() })
                .await
                .unwrap()
            {
                CollectionResult::Members(m) => CollectionValue::Set(m.into_iter().collect()),
                other => panic!("{other:?}"),
            },
            CollectionKind::Map => match store
                .collection(CollectionOp::MapGetAll { key: c.key.clone() })
                .await
                .unwrap()
            {
                CollectionResult::Fields(f) => CollectionValue::Map(f.into_iter().collect()),
                other => panic!("{other:?}"),
            },
            CollectionKind::List => match store
                .collection(CollectionOp::ListRange {
                    key: c.key.clone(),
                    start: 0,
                    stop: -1,
                })
                .await
                .unwrap()
            {
                CollectionResult::Items(i) => CollectionValue::List(i),
                other => panic!("{other:?}"),
            },
        };
        all.insert((c.key, c.kind), contents);
    }
    all
}

/// The collections a view holds, as [`read_collections`] gives them.
fn mirrored_collections(
    view: &MirrorSnapshot<ItemKey, String>,
) -> BTreeMap<(Vec<u8>, CollectionKind), CollectionValue> {
    view.collections()
        .map(|(k, c)| ((k.encode().into_bytes(), c.kind()), c.clone()))
        .collect()
}

fn set_add(key: &[u8], member: &str) -> TxnOp {
    TxnOp::Collection(CollectionOp::SetAdd {
        key: key.to_vec(),
        member: member.as_bytes().to_vec(),
    })
}

fn list_push(key: &[u8], item: &str) -> TxnOp {
    TxnOp::Collection(CollectionOp::ListPush {
        key: key.to_vec(),
        value: item.as_bytes().to_vec(),
    })
}

/// A mirror with collections loads the sets, maps and lists of its range with the plain
/// keys, then follows their changes (a deleted one disappears), and its subscribers get the
/// collection changes of each transaction.
pub async fn mirror_with_collections_lists_then_follows(store: Arc<dyn Store>) {
    let case = Case::new(store.clone());
    case.put(0, "plain").await;
    let (set, map, list) = (
        collection_key(&case, 1),
        collection_key(&case, 2),
        collection_key(&case, 3),
    );
    store
        .txn(Txn::new().and_then([
            set_add(&set, "a"),
            set_add(&set, "b"),
            TxnOp::Collection(CollectionOp::MapPut {
                key: map.clone(),
                field: b"f".to_vec(),
                value: b"v".to_vec(),
            }),
            list_push(&list, "x"),
            list_push(&list, "y"),
        ]))
        .await
        .unwrap();
    let mirror = collection_mirror(&case).await;
    let view = mirror.snapshot();
    assert_eq!(view.len(), 1);
    assert_eq!(view.collection_count(), 3);
    assert_eq!(mirrored_collections(&view), read_collections(&case).await);
    let members: Vec<&[u8]> = view
        .set(&case.key(1))
        .unwrap()
        .iter()
        .map(Vec::as_slice)
        .collect();
    assert_eq!(members, [&b"a"[..], b"b"]);
    assert_eq!(view.map(&case.key(2)).unwrap()[&b"f"[..]], b"v");
    assert_eq!(
        view.list(&case.key(3)).unwrap(),
        [b"x".to_vec(), b"y".to_vec()]
    );
    assert!(view.set(&case.key(3)).is_none(), "a list is not a set");

    let mut changes = mirror.subscribe();
    let written = store
        .txn(Txn::new().and_then([
            TxnOp::put(collection_key(&case, 0), "changed"),
            set_add(&set, "c"),
            TxnOp::Collection(CollectionOp::ListRotate { key: list.clone() }),
            TxnOp::delete(&map),
        ]))
        .await
        .unwrap()
        .revision;
    let view = timed("the mirror catching up", mirror.wait_for(written))
        .await
        .unwrap();
    assert_eq!(mirrored_collections(&view), read_collections(&case).await);
    assert!(view.map(&case.key(2)).is_none(), "a deleted map disappears");
    assert_eq!(
        view.list(&case.key(3)).unwrap(),
        [b"y".to_vec(), b"x".to_vec()]
    );
    assert_eq!(view.get(&case.key(0)).unwrap().value, "changed");
    let batch = timed("the subscription", changes.next()).await.unwrap();
    assert_eq!((batch.revision, batch.events.len()), (written, 1));
    let described: Vec<(u64, CollectionChange)> = batch
        .collections
        .iter()
        .map(|e| {
            (
                ItemKey::parse(std::str::from_utf8(&e.key).unwrap())
                    .unwrap()
                    .id,
                e.change.clone(),
            )
        })
        .collect();
    assert!(described.contains(&(
        1,
        CollectionChange::SetAdd {
            member: b"c".to_vec()
        }
    )));
    assert!(described.contains(&(
        3,
        CollectionChange::ListRotate {
            item: b"x".to_vec()
        }
    )));
    assert!(described.contains(&(2, CollectionChange::Deleted)));
    let health = mirror.health();
    assert_eq!((health.relists, health.collections), (0, 2));
}

/// With collections too, readers never see part of a transaction, including while the
/// mirror loads under a running writer: each transaction sets a counter and adds one member
/// to a set and one item to a list, so every view has as many members and items as the
/// counter says.
pub async fn mirror_with_collections_never_shows_half_a_transaction(store: Arc<dyn Store>) {
    let case = Arc::new(Case::new(store.clone()));
    let (set, list, counter) = (
        collection_key(&case, 1),
        collection_key(&case, 2),
        collection_key(&case, 0),
    );
    let generation = move |g: u64| {
        Txn::new().and_then([
            TxnOp::put(&counter, g.to_string()),
            set_add(&set, &format!("m{g}")),
            list_push(&list, &format!("i{g}")),
        ])
    };
    for g in 1..=10 {
        store.txn(generation(g)).await.unwrap();
    }
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut last = 0;
            for g in 11..=80 {
                last = store.txn(generation(g)).await.unwrap().revision;
                tokio::task::yield_now().await;
            }
            last
        })
    };
    // Loaded while the writer runs.
    let mirror = collection_mirror(&case).await;
    let check = |view: &MirrorSnapshot<ItemKey, String>| {
        let count: usize = view
            .get(&case.key(0))
            .map_or(0, |v| v.value.parse().unwrap());
        let members = view.set(&case.key(1)).map_or(0, |s| s.len());
        let items = view.list(&case.key(2)).map_or(0, <[_]>::len);
        assert_eq!(
            (members, items),
            (count, count),
            "a view with part of a transaction at {}",
            view.revision()
        );
    };
    // At least one view while the writer may still run: a fast writer can finish before
    // this task is first polled.
    let mut checks = 0u64;
    loop {
        check(&mirror.snapshot());
        checks += 1;
        if writer.is_finished() {
            break;
        }
        tokio::task::yield_now().await;
    }
    let last = writer.await.unwrap();
    let view = timed("the mirror catching up", mirror.wait_for(last))
        .await
        .unwrap();
    check(&view);
    assert!(checks > 0);
    assert_eq!(view.set(&case.key(1)).unwrap().len(), 80);
    assert_eq!(mirrored_collections(&view), read_collections(&case).await);
}

/// Concurrent writers on sets, maps, lists and plain keys, the mirror started in the
/// middle: it converges to exactly what the store holds.
pub async fn mirror_with_collections_converges(store: Arc<dyn Store>) {
    let case = Arc::new(Case::new(store.clone()));
    let write = |case: Arc<Case>, w: u64| async move {
        let store = case.typed.store().clone();
        let mut last = 0;
        for i in 0..30u64 {
            let id = (w * 5 + i * 3) % 9;
            let key = collection_key(&case, id);
            let member = format!("v{}", i % 4).into_bytes();
            let op = match id % 3 {
                0 if i % 3 == 0 => CollectionOp::SetRemove { key, member },
                0 => CollectionOp::SetAdd { key, member },
                1 if i % 4 == 0 => CollectionOp::MapDelete { key, field: member },
                1 => CollectionOp::MapPut {
                    key,
                    field: member,
                    value: format!("{w}-{i}").into_bytes(),
                },
                _ if i % 5 == 0 => CollectionOp::ListRemove { key, value: member },
                _ if i % 5 == 1 => CollectionOp::ListRotate { key },
                _ => CollectionOp::ListPush { key, value: member },
            };
            let plain = TxnOp::put(collection_key(&case, 10 + w), format!("{i}"));
            last = store
                .txn(Txn::new().and_then([TxnOp::Collection(op), plain]))
                .await
                .unwrap()
                .revision;
        }
        last
    };
    let early: Vec<_> = (0..2)
        .map(|w| tokio::spawn(write(Arc::clone(&case), w)))
        .collect();
    let mirror = collection_mirror(&case).await;
    let late: Vec<_> = (2..4)
        .map(|w| tokio::spawn(write(Arc::clone(&case), w)))
        .collect();
    let mut last = 0;
    for writer in early.into_iter().chain(late) {
        last = last.max(writer.await.unwrap());
    }
    let view = timed("the mirror converging", mirror.wait_for(last))
        .await
        .unwrap();
    assert_eq!(mirrored_collections(&view), read_collections(&case).await);
    case.assert_exact(&view).await;
    assert_eq!(mirror.health().relists, 0);
}
