//! The redb store at scale, beside the other backends' rows of [`crate::scale`]: a range of
//! 100 keys and a watch resumed 10,000 revisions back in a 10^6-key store against a 10^4-key
//! one, the 10^6-key bulk load and export against raw redb (write transactions of 4,096
//! inserts, each durable; a range over the table), and the file's bytes per key against raw
//! redb's.

use crate::measure::{Budget, Goal, Measure, Pair, Report};
use crate::scale::{
    LARGE, RETENTION, RawLoad, SMALL, exports, key, load, load_large, report_bulk, report_sizes,
    sizes,
};
use crate::single::VALUE;
use futures::FutureExt;
use keyplane_core::Store;
use keyplane_redb::{RedbConfig, RedbStore};
use redb::{ReadableDatabase, TableDefinition};
use std::path::Path;
use std::sync::Arc;

const KV: TableDefinition<'_, &[u8], &[u8]> = TableDefinition::new("kv");

/// Bytes of the file at `path`.
fn file_bytes(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(f64::NAN, |m| m.len() as f64)
}

pub async fn run(budget: Budget, report: &mut Report) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let open = |path: std::path::PathBuf| async move {
        let config = RedbConfig::new(path).history_retention(RETENTION);
        Arc::new(RedbStore::open(config).await.unwrap()) as Arc<dyn Store>
    };
    let large_file = b.path().join("store.redb");
    let small = load(open(a.path().join("store.redb")).await, SMALL).await;
    // Raw: write transactions of 4,096 inserts, each durable like the store's default.
    let raw_dir = tempfile::tempdir().unwrap();
    let raw_file = raw_dir.path().join("raw.redb");
    let raw = redb::Builder::new()
        .set_cache_size(RedbConfig::DEFAULT_CACHE_SIZE as usize)
        .create(&raw_file)
        .unwrap();
    let raw_load: RawLoad<'_> = Box::new(|keys| {
        let raw = &raw;
        async move {
            for chunk in keys.collect::<Vec<_>>().chunks(4096) {
                let txn = raw.begin_write().unwrap();
                {
                    let mut kv = txn.open_table(KV).unwrap();
                    for &i in chunk {
                        kv.insert(key(i).as_bytes(), &VALUE[..]).unwrap();
                    }
                }
                txn.commit().unwrap();
            }
        }
        .boxed_local()
    });
    let (large, raws) = load_large(open(large_file.clone()).await, vec![raw_load]).await;
    report_sizes(report, "redb", sizes(budget, &small, &large).await);
    let export = exports(large.store.as_ref(), async || {
        let txn = raw.begin_read().unwrap();
        let kv = txn.open_table(KV).unwrap();
        let mut n = 0u64;
        for item in kv.range(&b"bench/k/"[..]..&b"bench/k0"[..]).unwrap() {
            let (k, v) = item.unwrap();
            std::hint::black_box((k.value().to_vec(), v.value().to_vec()));
            n += 1;
        }
        n
    })
    .await;
    let load_rates = large.load_rates.clone();
    // Closed, so that the file holds all it will.
    drop(large);
    let ours_bytes = file_bytes(&large_file) / LARGE as f64;
    drop(raw);
    let raw_bytes = file_bytes(&raw_file) / LARGE as f64;
    report_bulk(
        report,
        "redb",
        Pair::of(load_rates, raws.concat()),
        export,
        "write transactions of 4,096 inserts, each durable",
    );
    report.add(
        Measure::new(
            "redb file bytes per key, 10^6 keys, vs raw",
            ours_bytes,
            raw_bytes,
            "bytes",
            Goal::Info,
        )
        .note(
            "ours: each key's entry header and the event log of the last 20,000 revisions; \
             raw: the keys and values alone",
        ),
    );
}
