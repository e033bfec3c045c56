//! SledStore against raw sled in the same run, both with buffered durability (flushed every
//! second) and the same cache: `put` vs `Tree::insert` and `get` vs `Tree::get`, over 10,000
//! keys of 64-byte values.
//!
//! Target: each at most 1.3x raw sled. Two more `insert` cases, raw sled transactions over four
//! trees writing a data and a log record (64-byte values, then SledStore's record sizes), show
//! the floor under any atomic multi-tree write in sled 0.34, which rolls its I/O buffer for
//! every transaction.

use criterion::{Criterion, criterion_group, criterion_main};
use keyplane_core::{PutOptions, Store};
use keyplane_sled::{Durability, SledConfig, SledStore};
use sled::transaction::{TransactionResult, Transactional};
use std::hint::black_box;
use std::time::Duration;
use tokio::runtime::Runtime;

const KEYS: usize = 10_000;
const VALUE: [u8; 64] = [b'v'; 64];
const FLUSH_EVERY: Duration = Duration::from_secs(1);

fn key(i: usize) -> Vec<u8> {
    format!("bench/k/{:07}", i % KEYS).into_bytes()
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let raw_dir = tempfile::tempdir().unwrap();
    let config = SledConfig::new(store_dir.path()).durability(Durability::Buffered {
        flush_interval: FLUSH_EVERY,
    });
    let store = rt
        .block_on(async { SledStore::open(config.clone()) })
        .unwrap();
    let raw = sled::Config::new()
        .path(raw_dir.path())
        .cache_capacity(config.cache_capacity)
        .flush_every_ms(Some(FLUSH_EVERY.as_millis() as u64))
        .open()
        .unwrap();
    load(&rt, &store, &raw);

    get(c, &rt, &store, &raw);
    insert(c, &rt, &store, &raw);
}

fn load(rt: &Runtime, store: &SledStore, raw: &sled::Db) {
    rt.block_on(async {
        for i in 0..KEYS {
            store
                .put(&key(i), &VALUE, PutOptions::default())
                .await
                .unwrap();
            raw.insert(key(i), &VALUE[..]).unwrap();
        }
        // Both start the measurements with nothing left to write back.
        store.flush().await.unwrap();
        raw.flush().unwrap();
    });
}

fn insert(c: &mut Criterion, rt: &Runtime, store: &SledStore, raw: &sled::Db) {
    let mut group = c.benchmark_group("sled/insert");
    let mut i = 0;
    group.bench_function("SledStore put", |b| {
        b.to_async(rt).iter(|| {
            i += 1;
            let k = key(i);
            async move {
                store.put(&k, &VALUE, PutOptions::default()).await.unwrap();
            }
        })
    });
    let mut i = 0;
    group.bench_function("raw sled insert", |b| {
        b.iter(|| {
            i += 1;
            raw.insert(key(i), &VALUE[..]).unwrap();
        })
    });
    // The floor under any atomic multi-tree write in sled 0.34: a transaction over four
    // trees writing a data and a log record, as SledStore's put does.
    let trees: Vec<sled::Tree> = ["data", "meta", "log", "leases"]
        .iter()
        .map(|name| raw.open_tree(name).unwrap())
        .collect();
    let mut i = 0;
    group.bench_function("raw sled 4-tree transaction", |b| {
        b.iter(|| {
            i += 1;
            let (k, rev) = (key(i), (i as u64).to_be_bytes());
            let res: TransactionResult<()> = (&trees[0], &trees[1], &trees[2], &trees[3])
                .transaction(|(data, _, log, _)| {
                    data.insert(k.as_slice(), &VALUE[..])?;
                    log.insert(&rev, &VALUE[..])?;
                    Ok(())
                });
            res.unwrap();
        })
    });
    // The same transaction with the record sizes SledStore writes for an overwrite: the entry
    // header on the data record, and the event with the new and the previous entry in the log.
    let (record, event) = ([b'v'; 64 + 32], [b'e'; 240]);
    let mut i = 0;
    group.bench_function("raw sled 4-tree transaction, SledStore record sizes", |b| {
        b.iter(|| {
            i += 1;
            let (k, rev) = (key(i), (i as u64).to_be_bytes());
            let res: TransactionResult<()> = (&trees[0], &trees[1], &trees[2], &trees[3])
                .transaction(|(data, _, log, _)| {
                    data.insert(k.as_slice(), &record[..])?;
                    log.insert(&rev, &event[..])?;
                    Ok(())
                });
            res.unwrap();
        })
    });
    group.finish();
}

fn get(c: &mut Criterion, rt: &Runtime, store: &SledStore, raw: &sled::Db) {
    let mut group = c.benchmark_group("sled/get");
    let mut i = 0;
    group.bench_function("SledStore get", |b| {
        b.to_async(rt).iter(|| {
            i += 1;
            let k = key(i * 7919);
            async move {
                black_box(store.get(&k).await.unwrap().unwrap());
            }
        })
    });
    let mut i = 0;
    group.bench_function("raw sled get", |b| {
        b.iter(|| {
            i += 1;
            black_box(raw.get(key(i * 7919)).unwrap().unwrap());
        })
    });
    group.finish();
}

criterion_group! {
    name = sled_benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(sled_benches);
