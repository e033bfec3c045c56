//! `Mirror` on every backend: a lookup in the mirror (typed, and by raw key bytes) against
//! `Store::get` of the same key in the same run, the catch-up rate (events applied per second from a backlog of single-key
//! writes), the memory a mirrored key costs (the growth of resident memory while three more
//! mirrors of 100,000 keys are held: an estimate, allocator slack included), and the time of
//! a 100,000-key initial listing.
//!
//! Not a criterion bench: each figure is the median of several rounds, printed as one table.
//! Run with `cargo xtask bench criterion --bench mirror` (real servers) or
//! `cargo bench -p keyplane-tests --bench mirror`.

use keyplane_core::keyspace::{Key, TypedStore};
use keyplane_core::layer::{Call, FaultLayer, Interceptor, StoreExt};
use keyplane_core::mirror::MirrorSnapshot;
use keyplane_core::recipes::BulkLoader;
use keyplane_core::{Result, Store};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tokio::sync::Notify;

/// The process's resident memory, from `/proc/self/statm` (0 where there is none).
fn resident_bytes() -> i64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<i64>().ok())
        .map_or(0, |pages| pages * 4096)
}

#[path = "common/items.rs"]
mod items;
use items::{ItemKey, Items, Root};

/// Keys of the listing and memory figures.
const LISTED: u64 = 100_000;
/// Single-key writes of the catch-up figure.
const BACKLOG: u64 = 5_000;
const ROUNDS: usize = 5;

fn value(id: u64) -> String {
    format!(
        "{{\"host\":\"10.0.{}.{}\",\"port\":3306,\"pool\":20}}",
        id / 256 % 256,
        id % 256
    )
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs[xs.len() / 2]
}

/// Holds the next `watch` call until released: a backlog builds up behind it.
#[derive(Default)]
struct HoldWatch {
    armed: AtomicBool,
    entered: Notify,
    release: Notify,
}

struct Hold(Arc<HoldWatch>);

#[keyplane_core::raw::async_trait]
impl Interceptor for Hold {
    async fn before(&self, call: Call) -> Result<()> {
        if call == Call::Watch && self.0.armed.swap(false, Ordering::AcqRel) {
            self.0.entered.notify_one();
            self.0.release.notified().await;
        }
        Ok(())
    }
}

fn fresh_root() -> Root {
    let root = keyplane_tests::harness::key_root("bench-mirror");
    Root::new(root.trim_end_matches('/')).unwrap()
}

async fn measure(name: &str, store: Arc<dyn Store>) {
    let typed = TypedStore::new(Arc::clone(&store));
    let root = fresh_root();
    let dir = Items { root: root.clone() };
    let key = |id: u64| ItemKey {
        root: root.clone(),
        id,
    };
    let items = (0..LISTED).map(|id| (key(id).encode().into_bytes(), value(id).into_bytes()));
    BulkLoader::new(store.as_ref())
        .concurrency(4)
        .load(items)
        .await
        .unwrap();

    // The initial listing (timed), and the memory the mirror keeps.
    let mut listings = Vec::new();
    let mut listed = async || {
        let started = Instant::now();
        let mirror = typed
            .mirror(&dir)
            .unwrap()
            .heartbeat(None)
            .start()
            .await
            .unwrap();
        listings.push(started.elapsed().as_secs_f64());
        assert_eq!(mirror.snapshot().len(), LISTED as usize);
        mirror
    };
    let mirror = listed().await;
    // The first mirror reuses memory freed by the load; three more held at once need their
    // own: the growth they cause prices a key.
    let before = resident_bytes();
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(listed().await);
    }
    let per_key = (resident_bytes() - before) as f64 / (3 * LISTED) as f64;
    drop(held);

    // Lookups: the mirror's snapshot against a round trip, same keys.
    let mut mirror_ns = Vec::new();
    let mut raw_ns = Vec::new();
    let mut get_ns = Vec::new();
    for round in 0..ROUNDS {
        let keys: Vec<ItemKey> = (0..1_000u64)
            .map(|i| key((i * 7919 + round as u64 * 104_729) % LISTED))
            .collect();
        // Nanoseconds per lookup over 20 passes of the 1,000 keys, each pass on a fresh view.
        let per_lookup = |hit: &dyn Fn(&MirrorSnapshot<ItemKey, String>, usize) -> bool| {
            let started = Instant::now();
            for _ in 0..20 {
                let view = mirror.snapshot();
                assert!((0..keys.len()).all(|i| hit(&view, i)));
            }
            started.elapsed().as_nanos() as f64 / 20_000.0
        };
        mirror_ns.push(per_lookup(&|view, i| view.get(&keys[i]).is_some()));
        let raw: Vec<Vec<u8>> = keys.iter().map(|k| k.encode().into_bytes()).collect();
        raw_ns.push(per_lookup(&|view, i| view.get_raw(&raw[i]).is_some()));
        let started = Instant::now();
        for k in keys.iter().take(200) {
            assert!(typed.get(k).await.unwrap().is_some());
        }
        get_ns.push(started.elapsed().as_nanos() as f64 / 200.0);
    }
    drop(mirror);

    // Catch-up: a backlog of single-key writes behind a held watch, then released.
    let mut rates = Vec::new();
    for round in 0..3u64 {
        let hold = Arc::new(HoldWatch::default());
        hold.armed.store(true, Ordering::Release);
        let held: Arc<dyn Store> = Arc::new(
            Arc::clone(&store).layer(FaultLayer::new(0).intercept(Hold(Arc::clone(&hold)))),
        );
        let builder = TypedStore::new(held).mirror(&dir).unwrap().heartbeat(None);
        let starting = tokio::spawn(builder.start());
        hold.entered.notified().await;
        let mut last = 0;
        let mut writers = Vec::new();
        for w in 0..8u64 {
            let typed = typed.clone();
            let root = root.clone();
            writers.push(tokio::spawn(async move {
                let mut last = 0;
                for i in 0..BACKLOG / 8 {
                    let id = (w * 100_003 + i * 31 + round) % LISTED;
                    let k = ItemKey {
                        root: root.clone(),
                        id,
                    };
                    last = typed.put(&k, &format!("r{round}-{i}")).await.unwrap();
                }
                last
            }));
        }
        for writer in writers {
            last = last.max(writer.await.unwrap());
        }
        let started = Instant::now();
        hold.release.notify_one();
        let mirror = starting.await.unwrap().unwrap();
        mirror.wait_for(last).await.unwrap();
        let applied = (BACKLOG / 8 * 8) as f64;
        rates.push(applied / started.elapsed().as_secs_f64());
        assert_eq!(mirror.health().relists, 0);
    }

    let (lookup, raw, get) = (median(mirror_ns), median(raw_ns), median(get_ns));
    println!(
        "{name:<7} | {:>8.0} ns | {:>8.0} ns | {:>10.0} ns | {:>6.0}x | {:>6.0}x | {:>9.0} | {:>6.0} B | {:>6.2} s",
        lookup,
        raw,
        get,
        get / lookup,
        get / raw,
        median(rates),
        per_key,
        median(listings),
    );
    store
        .delete_prefix(format!("{root}/").as_bytes())
        .await
        .unwrap();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "backend | mirror get  | get_raw     | Store::get    | ratio   | raw     | events/s  | per key  | list {LISTED}"
    );
    rt.block_on(async {
        type Factory = fn() -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Option<Arc<dyn Store>>> + Send>,
        >;
        let backends: [(&str, Factory); 4] = [
            ("memory", || Box::pin(keyplane_tests::backends::memory())),
            ("sled", || Box::pin(keyplane_tests::backends::sled())),
            ("redis", || Box::pin(keyplane_tests::backends::redis())),
            ("etcd", || Box::pin(keyplane_tests::backends::etcd())),
        ];
        for (name, factory) in backends {
            match factory().await {
                Some(store) => measure(name, store).await,
                None => println!("{name:<7} | skipped: no server"),
            }
        }
    });
}
