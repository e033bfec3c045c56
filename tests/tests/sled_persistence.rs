//! SledStore across restarts: revisions, watch resume, leases, retention, the directory lock
//! and the layout version.

use futures::StreamExt;
use keyplane_core::{ErrorKind, Event, PutOptions, Store, WatchBatch, WatchOptions, WatchStream};
use keyplane_sled::{Durability, SledConfig, SledStore};
use std::path::Path;
use std::time::Duration;
use tempfile::TempDir;

/// A generous bound for an event that is already due, so a broken store fails instead of
/// hanging.
const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

async fn open(dir: &Path) -> SledStore {
    SledStore::open(SledConfig::new(dir))
        .await
        .expect("open the sled store")
}

/// Opens the directory with sled itself, after a store was dropped. sled releases the
/// directory lock a moment after the last handle is dropped, which may be the store's lease
/// task's, ending on this runtime; so this waits for it without blocking the runtime, as
/// `SledStore::open` does.
async fn open_raw(dir: &Path) -> sled::Db {
    let started = std::time::Instant::now();
    loop {
        match sled::open(dir) {
            Ok(db) => return db,
            Err(_) if started.elapsed() < EVENT_TIMEOUT => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(err) => panic!("sled did not release the directory: {err}"),
        }
    }
}

async fn next_batch(stream: &mut WatchStream) -> WatchBatch {
    tokio::time::timeout(EVENT_TIMEOUT, stream.next())
        .await
        .expect("a watch batch within the timeout")
        .expect("the watch stream does not end")
        .expect("a watch batch, not an error")
}

async fn put(store: &SledStore, key: &str, value: &str) -> i64 {
    store
        .put(key.as_bytes(), value.as_bytes(), PutOptions::default())
        .await
        .expect("put")
        .revision
}

#[tokio::test]
async fn revisions_keep_increasing_across_restarts() {
    let dir = TempDir::new().unwrap();
    let store = open(dir.path()).await;
    assert_eq!(store.revision().await.unwrap(), 0);
    assert_eq!(put(&store, "a", "1").await, 1);
    assert_eq!(put(&store, "b", "1").await, 2);
    let rev = put(&store, "a", "2").await;
    assert_eq!(rev, 3);
    drop(store);

    let store = open(dir.path()).await;
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
    let store = open(dir.path()).await;
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
    let store = open(dir.path()).await;
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
async fn a_directory_open_in_this_process_is_a_clear_error() {
    let dir = TempDir::new().unwrap();
    let holder = open(dir.path()).await;
    let err = SledStore::open(SledConfig::new(dir.path()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(!err.is_retryable());
    assert!(
        err.to_string().contains("already open in this process"),
        "unclear message: {err}"
    );
    // Closing the store releases the directory.
    drop(holder);
    open(dir.path()).await;
}

/// Dropping the last handle and opening the directory again always works, even while the
/// store's lease expiry task (woken by a lease on every round) still holds it for a moment;
/// a clone kept elsewhere still makes the second open a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_reopens_at_once_after_its_last_handle_is_dropped() {
    let dir = TempDir::new().unwrap();
    for _ in 0..200 {
        let store = open(dir.path()).await;
        let lease = store.lease_grant(Duration::from_secs(60)).await.unwrap();
        store.lease_revoke(lease.id).await.unwrap();
        drop(store);
    }
    let store = open(dir.path()).await;
    let clone = store.clone();
    drop(store);
    let err = SledStore::open(SledConfig::new(dir.path()))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("already open in this process"),
        "{err}"
    );
    drop(clone);
}

#[tokio::test]
async fn an_incompatible_layout_version_is_corrupted() {
    let dir = TempDir::new().unwrap();
    let store = open(dir.path()).await;
    put(&store, "k", "v").await;
    drop(store);
    {
        let db = open_raw(dir.path()).await;
        let meta = db.open_tree("kv.meta").unwrap();
        meta.insert("format_version", &99i64.to_be_bytes()).unwrap();
        db.flush().unwrap();
    }
    let err = SledStore::open(SledConfig::new(dir.path()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupted, "{err}");
    assert!(err.to_string().contains("layout version 99"), "{err}");
}

#[tokio::test]
async fn a_foreign_sled_database_is_rejected() {
    let dir = TempDir::new().unwrap();
    {
        let db = sled::open(dir.path()).unwrap();
        db.open_tree("kv.data").unwrap().insert("k", "v").unwrap();
        db.flush().unwrap();
    }
    let err = SledStore::open(SledConfig::new(dir.path()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupted, "{err}");
}

#[tokio::test]
async fn the_consistency_check_detects_a_dangling_lease_attachment() {
    let dir = TempDir::new().unwrap();
    let store = open(dir.path()).await;
    let lease = store.lease_grant(Duration::from_secs(600)).await.unwrap();
    store
        .put(b"leased", b"v", PutOptions::default().lease(lease.id))
        .await
        .unwrap();
    store.check_consistency().unwrap();
    drop(store);
    {
        // Remove the record that lists `leased` under its lease.
        let db = open_raw(dir.path()).await;
        let leases = db.open_tree("kv.leases").unwrap();
        let attachments: Vec<_> = leases
            .scan_prefix(b"K")
            .keys()
            .map(Result::unwrap)
            .collect();
        assert_eq!(attachments.len(), 1);
        leases.remove(&attachments[0]).unwrap();
        db.flush().unwrap();
    }
    let store = open(dir.path()).await;
    let err = store.check_consistency().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupted, "{err}");
}

#[tokio::test]
async fn lease_expiry_while_open_deletes_its_keys_in_one_revision() {
    let dir = TempDir::new().unwrap();
    let store = open(dir.path()).await;
    let lease = store.lease_grant(Duration::from_millis(200)).await.unwrap();
    let mut watch = store.watch(WatchOptions::prefix("l/")).await.unwrap();
    for key in ["l/a", "l/b"] {
        store
            .put(key.as_bytes(), b"v", PutOptions::default().lease(lease.id))
            .await
            .unwrap();
    }
    next_batch(&mut watch).await;
    let put_rev = next_batch(&mut watch).await.revision;
    // The expiry task deletes both keys in one revision once the deadline passes.
    let batch = next_batch(&mut watch).await;
    assert_eq!(batch.revision, put_rev + 1);
    let keys: Vec<&[u8]> = batch.events.iter().map(Event::key).collect();
    assert_eq!(keys, [b"l/a".as_slice(), b"l/b".as_slice()]);
    assert!(
        batch
            .events
            .iter()
            .all(|e| matches!(e, Event::Delete { .. }))
    );
    assert_eq!(
        store.lease_time_to_live(lease.id).await.unwrap_err().kind(),
        ErrorKind::LeaseNotFound
    );
    store.check_consistency().unwrap();
}

#[tokio::test]
async fn leases_that_expired_while_closed_expire_on_reopen() {
    let dir = TempDir::new().unwrap();
    let store = open(dir.path()).await;
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

    let store = open(dir.path()).await;
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
    let store = open(dir.path()).await;
    let first = store.lease_grant(Duration::from_secs(60)).await.unwrap();
    store.lease_revoke(first.id).await.unwrap();
    drop(store);
    let store = open(dir.path()).await;
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
    let config = SledConfig::new(dir.path()).history_retention(5);
    let store = SledStore::open(config.clone()).await.unwrap();
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

    let store = SledStore::open(config).await.unwrap();
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
async fn buffered_durability_keeps_flushed_writes() {
    let dir = TempDir::new().unwrap();
    let config = SledConfig::new(dir.path()).durability(Durability::Buffered {
        flush_interval: Duration::from_millis(50),
    });
    let store = SledStore::open(config.clone()).await.unwrap();
    put(&store, "b", "1").await;
    store.flush().await.unwrap();
    drop(store);
    let store = SledStore::open(config).await.unwrap();
    assert_eq!(store.get(b"b").await.unwrap().unwrap().value, b"1");
}

#[tokio::test]
async fn a_put_with_an_unknown_lease_writes_nothing() {
    let dir = TempDir::new().unwrap();
    let store = open(dir.path()).await;
    let err = store
        .txn(keyplane_core::Txn::new().and_then([
            keyplane_core::TxnOp::put("x", "1"),
            keyplane_core::TxnOp::put_with_lease("y", "1", keyplane_core::LeaseId(4242)),
        ]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseNotFound);
    assert!(store.get(b"x").await.unwrap().is_none());
    assert_eq!(store.revision().await.unwrap(), 0);
}

/// The revisions of the log records in the raw database: each record's key is its last
/// revision.
async fn log_record_keys(dir: &Path) -> Vec<i64> {
    let db = open_raw(dir).await;
    let log = db.open_tree("kv.log").unwrap();
    log.iter()
        .keys()
        .map(|k| i64::from_be_bytes(k.unwrap().as_ref().try_into().unwrap()))
        .collect()
}

/// The state of `g/` after each revision, as a watch from revision 1 delivers it.
async fn states_by_revision(
    store: &SledStore,
    last: i64,
) -> Vec<std::collections::BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut watch = store
        .watch(WatchOptions::prefix("g/").from_revision(1))
        .await
        .unwrap();
    let mut state = std::collections::BTreeMap::new();
    let mut states = vec![state.clone()];
    while (states.len() as i64) <= last {
        let batch = next_batch(&mut watch).await;
        assert_eq!(
            batch.revision,
            states.len() as i64,
            "every revision once, in order"
        );
        for event in batch.events {
            match event {
                Event::Put { entry, .. } => {
                    state.insert(entry.key, entry.value);
                }
                other => panic!("only puts were written: {other:?}"),
            }
        }
        states.push(state.clone());
    }
    states
}

/// Every revision from `first` can be watched from and listed at, whatever log record holds
/// it.
async fn history_reads_back(
    store: &SledStore,
    first: i64,
    states: &[std::collections::BTreeMap<Vec<u8>, Vec<u8>>],
) {
    let last = states.len() as i64 - 1;
    for revision in first..=last {
        let mut watch = store
            .watch(WatchOptions::prefix("g/").from_revision(revision))
            .await
            .unwrap();
        assert_eq!(next_batch(&mut watch).await.revision, revision);
        let page = store
            .range(keyplane_core::RangeOptions::prefix("g/").at_revision(revision))
            .await
            .unwrap();
        let listed: std::collections::BTreeMap<_, _> =
            page.entries.into_iter().map(|e| (e.key, e.value)).collect();
        assert_eq!(
            listed, states[revision as usize],
            "the listing at {revision}"
        );
    }
}

/// Concurrent writers are committed in groups whose revisions share one log record; every
/// revision inside such a record is still watched from and listed at on its own, a
/// compaction to the middle of one keeps exactly its later revisions, and all of it holds
/// after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_writes_share_log_records_and_every_revision_stays_readable() {
    const TASKS: usize = 16;
    const PUTS: usize = 20;
    let dir = TempDir::new().unwrap();
    let config = SledConfig::new(dir.path()).durability(Durability::Buffered {
        flush_interval: Duration::from_millis(50),
    });
    let store = SledStore::open(config.clone()).await.unwrap();
    let writers: Vec<_> = (0..TASKS)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..PUTS {
                    put(&store, &format!("g/{t}/{}", i % 5), &format!("{t}.{i}")).await;
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let last = (TASKS * PUTS) as i64;
    assert_eq!(store.revision().await.unwrap(), last);
    let states = states_by_revision(&store, last).await;
    history_reads_back(&store, 1, &states).await;
    store.check_consistency().unwrap();
    drop(store);

    let keys = log_record_keys(dir.path()).await;
    assert_eq!(keys.last(), Some(&last));
    assert!(
        keys.len() < last as usize,
        "{} log records for {last} revisions: no group shared one",
        keys.len()
    );
    // A record of three revisions or more: compacting to its second revision keeps the
    // record, and exactly the revisions from there on.
    let (before, end) = keys
        .windows(2)
        .map(|w| (w[0], w[1]))
        .chain(keys.first().map(|&k| (0, k)))
        .find(|(before, end)| end - before >= 3)
        .expect("a group of three writes or more");
    let compact = before + 2;
    let store = SledStore::open(config.clone()).await.unwrap();
    store.compact(compact).await.unwrap();
    let checks = async |store: &SledStore| {
        let err = store
            .watch(WatchOptions::prefix("g/").from_revision(compact - 1))
            .await
            .err()
            .expect("the revision before the compaction is gone");
        assert_eq!(err.compact_revision(), Some(compact));
        let err = store
            .range(keyplane_core::RangeOptions::prefix("g/").at_revision(compact - 1))
            .await
            .unwrap_err();
        assert_eq!(err.compact_revision(), Some(compact), "{err}");
        history_reads_back(store, compact, &states).await;
        store.check_consistency().unwrap();
    };
    checks(&store).await;
    drop(store);
    // The records that end before the compaction are removed; the one it falls in stays.
    assert_eq!(log_record_keys(dir.path()).await.first(), Some(&end));
    let store = SledStore::open(config).await.unwrap();
    checks(&store).await;
}

/// A database of layout version 1, whose log records hold one revision each, opens with
/// its whole history, takes grouped writes, and is marked with the current version, which
/// an older build refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layout_version_1_database_is_read_and_upgraded() {
    let dir = TempDir::new().unwrap();
    let store = open(dir.path()).await;
    // One writer at a time: every record holds one revision, as version 1 wrote them.
    for i in 0..10 {
        put(&store, &format!("g/{}", i % 3), &i.to_string()).await;
    }
    drop(store);
    assert_eq!(
        log_record_keys(dir.path()).await,
        (1..=10).collect::<Vec<_>>()
    );
    let version = async |dir: &Path| {
        let db = open_raw(dir).await;
        let meta = db.open_tree("kv.meta").unwrap();
        let v = meta.get("format_version").unwrap().unwrap();
        i64::from_be_bytes(v.as_ref().try_into().unwrap())
    };
    {
        let db = open_raw(dir.path()).await;
        let meta = db.open_tree("kv.meta").unwrap();
        meta.insert("format_version", &1i64.to_be_bytes()).unwrap();
        db.flush().unwrap();
    }
    let store = open(dir.path()).await;
    let states = states_by_revision(&store, 10).await;
    history_reads_back(&store, 1, &states).await;
    let writers: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move { put(&store, &format!("g/new/{t}"), "v").await })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let states = states_by_revision(&store, 18).await;
    history_reads_back(&store, 1, &states).await;
    store.check_consistency().unwrap();
    drop(store);
    assert_eq!(version(dir.path()).await, 2);
}
