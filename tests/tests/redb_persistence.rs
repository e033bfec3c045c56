//! RedbStore across restarts and under concurrent writers: revisions, watch resume, leases,
//! retention and compaction, the file lock, the layout version, buffered durability, and
//! writes committed together.

use futures::StreamExt;
use keyplane_core::{
    Compare, CompareOp, ErrorKind, Event, LeaseId, PutOptions, Store, Txn, TxnOp, WatchBatch,
    WatchOptions, WatchStream,
};
use keyplane_redb::{Durability, RedbConfig, RedbStore};
use std::path::PathBuf;
use std::time::Duration;
use tempfile::TempDir;

/// A generous bound for an event that is already due, so a broken store fails instead of
/// hanging.
const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

/// The database file of a test's directory.
fn file(dir: &TempDir) -> PathBuf {
    dir.path().join("store.redb")
}

async fn open(dir: &TempDir) -> RedbStore {
    RedbStore::open(RedbConfig::new(file(dir)))
        .await
        .expect("open the redb store")
}

async fn next_batch(stream: &mut WatchStream) -> WatchBatch {
    tokio::time::timeout(EVENT_TIMEOUT, stream.next())
        .await
        .expect("a watch batch within the timeout")
        .expect("the watch stream does not end")
        .expect("a watch batch, not an error")
}

async fn put(store: &RedbStore, key: &str, value: &str) -> i64 {
    store
        .put(key.as_bytes(), value.as_bytes(), PutOptions::default())
        .await
        .expect("put")
        .revision
}

#[tokio::test]
async fn revisions_keep_increasing_across_restarts() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    assert_eq!(store.revision().await.unwrap(), 0);
    assert_eq!(put(&store, "a", "1").await, 1);
    assert_eq!(put(&store, "b", "1").await, 2);
    let rev = put(&store, "a", "2").await;
    assert_eq!(rev, 3);
    drop(store);

    let store = open(&dir).await;
    assert_eq!(store.revision().await.unwrap(), rev);
    let entry = store
        .get(b"a")
        .await
        .unwrap()
        .expect("a survives the restart");
    assert_eq!(
        (entry.create_revision, entry.mod_revision, entry.version),
        (1, 3, 2)
    );
    assert_eq!(put(&store, "c", "1").await, rev + 1);
    store.check_consistency().unwrap();
}

#[tokio::test]
async fn watch_resumes_after_restart_from_a_pre_restart_revision() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    let mut live = store
        .watch(WatchOptions::prefix("w/").from_revision(1))
        .await
        .unwrap();
    put(&store, "w/1", "a").await;
    let seen = put(&store, "w/2", "b").await;
    store.delete(b"w/1").await.unwrap();
    put(&store, "other", "x").await;
    assert_eq!(next_batch(&mut live).await.revision, 1);
    assert_eq!(next_batch(&mut live).await.revision, seen);
    drop(live);
    drop(store);

    // The watcher saw `seen` before the restart and resumes right after it.
    let store = open(&dir).await;
    let mut resumed = store
        .watch(
            WatchOptions::prefix("w/")
                .from_revision(seen + 1)
                .with_prev(),
        )
        .await
        .unwrap();
    let batch = next_batch(&mut resumed).await;
    assert_eq!(batch.revision, seen + 1);
    match batch.events.as_slice() {
        [
            Event::Delete {
                key,
                prev: Some(prev),
            },
        ] => {
            assert_eq!(key, b"w/1");
            assert_eq!(prev.value, b"a");
        }
        other => panic!("expected the delete of w/1, got {other:?}"),
    }
    // Then live events of the new process, with nothing in between.
    let rev = put(&store, "w/3", "c").await;
    assert_eq!(rev, seen + 3);
    let batch = next_batch(&mut resumed).await;
    assert_eq!(batch.revision, rev);
    assert_eq!(batch.events[0].key(), b"w/3");
}

#[tokio::test]
async fn leases_that_expired_while_closed_expire_on_reopen() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    let short = store.lease_grant(Duration::from_millis(100)).await.unwrap();
    let long = store.lease_grant(Duration::from_secs(600)).await.unwrap();
    store
        .put(b"short", b"v", PutOptions::default().lease(short.id))
        .await
        .unwrap();
    let rev = store
        .put(b"long", b"v", PutOptions::default().lease(long.id))
        .await
        .unwrap()
        .revision;
    drop(store);
    // The deadline is wall-clock time: it has to pass while the store is closed.
    std::thread::sleep(Duration::from_millis(150));

    let store = open(&dir).await;
    assert!(store.get(b"short").await.unwrap().is_none());
    assert!(store.get(b"long").await.unwrap().is_some());
    assert_eq!(
        store.lease_keep_alive(short.id).await.unwrap_err().kind(),
        ErrorKind::LeaseNotFound
    );
    let info = store.lease_time_to_live(long.id).await.unwrap();
    assert_eq!(info.keys, vec![b"long".to_vec()]);
    assert_eq!(store.revision().await.unwrap(), rev + 1);
    let mut watch = store
        .watch(WatchOptions::key("short").from_revision(rev + 1))
        .await
        .unwrap();
    let batch = next_batch(&mut watch).await;
    assert!(matches!(batch.events[0], Event::Delete { .. }));
    store.check_consistency().unwrap();
}

#[tokio::test]
async fn lease_ids_are_not_reused_after_a_restart() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    let first = store.lease_grant(Duration::from_secs(60)).await.unwrap();
    store.lease_revoke(first.id).await.unwrap();
    drop(store);
    let store = open(&dir).await;
    let second = store.lease_grant(Duration::from_secs(60)).await.unwrap();
    assert_ne!(first.id, second.id);
    assert_eq!(
        store.lease_revoke(first.id).await.unwrap_err().kind(),
        ErrorKind::LeaseNotFound
    );
}

#[tokio::test]
async fn history_retention_and_compaction_survive_restarts() {
    let dir = TempDir::new().unwrap();
    let config = RedbConfig::new(file(&dir)).history_retention(5);
    let store = RedbStore::open(config.clone()).await.unwrap();
    for i in 0..20 {
        put(&store, "h", &i.to_string()).await;
    }
    let err = store
        .watch(WatchOptions::key("h").from_revision(1))
        .await
        .err()
        .expect("revision 1 is beyond the retention");
    assert_eq!(err.compact_revision(), Some(16));
    let mut early = store
        .watch(WatchOptions::key("h").from_revision(16))
        .await
        .unwrap();
    let mut watch = store
        .watch(WatchOptions::key("h").from_revision(16))
        .await
        .unwrap();
    assert_eq!(next_batch(&mut early).await.revision, 16);

    store.compact(18).await.unwrap();
    assert_eq!(
        store.compact(17).await.unwrap_err().compact_revision(),
        Some(18)
    );
    assert_eq!(
        store.compact(21).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // A stream that had not read revision 16 yet gets the error as its next item.
    drop(early);
    let err = tokio::time::timeout(EVENT_TIMEOUT, watch.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.compact_revision(), Some(18));
    store.check_consistency().unwrap();
    drop(watch);
    drop(store);

    let store = RedbStore::open(config).await.unwrap();
    let err = store
        .watch(WatchOptions::key("h").from_revision(17))
        .await
        .err()
        .expect("the compaction is persisted");
    assert_eq!(err.compact_revision(), Some(18));
    let mut watch = store
        .watch(WatchOptions::key("h").from_revision(18))
        .await
        .unwrap();
    assert_eq!(next_batch(&mut watch).await.revision, 18);
    store.check_consistency().unwrap();
}

#[tokio::test]
async fn a_file_open_in_this_process_is_a_clear_error() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    let err = RedbStore::open(RedbConfig::new(file(&dir)))
        .await
        .expect_err("the file is open");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(!err.is_retryable());
    drop(store);
    // Closed with its last handle: the file opens again at once.
    put(&open(&dir).await, "k", "v").await;
}

/// A file in directories that do not exist yet (kvctl's default store on a new machine):
/// they are created, and the store reopens from there.
#[tokio::test]
async fn missing_directories_above_the_file_are_created() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("data").join("kvctl").join("store.redb");
    let store = RedbStore::open(RedbConfig::new(&path)).await.expect("open");
    put(&store, "k", "v").await;
    drop(store);
    let store = RedbStore::open(RedbConfig::new(&path))
        .await
        .expect("reopen");
    assert_eq!(store.get(b"k").await.unwrap().unwrap().value, b"v");
    // A directory where the file should be is an error, and no file is made.
    let err = RedbStore::open(RedbConfig::new(dir.path().join("data")))
        .await
        .expect_err("a directory is not a database file");
    assert_eq!(err.kind(), ErrorKind::Backend, "{err}");
}

#[tokio::test]
async fn an_incompatible_layout_version_is_corrupted() {
    let dir = TempDir::new().unwrap();
    drop(open(&dir).await);
    {
        let db = redb::Database::create(file(&dir)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let meta: redb::TableDefinition<'_, &str, i64> = redb::TableDefinition::new("meta");
            let mut meta = txn.open_table(meta).unwrap();
            meta.insert("format_version", 99).unwrap();
        }
        txn.commit().unwrap();
    }
    let err = RedbStore::open(RedbConfig::new(file(&dir)))
        .await
        .expect_err("layout version 99");
    assert_eq!(err.kind(), ErrorKind::Corrupted, "{err}");
    assert!(err.to_string().contains("layout version 99"), "{err}");
}

#[tokio::test]
async fn buffered_writes_are_kept_by_a_flush_and_by_closing() {
    let dir = TempDir::new().unwrap();
    // An interval no test waits for: only the flush and the close make writes durable.
    let config = RedbConfig::new(file(&dir)).durability(Durability::Buffered {
        flush_interval: Duration::from_secs(3600),
    });
    let store = RedbStore::open(config.clone()).await.unwrap();
    put(&store, "b", "1").await;
    store.flush().await.unwrap();
    put(&store, "c", "1").await;
    drop(store);
    let store = RedbStore::open(config).await.unwrap();
    assert_eq!(store.get(b"b").await.unwrap().unwrap().value, b"1");
    assert_eq!(store.get(b"c").await.unwrap().unwrap().value, b"1");
    store.check_consistency().unwrap();
}

/// Writers that queue together commit together, each with its own revision and results,
/// and one that fails (an unknown lease) does not take the others down with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_each_get_their_own_revision() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    let writers = (0..32).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            let lease = (i % 8 == 0).then_some(LeaseId(4242));
            let txn = Txn::new()
                .when([Compare::version(format!("c/{i}"), CompareOp::Equal, 0)])
                .and_then([TxnOp::Put {
                    key: format!("c/{i}").into_bytes(),
                    value: b"v".to_vec(),
                    lease,
                }]);
            (lease, store.txn(txn).await)
        })
    });
    let mut revisions = Vec::new();
    for writer in writers {
        match writer.await.unwrap() {
            (Some(_), Err(err)) => assert_eq!(err.kind(), ErrorKind::LeaseNotFound),
            (None, Ok(resp)) => {
                assert!(resp.succeeded);
                revisions.push(resp.revision);
            }
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    revisions.sort_unstable();
    assert_eq!(revisions, (1..=28).collect::<Vec<_>>());
    assert_eq!(store.revision().await.unwrap(), 28);
    store.check_consistency().unwrap();
    drop(store);
    assert_eq!(open(&dir).await.revision().await.unwrap(), 28);
}
