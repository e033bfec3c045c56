//! RedisStore's reconciler: writes made by other programs straight to Redis reach ranges and
//! watches, through keyspace notifications where the server sends them and through the
//! periodic scan where it does not; the store's own writes are never reported twice, and two
//! stores on one Redis report each foreign change once.

use futures::StreamExt;
use keyplane_core::{
    CollectionOp, Compare, CompareOp, ErrorKind, Event, ForeignWrites, PutOptions, RangeOptions,
    Store, Txn, TxnOp, WatchOptions, WatchStream,
};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{RedisServer, key_root, redis_connection as raw, shared_redis};
use std::time::Duration;

/// Guards against a hang only; every wait below is on an event.
const HANG: Duration = Duration::from_secs(90);

fn config(url: &str, prefix: &str, root: &str) -> RedisConfig {
    let mut config = RedisConfig::new(url);
    config.internal_prefix = prefix.to_owned();
    config.reconcile_roots = vec![root.to_owned()];
    config
}

fn isolated_prefix() -> String {
    format!("__kvr{}:", uuid::Uuid::new_v4().simple())
}

async fn raw_set(con: &mut redis::aio::MultiplexedConnection, key: &str, value: &str) {
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .query_async(con)
        .await
        .unwrap();
}

/// The next `n` events of a watch, whatever their batches.
async fn events(watch: &mut WatchStream, n: usize) -> Vec<Event> {
    let mut out = Vec::with_capacity(n);
    tokio::time::timeout(HANG, async {
        while out.len() < n {
            let batch = watch.next().await.expect("the watch ended").unwrap();
            out.extend(batch.events);
        }
    })
    .await
    .unwrap_or_else(|_| panic!("only {} of {n} events arrived", out.len()));
    out
}

fn put_key(event: &Event) -> String {
    match event {
        Event::Put { entry, .. } => String::from_utf8(entry.key.clone()).unwrap(),
        other => panic!("expected a put, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_foreign_keys_reach_range_and_watch() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let root = key_root("rec10k");
    let store = RedisStore::open(config(&server.url(), &isolated_prefix(), &root))
        .await
        .unwrap();
    assert_eq!(
        store.capabilities().foreign_writes,
        ForeignWrites::Reconciled {
            interval: Some(Duration::from_secs(60))
        }
    );
    let mut watch = store
        .watch(WatchOptions::prefix(&root).from_revision(store.revision().await.unwrap() + 1))
        .await
        .unwrap();
    // A marker written once the reconciler leads and follows notifications: its event
    // proves the reconciler is live before the bulk write.
    let mut con = raw(&server.url()).await;
    let marker = format!("{root}marker");
    tokio::time::timeout(HANG, async {
        loop {
            raw_set(&mut con, &marker, "m").await;
            if let Ok(Some(batch)) =
                tokio::time::timeout(Duration::from_millis(500), watch.next()).await
            {
                batch.unwrap();
                return;
            }
            let _: () = redis::cmd("DEL")
                .arg(&marker)
                .query_async(&mut con)
                .await
                .unwrap();
        }
    })
    .await
    .expect("the reconciler never reported the marker");
    // Drain what the marker's rewrites produced, then write 10,000 keys in one pipeline.
    let settled = store.revision().await.unwrap();
    let mut watch = store
        .watch(WatchOptions::prefix(format!("{root}k/")).from_revision(settled + 1))
        .await
        .unwrap();
    let mut pipe = redis::pipe();
    for i in 0..10_000 {
        pipe.cmd("SET")
            .arg(format!("{root}k/{i:05}"))
            .arg(format!("v{i}"))
            .ignore();
    }
    let _: () = pipe.query_async(&mut con).await.unwrap();
    let seen = events(&mut watch, 10_000).await;
    let mut keys: Vec<String> = seen.iter().map(put_key).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 10_000, "one event per foreign key");
    let page = store
        .range(RangeOptions::prefix(format!("{root}k/")).count_only())
        .await
        .unwrap();
    assert_eq!(page.count, 10_000);
    let first = store
        .range(RangeOptions::prefix(format!("{root}k/")).limit(1))
        .await
        .unwrap();
    assert_eq!(first.entries[0].value, b"v0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_writes_are_reported_once_with_the_reconciler_running() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let root = key_root("recown");
    let prefix = isolated_prefix();
    // Two stores on one Redis and one internal prefix, both with the root: one leads.
    let a = RedisStore::open(config(&server.url(), &prefix, &root))
        .await
        .unwrap();
    let b = RedisStore::open(config(&server.url(), &prefix, &root))
        .await
        .unwrap();
    let start = a.revision().await.unwrap() + 1;
    let mut watch = a
        .watch(WatchOptions::prefix(&root).from_revision(start))
        .await
        .unwrap();
    for i in 0..100 {
        let store = if i % 2 == 0 { &a } else { &b };
        store
            .put(
                format!("{root}own/{i}").as_bytes(),
                b"v",
                PutOptions::default(),
            )
            .await
            .unwrap();
    }
    let mut con = raw(&server.url()).await;
    for i in 0..20 {
        raw_set(&mut con, &format!("{root}foreign/{i}"), "f").await;
    }
    // Every own write once, then every foreign key once: 120 events, and the next event
    // after them is the sentinel written last, so nothing was reported twice in between.
    let seen = events(&mut watch, 120).await;
    let mut keys: Vec<String> = seen.iter().map(put_key).collect();
    assert!(keys[..100].iter().all(|k| k.contains("/own/")), "{keys:?}");
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 120, "no duplicate events");
    a.put(
        format!("{root}sentinel").as_bytes(),
        b"s",
        PutOptions::default(),
    )
    .await
    .unwrap();
    let next = events(&mut watch, 1).await;
    assert_eq!(put_key(&next[0]), format!("{root}sentinel"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_changes_and_deletes_of_adopted_keys_are_events() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let root = key_root("recchg");
    let store = RedisStore::open(config(&server.url(), &isolated_prefix(), &root))
        .await
        .unwrap();
    let key = format!("{root}k");
    store
        .put(key.as_bytes(), b"mine", PutOptions::default())
        .await
        .unwrap();
    let mut watch = store
        .watch(
            WatchOptions::prefix(&root)
                .from_revision(store.revision().await.unwrap() + 1)
                .with_prev(),
        )
        .await
        .unwrap();
    let mut con = raw(&server.url()).await;
    raw_set(&mut con, &key, "theirs").await;
    let changed = events(&mut watch, 1).await;
    match &changed[0] {
        Event::Put { entry, .. } => {
            assert_eq!(entry.value, b"theirs");
            assert_eq!(entry.version, 2, "a foreign overwrite is the next version");
        }
        other => panic!("{other:?}"),
    }
    let _: () = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut con)
        .await
        .unwrap();
    let deleted = events(&mut watch, 1).await;
    assert!(
        matches!(&deleted[0], Event::Delete { key: k, .. } if k == key.as_bytes()),
        "{deleted:?}"
    );
    assert!(store.get(key.as_bytes()).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_reconcile_reports_what_it_did_and_repeats_nothing() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let root = key_root("recexp");
    let mut config = RedisConfig::new(server.url());
    config.internal_prefix = isolated_prefix();
    let store = RedisStore::open(config).await.unwrap();
    assert_eq!(
        store.capabilities().foreign_writes,
        ForeignWrites::Reconciled { interval: None }
    );
    let mut con = raw(&server.url()).await;
    for i in 0..5 {
        raw_set(&mut con, &format!("{root}{i}"), "x").await;
    }
    let _: () = redis::cmd("SADD")
        .arg(format!("{root}set"))
        .arg("m")
        .query_async(&mut con)
        .await
        .unwrap();
    // Not in the index until reconciled: nothing runs in the background without roots.
    let before = store.range(RangeOptions::prefix(&root)).await.unwrap();
    assert!(before.entries.is_empty());
    let report = store.reconcile(root.as_bytes()).await.unwrap();
    assert_eq!((report.adopted, report.changed, report.deleted), (5, 0, 0));
    let after = store.range(RangeOptions::prefix(&root)).await.unwrap();
    assert_eq!(after.entries.len(), 5);
    let rev = store.revision().await.unwrap();
    let again = store.reconcile(root.as_bytes()).await.unwrap();
    assert!(again.is_empty(), "{again:?}");
    assert_eq!(store.revision().await.unwrap(), rev, "no new revision");
    raw_set(&mut con, &format!("{root}0"), "y").await;
    let _: () = redis::cmd("DEL")
        .arg(format!("{root}1"))
        .query_async(&mut con)
        .await
        .unwrap();
    let report = store.reconcile(root.as_bytes()).await.unwrap();
    assert_eq!((report.adopted, report.changed, report.deleted), (0, 1, 1));
    let bad = store.reconcile(b"__kvr").await;
    assert!(bad.is_ok(), "a prefix above the internal one is allowed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_notifications_the_periodic_scan_converges() {
    // A server of its own: notifications off, and a user that may not turn them on.
    let Some(server) = RedisServer::start() else {
        return;
    };
    let app = server.user_without_notifications().await;
    let mut admin = raw(&server.url()).await;
    let root = key_root("recscan");
    let mut config = config(&app, "__kv:", &root);
    config.reconcile_interval = std::time::Duration::from_millis(300);
    let store = RedisStore::open(config).await.unwrap();
    let mut watch = store
        .watch(WatchOptions::prefix(&root).from_revision(store.revision().await.unwrap() + 1))
        .await
        .unwrap();
    let key = format!("{root}k");
    raw_set(&mut admin, &key, "v").await;
    let seen = events(&mut watch, 1).await;
    assert_eq!(put_key(&seen[0]), key);
    let flags: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("notify-keyspace-events")
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(
        flags[1], "",
        "the store could not and did not turn notifications on"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compare_sees_a_foreign_overwrite_not_yet_reconciled() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let root = key_root("reccas");
    // No roots: nothing reconciles in the background, so only the compare can notice.
    let mut config = RedisConfig::new(server.url());
    config.internal_prefix = isolated_prefix();
    let store = RedisStore::open(config).await.unwrap();
    let key = format!("{root}counter");
    let put = store
        .put(key.as_bytes(), b"1", PutOptions::default())
        .await
        .unwrap();
    let mut con = raw(&server.url()).await;
    raw_set(&mut con, &key, "7").await;
    let cas = Txn::new()
        .when([Compare::mod_revision(&key, CompareOp::Equal, put.revision)])
        .and_then([TxnOp::put(&key, "2")]);
    let response = store.txn(cas).await.unwrap();
    assert!(!response.succeeded, "the compare saw the foreign overwrite");
    let raw_value: String = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(
        raw_value, "7",
        "nothing overwrote the other program's value"
    );
    let entry = store.get(key.as_bytes()).await.unwrap().unwrap();
    assert_eq!(entry.value, b"7");
    assert_eq!(entry.version, 2);
    assert!(entry.mod_revision > put.revision);
    // A retry on what it reads now succeeds.
    let retry = Txn::new()
        .when([Compare::mod_revision(
            &key,
            CompareOp::Equal,
            entry.mod_revision,
        )])
        .and_then([TxnOp::put(&key, "8")]);
    assert!(store.txn(retry).await.unwrap().succeeded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_txn_over_foreign_keys_writes_nothing() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let root = key_root("recref");
    let mut config = RedisConfig::new(server.url());
    config.internal_prefix = isolated_prefix();
    let store = RedisStore::open(config).await.unwrap();
    let (a, b) = (format!("{root}a"), format!("{root}b"));
    let mut con = raw(&server.url()).await;
    raw_set(&mut con, &a, "x").await;
    raw_set(&mut con, &b, "y").await;
    let before = store.revision().await.unwrap();
    let txn = Txn::new()
        .when([Compare::value(&a, CompareOp::Equal, "x")])
        .and_then([
            TxnOp::put(&a, "new"),
            TxnOp::Collection(CollectionOp::MapPut {
                key: b.clone().into_bytes(),
                field: b"f".to_vec(),
                value: b"v".to_vec(),
            }),
        ]);
    let err = store.txn(txn).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType);
    assert_eq!(
        store.revision().await.unwrap(),
        before,
        "no revision, no adoption"
    );
    let values: Vec<String> = redis::cmd("MGET")
        .arg(&a)
        .arg(&b)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(values, ["x", "y"]);
    assert!(
        store
            .range(RangeOptions::prefix(&root))
            .await
            .unwrap()
            .entries
            .is_empty(),
        "nothing was indexed"
    );
}

/// A read at a revision before another program's overwrite lists the key as the store's
/// history has it then: the value of the store's last write, which the log keeps (the
/// overwrite's own event cannot carry it, since it was gone before the store saw it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_read_across_a_foreign_overwrite_reads_the_logged_value() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let root = key_root("recsnap");
    let mut config = RedisConfig::new(server.url());
    config.internal_prefix = isolated_prefix();
    let store = RedisStore::open(config).await.unwrap();
    let key = format!("{root}k");
    let before = store
        .put(key.as_bytes(), b"mine", PutOptions::default())
        .await
        .unwrap()
        .revision;
    let other = format!("{root}other");
    let mut con = raw(&server.url()).await;
    raw_set(&mut con, &key, "theirs").await;
    let report = store.reconcile(root.as_bytes()).await.unwrap();
    assert_eq!(report.changed, 1);
    let then = store
        .range(RangeOptions::prefix(&root).at_revision(before))
        .await
        .unwrap();
    assert_eq!(then.entries.len(), 1);
    assert_eq!(then.entries[0].value, b"mine");
    assert_eq!(then.entries[0].mod_revision, before);
    let now = store.range(RangeOptions::prefix(&root)).await.unwrap();
    assert_eq!(now.entries[0].value, b"theirs");
    assert_eq!(now.entries[0].version, 2);
    // A key the overwrite did not touch still reads at the old revision.
    store
        .put(other.as_bytes(), b"x", PutOptions::default())
        .await
        .unwrap();
    let untouched = store
        .range(
            RangeOptions::new(keyplane_core::KeyRange::Key(other.into_bytes())).at_revision(before),
        )
        .await
        .unwrap();
    assert!(untouched.entries.is_empty(), "it did not exist then");
}

/// Where the log no longer holds the store's last write of a key another program then
/// overwrote, a read at a revision before the overwrite is `Compacted` at the overwrite's
/// revision: the value then is known nowhere, and no read makes it up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_read_whose_value_left_the_log_is_compacted() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let root = key_root("recgone");
    let mut config = RedisConfig::new(server.url());
    config.internal_prefix = isolated_prefix();
    // With a retention of 1, the log is trimmed every 32 revisions to (at least) the last
    // one: the 300 revisions below last trim it at 288, so revision 295 stays and 1 goes.
    config.history_retention = 1;
    let store = RedisStore::open(config).await.unwrap();
    let key = format!("{root}k");
    store
        .put(key.as_bytes(), b"mine", PutOptions::default())
        .await
        .unwrap();
    let filler = format!("{root}filler");
    for i in 0..298 {
        store
            .put(
                filler.as_bytes(),
                i.to_string().as_bytes(),
                PutOptions::default(),
            )
            .await
            .unwrap();
    }
    let mut con = raw(&server.url()).await;
    raw_set(&mut con, &key, "theirs").await;
    assert_eq!(store.reconcile(root.as_bytes()).await.unwrap().changed, 1);
    let overwrite = store.revision().await.unwrap();
    assert_eq!(overwrite, 300);
    let err = store
        .range(RangeOptions::prefix(&root).at_revision(overwrite - 5))
        .await
        .unwrap_err();
    assert_eq!(err.compact_revision(), Some(overwrite), "{err}");
}
