//! The Redis store's ordered index in buckets (`__kv:ixd`, the bounds; `__kv:ix:<bound>`, at
//! most 32 keys each, kept by Redis in its compact encoding): ranges, counts and prefix
//! deletes stay exact through random puts, deletes, transactions and batches of adversarial
//! keys, every bucket holds only keys from its bound to the next and stays compact; and a store
//! written in the layout before buckets (one sorted set, `__kv:idx`) is read and converted
//! while another client writes to it, and keys an older version indexes meanwhile are taken in.

use futures::StreamExt;
use keyplane_core::{RangeOptions, Store, Txn, TxnOp};
use keyplane_redis::RedisStore;
use keyplane_tests::harness::{RedisServer, redis_connection, write_layout_before_buckets};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The keys of the store's plain index, in order: every range over the whole keyspace.
async fn listed(store: &dyn Store) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    let first = RangeOptions::prefix("").keys_only().limit(97);
    let mut options = first.clone();
    loop {
        let page = store.range(options).await.unwrap();
        keys.extend(page.entries.iter().map(|e| e.key.clone()));
        match page.next {
            Some(next) => options = first.clone().after(next),
            None => return keys,
        }
    }
}

/// Where the test's keys longer than 64 bytes start.
const LONG: &[u8] = b"\xfe";

/// Checks the index's structure on the server: the directory's first bound is the empty
/// string, every bucket is non-empty (but the first), holds at most 32 keys, only keys from
/// its bound to the next, and is kept compact unless its range reaches the keys longer than
/// Redis's compact limit (64 bytes); the buckets together hold exactly `expected`.
async fn check_buckets(con: &mut MultiplexedConnection, expected: &BTreeSet<Vec<u8>>) {
    let bounds: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg("__kv:ixd")
        .arg(0)
        .arg(-1)
        .query_async(con)
        .await
        .unwrap();
    assert_eq!(bounds.first().map(Vec::as_slice), Some(&b""[..]));
    let mut all = Vec::new();
    for (i, bound) in bounds.iter().enumerate() {
        let name = [b"__kv:ix:".as_slice(), bound].concat();
        let keys: Vec<Vec<u8>> = redis::cmd("ZRANGE")
            .arg(&name)
            .arg(0)
            .arg(-1)
            .query_async(con)
            .await
            .unwrap();
        assert!(keys.len() <= 32, "a bucket of {} keys", keys.len());
        assert!(
            i == 0 || !keys.is_empty(),
            "an empty bucket in the directory"
        );
        for key in &keys {
            assert!(key >= bound);
            if let Some(next) = bounds.get(i + 1) {
                assert!(key < next);
            }
        }
        // Redis keeps a sorted set that ever held a member longer than its compact limit (64
        // bytes) in the large encoding: the long keys live from LONG on, and the buckets whose
        // range lies before LONG never held one.
        if !keys.is_empty()
            && bounds
                .get(i + 1)
                .is_some_and(|next| next.as_slice() <= LONG)
        {
            let encoding: String = redis::cmd("OBJECT")
                .arg("ENCODING")
                .arg(&name)
                .query_async(con)
                .await
                .unwrap();
            assert_eq!(encoding, "listpack", "bucket {i} of {}", bounds.len());
        }
        all.extend(keys);
    }
    let expected: Vec<Vec<u8>> = expected.iter().cloned().collect();
    assert_eq!(all, expected);
}

/// A key of the test's keyspace: short ones that share prefixes, bytes that mean something to
/// `ZRANGEBYLEX` (`[`, `(`, `-`, `+`), 0x01 and 0xff, and some longer than 64 bytes (from
/// LONG on).
fn random_key(rng: &mut impl Rng) -> Vec<u8> {
    const FIRST: &[&[u8]] = &[b"a/", b"b/", b"[", b"(", b"-", b"+", b"a/\x01", b"\xff"];
    let mut key = if rng.random_ratio(1, 50) {
        [LONG, &[b'x'; 70]].concat()
    } else {
        FIRST[rng.random_range(0..FIRST.len())].to_vec()
    };
    key.extend(format!("{:04}", rng.random_range(0..2500)).bytes());
    key
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_counts_and_prefix_deletes_stay_exact_and_buckets_stay_compact() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = Arc::new(RedisStore::from_url(&server.url()).await.unwrap());
    let mut con = redis_connection(&server.url()).await;
    let mut rng = StdRng::seed_from_u64(0x1dc5);
    let mut model = BTreeSet::new();
    for round in 0..30 {
        // Transactions of up to 128 puts, and single puts and deletes in flight together (the
        // group commit runs them as batches).
        let puts: BTreeSet<Vec<u8>> = (0..rng.random_range(1..=128))
            .map(|_| random_key(&mut rng))
            .collect();
        store
            .txn(Txn::new().and_then(puts.iter().map(|k| TxnOp::put(k, b"t"))))
            .await
            .unwrap();
        model.extend(puts);
        let singles: Vec<(Vec<u8>, bool)> = (0..150)
            .map(|_| (random_key(&mut rng), rng.random_ratio(2, 3)))
            .collect();
        let mut last = std::collections::HashMap::new();
        for (key, put) in &singles {
            last.insert(key.clone(), *put);
        }
        futures::stream::iter(last.iter())
            .for_each_concurrent(32, |(key, put)| {
                let store = store.clone();
                async move {
                    if *put {
                        store.put(key, b"s", Default::default()).await.unwrap();
                    } else {
                        store.delete(key).await.unwrap();
                    }
                }
            })
            .await;
        for (key, put) in last {
            if put {
                model.insert(key);
            } else {
                model.remove(&key);
            }
        }
        if round % 6 == 5 {
            let prefix: &[u8] = [&b"a/1"[..], b"[", b"b/", b"(0"][round / 6 % 4];
            let deleted = store.delete_prefix(prefix).await.unwrap();
            let before = model.len();
            model.retain(|k| !k.starts_with(prefix));
            assert_eq!(deleted.deleted as usize, before - model.len());
        }
        // A range between two random keys, with a limit, and its count.
        let (mut from, mut to) = (random_key(&mut rng), random_key(&mut rng));
        if from > to {
            std::mem::swap(&mut from, &mut to);
        }
        let page = store
            .range(RangeOptions::interval(from.clone(), to.clone()).limit(40))
            .await
            .unwrap();
        let want: Vec<&Vec<u8>> = model.range(from.clone()..to.clone()).take(40).collect();
        let got: Vec<&Vec<u8>> = page.entries.iter().map(|e| &e.key).collect();
        assert_eq!(got, want);
        let count = store
            .range(RangeOptions::interval(from.clone(), to.clone()).count_only())
            .await
            .unwrap()
            .count;
        assert_eq!(count as usize, model.range(from..to).count());
        check_buckets(&mut con, &model).await;
    }
    assert!(model.len() > 1000, "{}", model.len());
    assert_eq!(
        listed(store.as_ref()).await,
        model.iter().cloned().collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_of_the_layout_before_buckets_is_read_and_converted_while_written() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut con = redis_connection(&server.url()).await;
    let old: Vec<Vec<u8>> = (0..60_000)
        .map(|i| format!("tenants/{:03}/k{i:06}", i % 500).into_bytes())
        .collect();
    write_layout_before_buckets(&mut con, old.iter().cloned(), b"old").await;
    let mut model: BTreeSet<Vec<u8>> = old.iter().cloned().collect();

    // A writer that opens its own store (which converts too) and writes new keys while the
    // second store opens and converts.
    let url = server.url();
    let writer = tokio::spawn(async move {
        let store = RedisStore::from_url(&url).await.unwrap();
        let mut written = Vec::new();
        for i in 0..2_000 {
            let key = format!("tenants/{:03}/new{i:05}", i % 500).into_bytes();
            store.put(&key, b"new", Default::default()).await.unwrap();
            written.push(key);
        }
        written
    });
    let store = RedisStore::from_url(&server.url()).await.unwrap();
    model.extend(writer.await.unwrap());
    let exists: i64 = redis::cmd("EXISTS")
        .arg("__kv:idx")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(exists, 0);
    check_buckets(&mut con, &model).await;
    let tenant = b"tenants/007/";
    let page = store
        .range(RangeOptions::prefix(tenant.as_slice()))
        .await
        .unwrap();
    let want: Vec<&Vec<u8>> = model.iter().filter(|k| k.starts_with(tenant)).collect();
    assert_eq!(
        page.entries.iter().map(|e| &e.key).collect::<Vec<_>>(),
        want
    );
    assert!(page.entries.iter().any(|e| e.value == b"old"));

    // An older version, still running, indexes a key in the old set: the lease sweeper of a
    // running store moves it into the buckets, and ranges list it.
    let late = b"tenants/007/late".to_vec();
    write_layout_before_buckets(&mut con, [late.clone()], b"old").await;
    model.insert(late.clone());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let page = store
            .range(RangeOptions::prefix(tenant.as_slice()).keys_only())
            .await
            .unwrap();
        if page.entries.iter().any(|e| e.key == late) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the sweeper never moved the key"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    check_buckets(&mut con, &model).await;
    assert!(store.get(&late).await.unwrap().is_some());
    assert_eq!(
        listed(&store).await,
        model.iter().cloned().collect::<Vec<_>>()
    );
}
