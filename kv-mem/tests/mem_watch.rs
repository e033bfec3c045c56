//! MemStore watches: exact compaction and retention, unread watchers, the store going away.

use futures::StreamExt;
use keyplane_contract::{ErrorKind, PutOptions, Store, WatchBatch, WatchOptions, WatchStream};
use keyplane_mem::{MemConfig, MemStore};

async fn next(watch: &mut WatchStream) -> WatchBatch {
    watch
        .next()
        .await
        .expect("the watch ended")
        .expect("a batch")
}

async fn put(store: &MemStore, key: &str, value: &str) -> i64 {
    store
        .put(key.as_bytes(), value.as_bytes(), PutOptions::default())
        .await
        .unwrap()
        .revision
}

/// `history_retention` and `compact` give `Compacted` naming exactly the oldest retained
/// revision, from which a watch still starts.
#[tokio::test]
async fn compaction_and_retention_give_compacted_errors() {
    let store = MemStore::open(MemConfig::default().history_retention(3))
        .await
        .unwrap();
    let mut revisions = Vec::new();
    for i in 0..6 {
        revisions.push(put(&store, "c", &i.to_string()).await);
    }
    // Only the last three revisions are retained.
    let err = store
        .watch(WatchOptions::key("c").from_revision(revisions[2]))
        .await
        .err()
        .unwrap();
    assert_eq!(
        err.kind(),
        ErrorKind::Compacted {
            compact_revision: revisions[3]
        }
    );
    let mut watch = store
        .watch(WatchOptions::key("c").from_revision(revisions[3]))
        .await
        .unwrap();
    assert_eq!(next(&mut watch).await.revision, revisions[3]);

    store.compact(revisions[5]).await.unwrap();
    let err = store
        .watch(WatchOptions::key("c").from_revision(revisions[4]))
        .await
        .err()
        .unwrap();
    assert_eq!(err.compact_revision(), Some(revisions[5]));
    let mut watch = store
        .watch(WatchOptions::key("c").from_revision(revisions[5]))
        .await
        .unwrap();
    assert_eq!(next(&mut watch).await.revision, revisions[5]);
}

/// A watcher that is not read never blocks writers, and later gets every batch in order.
#[tokio::test]
async fn a_watcher_that_is_not_read_never_blocks_writers() {
    let store = MemStore::new();
    let mut watch = store.watch(WatchOptions::prefix("busy/")).await.unwrap();
    let first = store.revision().await.unwrap() + 1;
    for i in 0..5_000 {
        put(&store, &format!("busy/{}", i % 7), "v").await;
    }
    for expected in first..first + 5_000 {
        assert_eq!(next(&mut watch).await.revision, expected);
    }
}

/// Dropping the store ends its watches with a final `Unavailable` item after the pending
/// batches.
#[tokio::test]
async fn a_watch_says_why_it_ends_when_the_store_goes_away() {
    let store = MemStore::new();
    let mut watch = store.watch(WatchOptions::prefix("x/")).await.unwrap();
    put(&store, "x/1", "v").await;
    drop(store);
    assert!(watch.next().await.unwrap().is_ok());
    let err = watch.next().await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(watch.next().await.is_none());
}
