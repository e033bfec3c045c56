//! MemStore watches: batches per transaction, resume, prev entries, compaction, retention.

use futures::StreamExt;
use kv_core::{
    ErrorKind, Event, KeyRange, PutOptions, Store, Txn, TxnOp, WatchBatch, WatchOptions,
    WatchStream,
};
use kv_mem::{MemConfig, MemStore};

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

#[tokio::test]
async fn one_batch_per_txn_with_only_the_watched_keys() {
    let store = MemStore::new();
    let mut watch = store.watch(WatchOptions::prefix("w/")).await.unwrap();
    let resp = store
        .txn(Txn::new().and_then([
            TxnOp::put("w/a", "1"),
            TxnOp::put("other", "x"),
            TxnOp::put("w/b", "2"),
        ]))
        .await
        .unwrap();
    // A write outside the range produces no (empty) batch.
    put(&store, "other", "y").await;
    let deleted = store.delete_prefix(b"w/").await.unwrap().deleted;
    assert_eq!(deleted, 2);
    let batch = next(&mut watch).await;
    assert_eq!(batch.revision, resp.revision);
    let keys: Vec<_> = batch.events.iter().map(|e| e.key().to_vec()).collect();
    assert_eq!(keys, vec![b"w/a".to_vec(), b"w/b".to_vec()]);
    let batch = next(&mut watch).await;
    assert_eq!(batch.revision, resp.revision + 2);
    assert_eq!(batch.events.len(), 2);
    assert!(
        batch
            .events
            .iter()
            .all(|e| matches!(e, Event::Delete { prev: None, .. }))
    );
}

#[tokio::test]
async fn resume_replays_then_continues_live_without_gaps_or_duplicates() {
    let store = MemStore::new();
    let revisions = [
        put(&store, "r/k", "1").await,
        put(&store, "r/k", "2").await,
        put(&store, "r/k", "3").await,
    ];
    let mut watch = store
        .watch(WatchOptions::key("r/k").from_revision(revisions[1]))
        .await
        .unwrap();
    let live = put(&store, "r/k", "4").await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let batch = next(&mut watch).await;
        let Event::Put { entry, .. } = &batch.events[0] else {
            panic!("expected a put");
        };
        assert_eq!(entry.mod_revision, batch.revision);
        seen.push(batch.revision);
    }
    assert_eq!(seen, vec![revisions[1], revisions[2], live]);
}

#[tokio::test]
async fn prev_entries_when_asked() {
    let store = MemStore::new();
    put(&store, "p", "old").await;
    let mut watch = store
        .watch(WatchOptions::key("p").with_prev())
        .await
        .unwrap();
    put(&store, "p", "new").await;
    store.delete(b"p").await.unwrap();
    let Event::Put { entry, prev } = &next(&mut watch).await.events[0] else {
        panic!("expected a put");
    };
    assert_eq!(
        (
            entry.value.as_slice(),
            prev.as_ref().unwrap().value.as_slice()
        ),
        (b"new".as_slice(), b"old".as_slice())
    );
    let Event::Delete { key, prev } = &next(&mut watch).await.events[0] else {
        panic!("expected a delete");
    };
    assert_eq!(
        (key.as_slice(), prev.as_ref().unwrap().version),
        (b"p".as_slice(), 2)
    );
}

#[tokio::test]
async fn interval_watches_see_only_their_interval() {
    let store = MemStore::new();
    let range = KeyRange::Interval {
        start: b"b".to_vec(),
        end: Some(b"d".to_vec()),
    };
    let mut watch = store
        .watch(WatchOptions {
            range,
            start_revision: None,
            prev: false,
            collections: false,
        })
        .await
        .unwrap();
    for key in ["a", "b", "c", "d"] {
        put(&store, key, "v").await;
    }
    let keys = [next(&mut watch).await, next(&mut watch).await].map(|b| b.events[0].key().to_vec());
    assert_eq!(keys, [b"b".to_vec(), b"c".to_vec()]);
}

#[tokio::test]
async fn compaction_and_retention_give_compacted_errors() {
    let store = MemStore::with_config(MemConfig {
        history_retention: 3,
        ..MemConfig::default()
    });
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

#[tokio::test]
async fn a_watch_from_a_future_revision_starts_there() {
    let store = MemStore::new();
    let now = store.revision().await.unwrap();
    let mut watch = store
        .watch(WatchOptions::key("f").from_revision(now + 2))
        .await
        .unwrap();
    put(&store, "f", "skipped").await;
    let wanted = put(&store, "f", "seen").await;
    assert_eq!(next(&mut watch).await.revision, wanted);
}
