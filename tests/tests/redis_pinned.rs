//! Reads pinned to a revision across a rewound history: a failover to a replica that lacked
//! the last writes a master acknowledged (without `wait_replicas`) takes the store back to
//! an earlier revision, and the new master then gives the lost revisions to other writes.
//! A page pinned to a revision of the lost history (every page of a listing after its first)
//! must answer `Compacted`, so that the reader relists, never `InvalidArgument` nor a page of
//! the other history.
//!
//! The rewind is what the promoted replica holds: the server's whole data set as it was
//! before the lost writes, put back with `DUMP`/`RESTORE` on a server of the test's own.

use keyplane_core::{ErrorKind, PutOptions, RangeOptions, RangeResult, Result, Store};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{RedisServer, key_root, redis_connection};
use redis::aio::MultiplexedConnection;

/// A raw log entry: its id and its fields.
type LogEntry = (String, Vec<(String, Vec<u8>)>);

/// Every key of the server and its `DUMP`.
type Snapshot = Vec<(Vec<u8>, Vec<u8>)>;

async fn snapshot(con: &mut MultiplexedConnection) -> Snapshot {
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query_async(con).await.unwrap();
    let mut dumped = Vec::with_capacity(keys.len());
    for key in keys {
        let dump: Vec<u8> = redis::cmd("DUMP").arg(&key).query_async(con).await.unwrap();
        dumped.push((key, dump));
    }
    dumped
}

/// Puts the server's data back to `snapshot`, as a failover to a replica that had
/// replicated up to then would.
async fn rewind(con: &mut MultiplexedConnection, snapshot: &Snapshot) {
    let () = redis::cmd("FLUSHALL").query_async(con).await.unwrap();
    for (key, dump) in snapshot {
        let () = redis::cmd("RESTORE")
            .arg(key)
            .arg(0)
            .arg(dump)
            .query_async(con)
            .await
            .unwrap();
    }
}

/// A store on a server of the test's own, and a raw connection to it.
async fn setup() -> Option<(RedisServer, RedisStore, MultiplexedConnection)> {
    let server = RedisServer::start()?;
    let store = RedisStore::open(RedisConfig::new(server.url()))
        .await
        .expect("connect");
    let con = redis_connection(&server.url()).await;
    Some((server, store, con))
}

async fn put(store: &RedisStore, key: &str, value: &str) -> i64 {
    store
        .put(key.as_bytes(), value.as_bytes(), PutOptions::default())
        .await
        .unwrap()
        .revision
}

/// The first page of two keys of a listing of `root`, read after lost writes, and what
/// the server held before them. Six keys are written, the server's data kept, then the
/// lost writes: each key rewritten and two more keys, many times.
async fn listing_over_lost_writes(
    store: &RedisStore,
    con: &mut MultiplexedConnection,
    root: &str,
) -> (RangeOptions, RangeResult, Snapshot) {
    for i in 0..6 {
        put(store, &format!("{root}k{i}"), &format!("kept-{i}")).await;
    }
    let kept = snapshot(con).await;
    // The lost writes at once, until the newest revision is in an entry the group commit
    // wrote for several (the revision of the first page is then one field of it).
    for round in 0.. {
        assert!(round < 20, "64 puts at once never made a group");
        let puts = (0..64).map(|i| {
            let (key, value) = (format!("{root}k{}", i % 8), format!("lost-{round}-{i}"));
            async move { put(store, &key, &value).await }
        });
        futures::future::join_all(puts).await;
        let newest: Vec<LogEntry> = redis::cmd("XREVRANGE")
            .arg("__kv:log")
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1)
            .query_async(con)
            .await
            .unwrap();
        if newest.first().is_some_and(|(_, fields)| fields[0].0 != "e") {
            break;
        }
    }
    let opts = RangeOptions::prefix(root).limit(2);
    let first = store.range(opts.clone()).await.unwrap();
    assert_eq!(first.entries.len(), 2);
    let next = first.next.clone().expect("more pages follow");
    (opts.after(next), first, kept)
}

fn expect_compacted(what: &str, read: Result<RangeResult>) {
    match read {
        Err(e) => assert!(
            matches!(e.kind(), ErrorKind::Compacted { .. }),
            "{what}: {e}"
        ),
        Ok(page) => {
            let values: Vec<String> = page
                .entries
                .iter()
                .map(|e| String::from_utf8_lossy(&e.value).into_owned())
                .collect();
            panic!(
                "{what}: a page at revision {} of another history: {values:?}",
                page.revision
            )
        }
    }
}

/// The store is back before the revision of a listing's first page: its next page is
/// `Compacted` (it was `InvalidArgument`, "in the future"), as is a read pinned there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_pinned_past_a_rewound_store_is_compacted() {
    let Some((_server, store, mut con)) = setup().await else {
        return;
    };
    let root = key_root("rewound");
    let (next, first, kept) = listing_over_lost_writes(&store, &mut con, &root).await;
    rewind(&mut con, &kept).await;
    assert!(store.revision().await.unwrap() < first.revision);
    expect_compacted("the next page", store.range(next).await);
    let pinned = RangeOptions::prefix(&root).at_revision(first.revision);
    expect_compacted("a read pinned there", store.range(pinned.clone()).await);
    expect_compacted(
        "a count pinned there",
        store.range(pinned.count_only()).await,
    );
    // A revision no history of the store reached is still not one to read at.
    let err = store
        .range(RangeOptions::prefix(&root).at_revision(first.revision + 1000))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}

/// The store came back before the revision of a listing's first page and has passed it
/// since with other writes: its next page, and any read pinned there, is `Compacted` (it
/// was a page of the other history, without an error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_pinned_to_a_revision_another_history_reused_is_compacted() {
    let Some((_server, store, mut con)) = setup().await else {
        return;
    };
    let root = key_root("reused");
    let (next, first, kept) = listing_over_lost_writes(&store, &mut con, &root).await;
    let pinned = RangeOptions::prefix(&root).at_revision(first.revision);
    let whole = store.range(pinned.clone()).await.unwrap();
    assert_eq!(whole.entries.len(), 8);
    rewind(&mut con, &kept).await;
    let mut now = store.revision().await.unwrap();
    let mut i = 0;
    while now <= first.revision + 2 {
        now = put(&store, &format!("{root}k{}", i % 8), &format!("other-{i}")).await;
        i += 1;
    }
    expect_compacted("the next page", store.range(next).await);
    expect_compacted("a read pinned there", store.range(pinned.clone()).await);
    expect_compacted(
        "a count pinned there",
        store.range(pinned.count_only()).await,
    );
    // Reads of the store's history as it is now are served.
    let current = store.range(RangeOptions::prefix(&root)).await.unwrap();
    let again = store
        .range(RangeOptions::prefix(&root).at_revision(current.revision))
        .await
        .unwrap();
    assert_eq!(again.entries, current.entries);
}

/// Without a rewind, a listing's pages and reads pinned to its revision are served as
/// before, however the store moved on meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_reads_of_an_unbroken_history_are_served() {
    let Some((_server, store, _con)) = setup().await else {
        return;
    };
    let root = key_root("unbroken");
    for i in 0..6 {
        put(&store, &format!("{root}k{i}"), &format!("v{i}")).await;
    }
    let mut opts = RangeOptions::prefix(&root).limit(2);
    let mut listed = Vec::new();
    let mut revision = None;
    loop {
        let page = store.range(opts.clone()).await.unwrap();
        revision.get_or_insert(page.revision);
        listed.extend(page.entries.into_iter().map(|e| e.value));
        // Each page moves the store on.
        put(&store, &format!("{root}k{}", listed.len()), "later").await;
        match page.next {
            Some(next) => opts = opts.after(next),
            None => break,
        }
    }
    let values: Vec<Vec<u8>> = (0..6).map(|i| format!("v{i}").into_bytes()).collect();
    assert_eq!(listed, values);
    let revision = revision.unwrap();
    let count = store
        .range(
            RangeOptions::prefix(&root)
                .at_revision(revision)
                .count_only(),
        )
        .await
        .unwrap();
    assert_eq!(count.count, 6);
}
