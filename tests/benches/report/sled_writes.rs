//! The sled write path: sequential put against the floor of any atomic multi-tree write in
//! sled (a raw transaction over four trees writing a data and a log record, SledStore's record
//! sizes; buffered, and flushed on commit against the same transaction and a flush), get against a raw `Tree::get`, group commit (16 concurrent writers against one,
//! buffered and flush-on-commit, on a multi-thread and a current-thread runtime), and the
//! cost of log pruning (a put in a store past its default retention against one whose
//! retention is never reached).

use crate::measure::{Budget, Goal, Measure, Report, current_thread, multi_thread, paired_us};
use crate::single::{KEYS, VALUE, key, load, put_spread, spread};
use keyplane_core::{PutOptions, Store};
use keyplane_sled::{Durability, SledConfig, SledStore};
use sled::transaction::{TransactionResult, Transactional};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const FLUSH_EVERY: Duration = Duration::from_secs(1);

fn buffered() -> Durability {
    Durability::Buffered {
        flush_interval: FLUSH_EVERY,
    }
}

async fn open(dir: &tempfile::TempDir, durability: Durability, retention: u64) -> SledStore {
    SledStore::open(
        SledConfig::new(dir.path())
            .durability(durability)
            .history_retention(retention),
    )
    .await
    .expect("open sled")
}

/// A store of `durability` in a new directory, holding the bench's keys.
async fn loaded(durability: Durability) -> (tempfile::TempDir, SledStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir, durability, SledConfig::DEFAULT_HISTORY_RETENTION).await;
    load(&store).await;
    (dir, store)
}

pub fn run(budget: Budget, report: &mut Report) {
    let rt = multi_thread();
    rt.block_on(async {
        // The default durability, measured first on its own: a read flushes only while a
        // write may be unflushed.
        let raw_dir = tempfile::tempdir().unwrap();
        let raw = sled::Config::new().path(raw_dir.path()).open().unwrap();
        let raw_tree = raw.open_tree("data").unwrap();
        for i in 0..KEYS {
            raw_tree.insert(key(i), &VALUE[..]).unwrap();
        }
        let (_flushing_dir, flushing) = loaded(Durability::FlushOnCommit).await;
        let pair = paired_us(
            budget,
            async |i| {
                flushing.get(spread(i).as_bytes()).await.unwrap().unwrap();
            },
            async |i| {
                raw_tree.get(spread(i)).unwrap().unwrap();
            },
        )
        .await;
        report.add(
            Measure::paired(
                "sled get vs raw Tree::get (flush-on-commit)",
                pair,
                "µs",
                Goal::Info,
            )
            .note(
                "10,000 keys, no write in flight; the same gets timed alone take the same time \
                 in both durabilities",
            ),
        );
    });
    rt.block_on(async {
        let (_dir, store) = loaded(buffered()).await;
        let raw_dir = tempfile::tempdir().unwrap();
        let raw = sled::Config::new()
            .path(raw_dir.path())
            .cache_capacity(SledConfig::DEFAULT_CACHE_CAPACITY)
            .flush_every_ms(Some(FLUSH_EVERY.as_millis() as u64))
            .open()
            .unwrap();
        let trees: Vec<sled::Tree> = ["data", "meta", "log", "leases"]
            .iter()
            .map(|name| raw.open_tree(name).unwrap())
            .collect();
        for i in 0..KEYS {
            trees[0].insert(key(i), &VALUE[..]).unwrap();
        }
        // SledStore's record sizes for an overwrite: the entry header on the data record, the
        // event with the new and the previous entry in the log.
        let (record, event) = ([b'v'; 64 + 32], [b'e'; 240]);
        let revision = AtomicU64::new(1);
        let raw_put = |i: u64| {
            let (k, rev) = (
                spread(i),
                revision.fetch_add(1, Ordering::Relaxed).to_be_bytes(),
            );
            let res: TransactionResult<()> = (&trees[0], &trees[1], &trees[2], &trees[3])
                .transaction(|(data, _, log, _)| {
                    data.insert(k.as_bytes(), &record[..])?;
                    log.insert(&rev, &event[..])?;
                    Ok(())
                });
            res.unwrap();
        };
        let pair = paired_us(
            budget,
            async |i| {
                put_spread(&store, i).await;
            },
            async |i| raw_put(i),
        )
        .await;
        report.add(
            Measure::paired(
                "sled put vs raw 4-tree sled transaction",
                pair,
                "µs",
                Goal::AtMost(2.0),
            )
            .note(
                "buffered durability, 10,000 keys, overwrites; a put waits for the disk while \
                 two writes are unflushed (an unbounded backlog deadlocks sled's I/O pool), \
                 the raw loop does not",
            ),
        );
        let (_flushing_dir, flushing) = loaded(Durability::FlushOnCommit).await;
        let pair = paired_us(
            budget,
            async |i| {
                put_spread(&flushing, i).await;
            },
            async |i| {
                raw_put(i);
                raw.flush().unwrap();
            },
        )
        .await;
        report.add(
            Measure::paired(
                "sled put vs raw 4-tree sled transaction and flush (flush-on-commit)",
                pair,
                "µs",
                Goal::Info,
            )
            .note("10,000 keys, overwrites; raw: `Db::flush` after each transaction"),
        );
        let pair = paired_us(
            budget,
            async |i| {
                store.get(spread(i).as_bytes()).await.unwrap().unwrap();
            },
            async |i| {
                trees[0].get(spread(i)).unwrap().unwrap();
            },
        )
        .await;
        report.add(
            Measure::paired(
                "sled get vs raw Tree::get (buffered)",
                pair,
                "µs",
                Goal::AtMost(1.3),
            )
            .note("10,000 keys"),
        );
    });

    // Every write goes through the group commit; both runtimes, since a current-thread one
    // runs a group's leader and the writers that join it on one thread.
    for (runtime, group_rt) in [
        ("multi-thread", None),
        ("current-thread", Some(current_thread())),
    ] {
        let group_rt = group_rt.as_ref().unwrap_or(&rt);
        for (name, durability, goal) in [
            ("buffered", buffered(), 2.0),
            ("flush-on-commit", Durability::FlushOnCommit, 5.0),
        ] {
            let pair = group_rt.block_on(async {
                let dir = tempfile::tempdir().unwrap();
                let store: Arc<dyn keyplane_core::Store> =
                    Arc::new(open(&dir, durability, SledConfig::DEFAULT_HISTORY_RETENTION).await);
                crate::measure::writers_16_vs_1(budget, store).await
            });
            report.add(
                Measure::paired(
                    format!("sled 16 concurrent writers vs 1 ({name}, {runtime})"),
                    pair,
                    "puts/s",
                    Goal::AtLeast(goal),
                )
                .note("raw: the same store's sequential put throughput"),
            );
        }
    }

    let pair = rt.block_on(async {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let pruning = open(&a, buffered(), SledConfig::DEFAULT_HISTORY_RETENTION).await;
        let keeping = open(&b, buffered(), u64::MAX / 4).await;
        // Past the default retention: every further put has log records to prune.
        let past = SledConfig::DEFAULT_HISTORY_RETENTION + 2_000;
        for store in [&pruning, &keeping] {
            for i in 0..past {
                store
                    .put(key(i).as_bytes(), &VALUE, PutOptions::default())
                    .await
                    .unwrap();
            }
        }
        paired_us(
            budget,
            async |i| {
                put_spread(&pruning, i).await;
            },
            async |i| {
                put_spread(&keeping, i).await;
            },
        )
        .await
    });
    report.add(
        Measure::paired(
            "sled put with log pruning vs without",
            pair,
            "µs",
            Goal::AtMost(1.25),
        )
        .note("default retention (10,000 revisions), past it; raw: retention never reached"),
    );
}
