//! Replaying collections from their watch events: from a read at some revision, every
//! change after it gives each collection's contents exactly, on every backend.

use super::collection_watch::add;
use super::support::{b, key, next_batch, put, root, run};
use keyplane_core::{
    CollectionKind as Kind, CollectionOp as Op, CollectionResult, CollectionValue, Event, Store,
    Txn, TxnOp, WatchOptions,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The contents of the collections under `root`, read now.
async fn contents(
    store: &dyn Store,
    keys: &[(Vec<u8>, Kind)],
) -> BTreeMap<Vec<u8>, CollectionValue> {
    let mut out = BTreeMap::new();
    for (k, kind) in keys {
        let value = match kind {
            Kind::Set => match run(store, Op::SetMembers { key: k.clone() }).await {
                CollectionResult::Members(m) => CollectionValue::Set(m.into_iter().collect()),
                other => panic!("{other:?}"),
            },
            Kind::Map => match run(store, Op::MapGetAll { key: k.clone() }).await {
                CollectionResult::Fields(f) => CollectionValue::Map(f.into_iter().collect()),
                other => panic!("{other:?}"),
            },
            Kind::List => match run(
                store,
                Op::ListRange {
                    key: k.clone(),
                    start: 0,
                    stop: -1,
                },
            )
            .await
            {
                CollectionResult::Items(i) => CollectionValue::List(i),
                other => panic!("{other:?}"),
            },
        };
        out.insert(k.clone(), value);
    }
    out
}

/// A small deterministic generator (the suite must not depend on a random seed per run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Replaying the events of a watch resumed from a past revision onto the contents read
/// before gives the contents now, across many transactions of mixed ops (several on one
/// list in a transaction, duplicates, removals that empty a collection) from two writers.
pub async fn collection_events_replay_exactly(store: Arc<dyn Store>) {
    let root = root();
    let st = &*store;
    let keys: Vec<(Vec<u8>, Kind)> = vec![
        (key(&root, "set"), Kind::Set),
        (key(&root, "map"), Kind::Map),
        (key(&root, "list"), Kind::List),
        (key(&root, "list2"), Kind::List),
    ];
    run(
        st,
        Op::ListPush {
            key: keys[2].0.clone(),
            value: b("a"),
        },
    )
    .await;
    add(st, &keys[0].0, "a").await;
    let before = contents(st, &keys).await;
    let start = st.revision().await.expect("revision") + 1;

    let writer = |seed: u64| {
        let store = store.clone();
        let keys = keys.clone();
        async move {
            let mut rng = Lcg(seed);
            for _ in 0..30 {
                let mut ops = Vec::new();
                let mut touched = BTreeSet::new();
                for _ in 0..=rng.next(3) {
                    let item = b(["a", "b", "c"][rng.next(3) as usize]);
                    let (k, kind) = keys[rng.next(keys.len() as u64) as usize].clone();
                    let op = match (kind, rng.next(3)) {
                        (Kind::Set, 0) => Op::SetRemove {
                            key: k,
                            member: item,
                        },
                        (Kind::Set, _) => Op::SetAdd {
                            key: k,
                            member: item,
                        },
                        (Kind::Map, 0) => Op::MapDelete {
                            key: k,
                            field: item,
                        },
                        (Kind::Map, n) => Op::MapPut {
                            key: k,
                            field: item,
                            value: vec![b'0' + n as u8, b'0' + rng.next(10) as u8],
                        },
                        (Kind::List, 0) => Op::ListRemove {
                            key: k,
                            value: item,
                        },
                        (Kind::List, 1) => Op::ListRotate { key: k },
                        (Kind::List, _) => Op::ListPush {
                            key: k,
                            value: item,
                        },
                    };
                    // One write per set member or map field per transaction.
                    let member = op.member().map(|(_, m)| (op.key().to_vec(), m.to_vec()));
                    if let Some(member) = member
                        && !touched.insert(member)
                    {
                        continue;
                    }
                    ops.push(TxnOp::Collection(op));
                }
                store
                    .txn(Txn::new().and_then(ops))
                    .await
                    .expect("a writer's txn");
            }
        }
    };
    let (a, b_) = tokio::join!(tokio::spawn(writer(1)), tokio::spawn(writer(2)));
    a.expect("writer");
    b_.expect("writer");
    let after = contents(st, &keys).await;
    // The end of this case's writes (other cases may write to the same server meanwhile).
    let end = put(st, &key(&root, "end"), "").await;

    let mut w = st
        .watch(
            WatchOptions::prefix(&root)
                .with_collections()
                .from_revision(start),
        )
        .await
        .expect("watch");
    let mut replay = before.clone();
    let mut last = start - 1;
    while last < end {
        let batch = next_batch(&mut w).await;
        assert!(batch.revision > last, "revisions increase: {batch:?}");
        last = batch.revision;
        for event in &batch.events {
            let Event::Collection(c) = event else {
                assert_eq!(
                    event.key(),
                    key(&root, "end"),
                    "only collections were written"
                );
                continue;
            };
            let value = replay
                .get_mut(&c.key)
                .unwrap_or_else(|| panic!("an event for an unknown key: {c:?}"));
            assert_eq!(Some(c.kind), Some(value.kind()));
            value.apply(&c.change).unwrap_or_else(|e| {
                panic!("revision {}: {c:?} does not replay: {e}", batch.revision)
            });
        }
    }
    assert_eq!(replay, after, "the replay differs from the store");
}
