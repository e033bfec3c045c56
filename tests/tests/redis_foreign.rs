//! The foreign-writer cases on RedisStore: another program writes the same keys with plain
//! `SET`, `DEL` and `GET` (and native collections), as `redis-cli` would; the store's
//! explicit reconcile settles them for ranges and watches.

use keyplane_core::raw::async_trait;
use keyplane_core::{CollectionOp, ErrorKind, OpResult, Store, Txn, TxnOp};
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::conformance::foreign::RawWriter;
use keyplane_tests::harness::{key_root, redis_connection as raw_connection, shared_redis};
use redis::aio::MultiplexedConnection;
use std::sync::Arc;

/// A raw Redis client, plus the store whose reconcile settles what it wrote.
struct RedisRaw {
    con: MultiplexedConnection,
    store: Arc<RedisStore>,
}

#[async_trait]
impl RawWriter for RedisRaw {
    async fn set(&self, key: &[u8], value: &[u8]) {
        let () = redis::cmd("SET")
            .arg(key)
            .arg(value)
            .query_async(&mut self.con.clone())
            .await
            .expect("raw SET");
    }

    async fn del(&self, key: &[u8]) -> bool {
        let n: i64 = redis::cmd("DEL")
            .arg(key)
            .query_async(&mut self.con.clone())
            .await
            .expect("raw DEL");
        n > 0
    }

    async fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        redis::cmd("GET")
            .arg(key)
            .query_async(&mut self.con.clone())
            .await
            .expect("raw GET")
    }

    async fn settle(&self, prefix: &[u8]) {
        self.store.reconcile(prefix).await.expect("reconcile");
    }
}

async fn setup_redis() -> Option<(Arc<RedisStore>, RedisRaw)> {
    let server = shared_redis().await?;
    let store = Arc::new(
        RedisStore::from_url(&server.url())
            .await
            .expect("connect to the harness Redis"),
    );
    let con = raw_connection(&server.url()).await;
    let raw = RedisRaw {
        con,
        store: store.clone(),
    };
    Some((store, raw))
}

async fn setup() -> Option<(Arc<dyn Store>, Arc<dyn RawWriter>)> {
    let (store, raw) = setup_redis().await?;
    Some((store, Arc::new(raw)))
}

keyplane_tests::foreign_suite!(setup);

/// Runs one raw command and returns its integer reply.
async fn raw_int(con: &MultiplexedConnection, cmd: &mut redis::Cmd) -> i64 {
    cmd.query_async(&mut con.clone())
        .await
        .unwrap_or_else(|e| panic!("raw command: {e}"))
}

/// Writes a set, a hash and a list at `root` + `name` + `s`/`h`/`l`; returns their keys.
async fn raw_collections(con: &MultiplexedConnection, root: &str, name: &str) -> [String; 3] {
    let [s, h, l] = ["s", "h", "l"].map(|kind| format!("{root}{name}{kind}"));
    raw_int(con, redis::cmd("SADD").arg(&s).arg("m1").arg("m2")).await;
    raw_int(con, redis::cmd("HSET").arg(&h).arg("f").arg("v")).await;
    raw_int(con, redis::cmd("RPUSH").arg(&l).arg("a").arg("b")).await;
    [s, h, l]
}

async fn exists(con: &MultiplexedConnection, key: &str) -> i64 {
    raw_int(con, redis::cmd("EXISTS").arg(key)).await
}

/// Sets, hashes and lists written by another program are deleted by `delete`, a txn's
/// `delete` and `delete_prefix`, each counting as one key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_collections_are_deleted_and_counted() {
    let Some((store, raw)) = setup_redis().await else {
        return;
    };
    let root = key_root("ct");
    let [s, h, l] = raw_collections(&raw.con, &root, "one/").await;
    for k in [&s, &h] {
        let resp = store
            .txn(Txn::new().and_then([TxnOp::delete(k)]))
            .await
            .unwrap();
        assert_eq!(resp.results, [OpResult::Delete { deleted: 1 }], "{k}");
        assert_eq!(exists(&raw.con, k).await, 0, "{k} survived a txn delete");
    }
    store.delete(l.as_bytes()).await.unwrap();
    assert_eq!(exists(&raw.con, &l).await, 0, "{l} survived delete");

    let dir = format!("{root}many/");
    let keys = raw_collections(&raw.con, &dir, "").await;
    let outside = raw_collections(&raw.con, &root, "many").await;
    assert_eq!(
        store.delete_prefix(dir.as_bytes()).await.unwrap().deleted,
        3
    );
    for k in &keys {
        assert_eq!(exists(&raw.con, k).await, 0, "{k} survived delete_prefix");
    }
    for k in &outside {
        assert_eq!(
            exists(&raw.con, k).await,
            1,
            "{k} outside the prefix was deleted"
        );
    }
}

/// A map op on a foreign string is `WrongType`, writes nothing and takes no revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_op_on_foreign_string_is_wrong_type() {
    // A store with an internal prefix of its own, so that its revision counts only the
    // writes of this test.
    let Some(server) = shared_redis().await else {
        return;
    };
    let mut config = RedisConfig::new(server.url());
    config.internal_prefix = format!("__kvf{}:", uuid::Uuid::new_v4().simple());
    let store = Arc::new(RedisStore::open(config).await.expect("connect to Redis"));
    let raw = RedisRaw {
        con: raw_connection(&server.url()).await,
        store: store.clone(),
    };
    let root = key_root("ct");
    let k = format!("{root}k");
    raw.set(k.as_bytes(), b"plain").await;
    let before = store.revision().await.unwrap();
    let op = CollectionOp::MapPut {
        key: k.clone().into_bytes(),
        field: b"f".to_vec(),
        value: b"v".to_vec(),
    };
    let put = TxnOp::put(format!("{root}other"), "x");
    match store
        .txn(Txn::new().and_then([put, TxnOp::Collection(op)]))
        .await
    {
        Ok(resp) => panic!("MapPut on a string succeeded: {resp:?}"),
        Err(e) => assert_eq!(e.kind(), ErrorKind::WrongType, "{e}"),
    }
    assert_eq!(raw.get(k.as_bytes()).await.as_deref(), Some(&b"plain"[..]));
    assert_eq!(
        raw.get(format!("{root}other").as_bytes()).await,
        None,
        "the txn is atomic"
    );
    assert_eq!(store.revision().await.unwrap(), before, "no revision taken");
}

/// Another program rotating a list with `LMOVE`, adding set members with `SADD` and hash
/// fields with `HSET`, interleaved with the store's transactions on the same keys: no item,
/// member or field is lost or duplicated, and both sides read the same collections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interleaved_raw_and_store_collection_writes_keep_every_invariant() {
    let Some((store, raw)) = setup_redis().await else {
        return;
    };
    let root = key_root("ct");
    let (list, set, map) = (
        format!("{root}list"),
        format!("{root}set"),
        format!("{root}map"),
    );
    for i in 0..20 {
        raw_int(
            &raw.con,
            redis::cmd("RPUSH").arg(&list).arg(format!("r{i}")),
        )
        .await;
    }
    let foreign = {
        let (con, list, set, map) = (raw.con.clone(), list.clone(), set.clone(), map.clone());
        tokio::spawn(async move {
            for i in 0..200 {
                let _: Option<String> = redis::cmd("LMOVE")
                    .arg(&list)
                    .arg(&list)
                    .arg("LEFT")
                    .arg("RIGHT")
                    .query_async(&mut con.clone())
                    .await
                    .unwrap();
                raw_int(&con, redis::cmd("SADD").arg(&set).arg(format!("r{i}"))).await;
                raw_int(
                    &con,
                    redis::cmd("HSET").arg(&map).arg(format!("r{i}")).arg(i),
                )
                .await;
            }
        })
    };
    for i in 0..200 {
        let mut ops = vec![
            TxnOp::Collection(CollectionOp::ListRotate {
                key: list.clone().into_bytes(),
            }),
            TxnOp::Collection(CollectionOp::SetAdd {
                key: set.clone().into_bytes(),
                member: format!("s{i}").into_bytes(),
            }),
            TxnOp::Collection(CollectionOp::MapPut {
                key: map.clone().into_bytes(),
                field: format!("s{i}").into_bytes(),
                value: i.to_string().into_bytes(),
            }),
        ];
        if i % 10 == 0 {
            ops.push(TxnOp::Collection(CollectionOp::ListPush {
                key: list.clone().into_bytes(),
                value: format!("s{i}").into_bytes(),
            }));
        }
        store.txn(Txn::new().and_then(ops)).await.unwrap();
    }
    foreign.await.unwrap();

    let mut items: Vec<String> = redis::cmd("LRANGE")
        .arg(&list)
        .arg(0)
        .arg(-1)
        .query_async(&mut raw.con.clone())
        .await
        .unwrap();
    items.sort();
    let mut expected: Vec<String> = (0..20)
        .map(|i| format!("r{i}"))
        .chain((0..200).step_by(10).map(|i| format!("s{i}")))
        .collect();
    expected.sort();
    assert_eq!(items, expected, "rotations lost or duplicated no item");

    let members = match store
        .collection(CollectionOp::SetMembers {
            key: set.clone().into_bytes(),
        })
        .await
        .unwrap()
    {
        keyplane_core::CollectionResult::Members(m) => m,
        other => panic!("{other:?}"),
    };
    assert_eq!(members.len(), 400, "every member of both writers");
    let fields = match store
        .collection(CollectionOp::MapGetAll {
            key: map.clone().into_bytes(),
        })
        .await
        .unwrap()
    {
        keyplane_core::CollectionResult::Fields(f) => f,
        other => panic!("{other:?}"),
    };
    assert_eq!(fields.len(), 400, "every field of both writers");
    let raw_len = raw_int(&raw.con, redis::cmd("HLEN").arg(&map)).await;
    assert_eq!(raw_len, 400);
    // The store deletes the three whatever wrote them.
    assert_eq!(
        store.delete_prefix(root.as_bytes()).await.unwrap().deleted,
        3
    );
    for key in [&list, &set, &map] {
        assert_eq!(exists(&raw.con, key).await, 0, "{key}");
    }
}

/// A collection compare on a key another program gave another Redis type is refused, and
/// the transaction writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collection_compare_on_another_type_is_wrong_type() {
    let Some((store, raw)) = setup_redis().await else {
        return;
    };
    let root = key_root("ct");
    let (string, hash, flag) = (
        format!("{root}string"),
        format!("{root}hash"),
        format!("{root}flag"),
    );
    raw.set(string.as_bytes(), b"plain").await;
    raw_int(&raw.con, redis::cmd("HSET").arg(&hash).arg("f").arg("v")).await;
    for compare in [
        keyplane_core::Compare::set_contains(&string, "m"),
        keyplane_core::Compare::size(
            &hash,
            keyplane_core::CollectionKind::List,
            keyplane_core::CompareOp::Equal,
            0,
        ),
        keyplane_core::Compare::map_field(&string, "f", keyplane_core::CompareOp::Equal, "v"),
    ] {
        let described = format!("{compare:?}");
        let txn = Txn::new()
            .when([compare])
            .and_then([TxnOp::put(&flag, "x")])
            .or_else([TxnOp::put(&flag, "y")]);
        let err = store.txn(txn).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::WrongType, "{described}: {err}");
        assert_eq!(raw.get(flag.as_bytes()).await, None, "{described}");
    }
    // The right type still compares.
    let txn = Txn::new().when([keyplane_core::Compare::map_field(
        &hash,
        "f",
        keyplane_core::CompareOp::Equal,
        "v",
    )]);
    assert!(store.txn(txn).await.unwrap().succeeded);
}

/// A prefix with glob characters finds exactly the foreign keys under it: `SCAN MATCH` sees
/// the prefix's `*`, `?`, `[`, `]` and `\` as themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_prefix_with_glob_characters_deletes_exactly_its_keys() {
    let Some((store, raw)) = setup_redis().await else {
        return;
    };
    let root = key_root("ct");
    let doomed = format!("{root}a*b?[c]\\d/");
    let inside = [format!("{doomed}x"), format!("{doomed}y")];
    // Keys a glob reading of the prefix would match.
    let outside = [
        format!("{root}aXXb?[c]\\d/x"),
        format!("{root}a*bZcd/x"),
        format!("{root}a*b?c\\d/x"),
    ];
    for key in inside.iter().chain(&outside) {
        raw.set(key.as_bytes(), b"v").await;
    }
    assert_eq!(
        store
            .delete_prefix(doomed.as_bytes())
            .await
            .unwrap()
            .deleted,
        2
    );
    for key in &inside {
        assert_eq!(raw.get(key.as_bytes()).await, None, "{key}");
    }
    for key in &outside {
        assert!(raw.get(key.as_bytes()).await.is_some(), "{key} was deleted");
    }
}

/// Tracked keys that another program deletes (`DEL`), turns into a set (`DEL` then
/// `SADD`), or, for a tracked set, turns into a string: every range lists exactly what
/// Redis holds, by kind, and never an empty value, before any reconcile; the changes become
/// events at revisions of their own, so a watch from before the range reports them and a
/// range at the revision before them still lists the old values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_deleted_or_retyped_by_another_program_are_listed_as_redis_holds_them() {
    use futures::StreamExt;
    use keyplane_core::{CollectionKind, Event, RangeOptions, WatchOptions};
    let Some((store, raw)) = setup_redis().await else {
        return;
    };
    let root = key_root("retyped");
    let k = |name: &str| format!("{root}{name}");
    for name in ["a", "b", "c", "d"] {
        store
            .put(
                k(name).as_bytes(),
                format!("v-{name}").as_bytes(),
                Default::default(),
            )
            .await
            .unwrap();
    }
    store
        .collection(CollectionOp::SetAdd {
            key: k("s").into_bytes(),
            member: b"m".to_vec(),
        })
        .await
        .unwrap();
    let before = store.revision().await.unwrap();
    let mut watch = store
        .watch(
            WatchOptions::prefix(&root)
                .with_collections()
                .from_revision(before + 1),
        )
        .await
        .unwrap();
    raw_int(&raw.con, redis::cmd("DEL").arg(k("b"))).await;
    raw_int(&raw.con, redis::cmd("DEL").arg(k("c"))).await;
    raw_int(&raw.con, redis::cmd("SADD").arg(k("c")).arg("x").arg("y")).await;
    raw_int(&raw.con, redis::cmd("DEL").arg(k("s"))).await;
    let () = redis::cmd("SET")
        .arg(k("s"))
        .arg("now a string")
        .query_async(&mut raw.con.clone())
        .await
        .unwrap();

    let names = |entries: &[keyplane_core::Entry]| -> Vec<String> {
        entries
            .iter()
            .map(|e| String::from_utf8_lossy(&e.key[root.len()..]).into_owned())
            .collect()
    };
    // Plain keys only: `c` is a set now, `s` another program's string.
    let keys_only = store
        .range(RangeOptions::prefix(&root).keys_only())
        .await
        .unwrap();
    assert_eq!(names(&keys_only.entries), ["a", "d"], "keys only");
    let counted = store
        .range(RangeOptions::prefix(&root).count_only())
        .await
        .unwrap();
    assert_eq!(counted.count, 2, "count only");
    let plain = store.range(RangeOptions::prefix(&root)).await.unwrap();
    assert_eq!(names(&plain.entries), ["a", "d"]);
    let values: Vec<&[u8]> = plain.entries.iter().map(|e| &e.value[..]).collect();
    assert_eq!(values, [&b"v-a"[..], b"v-d"]);

    // With collections: `s` is listed once adopted as the string it is, `c` as a set.
    let with = store
        .range(RangeOptions::prefix(&root).with_collections())
        .await
        .unwrap();
    assert_eq!(names(&with.entries), ["a", "d", "s"]);
    assert_eq!(with.entries[2].value, b"now a string");
    let listed: Vec<(String, CollectionKind, u64)> = with
        .collections
        .iter()
        .map(|c| {
            (
                String::from_utf8_lossy(&c.key[root.len()..]).into_owned(),
                c.kind,
                c.size,
            )
        })
        .collect();
    assert_eq!(listed, [("c".to_owned(), CollectionKind::Set, 2)]);
    let count_with = store
        .range(RangeOptions::prefix(&root).with_collections().count_only())
        .await
        .unwrap();
    assert_eq!(count_with.count, 4);
    let mut pages = Vec::new();
    let mut opts = RangeOptions::prefix(&root).with_collections().limit(1);
    loop {
        let page = store.range(opts.clone()).await.unwrap();
        pages.extend(names(&page.entries));
        pages.extend(
            page.collections
                .iter()
                .map(|c| String::from_utf8_lossy(&c.key[root.len()..]).into_owned()),
        );
        match page.next {
            Some(next) => opts = opts.after(next),
            None => break,
        }
    }
    assert_eq!(pages, ["a", "c", "d", "s"], "pages of 1");

    // The changes are events: b and c deleted as plain keys, s's set deleted and its
    // string put; each key's event once.
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let batch = tokio::time::timeout(std::time::Duration::from_secs(30), watch.next())
            .await
            .expect("events within 30 s")
            .expect("the watch goes on")
            .unwrap();
        assert!(batch.revision > before);
        for event in batch.events {
            seen.push(match event {
                Event::Put { entry, .. } => format!("put {}", names(&[entry])[0]),
                Event::Delete { key, .. } => {
                    format!("delete {}", String::from_utf8_lossy(&key[root.len()..]))
                }
                Event::Collection(c) => format!(
                    "{:?} {}",
                    c.change,
                    String::from_utf8_lossy(&c.key[root.len()..])
                ),
            });
        }
    }
    seen.sort();
    assert_eq!(seen, ["delete b", "delete c", "put s"]);

    // At the revision before, the store's history still has b and c with their values.
    let then = store
        .range(RangeOptions::prefix(&root).at_revision(before))
        .await
        .unwrap();
    assert_eq!(names(&then.entries), ["a", "b", "c", "d"]);
    let values: Vec<&[u8]> = then.entries.iter().map(|e| &e.value[..]).collect();
    assert_eq!(values, [&b"v-a"[..], b"v-b", b"v-c", b"v-d"]);
}

/// A tracked key that another program overwrote with a plain `SET` after revision R reads,
/// at R, with the value the store's log holds at R, as one it deleted does: whole, paged,
/// alone, keys only and counted, before any reconcile and after one. A current read gives
/// what Redis holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_at_a_revision_before_a_foreign_overwrite_lists_the_value_then() {
    use keyplane_core::{KeyRange, RangeOptions};
    let Some((store, raw)) = setup_redis().await else {
        return;
    };
    let root = key_root("overwritten");
    let k = |name: &str| format!("{root}{name}");
    for name in ["a", "b", "c"] {
        let value = format!("v1-{name}");
        store
            .put(k(name).as_bytes(), value.as_bytes(), Default::default())
            .await
            .unwrap();
    }
    let then = store.revision().await.unwrap();
    for name in ["a", "b"] {
        let () = redis::cmd("SET")
            .arg(k(name))
            .arg(format!("v2-{name}"))
            .query_async(&mut raw.con.clone())
            .await
            .unwrap();
    }
    let values = |entries: &[keyplane_core::Entry]| -> Vec<String> {
        entries
            .iter()
            .map(|e| String::from_utf8_lossy(&e.value).into_owned())
            .collect()
    };
    for round in ["before a reconcile", "after a reconcile"] {
        let whole = store
            .range(RangeOptions::prefix(&root).at_revision(then))
            .await
            .unwrap();
        assert_eq!(values(&whole.entries), ["v1-a", "v1-b", "v1-c"], "{round}");
        assert!(
            whole.entries.iter().all(|e| e.mod_revision <= then),
            "{round}"
        );
        let mut paged = Vec::new();
        let mut opts = RangeOptions::prefix(&root).at_revision(then).limit(1);
        loop {
            let page = store.range(opts.clone()).await.unwrap();
            paged.extend(values(&page.entries));
            match page.next {
                Some(next) => opts = opts.after(next),
                None => break,
            }
        }
        assert_eq!(paged, ["v1-a", "v1-b", "v1-c"], "{round}: pages of 1");
        let alone = store
            .range(RangeOptions::new(KeyRange::Key(k("a").into_bytes())).at_revision(then))
            .await
            .unwrap();
        assert_eq!(values(&alone.entries), ["v1-a"], "{round}: one key");
        let keys = store
            .range(RangeOptions::prefix(&root).at_revision(then).keys_only())
            .await
            .unwrap();
        assert_eq!(keys.entries.len(), 3, "{round}: keys only");
        let counted = store
            .range(RangeOptions::prefix(&root).at_revision(then).count_only())
            .await
            .unwrap();
        assert_eq!(counted.count, 3, "{round}: count");
        let now = store.range(RangeOptions::prefix(&root)).await.unwrap();
        assert_eq!(
            values(&now.entries),
            ["v2-a", "v2-b", "v1-c"],
            "{round}: now"
        );
        store.reconcile(root.as_bytes()).await.unwrap();
    }
}
