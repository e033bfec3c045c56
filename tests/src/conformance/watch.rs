//! Watches: batches per transaction, in order without gaps or duplicates, resumable, with
//! previous values, and `Compacted` for history no longer retained.

use super::bad_input::watch_error;
use super::support::{describe_batch, expect_quiet, key, next_batch, put, root};
use futures::StreamExt;
use keyplane_core::{Event, Store, Txn, TxnOp, WatchBatch, WatchOptions, WatchStream};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Reads batches until `events` events have arrived.
async fn collect_events(stream: &mut WatchStream, events: usize) -> Vec<WatchBatch> {
    let mut batches = Vec::new();
    let mut seen = 0;
    while seen < events {
        let batch = next_batch(stream).await;
        seen += batch.events.len();
        batches.push(batch);
    }
    assert_eq!(seen, events, "more events than written");
    batches
}

/// A key watch sees the key's puts (with its new entry) and deletes, and nothing else.
pub async fn watch_key_sees_puts_and_deletes(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    let mut watch = store.watch(WatchOptions::key(&k)).await.unwrap();
    let r1 = put(&*store, &k, "1").await;
    put(&*store, &key(&root, "k2"), "other").await;
    put(&*store, &key(&root, "j"), "other").await;
    let r2 = put(&*store, &k, "2").await;
    store.delete(&k).await.unwrap();
    let b1 = next_batch(&mut watch).await;
    assert_eq!(b1.revision, r1);
    match &b1.events[..] {
        [Event::Put { entry, prev: None }] => {
            assert_eq!(
                (entry.key.as_slice(), entry.value.as_slice()),
                (k.as_slice(), &b"1"[..])
            );
            assert_eq!(
                (entry.create_revision, entry.mod_revision, entry.version),
                (r1, r1, 1)
            );
        }
        other => panic!("first batch: {other:?}"),
    }
    let b2 = next_batch(&mut watch).await;
    assert_eq!(b2.revision, r2);
    match &b2.events[..] {
        [Event::Put { entry, .. }] => {
            assert_eq!(
                (entry.create_revision, entry.mod_revision, entry.version),
                (r1, r2, 2)
            );
        }
        other => panic!("second batch: {other:?}"),
    }
    let b3 = next_batch(&mut watch).await;
    assert!(b3.revision > r2);
    assert_eq!(describe_batch(&root, &b3), ["delete k"]);
    expect_quiet(&*store, &mut watch, &k).await;
}

/// A transaction's events in the watched range arrive as one batch, in op order.
pub async fn watch_prefix_one_batch_per_txn(store: Arc<dyn Store>) {
    let root = root();
    let dir = key(&root, "p/");
    let mut watch = store.watch(WatchOptions::prefix(&dir)).await.unwrap();
    let resp = store
        .txn(Txn::new().and_then([
            TxnOp::put(key(&root, "p/c"), "3"),
            TxnOp::put(key(&root, "outside"), "x"),
            TxnOp::put(key(&root, "p/a"), "1"),
            TxnOp::put(key(&root, "p/b"), "2"),
        ]))
        .await
        .unwrap();
    let batch = next_batch(&mut watch).await;
    assert_eq!(batch.revision, resp.revision);
    assert_eq!(
        describe_batch(&root, &batch),
        ["put p/c=3", "put p/a=1", "put p/b=2"]
    );
    let deleted = store.delete_prefix(&dir).await.unwrap().deleted;
    assert_eq!(deleted, 3);
    let batch = next_batch(&mut watch).await;
    let got: BTreeSet<_> = describe_batch(&root, &batch).into_iter().collect();
    let want: BTreeSet<_> = ["delete p/a", "delete p/b", "delete p/c"]
        .map(String::from)
        .into();
    assert_eq!(got, want, "a prefix delete is one batch");
    expect_quiet(&*store, &mut watch, &key(&root, "p/end")).await;
}

/// Concurrent writers: the watch delivers every write once, in strictly increasing revision
/// order, each event carrying its batch's revision, and per-key order is kept.
pub async fn watch_is_ordered_without_gaps(store: Arc<dyn Store>) {
    let root = root();
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    let (writers, writes) = (4, 25);
    let mut tasks = Vec::new();
    for w in 0..writers {
        let store = store.clone();
        let k = key(&root, format!("w{w}"));
        tasks.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            for i in 0..writes {
                revs.push(put(&*store, &k, format!("{i:02}")).await);
            }
            revs
        }));
    }
    let mut written = BTreeSet::new();
    for t in tasks {
        written.extend(t.await.unwrap());
    }
    let batches = collect_events(&mut watch, writers * writes).await;
    let seen: Vec<i64> = batches.iter().map(|b| b.revision).collect();
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "revisions strictly increase"
    );
    assert_eq!(
        seen.iter().copied().collect::<BTreeSet<_>>(),
        written,
        "no gaps, no extras"
    );
    let mut next_value = vec![0; writers];
    for batch in &batches {
        for event in &batch.events {
            let Event::Put { entry, .. } = event else {
                panic!("only puts were written")
            };
            assert_eq!(entry.mod_revision, batch.revision);
            let w: usize = String::from_utf8_lossy(&entry.key[root.len() + 1..])
                .parse()
                .unwrap();
            assert_eq!(entry.value, format!("{:02}", next_value[w]).into_bytes());
            next_value[w] += 1;
        }
    }
    expect_quiet(&*store, &mut watch, &key(&root, "end")).await;
}

/// A watch from a past revision replays exactly the batches from it on, then continues live; a
/// watch resumed after the last seen revision, with a live write made before it is read,
/// replays then delivers the live write, without gaps or duplicates.
pub async fn watch_resumes_from_revision(store: Arc<dyn Store>) {
    let root = root();
    let mut revs = Vec::new();
    for i in 0..5 {
        revs.push(put(&*store, &key(&root, format!("k{i}")), "v").await);
    }
    let mut replay = store
        .watch(WatchOptions::prefix(&root).from_revision(revs[1]))
        .await
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..2 {
        got.push(next_batch(&mut replay).await.revision);
    }
    assert_eq!(got, revs[1..3]);
    drop(replay);
    let mut resumed = store
        .watch(WatchOptions::prefix(&root).from_revision(got[1] + 1))
        .await
        .unwrap();
    // A live write before anything is read: the replay comes first, then the live write.
    let live = put(&*store, &key(&root, "live"), "v").await;
    for want in revs[3..].iter().chain([&live]) {
        let batch = next_batch(&mut resumed).await;
        assert_eq!(batch.revision, *want);
    }
    expect_quiet(&*store, &mut resumed, &key(&root, "end")).await;
}

/// A watch from a future revision delivers nothing before it: its first batch is the first
/// write at or after that revision.
pub async fn watch_from_a_future_revision(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    let from = store.revision().await.unwrap() + 2;
    let mut watch = store
        .watch(WatchOptions::key(&k).from_revision(from))
        .await
        .unwrap();
    let r1 = put(&*store, &k, "1").await;
    let r2 = put(&*store, &k, "2").await;
    // Other cases may write meanwhile on a shared server: then r1 is already at or past it.
    for want in [r1, r2].into_iter().filter(|r| *r >= from) {
        assert_eq!(next_batch(&mut watch).await.revision, want);
    }
    expect_quiet(&*store, &mut watch, &k).await;
}

/// With `prev`, put events carry the previous entry (none for a creation) and delete events the
/// deleted one; without it, none.
pub async fn watch_prev_values(store: Arc<dyn Store>) {
    let root = root();
    let k = key(&root, "k");
    let start = put(&*store, &key(&root, "start"), "").await;
    let mut with = store
        .watch(WatchOptions::key(&k).from_revision(start).with_prev())
        .await
        .unwrap();
    let mut without = store
        .watch(WatchOptions::key(&k).from_revision(start))
        .await
        .unwrap();
    let r1 = put(&*store, &k, "1").await;
    put(&*store, &k, "2").await;
    store.delete(&k).await.unwrap();
    let prevs: Vec<Option<(Vec<u8>, i64)>> = {
        let mut out = Vec::new();
        for _ in 0..3 {
            let batch = next_batch(&mut with).await;
            let prev = match &batch.events[..] {
                [Event::Put { prev, .. }] | [Event::Delete { prev, .. }] => prev.clone(),
                other => panic!("one event per batch: {other:?}"),
            };
            out.push(prev.map(|p| (p.value, p.version)));
        }
        out
    };
    assert_eq!(
        prevs,
        [None, Some((b"1".to_vec(), 1)), Some((b"2".to_vec(), 2))]
    );
    for _ in 0..3 {
        let batch = next_batch(&mut without).await;
        match &batch.events[..] {
            [Event::Put { prev: None, .. }] | [Event::Delete { prev: None, .. }] => {}
            other => panic!("no prev unless asked: {other:?}"),
        }
    }
    assert!(r1 > start);
}

/// After `compact(r)`, a watch from before `r` fails with `Compacted { compact_revision >= r }`
/// and ends; a watch from `compact_revision` works, and a watch opened before the compaction
/// keeps delivering.
pub async fn watch_from_compacted_revision(store: Arc<dyn Store>) {
    let root = root();
    let old = put(&*store, &key(&root, "old"), "1").await;
    let mut live = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    put(&*store, &key(&root, "old"), "2").await;
    let current = store.revision().await.unwrap();
    store.compact(current).await.unwrap();
    let err = watch_error(&*store, WatchOptions::prefix(&root).from_revision(old)).await;
    let compacted = err
        .compact_revision()
        .unwrap_or_else(|| panic!("expected Compacted, got {err}"));
    assert!(compacted >= current);
    let mut after = store
        .watch(WatchOptions::prefix(&root).from_revision(compacted))
        .await
        .unwrap();
    let new = put(&*store, &key(&root, "new"), "3").await;
    let batch = next_batch(&mut after).await;
    assert!(batch.revision <= new);
    assert_eq!(next_batch(&mut live).await.events.len(), 1);
    let last = next_batch(&mut live).await;
    assert_eq!(
        last.revision, new,
        "a watch opened before the compaction continues"
    );
    if batch.revision < new {
        assert_eq!(next_batch(&mut after).await.revision, new);
    }
}

/// A prefix watch sees keys under the prefix only: `a/1/` never sees `a/10/`.
pub async fn watch_prefix_isolation(store: Arc<dyn Store>) {
    let root = root();
    let mut watch = store
        .watch(WatchOptions::prefix(key(&root, "a/1/")))
        .await
        .unwrap();
    for k in ["a/10/x", "a/1", "a/11", "a/1/x", "a/1x"] {
        put(&*store, &key(&root, k), "v").await;
    }
    assert_eq!(
        describe_batch(&root, &next_batch(&mut watch).await),
        ["put a/1/x=v"]
    );
    expect_quiet(&*store, &mut watch, &key(&root, "a/1/end")).await;
}

/// An interval watch sees exactly the keys in `[start, end)`.
pub async fn watch_interval(store: Arc<dyn Store>) {
    let root = root();
    let range = keyplane_core::KeyRange::Interval {
        start: key(&root, "b"),
        end: Some(key(&root, "d")),
    };
    let opts = WatchOptions {
        range,
        start_revision: None,
        group_starts: None,
        prev: false,
        collections: false,
        progress: false,
    };
    let mut watch = store.watch(opts).await.unwrap();
    let resp = store
        .txn(
            Txn::new()
                .and_then(["a", "b", "bz", "c", "d", "e"].map(|k| TxnOp::put(key(&root, k), k))),
        )
        .await
        .unwrap();
    let batch = next_batch(&mut watch).await;
    assert_eq!(batch.revision, resp.revision);
    assert_eq!(
        describe_batch(&root, &batch),
        ["put b=b", "put bz=bz", "put c=c"]
    );
    store.delete(&key(&root, "d")).await.unwrap();
    store.delete(&key(&root, "c")).await.unwrap();
    assert_eq!(
        describe_batch(&root, &next_batch(&mut watch).await),
        ["delete c"]
    );
    expect_quiet(&*store, &mut watch, &key(&root, "cz")).await;
}

/// The next item of a watch opened with progress, marks included.
async fn next_item(stream: &mut WatchStream) -> WatchBatch {
    match tokio::time::timeout(super::support::EVENT_TIMEOUT, stream.next()).await {
        Ok(Some(Ok(batch))) => batch,
        Ok(Some(Err(e))) => panic!("watch failed: {e}"),
        Ok(None) => panic!("watch ended without an error"),
        Err(_) => panic!("no watch item within {:?}", super::support::EVENT_TIMEOUT),
    }
}

/// A watch opened with progress sends one mark, at or after the store's revision when it was
/// opened, once every change it covers up to there has arrived; whether it replays history,
/// starts now, or has nothing to replay; batches after the mark are newer.
pub async fn watch_progress_marks_the_catch_up(store: Arc<dyn Store>) {
    let root = root();
    let dir = key(&root, "dir/");
    let r1 = put(&*store, &key(&root, "dir/a"), "1").await;
    put(&*store, &key(&root, "outside"), "x").await;
    let r2 = put(&*store, &key(&root, "dir/b"), "2").await;
    let opened = put(&*store, &key(&root, "outside"), "y").await;

    // History to replay: both batches, then the mark.
    let opts = WatchOptions::prefix(&dir).from_revision(r1).with_progress();
    let mut watch = store.watch(opts).await.unwrap();
    assert_eq!(next_item(&mut watch).await.revision, r1);
    assert_eq!(next_item(&mut watch).await.revision, r2);
    let mark = next_item(&mut watch).await;
    assert!(mark.is_progress(), "{mark:?}");
    assert!(mark.revision >= opened, "{} < {opened}", mark.revision);
    let r3 = put(&*store, &key(&root, "dir/c"), "3").await;
    let next = next_item(&mut watch).await;
    assert_eq!((next.revision, next.events.len()), (r3, 1));
    assert!(next.revision > mark.revision);

    // History with nothing in the range: the mark alone.
    let quiet = key(&root, "quiet/");
    let opts = WatchOptions::prefix(&quiet)
        .from_revision(r1)
        .with_progress();
    let mut watch = store.watch(opts).await.unwrap();
    let mark = next_item(&mut watch).await;
    assert!(mark.is_progress(), "{mark:?}");
    assert!(mark.revision >= r3, "{} < {r3}", mark.revision);
    let r4 = put(&*store, &key(&root, "quiet/k"), "4").await;
    assert_eq!(next_item(&mut watch).await.revision, r4);

    // From now: the mark at once.
    let now = store.revision().await.unwrap();
    let mut watch = store
        .watch(WatchOptions::prefix(&dir).with_progress())
        .await
        .unwrap();
    let mark = next_item(&mut watch).await;
    assert!(mark.is_progress() && mark.revision >= now, "{mark:?}");
    let r5 = put(&*store, &key(&root, "dir/d"), "5").await;
    assert_eq!(next_item(&mut watch).await.revision, r5);

    // Without progress, no mark: the first item is the next change.
    let mut watch = store.watch(WatchOptions::prefix(&dir)).await.unwrap();
    let r6 = put(&*store, &key(&root, "dir/e"), "6").await;
    assert_eq!(next_batch(&mut watch).await.revision, r6);
}

/// A watch from further back than a page of history (over a thousand revisions) delivers the
/// whole backlog with no later write to wake it, also while another watch of the same store
/// is running.
pub async fn watch_replays_a_long_backlog(store: Arc<dyn Store>) {
    const WRITES: usize = 1_200;
    let root = root();
    let mut running = store
        .watch(WatchOptions::prefix(key(&root, "other/")))
        .await
        .unwrap();
    let other = put(&*store, &key(&root, "other/x"), "v").await;
    assert_eq!(next_batch(&mut running).await.revision, other);
    let first = put(&*store, &key(&root, "k/0"), "v").await;
    futures::stream::iter(1..WRITES)
        .map(|i| {
            let (store, k) = (Arc::clone(&store), key(&root, format!("k/{i}")));
            async move { put(&*store, &k, "v").await }
        })
        .buffer_unordered(16)
        .collect::<Vec<i64>>()
        .await;
    let mut replay = store
        .watch(WatchOptions::prefix(key(&root, "k/")).from_revision(first))
        .await
        .unwrap();
    let batches = collect_events(&mut replay, WRITES).await;
    assert_eq!(batches[0].revision, first);
    assert!(
        batches.windows(2).all(|w| w[0].revision < w[1].revision),
        "the replay is ordered"
    );
    drop(running);
}

/// List, then watch from the listing's [`WatchPosition`](keyplane_core::WatchPosition): every change after the listing,
/// none it holds; the position moved by the batches resumes a later watch exactly. An
/// unsharded store names no group and refuses group starts.
pub async fn watch_resumes_from_a_position(store: Arc<dyn Store>) {
    use keyplane_core::{ErrorKind, RangeOptions, Sharding, WatchPosition};
    let root = root();
    let prefix = key(&root, "");
    put(&*store, &key(&root, "a"), "1").await;
    let listed = store.range(RangeOptions::prefix(&prefix)).await.unwrap();
    assert_eq!(listed.entries.len(), 1);
    let mut position = WatchPosition::after_range(&listed);
    let r2 = put(&*store, &key(&root, "b"), "2").await;
    let mut watch = store
        .watch(WatchOptions::prefix(&prefix).from_position(&position))
        .await
        .unwrap();
    let batch = next_batch(&mut watch).await;
    assert_eq!(batch.revision, r2, "{batch:?}");
    position.record(&batch);
    drop(watch);
    let r3 = put(&*store, &key(&root, "c"), "3").await;
    let mut resumed = store
        .watch(WatchOptions::prefix(&prefix).from_position(&position))
        .await
        .unwrap();
    let batch = next_batch(&mut resumed).await;
    assert_eq!(batch.revision, r3, "{batch:?}");
    assert_eq!(batch.events[0].key(), key(&root, "c").as_slice());
    if store.capabilities().sharding == Sharding::Unsharded {
        assert_eq!((listed.groups, batch.group), (None, None));
        let mut opts = WatchOptions::prefix(&prefix);
        opts.group_starts = Some([(b"g".to_vec(), 1)].into());
        let err = watch_error(&*store, opts).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err:?}");
    }
}
