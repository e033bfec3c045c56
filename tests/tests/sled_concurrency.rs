//! SledStore under concurrent writers: one revision per transaction, watchers see every
//! revision exactly once and in order, and collections stay consistent with plain keys.

use futures::StreamExt;
use keyplane_core::{
    CollectionOp, CollectionResult, PutOptions, RangeOptions, Store, WatchOptions,
};
use keyplane_sled::{SledConfig, SledStore};
use std::time::Duration;
use tempfile::TempDir;

const WRITERS: usize = 4;
const PUTS: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_give_watchers_every_revision_once_in_order() {
    let dir = TempDir::new().unwrap();
    let store = SledStore::open(SledConfig::new(dir.path())).unwrap();
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

#[tokio::test]
async fn collections_survive_restarts_and_are_deleted_with_their_prefix() {
    let dir = TempDir::new().unwrap();
    let store = SledStore::open(SledConfig::new(dir.path())).unwrap();
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

    let store = SledStore::open(SledConfig::new(dir.path())).unwrap();
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
