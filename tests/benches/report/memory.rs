//! Memory per key. Redis: `used_memory` growth for 100,000 keys of 100 bytes written one put
//! at a time through RedisStore, against raw `SET`s of the same keys on a second server;
//! with the event log at the default retention (10,000 revisions) and at 100,000 (every put
//! of the load still in it). MemStore and Mirror: bytes allocated per key
//! (counted by the report's allocator) against a `BTreeMap<Vec<u8>, Vec<u8>>` of the same
//! keys and values.

use crate::live_bytes;
use crate::measure::{Budget, Goal, Measure, Report, multi_thread};
use futures::StreamExt;
use keyplane_core::keyspace::{Key, TypedStore};
use keyplane_core::recipes::BulkLoader;
use keyplane_core::{PutOptions, Store};
use keyplane_mem::MemStore;
use keyplane_redis::{RedisConfig, RedisStore};
use keyplane_tests::harness::{RedisServer, redis_connection};
use std::collections::BTreeMap;
use std::sync::Arc;

const KEYS: u64 = 100_000;
const VALUE: [u8; 100] = [b'v'; 100];

fn key(i: u64) -> String {
    format!("bench/m/{i:07}")
}

async fn used_memory(con: &mut redis::aio::MultiplexedConnection) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(con)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory in INFO")
}

/// Bytes of Redis memory per key for the load, ours (with `retention`) and raw.
async fn redis_per_key(retention: Option<u64>) -> Option<(f64, f64)> {
    let (ours_server, raw_server) = (RedisServer::start()?, RedisServer::start()?);
    let mut config = RedisConfig::new(ours_server.url());
    if let Some(r) = retention {
        config.history_retention = r;
    }
    let store = Arc::new(RedisStore::open(config).await.expect("connect"));
    let mut ours_con = redis_connection(&ours_server.url()).await;
    let mut raw_con = redis_connection(&raw_server.url()).await;
    let before = used_memory(&mut ours_con).await;
    futures::stream::iter(0..KEYS)
        .map(|i| {
            let store = store.clone();
            async move {
                store
                    .put(key(i).as_bytes(), &VALUE, PutOptions::default())
                    .await
                    .unwrap()
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    let ours = (used_memory(&mut ours_con).await - before) / KEYS as f64;
    let before = used_memory(&mut raw_con).await;
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            pipe.set(key(i), &VALUE[..]).ignore();
        }
        let _: () = pipe.query_async(&mut raw_con).await.unwrap();
    }
    let raw = (used_memory(&mut raw_con).await - before) / KEYS as f64;
    Some((ours, raw))
}

use crate::items::{ItemKey, Items, Root};

fn item(i: u64) -> (Vec<u8>, Vec<u8>) {
    (format!("bench/item/{i}").into_bytes(), VALUE.to_vec())
}

/// Bytes allocated per key by a `BTreeMap` of the items.
fn btree_per_key() -> f64 {
    let before = live_bytes();
    let map: BTreeMap<Vec<u8>, Vec<u8>> = (0..KEYS).map(item).collect();
    let per_key = (live_bytes() - before) as f64 / KEYS as f64;
    drop(map);
    per_key
}

pub fn run(_budget: Budget, report: &mut Report) {
    let rt = multi_thread();
    for (retention, label) in [
        (None, "default retention, 10,000 revisions"),
        (
            Some(100_000),
            "retention 100,000 revisions: every put of the load",
        ),
    ] {
        if let Some((ours, raw)) = rt.block_on(redis_per_key(retention)) {
            report.add(
                Measure::new(
                    format!("redis memory per key vs raw SET ({label})"),
                    ours,
                    raw,
                    "bytes",
                    if retention.is_none() {
                        Goal::AtMost(2.0)
                    } else {
                        Goal::Info
                    },
                )
                .note("100,000 keys of 100 bytes, one put each: Redis used_memory growth"),
            );
        }
    }
    let raw = btree_per_key();
    let mem = rt.block_on(async {
        let before = live_bytes();
        let store = MemStore::new();
        for i in 0..KEYS {
            let (k, v) = item(i);
            store.put(&k, &v, PutOptions::default()).await.unwrap();
        }
        let per_key = (live_bytes() - before) as f64 / KEYS as f64;
        drop(store);
        per_key
    });
    report.add(
        Measure::new(
            "MemStore memory per key vs BTreeMap",
            mem,
            raw,
            "bytes",
            Goal::Info,
        )
        .note("100,000 keys of 100 bytes, one put each, default retention (10,000 revisions)"),
    );
    let mirror = rt.block_on(async {
        let store: Arc<dyn Store> = Arc::new(MemStore::new());
        let root = Root::new("bench").unwrap();
        BulkLoader::new(store.as_ref())
            .load((0..KEYS).map(|id| {
                let k = ItemKey {
                    root: root.clone(),
                    id,
                };
                (k.encode().into_bytes(), VALUE.to_vec())
            }))
            .await
            .unwrap();
        let typed = TypedStore::new(store);
        let before = live_bytes();
        let mirror = typed
            .mirror(&Items { root })
            .unwrap()
            .heartbeat(None)
            .start()
            .await
            .unwrap();
        assert_eq!(mirror.snapshot().len(), KEYS as usize);
        let per_key = (live_bytes() - before) as f64 / KEYS as f64;
        drop(mirror);
        per_key
    });
    report.add(
        Measure::new(
            "Mirror memory per key vs BTreeMap",
            mirror,
            raw,
            "bytes",
            Goal::AtMost(2.5),
        )
        .note("a typed mirror of 100,000 keys of 100 bytes (text values)"),
    );
}
