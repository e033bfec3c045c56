//! RedisStore behaviour that only Redis has: native types seen by other clients, the reserved
//! internal prefix, script atomicity against wrong types, concurrent CAS from two clients,
//! the single-key paths, trimmed watch history, and a server restart under writes and a watch.

use futures::StreamExt;
use keyplane_core::{
    CollectionOp, Compare, CompareOp, ErrorKind, Event, KeyRange, PutOptions, RangeOptions, Store,
    Txn, TxnOp, WatchOptions,
};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{
    RedisServer, key_root, redis_command_calls, redis_connection as raw, shared_redis,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// A store on the shared server with its own internal prefix (its own revisions and log), or
/// `None` (after a SKIP line) without `redis-server`.
async fn isolated_store(tweak: impl FnOnce(&mut RedisConfig)) -> Option<RedisStore> {
    let server = shared_redis().await?;
    let mut config = RedisConfig::new(server.url());
    config.internal_prefix = format!("__kvt{}:", uuid::Uuid::new_v4().simple());
    tweak(&mut config);
    Some(RedisStore::open(config).await.expect("connect"))
}

fn set_add(key: &str, member: &str) -> CollectionOp {
    CollectionOp::SetAdd {
        key: key.into(),
        member: member.into(),
    }
}

#[tokio::test]
async fn native_types_are_visible_to_other_redis_clients() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let store = RedisStore::from_url(&server.url()).await.unwrap();
    let root = key_root("native");
    let (plain, set, map, list) = (
        format!("{root}plain"),
        format!("{root}set"),
        format!("{root}map"),
        format!("{root}list"),
    );
    store
        .put(plain.as_bytes(), b"v1", PutOptions::default())
        .await
        .unwrap();
    store.collection(set_add(&set, "b")).await.unwrap();
    store.collection(set_add(&set, "a")).await.unwrap();
    store
        .collection(CollectionOp::MapPut {
            key: map.clone().into(),
            field: b"f".to_vec(),
            value: b"x".to_vec(),
        })
        .await
        .unwrap();
    for item in ["1", "2", "3"] {
        store
            .collection(CollectionOp::ListPush {
                key: list.clone().into(),
                value: item.into(),
            })
            .await
            .unwrap();
    }
    store
        .collection(CollectionOp::ListRotate {
            key: list.clone().into(),
        })
        .await
        .unwrap();

    let mut con = raw(&server.url()).await;
    let type_of = |key: String| redis::cmd("TYPE").arg(key).to_owned();
    for (key, expected) in [
        (&plain, "string"),
        (&set, "set"),
        (&map, "hash"),
        (&list, "list"),
    ] {
        let t: String = type_of(key.clone()).query_async(&mut con).await.unwrap();
        assert_eq!(t, expected, "{key}");
    }
    let value: String = redis::cmd("GET")
        .arg(&plain)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(value, "v1");
    let mut members: Vec<String> = redis::cmd("SMEMBERS")
        .arg(&set)
        .query_async(&mut con)
        .await
        .unwrap();
    members.sort();
    assert_eq!(members, ["a", "b"]);
    let fields: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg(&map)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(fields, [("f".to_owned(), "x".to_owned())]);
    let items: Vec<String> = redis::cmd("LRANGE")
        .arg(&list)
        .arg(0)
        .arg(-1)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(items, ["2", "3", "1"]);

    // Collections are not plain entries, but prefix deletes remove them.
    let page = store.range(RangeOptions::prefix(&root)).await.unwrap();
    let keys: Vec<_> = page.entries.iter().map(|e| e.key.clone()).collect();
    assert_eq!(keys, [plain.clone().into_bytes()]);
    assert_eq!(
        store.delete_prefix(root.as_bytes()).await.unwrap().deleted,
        4
    );
    let left: i64 = redis::cmd("EXISTS")
        .arg(&plain)
        .arg(&set)
        .arg(&map)
        .arg(&list)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(left, 0);
}

#[tokio::test]
async fn keys_under_the_internal_prefix_are_rejected() {
    // Its own internal prefix, so that no other test moves its revision.
    let Some(store) = isolated_store(|_| {}).await else {
        return;
    };
    let internal = store.config().internal_prefix.clone();
    let before = store.revision().await.unwrap();
    let reserved_key = format!("{internal}rev");
    let reserved = reserved_key.as_bytes();
    let err = store
        .put(reserved, b"1", PutOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidKey);
    assert_eq!(
        store.get(reserved).await.unwrap_err().kind(),
        ErrorKind::InvalidKey
    );
    let root = key_root("reserved");
    let txn = Txn::new().and_then([
        TxnOp::put(format!("{root}ok"), "1"),
        TxnOp::Collection(set_add(&format!("{internal}mine"), "m")),
    ]);
    assert_eq!(
        store.txn(txn).await.unwrap_err().kind(),
        ErrorKind::InvalidKey
    );
    assert_eq!(
        store
            .delete_prefix(internal.as_bytes())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidKey
    );
    assert_eq!(store.revision().await.unwrap(), before);
    assert_eq!(
        store.get(format!("{root}ok").as_bytes()).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn a_txn_hitting_a_wrong_type_midway_writes_nothing() {
    // Its own internal prefix, so that no other test moves its revision.
    let Some(store) = isolated_store(|_| {}).await else {
        return;
    };
    let root = key_root("wrongtype");
    let (a, b, c) = (format!("{root}a"), format!("{root}b"), format!("{root}c"));
    store.collection(set_add(&b, "m")).await.unwrap();
    store
        .put(c.as_bytes(), b"old", PutOptions::default())
        .await
        .unwrap();
    let before = store.revision().await.unwrap();
    let txn = Txn::new().and_then([
        TxnOp::put(&a, "new"),
        TxnOp::delete(&c),
        TxnOp::put(&b, "plain over a set"),
        TxnOp::Collection(set_add(&format!("{root}d"), "m")),
    ]);
    let err = store.txn(txn).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "{err}");
    assert_eq!(store.revision().await.unwrap(), before);
    assert_eq!(store.get(a.as_bytes()).await.unwrap(), None);
    assert_eq!(
        store.get(c.as_bytes()).await.unwrap().unwrap().value,
        b"old"
    );
    let d = store
        .collection(CollectionOp::SetMembers {
            key: format!("{root}d").into(),
        })
        .await
        .unwrap();
    assert_eq!(d, keyplane_core::CollectionResult::Members(vec![]));

    // A set op on a plain key fails the same way, in the failure branch too.
    let txn = Txn::new()
        .when([Compare::absent(&c)])
        .or_else([TxnOp::put(&a, "x"), TxnOp::Collection(set_add(&c, "m"))]);
    assert_eq!(
        store.txn(txn).await.unwrap_err().kind(),
        ErrorKind::WrongType
    );
    assert_eq!(store.get(a.as_bytes()).await.unwrap(), None);
}

/// `get`, `put` and `delete` have their own paths (not one-op transactions): a put over a
/// collection or with an unknown lease writes nothing, and revisions and metadata come out as
/// a transaction's would.
#[tokio::test]
async fn single_key_paths_check_before_writing_and_keep_revisions_exact() {
    let Some(store) = isolated_store(|_| {}).await else {
        return;
    };
    let root = key_root("single");
    let (a, b) = (format!("{root}a"), format!("{root}b"));
    store.collection(set_add(&b, "m")).await.unwrap();
    let start = store.revision().await.unwrap();

    let err = store.put(b.as_bytes(), b"x", PutOptions::default()).await;
    assert_eq!(err.unwrap_err().kind(), ErrorKind::WrongType);
    let lease = PutOptions::default().lease(keyplane_core::LeaseId(i64::MAX));
    let err = store.put(a.as_bytes(), b"x", lease).await;
    assert_eq!(err.unwrap_err().kind(), ErrorKind::LeaseNotFound);
    assert_eq!(store.revision().await.unwrap(), start, "nothing written");
    assert_eq!(store.get(a.as_bytes()).await.unwrap(), None);
    assert_eq!(
        store.get(b.as_bytes()).await.unwrap(),
        None,
        "a set is no entry"
    );

    let first = store.put(a.as_bytes(), b"1", PutOptions::default()).await;
    assert_eq!(first.unwrap().revision, start + 1);
    let second = store
        .put(a.as_bytes(), b"2", PutOptions::default().with_prev())
        .await
        .unwrap();
    assert_eq!(second.revision, start + 2);
    let prev = second.prev.unwrap();
    assert_eq!((prev.value, prev.version), (b"1".to_vec(), 1));
    let entry = store.get(a.as_bytes()).await.unwrap().unwrap();
    assert_eq!(
        (entry.create_revision, entry.mod_revision, entry.version),
        (start + 1, start + 2, 2)
    );
    assert_eq!(entry.value, b"2");

    let deleted = store.delete(a.as_bytes()).await.unwrap();
    assert_eq!((deleted.revision, deleted.prev), (start + 3, Some(entry)));
    assert_eq!(store.revision().await.unwrap(), start + 3);
    let again = store.delete(a.as_bytes()).await.unwrap();
    assert_eq!(
        (again.revision, again.prev),
        (start + 3, None),
        "no-op delete"
    );
    assert_eq!(store.revision().await.unwrap(), start + 3, "no-op delete");
    let set = store.delete(b.as_bytes()).await.unwrap();
    assert_eq!((set.revision, set.prev), (start + 4, None), "the set went");
    assert_eq!(store.revision().await.unwrap(), start + 4, "the set went");
    let members = store
        .collection(CollectionOp::SetMembers { key: b.into() })
        .await
        .unwrap();
    assert_eq!(members, keyplane_core::CollectionResult::Members(vec![]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_clients_cas_increment_one_key() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let stores: Vec<Arc<dyn Store>> = vec![
        Arc::new(RedisStore::from_url(&server.url()).await.unwrap()),
        Arc::new(RedisStore::from_url(&server.url()).await.unwrap()),
    ];
    let key = format!("{}counter", key_root("cas")).into_bytes();
    stores[0]
        .put(&key, b"0", PutOptions::default())
        .await
        .unwrap();
    let swaps = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for task in 0..32 {
        let store = stores[task % 2].clone();
        let (key, swaps) = (key.clone(), swaps.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..20 {
                let current = store.get(&key).await.unwrap().unwrap();
                let n: u64 = std::str::from_utf8(&current.value)
                    .unwrap()
                    .parse()
                    .unwrap();
                let txn = Txn::new()
                    .when([Compare::mod_revision(
                        &key,
                        CompareOp::Equal,
                        current.mod_revision,
                    )])
                    .and_then([TxnOp::put(&key, (n + 1).to_string())]);
                if store.txn(txn).await.unwrap().succeeded {
                    swaps.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let swaps = swaps.load(Ordering::SeqCst);
    assert!(swaps > 0);
    let last = stores[1].get(&key).await.unwrap().unwrap();
    assert_eq!(std::str::from_utf8(&last.value).unwrap(), swaps.to_string());
    assert_eq!(last.version as u64, swaps + 1);
}

#[tokio::test]
async fn a_watch_from_a_trimmed_revision_is_compacted() {
    let Some(store) = isolated_store(|c| c.history_retention = 5).await else {
        return;
    };
    let root = key_root("trim");
    let key = format!("{root}k");
    let first = store
        .put(key.as_bytes(), b"0", PutOptions::default())
        .await
        .unwrap()
        .revision;
    // Trimming drops whole stream nodes (100 entries by default): write enough to drop some.
    for i in 1..300 {
        store
            .put(
                key.as_bytes(),
                i.to_string().as_bytes(),
                PutOptions::default(),
            )
            .await
            .unwrap();
    }
    let now = store.revision().await.unwrap();
    let err = match store
        .watch(WatchOptions::prefix(&root).from_revision(first))
        .await
    {
        Err(err) => err,
        Ok(_) => panic!("a watch from a trimmed revision started"),
    };
    let oldest = err.compact_revision().expect("Compacted");
    assert!(
        first < oldest && oldest <= now - 4,
        "{oldest} outside ({first}, {}]",
        now - 4
    );
    // The retained revisions replay in order, without a gap.
    let mut watch = store
        .watch(WatchOptions::prefix(&root).from_revision(oldest))
        .await
        .unwrap();
    for expected in oldest..=now {
        assert_eq!(watch.next().await.unwrap().unwrap().revision, expected);
    }
    assert!(matches!(
        store.watch(WatchOptions::prefix(&root).from_revision(oldest - 1)).await,
        Err(e) if e.compact_revision() == Some(oldest)
    ));

    // An explicit compaction trims further.
    store.compact(now).await.unwrap();
    let err = store
        .watch(WatchOptions::prefix(&root).from_revision(now - 1))
        .await
        .err()
        .expect("compacted");
    assert_eq!(err.compact_revision(), Some(now));
    assert_eq!(
        store.compact(now - 2).await.unwrap_err().compact_revision(),
        Some(now)
    );
    assert_eq!(
        store.compact(now + 1).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[tokio::test]
async fn an_expired_lease_deletes_its_keys_with_events() {
    let Some(store) = isolated_store(|_| {}).await else {
        return;
    };
    let root = key_root("lease");
    let key = format!("{root}k");
    let lease = store.lease_grant(Duration::from_secs(2)).await.unwrap();
    let mut watch = store
        .watch(WatchOptions::prefix(&root).with_prev())
        .await
        .unwrap();
    store
        .put(key.as_bytes(), b"v", PutOptions::default().lease(lease.id))
        .await
        .unwrap();
    let put = watch.next().await.unwrap().unwrap();
    let deleted = watch.next().await.unwrap().unwrap();
    assert_eq!(deleted.revision, put.revision + 1);
    match &deleted.events[..] {
        [
            Event::Delete {
                key: k,
                prev: Some(prev),
            },
        ] => {
            assert_eq!(k, key.as_bytes());
            assert_eq!(prev.lease, Some(lease.id));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(store.get(key.as_bytes()).await.unwrap(), None);
    assert_eq!(
        store.lease_keep_alive(lease.id).await.unwrap_err().kind(),
        ErrorKind::LeaseNotFound
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restart_under_writes_and_a_watch_loses_nothing() {
    let Some(mut server) = RedisServer::start_with_aof() else {
        return;
    };
    let store = Arc::new(RedisStore::from_url(&server.url()).await.unwrap());
    let root = key_root("restart");
    let start = store.revision().await.unwrap() + 1;
    let mut watch = store
        .watch(WatchOptions::prefix(&root).from_revision(start))
        .await
        .unwrap();
    let (restart_tx, restart_rx) = tokio::sync::oneshot::channel();
    let restarted = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, root, restarted) = (store.clone(), root.clone(), restarted.clone());
        tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            let mut restart_tx = Some(restart_tx);
            let mut after_restart = 0;
            // Writes go on through the restart, and for 100 more after it.
            for i in 0.. {
                if i == 100 {
                    let _ = restart_tx.take().unwrap().send(());
                }
                if restarted.load(Ordering::SeqCst) {
                    after_restart += 1;
                    if after_restart > 100 {
                        break;
                    }
                }
                let key = format!("{root}{i:06}");
                // A failed write may or may not have been applied: retry until acknowledged.
                for attempt in 0.. {
                    match store.put(key.as_bytes(), b"v", PutOptions::default()).await {
                        Ok(r) => {
                            acknowledged.push((key.clone(), r.revision));
                            break;
                        }
                        Err(e) if e.is_retryable() && attempt < 400 => {
                            tokio::time::sleep(Duration::from_millis(50)).await
                        }
                        Err(e) => panic!("write {i} failed: {e}"),
                    }
                }
            }
            acknowledged
        })
    };
    restart_rx.await.unwrap();
    tokio::task::block_in_place(|| server.restart());
    restarted.store(true, Ordering::SeqCst);
    let acknowledged = writer.await.unwrap();
    for (key, _) in &acknowledged {
        assert!(
            store.get(key.as_bytes()).await.unwrap().is_some(),
            "{key} lost"
        );
    }
    let last = acknowledged.last().unwrap().1;
    let mut expected = start;
    while expected <= last {
        let batch = tokio::time::timeout(Duration::from_secs(60), watch.next())
            .await
            .expect("the watch stalled")
            .unwrap()
            .unwrap();
        assert_eq!(batch.revision, expected, "gap or duplicate in the watch");
        assert!(KeyRange::Prefix(root.clone().into_bytes()).contains(batch.events[0].key()));
        expected += 1;
    }
}

#[tokio::test]
async fn a_watch_reports_unavailable_once_its_retries_are_exhausted() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let mut config = RedisConfig::new(server.url());
    config.watch_retries = 2;
    let store = RedisStore::open(config).await.unwrap();
    let root = key_root("gone");
    let mut watch = store.watch(WatchOptions::prefix(&root)).await.unwrap();
    store
        .put(format!("{root}k").as_bytes(), b"v", PutOptions::default())
        .await
        .unwrap();
    assert!(watch.next().await.unwrap().is_ok());
    server.kill();
    let err = watch.next().await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(
        watch.next().await.is_none(),
        "the stream ends after its error"
    );
}

/// A get of a key the store wrote, or of an absent key, is one pipelined HGET and GET, no
/// MULTI (the value's digest in its metadata vouches for the pair); another program's
/// overwrite of the value fails the digest and is read in one MULTI/EXEC, as written.
#[tokio::test]
async fn a_get_needs_no_multi_unless_another_program_wrote_the_value() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = RedisStore::from_url(&server.url()).await.unwrap();
    let mut con = raw(&server.url()).await;
    let root = key_root("fastget");
    let key = format!("{root}k");
    store
        .put(key.as_bytes(), b"value one", PutOptions::default())
        .await
        .unwrap();
    let multi = redis_command_calls(&mut con, "multi").await;
    let entry = store.get(key.as_bytes()).await.unwrap().unwrap();
    assert_eq!(entry.value, b"value one");
    assert_eq!(entry.version, 1);
    assert_eq!(
        store.get(format!("{root}absent").as_bytes()).await.unwrap(),
        None
    );
    assert_eq!(
        redis_command_calls(&mut con, "multi").await,
        multi,
        "no MULTI for these"
    );

    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg("written by another program")
        .query_async(&mut con)
        .await
        .unwrap();
    let entry = store.get(key.as_bytes()).await.unwrap().unwrap();
    assert_eq!(entry.value, b"written by another program");
    assert!(
        redis_command_calls(&mut con, "multi").await > multi,
        "a value whose digest differs is read atomically"
    );
}

/// With `wait_replicas`, a write that no replica acknowledges in time is applied on the master
/// and reported as `Timeout`; a wait that could never end is refused when connecting.
#[tokio::test]
async fn a_write_no_replica_acknowledges_in_time_is_a_timeout() {
    let Some(server) = shared_redis().await else {
        return;
    };
    let root = key_root("wait");
    let config = RedisConfig::new(server.url())
        .wait_replicas(1)
        .wait_timeout(std::time::Duration::from_millis(50));
    let store = RedisStore::open(config.clone()).await.unwrap();
    let key = format!("{root}k");
    let err = store
        .put(key.as_bytes(), b"v", PutOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err:?}");
    assert_eq!(
        store.get(key.as_bytes()).await.unwrap().unwrap().value,
        b"v"
    );
    let err = store
        .txn(Txn::new().and_then([TxnOp::delete(key.as_bytes())]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err:?}");
    assert_eq!(store.get(key.as_bytes()).await.unwrap(), None);

    for wait_timeout in [std::time::Duration::ZERO, config.request_timeout] {
        let err = RedisStore::open(config.clone().wait_timeout(wait_timeout))
            .await
            .err()
            .unwrap();
        assert_eq!(err.kind(), ErrorKind::Config, "{err:?}");
    }
}

/// A rotation that reads its moved item's map (`ListRotateGet`) where another program left a
/// STRING at that map's key is `WrongType`, and writes nothing: the list keeps its order and
/// the store its revision, alone (its own script), in a group-committed batch and inside a
/// transaction. The item's map is read with `HGET` as `redis-cli` wrote it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_reading_a_foreign_string_as_its_map_writes_nothing() {
    // Its own internal prefix, so that no other test moves its revision.
    let Some(store) = isolated_store(|_| {}).await else {
        return;
    };
    let server = shared_redis().await.expect("the shared server");
    let root = key_root("rotget");
    let list = format!("{root}active");
    let prefix = format!("{root}key:");
    let mut con = raw(&server.url()).await;
    let _: () = redis::cmd("RPUSH")
        .arg(&list)
        .arg(&["1", "2", "3"][..])
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg(format!("{prefix}1"))
        .arg("not a hash")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(format!("{prefix}2"))
        .arg("status")
        .arg("active")
        .query_async(&mut con)
        .await
        .unwrap();
    let op = CollectionOp::ListRotateGet {
        key: list.clone().into(),
        map_prefix: prefix.clone().into(),
        map_suffix: Vec::new(),
        field: b"status".to_vec(),
    };
    let lrange = |con: &mut redis::aio::MultiplexedConnection| {
        let mut con = con.clone();
        let list = list.clone();
        async move {
            let items: Vec<String> = redis::cmd("LRANGE")
                .arg(&list)
                .arg(0)
                .arg(-1)
                .query_async(&mut con)
                .await
                .unwrap();
            items
        }
    };
    let before = store.revision().await.unwrap();
    // Alone.
    let err = store.collection(op.clone()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "{err}");
    // In batches: many at once, so that the group commit carries them together.
    let results = futures::future::join_all((0..32).map(|_| store.collection(op.clone()))).await;
    for result in results {
        assert_eq!(result.unwrap_err().kind(), ErrorKind::WrongType);
    }
    // In a transaction, after a write to another key.
    let txn = Txn::new().and_then([
        TxnOp::put(format!("{root}other"), "v"),
        TxnOp::Collection(op.clone()),
    ]);
    let err = store.txn(txn).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType, "{err}");
    assert_eq!(lrange(&mut con).await, ["1", "2", "3"]);
    assert_eq!(store.revision().await.unwrap(), before);
    assert!(
        store
            .get(format!("{root}other").as_bytes())
            .await
            .unwrap()
            .is_none()
    );
    // Once the program fixes the key, the rotation reads the raw HASH.
    let _: () = redis::cmd("DEL")
        .arg(format!("{prefix}1"))
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(
        store.collection(op.clone()).await.unwrap(),
        keyplane_core::CollectionResult::Rotated {
            item: Some(b"1".to_vec()),
            value: None,
        }
    );
    assert_eq!(
        store.collection(op).await.unwrap(),
        keyplane_core::CollectionResult::Rotated {
            item: Some(b"2".to_vec()),
            value: Some(b"active".to_vec()),
        }
    );
    assert_eq!(lrange(&mut con).await, ["3", "1", "2"]);
}
