//! The redb store against raw redb, on both runtimes (the worse reported): get against a raw
//! read transaction's get; put against a raw write transaction of the same tables and record
//! sizes (durable: committed with `Durability::Immediate`; buffered: committed with
//! `Durability::None`, made durable every flush interval as the store does), one writer's
//! throughput; 16 concurrent writers against one (group commit); and a range of 100 keys
//! against a raw range of the `kv` table.

use crate::measure::{
    Budget, Goal, Measure, Report, on_both_runtimes, paired_throughput, paired_us,
};
use crate::single::{KEYS, RANGE_PREFIX, key, load, put_spread, range_100, spread};
use keyplane_core::Store;
use keyplane_redb::{Durability, RedbConfig, RedbStore};
use redb::{ReadableDatabase, TableDefinition};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The store's tables, as RedbStore defines them.
const KV: TableDefinition<'_, &[u8], &[u8]> = TableDefinition::new("kv");
const LOG: TableDefinition<'_, i64, &[u8]> = TableDefinition::new("log");
const META: TableDefinition<'_, &str, i64> = TableDefinition::new("meta");

/// RedbStore's record sizes for an overwrite: the entry's 32-byte header on the value, and
/// the event with the new and the previous entry.
const RECORD: [u8; 32 + 64] = [b'v'; 96];
const EVENT: [u8; 240] = [b'e'; 240];

fn buffered() -> Durability {
    Durability::Buffered {
        flush_interval: RedbConfig::DEFAULT_FLUSH_INTERVAL,
    }
}

/// A store of `durability` in `dir`, holding the bench's keys.
async fn loaded(dir: &tempfile::TempDir, durability: Durability) -> Arc<RedbStore> {
    let config = RedbConfig::new(dir.path().join("store.redb")).durability(durability);
    let store = RedbStore::open(config).await.expect("open redb");
    load(&store).await;
    Arc::new(store)
}

/// Raw redb with the store's tables, the bench's keys loaded, and the write a put makes.
struct Raw {
    db: redb::Database,
    revision: AtomicI64,
    /// When the last durable commit was, for the buffered writes.
    durable_at: Mutex<Instant>,
}

impl Raw {
    fn open(dir: &tempfile::TempDir) -> Raw {
        let db = redb::Builder::new()
            .set_cache_size(RedbConfig::DEFAULT_CACHE_SIZE as usize)
            .create(dir.path().join("raw.redb"))
            .unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut kv = txn.open_table(KV).unwrap();
            for i in 0..KEYS {
                kv.insert(key(i).as_bytes(), &RECORD[..]).unwrap();
            }
            txn.open_table(LOG).unwrap();
            txn.open_table(META).unwrap();
        }
        txn.commit().unwrap();
        Raw {
            db,
            revision: AtomicI64::new(1),
            durable_at: Mutex::new(Instant::now()),
        }
    }

    /// One put as the store writes it: the record, the log record and the revision, in one
    /// write transaction; durable, or not durable but made durable every flush interval.
    fn put(&self, i: u64, durable: bool) {
        let durable = durable || {
            let mut at = self.durable_at.lock().unwrap();
            let due = at.elapsed() >= RedbConfig::DEFAULT_FLUSH_INTERVAL;
            if due {
                *at = Instant::now();
            }
            due
        };
        let revision = self.revision.fetch_add(1, Ordering::Relaxed);
        let mut txn = self.db.begin_write().unwrap();
        let durability = if durable {
            redb::Durability::Immediate
        } else {
            redb::Durability::None
        };
        txn.set_durability(durability).unwrap();
        {
            let mut kv = txn.open_table(KV).unwrap();
            kv.insert(spread(i).as_bytes(), &RECORD[..]).unwrap();
            let mut log = txn.open_table(LOG).unwrap();
            log.insert(revision, &EVENT[..]).unwrap();
            let mut meta = txn.open_table(META).unwrap();
            meta.insert("revision", revision).unwrap();
        }
        txn.commit().unwrap();
    }

    fn get(&self, i: u64) {
        let txn = self.db.begin_read().unwrap();
        let kv = txn.open_table(KV).unwrap();
        let value = kv.get(spread(i).as_bytes()).unwrap().unwrap();
        std::hint::black_box(value.value().to_vec());
    }

    /// The 100 keys and values of the range, collected as a page is: a caller gets them
    /// all at once.
    fn range(&self) {
        let txn = self.db.begin_read().unwrap();
        let kv = txn.open_table(KV).unwrap();
        let mut end = RANGE_PREFIX.as_bytes().to_vec();
        *end.last_mut().unwrap() += 1;
        let page: Vec<(Vec<u8>, Vec<u8>)> = kv
            .range(RANGE_PREFIX.as_bytes()..end.as_slice())
            .unwrap()
            .map(|item| {
                let (k, v) = item.unwrap();
                (k.value().to_vec(), v.value().to_vec())
            })
            .collect();
        assert_eq!(std::hint::black_box(page).len(), 100);
    }
}

/// get, durable put, buffered put and range, on the runtime of `runtime`.
async fn single(budget: Budget, runtime: &'static str) -> Vec<Measure> {
    let (dir, raw_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = loaded(&dir, Durability::FlushOnCommit).await;
    let raw = Arc::new(Raw::open(&raw_dir));
    let mut out = Vec::new();
    let pair = paired_us(
        budget,
        async |i| {
            store.get(spread(i).as_bytes()).await.unwrap().unwrap();
        },
        async |i| raw.get(i),
    )
    .await;
    out.push(
        Measure::paired(
            "redb get vs raw read transaction's get",
            pair,
            "µs",
            Goal::AtMost(1.2),
        )
        .note(runtime),
    );
    let pair = paired_us(
        budget,
        async |_| range_100(store.as_ref()).await,
        async |_| raw.range(),
    )
    .await;
    out.push(
        Measure::paired(
            "redb range of 100 keys vs raw range",
            pair,
            "µs",
            Goal::AtMost(1.5),
        )
        .note(format!("{runtime}; raw: the pairs collected into a Vec")),
    );
    let pair = paired_us(
        budget,
        async |i| {
            put_spread(&store, i).await;
        },
        async |i| raw.put(i, true),
    )
    .await;
    out.push(
        Measure::paired(
            "redb put vs raw write transaction, durable (flush-on-commit)",
            pair,
            "µs",
            Goal::AtMost(1.3),
        )
        .note(runtime),
    );
    drop(store);
    let buffered_dir = tempfile::tempdir().unwrap();
    let store = loaded(&buffered_dir, buffered()).await;
    let ours_put = {
        let store = store.clone();
        Arc::new(move |_t: usize, i: u64| {
            let store = store.clone();
            async move {
                put_spread(&store, i).await;
            }
        })
    };
    let raw_put = {
        let raw = raw.clone();
        Arc::new(move |_t: usize, i: u64| {
            raw.put(i, false);
            std::future::ready(())
        })
    };
    let pair = paired_throughput(budget, 1, ours_put, raw_put).await;
    out.push(
        Measure::paired(
            "redb buffered put, one writer, vs raw non-durable commit",
            pair,
            "puts/s",
            Goal::AtLeast(0.5),
        )
        .note(runtime),
    );
    out
}

/// 16 concurrent writers against one, in each durability, on the runtime of `runtime`.
async fn group(budget: Budget, runtime: &'static str) -> Vec<Measure> {
    let mut out = Vec::new();
    for (name, durability, goal) in [
        ("flush-on-commit", Durability::FlushOnCommit, 5.0),
        ("buffered", buffered(), 2.0),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let config = RedbConfig::new(dir.path().join("store.redb")).durability(durability);
        let store = Arc::new(RedbStore::open(config).await.expect("open redb"));
        let pair = crate::measure::writers_16_vs_1(budget, store).await;
        out.push(
            Measure::paired(
                format!("redb 16 concurrent writers vs 1 ({name})"),
                pair,
                "puts/s",
                Goal::AtLeast(goal),
            )
            .note(runtime),
        );
    }
    out
}

pub fn run(budget: Budget, report: &mut Report) {
    on_both_runtimes(report, |runtime| single(budget, runtime));
    on_both_runtimes(report, |runtime| group(budget, runtime));
}
