//! The sled store at scale, beside the other backends' rows of [`crate::scale`]: a range of
//! 100 keys and a watch resumed 10,000 revisions back in a 10^6-key store against a 10^4-key
//! one, the 10^6-key bulk load and export against raw sled (batches of 4,096 inserts, each
//! flushed; a prefix scan copying each key and value out), and the same range in raw sled
//! trees of both sizes, to show how much of the growth is sled's own.

use crate::measure::{Budget, Goal, Measure, Pair, Report};
use crate::scale::{
    RETENTION, RawLoad, SMALL, exports, key, load, load_large, report_bulk, report_sizes, sizes,
};
use crate::single::{RANGE_PREFIX, VALUE};
use futures::FutureExt;
use keyplane_core::Store;
use keyplane_sled::{SledConfig, SledStore};
use std::sync::Arc;
use std::time::Instant;

pub async fn run(budget: Budget, report: &mut Report) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let open = |dir: std::path::PathBuf| async move {
        let config = SledConfig::new(dir).history_retention(RETENTION);
        Arc::new(SledStore::open(config).await.unwrap()) as Arc<dyn Store>
    };
    let small = load(open(a.path().to_owned()).await, SMALL).await;
    // Raw: batches of 4,096 inserts, flushed like the store's default durability.
    let raw_dir = tempfile::tempdir().unwrap();
    let raw = sled::Config::new().path(raw_dir.path()).open().unwrap();
    let raw_load: RawLoad<'_> = Box::new(|keys| {
        let raw = &raw;
        async move {
            for chunk in keys.collect::<Vec<_>>().chunks(4096) {
                let mut batch = sled::Batch::default();
                for &i in chunk {
                    batch.insert(key(i).as_bytes(), &VALUE[..]);
                }
                raw.apply_batch(batch).unwrap();
                raw.flush().unwrap();
            }
        }
        .boxed_local()
    });
    let (large, raws) = load_large(open(b.path().to_owned()).await, vec![raw_load]).await;
    report_sizes(report, "sled", sizes(budget, &small, &large).await);
    let export = exports(large.store.as_ref(), async || {
        let mut n = 0u64;
        for kv in raw.scan_prefix("bench/k/") {
            let (k, v) = kv.unwrap();
            std::hint::black_box((k.to_vec(), v.to_vec()));
            n += 1;
        }
        n
    })
    .await;
    let load_rates = large.load_rates.clone();
    drop(large);

    // The same range in raw sled trees of both sizes, alternating.
    let small_raw_dir = tempfile::tempdir().unwrap();
    let small_raw = sled::Config::new()
        .path(small_raw_dir.path())
        .open()
        .unwrap();
    for i in 0..SMALL {
        small_raw.insert(key(i).as_bytes(), &VALUE[..]).unwrap();
    }
    let range = |db: &sled::Db| {
        let started = Instant::now();
        for _ in 0..20 {
            let mut n = 0;
            for kv in db.scan_prefix(RANGE_PREFIX) {
                let (k, v) = kv.unwrap();
                std::hint::black_box((k.to_vec(), v.to_vec()));
                n += 1;
            }
            assert_eq!(n, 100);
        }
        started.elapsed().as_secs_f64() * 1e6 / 20.0
    };
    let (mut large_ranges, mut small_ranges) = (Vec::new(), Vec::new());
    for round in 0..if budget.quick { 5 } else { 15 } {
        if round % 2 == 0 {
            large_ranges.push(range(&raw));
            small_ranges.push(range(&small_raw));
        } else {
            small_ranges.push(range(&small_raw));
            large_ranges.push(range(&raw));
        }
    }
    report.add(
        Measure::paired(
            "raw sled range of 100 keys: 10^6-key tree vs 10^4 (for comparison)",
            Pair::of(large_ranges, small_ranges),
            "µs",
            Goal::Info,
        )
        .note("Tree::scan_prefix, default page cache"),
    );
    report_bulk(
        report,
        "sled",
        Pair::of(load_rates, raws.concat()),
        export,
        "sled batches of 4,096, each flushed",
    );
}
