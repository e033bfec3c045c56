//! Write throughput of a `SledStore`, printed as a table: run it in release mode,
//! `cargo run --release -p keyplane-sled --example write_throughput`.
//!
//! - the floor: a raw sled transaction over four trees writing a data and a log record of
//!   the sizes a put writes;
//! - sequential puts, on a store whose history is within its retention and on one past it
//!   (so that every put also prunes the log);
//! - 16 writer tasks on a two-worker runtime putting distinct keys, against one task putting
//!   the same number of keys, with buffered durability and with flush on commit.
//!
//! Numbers only: nothing is asserted.

use keyplane_core::{PutOptions, Store};
use keyplane_sled::{Durability, SledConfig, SledStore};
use sled::transaction::{TransactionResult, Transactional};
use std::time::{Duration, Instant};

const KEYS: usize = 10_000;
const VALUE: [u8; 64] = [b'v'; 64];
const WRITERS: usize = 16;

fn key(i: usize) -> Vec<u8> {
    format!("probe/k/{:07}", i % KEYS).into_bytes()
}

fn buffered() -> Durability {
    Durability::Buffered {
        flush_interval: Duration::from_secs(1),
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let puts = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);

    let raw = raw_transaction(puts);
    println!("raw sled 4-tree transaction    {:>8.2} µs", raw);

    let within = rt.block_on(sequential(buffered(), u64::MAX / 2, puts));
    println!(
        "sequential put, no pruning     {:>8.2} µs  ({:.2}x raw)",
        within,
        within / raw
    );
    let past = rt.block_on(sequential(
        buffered(),
        SledConfig::DEFAULT_HISTORY_RETENTION,
        puts,
    ));
    println!(
        "sequential put, pruning        {:>8.2} µs  ({:.2}x no pruning)",
        past,
        past / within
    );

    for (name, durability, n) in [
        ("buffered", buffered(), puts),
        ("flush on commit", Durability::FlushOnCommit, puts / 10),
    ] {
        let one = rt.block_on(concurrent(durability, 1, n));
        let many = rt.block_on(concurrent(durability, WRITERS, n));
        println!(
            "{name:<16} 1 writer {:>8.0} puts/s, {WRITERS} writers {:>8.0} puts/s ({:.2}x)",
            one,
            many,
            many / one
        );
    }
}

/// Microseconds per raw four-tree transaction.
fn raw_transaction(n: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let db = sled::Config::new()
        .path(dir.path())
        .cache_capacity(SledConfig::DEFAULT_CACHE_CAPACITY)
        .flush_every_ms(Some(1000))
        .open()
        .unwrap();
    let trees: Vec<sled::Tree> = ["data", "meta", "log", "leases"]
        .iter()
        .map(|name| db.open_tree(name).unwrap())
        .collect();
    let (record, event) = ([b'v'; 64 + 32], [b'e'; 240]);
    let run = |from: usize, n: usize| {
        for i in from..from + n {
            let (k, rev) = (key(i), (i as u64).to_be_bytes());
            let res: TransactionResult<()> = (&trees[0], &trees[1], &trees[2], &trees[3])
                .transaction(|(data, _, log, _)| {
                    data.insert(k.as_slice(), &record[..])?;
                    log.insert(&rev, &event[..])?;
                    Ok(())
                });
            res.unwrap();
        }
    };
    run(0, n);
    let started = Instant::now();
    run(n, n);
    started.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// Microseconds per put, measured over `n` puts after `n` puts of warm-up.
async fn sequential(durability: Durability, retention: u64, n: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let config = SledConfig::new(dir.path())
        .durability(durability)
        .history_retention(retention);
    let store = SledStore::open(config).unwrap();
    tokio::spawn(async move {
        for i in 0..n {
            store
                .put(&key(i), &VALUE, PutOptions::default())
                .await
                .unwrap();
        }
        store.flush().await.unwrap();
        let started = Instant::now();
        for i in n..2 * n {
            store
                .put(&key(i), &VALUE, PutOptions::default())
                .await
                .unwrap();
        }
        started.elapsed().as_secs_f64() * 1e6 / n as f64
    })
    .await
    .unwrap()
}

/// Puts per second of `writers` tasks putting `n` distinct keys in all.
async fn concurrent(durability: Durability, writers: usize, n: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let config = SledConfig::new(dir.path())
        .durability(durability)
        .history_retention(u64::MAX / 2);
    let store = SledStore::open(config).unwrap();
    for i in 0..KEYS {
        store
            .put(&key(i), &VALUE, PutOptions::default())
            .await
            .unwrap();
    }
    store.flush().await.unwrap();
    let per_writer = n / writers;
    let started = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..per_writer {
                    let k = key(w + i * writers);
                    store.put(&k, &VALUE, PutOptions::default()).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    (per_writer * writers) as f64 / started.elapsed().as_secs_f64()
}
