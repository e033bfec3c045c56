//! SledStore under concurrent writers: one revision per transaction, watchers see every
//! revision exactly once and in order, compares stay exact when transactions are committed
//! in groups, and collections stay consistent with plain keys.

use futures::StreamExt;
use keyplane_core::{
    CollectionOp, CollectionResult, Compare, CompareOp, Event, PutOptions, RangeOptions, Store,
    Txn, TxnOp, WatchOptions,
};
use keyplane_sled::Durability;
use keyplane_sled::{SledConfig, SledStore};
use std::time::Duration;
use tempfile::TempDir;

const WRITERS: usize = 4;
const PUTS: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_give_watchers_every_revision_once_in_order() {
    let dir = TempDir::new().unwrap();
    let store = SledStore::open(SledConfig::new(dir.path())).await.unwrap();
    let mut watch = store
        .watch(WatchOptions::prefix("cw/").from_revision(1))
        .await
        .unwrap();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut revisions = Vec::new();
                for i in 0..PUTS {
                    let key = format!("cw/{w}/{i}");
                    let put = store
                        .put(key.as_bytes(), b"v", PutOptions::default())
                        .await
                        .unwrap();
                    revisions.push(put.revision);
                }
                revisions
            })
        })
        .collect();
    let mut acknowledged = Vec::new();
    for writer in writers {
        acknowledged.extend(writer.await.unwrap());
    }
    acknowledged.sort_unstable();
    let total = (WRITERS * PUTS) as i64;
    assert_eq!(acknowledged, (1..=total).collect::<Vec<_>>());

    let mut seen = Vec::new();
    while seen.len() < WRITERS * PUTS {
        let batch = tokio::time::timeout(Duration::from_secs(20), watch.next())
            .await
            .expect("every revision reaches the watcher")
            .unwrap()
            .unwrap();
        assert_eq!(batch.events.len(), 1);
        seen.push(batch.revision);
    }
    assert_eq!(seen, (1..=total).collect::<Vec<_>>());
    store.check_consistency().unwrap();
}

const CAS_WRITERS: usize = 16;
const COUNTERS: usize = 4;
const CAS_ATTEMPTS: usize = 40;

/// Compare-and-set increments: read a counter, then write its value plus one if its mod
/// revision is still the one read. Returns the revisions of the increments that succeeded,
/// by counter.
async fn increment(store: SledStore, writer: usize) -> Vec<Vec<i64>> {
    let mut won = vec![Vec::new(); COUNTERS];
    for attempt in 0..CAS_ATTEMPTS {
        let counter = (writer + attempt) % COUNTERS;
        let key = format!("cas/{counter}");
        let current = store.get(key.as_bytes()).await.unwrap().unwrap();
        let value: u64 = String::from_utf8(current.value).unwrap().parse().unwrap();
        let resp = store
            .txn(
                Txn::new()
                    .when([Compare::mod_revision(
                        &key,
                        CompareOp::Equal,
                        current.mod_revision,
                    )])
                    .and_then([TxnOp::put(&key, (value + 1).to_string())]),
            )
            .await
            .unwrap();
        if resp.succeeded {
            won[counter].push(resp.revision);
        } else {
            assert!(resp.revision >= current.mod_revision);
        }
    }
    won
}

async fn contended_compare_and_set(durability: Durability) {
    let dir = TempDir::new().unwrap();
    let store = SledStore::open(SledConfig::new(dir.path()).durability(durability))
        .await
        .unwrap();
    for counter in 0..COUNTERS {
        store
            .put(
                format!("cas/{counter}").as_bytes(),
                b"0",
                PutOptions::default(),
            )
            .await
            .unwrap();
    }
    let start = store.revision().await.unwrap();
    let mut watch = store
        .watch(WatchOptions::prefix("cas/").from_revision(start + 1))
        .await
        .unwrap();
    let writers: Vec<_> = (0..CAS_WRITERS)
        .map(|w| tokio::spawn(increment(store.clone(), w)))
        .collect();
    let mut won = vec![Vec::new(); COUNTERS];
    for writer in writers {
        for (counter, revisions) in writer.await.unwrap().into_iter().enumerate() {
            won[counter].extend(revisions);
        }
    }
    let mut revisions: Vec<i64> = won.iter().flatten().copied().collect();
    revisions.sort_unstable();
    let total = revisions.len() as i64;
    assert!(total >= COUNTERS as i64, "some increments succeed");
    assert_eq!(
        revisions,
        (start + 1..=start + total).collect::<Vec<_>>(),
        "every successful increment has its own revision, with none in between"
    );
    for (counter, revisions) in won.iter().enumerate() {
        let entry = store
            .get(format!("cas/{counter}").as_bytes())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            String::from_utf8(entry.value).unwrap(),
            revisions.len().to_string(),
            "counter {counter} counts its successful increments"
        );
        assert_eq!(entry.version, revisions.len() as i64 + 1);
    }
    // The watch sees every increment once, in order, each value one more than the last.
    let mut last = [0u64; COUNTERS];
    for expected in start + 1..=start + total {
        let batch = tokio::time::timeout(Duration::from_secs(20), watch.next())
            .await
            .expect("every revision reaches the watcher")
            .unwrap()
            .unwrap();
        assert_eq!(batch.revision, expected);
        let [Event::Put { entry, .. }] = batch.events.as_slice() else {
            panic!("one put per increment: {batch:?}");
        };
        let counter: usize = std::str::from_utf8(&entry.key["cas/".len()..])
            .unwrap()
            .parse()
            .unwrap();
        let value: u64 = std::str::from_utf8(&entry.value).unwrap().parse().unwrap();
        assert_eq!(value, last[counter] + 1);
        last[counter] = value;
    }
    store.check_consistency().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contended_compare_and_set_stays_exact_with_flush_on_commit() {
    contended_compare_and_set(Durability::FlushOnCommit).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contended_compare_and_set_stays_exact_buffered() {
    contended_compare_and_set(Durability::Buffered {
        flush_interval: Duration::from_millis(50),
    })
    .await;
}

#[tokio::test]
async fn collections_survive_restarts_and_are_deleted_with_their_prefix() {
    let dir = TempDir::new().unwrap();
    let store = SledStore::open(SledConfig::new(dir.path())).await.unwrap();
    let set = |member: &str| CollectionOp::SetAdd {
        key: b"col/s".to_vec(),
        member: member.as_bytes().to_vec(),
    };
    assert_eq!(
        store.collection(set("a")).await.unwrap(),
        CollectionResult::Changed(true)
    );
    store.collection(set("b")).await.unwrap();
    store
        .collection(CollectionOp::ListPush {
            key: b"col/l".to_vec(),
            value: b"x".to_vec(),
        })
        .await
        .unwrap();
    let rev = store.revision().await.unwrap();
    assert_eq!(rev, 3, "each changing collection op is one revision");
    // Adding a member again changes nothing and keeps the revision.
    assert_eq!(
        store.collection(set("a")).await.unwrap(),
        CollectionResult::Changed(false)
    );
    assert_eq!(store.revision().await.unwrap(), rev);
    // Plain reads never see the members.
    let page = store.range(RangeOptions::prefix("col/")).await.unwrap();
    assert!(page.entries.is_empty());
    store.check_consistency().unwrap();
    drop(store);

    let store = SledStore::open(SledConfig::new(dir.path())).await.unwrap();
    assert_eq!(
        store
            .collection(CollectionOp::SetMembers {
                key: b"col/s".to_vec()
            })
            .await
            .unwrap(),
        CollectionResult::Members(vec![b"a".to_vec(), b"b".to_vec()])
    );
    assert_eq!(store.delete_prefix(b"col/").await.unwrap().deleted, 2);
    assert_eq!(
        store
            .collection(CollectionOp::ListLen {
                key: b"col/l".to_vec()
            })
            .await
            .unwrap(),
        CollectionResult::Count(0)
    );
    store.check_consistency().unwrap();
}

/// Large transactions written concurrently, each over keys some of which exist (a bulk
/// write's group reads the span of its keys ahead): every put gets the version, create
/// revision and previous entry the key had, whatever other keys lie in the span and
/// whichever group the transaction joined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_concurrent_transactions_see_every_previous_entry() {
    const TXNS: usize = 8;
    const KEYS: usize = 3000;
    let dir = TempDir::new().unwrap();
    let store = SledStore::open(SledConfig::new(dir.path())).await.unwrap();
    // Every third key exists, at version 2; keys of no transaction sit between them.
    let existing: Vec<usize> = (0..TXNS * KEYS).step_by(3).collect();
    for value in ["a", "b"] {
        for chunk in existing.chunks(1000) {
            let ops = chunk.iter().flat_map(|i| {
                [
                    TxnOp::put(format!("big/{i:06}"), value),
                    TxnOp::put(format!("big/{i:06}/x"), "other"),
                ]
            });
            store.txn(Txn::new().and_then(ops)).await.unwrap();
        }
    }
    let start = store.revision().await.unwrap();
    let mut watch = store
        .watch(
            WatchOptions::prefix("big/")
                .from_revision(start + 1)
                .with_prev(),
        )
        .await
        .unwrap();
    let txns: Vec<_> = (0..TXNS)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                let ops =
                    (t * KEYS..(t + 1) * KEYS).map(|i| TxnOp::put(format!("big/{i:06}"), "c"));
                store.txn(Txn::new().and_then(ops)).await.unwrap().revision
            })
        })
        .collect();
    let mut revisions = Vec::new();
    for txn in txns {
        revisions.push(txn.await.unwrap());
    }
    revisions.sort_unstable();
    assert_eq!(
        revisions,
        ((start + 1)..=(start + TXNS as i64)).collect::<Vec<_>>()
    );
    let mut puts = 0;
    while puts < TXNS * KEYS {
        let batch = tokio::time::timeout(Duration::from_secs(20), watch.next())
            .await
            .expect("every revision reaches the watcher")
            .unwrap()
            .unwrap();
        assert_eq!(batch.events.len(), KEYS);
        for event in batch.events {
            let Event::Put { entry, prev } = event else {
                panic!("only puts were written");
            };
            let i: usize = std::str::from_utf8(&entry.key[4..])
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(entry.value, b"c");
            assert_eq!(entry.mod_revision, batch.revision);
            if i.is_multiple_of(3) {
                let prev = prev.expect("the key existed");
                assert_eq!((prev.value.as_slice(), prev.version), (&b"b"[..], 2));
                assert_eq!(entry.version, 3);
                assert_eq!(entry.create_revision, prev.create_revision);
            } else {
                assert!(prev.is_none(), "big/{i:06} did not exist");
                assert_eq!((entry.version, entry.create_revision), (1, batch.revision));
            }
            puts += 1;
        }
    }
    let other = store.get(b"big/000000/x").await.unwrap().unwrap();
    assert_eq!(other.value, b"other");
    store.check_consistency().unwrap();
}
