//! The bulk loader on every backend: batches, progress, input checks, and retries after a
//! lost answer that neither write twice nor undo another writer's newer write.

use super::support::{key, put, root, snapshot};
use keyplane_core::layer::{Call, FaultLayer, Interceptor, StoreExt};
use keyplane_core::raw::async_trait;
use keyplane_core::recipes::BulkLoader;
use keyplane_core::{Error, ErrorKind, RangeOptions, Result, Store};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

fn items(root: &[u8], n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| (key(root, format!("{i:05}")), format!("v{i}").into_bytes()))
        .collect()
}

/// A load of 1,000 keys writes each once, in the batches it reports, with progress.
pub async fn bulk_load_writes_everything_and_reports_progress(store: Arc<dyn Store>) {
    let root = root();
    let batch = 100.min(store.capabilities().max_txn_ops);
    let expected_batches = 1000_u64.div_ceil(batch as u64);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let progress = seen.clone();
    // Given in descending order: the loader sorts.
    let mut input = items(&root, 1000);
    input.reverse();
    let report = BulkLoader::new(store.as_ref())
        .batch_size(batch)
        .concurrency(4)
        .on_progress(move |p| progress.lock().unwrap().push(p))
        .load(input)
        .await
        .unwrap();
    assert_eq!((report.keys, report.batches), (1000, expected_batches));
    assert!(report.superseded.is_empty());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len() as u64, expected_batches);
    assert!(seen.iter().all(|p| p.total == 1000));
    assert_eq!(seen.iter().map(|p| p.written).max(), Some(1000));
    let all = snapshot(store.as_ref(), &root).await;
    assert_eq!(all.len(), 1000);
    assert!(
        all.iter()
            .all(|e| e.version == 1 && e.mod_revision <= report.revision)
    );
    assert_eq!(all[999].value, b"v999");
}

/// A duplicate key, an invalid key or a value over the limit fail the load before anything
/// is written.
pub async fn bulk_load_rejects_bad_input_before_writing(store: Arc<dyn Store>) {
    let root = root();
    let dup = vec![
        (key(&root, "a"), b"1".to_vec()),
        (key(&root, "b"), b"2".to_vec()),
        (key(&root, "a"), b"3".to_vec()),
    ];
    let err = BulkLoader::new(store.as_ref()).load(dup).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TxnConflict);
    let bad = vec![
        (key(&root, "c"), b"1".to_vec()),
        (b"with\0nul".to_vec(), b"2".to_vec()),
    ];
    let err = BulkLoader::new(store.as_ref()).load(bad).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidKey);
    let too_big = vec![
        (key(&root, "d"), b"1".to_vec()),
        (
            key(&root, "e"),
            vec![b'x'; store.capabilities().max_value_bytes + 1],
        ),
    ];
    let err = BulkLoader::new(store.as_ref())
        .load(too_big)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue);
    let count = store
        .range(RangeOptions::prefix(&root).count_only())
        .await
        .unwrap();
    assert_eq!(count.count, 0);
}

/// What another writer does while the first transaction is in flight.
#[derive(Clone)]
enum Meddle {
    Nothing,
    Overwrite(Vec<u8>),
    Delete(Vec<u8>),
}

/// Makes the first transaction's outcome unknown to the loader: either it is never sent
/// (`applied: false`) or its answer is lost after the store applied it. Before answering,
/// another writer does `meddle` through the store itself.
struct FirstTxnInDoubt {
    store: Arc<dyn Store>,
    applied: bool,
    meddle: Meddle,
    fired: AtomicBool,
}

impl FirstTxnInDoubt {
    async fn fire(&self) -> Result<()> {
        match &self.meddle {
            Meddle::Nothing => {}
            Meddle::Overwrite(k) => {
                put(self.store.as_ref(), k, "newer").await;
            }
            Meddle::Delete(k) => {
                self.store.delete(k).await?;
            }
        }
        Err(Error::new(ErrorKind::Unavailable, "connection reset"))
    }
}

#[async_trait]
impl Interceptor for FirstTxnInDoubt {
    async fn before(&self, call: Call) -> Result<()> {
        if call == Call::Txn && !self.applied && !self.fired.swap(true, Ordering::SeqCst) {
            return self.fire().await;
        }
        Ok(())
    }
    async fn after(&self, call: Call, succeeded: bool) -> Result<()> {
        if call == Call::Txn
            && succeeded
            && self.applied
            && !self.fired.swap(true, Ordering::SeqCst)
        {
            return self.fire().await;
        }
        Ok(())
    }
}

/// Loads ten keys through a store that puts the first transaction in doubt; returns the
/// report and what the root holds after.
async fn load_in_doubt(
    store: &Arc<dyn Store>,
    root: &[u8],
    applied: bool,
    meddle: Meddle,
) -> (
    keyplane_core::recipes::BulkReport,
    Vec<keyplane_core::Entry>,
) {
    let hook = Arc::new(FirstTxnInDoubt {
        store: store.clone(),
        applied,
        meddle,
        fired: AtomicBool::new(false),
    });
    let faulty = store
        .clone()
        .layer(FaultLayer::new(0).intercept(Arc::clone(&hook)));
    let report = BulkLoader::new(&faulty)
        .load(items(root, 10))
        .await
        .unwrap_or_else(|e| panic!("a load with one lost answer: {e}"));
    assert!(hook.fired.load(Ordering::SeqCst));
    (report, snapshot(store.as_ref(), root).await)
}

/// A batch whose answer was lost is written once: applied, it is not sent again; not
/// applied, it is sent again.
pub async fn bulk_load_retries_a_lost_answer_once(store: Arc<dyn Store>) {
    for applied in [true, false] {
        let root = root();
        let (report, all) = load_in_doubt(&store, &root, applied, Meddle::Nothing).await;
        assert_eq!(report.keys, 10, "applied: {applied}");
        assert!(report.superseded.is_empty());
        assert_eq!(all.len(), 10);
        assert!(
            all.iter().all(|e| e.version == 1),
            "applied: {applied}: {all:?}"
        );
        for (e, (k, v)) in all.iter().zip(items(&root, 10)) {
            assert_eq!((&e.key, &e.value), (&k, &v));
        }
    }
}

/// Another writer's overwrite or delete made while a batch's outcome was unknown stays: the
/// retry writes only the keys nobody touched, and reports the others as superseded.
pub async fn bulk_load_retry_keeps_a_newer_write(store: Arc<dyn Store>) {
    for applied in [true, false] {
        let root = root();
        let target = key(&root, "00003");
        let (report, all) =
            load_in_doubt(&store, &root, applied, Meddle::Overwrite(target.clone())).await;
        assert_eq!(
            report.superseded,
            vec![target.clone()],
            "applied: {applied}"
        );
        assert_eq!(report.keys, 9);
        assert_eq!(all.len(), 10);
        for e in &all {
            if e.key == target {
                assert_eq!(e.value, b"newer", "applied: {applied}");
            } else {
                assert_eq!(e.version, 1, "applied: {applied}: {e:?}");
            }
        }
    }
    // A delete after the batch was applied is not undone.
    let root = root();
    let target = key(&root, "00007");
    let (report, all) = load_in_doubt(&store, &root, true, Meddle::Delete(target.clone())).await;
    assert_eq!(report.superseded, vec![target.clone()]);
    assert_eq!(all.len(), 9);
    assert!(all.iter().all(|e| e.key != target && e.version == 1));
}
