//! The Redis store's group commit: writes issued at the same moment share one function call,
//! and each keeps its own revision, events, result and error. Batches are made to form on
//! purpose: a `CLIENT PAUSE ... WRITE` on a server of the test's own holds the first calls,
//! so every write issued meanwhile queues behind them and goes in one batch when it ends.

use futures::StreamExt;
use futures::future::join_all;
use keyplane_core::{
    CollectionOp, CollectionResult, Compare, CompareOp, Error, ErrorKind, Event, PutOptions, Store,
    Txn, TxnOp, TxnResponse, WatchOptions,
};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{
    RedisServer, key_root, own_redis_store, redis_command_calls, redis_command_stat,
    redis_commands, redis_connection,
};
use std::collections::BTreeMap;
use std::time::Duration;

/// The most writes a store sends alone at once (its calls in flight); the rest queue behind
/// them and share calls.
const ALONE: u64 = 8;

/// Holds every client's writes for `ms` ms.
async fn pause_writes(con: &mut redis::aio::MultiplexedConnection, ms: u64) {
    redis_commands(con, &[&["CLIENT", "PAUSE", &ms.to_string(), "WRITE"]]).await;
}

/// Every event of `store` under `root` from revision `from` up to revision `to`, by revision.
async fn events_until(
    store: &RedisStore,
    root: &str,
    from: i64,
    to: i64,
) -> BTreeMap<i64, Vec<Event>> {
    let mut watch = store
        .watch(WatchOptions::prefix(root).from_revision(from).with_prev())
        .await
        .unwrap();
    let mut seen = BTreeMap::new();
    while seen.keys().next_back().is_none_or(|&last| last < to) {
        let batch = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("the watch delivers every revision")
            .expect("the watch goes on")
            .expect("no watch error");
        assert!(
            seen.insert(batch.revision, batch.events).is_none(),
            "revision {} delivered twice",
            batch.revision
        );
    }
    seen
}

#[tokio::test]
async fn concurrent_puts_share_calls_and_keep_their_own_revisions_and_events() {
    let Some((server, store)) = own_redis_store().await else {
        return;
    };
    let root = key_root("gc-puts");
    let mut con = redis_connection(&server.url()).await;
    // Earlier values, so that each put has a previous value to report.
    for k in 0..16 {
        store
            .put(
                format!("{root}{k}").as_bytes(),
                b"before",
                PutOptions::default(),
            )
            .await
            .unwrap();
    }
    let start = store.revision().await.unwrap();
    let calls_before = redis_command_calls(&mut con, "fcall").await;
    pause_writes(&mut con, 300).await;
    // 64 puts at once: 16 keys, four puts each, so a batch writes one key several times.
    let results = join_all((0..64).map(|i| {
        let (store, key) = (&store, format!("{root}{}", i % 16));
        async move {
            let value = format!("v{i}");
            let put = store
                .put(
                    key.as_bytes(),
                    value.as_bytes(),
                    PutOptions::default().with_prev(),
                )
                .await
                .unwrap();
            (key, value, put)
        }
    }))
    .await;
    let calls = redis_command_calls(&mut con, "fcall").await - calls_before;
    assert!(
        calls <= ALONE + 4,
        "64 writes issued together went in {calls} calls: the group commit did not batch them"
    );
    // Every put has a revision of its own, and together they are the next 64.
    let mut revisions: Vec<i64> = results.iter().map(|(_, _, put)| put.revision).collect();
    revisions.sort_unstable();
    assert_eq!(revisions, (start + 1..=start + 64).collect::<Vec<_>>());
    // Each put's event is at its revision, with the value before it as its previous value,
    // and that value is the put's own reply.
    let events = events_until(&store, &root, start + 1, start + 64).await;
    assert_eq!(events.len(), 64);
    let mut last_value: BTreeMap<String, Vec<u8>> = (0..16)
        .map(|k| (format!("{root}{k}"), b"before".to_vec()))
        .collect();
    let by_revision: BTreeMap<i64, &(String, String, keyplane_core::PutResult)> =
        results.iter().map(|r| (r.2.revision, r)).collect();
    for (revision, batch) in &events {
        let (key, value, put) = by_revision[revision];
        assert_eq!(batch.len(), 1, "one event per revision");
        let Event::Put { entry, prev } = &batch[0] else {
            panic!("a put event at {revision}");
        };
        assert_eq!(entry.key, key.as_bytes());
        assert_eq!(entry.value, value.as_bytes());
        assert_eq!(entry.mod_revision, *revision);
        let expected_prev = &last_value[key];
        assert_eq!(prev.as_ref().map(|p| &p.value), Some(expected_prev));
        assert_eq!(
            put.prev.as_ref().map(|p| &p.value),
            Some(expected_prev),
            "the put's reply names the value its event replaced"
        );
        last_value.insert(key.clone(), value.as_bytes().to_vec());
    }
    // What the store holds is each key's last write, with its version.
    for (key, value) in &last_value {
        let entry = store.get(key.as_bytes()).await.unwrap().unwrap();
        assert_eq!(&entry.value, value);
        assert_eq!(entry.version, 5, "one put before, four in the batch");
    }
}

#[tokio::test]
async fn a_failed_write_in_a_batch_is_its_own_and_writes_nothing() {
    let Some((server, store)) = own_redis_store().await else {
        return;
    };
    let root = key_root("gc-failures");
    let mut con = redis_connection(&server.url()).await;
    let set = format!("{root}set");
    store
        .collection(CollectionOp::SetAdd {
            key: set.clone().into(),
            member: b"m".to_vec(),
        })
        .await
        .unwrap();
    let lease = store.lease_grant(Duration::from_secs(60)).await.unwrap().id;
    store.lease_revoke(lease).await.unwrap();
    let cas = format!("{root}cas");
    store
        .put(cas.as_bytes(), b"0", PutOptions::default())
        .await
        .unwrap();
    let start = store.revision().await.unwrap();
    let calls_before = redis_command_calls(&mut con, "fcall").await;
    pause_writes(&mut con, 300).await;
    let good = |i: usize| format!("{root}good/{i}");
    let outcomes: Vec<(&str, Result<i64, Error>)> = join_all((0..40).map(|i| {
        let (store, set, cas, good) = (&store, &set, &cas, good(i));
        async move {
            match i % 5 {
                // A put onto a set: WrongType, and the set stays.
                1 => (
                    "wrong type",
                    store
                        .put(set.as_bytes(), b"x", PutOptions::default())
                        .await
                        .map(|p| p.revision),
                ),
                // A put with a revoked lease.
                2 => (
                    "lease",
                    store
                        .put(good.as_bytes(), b"x", PutOptions::default().lease(lease))
                        .await
                        .map(|p| p.revision),
                ),
                // Compare-and-sets on one key: exactly one wins.
                3 => (
                    "cas",
                    store
                        .txn(
                            Txn::new()
                                .when([Compare::value(cas, CompareOp::Equal, "0")])
                                .and_then([TxnOp::put(cas, format!("won by {i}"))]),
                        )
                        .await
                        .map(|r: TxnResponse| if r.succeeded { r.revision } else { -1 }),
                ),
                // A delete of a key that does not exist: no revision.
                4 => (
                    "delete",
                    store
                        .delete(format!("{good}/absent").as_bytes())
                        .await
                        .map(|d| d.revision),
                ),
                _ => (
                    "put",
                    store
                        .put(good.as_bytes(), b"ok", PutOptions::default())
                        .await
                        .map(|p| p.revision),
                ),
            }
        }
    }))
    .await;
    let calls = redis_command_calls(&mut con, "fcall").await - calls_before;
    assert!(calls <= ALONE + 4, "40 writes went in {calls} calls");
    let mut winners = 0;
    let mut revisions = Vec::new();
    for (i, (what, outcome)) in outcomes.iter().enumerate() {
        match *what {
            "wrong type" => assert_eq!(outcome.as_ref().unwrap_err().kind(), ErrorKind::WrongType),
            "lease" => {
                assert_eq!(
                    outcome.as_ref().unwrap_err().kind(),
                    ErrorKind::LeaseNotFound
                );
                assert!(store.get(good(i).as_bytes()).await.unwrap().is_none());
            }
            "cas" => {
                let revision = *outcome.as_ref().unwrap();
                if revision > 0 {
                    winners += 1;
                    revisions.push(revision);
                }
            }
            "delete" => assert!(*outcome.as_ref().unwrap() >= start),
            _ => {
                revisions.push(*outcome.as_ref().unwrap());
                let entry = store.get(good(i).as_bytes()).await.unwrap().unwrap();
                assert_eq!(entry.value, b"ok");
            }
        }
    }
    assert_eq!(
        winners, 1,
        "one compare-and-set wins, the others see its write"
    );
    // The set is untouched, and the successful writes are the next revisions, one each.
    let members = store
        .collection(CollectionOp::SetMembers {
            key: set.clone().into(),
        })
        .await
        .unwrap();
    assert_eq!(members, CollectionResult::Members(vec![b"m".to_vec()]));
    revisions.sort_unstable();
    assert_eq!(
        revisions,
        (start + 1..=start + revisions.len() as i64).collect::<Vec<_>>()
    );
    assert_eq!(store.revision().await.unwrap(), start + 9);
}

#[tokio::test]
async fn a_batch_adopts_what_other_programs_did_to_its_keys() {
    let Some((server, store)) = own_redis_store().await else {
        return;
    };
    let root = key_root("gc-foreign");
    let mut con = redis_connection(&server.url()).await;
    let (foreign, deleted) = (format!("{root}foreign"), format!("{root}deleted"));
    store
        .put(deleted.as_bytes(), b"ours", PutOptions::default())
        .await
        .unwrap();
    // Another program writes one key and deletes the other.
    let _: () = redis::cmd("SET")
        .arg(&foreign)
        .arg("theirs")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("DEL")
        .arg(&deleted)
        .query_async(&mut con)
        .await
        .unwrap();
    let start = store.revision().await.unwrap();
    pause_writes(&mut con, 200).await;
    let puts = join_all(
        [&foreign, &deleted, &foreign]
            .into_iter()
            .enumerate()
            .chain((0..8).map(|i| (10 + i, &foreign)))
            .map(|(i, key)| {
                let store = &store;
                async move {
                    store
                        .put(
                            key.as_bytes(),
                            format!("v{i}").as_bytes(),
                            PutOptions::default().with_prev(),
                        )
                        .await
                        .unwrap()
                }
            }),
    )
    .await;
    let last = puts.iter().map(|p| p.revision).max().unwrap();
    // 11 puts, one adoption of the foreign string and one delete of the vanished key.
    assert_eq!(last, start + 13);
    let events = events_until(&store, &root, start + 1, last).await;
    let flat: Vec<&Event> = events.values().flatten().collect();
    let adopted = flat
        .iter()
        .position(|e| matches!(e, Event::Put { entry, .. } if entry.value == b"theirs"))
        .expect("the foreign value is adopted with a put event");
    let first_ours = flat
        .iter()
        .position(|e| matches!(e, Event::Put { entry, .. } if entry.key == foreign.as_bytes() && entry.value != b"theirs"))
        .unwrap();
    assert!(
        adopted < first_ours,
        "the adoption comes before our first put of the key"
    );
    assert!(
        flat.iter()
            .any(|e| matches!(e, Event::Delete { key, .. } if *key == deleted.as_bytes())),
        "the other program's delete is an event"
    );
    let entry = store.get(deleted.as_bytes()).await.unwrap().unwrap();
    assert_eq!(entry.version, 1, "the vanished key starts again");
    assert_eq!(entry.create_revision, entry.mod_revision);
}

#[tokio::test]
async fn a_batch_waits_for_the_replicas_once_and_every_write_in_it_answers_for_it() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    // One replica asked for, none there: every write is applied and reported as a Timeout.
    let mut config = RedisConfig::new(server.url());
    config.wait_replicas = 1;
    config.wait_timeout = std::time::Duration::from_millis(100);
    let store = RedisStore::open(config).await.expect("connect");
    let root = key_root("gc-wait");
    let mut con = redis_connection(&server.url()).await;
    let calls_before = redis_command_calls(&mut con, "fcall").await;
    pause_writes(&mut con, 200).await;
    let outcomes = join_all((0..16).map(|i| {
        let (store, key) = (&store, format!("{root}{i}"));
        async move { store.put(key.as_bytes(), b"v", PutOptions::default()).await }
    }))
    .await;
    let calls = redis_command_calls(&mut con, "fcall").await - calls_before;
    assert!(calls <= ALONE + 4, "16 writes went in {calls} calls");
    for outcome in &outcomes {
        assert_eq!(outcome.as_ref().unwrap_err().kind(), ErrorKind::Timeout);
    }
    for i in 0..16 {
        let entry = store.get(format!("{root}{i}").as_bytes()).await.unwrap();
        assert_eq!(
            entry.unwrap().value,
            b"v",
            "the write was applied on the master"
        );
    }
    assert!(
        redis_command_calls(&mut con, "wait").await < 16,
        "one WAIT per call"
    );
}

/// Redis refuses a whole batch when memory is over `maxmemory` (a function that may write is
/// checked before it starts): each write then goes alone by SHA, so that deletes still run
/// and puts fail, each on its own.
#[tokio::test]
async fn a_batch_refused_for_memory_runs_write_by_write() {
    let Some((server, store)) = own_redis_store().await else {
        return;
    };
    let root = key_root("gc-oom");
    let mut con = redis_connection(&server.url()).await;
    for i in 0..8 {
        store
            .put(
                format!("{root}k{i}").as_bytes(),
                b"value",
                PutOptions::default(),
            )
            .await
            .unwrap();
    }
    let before = store.revision().await.unwrap();
    redis_commands(
        &mut con,
        &[
            &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
            &["CONFIG", "SET", "maxmemory", "1"],
        ],
    )
    .await;
    let rejected_before = rejected_fcalls(&mut con).await;
    pause_writes(&mut con, 200).await;
    let outcomes = join_all((0..16).map(|i| {
        let (store, root) = (&store, &root);
        async move {
            if i % 2 == 0 {
                store
                    .delete(format!("{root}k{}", i / 2).as_bytes())
                    .await
                    .map(|d| d.prev.is_some())
            } else {
                store
                    .put(
                        format!("{root}new{i}").as_bytes(),
                        b"x",
                        PutOptions::default(),
                    )
                    .await
                    .map(|_| true)
            }
        }
    }))
    .await;
    redis_commands(&mut con, &[&["CONFIG", "SET", "maxmemory", "0"]]).await;
    for (i, outcome) in outcomes.iter().enumerate() {
        if i % 2 == 0 {
            assert!(outcome.as_ref().unwrap(), "delete {i} ran: {outcome:?}");
        } else {
            let err = outcome.as_ref().unwrap_err();
            assert!(format!("{err:?}").contains("OOM"), "{err:?}");
            assert!(
                store
                    .get(format!("{root}new{i}").as_bytes())
                    .await
                    .unwrap()
                    .is_none()
            );
        }
    }
    assert_eq!(store.revision().await.unwrap(), before + 8);
    assert!(
        rejected_fcalls(&mut con).await - rejected_before > ALONE,
        "a batch was refused, not only the lone calls"
    );
}

/// The `FCALL`s Redis has refused (for memory, here), from `INFO commandstats`.
async fn rejected_fcalls(con: &mut redis::aio::MultiplexedConnection) -> u64 {
    redis_command_stat(con, "fcall", "rejected_calls").await
}

/// Issues `n` puts of `root`'s keys `0..keys` at once behind a pause, so that most of them go
/// in one batch and share one log entry; returns each put's revision and value, by revision.
async fn batched_puts(
    store: &RedisStore,
    con: &mut redis::aio::MultiplexedConnection,
    root: &str,
    n: usize,
    keys: usize,
) -> BTreeMap<i64, (String, String)> {
    pause_writes(con, 200).await;
    join_all((0..n).map(|i| async move {
        let (key, value) = (format!("{root}{}", i % keys), format!("b{i}"));
        let put = store
            .put(key.as_bytes(), value.as_bytes(), PutOptions::default())
            .await
            .unwrap();
        (put.revision, (key, value))
    }))
    .await
    .into_iter()
    .collect()
}

/// The most revisions one entry of the store's log holds (the default internal prefix).
async fn widest_log_entry(con: &mut redis::aio::MultiplexedConnection) -> usize {
    let entries: Vec<(String, Vec<Vec<u8>>)> = redis::cmd("XRANGE")
        .arg("__kv:log")
        .arg("-")
        .arg("+")
        .query_async(con)
        .await
        .unwrap();
    entries
        .iter()
        .map(|(_, fields)| fields.len() / 2)
        .max()
        .unwrap_or(0)
}

#[tokio::test]
async fn reads_and_watches_start_inside_a_batch_log_entry() {
    let Some((server, store)) = own_redis_store().await else {
        return;
    };
    let root = key_root("gc-inside");
    let mut con = redis_connection(&server.url()).await;
    store
        .put(
            format!("{root}0").as_bytes(),
            b"first",
            PutOptions::default(),
        )
        .await
        .unwrap();
    let puts = batched_puts(&store, &mut con, &root, 40, 8).await;
    assert!(
        widest_log_entry(&mut con).await > 8,
        "the batch logged its revisions in one entry"
    );
    let revisions: Vec<i64> = puts.keys().copied().collect();
    let last = *revisions.last().unwrap();
    // The state at every revision of the batch, replayed from the puts.
    let mut state: BTreeMap<String, String> = [(format!("{root}0"), "first".to_owned())].into();
    let mut at: BTreeMap<i64, BTreeMap<String, String>> = BTreeMap::new();
    for (revision, (key, value)) in &puts {
        state.insert(key.clone(), value.clone());
        at.insert(*revision, state.clone());
    }
    // A read pinned to a revision in the middle of the entry sees exactly that state.
    for &pin in [revisions[10], revisions[20], revisions[30]].iter() {
        let read = store
            .range(keyplane_core::RangeOptions::prefix(&root).at_revision(pin))
            .await
            .unwrap();
        let seen: BTreeMap<String, String> = read
            .entries
            .iter()
            .map(|e| {
                (
                    String::from_utf8(e.key.clone()).unwrap(),
                    String::from_utf8(e.value.clone()).unwrap(),
                )
            })
            .collect();
        assert_eq!(seen, at[&pin], "a read at {pin}");
    }
    // A watch from a revision in the middle delivers from exactly there.
    let from = revisions[17];
    let events = events_until(&store, &root, from, last).await;
    assert_eq!(
        events.keys().copied().collect::<Vec<_>>(),
        revisions[17..].to_vec()
    );
    for (revision, batch) in &events {
        let Event::Put { entry, .. } = &batch[0] else {
            panic!("a put at {revision}");
        };
        assert_eq!(entry.value, puts[revision].1.as_bytes());
    }
    // Compacting at a revision inside the entry: a watch from there works, one from before
    // it is refused.
    store.compact(revisions[25]).await.unwrap();
    let events = events_until(&store, &root, revisions[25], last).await;
    assert_eq!(events.len(), revisions.len() - 25);
    let refused = store
        .watch(WatchOptions::prefix(&root).from_revision(revisions[24]))
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(refused.compact_revision().is_some(), "{refused:?}");
}

#[tokio::test]
async fn a_retention_trimming_batch_entries_stays_honest() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut config = RedisConfig::new(server.url());
    config.history_retention = 40;
    let store = RedisStore::open(config).await.expect("connect");
    let root = key_root("gc-trim");
    let mut con = redis_connection(&server.url()).await;
    let start = store.revision().await.unwrap();
    for _ in 0..6 {
        batched_puts(&store, &mut con, &root, 40, 8).await;
    }
    let now = store.revision().await.unwrap();
    assert_eq!(now, start + 240);
    // The oldest revision still in the log starts a watch; the one before it is Compacted,
    // naming a revision the log holds.
    let mut oldest = None;
    for from in start + 1..=now {
        if store
            .watch(WatchOptions::prefix(&root).from_revision(from))
            .await
            .is_ok()
        {
            oldest = Some(from);
            break;
        }
    }
    let oldest = oldest.expect("a watch starts somewhere in the retained log");
    assert!(oldest > start + 1, "the retention trimmed the log");
    assert!(oldest <= now - 39, "at least the retention stays");
    let events = events_until(&store, &root, oldest, now).await;
    assert_eq!(
        events.len() as i64,
        now - oldest + 1,
        "every retained revision, once"
    );
    let err = store
        .watch(WatchOptions::prefix(&root).from_revision(oldest - 1))
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(err.compact_revision().is_some(), "{err:?}");
    // A read pinned to a trimmed revision is refused too, never made up.
    let err = store
        .range(keyplane_core::RangeOptions::prefix(&root).at_revision(oldest - 2))
        .await
        .unwrap_err();
    assert!(err.compact_revision().is_some(), "{err:?}");
}

#[tokio::test]
async fn a_past_read_finds_a_batched_write_another_program_overwrote() {
    let Some((server, store)) = own_redis_store().await else {
        return;
    };
    let root = key_root("gc-unknown");
    let mut con = redis_connection(&server.url()).await;
    let puts = batched_puts(&store, &mut con, &root, 40, 40).await;
    let (&pin, (key, value)) = puts.iter().nth(20).unwrap();
    // Another program overwrites the key; reconciling adopts the change (its event carries
    // no previous value: the store never saw what was overwritten).
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg("theirs")
        .query_async(&mut con)
        .await
        .unwrap();
    let adopted = store.reconcile(root.as_bytes()).await.unwrap();
    assert_eq!(adopted.changed, 1, "{adopted:?}");
    assert_eq!(
        store.get(key.as_bytes()).await.unwrap().unwrap().value,
        b"theirs"
    );
    // A read at the batch's revision lists what the batched put wrote, found in the batch's
    // log entry by its revision.
    let read = store
        .range(keyplane_core::RangeOptions::prefix(key).at_revision(pin))
        .await
        .unwrap();
    assert_eq!(read.entries.len(), 1);
    assert_eq!(read.entries[0].value, value.as_bytes());
    assert_eq!(read.entries[0].mod_revision, pin);
}

#[tokio::test]
async fn batched_rotations_each_move_the_next_item_at_a_revision_of_their_own() {
    let Some((server, store)) = own_redis_store().await else {
        return;
    };
    let root = key_root("gc-rotate");
    let mut con = redis_connection(&server.url()).await;
    let list = format!("{root}list");
    let plain = format!("{root}plain");
    for item in ["a", "b", "c"] {
        store
            .collection(CollectionOp::ListPush {
                key: list.clone().into(),
                value: item.into(),
            })
            .await
            .unwrap();
    }
    store
        .put(plain.as_bytes(), b"not a list", PutOptions::default())
        .await
        .unwrap();
    let start = store.revision().await.unwrap();
    let calls_before = redis_command_calls(&mut con, "fcall").await;
    pause_writes(&mut con, 200).await;
    let rotate = |key: &str| {
        TxnOp::Collection(CollectionOp::ListRotate {
            key: key.as_bytes().to_vec(),
        })
    };
    let outcomes = join_all((0..30).map(|i| {
        let (store, key) = (&store, if i % 10 == 9 { &plain } else { &list });
        let op = rotate(key);
        async move { store.txn(Txn::new().and_then([op])).await }
    }))
    .await;
    let calls = redis_command_calls(&mut con, "fcall").await - calls_before;
    assert!(calls <= ALONE + 4, "30 rotations went in {calls} calls");
    let mut moved: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
    for (i, outcome) in outcomes.into_iter().enumerate() {
        if i % 10 == 9 {
            assert_eq!(outcome.unwrap_err().kind(), ErrorKind::WrongType);
            continue;
        }
        let response = outcome.unwrap();
        assert!(response.succeeded);
        let OpResultValue(item) = OpResultValue::of(&response);
        assert!(moved.insert(response.revision, item).is_none());
    }
    // 27 rotations, one revision each, moving a, b, c, a, b, ... in revision order.
    assert_eq!(
        moved.keys().copied().collect::<Vec<_>>(),
        (start + 1..=start + 27).collect::<Vec<_>>()
    );
    for (n, item) in moved.values().enumerate() {
        assert_eq!(item, ["a", "b", "c"][n % 3].as_bytes(), "rotation {n}");
    }
    // A watch sees each rotation as its collection event, once.
    let mut watch = store
        .watch(
            WatchOptions::prefix(&root)
                .from_revision(start + 1)
                .with_collections(),
        )
        .await
        .unwrap();
    let mut seen = 0;
    while seen < 27 {
        let batch = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(batch.revision, start + 1 + seen as i64);
        assert_eq!(batch.events.len(), 1);
        assert!(matches!(batch.events[0], Event::Collection(_)));
        seen += 1;
    }
}

/// The item a one-rotation transaction moved.
struct OpResultValue(Vec<u8>);

impl OpResultValue {
    fn of(response: &TxnResponse) -> Self {
        match &response.results[..] {
            [keyplane_core::OpResult::Collection(CollectionResult::Value(Some(item)))] => {
                OpResultValue(item.clone())
            }
            other => panic!("a rotation's result: {other:?}"),
        }
    }
}
